//! Text read from files (a bead's fields, a bead file's name, a settings file) reaches a terminal
//! with its control characters escaped (`\u{1b}`, `\n`), on stdout and in an error on stderr
//! (`docs/cli.md`, "Output"). A bead imported from a bd export can hold anything.

mod common;

use std::process::Output;

use common::Repo;

/// A bead file's name (without `.json`) that drives the terminal and fakes a line.
const HOSTILE_NAME: &str = "a\u{1b}[31m\nfake";

/// `HOSTILE_NAME` as a person reads it: escaped.
const SHOWN_NAME: &str = "a\\u{1b}[31m\\nfake";

/// `text` holds no control character but line ends, and no line of it starts with `fake` (the
/// newline of a hostile text was escaped, not printed).
fn assert_escaped(text: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "a control character reached the terminal: {text:?}"
    );
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with("fake")),
        "a newline from a file made a line of its own: {text}"
    );
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A repository with one task and a bead file named [`HOSTILE_NAME`].
fn hostile_file_name() -> Repo {
    let r = Repo::new();
    r.task("Fine", &[]);
    let file = r.state().join("beads").join(format!("{HOSTILE_NAME}.json"));
    std::fs::write(file, "{}\n").unwrap();
    r
}

#[test]
fn an_error_names_a_hostile_bead_file_escaped_on_stderr() {
    let r = hostile_file_name();
    let out = r.run(&["export", "bd"]);
    common::no_panic(&out);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let text = stderr(&out);
    assert_escaped(&text);
    assert!(
        text.starts_with("splice: ") && text.contains(&format!("{SHOWN_NAME}.json: ")),
        "{text}"
    );
}

/// ESC and BEL that would retitle the terminal and clear it, then a newline and a line that
/// would pass for one of splice's own.
const HOSTILE: &str = "t \u{1b}]0;pwned\u{7}\u{1b}[2J\nfake";

/// A repository with the bd record `record` imported and started: a pipeline node.
fn started(record: serde_json::Value) -> Repo {
    let r = Repo::new();
    r.write("issues.jsonl", &format!("{record}\n"));
    r.ok(&["import", "bd", "issues.jsonl", "--json"]);
    r.ok(&["start", record["id"].as_str().unwrap()]);
    r
}

#[test]
fn status_escapes_a_titles_escape_sequences_and_newline() {
    let r = started(serde_json::json!({"id": "bd-1", "title": HOSTILE, "status": "open"}));
    let out = r.run(&["status", "--color", "never"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_escaped(&text);
    assert!(
        text.contains("bd-1 t \\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\nfake"),
        "{text}"
    );
}

#[test]
fn status_escapes_a_claims_holder_and_the_reason_built_from_it() {
    let r = started(serde_json::json!({"id": "bd-1", "title": "claimed", "status": "open"}));
    let mut bead = r.bead("bd-1");
    let since = "2025-12-31T23:00:00Z";
    bead["pipeline"]["lease"] = serde_json::json!({"holder": HOSTILE, "since": since});
    let text = serde_json::to_string_pretty(&bead).unwrap();
    std::fs::write(r.state().join("beads/bd-1.json"), text).unwrap();
    let out = r.run(&["status", "--color", "never"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_escaped(&text);
    assert!(text.contains("claimed by t \\u{1b}]0;pwned"), "{text}");
}

#[test]
fn status_names_a_hostile_bead_file_escaped() {
    let r = hostile_file_name();
    let out = r.run(&["status", "--color", "never"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_escaped(&text);
    assert!(
        text.lines()
            .any(|l| l.starts_with(&format!("{SHOWN_NAME}  (unreadable, escalated)"))),
        "{text}"
    );
}

#[test]
fn list_names_a_hostile_bead_file_escaped() {
    let r = hostile_file_name();
    let out = r.run(&["list"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_escaped(&text);
    assert!(
        text.lines()
            .any(|l| l.starts_with(&format!("{SHOWN_NAME}  unreadable: "))),
        "{text}"
    );
}

#[test]
fn doctor_names_a_hostile_bead_file_escaped() {
    let r = hostile_file_name();
    let out = r.run(&["doctor"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert_escaped(&text);
    let beads = text
        .lines()
        .find(|l| l.starts_with("needs-person beads: "))
        .unwrap_or_else(|| panic!("no beads finding: {text}"));
    assert!(beads.contains(&format!("{SHOWN_NAME}.json")), "{text}");
}

#[test]
fn hooks_status_quotes_the_settings_file_and_git_config_escaped() {
    let r = Repo::new();
    let settings = serde_json::json!({"hooks": {"PreToolUse": [{
        "matcher": HOSTILE,
        "hooks": [{"type": "command", "command": "/x\u{1b}[1m/splice guard"}]
    }]}});
    r.write(".claude/settings.json", &settings.to_string());
    r.git(&["config", "core.hooksPath", HOSTILE_NAME]);
    let out = r.run(&["hooks", "status"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_escaped(&text);
    assert!(
        text.contains("runs /x\\u{1b}[1m/splice") && text.contains(SHOWN_NAME),
        "{text}"
    );
}

/// bd keeps a dependency on an id no bead has, and so does an import: one whose id is made to
/// move the terminal is kept as written and shown escaped wherever it is named.
#[test]
fn a_dependency_on_a_hostile_id_is_kept_and_shown_escaped() {
    let record = serde_json::json!({"id": "bd-1", "title": "waits", "status": "open",
        "dependencies": [{"issue_id": "bd-1", "depends_on_id": HOSTILE, "type": "blocks"}]});
    let r = started(record);
    assert_eq!(r.bead("bd-1")["dependencies"][0]["depends_on_id"], HOSTILE);
    let out = r.run(&["import", "bd", "issues.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_escaped(&text);
    assert!(
        text.contains("kept its blocks dependency on \"t \\u{1b}]0;pwned"),
        "{text}"
    );
    for args in [
        &["status", "--color", "never"][..],
        &["show", "bd-1"][..],
        &["export", "bd"][..],
    ] {
        let out = r.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let text = stdout(&out);
        assert_escaped(&text);
        if args[0] == "status" {
            assert!(text.contains("waits for t \\u{1b}]0;pwned"), "{text}");
            assert!(text.contains("not in the store"), "{text}");
        }
    }
}
