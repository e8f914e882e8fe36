//! Issue 12, section 2: an `optional: true` step whose command is not available is skipped at
//! run time and recorded as not applicable; a required step's missing command still stops the
//! run before anything is written, and `transition skip` never skips a required step.

mod common;

use common::Repo;
use serde_json::Value;

const TOOL: &str = "no-such-linter-for-splice";

/// A manifest whose leaf route is `lint` (an argv step running [`TOOL`], optional or not) then
/// `finish`, a step a person does (no command, no floors).
fn manifest(r: &Repo, optional: bool) {
    r.write(".splice/config.toml", "");
    r.write(
        ".splice/manifest.json",
        &format!(
            r#"{{ "routes": {{ "root": ["plan"], "compound": ["plan"], "leaf": ["lint", "finish"] }},
                 "steps": [ {{ "name": "plan", "role": "split", "floors": [] }},
                            {{ "name": "lint", "optional": {optional},
                               "run": {{ "argv": ["{TOOL}", "--all"] }} }},
                            {{ "name": "finish" }} ] }}"#
        ),
    );
}

fn run(r: &Repo) -> (Value, String) {
    let out = r.run(&["run", "--json"]);
    common::no_panic(&out);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    (serde_json::from_slice(&out.stdout).unwrap(), stderr)
}

#[test]
fn an_optional_step_whose_command_is_missing_is_skipped_as_not_applicable() {
    let r = Repo::new();
    manifest(&r, true);
    let id = r.task("Lint and finish", &[]);
    assert_eq!(r.bead(&id)["pipeline"]["step"], "lint");

    let (env, stderr) = run(&r);
    assert_eq!(
        stderr
            .matches("warning: optional step(s) lint will be skipped")
            .count(),
        1,
        "warned once: {stderr}"
    );
    assert!(
        stderr.contains(&format!("`{TOOL}`, which is not on PATH"))
            && stderr.contains(".splice/manifest.json steps[1].run.argv"),
        "{stderr}"
    );
    // Skipped, and on to the next step, which a person does.
    assert_eq!(env["status"], "suspended-human", "{env:#}");
    let bead = r.bead(&id);
    let p = &bead["pipeline"];
    assert_eq!(p["step"], "finish");
    assert_eq!(p["last_check"]["step"], "lint");
    assert_eq!(p["last_check"]["evidence"]["status"], "not-applicable");
    let reason = p["last_check"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("not applicable: step lint would run") && reason.contains(TOOL),
        "{reason}"
    );
    assert!(p["attempts"].get("lint").is_none(), "no attempt was used");
    let journal = r.journal();
    assert!(
        journal.contains("\"skip\"") && journal.contains("not applicable: lint ("),
        "the skip is journaled: {journal}"
    );

    // A person does `finish`; the next run checks it and the node closes: done.
    r.ok(&[
        "transition",
        "propose",
        "--bead",
        &id,
        "--step",
        "finish",
        "--artifact",
        "README.md",
    ]);
    let (env, _) = run(&r);
    assert_eq!(env["status"], "done", "{env:#}");
    assert_eq!(r.bead(&id)["status"], "closed");
}

#[test]
fn a_required_step_whose_command_is_missing_stops_the_run_before_anything_is_written() {
    let r = Repo::new();
    manifest(&r, false);
    let id = r.task("Lint and finish", &[]);
    let before = r.beads_bytes();
    let journal = r.journal();
    let err = r.fails(2, &["run", "--json"]);
    assert!(
        err.contains(&format!(
            "step lint would run `{TOOL}`, which is not on PATH"
        )) && err.contains(".splice/manifest.json steps[1].run.argv"),
        "{err}"
    );
    assert_eq!(r.beads_bytes(), before);
    assert_eq!(r.journal(), journal);

    // Nor may anyone skip a required step by hand; the state stays as it was.
    let skip = |step: &str| {
        r.fails(
            1,
            &[
                "transition",
                "skip",
                "--bead",
                &id,
                "--step",
                step,
                "--reason",
                "no linter here",
            ],
        )
    };
    let err = skip("lint");
    assert!(
        err.contains("required") && err.contains("never skipped"),
        "{err}"
    );
    let err = skip("finish");
    assert!(err.contains("is at step lint, not finish"), "{err}");
    assert_eq!(r.beads_bytes(), before);
}

#[test]
fn a_person_may_skip_an_optional_step_by_hand_and_the_last_step_closes_the_node() {
    let r = Repo::new();
    r.write(".splice/config.toml", "");
    r.write(
        ".splice/manifest.json",
        r#"{ "routes": { "root": ["plan"], "compound": ["plan"], "leaf": ["lint"] },
             "steps": [ { "name": "plan", "role": "split", "floors": [] },
                        { "name": "lint", "optional": true, "run": { "argv": ["sh", "-c", "true"] } } ] }"#,
    );
    let id = r.task("Lint only", &[]);
    let out = r.ok(&[
        "transition",
        "skip",
        "--bead",
        &id,
        "--step",
        "lint",
        "--reason",
        "the linter is not installed on this host",
    ]);
    assert_eq!(out["skipped"], true, "{out:#}");
    assert_eq!(out["status"], "not-applicable");
    assert_eq!(out["closed"], true);
    assert_eq!(out["next"], Value::Null);
    let bead = r.bead(&id);
    assert_eq!(bead["status"], "closed");
    assert_eq!(
        bead["pipeline"]["last_check"]["reason"],
        "not applicable: the linter is not installed on this host"
    );
}
