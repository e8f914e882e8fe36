//! A dispatch's final response, for result branches (`on_result`): Claude Code's stream-json
//! `result` event's `result` field in the dispatch log; else the JSON file the agent may write
//! at `SPLICE_RESULT_FILE` (`{"response": "…", "confidence": 0.8}`); else the last non-empty line
//! the command printed. Bounded to [`RESPONSE_CAP`] bytes; the store redacts it with the rest of
//! the bead when it is recorded.

use std::path::Path;

use serde_json::Value;

use crate::model::bead::StepResponse;

/// The most of a response splice keeps on a node.
pub const RESPONSE_CAP: usize = 8 * 1024;

/// The response of the dispatch whose log is `log` and whose result file is `result_file`.
pub fn read(log: &Path, result_file: &Path) -> Option<StepResponse> {
    let text = std::fs::read(log)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let found = text
        .as_deref()
        .and_then(from_stream_json)
        .map(|t| StepResponse {
            text: t,
            confidence: None,
        })
        .or_else(|| from_file(result_file))
        .or_else(|| {
            text.as_deref().and_then(last_line).map(|t| StepResponse {
                text: t,
                confidence: None,
            })
        })?;
    Some(StepResponse {
        text: bounded(found.text.trim()),
        ..found
    })
}

/// The last stream-json `result` event's `result` text.
fn from_stream_json(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .map(str::trim)
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e.get("type").and_then(Value::as_str) == Some("result"))
        .and_then(|e| e.get("result").and_then(Value::as_str).map(String::from))
}

/// The agent's result file, when it holds a `response` string.
fn from_file(path: &Path) -> Option<StepResponse> {
    let v: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    Some(StepResponse {
        text: v.get("response")?.as_str()?.to_string(),
        confidence: v.get("confidence").and_then(Value::as_f64),
    })
}

/// The `confidence` of the agent's result file, whether or not it holds a `response` (a loop
/// step's monitor reads it: `{"confidence": 0.4}` alone counts).
pub fn confidence_in(result_file: &Path) -> Option<f64> {
    let v: Value = serde_json::from_slice(&std::fs::read(result_file).ok()?).ok()?;
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
        std::fs::write(&log, "x".repeat(RESPONSE_CAP + 10)).unwrap();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(read(&log, &file).unwrap().text.len(), RESPONSE_CAP);
    }
}
