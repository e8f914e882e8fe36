//! The kernel sandbox's cost per dispatch (issue 31): what a runner pays to confine one more
//! command.
//!
//! * `sandbox/prepare`: building a dispatch's sandbox — the policy for a repository with a
//!   `.splice/` and a worktree (`sandbox::places::content`), the Landlock ruleset (one open
//!   per allowed path) and the seccomp program — in the parent, as `driver::job` does.
//! * `sandbox/spawn-confined` and `sandbox/spawn-plain`: starting `/bin/true` through
//!   `process::run`, inside that sandbox and without one; their difference is what entering
//!   the sandbox costs the child.
//!
//! * `quarantine/enter-leave`: a dispatch's git quarantine made and left with nothing
//!   committed, for a repository of 2,000 files and 200 branches (`worktree::quarantine`).
//! * `quarantine/enter-commit-leave`: the same with one commit of one new file in it, which
//!   `leave` imports (three objects hashed again) and puts on the node's branch.
//!
//! * `stall/group-activity`: one look at a dispatch's progress for stall detection (CPU time
//!   and bytes read and written of its process group, a scan of `/proc`), made every 2 s
//!   while a dispatch runs.
//!
//! The sandbox benches are skipped (saying so) where the kernel offers no sandbox.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use criterion::{Criterion, criterion_group, criterion_main};
use splice::process::{self, Capture, Cmd, Output};
use splice::sandbox::{Sandbox, places};

fn fixture(dir: &Path) -> (PathBuf, PathBuf) {
    let splice = dir.join(".splice");
    let worktree = splice.join("worktrees/sp-1");
    for d in [
        dir.join("src"),
        splice.join("beads"),
        splice.join("runs/r/sp-1-implement-1/tmp"),
        worktree.clone(),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    for f in ["README.md", "Cargo.toml"] {
        std::fs::write(dir.join(f), "x").unwrap();
    }
    (splice, worktree)
}

/// A repository of 2,000 files and 200 branches, with node `sp-1`'s worktree.
fn repository(dir: &Path) -> PathBuf {
    let repo = git2::Repository::init(dir).unwrap();
    repo.set_head("refs/heads/main").unwrap();
    let mut tb = repo.treebuilder(None).unwrap();
    for i in 0..2000 {
        let blob = repo.blob(format!("file {i}\n").as_bytes()).unwrap();
        tb.insert(format!("f{i:04}"), blob, 0o100644).unwrap();
    }
    let tree = repo.find_tree(tb.write().unwrap()).unwrap();
    let sig = git2::Signature::now("b", "b@example.com").unwrap();
    let commit = repo
        .commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
        .unwrap();
    let commit = repo.find_commit(commit).unwrap();
    for i in 0..200 {
        repo.branch(&format!("b{i}"), &commit, false).unwrap();
    }
    let worktrees = dir.join(".splice/worktrees");
    splice::worktree::ensure(dir, &worktrees, "sp-1", "main").unwrap();
    worktrees
}

fn quarantine(c: &mut Criterion) {
    use splice::worktree::quarantine;
    let dir = tempfile::tempdir().unwrap();
    let worktrees = repository(dir.path());
    let root = dir.path();
    c.bench_function("quarantine/enter-leave", |b| {
        b.iter(|| {
            quarantine::enter(root, &worktrees, "sp-1").unwrap();
            quarantine::leave(root, &worktrees, "sp-1").unwrap()
        })
    });
    let mut n = 0u64;
    c.bench_function("quarantine/enter-commit-leave", |b| {
        b.iter(|| {
            n += 1;
            quarantine::enter(root, &worktrees, "sp-1").unwrap();
            let wt = git2::Repository::open(worktrees.join("sp-1")).unwrap();
            let sig = git2::Signature::now("a", "a@example.com").unwrap();
            let parent = wt.head().unwrap().peel_to_commit().unwrap();
            let blob = wt.blob(format!("work {n}\n").as_bytes()).unwrap();
            let mut tb = wt.treebuilder(Some(&parent.tree().unwrap())).unwrap();
            tb.insert("work", blob, 0o100644).unwrap();
            let tree = wt.find_tree(tb.write().unwrap()).unwrap();
            wt.commit(Some("HEAD"), &sig, &sig, "work", &tree, &[&parent])
                .unwrap();
            quarantine::leave(root, &worktrees, "sp-1").unwrap()
        })
    });
}

fn bench(c: &mut Criterion) {
    quarantine(c);
    // SAFETY: getpgrp takes nothing and touches no memory.
    let group = unsafe { libc::getpgrp() };
    c.bench_function("stall/group-activity", |b| {
        b.iter(|| splice::process::procfs::group_activity(group))
    });
    if let Err(why) = splice::sandbox::probe().usable() {
        eprintln!("sandbox benches skipped: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (splice_dir, worktree) = fixture(dir.path());
    let private = splice_dir.join("runs/r/sp-1-implement-1");
    let content = places::Content {
        repo: dir.path(),
        splice_dir: &splice_dir,
        write: vec![worktree.clone(), private.clone()],
        read: Vec::new(),
        extra_read: &[],
        extra_write: &[],
        extra_env: &[],
    };
    c.bench_function("sandbox/prepare", |b| {
        b.iter(|| {
            let policy = places::content(&content).unwrap();
            Sandbox::prepare(&policy).unwrap()
        })
    });
    let sandbox = Sandbox::prepare(&places::content(&content).unwrap()).unwrap();
    let argv = vec!["/bin/true".to_string()];
    let run = |sandbox: Option<&Sandbox>| {
        let sink = Arc::new(Mutex::new(Capture::new(1024)));
        let cmd = Cmd {
            sandbox,
            ..Cmd::new(&argv, &worktree)
        };
        let ran = process::run(&cmd, Output::Combined(sink));
        assert_eq!(ran.exit.code(), Some(0));
    };
    c.bench_function("sandbox/spawn-confined", |b| b.iter(|| run(Some(&sandbox))));
    c.bench_function("sandbox/spawn-plain", |b| b.iter(|| run(None)));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
