//! Codex CLI's `codex exec --json` events in words (the formats: [`crate::exec::usage::codex`]).
//!
//! | event | words |
//! |---|---|
//! | `thread.started` | `session started` |
//! | `item.started`, a `command_execution` | `run: cargo test` (a `bash -lc '…'` wrapper taken off) |
//! | `item.completed`, a `command_execution` that failed | `(command failed: exit 101)` |
//! | `item.completed`, an `agent_message` or `reasoning` | its first non-empty line (`**` marks taken off) |
//! | `item.completed`, a `file_change` | `edit notes/a.md, tests/a.feature` |
//! | `item.started`, an `mcp_tool_call` | `server.tool` |
//! | `item.completed`, a `web_search` | `search "query"` |
//! | a `todo_list` item | `todo: the first item not done` |
//! | `turn.completed` / `turn.failed` / `error` | `turn finished` / `turn failed: message` / `error: message` |

use serde_json::Value;

use super::{first_line, path, text_at};

/// A Codex event in words; `None` for events that say nothing (a command's completion, …) and
/// for JSON that is no Codex event.
pub(super) fn words(kind: &str, event: &Value) -> Option<String> {
    let message = |v: &Value| {
        text_at(v, "message")
            .and_then(first_line)
            .map(str::to_string)
    };
    match kind {
        "thread.started" => Some("session started".to_string()),
        "turn.completed" => Some("turn finished".to_string()),
        "turn.failed" => Some(match event.get("error").and_then(message) {
            Some(m) => format!("turn failed: {m}"),
            None => "turn failed".to_string(),
        }),
        "error" => message(event).map(|m| format!("error: {m}")),
        "item.started" | "item.updated" | "item.completed" => {
            item(kind == "item.completed", event.get("item")?)
        }
        _ => None,
    }
}

fn item(completed: bool, item: &Value) -> Option<String> {
    match (text_at(item, "type")?, completed) {
        ("command_execution", false) => {
            Some(format!("run: {}", unwrap_shell(text_at(item, "command")?)))
        }
        ("command_execution", true) => (text_at(item, "status") == Some("failed")).then(|| {
            match item.get("exit_code").and_then(Value::as_i64) {
                Some(code) => format!("(command failed: exit {code})"),
                None => "(command failed)".to_string(),
            }
        }),
        ("agent_message" | "reasoning", true) => {
            first_line(text_at(item, "text")?).map(|l| l.replace("**", ""))
        }
        ("file_change", true) => {
            let paths: Vec<&str> = item
                .get("changes")?
                .as_array()?
                .iter()
                .filter_map(|c| text_at(c, "path").map(path))
                .collect();
            (!paths.is_empty()).then(|| format!("edit {}", paths.join(", ")))
        }
        ("mcp_tool_call", false) => Some(format!(
            "{}.{}",
            text_at(item, "server")?,
            text_at(item, "tool")?
        )),
        ("web_search", true) => Some(format!("search \"{}\"", text_at(item, "query")?)),
        ("todo_list", _) => item
            .get("items")?
            .as_array()?
            .iter()
            .find(|t| t.get("completed").and_then(Value::as_bool) == Some(false))
            .and_then(|t| text_at(t, "text"))
            .and_then(first_line)
            .map(|t| format!("todo: {t}")),
        _ => None,
    }
}

/// `bash -lc 'cargo test'` → `cargo test`: the command Codex's shell runs.
fn unwrap_shell(command: &str) -> &str {
    ["bash -lc ", "bash -c ", "sh -c ", "zsh -lc "]
        .iter()
        .find_map(|p| command.strip_prefix(p))
        .map(|rest| {
            rest.strip_prefix('\'')
                .and_then(|r| r.strip_suffix('\''))
                .unwrap_or(rest)
        })
        .unwrap_or(command)
}

#[cfg(test)]
mod tests {
    use super::super::words as w;

    #[test]
    fn codex_events_in_words() {
        let cases = [
            (
                r#"{"type":"thread.started","thread_id":"t"}"#,
                Some("session started"),
            ),
            (r#"{"type":"turn.started"}"#, None),
            (
                r#"{"type":"item.started","item":{"id":"i","type":"command_execution","command":"bash -lc 'cargo test'","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
                Some("run: cargo test"),
            ),
            (
                r#"{"type":"item.completed","item":{"id":"i","type":"command_execution","command":"ls","aggregated_output":"a\n","exit_code":0,"status":"completed"}}"#,
                None,
            ),
            (
                r#"{"type":"item.completed","item":{"id":"i","type":"command_execution","command":"false","exit_code":101,"status":"failed"}}"#,
                Some("(command failed: exit 101)"),
            ),
            (
                r#"{"type":"item.completed","item":{"id":"i","type":"reasoning","text":"**Reading the spec**\n\nmore"}}"#,
                Some("Reading the spec"),
            ),
            (
                r#"{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"Done."}}"#,
                Some("Done."),
            ),
            (
                r#"{"type":"item.completed","item":{"id":"i","type":"file_change","changes":[{"path":"/r/.splice/worktrees/sp-1/notes/a.md","kind":"add"},{"path":"b.rs","kind":"update"}],"status":"completed"}}"#,
                Some("edit notes/a.md, b.rs"),
            ),
            (
                r#"{"type":"item.started","item":{"id":"i","type":"mcp_tool_call","server":"docs","tool":"search","status":"in_progress"}}"#,
                Some("docs.search"),
            ),
            (
                r#"{"type":"item.completed","item":{"id":"i","type":"web_search","query":"codex json"}}"#,
                Some("search \"codex json\""),
            ),
            (
                r#"{"type":"item.updated","item":{"id":"i","type":"todo_list","items":[{"text":"Spec","completed":true},{"text":"Tests","completed":false}]}}"#,
                Some("todo: Tests"),
            ),
            (
                r#"{"type":"turn.completed","usage":{"input_tokens":1}}"#,
                Some("turn finished"),
            ),
            (
                r#"{"type":"turn.failed","error":{"message":"rate limit"}}"#,
                Some("turn failed: rate limit"),
            ),
            (
                r#"{"type":"error","message":"Reconnecting... 1/5"}"#,
                Some("error: Reconnecting... 1/5"),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(w(line).as_deref(), want, "{line}");
        }
    }
}
