//! A real git repository with splice state in a temp dir, and a way to run one floor on it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use splice::floors::{Ctx, Outcome, floor_for, workdir_for};
use splice::model::bead::{Proposal, SplitRecord};
use splice::model::manifest::FloorSpec;
use splice::model::{Bead, Config, Kind, Manifest};
use splice::policy::{Defaults, Lineage};
use splice::store::Store;

pub struct Repo {
    pub dir: tempfile::TempDir,
    pub store: Store,
    pub manifest: Manifest,
    pub config: Config,
}

pub fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        // None of the machine's git configuration: a developer's cannot change a result.
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl Repo {
    /// A repository on `main` with one commit and an empty `.splice/beads/`.
    pub fn new() -> Repo {
        let dir = tempfile::tempdir().expect("temp dir");
        git_in(dir.path(), &["init", "-q", "-b", "main"]);
        std::fs::write(dir.path().join(".git/info/exclude"), ".splice/\n").unwrap();
        std::fs::create_dir_all(dir.path().join(".splice/beads")).unwrap();
        std::fs::write(dir.path().join("README.md"), "hello\n").unwrap();
        git_in(dir.path(), &["add", "-A"]);
        git_in(dir.path(), &["commit", "-qm", "initial"]);
        let store = Store::discover(Some(dir.path())).expect("store");
        Repo {
            dir,
            store,
            manifest: Manifest::default_manifest(),
            config: Config::default(),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.store.repo().to_path_buf()
    }

    pub fn git(&self, args: &[&str]) -> String {
        git_in(&self.path(), args)
    }

    pub fn write(&self, rel: &str, content: &str) {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    /// Commit everything and return the new HEAD.
    pub fn commit(&self, msg: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-qm", msg]);
        self.head()
    }

    pub fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"])
    }

    pub fn put(&self, bead: &Bead) {
        std::fs::write(self.store.bead_path(&bead.id), bead.to_file_bytes()).unwrap();
    }

    /// Run one floor (`spec` is the manifest's floor JSON) for `bead` at `step`.
    pub fn check(
        &self,
        spec: Value,
        bead: &Bead,
        root: &Bead,
        step: &str,
        proposal: Option<&Proposal>,
    ) -> Outcome {
        let spec: FloorSpec = serde_json::from_value(spec).expect("floor spec");
        let step = self.manifest.step(step).expect("manifest step");
        let ancestors =
            splice::transition::ancestors_unlocked(&self.store, bead).unwrap_or_default();
        let branch = splice::worktree::current_branch(self.store.repo());
        let ctx = Ctx {
            lineage: Lineage::new(&ancestors, Defaults::new(&self.config, branch.as_deref())),
            store: &self.store,
            manifest: &self.manifest,
            config: &self.config,
            bead,
            step,
            workdir: workdir_for(&self.store, bead),
            proposal,
        };
        assert_eq!(
            ctx.root().id,
            root.id,
            "the root the test names is the bead's root"
        );
        floor_for(spec.kind).check(&spec, &ctx)
    }
}

/// A bead at `step`.
pub fn bead(id: &str, step: &str) -> Bead {
    let mut b = Bead::new(
        id.into(),
        format!("bead {id}"),
        String::new(),
        "2026-01-01T00:00:00Z",
    );
    b.pipeline.step = step.into();
    b.pipeline.route = "leaf".into();
    b
}

/// A campaign root owning `scenarios`.
pub fn root(id: &str, step: &str, scenarios: &[&str]) -> Bead {
    let mut b = bead(id, step);
    b.pipeline.kind = Kind::Root;
    b.pipeline.route = "root".into();
    b.pipeline.scenarios = scenarios.iter().map(|s| s.to_string()).collect();
    b
}

/// Split `parent` into children claiming the given scenarios; returns the children.
pub fn split(parent: &mut Bead, claims: &[&[&str]]) -> Vec<Bead> {
    let mut children = Vec::new();
    for (i, ids) in claims.iter().enumerate() {
        let mut c = bead(&format!("{}.{}", parent.id, i + 1), "generate-spec");
        c.parent = Some(parent.id.clone());
        c.pipeline.provenance = Some(Box::new(splice::model::bead::Provenance {
            split_by: parent.id.to_string(),
            seq: 1,
            index: i + 1,
        }));
        c.pipeline.scenarios = ids.iter().map(|s| s.to_string()).collect();
        children.push(c);
    }
    parent.pipeline.split = Some(Box::new(SplitRecord {
        children: children.iter().map(|c| c.id.clone()).collect(),
        seq: 1,
    }));
    children
}

pub fn is(outcome: &Outcome, verdict: &str) -> bool {
    outcome.verdict.as_str() == verdict
}

/// Assert the verdict, showing the outcome when it differs.
#[track_caller]
pub fn assert_verdict(outcome: &Outcome, verdict: &str) {
    assert!(is(outcome, verdict), "expected {verdict}, got {outcome:#?}");
}
