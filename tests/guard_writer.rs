//! The writer refuses a dispatched session's person and runner verbs by itself, whatever the
//! guard says (issue 11): `splice guard` is a second line, not the rule. With
//! `SPLICE_DISPATCHED=1` in its environment, `init`, `init-task`, `route`, `park` and `approve`
//! exit 1 (a refusal, `docs/cli.md`) naming the verb's class, and nothing under `.splice/`
//! changes.

mod common;

use std::path::Path;

use common::Repo;

/// Every file under `dir` with its bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().display().to_string(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_dispatched_session_is_refused_person_and_runner_verbs_by_the_writer() {
    let r = Repo::new();
    let id = r.task("Guarded", &[]);
    let cases: [(&[&str], &str); 5] = [
        (&["init", "--title", "Evil"], "`init` is a person's verb"),
        (
            &["init-task", "--title", "Evil"],
            "`init-task` is a person's verb",
        ),
        (
            &["transition", "route", &id, "--to", "leaf"],
            "`route` is the runner's or a person's verb",
        ),
        (
            &["transition", "park", &id, "--reason", "stuck"],
            "`park` is the runner's or a person's verb",
        ),
        (
            &["transition", "approve", &id, "--step", "generate-spec"],
            "`approve` is a person's verb",
        ),
    ];
    for (args, says) in cases {
        let before = files(&r.state());
        let out = r.cmd(args).env("SPLICE_DISPATCHED", "1").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(
            stderr.contains("a dispatched session cannot run it"),
            "{stderr}"
        );
        assert_eq!(files(&r.state()), before, "{args:?} changed .splice/");
    }
}

/// In a repository without `.splice/`, the refusal comes before anything is written: not even
/// the state directory is made (it used to be, with its `.gitignore`, before the writer refused).
#[test]
fn init_and_init_task_from_a_dispatched_session_create_nothing() {
    for verb in ["init-task", "init"] {
        let r = Repo::new();
        let out = r
            .cmd(&[verb, "--title", "Evil"])
            .env("SPLICE_DISPATCHED", "1")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{verb}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("a dispatched session cannot run it"),
            "{stderr}"
        );
        assert!(!r.state().exists(), "{verb} made .splice/");
    }
}
