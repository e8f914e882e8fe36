//! How a session that ended without proposing is recorded (issue 32), from what its agent
//! reported (`exec::ended`): a transient API failure (Claude Code's `API Error: 529`) is retried
//! counting no attempt; a missing login parks the node at once, naming it; tool calls its
//! permission mode denied are the reason the node parks; an error result is no response.
//! The stand-in agents print Claude Code's stream-json `result` event as the real CLI does.

mod common;

use common::Repo;
use serde_json::{Value, json};

/// Claude Code's last event when its API answered 529 after its own retries.
const OVERLOADED: &str = r#"{"type":"result","subtype":"success","is_error":true,"duration_ms":1200,"num_turns":1,"result":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}"#;

/// Claude Code's last event with no login.
const NOT_LOGGED_IN: &str = r#"{"type":"result","subtype":"success","is_error":true,"duration_ms":40,"num_turns":1,"result":"Not logged in · Please run /login","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}"#;

/// Claude Code's last event when its permission mode refused its writes.
const DENIED: &str = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":4,"result":"I was not allowed to write the spec.","total_cost_usd":0.01,"usage":{"input_tokens":10,"output_tokens":20},"permission_denials":[{"tool_name":"Write","tool_use_id":"t1","tool_input":{"file_path":"specs/sp-1.md","content":"x"}},{"tool_name":"Bash","tool_use_id":"t2","tool_input":{"command":"splice transition propose --bead sp-1"}}]}"#;

fn repo(script: &str, max_attempts: u32) -> (Repo, String) {
    let r = Repo::new();
    r.write(
        ".splice/manifest.json",
        &common::work_step_manifest(json!(["sh", "-c", script]), json!([]), 60, max_attempts),
    );
    r.write(".splice/config.toml", "[limits]\nbackoff_s = 0\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "state"]);
    let id = r.task("Work", &[]);
    (r, id)
}

fn exits(b: &Value) -> Vec<String> {
    b["pipeline"]["exits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["exit"].as_str().unwrap().to_string())
        .collect()
}

fn parked(b: &Value) -> String {
    b["pipeline"]["dead_letter"]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn an_overloaded_api_then_success_counts_no_attempt() {
    // The first session meets the 529 (its marker, in the worktree, survives the retry).
    let script = format!(
        "if [ ! -f .overloaded-once ]; then touch .overloaded-once; echo '{OVERLOADED}'; exit 1; fi; \
         splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact HEAD"
    );
    let (r, id) = repo(&script, 1);
    let out = r.run(&["run", "--output", "json", "--max-passes", "8"]);
    common::no_panic(&out);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{b:#}");
    assert_eq!(exits(&b), ["transient", "ok"], "{b:#}");
    let first = &b["pipeline"]["exits"][0];
    assert!(
        first["cause"].as_str().unwrap().contains("529"),
        "{first:#}"
    );
    // One attempt allowed, and used once: the transient end gave its back.
    assert_eq!(b["pipeline"]["attempts"]["work"], 1, "{b:#}");
}

#[test]
fn an_agent_that_is_not_logged_in_parks_at_once_naming_it() {
    let script = format!("echo '{NOT_LOGGED_IN}'; exit 1");
    let (r, id) = repo(&script, 3);
    let out = r.run(&["run", "--output", "json", "--max-passes", "8"]);
    common::no_panic(&out);
    let b = r.bead(&id);
    assert_eq!(exits(&b), ["unauthorized"], "one dispatch only: {b:#}");
    let why = parked(&b);
    assert!(why.contains("Not logged in"), "{why}");
    assert!(why.contains("counted no attempt"), "{why}");
    // An error result is not the step's response.
    assert!(b["pipeline"]["responses"].get("work").is_none(), "{b:#}");
}

#[test]
fn denied_tool_calls_are_the_reason_a_session_did_nothing() {
    let script = format!("echo '{DENIED}'; exit 0");
    let (r, id) = repo(&script, 1);
    let out = r.run(&["run", "--output", "json", "--max-passes", "8"]);
    common::no_panic(&out);
    let b = r.bead(&id);
    let why = parked(&b);
    assert!(why.contains("exited 0 without proposing"), "{why}");
    assert!(
        why.contains("2 tool call(s) were denied permission"),
        "{why}"
    );
    assert!(why.contains("Write specs/sp-1.md"), "{why}");
}
