//! Issue 14, "What the agent is doing": while a dispatch runs, the run's heartbeat (a `progress`
//! event every 10 s) says in words what its agent last did, read from the dispatch's log — for
//! Claude Code's stream-json, its tool calls and text, never the raw JSON.

mod common;

use common::Repo;
use serde_json::Value;

/// An agent that prints Claude Code stream-json as `claude -p --output-format stream-json
/// --verbose` does (the session, a line of text, an edit), then works on for longer than one
/// heartbeat.
const AGENT: &str = r#"cat <<'EOF'
{"type":"system","subtype":"init","cwd":".","session_id":"s-1","tools":["Edit"],"model":"claude-test","permissionMode":"default","uuid":"u-1"}
{"type":"assistant","message":{"id":"m-1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"I'll make the change."}]},"parent_tool_use_id":null,"session_id":"s-1"}
{"type":"assistant","message":{"id":"m-2","type":"message","role":"assistant","model":"claude-test","content":[{"type":"tool_use","id":"toolu_1","name":"Edit","input":{"file_path":"src/lib.rs","old_string":"a","new_string":"b"}}]},"parent_tool_use_id":null,"session_id":"s-1"}
EOF
sleep 12
"#;

#[test]
fn the_heartbeat_of_a_running_dispatch_says_what_its_agent_is_doing() {
    let r = Repo::new();
    r.task("Slow work", &[]);
    let bin = tempfile::tempdir().unwrap();
    let script = bin.path().join("agent.sh");
    std::fs::write(&script, AGENT).unwrap();
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"sh\", \"{}\"]\n\n[limits]\nbackoff_s = 0\n",
            script.display()
        ),
    );
    // Pass 1 checks the step (nothing there yet), pass 2 dispatches the agent.
    let out = r.run(&["run", "--output", "stream-json", "--max-passes", "2"]);
    common::no_panic(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let beats: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "progress")
        .collect();
    assert!(!beats.is_empty(), "no heartbeat in:\n{stdout}");
    let beat = &beats[0];
    assert_eq!(beat["doing"], "Edit src/lib.rs", "{beat}");
    assert!(beat["elapsed_s"].as_u64().unwrap() >= 10, "{beat}");
    assert_eq!(beat["schema_version"], 1);
    assert!(
        !stdout.contains("toolu_1"),
        "the agent's raw JSON never reaches the run's output"
    );
}
