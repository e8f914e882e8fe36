//! One test (or more) per writer verb, including its refusals, against the built binary in a
//! temporary git repository. A small manifest with file/heading/command floors keeps these tests
//! about the writer, not about any one floor.

mod common;

use common::Repo;
use serde_json::Value;

/// A manifest whose floors this file controls.
const MANIFEST: &str = r#"{
  "routes": {
    "root": ["plan", "to-issues", "delegate", "integrate"],
    "compound": ["spec", "to-issues", "delegate", "integrate"],
    "leaf": ["spec", "implement", "deliver"]
  },
  "steps": [
    { "name": "plan", "run": { "prompt": "plan" }, "gate": "human", "planning": true, "relax": ["deep"],
      "floors": [ { "kind": "file_exists", "path": "plan/{{bead.id}}.md" } ] },
    { "name": "to-issues", "run": { "prompt": "to-issues" }, "floors": [] },
    { "name": "delegate", "floors": [] },
    { "name": "integrate", "run": { "prompt": "integrate" }, "floors": [] },
    { "name": "spec", "run": { "prompt": "spec" }, "gate": "human", "relax": ["wave", "deep"],
      "floors": [ { "kind": "headings", "path": "specs/{{bead.id}}.md", "headings": ["Goal", "Plan"] } ] },
    { "name": "implement", "run": { "argv": ["true"] }, "gate": "human", "relax": ["wave", "deep"], "floors": [] },
    { "name": "deliver", "run": { "argv": ["true"] },
      "floors": [ { "kind": "command", "argv": ["sh", "-c", "test -f delivered"] } ] }
  ]
}"#;

fn repo() -> Repo {
    let r = Repo::new();
    r.write(".splice/manifest.json", MANIFEST);
    std::fs::create_dir_all(r.state().join("beads")).unwrap();
    r
}

fn step(r: &Repo, id: &str) -> String {
    r.bead(id)["pipeline"]["step"].as_str().unwrap().to_string()
}

/// Propose `HEAD` for `step` and complete it (a step with an empty check list).
fn propose_and_complete(r: &Repo, id: &str, step: &str) -> serde_json::Value {
    r.ok(&[
        "transition",
        "propose",
        "--bead",
        id,
        "--step",
        step,
        "--artifact",
        "HEAD",
    ]);
    r.ok(&["transition", "complete", "--bead", id, "--step", step])
}

/// Move a root to the step that splits (`to-issues`, inferred from its name), where `split` is
/// allowed.
fn at_split_step(r: &Repo, root: &str) {
    r.ok(&[
        "transition",
        "route",
        "--bead",
        root,
        "--to",
        "root",
        "--at",
        "to-issues",
    ]);
}

fn spec_file(r: &Repo, id: &str) {
    r.write(&format!("specs/{id}.md"), "# Goal\nx\n## Plan\ny\n");
}

#[test]
fn init_creates_a_campaign_root_and_the_state_dir() {
    let r = Repo::new();
    let out = r.ok(&[
        "init",
        "--title",
        "C",
        "--scenarios",
        "S1,S2",
        "--autonomy",
        "wave",
    ]);
    let id = out["id"].as_str().unwrap();
    assert!(id.starts_with("sp-") && id.len() >= 7, "{id}");
    let b = r.bead(id);
    assert_eq!(b["pipeline"]["kind"], "root");
    assert_eq!(b["pipeline"]["step"], "create-prp");
    assert_eq!(b["pipeline"]["scenarios"], serde_json::json!(["S1", "S2"]));
    assert_eq!(b["pipeline"]["autonomy"], "wave");
    assert_eq!(
        b["pipeline"]["target"], "main",
        "target defaults to the checked-out branch"
    );
    let ignore = std::fs::read_to_string(r.state().join(".gitignore")).unwrap();
    for entry in ["worktrees/", "runs/", "lock", "cache/"] {
        assert!(ignore.lines().any(|l| l == entry), "{entry} not ignored");
    }
    let again = r.ok(&["init", "--title", "C"]);
    assert_ne!(
        again["id"], out["id"],
        "same title and time still gets a fresh id"
    );
}

#[test]
fn init_warns_while_suite_config_is_unset() {
    let r = Repo::new();
    let out = r.run(&["init", "--title", "C"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("suite_cmd and test_paths are unset"));
}

#[test]
fn init_refuses_bad_input_without_creating_state() {
    let r = Repo::new();
    let err = r.fails(2, &["init", "--title", "C", "--autonomy", "reckless"]);
    assert!(err.contains("--autonomy"), "{err}");
    let err = r.fails(2, &["init-task", "--title", "T", "--tier", "huge"]);
    assert!(err.contains("--tier"), "{err}");
    assert!(
        !r.state().exists(),
        "bad input must leave no .splice/ behind"
    );
}

#[test]
fn init_task_creates_a_leaf_at_its_entry_step() {
    let r = Repo::new();
    // A target must exist (issue 10, item 9).
    r.git(&["branch", "dev"]);
    let id = r.task("Fix the parser", &["--tier", "light", "--target", "dev"]);
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["kind"], "leaf");
    assert_eq!(b["pipeline"]["step"], "generate-spec");
    assert_eq!(b["pipeline"]["tier"], "light");
    assert_eq!(b["pipeline"]["target"], "dev");
    assert_eq!(b["status"], "open");
}

#[test]
fn claim_is_exclusive_and_idempotent_for_its_holder() {
    let r = repo();
    let id = r.task("T", &[]);
    r.ok(&["transition", "claim", "--bead", &id, "--holder", "a"]);
    let again = r.ok(&["transition", "claim", "--bead", &id, "--holder", "a"]);
    assert_eq!(again["new"], false);
    let before = r.beads_bytes();
    let err = r.fails(1, &["transition", "claim", "--bead", &id, "--holder", "b"]);
    assert!(err.contains("claimed by a"), "{err}");
    assert_eq!(
        r.beads_bytes(),
        before,
        "a refusal leaves the state as it was"
    );
    let err = r.fails(2, &["transition", "claim", "--bead", &id]);
    assert!(err.contains("--holder"), "{err}");
}

#[test]
fn dispatch_claims_count_attempts_until_the_limit() {
    let r = repo();
    let id = r.task("T", &[]);
    for n in 1..=3 {
        let out = r.ok(&[
            "transition",
            "claim",
            "--bead",
            &id,
            "--holder",
            "run",
            "--dispatch",
        ]);
        assert_eq!(out["attempt"], n);
        r.ok(&["transition", "release", "--bead", &id, "--holder", "run"]);
    }
    assert_eq!(r.bead(&id)["pipeline"]["attempts"]["spec"], 3);
    let err = r.fails(
        1,
        &[
            "transition",
            "claim",
            "--bead",
            &id,
            "--holder",
            "run",
            "--dispatch",
        ],
    );
    assert!(err.contains("exhausted"), "{err}");
}

#[test]
fn release_by_holder_and_clear_by_a_person() {
    let r = repo();
    let id = r.task("T", &[]);
    r.ok(&[
        "transition",
        "claim",
        "--bead",
        &id,
        "--holder",
        "a",
        "--dispatch",
    ]);
    let err = r.fails(
        1,
        &["transition", "release", "--bead", &id, "--holder", "b"],
    );
    assert!(err.contains("claimed by a"), "{err}");
    let err = r.fails(2, &["transition", "release", "--bead", &id, "--clear"]);
    assert!(err.contains("--reason"), "{err}");
    let out = r
        .cmd(&[
            "transition",
            "release",
            "--bead",
            &id,
            "--clear",
            "--reason",
            "dead",
        ])
        .env("SPLICE_DISPATCHED", "1")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "a dispatched session cannot clear a claim"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`release --clear` is a person's verb"),
        "{err}"
    );
    let out = r.ok(&[
        "transition",
        "release",
        "--bead",
        &id,
        "--clear",
        "--reason",
        "runner died",
    ]);
    assert_eq!(out["cleared"], "a");
    let b = r.bead(&id);
    assert!(b["pipeline"]["lease"].is_null());
    assert_eq!(
        b["pipeline"]["attempts"]["spec"], 0,
        "a cleared claim counts no attempt"
    );
    // Clearing a claim that is not there is a no-op, as releasing one is (issue 9).
    let journal = r.journal();
    let out = r.ok(&[
        "transition",
        "release",
        "--bead",
        &id,
        "--clear",
        "--reason",
        "x",
    ]);
    assert_eq!(out["cleared"], Value::Null, "nothing was cleared");
    assert_eq!(r.journal(), journal, "a no-op writes nothing");
    let out = r.ok(&["transition", "release", "--bead", &id, "--holder", "a"]);
    assert_eq!(
        out["released"], false,
        "releasing an unclaimed bead is a no-op"
    );
}

#[test]
fn propose_checks_step_and_lease() {
    let r = repo();
    let id = r.task("T", &[]);
    let err = r.fails(
        1,
        &[
            "transition",
            "propose",
            "--bead",
            &id,
            "--step",
            "implement",
            "--artifact",
            "x",
        ],
    );
    assert!(err.contains("at step spec"), "{err}");
    r.ok(&[
        "transition",
        "claim",
        "--bead",
        &id,
        "--holder",
        "agent-1",
        "--dispatch",
    ]);
    let err = r.fails(
        1,
        &[
            "transition",
            "propose",
            "--bead",
            &id,
            "--step",
            "spec",
            "--artifact",
            "x",
        ],
    );
    assert!(
        err.contains("claimed by agent-1"),
        "a person cannot propose on a claimed bead: {err}"
    );
    let out = r
        .cmd(&[
            "transition",
            "propose",
            "--bead",
            &id,
            "--step",
            "spec",
            "--artifact",
            "specs/x.md",
        ])
        .env("SPLICE_HOLDER", "agent-1")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = &r.bead(&id)["pipeline"]["proposal"];
    assert_eq!(p["artifact"], "specs/x.md");
    assert_eq!(p["holder"], "agent-1");
    // After a person clears the claim, the orphaned agent can no longer propose.
    r.ok(&[
        "transition",
        "release",
        "--bead",
        &id,
        "--clear",
        "--reason",
        "dead",
    ]);
    let err = r.fails(
        1,
        &[
            "transition",
            "propose",
            "--bead",
            &id,
            "--step",
            "spec",
            "--artifact",
            "y",
            "--holder",
            "agent-1",
        ],
    );
    assert!(err.contains("not claimed by agent-1"), "{err}");
}

#[test]
fn complete_refuses_missing_evidence_and_records_the_check() {
    let r = repo();
    let id = r.task("T", &[]);
    let err = r.fails(
        1,
        &["transition", "complete", "--bead", &id, "--step", "spec"],
    );
    assert!(err.contains("does not exist"), "{err}");
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["step"], "spec");
    assert_eq!(b["pipeline"]["last_check"]["verdict"], "refuse");
    r.write(&format!("specs/{id}.md"), "# Goal\n");
    let err = r.fails(
        1,
        &["transition", "complete", "--bead", &id, "--step", "spec"],
    );
    assert!(err.contains("Plan"), "names the missing heading: {err}");
    let err = r.fails(
        1,
        &["transition", "complete", "--bead", &id, "--step", "deliver"],
    );
    assert!(err.contains("at step spec"), "{err}");
}

#[test]
fn complete_at_hitl_holds_the_gate_until_a_person_approves() {
    let r = repo();
    let id = r.task("T", &[]);
    spec_file(&r, &id);
    let err = r.fails(
        1,
        &["transition", "approve", "--bead", &id, "--step", "spec"],
    );
    assert!(err.contains("no gate is pending"), "{err}");
    let out = r.ok(&["transition", "complete", "--bead", &id, "--step", "spec"]);
    assert_eq!(out["gate"], "pending");
    assert_eq!(
        step(&r, &id),
        "spec",
        "a pending gate leaves the step unchanged"
    );
    let out = r
        .cmd(&["transition", "approve", "--bead", &id, "--step", "spec"])
        .env("SPLICE_DISPATCHED", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "approve is a person's verb");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`approve` is a person's verb"), "{err}");
    let out = r.ok(&["transition", "approve", "--bead", &id, "--step", "spec"]);
    assert_eq!(out["next"], "implement");
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["step"], "implement");
    assert_eq!(b["pipeline"]["gate"]["state"], "approved");
    assert_eq!(b["pipeline"]["gate"]["by"], "person");
}

/// A person need not name the step of the one gate pending on a bead: `approve ID` (and `reject
/// ID --reason R`) act on it. With no gate pending, the verb is refused (exit 1), saying the step
/// the bead is at and to name it with `--step`, and nothing is written.
#[test]
fn approve_and_reject_without_a_step_take_the_gate_pending_on_the_bead() {
    let r = repo();
    let id = r.task("T", &[]);
    spec_file(&r, &id);
    let before = r.beads_bytes();
    for args in [
        vec!["transition", "approve", id.as_str()],
        vec!["transition", "reject", id.as_str(), "--reason", "too soon"],
    ] {
        let err = r.fails(1, &args);
        assert!(
            err.contains(&format!("no gate is pending on bead {id} (at step spec)"))
                && err.contains("--step"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(r.beads_bytes(), before, "a refusal writes nothing");

    let out = r.ok(&["transition", "complete", "--bead", &id, "--step", "spec"]);
    assert_eq!(out["gate"], "pending");
    let out = r.ok(&["transition", "reject", &id, "--reason", "say more"]);
    assert_eq!(
        (&out["step"], &out["rejected"]),
        (&serde_json::json!("spec"), &serde_json::json!(true))
    );
    assert!(
        r.bead(&id)["pipeline"]["gate"].is_null(),
        "the gate is withdrawn"
    );

    let out = r.ok(&["transition", "complete", "--bead", &id, "--step", "spec"]);
    assert_eq!(out["gate"], "pending");
    let out = r.ok(&["transition", "approve", &id]);
    assert_eq!(
        (&out["step"], &out["next"]),
        (&serde_json::json!("spec"), &serde_json::json!("implement"))
    );
    assert_eq!(step(&r, &id), "implement");
}

#[test]
fn a_relaxed_gate_records_the_level_and_the_node_that_supplied_it() {
    let r = repo();
    let root = r.init(&["--autonomy", "wave"]);
    r.write(&format!("plan/{root}.md"), "plan\n");
    // Planning gates never relax, whatever the level.
    let out = r.ok(&["transition", "complete", "--bead", &root, "--step", "plan"]);
    assert_eq!(out["gate"], "pending");
    r.ok(&["transition", "approve", "--bead", &root, "--step", "plan"]);
    r.write(
        "children.json",
        r#"[{"title": "A", "scenarios": ["S1"], "files": ["src/a.rs"]}]"#,
    );
    r.ok(&[
        "transition",
        "split",
        "--bead",
        &root,
        "--children",
        "children.json",
    ]);
    let child = format!("{root}.1");
    spec_file(&r, &child);
    let out = r.ok(&["transition", "complete", "--bead", &child, "--step", "spec"]);
    assert_eq!(out["gate"]["state"], "relaxed");
    let gate = &r.bead(&child)["pipeline"]["gate"];
    assert_eq!(gate["autonomy"], "wave");
    assert_eq!(
        gate["supplied_by"],
        root.as_str(),
        "inherited from the root"
    );
    assert_eq!(step(&r, &child), "implement");
}

#[test]
fn an_unrunnable_floor_escalates() {
    let r = repo();
    r.write(
        ".splice/manifest.json",
        &MANIFEST.replace(
            r#"["sh", "-c", "test -f delivered"]"#,
            r#"["/nonexistent/tool"]"#,
        ),
    );
    let id = r.task("T", &["--autonomy", "wave"]);
    spec_file(&r, &id);
    r.ok(&["transition", "complete", "--bead", &id, "--step", "spec"]);
    propose_and_complete(&r, &id, "implement");
    let err = r.fails(1, &["transition", "deliver", "--bead", &id]);
    assert!(
        err.contains("escalated") && err.contains("cannot run"),
        "{err}"
    );
    assert_eq!(r.bead(&id)["pipeline"]["last_check"]["verdict"], "escalate");
}

#[test]
fn an_empty_check_list_needs_a_proposal_and_the_last_step_closes() {
    let r = repo();
    let id = r.task("T", &["--autonomy", "wave"]);
    spec_file(&r, &id);
    r.ok(&["transition", "complete", "--bead", &id, "--step", "spec"]);
    let err = r.fails(
        1,
        &[
            "transition",
            "complete",
            "--bead",
            &id,
            "--step",
            "implement",
        ],
    );
    assert!(err.contains("nothing was proposed"), "{err}");
    propose_and_complete(&r, &id, "implement");
    assert_eq!(step(&r, &id), "deliver");
    let err = r.fails(1, &["transition", "deliver", "--bead", &id]);
    assert!(
        err.contains("test -f delivered") && err.contains("exited 1"),
        "names the failing check: {err}"
    );
    r.write("delivered", "yes\n");
    let out = r.ok(&["transition", "deliver", "--bead", &id]);
    assert_eq!(out["closed"], true);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed");
    assert!(b["closed_at"].is_string());
    let err = r.fails(1, &["transition", "claim", "--bead", &id, "--holder", "x"]);
    assert!(err.contains("closed"), "{err}");
}

#[test]
fn reject_records_a_refusal_with_guidance() {
    let r = repo();
    let id = r.task("T", &[]);
    spec_file(&r, &id);
    r.ok(&["transition", "complete", "--bead", &id, "--step", "spec"]);
    let out = r
        .cmd(&[
            "transition",
            "reject",
            "--bead",
            &id,
            "--step",
            "spec",
            "--reason",
            "no",
        ])
        .env("SPLICE_DISPATCHED", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`reject` is a person's verb"), "{err}");
    r.ok(&[
        "transition",
        "reject",
        "--bead",
        &id,
        "--step",
        "spec",
        "--reason",
        "cover the empty input",
    ]);
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["last_check"]["verdict"], "refuse");
    assert_eq!(b["pipeline"]["guidance"], "cover the empty input");
    let err = r.fails(
        1,
        &["transition", "approve", "--bead", &id, "--step", "spec"],
    );
    assert!(err.contains("no gate is pending"), "{err}");
}

#[test]
fn park_and_unpark() {
    let r = repo();
    let id = r.task("T", &[]);
    r.ok(&[
        "transition",
        "claim",
        "--bead",
        &id,
        "--holder",
        "run",
        "--dispatch",
    ]);
    r.ok(&["transition", "release", "--bead", &id, "--holder", "run"]);
    let err = r.fails(
        1,
        &["transition", "complete", "--bead", &id, "--step", "spec"],
    );
    assert!(err.contains("does not exist"), "{err}");
    r.ok(&[
        "transition",
        "park",
        "--bead",
        &id,
        "--reason",
        "attempts exhausted",
    ]);
    let err = r.fails(
        1,
        &["transition", "park", "--bead", &id, "--reason", "again"],
    );
    assert!(err.contains("already parked"), "{err}");
    let err = r.fails(
        1,
        &[
            "transition",
            "claim",
            "--bead",
            &id,
            "--holder",
            "run",
            "--dispatch",
        ],
    );
    assert!(err.contains("parked"), "{err}");
    assert_eq!(
        r.bead(&id)["pipeline"]["dead_letter"]["reason"],
        "attempts exhausted"
    );
    r.ok(&[
        "transition",
        "unpark",
        "--bead",
        &id,
        "--reason",
        "fixed the spec template",
    ]);
    let b = r.bead(&id);
    assert!(b["pipeline"]["dead_letter"].is_null());
    assert!(
        b["pipeline"]["attempts"].get("spec").is_none(),
        "unpark resets the step's attempts"
    );
    assert!(
        b["pipeline"]["last_check"].is_null(),
        "unpark clears the last check"
    );
    let err = r.fails(1, &["transition", "unpark", "--bead", &id, "--reason", "x"]);
    assert!(err.contains("not parked"), "{err}");
}

#[test]
fn split_creates_children_in_one_record_and_only_once() {
    let r = repo();
    let root = r.init(&["--scenarios", "S1,S2"]);
    at_split_step(&r, &root);
    r.write(
        "children.json",
        r#"[{"title": "A", "scenarios": ["S1"], "files": ["src/a.rs"]},
            {"title": "B", "description": "b", "scenarios": ["S2"], "files": ["src/b"], "depends_on": [0]}]"#,
    );
    let journal_before = r.journal().lines().count();
    let out = r.ok(&[
        "transition",
        "split",
        "--bead",
        &root,
        "--children",
        "children.json",
    ]);
    assert_eq!(
        out["children"],
        serde_json::json!([format!("{root}.1"), format!("{root}.2")])
    );
    let journal = r.journal();
    let lines: Vec<&str> = journal.lines().collect();
    assert_eq!(
        lines.len(),
        journal_before + 2,
        "one record and its commit marker"
    );
    let record: Value = serde_json::from_str(lines[journal_before]).unwrap();
    assert_eq!(record["verb"], "split");
    assert_eq!(
        record["changes"].as_array().unwrap().len(),
        2,
        "both children, whole (the parent stays at its step)"
    );
    assert_eq!(record["patches"].as_array().unwrap().len(), 1, "the parent");
    // The children come whole; the parent, which had a file, as its patch.
    assert_eq!(record["beads"].as_array().unwrap().len(), 2, "{record}");
    assert_eq!(record["patches"][0]["id"], root.as_str());
    let b = r.bead(&format!("{root}.2"));
    assert_eq!(b["parent"], root.as_str());
    assert_eq!(b["pipeline"]["provenance"]["split_by"], root.as_str());
    assert_eq!(b["pipeline"]["step"], "spec");
    assert_eq!(b["dependencies"][0]["depends_on_id"], format!("{root}.1"));
    assert_eq!(b["dependencies"][0]["type"], "blocks");
    assert_eq!(
        r.bead(&root)["pipeline"]["split"]["children"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let err = r.fails(
        1,
        &[
            "transition",
            "split",
            "--bead",
            &root,
            "--children",
            "children.json",
        ],
    );
    assert!(err.contains("already split"), "{err}");
    let err = r.fails(
        1,
        &[
            "transition",
            "split",
            "--bead",
            &format!("{root}.1"),
            "--children",
            "children.json",
        ],
    );
    assert!(err.contains("leaf"), "{err}");
}

#[test]
fn split_rejects_a_bad_children_file_and_changes_nothing() {
    let r = repo();
    let root = r.init(&[]);
    let before = r.beads_bytes();
    for (text, needle) in [
        ("not json", "children.json"),
        ("[]", "empty"),
        (r#"[{"title": "A", "depends_on": [0]}]"#, "depends_on"),
        (r#"[{"title": "A", "files": ["../etc/passwd"]}]"#, "files"),
        (r#"[{"title": ""}]"#, "title"),
    ] {
        r.write("children.json", text);
        let err = r.fails(
            2,
            &[
                "transition",
                "split",
                "--bead",
                &root,
                "--children",
                "children.json",
            ],
        );
        assert!(err.contains(needle), "{text}: {err}");
    }
    let err = r.fails(
        2,
        &[
            "transition",
            "split",
            "--bead",
            &root,
            "--children",
            "missing.json",
        ],
    );
    assert!(err.contains("missing.json"), "{err}");
    assert_eq!(r.beads_bytes(), before);
}

#[test]
fn set_config_writes_the_root_and_refuses_missing_test_paths() {
    let r = repo();
    let root = r.init(&[]);
    at_split_step(&r, &root);
    r.write("children.json", r#"[{"title": "A"}]"#);
    r.ok(&[
        "transition",
        "split",
        "--bead",
        &root,
        "--children",
        "children.json",
    ]);
    let err = r.fails(
        1,
        &[
            "transition",
            "set-config",
            "--bead",
            &root,
            "--test-paths",
            "nope",
        ],
    );
    assert!(err.contains("nope"), "{err}");
    std::fs::create_dir_all(r.path().join("tests")).unwrap();
    let out = r.ok(&[
        "transition",
        "set-config",
        "--bead",
        &format!("{root}.1"),
        "--suite-cmd",
        "cargo test",
        "--test-paths",
        "tests",
    ]);
    assert_eq!(out["root"], root.as_str(), "written on the campaign root");
    let b = r.bead(&root);
    assert_eq!(b["pipeline"]["suite_cmd"], "cargo test");
    assert_eq!(b["pipeline"]["test_paths"], serde_json::json!(["tests"]));
}

#[test]
fn set_config_clears_escalated_checks_under_the_root() {
    let r = repo();
    r.write(
        ".splice/manifest.json",
        &MANIFEST.replace(
            r#"["sh", "-c", "test -f delivered"]"#,
            r#"["/nonexistent/tool"]"#,
        ),
    );
    let root = r.init(&[]);
    at_split_step(&r, &root);
    r.write("children.json", r#"[{"title": "A"}]"#);
    r.ok(&[
        "transition",
        "split",
        "--bead",
        &root,
        "--children",
        "children.json",
    ]);
    let child = format!("{root}.1");
    r.ok(&[
        "transition",
        "route",
        "--bead",
        &child,
        "--to",
        "leaf",
        "--at",
        "deliver",
    ]);
    let err = r.fails(1, &["transition", "deliver", "--bead", &child]);
    assert!(
        err.contains("escalated") && err.contains("cannot run"),
        "{err}"
    );
    assert_eq!(
        r.bead(&child)["pipeline"]["last_check"]["verdict"],
        "escalate"
    );
    r.ok(&[
        "transition",
        "set-config",
        "--bead",
        &root,
        "--suite-cmd",
        "true",
    ]);
    assert!(r.bead(&child)["pipeline"]["last_check"].is_null());
}

#[test]
fn set_autonomy_and_set_target() {
    let r = repo();
    let id = r.task("T", &[]);
    let err = r.fails(
        2,
        &[
            "transition",
            "set-autonomy",
            "--bead",
            &id,
            "--autonomy",
            "max",
        ],
    );
    assert!(err.contains("hitl, wave or deep"), "{err}");
    r.ok(&[
        "transition",
        "set-autonomy",
        "--bead",
        &id,
        "--autonomy",
        "deep",
    ]);
    let out = r.ok(&["show", &id, "--field", "autonomy", "--json"]);
    assert_eq!(out["autonomy"], "deep");
    assert_eq!(out["source"], id.as_str());
    let err = r.fails(
        1,
        &[
            "transition",
            "set-target",
            "--bead",
            &id,
            "--target",
            "main",
        ],
    );
    assert!(err.contains("deep"), "{err}");
    r.git(&["branch", "campaign/x"]);
    r.ok(&[
        "transition",
        "set-target",
        "--bead",
        &id,
        "--target",
        "campaign/x",
        "--delivery",
        "direct",
    ]);
    let out = r.ok(&["show", &id, "--field", "target", "--json"]);
    assert_eq!(out["target"], "campaign/x");
    let out = r.ok(&["show", &id, "--field", "delivery", "--json"]);
    assert_eq!(out["delivery"], "direct");
    let err = r.fails(
        2,
        &[
            "transition",
            "set-target",
            "--bead",
            &id,
            "--target",
            "x",
            "--delivery",
            "fax",
        ],
    );
    assert!(
        err.contains("--delivery \"fax\"") && err.contains("pr or direct"),
        "{err}"
    );
}

#[test]
fn show_field_answers_in_words_and_the_old_read_verbs_still_answer_with_a_deprecation_note() {
    let r = repo();
    let id = r.task("T", &[]);
    let words = |field: &str| {
        let out = r.run(&["show", &id, "--field", field]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let step = r.ok(&["show", &id, "--field", "step", "--json"]);
    assert_eq!(
        words("step"),
        format!(
            "{} (route {}, open, seq {})\n",
            step["step"].as_str().unwrap(),
            step["route"].as_str().unwrap(),
            step["seq"]
        )
    );
    assert_eq!(words("kind"), "leaf\n");
    assert_eq!(words("delivery"), "pr\n");
    // The spelling `--level` still sets the level, and the old verbs answer as they did.
    r.ok(&[
        "transition",
        "set-autonomy",
        "--bead",
        &id,
        "--level",
        "deep",
    ]);
    assert_eq!(words("autonomy"), format!("deep (from {id})\n"));
    for (verb, field) in [
        ("step", "step"),
        ("kind", "kind"),
        ("autonomy", "autonomy"),
        ("target", "target"),
        ("delivery", "delivery"),
    ] {
        let old = r.run(&["transition", verb, "--bead", &id]);
        assert_eq!(old.status.code(), Some(0));
        let new = r.run(&["show", &id, "--field", field, "--json"]);
        assert_eq!(old.stdout, new.stdout, "transition {verb}");
        let note = String::from_utf8_lossy(&old.stderr);
        assert!(
            note.contains("deprecated") && note.contains(&format!("--field {field}")),
            "{note}"
        );
    }
    let help = r.run(&["transition", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        !help.contains("delivery  "),
        "the old verbs are hidden: {help}"
    );
    let other = r.task("U", &[]);
    let err = r.fails(2, &["show", &id, &other, "--field", "kind"]);
    assert!(
        err.contains("--field reads one bead; 2 were named"),
        "{err}"
    );
}

#[test]
fn record_exit_needs_the_holders_dispatch() {
    let r = repo();
    let id = r.task("T", &[]);
    let err = r.fails(
        1,
        &[
            "transition",
            "record-exit",
            "--bead",
            &id,
            "--holder",
            "run",
            "--exit",
            "ok",
        ],
    );
    assert!(err.contains("not claimed"), "{err}");
    r.ok(&[
        "transition",
        "claim",
        "--bead",
        &id,
        "--holder",
        "run",
        "--dispatch",
    ]);
    let err = r.fails(
        2,
        &[
            "transition",
            "record-exit",
            "--bead",
            &id,
            "--holder",
            "run",
            "--exit",
            "maybe",
        ],
    );
    assert!(
        err.contains("--exit \"maybe\"")
            && err.contains("ok, failed, timeout, error, not-started, cancelled"),
        "{err}"
    );
    let out = r.ok(&[
        "transition",
        "record-exit",
        "--bead",
        &id,
        "--holder",
        "run",
        "--exit",
        "failed",
        "--code",
        "3",
        "--usage",
        r#"{"input_tokens": 10, "cost_usd": null}"#,
    ]);
    assert_eq!(out["proposed"], false);
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["exits"][0]["exit"], "failed");
    assert_eq!(b["pipeline"]["exits"][0]["code"], 3);
    assert_eq!(b["pipeline"]["usage"]["input_tokens"], 10);
    assert!(
        b["pipeline"]["usage"]["cost_usd"].is_null(),
        "an unknown cost stays unknown"
    );
}

#[test]
fn record_run_stores_the_envelope() {
    let r = repo();
    let id = r.init(&[]);
    r.write("env.json", r#"{"status": "idle", "nodes": {}}"#);
    r.ok(&[
        "transition",
        "record-run",
        "--bead",
        &id,
        "--envelope",
        "env.json",
    ]);
    assert_eq!(r.bead(&id)["pipeline"]["driver_last"]["status"], "idle");
    r.write("bad.json", "{");
    let err = r.fails(
        2,
        &[
            "transition",
            "record-run",
            "--bead",
            &id,
            "--envelope",
            "bad.json",
        ],
    );
    assert!(err.contains("bad.json"), "{err}");
}

#[test]
fn route_moves_a_node_and_refuses_unknown_routes() {
    let r = repo();
    let id = r.task("T", &[]);
    let err = r.fails(
        1,
        &["transition", "route", "--bead", &id, "--to", "nowhere"],
    );
    assert!(err.contains("unknown route"), "{err}");
    let err = r.fails(
        1,
        &[
            "transition",
            "route",
            "--bead",
            &id,
            "--to",
            "compound",
            "--at",
            "implement",
        ],
    );
    assert!(
        err.contains("step \"implement\" is not on route compound"),
        "{err}"
    );
    r.ok(&[
        "transition",
        "route",
        "--bead",
        &id,
        "--to",
        "compound",
        "--at",
        "to-issues",
    ]);
    let out = r.ok(&["transition", "kind", "--bead", &id]);
    assert_eq!(out["kind"], "compound");
    assert_eq!(step(&r, &id), "to-issues");
}

#[test]
fn read_only_verbs_never_write() {
    let r = repo();
    r.git(&["branch", "dev"]);
    let id = r.task("T", &["--target", "dev"]);
    let journal = r.journal();
    let before = r.beads_bytes();
    assert_eq!(
        r.ok(&["transition", "show", "--bead", &id])["id"],
        id.as_str()
    );
    assert_eq!(r.ok(&["transition", "step", "--bead", &id])["step"], "spec");
    assert_eq!(r.ok(&["transition", "kind", "--bead", &id])["kind"], "leaf");
    assert_eq!(
        r.ok(&["transition", "autonomy", "--bead", &id])["autonomy"],
        "hitl"
    );
    assert_eq!(
        r.ok(&["transition", "target", "--bead", &id])["target"],
        "dev"
    );
    assert_eq!(
        r.ok(&["transition", "delivery", "--bead", &id])["delivery"],
        "pr"
    );
    assert_eq!(r.journal(), journal);
    assert_eq!(r.beads_bytes(), before);
    let err = r.fails(2, &["transition", "show", "--bead", "sp-none"]);
    assert!(err.contains("sp-none"), "{err}");
}

#[test]
fn every_transition_is_journaled_with_verb_actor_reason_and_steps() {
    let r = repo();
    let id = r.task("T", &[]);
    spec_file(&r, &id);
    r.ok(&["transition", "complete", "--bead", &id, "--step", "spec"]);
    r.ok(&["transition", "approve", "--bead", &id, "--step", "spec"]);
    let records: Vec<Value> = r
        .journal()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &Value| v.get("verb").is_some())
        .collect();
    let verbs: Vec<&str> = records
        .iter()
        .map(|v| v["verb"].as_str().unwrap())
        .collect();
    assert_eq!(verbs, ["init-task", "complete", "approve"]);
    let approve = &records[2];
    assert_eq!(approve["actor"], "person");
    assert!(approve["reason"].as_str().unwrap().contains("approved"));
    assert_eq!(approve["changes"][0]["from"], "spec");
    assert_eq!(approve["changes"][0]["to"], "implement");
}

#[test]
fn expect_seq_is_a_compare_and_swap() {
    let r = repo();
    let id = r.task("T", &[]);
    let seq = r.bead(&id)["pipeline"]["seq"].as_u64().unwrap();
    let err = r.fails(
        1,
        &[
            "transition",
            "claim",
            "--bead",
            &id,
            "--holder",
            "a",
            "--expect-seq",
            &(seq + 1).to_string(),
        ],
    );
    assert!(err.contains("changed"), "{err}");
    r.ok(&[
        "transition",
        "claim",
        "--bead",
        &id,
        "--holder",
        "a",
        "--expect-seq",
        &seq.to_string(),
    ]);
}

#[test]
fn unknown_fields_survive_a_rewrite() {
    let r = repo();
    let id = r.task("T", &[]);
    let path = r.state().join("beads").join(format!("{id}.json"));
    let mut b: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    b["bd_only_field"] = serde_json::json!({"keep": [1, 2]});
    b["pipeline"]["future_field"] = serde_json::json!("kept");
    std::fs::write(&path, serde_json::to_string_pretty(&b).unwrap()).unwrap();
    r.ok(&["transition", "claim", "--bead", &id, "--holder", "a"]);
    let after = r.bead(&id);
    assert_eq!(after["bd_only_field"], serde_json::json!({"keep": [1, 2]}));
    assert_eq!(after["pipeline"]["future_field"], "kept");
    assert!(
        std::fs::read_to_string(&path).unwrap().ends_with("}\n"),
        "trailing newline"
    );
}

#[test]
fn integrate_is_complete_for_the_integrate_step_and_closes_the_container() {
    let r = repo();
    let root = r.init(&[]);
    let err = r.fails(1, &["transition", "integrate", "--bead", &root]);
    assert!(err.contains("not integrate"), "{err}");
    r.ok(&[
        "transition",
        "route",
        "--bead",
        &root,
        "--to",
        "root",
        "--at",
        "integrate",
    ]);
    let err = r.fails(1, &["transition", "integrate", "--bead", &root]);
    assert!(err.contains("nothing was proposed"), "{err}");
    r.ok(&[
        "transition",
        "propose",
        "--bead",
        &root,
        "--step",
        "integrate",
        "--artifact",
        "docs/reconcile.md",
    ]);
    let out = r.ok(&["transition", "integrate", "--bead", &root]);
    assert_eq!(out["closed"], true);
    let b = r.bead(&root);
    assert_eq!(b["status"], "closed");
    let last = r
        .journal()
        .lines()
        .rev()
        .find(|l| l.contains("\"verb\""))
        .unwrap()
        .to_string();
    assert!(last.contains("\"verb\":\"integrate\""), "{last}");
}
