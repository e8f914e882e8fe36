//! Usage and cost of one dispatch (DESIGN §7, seed 000 "Usage and cost records").
//!
//! Adapters, chosen by `[agent] usage`; each agent's module says which fields it reads:
//!
//! | adapter | reads | module |
//! |---|---|---|
//! | `claude-stream-json` | the dispatch log: Claude Code's final `{"type":"result"}` event (tokens, cost, duration) and the model of its init event | [`claude`] |
//! | `codex-json` | the dispatch log: Codex CLI's (`codex exec --json`) last `turn.completed` event's `usage` (input, cached input, output, reasoning tokens) | [`codex`] |
//! | `gemini-json` | the dispatch log: Gemini CLI's (`--output-format json`) object, its `stats.models.<model>.tokens` (prompt, cached, tool, candidates, thoughts) | [`gemini`] |
//! | `file` | the JSON file at `SPLICE_USAGE_FILE`, with [`Usage`]'s field names | |
//! | `none` | nothing | |
//!
//! Unset, the first that is there: the usage file, Claude Code's result event, Codex's
//! `turn.completed`, Gemini's stats; else none.
//!
//! Every record's tokens mean the same whichever agent wrote them: `input_tokens` is input not
//! read from or written to a cache, `cache_read_tokens` and `cache_write_tokens` the rest of it,
//! `output_tokens` includes `reasoning_tokens`. Each adapter converts its agent's counts to that.
//!
//! Model: the one the source names, else the step's configured model (`[agent.steps.<step>]
//! model`, else `[agent] model`: what the command was given as `{{model}}`), else none.
//!
//! Cost: the provider's figure when reported (only Claude Code reports one), else the
//! `[prices.<model>]` table (per million tokens), else `null`. An unknown cost is never 0. A
//! price table prices all of a dispatch's tokens at its main model (Claude's init event's, else
//! the one with the most output).
//!
//! Latency: the source's when it reports one (Claude Code's `duration_ms`), else the dispatch's
//! wall time.
//!
//! Limit: the log keeps its last half-cap (512 KiB by default), so a result event line longer
//! than that, or a Gemini object whose start was in the dropped middle, is cut and its usage is
//! not read.

pub mod claude;
pub mod codex;
pub mod gemini;

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
    CodexJson,
    GeminiJson,
    File,
    None,
}

impl From<Option<UsageAdapter>> for Adapter {
    /// `[agent] usage`, typed when the config loaded.
    fn from(configured: Option<UsageAdapter>) -> Adapter {
        match configured {
            None => Adapter::Auto,
            Some(UsageAdapter::ClaudeStreamJson) => Adapter::ClaudeStreamJson,
            Some(UsageAdapter::CodexJson) => Adapter::CodexJson,
            Some(UsageAdapter::GeminiJson) => Adapter::GeminiJson,
            Some(UsageAdapter::File) => Adapter::File,
            Some(UsageAdapter::None) => Adapter::None,
        }
    }
}

/// Read one dispatch's usage. `elapsed_ms` is the wall time of the dispatch, used as the
/// latency when the source reports none; `model` is the step's configured model, used when the
/// source names none. Missing sources give `Ok(None)`; a usage file that exists but is not
/// valid JSON is an error naming it.
pub fn collect(
    adapter: Adapter,
    log: &Path,
    usage_file: &Path,
    elapsed_ms: u64,
    prices: &BTreeMap<String, Price>,
    model: Option<&str>,
) -> Result<Option<Usage>> {
    let found = match adapter {
        Adapter::None => None,
        Adapter::File => from_file(usage_file)?,
        Adapter::ClaudeStreamJson => read_log(log)?.and_then(|t| claude::usage(&t)),
        Adapter::CodexJson => read_log(log)?.and_then(|t| codex::usage(&t)),
        Adapter::GeminiJson => read_log(log)?.and_then(|t| gemini::usage(&t)),
        Adapter::Auto => match from_file(usage_file)? {
            Some(u) => Some(u),
            None => read_log(log)?.and_then(|t| from_any_log(&t)),
        },
    };
    Ok(found.map(|mut u| {
        if u.latency_ms == 0 {
            u.latency_ms = elapsed_ms;
        }
        if u.model.is_none() {
            u.model = model.map(String::from);
        }
        price(&mut u, prices);
        u
    }))
}

/// The usage in a log whose agent is not configured: Claude Code's, else Codex's, else Gemini's.
pub fn from_any_log(text: &str) -> Option<Usage> {
    claude::usage(text)
        .or_else(|| codex::usage(text))
        .or_else(|| gemini::usage(text))
}

/// A usage file, if it exists. The cost in it, if any, is the provider's.
pub fn from_file(path: &Path) -> Result<Option<Usage>> {
    // The agent writes it: no link, no FIFO, at most 1 MiB (`exec::agent_file`).
    let Some(bytes) = crate::exec::agent_file::read(path, crate::exec::agent_file::SMALL)? else {
        return Ok(None);
    };
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| Error::bad_file(path, format!("not a usage record: {e}")))?;
    let mut usage: Usage = serde_json::from_str(text)
        .map_err(|e| Error::bad_file(path, format!("not a usage record: {e}")))?;
    usage.cost_source = if usage.cost_usd.is_some() {
        CostSource::Provider
    } else {
        CostSource::Unknown
    };
    Ok(Some(usage))
}

/// A dispatch log's text, if it exists.
fn read_log(path: &Path) -> Result<Option<String>> {
    let bytes = crate::exec::agent_file::read(path, crate::exec::agent_file::LOG)?;
    Ok(bytes.map(|b| String::from_utf8_lossy(&b).into_owned()))
}

/// Parse Claude Code's stream-json text ([`claude::usage`]).
pub fn from_stream_json(text: &str) -> Option<Usage> {
    claude::usage(text)
}

/// The JSON objects of a JSON-lines log, one a line; other lines (an agent's stderr, a line cut
/// short, splice's notes) are skipped.
fn json_lines(text: &str) -> impl Iterator<Item = Value> + '_ {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
}

/// The name with the most output (ties: the first by name).
fn most_output<'n>(outputs: impl Iterator<Item = (&'n str, u64)>) -> Option<String> {
    let mut best: Option<(&str, u64)> = None;
    for (name, n) in outputs {
        if best.is_none_or(|(b, bn)| n > bn || (n == bn && name < b)) {
            best = Some((name, n));
        }
    }
    best.map(|(name, _)| name.to_string())
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
    fn unset_the_usage_file_then_claude_then_codex_then_gemini() {
        let dir = tempfile::tempdir().unwrap();
        let (log, file) = (dir.path().join("log"), dir.path().join("usage.json"));
        let read = |text: &str| {
            std::fs::write(&log, text).unwrap();
            collect(
                Adapter::Auto,
                &log,
                &file,
                9,
                &prices(),
                Some("claude-sonnet-4-5"),
            )
            .unwrap()
        };
        let codex =
            "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":10,\"output_tokens\":2}}\n";
        let gemini = "{\n \"response\": \"ok\",\n \"stats\": {\"models\": {\"gemini-2.5-pro\": {\"tokens\": {\"prompt\": 7, \"candidates\": 1}}}}\n}\n";
        let claude = "{\"type\":\"result\",\"usage\":{\"input_tokens\":3}}\n";
        let u = read(&format!("{gemini}{codex}{claude}")).unwrap();
        assert_eq!(u.input_tokens, 3);
        let u = read(&format!("{gemini}{codex}")).unwrap();
        assert_eq!((u.input_tokens, u.latency_ms), (10, 9));
        // Codex names no model: the configured one prices it.
        assert_eq!(u.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(u.cost_source, CostSource::Prices);
        let u = read(gemini).unwrap();
        assert_eq!(
            (u.input_tokens, u.model.as_deref()),
            (7, Some("gemini-2.5-pro"))
        );
        assert!(read("just text\n").is_none());
        std::fs::write(&file, r#"{"input_tokens": 1}"#).unwrap();
        assert_eq!(read(claude).unwrap().input_tokens, 1);
        // A configured adapter reads its format only.
        std::fs::write(&log, codex).unwrap();
        let only = |a| collect(a, &log, &file, 0, &prices(), None).unwrap();
        assert!(only(Adapter::GeminiJson).is_none());
        assert!(only(Adapter::ClaudeStreamJson).is_none());
        assert_eq!(only(Adapter::CodexJson).unwrap().input_tokens, 10);
    }

    #[test]
    fn adapter_from_the_config() {
        assert_eq!(Adapter::from(None), Adapter::Auto);
        assert_eq!(Adapter::from(Some(UsageAdapter::File)), Adapter::File);
        assert_eq!(
            Adapter::from(Some(UsageAdapter::CodexJson)),
            Adapter::CodexJson
        );
        assert_eq!(
            Adapter::from(Some(UsageAdapter::GeminiJson)),
            Adapter::GeminiJson
        );
    }
}
