//! Usage and cost of one dispatch (DESIGN §7, seed 000 "Usage and cost records").
//!
//! Adapters, chosen by `[agent] usage`:
//!
//! | adapter | reads |
//! |---|---|
//! | `claude-stream-json` | the dispatch log: Claude Code's final `{"type":"result"}` event (`usage.input_tokens`, `usage.output_tokens`, `usage.cache_read_input_tokens`, `usage.cache_creation_input_tokens`, `total_cost_usd`, `duration_ms`), the model from the `{"type":"system","subtype":"init"}` event, else from `modelUsage` |
//! | `file` | the JSON file at `SPLICE_USAGE_FILE`, with [`Usage`]'s field names |
//! | `none` | nothing |
//!
//! Unset: `file` if the usage file exists after the dispatch, else `claude-stream-json` if the
//! log holds a result event, else none.
//!
//! Cost: the provider's figure when reported, else the `[prices.<model>]` table (per million
//! tokens), else `null`. An unknown cost is never 0. A price table prices all of a dispatch's
//! tokens at its main model (the init event's, else the one with the most output in
//! `modelUsage`); Claude Code reports its own cost, so this matters only for other agents.
//!
//! Limit: the log keeps its last half-cap (512 KiB by default), so a result event line longer
//! than that is cut and its usage is not read.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::config::{Price, UsageAdapter};

pub use crate::model::usage::{CostSource, Usage};

/// Which adapter reads a dispatch's usage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Adapter {
    /// `[agent] usage` unset: see the module doc.
    #[default]
    Auto,
    ClaudeStreamJson,
    File,
    None,
}

impl From<Option<UsageAdapter>> for Adapter {
    /// `[agent] usage`, typed when the config loaded.
    fn from(configured: Option<UsageAdapter>) -> Adapter {
        match configured {
            None => Adapter::Auto,
            Some(UsageAdapter::ClaudeStreamJson) => Adapter::ClaudeStreamJson,
            Some(UsageAdapter::File) => Adapter::File,
            Some(UsageAdapter::None) => Adapter::None,
        }
    }
}

/// Read one dispatch's usage. `elapsed_ms` is the wall time of the dispatch, used as the
/// latency when the source reports none. Missing sources give `Ok(None)`; a usage file that
/// exists but is not valid JSON is an error naming it.
pub fn collect(
    adapter: Adapter,
    log: &Path,
    usage_file: &Path,
    elapsed_ms: u64,
    prices: &BTreeMap<String, Price>,
) -> Result<Option<Usage>> {
    let found = match adapter {
        Adapter::None => None,
        Adapter::File => from_file(usage_file)?,
        Adapter::ClaudeStreamJson => from_log(log)?,
        Adapter::Auto => match from_file(usage_file)? {
            Some(u) => Some(u),
            None => from_log(log)?,
        },
    };
    Ok(found.map(|mut u| {
        if u.latency_ms == 0 {
            u.latency_ms = elapsed_ms;
        }
        price(&mut u, prices);
        u
    }))
}

/// A usage file, if it exists. The cost in it, if any, is the provider's.
pub fn from_file(path: &Path) -> Result<Option<Usage>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut usage: Usage = serde_json::from_str(&text)
        .map_err(|e| Error::bad_file(path, format!("not a usage record: {e}")))?;
    usage.cost_source = if usage.cost_usd.is_some() {
        CostSource::Provider
    } else {
        CostSource::Unknown
    };
    Ok(Some(usage))
}

/// Claude Code's stream-json result event in a dispatch log, if the log holds one.
pub fn from_log(path: &Path) -> Result<Option<Usage>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    Ok(from_stream_json(&String::from_utf8_lossy(&bytes)))
}

/// Parse stream-json text: the last `result` event, and the model of the `system` init event.
pub fn from_stream_json(text: &str) -> Option<Usage> {
    let mut model: Option<String> = None;
    let mut result: Option<Value> = None;
    for line in text.lines() {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
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
        model: model.or_else(|| main_model(result.get("modelUsage"))),
    })
}

/// The model that produced the most output in a `modelUsage` map (ties: the first by name).
fn main_model(model_usage: Option<&Value>) -> Option<String> {
    let map = model_usage?.as_object()?;
    let output = |v: &Value| v.get("outputTokens").and_then(Value::as_u64).unwrap_or(0);
    let mut best: Option<(&String, u64)> = None;
    for (name, v) in map {
        let n = output(v);
        if best.is_none_or(|(b, bn)| n > bn || (n == bn && name < b)) {
            best = Some((name, n));
        }
    }
    best.map(|(name, _)| name.clone())
}

/// The price record for `model`: an exact key, else the longest key the model name starts
/// with (so `claude-sonnet-4-5` prices `claude-sonnet-4-5-20250929`).
pub fn price_for<'p>(prices: &'p BTreeMap<String, Price>, model: &str) -> Option<&'p Price> {
    prices.get(model).or_else(|| {
        prices
            .iter()
            .filter(|(k, _)| !k.is_empty() && model.starts_with(k.as_str()))
            .max_by_key(|(k, _)| k.len())
            .map(|(_, p)| p)
    })
}

/// Fill in the cost: keep a provider's figure, else compute it from the price table, else
/// leave it `null` with source `unknown`.
pub fn price(usage: &mut Usage, prices: &BTreeMap<String, Price>) {
    if usage.cost_usd.is_some_and(f64::is_finite) {
        usage.cost_source = CostSource::Provider;
        return;
    }
    let priced = usage
        .model
        .as_deref()
        .and_then(|m| price_for(prices, m))
        .map(|p| {
            let (plain_output, reasoning_price) = match p.reasoning {
                Some(r) => (
                    usage.output_tokens.saturating_sub(usage.reasoning_tokens),
                    r,
                ),
                None => (usage.output_tokens, 0.0),
            };
            let reasoning = if p.reasoning.is_some() {
                usage.reasoning_tokens.min(usage.output_tokens)
            } else {
                0
            };
            (usage.input_tokens as f64 * p.input
                + plain_output as f64 * p.output
                + reasoning as f64 * reasoning_price
                + usage.cache_read_tokens as f64 * p.cache_read
                + usage.cache_write_tokens as f64 * p.cache_write)
                / 1_000_000.0
        });
    match priced {
        Some(cost) => {
            usage.cost_usd = Some(cost);
            usage.cost_source = CostSource::Prices;
        }
        None => {
            usage.cost_usd = None;
            usage.cost_source = CostSource::Unknown;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = r#"{"type":"system","subtype":"init","model":"claude-sonnet-4-5-20250929","session_id":"s"}
{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}
not json at all
{"type":"result","subtype":"success","is_error":false,"duration_ms":5123,"num_turns":3,"total_cost_usd":0.0421,"usage":{"input_tokens":120,"output_tokens":450,"cache_read_input_tokens":9000,"cache_creation_input_tokens":300}}
"#;

    fn prices() -> BTreeMap<String, Price> {
        let mut p = BTreeMap::new();
        p.insert(
            "claude-sonnet-4-5".to_string(),
            Price {
                input: 3.0,
                output: 15.0,
                cache_read: 0.3,
                cache_write: 3.75,
                reasoning: None,
            },
        );
        p
    }

    #[test]
    fn reads_the_result_event() {
        let u = from_stream_json(STREAM).unwrap();
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
        assert!(from_stream_json("{\"type\":\"system\"}\nplain\n").is_none());
    }

    #[test]
    fn model_from_model_usage() {
        let text = r#"{"type":"result","usage":{"input_tokens":1},"modelUsage":{"claude-haiku-4-5":{"outputTokens":10},"claude-opus-4-1":{"outputTokens":900}}}"#;
        let u = from_stream_json(text).unwrap();
        assert_eq!(u.model.as_deref(), Some("claude-opus-4-1"));
        assert_eq!(u.cost_usd, None);
    }

    #[test]
    fn cost_from_prices_then_unknown() {
        let mut u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 2_000_000,
            cache_read_tokens: 1_000_000,
            cache_write_tokens: 0,
            model: Some("claude-sonnet-4-5-20250929".into()),
            ..Usage::default()
        };
        price(&mut u, &prices());
        assert_eq!(u.cost_source, CostSource::Prices);
        assert!((u.cost_usd.unwrap() - 33.3).abs() < 1e-9);

        let mut u = Usage {
            input_tokens: 10,
            model: Some("gpt-9".into()),
            ..Usage::default()
        };
        price(&mut u, &prices());
        assert_eq!((u.cost_usd, u.cost_source), (None, CostSource::Unknown));

        let mut u = Usage::default();
        price(&mut u, &prices());
        assert_eq!((u.cost_usd, u.cost_source), (None, CostSource::Unknown));
    }

    #[test]
    fn reasoning_priced_separately_only_when_priced() {
        let mut p = prices();
        if let Some(x) = p.get_mut("claude-sonnet-4-5") {
            x.reasoning = Some(30.0);
        }
        let mut u = Usage {
            output_tokens: 1_000_000,
            reasoning_tokens: 400_000,
            model: Some("claude-sonnet-4-5".into()),
            ..Usage::default()
        };
        price(&mut u, &p);
        assert!((u.cost_usd.unwrap() - (0.6 * 15.0 + 0.4 * 30.0)).abs() < 1e-9);
    }

    #[test]
    fn provider_cost_wins_and_null_serializes_as_null() {
        let mut u = Usage {
            cost_usd: Some(1.5),
            model: Some("claude-sonnet-4-5".into()),
            ..Usage::default()
        };
        price(&mut u, &prices());
        assert_eq!(
            (u.cost_usd, u.cost_source),
            (Some(1.5), CostSource::Provider)
        );
        let json = serde_json::to_value(Usage::default()).unwrap();
        assert_eq!(json["cost_usd"], Value::Null);
        assert_eq!(json["cost_source"], "unknown");
    }

    #[test]
    fn adapter_from_the_config() {
        assert_eq!(Adapter::from(None), Adapter::Auto);
        assert_eq!(Adapter::from(Some(UsageAdapter::File)), Adapter::File);
    }
}
