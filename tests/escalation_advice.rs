//! What `splice status` advises for a node that cannot go on is true: a person who fixes the
//! cause its reason names and then runs the command the advice prints sees the node move on.
//!
//! Two kinds of escalation: a check that could not check (rule 23: a landing onto a checked-out
//! target with uncommitted work), which no run checks again by itself, so the advice names the
//! verb that does; and one `decide` finds afresh on every read (a delivery target that names no
//! commit), which the next run takes up again once the cause is gone.

mod common;

use std::path::Path;
use std::process::Command;

use common::{NOW, Repo, Reviewed};
use serde_json::Value;

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

/// Runs dispatch the simulated agent; direct delivery.
fn sim_agent(r: &Repo) {
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"{SPLICE}\", \"sim-agent\"]\nusage = \"file\"\n\n\
             [delivery]\nmethod = \"direct\"\n"
        ),
    );
}

fn node<'a>(status: &'a Value, id: &str) -> &'a Value {
    status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {status:#}"))
}

/// The command line a person copies from the advice, run by a shell in the repository with the
/// built splice first on `PATH`, as a person's shell would; it must succeed.
fn follow(r: &Repo, command: &str) {
    let bin = Path::new(SPLICE).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .args(["-c", command])
        .current_dir(r.path())
        .env_clear()
        .env("PATH", path)
        .env("HOME", r.path())
        .env("SPLICE_NOW", NOW)
        .env("SPLICE_SANDBOX", "off")
        .output()
        .unwrap();
    common::no_panic(&out);
    assert!(
        out.status.success(),
        "`{command}` failed\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Run a runner (human output) and require exit 0.
fn run_ok(r: &Repo, args: &[&str]) {
    let out = r.run(args);
    common::no_panic(&out);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// The advice of `id`: `status --json`'s `next`, checked against the text `status` prints.
fn advice(r: &Repo, id: &str) -> (Value, String) {
    let status = r.ok(&["status", "--json"]);
    let next = node(&status, id)["next"].clone();
    let text = String::from_utf8(r.run(&["status", "--color", "never"]).stdout).unwrap();
    assert!(
        text.contains(next["text"].as_str().unwrap()),
        "{text}\n{next:#}"
    );
    (status, text)
}

#[test]
fn an_escalated_landing_names_the_verb_that_checks_it_again_and_following_it_lands() {
    let r = Repo::new();
    r.git(&["branch", "dev"]);
    sim_agent(&r);
    let (id, reviewed) = r.reviewed_task(&Reviewed {
        title: "Work",
        delivery: "direct",
        target: "dev",
        files: &[("README.md", "changed\n")],
    });
    // A person works on `dev` in the main checkout, on the file the landing changes.
    r.git(&["checkout", "-q", "dev"]);
    r.write("README.md", "test repo\nmy own edit\n");
    run_ok(&r, &["run"]);

    let (status, text) = advice(&r, &id);
    assert_eq!(status["status"], "escalated", "{status:#}");
    assert!(text.starts_with("status: escalated"), "{text}");
    let row = node(&status, &id);
    assert_eq!(row["rest"]["kind"], "escalated", "{row:#}");
    assert!(
        row["rest"]["reason"]
            .as_str()
            .unwrap()
            .contains("uncommitted work (README.md)"),
        "{row:#}"
    );
    let next = &row["next"];
    let command = next["command"].as_str().unwrap();
    assert_eq!(
        command,
        format!("splice transition complete --bead {id} --step deliver"),
        "{next:#}"
    );
    assert!(
        !next["text"]
            .as_str()
            .unwrap()
            .contains("the next run checks"),
        "{next:#}"
    );
    assert!(text.contains(command), "{text}");
    // Nothing but that verb checks it again: a run leaves it where it is, and says so in its
    // exit status.
    let out = r.run(&["run", "--exit-status"]);
    assert_eq!(out.status.code(), Some(12), "{out:?}");
    // The run's last lines give the same advice.
    let lines = String::from_utf8_lossy(&out.stdout);
    assert!(lines.contains(command), "{lines}");
    assert!(!lines.contains("the next run checks"), "{lines}");
    assert_eq!(r.git(&["rev-parse", "dev"]), r.git(&["rev-parse", "main"]));

    // The cause, as the reason names it: set the edit aside. Then the advice, literally.
    r.git(&[
        "stash",
        "push",
        "--include-untracked",
        "-m",
        "before splice lands",
        "--",
        "README.md",
    ]);
    follow(&r, command);
    assert_eq!(r.git(&["rev-parse", "dev"]), reviewed);
    assert_eq!(r.bead(&id)["status"], "closed");
    let status = r.ok(&["status", "--json"]);
    assert_eq!(status["status"], "done", "{status:#}");
}

#[test]
fn an_escalation_decide_finds_afresh_is_taken_up_by_the_next_run() {
    let r = Repo::new();
    r.git(&["branch", "dev"]);
    sim_agent(&r);
    // One step, `work`, with a command and no floors: the node's first act is a dispatch, which
    // needs its target to branch from. Its agent proposes at once.
    let propose =
        "splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact README.md";
    let argv = serde_json::json!(["sh", "-c", propose]);
    let manifest = common::work_step_manifest(argv, serde_json::json!([]), 60, 3);
    r.write(".splice/manifest.json", &manifest);
    let id = r.task("Work", &["--delivery", "direct", "--target", "dev"]);
    let dev = r.git(&["rev-parse", "dev"]);
    r.git(&["branch", "-D", "dev"]);

    let (status, _) = advice(&r, &id);
    assert_eq!(status["status"], "escalated", "{status:#}");
    let row = node(&status, &id);
    assert_eq!(row["rest"]["kind"], "escalated", "{row:#}");
    assert!(
        row["rest"]["reason"]
            .as_str()
            .unwrap()
            .contains("names no commit"),
        "{row:#}"
    );
    let command = row["next"]["command"].as_str().unwrap().to_string();
    assert_eq!(command, "splice run", "{row:#}");

    // The cause, as the reason names it: make the branch again. Then the advice, literally.
    r.git(&["branch", "dev", &dev]);
    follow(&r, &command);
    let status = r.ok(&["status", "--json"]);
    let row = node(&status, &id);
    assert_ne!(row["rest"]["kind"], "escalated", "{status:#}");
    assert_eq!(
        row["status"], "closed",
        "the run dispatched it, and it proposed: {row:#}"
    );
}
