use std::io::Write;

use super::*;

/// An assistant event with these content items, as Claude Code prints it (one line).
fn assistant(items: &str) -> String {
    format!(
        r#"{{"type":"assistant","message":{{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{items}],"stop_reason":null,"usage":{{"input_tokens":3,"output_tokens":1}}}},"parent_tool_use_id":null,"session_id":"s-1","uuid":"u-1"}}"#
    )
}

fn tool(name: &str, input: &str) -> String {
    assistant(&format!(
        r#"{{"type":"tool_use","id":"toolu_01","name":"{name}","input":{input}}}"#
    ))
}

fn w(line: &str) -> Option<String> {
    words(line)
}

#[test]
fn the_session_start_names_its_model() {
    let init = r#"{"type":"system","subtype":"init","cwd":"/w","session_id":"s-1","tools":["Bash","Read"],"mcp_servers":[],"model":"claude-sonnet-4-5-20250929","permissionMode":"bypassPermissions","apiKeySource":"none","uuid":"u"}"#;
    assert_eq!(
        w(init).as_deref(),
        Some("session started (model claude-sonnet-4-5-20250929)")
    );
    // Other system events (hooks, compaction) say nothing.
    assert_eq!(w(r#"{"type":"system","subtype":"compact_boundary"}"#), None);
}

#[test]
fn assistant_text_is_its_first_line_bounded() {
    let line =
        assistant(r#"{"type":"text","text":"\n  I'll fix the parser first.\nThen the tests."}"#);
    assert_eq!(w(&line).as_deref(), Some("I'll fix the parser first."));
    let long = "word ".repeat(100);
    let line = assistant(&format!(r#"{{"type":"text","text":"{long}"}}"#));
    let said = w(&line).unwrap();
    assert_eq!(said.chars().count(), WORDS_CAP);
    assert!(said.ends_with('…'), "{said}");
    // Thinking is not shown; an empty text is nothing.
    assert_eq!(
        w(&assistant(r#"{"type":"thinking","thinking":"hmm"}"#)),
        None
    );
    assert_eq!(w(&assistant(r#"{"type":"text","text":"  "}"#)), None);
}

#[test]
fn a_tool_call_is_its_name_and_what_it_works_on() {
    let cases = [
        (tool("Read", r#"{"file_path":"src/a.rs"}"#), "Read src/a.rs"),
        (
            tool(
                "Edit",
                r#"{"file_path":"src/lib.rs","old_string":"a","new_string":"b"}"#,
            ),
            "Edit src/lib.rs",
        ),
        (
            tool(
                "Write",
                r#"{"file_path":"specs/sp-1.md","content":"Spec\n..."}"#,
            ),
            "Write specs/sp-1.md",
        ),
        (
            tool(
                "Bash",
                r#"{"command":"cargo test --lib\necho done","description":"Run the tests"}"#,
            ),
            "Bash: cargo test --lib",
        ),
        (
            tool(
                "Grep",
                r#"{"pattern":"fn words","path":"src","output_mode":"content"}"#,
            ),
            "Grep \"fn words\"",
        ),
        (tool("Glob", r#"{"pattern":"**/*.rs"}"#), "Glob \"**/*.rs\""),
        (
            tool(
                "Task",
                r#"{"description":"Find the callers","prompt":"…","subagent_type":"Explore"}"#,
            ),
            "Task: Find the callers",
        ),
        (
            tool(
                "TodoWrite",
                r#"{"todos":[{"content":"Write tests","status":"completed","activeForm":"Writing tests"},{"content":"Run tests","status":"in_progress","activeForm":"Running tests"}]}"#,
            ),
            "TodoWrite: Running tests",
        ),
        (tool("TodoWrite", r#"{"todos":[]}"#), "TodoWrite"),
        (
            tool("mcp__github__get_issue", r#"{"issue":14}"#),
            "mcp__github__get_issue",
        ),
        (tool("Read", "{}"), "Read"),
    ];
    for (line, want) in cases {
        assert_eq!(w(&line).as_deref(), Some(want), "{line}");
    }
}

#[test]
fn a_path_in_a_splice_worktree_is_shown_relative_to_it() {
    let line = tool(
        "Edit",
        r#"{"file_path":"/home/me/repo/.splice/worktrees/sp-1.2/src/lib.rs"}"#,
    );
    assert_eq!(w(&line).as_deref(), Some("Edit src/lib.rs"));
    let line = tool("Read", r#"{"file_path":"/etc/hosts"}"#);
    assert_eq!(w(&line).as_deref(), Some("Read /etc/hosts"));
}

#[test]
fn of_several_items_the_last_with_words_is_shown() {
    let line = assistant(
        r#"{"type":"text","text":"Let me look."},{"type":"tool_use","id":"t","name":"Read","input":{"file_path":"a.rs"}}"#,
    );
    assert_eq!(w(&line).as_deref(), Some("Read a.rs"));
}

#[test]
fn a_failed_tool_result_says_so_and_a_good_one_says_nothing() {
    let failed = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"<tool_use_error>File has not been read yet. Read it first.\nmore</tool_use_error>","is_error":true}]},"session_id":"s-1","uuid":"u"}"#;
    assert_eq!(
        w(failed).as_deref(),
        Some("(tool failed: <tool_use_error>File has not been read yet. Read it first.)")
    );
    let parts = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","is_error":true,"content":[{"type":"text","text":"Exit code 101\nerror[E0425]"}]}]}}"#;
    assert_eq!(w(parts).as_deref(), Some("(tool failed: Exit code 101)"));
    let ok = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"fn main() {}"}]},"tool_use_result":{"stdout":"x"}}"#;
    assert_eq!(w(ok), None);
}

#[test]
fn the_result_says_how_the_session_ended() {
    let ok = r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":5100,"num_turns":7,"result":"Done.","session_id":"s","total_cost_usd":0.01,"usage":{}}"#;
    assert_eq!(w(ok).as_deref(), Some("finished: success (7 turns)"));
    let max = r#"{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":10}"#;
    assert_eq!(
        w(max).as_deref(),
        Some("finished: error_max_turns (10 turns)")
    );
    let err = r#"{"type":"result","subtype":"success","is_error":true,"num_turns":1}"#;
    assert_eq!(w(err).as_deref(), Some("finished: error (1 turn)"));
}

#[test]
fn plain_output_is_itself_and_other_json_is_nothing() {
    assert_eq!(
        w("  compiling splice v0.1.0  \n").as_deref(),
        Some("compiling splice v0.1.0")
    );
    assert_eq!(w(""), None);
    assert_eq!(w("   "), None);
    // Colours and control characters never reach a terminal.
    assert_eq!(
        w("\u{1b}[31merror\u{1b}[0m: bad\u{7}\tthing").as_deref(),
        Some("error: bad thing")
    );
    assert_eq!(w("\u{1b}[2K"), None);
    // JSON splice does not know, or a line cut short, is nothing (never raw JSON).
    assert_eq!(w(r#"{"type":"stream_event","event":{}}"#), None);
    assert_eq!(w(r#"{"no_type":1}"#), None);
    assert_eq!(w(r#"{"type":"assistant","message":{"content":[{"ty"#), None);
    assert_eq!(w(r#"{"type":"assistant","message":"odd"}"#), None);
    assert_eq!(
        w(r#"{"type":"assistant","message":{"content":[{"type":"tool_use"}]}}"#),
        None
    );
}

fn append(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(bytes).unwrap();
}

#[test]
fn a_tail_returns_appended_lines_and_holds_back_a_partial_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    let mut tail = Tail::new(&log);
    assert!(tail.poll().is_empty(), "no file yet");
    append(&log, b"one\ntwo\r\nthr");
    assert_eq!(tail.poll(), vec!["one", "two"]);
    assert!(tail.poll().is_empty(), "nothing new");
    append(&log, b"ee\n");
    assert_eq!(tail.poll(), vec!["three"]);
    assert_eq!(tail.offset(), 15);
}

#[test]
fn a_tail_reads_a_truncated_or_replaced_file_from_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    append(&log, b"first attempt, a long line\n");
    let mut tail = Tail::new(&log);
    assert_eq!(tail.poll(), vec!["first attempt, a long line"]);
    std::fs::write(&log, b"again\n").unwrap();
    assert_eq!(tail.poll(), vec!["again"]);
    // Replaced by a new file longer than the old offset: the inode changed.
    let other = dir.path().join("b.log");
    std::fs::write(&other, b"a new file, longer than before\n").unwrap();
    std::fs::rename(&other, &log).unwrap();
    assert_eq!(tail.poll(), vec!["a new file, longer than before"]);
}

#[test]
fn a_tail_survives_invalid_utf8_and_bounds_its_reads() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    append(&log, b"ok \xff\xfe bytes\n");
    let mut tail = Tail::new(&log);
    let lines = tail.poll();
    assert_eq!(lines, vec!["ok \u{fffd}\u{fffd} bytes"]);
    assert_eq!(
        words(&lines[0]).as_deref(),
        Some("ok \u{fffd}\u{fffd} bytes")
    );
    // More than one poll's worth arrives over several polls, every line whole.
    let many: Vec<u8> = (0..40_000)
        .flat_map(|i| format!("{i:09}\n").into_bytes())
        .collect();
    append(&log, &many);
    let mut got = Vec::new();
    for _ in 0..10 {
        got.extend(tail.poll());
    }
    assert_eq!(got.len(), 40_000);
    assert_eq!(got.last().map(String::as_str), Some("000039999"));
    // A line too long to hold is skipped, the next one read.
    append(&log, &vec![b'x'; LINE_CAP + 10]);
    append(&log, b"\nafter\n");
    let mut got = Vec::new();
    for _ in 0..10 {
        got.extend(tail.poll());
    }
    let lens: Vec<usize> = got.iter().map(String::len).collect();
    assert_eq!(lens, vec![5], "only `after`");
}

#[test]
fn latest_is_the_newest_line_with_words() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    assert_eq!(latest(&log), None, "no log yet");
    append(&log, b"");
    assert_eq!(latest(&log), None, "an empty log");
    let ok = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}}"#;
    let text = format!(
        "{}\n{}\n{ok}\n{{\"type\":\"assistant\",\"mess",
        r#"{"type":"system","subtype":"init","model":"m"}"#,
        tool("Edit", r#"{"file_path":"src/lib.rs"}"#),
    );
    append(&log, text.as_bytes());
    assert_eq!(latest(&log).as_deref(), Some("Edit src/lib.rs"));
}

#[test]
fn latest_reads_only_the_end_of_a_long_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    // A line with words, then more than the window of lines without: nothing to say.
    let mut text = format!("{}\n", tool("Read", r#"{"file_path":"old.rs"}"#));
    let quiet = r#"{"type":"stream_event","event":{"type":"ping"}}"#;
    while text.len() < 2 * LATEST_WINDOW as usize {
        text.push_str(quiet);
        text.push('\n');
    }
    append(&log, text.as_bytes());
    assert_eq!(latest(&log), None);
    append(&log, b"plain words at the end\n");
    assert_eq!(latest(&log).as_deref(), Some("plain words at the end"));
}

#[test]
fn claude_retrying_its_api_says_so_with_the_count() {
    let line = r#"{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1200,"error_status":529,"error":"overloaded_error"}"#;
    assert_eq!(
        w(line).as_deref(),
        Some("retrying the API (2 of 10): 529 overloaded_error")
    );
    let bare = r#"{"type":"system","subtype":"api_retry"}"#;
    assert_eq!(w(bare).as_deref(), Some("retrying the API"));
}
