//! Shared fixtures of the executor tests: a `.splice` directory with one worktree, and the
//! dispatch paths for a run.
#![allow(dead_code)]

use std::fs;
use std::path::PathBuf;

use splice::exec::dispatch::{DispatchPaths, DispatchSpec};

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

/// The spec for dispatching `argv` as the first attempt of `sp-1`'s implement step.
pub fn spec<'a>(f: &'a Fixture, p: &'a DispatchPaths, argv: &'a [String]) -> DispatchSpec<'a> {
    DispatchSpec::new(
        "sp-1",
        "implement",
        1,
        "h",
        "run-1",
        &f.splice,
        &f.worktree,
        p,
        argv,
    )
}
