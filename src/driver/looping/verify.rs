//! A loop step's stages for one node's worktree (issue 34): declared tests commands, the
//! detected one (`policy::verification` over the worktree's committed files), the built-in
//! analyzers of the languages present, and each tests stage's baseline — what its command gave
//! at the step's base, run before the first iteration and kept in `runs/baselines/<id>.json`
//! (derived, written atomically by this module alone; a missing or stale one is run again
//! before it is needed, or reported incomplete when the worktree has moved on).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::floors::confine::Confined;
use crate::floors::iteration::{self, AnalyzersStage, Baseline, StageReport, TestsStage};
use crate::model::Step;
use crate::model::manifest::{LoopSpec, Stage};
use crate::policy::verification::{self, READS, RepoFiles};

/// Where the baselines are kept, under `runs/`: no sandboxed process may write there.
pub const BASELINES_DIR: &str = "baselines";

/// The most paths read from a worktree's tree for detection: past it the rest are not seen.
const MAX_PATHS: usize = 100_000;

/// The most bytes of one of [`READS`] read.
const MAX_READ: usize = 1 << 20;

/// The default time bound of a stage that declares none: the step's.
fn stage_timeout(own: Option<u64>, step: &Step) -> Duration {
    Duration::from_secs(own.unwrap_or(step.timeout_s).max(1))
}

/// The stages of `spec` resolved for the worktree `dir`: the tests stages to run (each with
/// whether it compares with the base), what is known incomplete before anything runs, and the
/// analyzers stage.
pub struct Resolved {
    pub tests: Vec<(TestsStage, bool)>,
    pub notes: Vec<StageReport>,
    pub analyzers: Option<AnalyzersStage>,
}

/// Resolve the stages of `spec` against the committed files of the worktree `dir`.
pub fn resolve(spec: &LoopSpec, step: &Step, dir: &Path) -> Resolved {
    let needs_files = spec.stages.iter().any(|s| {
        matches!(
            s,
            Stage::Tests { detect: true, .. } | Stage::Analyzers { .. }
        )
    });
    let files = match needs_files {
        true => repo_files(dir),
        false => Ok(RepoFiles::default()),
    };
    let mut out = Resolved {
        tests: Vec::new(),
        notes: Vec::new(),
        analyzers: None,
    };
    for stage in &spec.stages {
        match stage {
            Stage::Tests {
                argv,
                detect,
                junit,
                timeout_s,
                ..
            } => {
                let argv = match (*detect, &files) {
                    (false, _) => argv.clone(),
                    (true, Err(why)) => {
                        out.notes.push(note("tests", "detect", why.clone()));
                        continue;
                    }
                    (true, Ok(files)) => match verification::test_command(files) {
                        Some(found) => found.argv,
                        None => {
                            out.notes.push(note(
                                "tests",
                                "detect",
                                "no test command detected (no Cargo.toml, go.mod, package.json \
                                 test script, Python project, Makefile test/check target or \
                                 justfile test recipe at the root); declare one with a tests \
                                 stage's `argv`"
                                    .into(),
                            ));
                            continue;
                        }
                    },
                };
                let tests = TestsStage {
                    argv,
                    junit: junit.clone(),
                    timeout: stage_timeout(*timeout_s, step),
                    baseline: None,
                };
                out.tests.push((tests, stage.baseline()));
            }
            Stage::Analyzers { timeout_s } => {
                let languages = files
                    .as_ref()
                    .map(verification::languages)
                    .unwrap_or_default();
                out.analyzers = Some(AnalyzersStage {
                    languages,
                    timeout: stage_timeout(*timeout_s, step),
                });
            }
            Stage::Command { .. } | Stage::Sarif { .. } => {}
        }
    }
    out
}

fn note(stage: &str, tool: &str, found: String) -> StageReport {
    StageReport {
        stage: stage.into(),
        tool: tool.into(),
        status: "incomplete".into(),
        found,
    }
}

/// The committed files of the worktree `dir` (its `HEAD`'s tree): paths, and the contents of
/// those of [`READS`] at the root. Only committed work is measured, so an uncommitted file
/// decides nothing.
pub(crate) fn repo_files(dir: &Path) -> Result<RepoFiles, String> {
    let repo =
        git2::Repository::open(dir).map_err(|e| format!("{}: {}", dir.display(), e.message()))?;
    let tree = repo
        .head()
        .and_then(|h| h.peel_to_tree())
        .map_err(|e| format!("{}: no HEAD tree: {}", dir.display(), e.message()))?;
    let mut files = RepoFiles::default();
    tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
        if files.paths.len() >= MAX_PATHS {
            return git2::TreeWalkResult::Abort;
        }
        if entry.kind() == Some(git2::ObjectType::Blob)
            && let Some(name) = entry.name()
        {
            files.paths.push(format!("{root}{name}"));
        }
        git2::TreeWalkResult::Ok
    })
    .ok();
    for name in READS {
        let Some(entry) = tree.get_name(name) else {
            continue;
        };
        let Ok(blob) = repo.find_blob(entry.id()) else {
            continue;
        };
        if blob.size() <= MAX_READ
            && let Ok(text) = std::str::from_utf8(blob.content())
        {
            files.contents.insert((*name).to_string(), text.to_string());
        }
    }
    Ok(files)
}

/// One node's baselines: the base they were taken at, and each tests command's.
#[derive(Serialize, Deserialize, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields)]
struct Kept {
    base: String,
    step: String,
    stages: BTreeMap<String, Baseline>,
}

fn kept_path(runs: &Path, bead: &str) -> PathBuf {
    runs.join(BASELINES_DIR).join(format!("{bead}.json"))
}

fn key(stage: &TestsStage) -> String {
    serde_json::to_string(&stage.argv).unwrap_or_default()
}

fn read_kept(runs: &Path, bead: &str) -> Option<Kept> {
    let path = kept_path(runs, bead);
    let bytes = crate::safe_read::read(&path, MAX_READ as u64).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Before a loop step's first iteration, with the worktree at the step's base: run every tests
/// stage that compares with the base and keep what each gave.
pub fn take_baselines(
    runs: &Path,
    bead: &str,
    step: &Step,
    (dir, base): (&Path, &str),
    confined: Option<&Confined>,
) -> crate::error::Result<()> {
    let Some(spec) = &step.loop_ else {
        return Ok(());
    };
    let resolved = resolve(spec, step, dir);
    let mut kept = Kept {
        base: base.to_string(),
        step: step.name.clone(),
        stages: BTreeMap::new(),
    };
    for (stage, compare) in &resolved.tests {
        if *compare {
            let got = iteration::baseline(stage, dir, bead, confined);
            kept.stages.insert(key(stage), got);
        }
    }
    if kept.stages.is_empty() {
        return Ok(());
    }
    let path = kept_path(runs, bead);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| crate::error::Error::io(parent, e))?;
    }
    let bytes = serde_json::to_vec_pretty(&kept)
        .map_err(|e| crate::error::Error::Invalid(e.to_string()))?;
    crate::store::atomic::replace_file(&path, &bytes)
}

/// Give each tests stage that compares with the base its kept baseline; one with none (the
/// run that took it was lost, or it was taken at another base) is measured without it, and
/// that is reported incomplete.
pub fn attach_baselines(
    runs: &Path,
    bead: &str,
    (step, base): (&str, &str),
    resolved: &mut Resolved,
) {
    let kept = read_kept(runs, bead).filter(|k| k.base == base && k.step == step);
    for (stage, compare) in &mut resolved.tests {
        if !*compare {
            continue;
        }
        match kept.as_ref().and_then(|k| k.stages.get(&key(stage))) {
            Some(b) => stage.baseline = Some(b.clone()),
            None => resolved.notes.push(note(
                "tests",
                &stage.argv.join(" "),
                format!(
                    "no baseline at the base {} was kept, so tests failing there too are \
                     counted",
                    &base[..base.len().min(12)]
                ),
            )),
        }
    }
}
