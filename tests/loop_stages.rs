//! Issue 13: a loop step's acceptance and SARIF stages in a run, and `transition set-acceptance`,
//! the person's verb that sets the acceptance facts a `command` stage runs.

mod common;
mod loop_support;

use common::Repo;
use loop_support::{argv_step, dump, run, trajectory};
use serde_json::json;

#[test]
fn acceptance_facts_set_by_a_person_are_run_each_iteration_until_they_pass() {
    let r = Repo::new();
    argv_step(
        &r,
        "results a=ok; [ $n -ge 2 ] && echo done > out.txt; commit",
        json!({ "stages": [
            { "kind": "tests", "argv": ["cat", "results"] },
            { "kind": "command" }
        ] }),
    );
    let id = r.task("Loop", &[]);
    r.write(
        "facts.json",
        r#"[{"id": "A1", "argv": ["test", "-f", "out.txt"]}, {"id": "A2", "argv": ["true"]}]"#,
    );
    let set = r.ok(&[
        "transition",
        "set-acceptance",
        "--bead",
        &id,
        "--facts",
        "facts.json",
    ]);
    assert_eq!(set["acceptance"][0]["id"], "A1", "{set:#}");
    run(&r, &[]);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{}", dump(&r, &id));
    let t = trajectory(&b);
    assert_eq!(t.len(), 2, "{t:#?}");
    assert_eq!(
        t[0]["state"]["acceptance"],
        json!({"passed": 1, "failed": 1, "errored": 0})
    );
    assert_eq!(t[0]["context"]["acceptance"][0]["id"], "A1");
    assert_eq!(
        t[1]["state"]["acceptance"],
        json!({"passed": 2, "failed": 0, "errored": 0})
    );
}

#[test]
fn a_bad_facts_file_is_named_and_changes_nothing() {
    let r = Repo::new();
    let id = r.task("Loop", &[]);
    let before = r.beads_bytes();
    let journal = r.journal();
    for (text, says) in [
        ("not json", "facts.json"),
        (
            r#"[{"id": "A1", "argv": []}]"#,
            "[0]: `argv` must name a command",
        ),
        (
            r#"[{"id": "A1", "argv": ["x"], "shell": true}]"#,
            "unknown field `shell`",
        ),
    ] {
        r.write("facts.json", text);
        let err = r.fails(
            2,
            &[
                "transition",
                "set-acceptance",
                "--bead",
                &id,
                "--facts",
                "facts.json",
            ],
        );
        assert!(
            err.contains("facts.json") && err.contains(says),
            "{text}: {err}"
        );
    }
    r.fails(
        2,
        &[
            "transition",
            "set-acceptance",
            "--bead",
            &id,
            "--facts",
            "missing.json",
        ],
    );
    assert_eq!(r.beads_bytes(), before);
    assert_eq!(r.journal(), journal);
    // A dispatched session may not set what its own work is checked against.
    r.write("facts.json", r#"[{"id": "A1", "argv": ["true"]}]"#);
    let out = r
        .cmd(&[
            "transition",
            "set-acceptance",
            "--bead",
            &id,
            "--facts",
            "facts.json",
        ])
        .env("SPLICE_DISPATCHED", "1")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(r.beads_bytes(), before);
    // --clear empties them.
    r.ok(&[
        "transition",
        "set-acceptance",
        "--bead",
        &id,
        "--facts",
        "facts.json",
    ]);
    assert_eq!(r.bead(&id)["pipeline"]["acceptance"][0]["id"], "A1");
    r.ok(&["transition", "set-acceptance", "--bead", &id, "--clear"]);
    assert!(
        r.bead(&id)["pipeline"]
            .get("acceptance")
            .is_none_or(|a| a == &json!([]))
    );
}

#[test]
fn a_high_lint_finding_blocks_success_and_its_fix_closes_the_node() {
    let r = Repo::new();
    // The agent writes a SARIF log: an error-level finding on iteration 1, a note on 2.
    argv_step(
        &r,
        "results a=ok; if [ $n -eq 1 ]; then level=error; else level=note; fi; \
         printf '{\"version\":\"2.1.0\",\"runs\":[{\"tool\":{\"driver\":{\"name\":\"lint\"}},\"results\":[{\"ruleId\":\"R1\",\"level\":\"%s\",\"message\":{\"text\":\"unused\"}}]}]}' $level > lint.sarif; \
         commit",
        json!({ "stages": [
            { "kind": "tests", "argv": ["cat", "results"] },
            { "kind": "sarif", "as": "lint", "file": "lint.sarif" }
        ] }),
    );
    let id = r.task("Loop", &[]);
    run(&r, &[]);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{}", dump(&r, &id));
    let t = trajectory(&b);
    assert_eq!(t.len(), 2, "{t:#?}");
    assert_eq!(t[0]["state"]["lint"]["high"], 1);
    assert_eq!(t[0]["score"], 7, "10 for the test, -3 for the high finding");
    assert_eq!(t[0]["context"]["findings"][0]["rule"], "R1");
    assert_eq!(t[1]["state"]["lint"]["low"], 1);
    assert_eq!(t[1]["monitor"]["decision"], "success");
}
