//! What an agent CLI reported about how its session ended (issue 32): a session that did
//! nothing gets a reason a person can act on, and the end is classified so that a transient
//! failure of the API does not burn an attempt and a missing login parks the node at once.
//!
//! Read from the dispatch log, the agents' own events:
//!
//! | agent | event read | what it says |
//! |---|---|---|
//! | Claude Code | the `result` event: `is_error`, `result`, `subtype`, `permission_denials` | an error result's text; the tool calls its permission mode refused |
//! | Codex CLI | `error` (`message`) and `turn.failed` (`error.message`) events | the error |
//! | Gemini CLI | the JSON object's `error.message` | the error |
//! | any | the last line it printed | when none of those is there |
//!
//! [`classify`] sorts the words: [`End::Unauthorized`] (not logged in, an invalid or missing
//! API key, 401/403), [`End::Transient`] (overloaded, 529, rate limited, 429, 5xx, the network
//! unreachable, a stream cut off), else [`End::Reported`] when the agent said something, else
//! [`End::Silent`]. The patterns are in [`UNAUTHORIZED`] and [`TRANSIENT`].

use serde_json::Value;

use crate::model::bead::ExitKind;

mod retry_after;

pub use retry_after::retry_after_s;

/// How a session ended, by what its agent reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// Nothing to go on.
    Silent,
    /// The agent said why (an error, denied tool calls): the words.
    Reported(String),
    /// The API was unavailable for a while: retry later, counting no attempt.
    Transient(String),
    /// It cannot authenticate: a person must log in or set a key.
    Unauthorized(String),
}

/// Words that mean the agent cannot authenticate (case-insensitive).
pub const UNAUTHORIZED: &[&str] = &[
    "not logged in",
    "please run /login",
    "invalid api key",
    "invalid x-api-key",
    "authentication_error",
    "authentication failed",
    "unauthorized",
    "forbidden",
    "missing api key",
    "no api key",
    "api key not found",
    "openai_api_key",
    "incorrect api key",
];

/// HTTP statuses that mean the agent cannot authenticate, as a number on its own.
pub const UNAUTHORIZED_STATUS: &[&str] = &["401", "403"];

/// Words that mean the API was unavailable for a while (case-insensitive).
pub const TRANSIENT: &[&str] = &[
    "overloaded",
    "rate limit",
    "rate_limit",
    "too many requests",
    "service unavailable",
    "bad gateway",
    "gateway timeout",
    "econnrefused",
    "econnreset",
    "enotfound",
    "etimedout",
    "connection error",
    "connection refused",
    "connection failed",
    "request timed out",
    "error sending request",
    "network is unreachable",
    "stream disconnected",
    "exceeded retry limit",
    "reconnecting",
];

/// HTTP statuses that mean the API was unavailable for a while, as a number on its own.
pub const TRANSIENT_STATUS: &[&str] = &["429", "500", "502", "503", "504", "529"];

/// The most of a reason kept, in bytes.
const CAP: usize = 400;

/// How the session whose log text is `log` ended, by what its agent reported.
pub fn classify(log: &str) -> End {
    let Some(said) = reported(log) else {
        return End::Silent;
    };
    let lower = said.to_lowercase();
    let says = |words: &[&str], statuses: &[&str]| {
        words.iter().any(|w| lower.contains(w)) || statuses.iter().any(|s| number(&lower, s))
    };
    if says(UNAUTHORIZED, UNAUTHORIZED_STATUS) {
        End::Unauthorized(said)
    } else if says(TRANSIENT, TRANSIENT_STATUS) {
        End::Transient(said)
    } else {
        End::Reported(said)
    }
}

/// The exit a dispatch that ended `exit` (with `cause`) is recorded as, by what its agent
/// reported in `log`: an exit or a failure becomes [`ExitKind::Transient`] or
/// [`ExitKind::Unauthorized`] when the agent says so, and takes the agent's words as its cause
/// when it said anything; other ends (a timeout, a signal, the runner's cancel) are kept.
pub fn settle(exit: ExitKind, cause: Option<String>, log: &str) -> (ExitKind, Option<String>) {
    // A session that stalled while its agent retried an unreachable API is a transient end.
    if exit == ExitKind::Stalled {
        return match classify(log).or_last_line(log) {
            End::Transient(said) => (
                ExitKind::Transient,
                Some(format!("{}; {said}", cause.unwrap_or_default())),
            ),
            _ => (exit, cause),
        };
    }
    if !matches!(exit, ExitKind::Ok | ExitKind::Failed) {
        return (exit, cause);
    }
    match classify(log) {
        End::Unauthorized(said) => (ExitKind::Unauthorized, Some(said)),
        End::Transient(said) => (ExitKind::Transient, Some(said)),
        End::Reported(said) => (exit, Some(said)),
        End::Silent => (exit, cause),
    }
}

impl End {
    /// A silent end judged by the last line its command printed instead (a CLI that prints
    /// `Reconnecting… 3/5` on stderr while it retries, no event).
    fn or_last_line(self, log: &str) -> End {
        if self != End::Silent {
            return self;
        }
        // Not a JSON event (an agent's `init` holds paths and ids whose digits mean nothing).
        let Some(line) = log
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("[splice:") && !l.starts_with('{'))
        else {
            return End::Silent;
        };
        let lower = line.to_lowercase();
        let line = super::prompt::truncate(line, CAP).into_owned();
        if TRANSIENT.iter().any(|w| lower.contains(w))
            || TRANSIENT_STATUS.iter().any(|s| number(&lower, s))
        {
            End::Transient(format!("last output: {line}"))
        } else {
            End::Reported(format!("last output: {line}"))
        }
    }
}

/// Is `n` in `text` as a number on its own (not part of a longer one)?
fn number(text: &str, n: &str) -> bool {
    text.match_indices(n).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + n.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit()) && !after.is_some_and(|c| c.is_ascii_digit())
    })
}

/// What the agent reported about its end, in a line: Claude Code's error result and denied
/// tool calls, Codex's error, Gemini's error, else nothing (the caller has the last line).
pub fn reported(log: &str) -> Option<String> {
    let events: Vec<Value> = log
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let said = claude(&events)
        .or_else(|| codex(&events))
        .or_else(|| super::usage::gemini::error(log).map(|e| format!("the agent reported: {e}")))?;
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(super::prompt::truncate(&said, CAP).into_owned())
}

/// Claude Code's `result` event: its error, and the tool calls its permission mode denied.
fn claude(events: &[Value]) -> Option<String> {
    let result = events
        .iter()
        .rev()
        .find(|e| e.get("type").and_then(Value::as_str) == Some("result"))?;
    let mut parts = Vec::new();
    let text = result.get("result").and_then(Value::as_str).unwrap_or("");
    let subtype = result.get("subtype").and_then(Value::as_str).unwrap_or("");
    if result.get("is_error").and_then(Value::as_bool) == Some(true) {
        let what = if text.is_empty() { subtype } else { text };
        parts.push(format!("the agent ended with an error: {what}"));
    } else if subtype.starts_with("error") {
        parts.push(format!("the agent ended with {subtype}"));
    }
    let denied: Vec<String> = result
        .get("permission_denials")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(denial)
        .collect();
    if !denied.is_empty() {
        parts.push(format!(
            "{} tool call(s) were denied permission ({}): its permission mode or splice's guard \
             refused them — with `[agent] kind = \"claude\"` in splice's sandbox the mode allows \
             every tool and the guard denies only what touches splice's state or the main \
             checkout; else allow them in `[agent] command` (docs/agents.md)",
            denied.len(),
            denied.join("; ")
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// A denied tool call, as `Write specs/a.md` or `Bash: git commit -m x`.
fn denial(d: &Value) -> String {
    let tool = d
        .get("tool_name")
        .and_then(Value::as_str)
        .unwrap_or("a tool");
    let input = d.get("tool_input");
    let on = ["file_path", "command", "path", "notebook_path"]
        .iter()
        .find_map(|k| input?.get(k).and_then(Value::as_str));
    match (tool, on) {
        ("Bash", Some(c)) => format!("Bash: {}", super::prompt::truncate(c, 80)),
        (_, Some(p)) => format!("{tool} {}", super::prompt::truncate(p, 80)),
        _ => tool.to_string(),
    }
}

/// Codex's last `error` or `turn.failed` event.
fn codex(events: &[Value]) -> Option<String> {
    events.iter().rev().find_map(|e| {
        let message = match e.get("type").and_then(Value::as_str)? {
            "error" => e.get("message").and_then(Value::as_str),
            "turn.failed" => e.pointer("/error/message").and_then(Value::as_str),
            _ => None,
        }?;
        Some(format!("the agent reported: {message}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claudes_denials_and_error_results_are_the_reason() {
        let log = r#"{"type":"system","subtype":"init"}
{"type":"result","subtype":"success","is_error":false,"result":"I could not write the file.","permission_denials":[{"tool_name":"Write","tool_use_id":"t1","tool_input":{"file_path":"/w/specs/sp-1.md","content":"x"}},{"tool_name":"Bash","tool_use_id":"t2","tool_input":{"command":"git commit -m spec"}}]}"#;
        let End::Reported(said) = classify(log) else {
            panic!("{:?}", classify(log));
        };
        assert!(said.contains("2 tool call(s) were denied"), "{said}");
        assert!(
            said.contains("Write /w/specs/sp-1.md; Bash: git commit -m spec"),
            "{said}"
        );
        let log = r#"{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}"#;
        assert!(matches!(classify(log), End::Unauthorized(s) if s.contains("Not logged in")));
        let log = r#"{"type":"result","subtype":"success","is_error":true,"result":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}"#;
        assert!(matches!(classify(log), End::Transient(_)));
        let log = r#"{"type":"result","subtype":"error_max_turns","is_error":false}"#;
        assert_eq!(
            classify(log),
            End::Reported("the agent ended with error_max_turns".into())
        );
    }

    #[test]
    fn codex_and_gemini_errors_are_read() {
        let log = "{\"type\":\"thread.started\"}\n{\"type\":\"turn.failed\",\"error\":{\"message\":\"exceeded retry limit, last status: 429 Too Many Requests\"}}\n";
        assert!(matches!(classify(log), End::Transient(s) if s.contains("429")));
        let log = "{\"type\":\"error\",\"message\":\"Missing environment variable: `OPENAI_API_KEY`.\"}\n";
        assert!(matches!(classify(log), End::Unauthorized(_)));
        let log = "{\n  \"error\": {\"type\": \"ApiError\", \"message\": \"quota\"}\n}\n";
        assert_eq!(
            classify(log),
            End::Reported("the agent reported: quota".into())
        );
    }

    #[test]
    fn a_status_counts_only_as_a_number_on_its_own() {
        let error = |t: &str| format!(r#"{{"type":"result","is_error":true,"result":"{t}"}}"#);
        assert!(matches!(
            classify(&error("used 15290 tokens")),
            End::Reported(_)
        ));
        assert!(matches!(
            classify(&error("HTTP 503 from upstream")),
            End::Transient(_)
        ));
        assert!(matches!(
            classify(&error("status 401")),
            End::Unauthorized(_)
        ));
    }

    #[test]
    fn a_session_that_reports_nothing_is_silent() {
        assert_eq!(classify("plain output\nall done\n"), End::Silent);
        let ok = r#"{"type":"result","subtype":"success","is_error":false,"result":"done"}"#;
        assert_eq!(classify(ok), End::Silent);
    }
}
