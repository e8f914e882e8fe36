//! Issue 10, item 9: a delivery target that cannot work is refused when it is given (`init`,
//! `init-task`, `set-target`), not discovered by every later run; a target that disappears later
//! escalates its node alone, and the run goes on for the others.

mod common;

use std::process::Command;

use common::{NOW, Repo};

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

/// `splice` in `dir` with the clean environment of `tests/common`.
#[must_use]
fn splice_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(SPLICE)
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("SPLICE_NOW", NOW)
        .output()
        .unwrap()
}

fn refused(out: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "expected a refusal: {err}");
    assert!(out.stdout.is_empty(), "nothing printed on stdout");
    common::no_panic(out);
    err
}

#[test]
fn init_task_outside_a_git_repository_is_refused_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["init-task", "--title", "x"][..],
        &["init", "--title", "x"][..],
    ] {
        let err = refused(&splice_in(dir.path(), args));
        assert!(err.contains("not in a git repository"), "{err}");
        assert!(err.contains("git init"), "says what to do: {err}");
    }
    assert!(!dir.path().join(".splice").exists(), "nothing was created");
}

#[test]
fn init_task_in_a_repository_without_commits_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let git = common::git()
        .args(["init", "-q", "-b", "main"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(git.success());
    let err = refused(&splice_in(dir.path(), &["init-task", "--title", "x"]));
    assert!(err.contains("has no commits"), "{err}");
    assert!(err.contains("git commit"), "says what to do: {err}");
    assert!(!dir.path().join(".splice").exists(), "nothing was created");
}

#[test]
fn a_target_that_names_no_branch_is_refused_at_init_and_at_set_target() {
    let r = Repo::new();
    for args in [
        &["init-task", "--title", "x", "--target", "nosuchbranch"][..],
        &["init", "--title", "x", "--target", "nosuchbranch"][..],
    ] {
        let err = refused(&r.run(args));
        assert!(
            err.contains("delivery target `nosuchbranch` does not exist"),
            "{err}"
        );
        assert!(err.contains("git branch nosuchbranch"), "{err}");
    }
    assert!(r.beads_bytes().is_empty(), "nothing was created");

    let id = r.task("T", &[]);
    let before = r.beads_bytes();
    let err = refused(&r.run(&["transition", "set-target", &id, "--target", "nosuchbranch"]));
    assert!(err.contains("`nosuchbranch` does not exist"), "{err}");
    assert_eq!(r.beads_bytes(), before, "nothing was written");
    // An existing branch, a tag or a commit is a target.
    r.git(&["branch", "feature"]);
    r.ok(&["transition", "set-target", &id, "--target", "feature"]);

    // `[delivery] target` is checked the same way when a node would inherit it.
    r.write(".splice/config.toml", "[delivery]\ntarget = \"gone\"\n");
    let err = refused(&r.run(&["init-task", "--title", "y"]));
    assert!(err.contains("`gone` does not exist"), "{err}");
    r.ok(&["init-task", "--title", "y", "--target", "main"]);
}

#[test]
fn a_node_whose_target_disappears_escalates_alone_and_the_run_goes_on() {
    let r = Repo::new();
    r.git(&["branch", "feature"]);
    let lost = r.task("Lands on feature", &["--target", "feature"]);
    let fine = r.task("Lands on main", &[]);
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"{SPLICE}\", \"sim-agent\"]\nusage = \"file\"\n\n\
             [delivery]\nmethod = \"direct\"\n"
        ),
    );
    r.git(&["branch", "-D", "feature"]);

    let env = r.ok(&["run", "--output", "json"]);
    let rest = &env["nodes"][&lost]["rest"];
    assert_eq!(rest["kind"], "escalated", "{env:#}");
    let reason = rest["reason"].as_str().unwrap();
    assert!(reason.contains("`feature`"), "{reason}");
    assert!(reason.contains("git branch feature"), "{reason}");
    assert!(
        reason.contains(&format!("splice transition set-target {lost} --target")),
        "{reason}"
    );
    assert_eq!(
        r.bead(&fine)["pipeline"]["attempts"]["generate-spec"],
        1,
        "the other node was dispatched: {env:#}"
    );
    assert!(
        r.bead(&lost)["pipeline"]["attempts"]
            .get("generate-spec")
            .is_none()
    );

    // Fixed by pointing the node at a branch that exists; the next run dispatches it.
    r.ok(&["transition", "set-target", &lost, "--target", "main"]);
    r.ok(&["run", "--output", "json"]);
    assert_eq!(r.bead(&lost)["pipeline"]["attempts"]["generate-spec"], 1);
}
