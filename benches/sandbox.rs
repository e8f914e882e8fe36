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
//! Skipped (saying so) where the kernel offers no sandbox.

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

fn bench(c: &mut Criterion) {
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
