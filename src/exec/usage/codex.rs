//! Codex CLI's `codex exec --json`: one JSON event a line (`thread.started`, `turn.started`,
//! `item.started` / `item.updated` / `item.completed`, `turn.completed`, `turn.failed`, `error`).
//! What splice reads:
//!
//! | event | fields |
//! |---|---|
//! | `turn.completed` (the last one) | `usage.input_tokens`, `usage.cached_input_tokens`, `usage.cache_write_input_tokens`, `usage.output_tokens`, `usage.reasoning_output_tokens` (the last two where the version reports them) |
//! | `item.completed` whose `item.type` is `agent_message` (the last one) | `item.text`: the step's response |
//!
//! Codex counts the OpenAI way: `input_tokens` includes the cached (and cache-written) input, and
//! `output_tokens` includes the reasoning. splice's record keeps input apart from cache reads and
//! writes, so input is `input_tokens − cached_input_tokens − cache_write_input_tokens`; reasoning
//! stays a part of the output, as [`Usage::reasoning_tokens`] says.
//!
//! **The last `turn.completed`, not a sum.** Codex fills each `turn.completed` with the thread's
//! totals so far, not the turn's own, so summing the turns of one invocation would count the
//! first turn again in every later one. Limit: `codex exec resume` continues an earlier thread,
//! and its totals then include the earlier invocation's tokens too.
//!
//! The events name no model and no cost: the model is the step's configured one
//! ([`super::collect`]), the cost comes from `[prices.<model>]`. A failed run (`turn.failed`, or
//! an `error` event and no turn) has no usage; its latency is not recorded either.

use serde_json::Value;

use super::{CostSource, Usage, json_lines};

/// The usage of the last `turn.completed` event, if the log holds one.
pub fn usage(text: &str) -> Option<Usage> {
    let event = json_lines(text)
        .filter(|e| kind(e) == Some("turn.completed"))
        .last()?;
    let u = event.get("usage");
    let count = |key: &str| {
        u.and_then(|u| u.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let cached = count("cached_input_tokens");
    let cache_write = count("cache_write_input_tokens");
    let output = count("output_tokens");
    Some(Usage {
        input_tokens: count("input_tokens")
            .saturating_sub(cached)
            .saturating_sub(cache_write),
        output_tokens: output,
        cache_read_tokens: cached,
        cache_write_tokens: cache_write,
        // A part of the output: never more than it.
        reasoning_tokens: count("reasoning_output_tokens").min(output),
        latency_ms: 0,
        cost_usd: None,
        cost_source: CostSource::Unknown,
        known_cost_usd: None,
        model: None,
    })
}

/// The text of the last completed `agent_message` item: `Some(None)` when the log is a Codex
/// transcript without one (a failed run), `None` when it is no Codex transcript.
pub fn response(text: &str) -> Option<Option<String>> {
    let mut codex = false;
    let mut message = None;
    for event in json_lines(text) {
        let Some(kind) = kind(&event) else { continue };
        codex |= kind.starts_with("thread.") || kind.starts_with("turn.");
        if kind == "item.completed"
            && event.pointer("/item/type").and_then(Value::as_str) == Some("agent_message")
        {
            codex = true;
            message = event
                .pointer("/item/text")
                .and_then(Value::as_str)
                .map(String::from);
        }
    }
    codex.then_some(message)
}

fn kind(event: &Value) -> Option<&str> {
    event.get("type").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_TURNS: &str = r#"{"type":"thread.started","thread_id":"t-1"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"first"}}
{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":600,"output_tokens":50}}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"second"}}
{"type":"turn.completed","usage":{"input_tokens":2500,"cached_input_tokens":1800,"output_tokens":120,"reasoning_output_tokens":40}}
"#;

    #[test]
    fn the_last_turn_holds_the_totals() {
        let u = usage(TWO_TURNS).unwrap();
        assert_eq!(
            (u.input_tokens, u.cache_read_tokens, u.output_tokens),
            (700, 1800, 120)
        );
        assert_eq!(u.reasoning_tokens, 40);
        assert_eq!((u.model, u.cost_usd), (None, None));
        assert_eq!(response(TWO_TURNS), Some(Some("second".to_string())));
    }

    #[test]
    fn cache_writes_are_taken_out_of_the_input() {
        let text = r#"{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":30,"cache_write_input_tokens":20,"output_tokens":5}}"#;
        let u = usage(text).unwrap();
        assert_eq!(
            (u.input_tokens, u.cache_read_tokens, u.cache_write_tokens),
            (50, 30, 20)
        );
    }

    #[test]
    fn a_failed_turn_has_no_usage_and_no_response() {
        let text = r#"{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"error","message":"stream error"}
{"type":"turn.failed","error":{"message":"stream error"}}
"#;
        assert!(usage(text).is_none());
        assert_eq!(response(text), Some(None));
    }

    #[test]
    fn other_logs_are_not_codex() {
        assert_eq!(response("plain\n{\"type\":\"result\"}\n"), None);
        assert!(usage("{\"type\":\"result\"}").is_none());
    }
}
