//! One bead file that cannot be read takes down no read: `status`, `snapshot`, `pass` and `run`
//! report it, rest it `escalated` with the reason, and go on with the others; writes to it fail
//! naming the file until it is repaired.

mod common;

use common::Repo;
use serde_json::Value;

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

/// Two tasks; the second one's file is broken. Returns (good, broken).
fn setup() -> (Repo, String, String) {
    let r = Repo::new();
    let good = r.task("Good", &[]);
    let broken = r.task("Broken", &[]);
    let path = r.state().join("beads").join(format!("{broken}.json"));
    std::fs::write(path, "{\"id\": ").unwrap();
    (r, good, broken)
}

fn row<'a>(status: &'a Value, id: &str) -> &'a Value {
    status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("no row for {id}: {status}"))
}

#[test]
fn status_shows_the_unreadable_bead_with_its_reason_and_goes_on() {
    let (r, good, broken) = setup();
    let status = r.ok(&["status", "--json"]);
    let bad = row(&status, &broken);
    assert_eq!(bad["rest"]["kind"], "escalated");
    let reason = bad["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!(".splice/beads/{broken}.json"))
            && reason.contains("not a valid bead"),
        "{reason}"
    );
    assert_eq!(row(&status, &good)["step"], "generate-spec");
    let out = r.run(&["status"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.contains(&broken)
            && l.contains("escalated")
            && l.contains("not a valid bead")),
        "{text}"
    );
}

#[test]
fn the_snapshot_says_which_files_could_not_be_read_and_why() {
    let (r, good, broken) = setup();
    let snap = r.ok(&["snapshot"]);
    let beads: Vec<&str> = snap["beads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(beads, [good.as_str()]);
    let unreadable = snap["unreadable"].as_array().expect("unreadable listed");
    assert_eq!(unreadable.len(), 1);
    assert_eq!(unreadable[0]["id"], broken.as_str());
    assert_eq!(
        unreadable[0]["file"],
        format!(".splice/beads/{broken}.json").as_str()
    );
    assert!(
        unreadable[0]["error"]
            .as_str()
            .unwrap()
            .contains("not a valid bead")
    );
}

#[test]
fn writes_to_it_fail_until_it_is_repaired_and_others_go_on() {
    let (r, good, broken) = setup();
    let err = r.fails(
        2,
        &["transition", "park", "--bead", &broken, "--reason", "r"],
    );
    assert!(err.contains(&format!("{broken}.json")), "{err}");
    r.ok(&["transition", "park", "--bead", &good, "--reason", "r"]);
}

#[test]
fn a_pass_and_a_run_go_on_past_it() {
    let (r, good, broken) = setup();
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"{SPLICE}\", \"sim-agent\"]\nusage = \"file\"\n\n[delivery]\n\
             method = \"direct\"\n"
        ),
    );
    for verb in ["pass", "run"] {
        let env = r.ok(&[verb, "--output", "json"]);
        assert_eq!(
            env["nodes"][&broken]["rest"]["kind"], "escalated",
            "{verb}: {env}"
        );
        assert!(env["nodes"][&good].is_object(), "{verb}: {env}");
    }
    // The good task went on: its spec was written and its gate waits for a person.
    assert_eq!(r.bead(&good)["pipeline"]["gate"]["state"], "pending");
}
