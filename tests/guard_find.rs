//! `splice guard` on a removing `find` (`-delete`, `-exec rm …`) whose start path holds
//! splice's state — the repository's root, `..` from a subdirectory, the root named absolutely —
//! in a session that is not dispatched: denied, unless its expression provably selects nothing
//! in the state (a `-name` test, with no `-o`, `!` or `,`, that matches no name under
//! `.splice/` as it is). Through the built binary, against the state tree `init-task` writes.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use common::Repo;

/// A repository with a task, so `.splice/` holds what a live one holds, and a `src/` beside it.
fn repo() -> Repo {
    let r = Repo::new();
    r.task("Guarded", &[]);
    r.write("src/lib.rs", "// lib\n");
    r
}

/// `splice guard` on a Bash call of `command` run in `cwd`: the deny reason, or `None` (allowed).
fn guard(r: &Repo, cwd: &Path, command: &str) -> Option<String> {
    let input = serde_json::json!({
        "session_id": "s",
        "transcript_path": "/t",
        "cwd": cwd,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    });
    let mut child = r
        .cmd(&["guard"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("splice guard starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    common::no_panic(&out);
    assert_eq!(out.status.code(), Some(0), "{command}");
    assert!(
        out.stderr.is_empty(),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    if stdout.is_empty() {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    Some(
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

/// The names of everything under `.splice/`.
fn state_names(r: &Repo) -> Vec<String> {
    walkdir::WalkDir::new(r.state())
        .into_iter()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_removing_find_from_a_directory_holding_the_state_is_denied() {
    let r = repo();
    let root = r.path().canonicalize().unwrap();
    assert!(r.state().join("journal.jsonl").is_file(), "the fixture");
    let abs = format!("find {} -name \"*.jsonl\" -delete", root.display());
    let cases: [(&Path, &str); 7] = [
        (&root, "find . -delete"),
        (&root, "find . -type f -exec rm -f {} \\;"),
        (&root, "find . -name journal.jsonl -delete"),
        (&root, &abs),
        (&root, "find . -name '*.o' -o -name x -delete"),
        (&root.join("src"), "find .. -delete"),
        (&root, "find . -delete -name '*.o'"),
    ];
    for (cwd, command) in cases {
        let reason = guard(&r, cwd, command).unwrap_or_else(|| panic!("{command}: allowed"));
        assert!(
            reason.starts_with("splice guard: `find ")
                && reason.contains("would remove splice's state")
                && reason.contains("-name"),
            "{command}: {reason}"
        );
    }
}

#[test]
fn what_was_denied_before_still_is() {
    let r = repo();
    for command in [
        "find .splice -delete",
        "rm -rf .",
        "find . -type f | xargs rm",
    ] {
        assert!(guard(&r, r.path(), command).is_some(), "{command}: allowed");
    }
}

#[test]
fn the_reason_names_what_the_find_would_remove() {
    let r = repo();
    let reason = guard(&r, r.path(), "find . -name journal.jsonl -delete").unwrap();
    assert!(reason.contains("matches .splice/journal.jsonl"), "{reason}");
    let reason = guard(&r, r.path(), "find . -delete").unwrap();
    assert!(reason.contains("would remove"), "{reason}");
}

#[test]
fn a_removing_find_whose_name_test_matches_nothing_in_the_state_is_allowed() {
    let r = repo();
    let names = state_names(&r);
    assert!(names.len() > 3, "the state tree is there: {names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.ends_with(".o") || n.ends_with(".rs")),
        "{names:?}"
    );
    for command in [
        "find . -name '*.o' -delete",
        "find . -name '*.rs' -exec rm {} \\;",
        "find . -type f -name '*.rs' -exec rm -f {} +",
        "find src -delete",
    ] {
        assert_eq!(guard(&r, r.path(), command), None, "{command}");
    }
}
