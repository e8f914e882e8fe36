//! A dispatch's final response, for result branches (`on_result`), the first there is of:
//!
//! 1. the agent's own final answer in the dispatch log: Claude Code's stream-json `result`
//!    event's `result`, else Codex's last `agent_message` item's `text`, else Gemini's JSON
//!    `response` (the formats: [`super::usage`]'s adapter modules);
//! 2. the JSON file the agent may write at `SPLICE_RESULT_FILE` (`{"response": "…",
//!    "confidence": 0.8}`);
//! 3. the last non-empty line the command printed, unless the log is one of those agents'
//!    transcripts (a failed session ends with an event or a brace, not an answer).
//!
//! Bounded to [`RESPONSE_CAP`] bytes; the store redacts it with the rest of the bead when it is
//! recorded.

use std::path::Path;

use serde_json::Value;

use crate::model::bead::StepResponse;

use super::agent_file;
use super::usage::{claude, codex, gemini};

/// The most of a response splice keeps on a node.
pub const RESPONSE_CAP: usize = 8 * 1024;

/// The response of the dispatch whose log is `log` and whose result file is `result_file`.
pub fn read(log: &Path, result_file: &Path) -> Option<StepResponse> {
    let text = agent_file::read(log, agent_file::LOG)
        .ok()
        .flatten()
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let transcript = text.as_deref().and_then(agents_answer);
    let found = transcript
        .clone()
        .flatten()
        .map(|t| StepResponse {
            text: t,
            confidence: None,
        })
        .or_else(|| from_file(result_file))
        .or_else(|| {
            let plain = text.as_deref().filter(|_| transcript.is_none())?;
            last_line(plain).map(|t| StepResponse {
                text: t,
                confidence: None,
            })
        })?;
    Some(StepResponse {
        text: bounded(found.text.trim()),
        ..found
    })
}

/// An agent's final answer in its log: `Some(None)` when the log is a Claude Code, Codex or
/// Gemini transcript without one, `None` when it is none of theirs.
fn agents_answer(text: &str) -> Option<Option<String>> {
    [claude::response, codex::response, gemini::response]
        .iter()
        .filter_map(|read| read(text))
        .reduce(|first, next| first.or(next))
}

/// The agent's result file, when it holds a `response` string.
fn from_file(path: &Path) -> Option<StepResponse> {
    let v: Value =
        serde_json::from_slice(&agent_file::read(path, agent_file::SMALL).ok()??).ok()?;
    Some(StepResponse {
        text: v.get("response")?.as_str()?.to_string(),
        confidence: v.get("confidence").and_then(Value::as_f64),
    })
}

/// The `confidence` of the agent's result file, whether or not it holds a `response` (a loop
/// step's monitor reads it: `{"confidence": 0.4}` alone counts).
pub fn confidence_in(result_file: &Path) -> Option<f64> {
    let v: Value =
        serde_json::from_slice(&agent_file::read(result_file, agent_file::SMALL).ok()??).ok()?;
    v.get("confidence").and_then(Value::as_f64)
}

/// The last non-empty line, splice's own notes in the log aside.
fn last_line(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("[splice:"))
        .map(String::from)
}

/// `text` cut to [`RESPONSE_CAP`] bytes at a character boundary.
fn bounded(text: &str) -> String {
    if text.len() <= RESPONSE_CAP {
        return text.to_string();
    }
    let mut end = RESPONSE_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_json_result_then_the_file_then_the_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let (log, file) = (dir.path().join("log"), dir.path().join("result.json"));
        std::fs::write(&log, "hello\nPLANNING\n\n[splice: exited 0]\n").unwrap();
        assert_eq!(read(&log, &file).unwrap().text, "PLANNING");
        std::fs::write(&file, r#"{"response": " DEBUGGING ", "confidence": 0.5}"#).unwrap();
        let r = read(&log, &file).unwrap();
        assert_eq!((r.text.as_str(), r.confidence), ("DEBUGGING", Some(0.5)));
        std::fs::write(
            &log,
            "{\"type\":\"system\"}\n{\"type\":\"result\",\"result\":\"compound\"}\n",
        )
        .unwrap();
        assert_eq!(read(&log, &file).unwrap().text, "compound");
        std::fs::write(
            &log,
            "{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"codex says\"}}\n",
        )
        .unwrap();
        assert_eq!(read(&log, &file).unwrap().text, "codex says");
        std::fs::write(&log, "noise\n{\n  \"response\": \"gemini says\"\n}\n").unwrap();
        assert_eq!(read(&log, &file).unwrap().text, "gemini says");
        // A failed transcript has no answer: the result file, else nothing (not its last brace).
        std::fs::write(&log, "{\n  \"error\": {\"message\": \"quota\"}\n}\n").unwrap();
        assert_eq!(read(&log, &file).unwrap().text, "DEBUGGING");
        std::fs::write(&log, "{\"type\":\"turn.failed\",\"error\":{}}\n").unwrap();
        std::fs::remove_file(&file).unwrap();
        assert!(read(&log, &file).is_none());
        std::fs::write(&log, "x".repeat(RESPONSE_CAP + 10)).unwrap();
        assert_eq!(read(&log, &file).unwrap().text.len(), RESPONSE_CAP);
    }
}
