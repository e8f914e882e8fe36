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
fn a_retry_after_a_transient_end_keeps_the_first_sessions_log() {
    let script = format!(
        "if [ ! -f .overloaded-once ]; then touch .overloaded-once; echo 'first session'; \
         echo '{OVERLOADED}'; exit 1; fi; echo 'second session'; \
         splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact HEAD"
    );
    let (r, id) = repo(&script, 1);
    common::no_panic(&r.run(&["run", "--output", "json", "--max-passes", "8"]));
    let b = r.bead(&id);
    assert_eq!(exits(&b), ["transient", "ok"], "{b:#}");
    // Each exit names its own log, and each log holds its own session.
    let logs: Vec<String> = b["pipeline"]["exits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["log"].as_str().unwrap().to_string())
        .collect();
    assert!(logs[0].ends_with(&format!("{id}-work-1.log")), "{logs:?}");
    // Relative to the repository: the bead file is committed, and holds no machine's paths.
    assert!(
        logs.iter().all(|l| l.starts_with(".splice/runs/")),
        "{logs:?}"
    );
    assert!(logs[1].ends_with(&format!("{id}-work-1.1.log")), "{logs:?}");
    let text = |p: &str| std::fs::read_to_string(r.path().join(p)).unwrap();
    assert!(
        text(&logs[0]).contains("first session"),
        "{}",
        text(&logs[0])
    );
    assert!(!text(&logs[0]).contains("second session"));
    assert!(
        text(&logs[1]).contains("second session"),
        "{}",
        text(&logs[1])
    );
    // `splice logs` lists both, the retry named as one.
    let out = r.run(&["logs", &id, "--json"]);
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let retries: Vec<u64> = listing["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["retry"].as_u64().unwrap())
        .collect();
    assert_eq!(retries, [1, 0], "newest first: {listing:#}");
    let human = String::from_utf8_lossy(&r.run(&["logs", &id]).stdout).into_owned();
    assert!(human.contains("work attempt 1 retry 1,"), "{human}");
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

/// What the user pays is where they look (issue 32): `status` per node and in total (the known
/// part kept beside an unknown one), `show`, and the run's result event.
#[test]
fn status_show_and_the_run_say_the_tokens_and_cost() {
    // Two dispatches: the first's cost is known, the second's is not.
    let script = "if [ ! -f .first ]; then touch .first; \
        echo '{\"input_tokens\": 1000, \"output_tokens\": 200, \"cost_usd\": 0.42}' > \"$SPLICE_USAGE_FILE\"; exit 1; fi; \
        echo '{\"input_tokens\": 300, \"output_tokens\": 50}' > \"$SPLICE_USAGE_FILE\"; \
        splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact HEAD";
    let (r, id) = repo(script, 2);
    let out = r.run(&["run", "--output", "stream-json", "--max-passes", "8"]);
    common::no_panic(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "result")
        .expect("a result event");
    assert_eq!(result["tokens"], 1550, "{result}");
    assert_eq!(result["cost_usd"], Value::Null, "{result}");
    assert_eq!(result["known_cost_usd"], 0.42, "{result}");
    assert_eq!(result["cost"], "$0.4200 + unknown", "{result}");

    let status = r.run(&["status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("1550 tokens, $0.4200 + unknown"), "{text}");
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("used: 1550 tokens"),
        "{text}"
    );
    let json = r.ok(&["status", "--json"]);
    assert_eq!(json["usage"]["known_cost_usd"], 0.42, "{json:#}");
    let row = json["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id.as_str());
    assert_eq!(row.unwrap()["usage"]["input_tokens"], 1300, "{json:#}");
    let show = r.run(&["show", &id]);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("1550 tokens, $0.4200 + unknown"), "{text}");
}

fn repo_with(script: &str, max_attempts: u32, config: &str) -> (Repo, String) {
    let r = Repo::new();
    r.write(
        ".splice/manifest.json",
        &common::work_step_manifest(json!(["sh", "-c", script]), json!([]), 120, max_attempts),
    );
    r.write(".splice/config.toml", config);
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "state"]);
    let id = r.task("Work", &[]);
    (r, id)
}

/// A silent hang is stopped after `[limits] stall_s`, not the step's timeout (120 s here).
#[test]
fn a_silent_hang_is_stopped_as_stalled() {
    let (r, id) = repo_with("sleep 100", 1, "[limits]\nbackoff_s = 0\nstall_s = 3\n");
    let started = std::time::Instant::now();
    let out = r.run(&["run", "--output", "json", "--max-passes", "4"]);
    common::no_panic(&out);
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    let b = r.bead(&id);
    assert_eq!(exits(&b), ["stalled"], "{b:#}");
    let why = parked(&b);
    assert!(why.contains("stalled"), "{why}");
    assert!(why.contains("for 3s"), "{why}");
}

/// An agent that hangs retrying an API it cannot reach (Codex prints `Reconnecting…`) stalls
/// and is retried as a transient end, counting no attempt.
#[test]
fn a_stall_while_reconnecting_to_the_api_is_transient() {
    let script = "if [ ! -f .once ]; then touch .once; \
        echo 'stream error: Reconnecting... 2/5' >&2; sleep 100; fi; \
        splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact HEAD";
    let (r, id) = repo_with(script, 1, "[limits]\nbackoff_s = 0\nstall_s = 3\n");
    let out = r.run(&["run", "--output", "json", "--max-passes", "8"]);
    common::no_panic(&out);
    let b = r.bead(&id);
    assert_eq!(exits(&b), ["transient", "ok"], "{b:#}");
    assert_eq!(b["status"], "closed", "{b:#}");
    assert!(
        b["pipeline"]["exits"][0]["cause"]
            .as_str()
            .unwrap()
            .contains("Reconnecting"),
        "{b:#}"
    );
}

/// Claude Code's last event when its API was rate limited and said how long to wait.
const RATE_LIMITED: &str = r#"{"type":"result","subtype":"success","is_error":true,"num_turns":1,"result":"API Error: 429 rate_limit_error: Number of requests has exceeded your rate limit. Please retry after 90 seconds.","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}"#;

#[test]
fn a_rate_limits_retry_after_is_waited_for() {
    // splice's own backoff would wait 1 s; the API asked for 90.
    let (r, id) = repo_with(
        &format!("echo '{RATE_LIMITED}'; exit 1"),
        3,
        "[limits]\nbackoff_s = 1\n",
    );
    common::no_panic(&r.run(&["run", "--output", "json", "--max-passes", "1"]));
    let b = r.bead(&id);
    let exit = &b["pipeline"]["exits"][0];
    assert_eq!(exit["exit"], "transient", "{b:#}");
    assert_eq!(exit["retry_after_s"], 90, "{exit:#}");
    let ended = exit["at"].as_str().unwrap().to_string();
    // The next pass rests the node until 90 s after the end.
    let out = r.run(&["pass", "--dry-run", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let ended = chrono::DateTime::parse_from_rfc3339(&ended).unwrap();
    let until =
        (ended + chrono::TimeDelta::seconds(90)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert!(text.contains(&until), "the rest ends at {until}: {text}");
    assert!(text.contains("backoff"), "{text}");
}
