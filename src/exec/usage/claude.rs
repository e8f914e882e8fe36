//! Claude Code's stream-json (`claude -p --output-format stream-json --verbose`): one JSON event a
//! line. What splice reads:
//!
//! | event | fields |
//! |---|---|
//! | `{"type":"system","subtype":"init"}` | `model` |
//! | `{"type":"result"}` (the last one) | `usage.input_tokens`, `usage.output_tokens`, `usage.cache_read_input_tokens`, `usage.cache_creation_input_tokens`, `total_cost_usd`, `duration_ms`, `modelUsage.<model>.outputTokens` (the model when no init event names it), `result` (the response) |
//!
//! Claude Code reports no reasoning tokens apart from its output.

use serde_json::Value;

use super::{CostSource, Usage, json_lines};

/// The usage of the last `result` event, with the model of the `system` init event.
pub fn usage(text: &str) -> Option<Usage> {
    let mut model: Option<String> = None;
    let mut result: Option<Value> = None;
    for event in json_lines(text) {
        match event.get("type").and_then(Value::as_str) {
            Some("system") if model.is_none() => {
                model = event.get("model").and_then(Value::as_str).map(String::from);
            }
            Some("result") => result = Some(event),
            _ => {}
        }
    }
    let result = result?;
    let u = result.get("usage");
    let count = |key: &str| {
        u.and_then(|u| u.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let cost = result.get("total_cost_usd").and_then(Value::as_f64);
    Some(Usage {
        input_tokens: count("input_tokens"),
        output_tokens: count("output_tokens"),
        cache_read_tokens: count("cache_read_input_tokens"),
        cache_write_tokens: count("cache_creation_input_tokens"),
        reasoning_tokens: 0,
        latency_ms: result
            .get("duration_ms")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        cost_usd: cost,
        cost_source: if cost.is_some() {
            CostSource::Provider
        } else {
            CostSource::Unknown
        },
        known_cost_usd: None,
        model: model.or_else(|| main_model(result.get("modelUsage"))),
    })
}

/// The last `result` event's `result` text: `Some(None)` when the log holds a result event
/// without one (a failed session), `None` when it holds no result event.
pub fn response(text: &str) -> Option<Option<String>> {
    let event = text
        .lines()
        .rev()
        .map(str::trim)
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e.get("type").and_then(Value::as_str) == Some("result"))?;
    // An error result ("Not logged in", "API Error: 529") is no answer.
    if event.get("is_error").and_then(Value::as_bool) == Some(true) {
        return Some(None);
    }
    Some(
        event
            .get("result")
            .and_then(Value::as_str)
            .map(String::from),
    )
}

/// The model that produced the most output in a `modelUsage` map (ties: the first by name).
fn main_model(model_usage: Option<&Value>) -> Option<String> {
    let map = model_usage?.as_object()?;
    let output = |v: &Value| v.get("outputTokens").and_then(Value::as_u64).unwrap_or(0);
    super::most_output(map.iter().map(|(name, v)| (name.as_str(), output(v))))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = r#"{"type":"system","subtype":"init","model":"claude-sonnet-4-5-20250929","session_id":"s"}
{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}
not json at all
{"type":"result","subtype":"success","is_error":false,"duration_ms":5123,"num_turns":3,"total_cost_usd":0.0421,"usage":{"input_tokens":120,"output_tokens":450,"cache_read_input_tokens":9000,"cache_creation_input_tokens":300}}
"#;

    #[test]
    fn reads_the_result_event() {
        let u = usage(STREAM).unwrap();
        assert_eq!(u.input_tokens, 120);
        assert_eq!(u.output_tokens, 450);
        assert_eq!(u.cache_read_tokens, 9000);
        assert_eq!(u.cache_write_tokens, 300);
        assert_eq!(u.latency_ms, 5123);
        assert_eq!(u.cost_usd, Some(0.0421));
        assert_eq!(u.cost_source, CostSource::Provider);
        assert_eq!(u.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    }

    #[test]
    fn no_result_event_means_no_usage() {
        assert!(usage("{\"type\":\"system\"}\nplain\n").is_none());
        assert_eq!(response("{\"type\":\"system\"}\nplain\n"), None);
    }

    #[test]
    fn model_from_model_usage() {
        let text = r#"{"type":"result","usage":{"input_tokens":1},"modelUsage":{"claude-haiku-4-5":{"outputTokens":10},"claude-opus-4-1":{"outputTokens":900}}}"#;
        let u = usage(text).unwrap();
        assert_eq!(u.model.as_deref(), Some("claude-opus-4-1"));
        assert_eq!(u.cost_usd, None);
    }

    #[test]
    fn a_failed_session_has_a_result_event_but_no_response() {
        let text = r#"{"type":"result","subtype":"error_max_turns","is_error":true,"usage":{"input_tokens":5}}"#;
        assert_eq!(response(text), Some(None));
        assert_eq!(usage(text).unwrap().input_tokens, 5);
    }
}
