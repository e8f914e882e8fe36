//! Shared fixtures of the executor tests: a `.splice` directory with one worktree, and the
//! dispatch paths for a run.
#![allow(dead_code)]

use std::fs;
use std::path::PathBuf;

use splice::exec::dispatch::DispatchPaths;

pub struct Fixture {
    pub _dir: tempfile::TempDir,
    pub splice: PathBuf,
    pub worktree: PathBuf,
}

pub fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let splice = dir.path().join(".splice");
    let worktree = splice.join("worktrees/sp-1");
    fs::create_dir_all(&worktree).unwrap();
    Fixture {
        _dir: dir,
        splice,
        worktree,
    }
}

pub fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

pub fn paths(f: &Fixture, attempt: u32) -> DispatchPaths {
    DispatchPaths::new(
        &f.splice.join("runs"),
        "run-1",
        "sp-1",
        "implement",
        attempt,
    )
    .unwrap()
}
