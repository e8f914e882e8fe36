//! Gemini CLI's `gemini -p … --output-format json`: one JSON object, printed (indented, over
//! many lines) when the session ends. What splice reads:
//!
//! | field | what |
//! |---|---|
//! | `response` | the step's response |
//! | `stats.models.<model>.tokens` | `prompt`, `cached`, `tool`, `candidates`, `thoughts`, summed over the models |
//! | `stats.models` | the model: the one with the most output (`candidates + thoughts`; ties: the first by name) |
//! | `error` | a failed session: its object has no `response`, and no `stats` when it failed before the model answered |
//!
//! Gemini counts the way its API does: `prompt` includes the `cached` tokens; `candidates` does
//! not include the `thoughts`; `tool` is prompt tokens from tool results (`total = prompt +
//! candidates + thoughts + tool`). splice's record keeps input apart from cache reads and counts
//! reasoning as a part of the output, so input is `prompt − cached + tool`, cache reads are
//! `cached`, output is `candidates + thoughts`, reasoning is `thoughts`.
//!
//! No cost is reported (the `[prices.<model>]` table prices it) and no wall time (the
//! `api.totalLatencyMs` is the model's time alone): the latency is the dispatch's.
//!
//! The object is found in the log as the last line starting with `{` (in the first column) that
//! begins a JSON object with `response`, `stats` or `error` and no `type` (so a stream-json event
//! is never taken for it); what the command printed to stderr around it does not matter.

use serde_json::{Map, Value};

use super::{CostSource, Usage};

/// The usage in the session's `stats`, if the log holds a Gemini object with models in them.
pub fn usage(text: &str) -> Option<Usage> {
    let object = object(text)?;
    let models = object.pointer("/stats/models")?.as_object()?;
    if models.is_empty() {
        return None;
    }
    let mut usage = Usage {
        cost_source: CostSource::Unknown,
        ..Usage::default()
    };
    for stats in models.values() {
        let count = |key: &str| {
            stats
                .pointer(&format!("/tokens/{key}"))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let cached = count("cached");
        usage.input_tokens = usage.input_tokens.saturating_add(
            count("prompt")
                .saturating_sub(cached)
                .saturating_add(count("tool")),
        );
        usage.cache_read_tokens = usage.cache_read_tokens.saturating_add(cached);
        usage.output_tokens = usage
            .output_tokens
            .saturating_add(count("candidates").saturating_add(count("thoughts")));
        usage.reasoning_tokens = usage.reasoning_tokens.saturating_add(count("thoughts"));
    }
    usage.model = main_model(models);
    Some(usage)
}

/// The object's `response`: `Some(None)` when the log holds a Gemini object without one (a
/// failed session), `None` when it holds none.
pub fn response(text: &str) -> Option<Option<String>> {
    let object = object(text)?;
    Some(
        object
            .get("response")
            .and_then(Value::as_str)
            .map(String::from),
    )
}

/// The `error.message` of a failed session's object.
pub fn error(text: &str) -> Option<String> {
    object(text)?
        .pointer("/error/message")
        .and_then(Value::as_str)
        .map(String::from)
}

/// The model with the most output.
fn main_model(models: &Map<String, Value>) -> Option<String> {
    let output = |stats: &Value| {
        ["candidates", "thoughts"]
            .iter()
            .filter_map(|k| {
                stats
                    .pointer(&format!("/tokens/{k}"))
                    .and_then(Value::as_u64)
            })
            .fold(0u64, u64::saturating_add)
    };
    super::most_output(models.iter().map(|(name, s)| (name.as_str(), output(s))))
}

/// The last Gemini output object in the log.
fn object(text: &str) -> Option<Value> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(at, _)| at + 1))
        .rev()
        .filter(|&at| text[at..].starts_with('{'))
        .find_map(|at| {
            let value = serde_json::Deserializer::from_str(&text[at..])
                .into_iter::<Value>()
                .next()?
                .ok()?;
            let o = value.as_object()?;
            let gemini = !o.contains_key("type")
                && ["response", "stats", "error"]
                    .iter()
                    .any(|k| o.contains_key(*k));
            gemini.then_some(value)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = r#"Loaded cached credentials.
{
  "response": "Done: the notes exist.",
  "stats": {
    "models": {
      "gemini-2.5-pro": {
        "api": { "totalRequests": 2, "totalErrors": 0, "totalLatencyMs": 5053 },
        "tokens": { "prompt": 24939, "candidates": 20, "total": 25113, "cached": 21263, "thoughts": 154, "tool": 0 }
      },
      "gemini-2.5-flash": {
        "api": { "totalRequests": 1, "totalErrors": 0, "totalLatencyMs": 1879 },
        "tokens": { "prompt": 8965, "candidates": 10, "total": 9033, "cached": 0, "thoughts": 30, "tool": 28 }
      }
    },
    "tools": { "totalCalls": 1, "totalSuccess": 1, "totalFail": 0 },
    "files": { "totalLinesAdded": 3, "totalLinesRemoved": 0 }
  }
}
"#;

    #[test]
    fn tokens_summed_over_models_the_model_with_most_output() {
        let u = usage(OUTPUT).unwrap();
        assert_eq!(u.input_tokens, (24939 - 21263) + (8965 + 28));
        assert_eq!(u.cache_read_tokens, 21263);
        assert_eq!(u.output_tokens, 20 + 154 + 10 + 30);
        assert_eq!(u.reasoning_tokens, 184);
        assert_eq!(u.model.as_deref(), Some("gemini-2.5-pro"));
        assert_eq!((u.cost_usd, u.latency_ms), (None, 0));
        assert_eq!(
            response(OUTPUT),
            Some(Some("Done: the notes exist.".to_string()))
        );
    }

    #[test]
    fn an_error_object_has_no_response_and_no_usage() {
        let text = "{\n  \"error\": {\n    \"type\": \"ApiError\",\n    \"message\": \"quota\",\n    \"code\": 429\n  }\n}\n[splice: exited 1]\n";
        assert!(usage(text).is_none());
        assert_eq!(response(text), Some(None));
        assert_eq!(error(text).as_deref(), Some("quota"));
    }

    #[test]
    fn stream_json_events_are_not_gemini_objects() {
        let text = r#"{"type":"turn.failed","error":{"message":"x"}}
{"type":"result","result":"ok"}
"#;
        assert_eq!(response(text), None);
        assert!(usage("{\n  \"stats\": {}\n}").is_none());
    }
}
