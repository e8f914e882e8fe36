//! Usage and cost of dispatches (DESIGN §7, seed 000 "Usage and cost records"): one dispatch's
//! record, and a node's or run's totals, summed as typed values (never as JSON numbers).

use serde::{Deserialize, Serialize};

/// Where a cost figure came from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum CostSource {
    /// The provider reported it.
    Provider,
    /// The price table (`[prices.<model>]`) gave it.
    Prices,
    /// Neither: the cost is unknown.
    #[default]
    Unknown,
}

/// Tokens, latency and cost of one dispatch, or a sum of them.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Usage {
    /// Input tokens, as the agent reported them.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens, reasoning included.
    #[serde(default)]
    pub output_tokens: u64,
    /// Tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Reasoning tokens, as a part of `output_tokens` (how OpenAI and Anthropic report them;
    /// the Gemini adapter adds Gemini's separate `thoughts` to the output to match).
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// Wall time of the dispatch, in milliseconds.
    #[serde(default)]
    pub latency_ms: u64,
    /// `None` is an unknown cost, never 0.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// When `cost_usd` is unknown because some dispatches' costs are: the sum of the others'
    /// (`$0.42 + unknown`); `None` when every part is unknown, or the whole is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_cost_usd: Option<f64>,
    /// Where `cost_usd` came from.
    #[serde(default)]
    pub cost_source: CostSource,
    /// The model that did the work, when reported.
    #[serde(default)]
    pub model: Option<String>,
}

impl Usage {
    /// The tokens that count against a run's token budget: everything sent or produced, except
    /// cache reads (reasoning is part of the output already; cache writes are input).
    pub fn budget_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_write_tokens)
    }

    /// Add one dispatch's usage to these totals. Counts saturate; an unknown cost makes the
    /// total cost unknown for good; the model is the first dispatch's.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
        self.latency_ms = self.latency_ms.saturating_add(other.latency_ms);
        let known = |u: &Usage| u.cost_usd.or(u.known_cost_usd);
        self.known_cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(_), Some(_)) => None,
            _ => match (known(self), known(other)) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
            },
        };
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        if self.cost_usd.is_none() {
            self.cost_source = CostSource::Unknown;
        }
        if self.model.is_none() {
            self.model = other.model.clone();
        }
    }

    /// The cost as a person reads it: `$0.4200`, `$0.4200 + unknown` when some parts' costs
    /// are unknown, `cost unknown` when all are.
    pub fn cost_text(&self) -> String {
        match (self.cost_usd, self.known_cost_usd) {
            (Some(c), _) => format!("${c:.4}"),
            (None, Some(k)) => format!("${k:.4} + unknown"),
            (None, None) => "cost unknown".into(),
        }
    }

    /// `128050 tokens, $0.6146` (the tokens that count against a budget, and the cost).
    pub fn summary(&self) -> String {
        format!("{} tokens, {}", self.budget_tokens(), self.cost_text())
    }

    /// Totals after adding `other` to `total` (the first usage becomes the total).
    pub fn accumulate(total: &mut Option<Usage>, other: &Usage) {
        match total {
            Some(t) => t.add(other),
            None => *total = Some(other.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_counts_once_against_the_budget() {
        let u = Usage {
            input_tokens: 10,
            output_tokens: 100,
            reasoning_tokens: 60,
            cache_read_tokens: 1000,
            cache_write_tokens: 5,
            ..Usage::default()
        };
        assert_eq!(u.budget_tokens(), 115);
    }

    #[test]
    fn an_unknown_part_leaves_the_known_part_shown() {
        let one = |cost: Option<f64>| Usage {
            input_tokens: 10,
            cost_usd: cost,
            ..Usage::default()
        };
        let mut total = None;
        Usage::accumulate(&mut total, &one(Some(0.25)));
        assert_eq!(total.as_ref().unwrap().cost_text(), "$0.2500");
        Usage::accumulate(&mut total, &one(None));
        Usage::accumulate(&mut total, &one(Some(0.17)));
        let t = total.unwrap();
        assert_eq!(t.cost_usd, None, "the whole is unknown");
        assert_eq!(t.cost_text(), "$0.4200 + unknown");
        assert_eq!(t.summary(), "30 tokens, $0.4200 + unknown");
        let mut none = None;
        Usage::accumulate(&mut none, &one(None));
        Usage::accumulate(&mut none, &one(None));
        assert_eq!(none.unwrap().cost_text(), "cost unknown");
    }
}
