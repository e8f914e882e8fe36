//! A reader that goes away (`splice … | head`, a closed pipe) must not turn a write that
//! committed into a crash: the verb exits as it ran, and nothing panics (issue 9, defect 7).

mod common;

use std::process::{Output, Stdio};

use common::Repo;

/// Run `args` with stdout connected to a pipe whose reading end is closed before splice writes.
fn with_stdout_closed(r: &Repo, args: &[&str]) -> Output {
    let mut child = r
        .cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_committed_write_exits_as_it_ran_when_stdout_is_closed() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let out = with_stdout_closed(
        &r,
        &[
            "transition",
            "set-autonomy",
            "--bead",
            &id,
            "--level",
            "wave",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(r.bead(&id)["pipeline"]["autonomy"], "wave");
    // A refusal still says why and exits 1.
    let out = with_stdout_closed(
        &r,
        &["transition", "unpark", "--bead", &id, "--reason", "r"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is not parked") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn a_pass_and_a_run_exit_as_they_ran_when_stdout_is_closed() {
    let r = Repo::new();
    r.task("T", &[]);
    // An agent that can be found: a run looks its commands up before anything else.
    r.write(".splice/config.toml", "[agent]\ncommand = [\"true\"]\n");
    for args in [
        &["pass", "--output", "json"][..],
        &["run", "--output", "human", "--max-passes", "1"][..],
        &["run", "--output", "stream-json", "--max-passes", "1"][..],
    ] {
        let out = with_stdout_closed(&r, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // The passes were recorded on the task although nobody read them.
    assert!(r.journal().contains("\"record-run\""));
}
