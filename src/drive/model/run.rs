//! The run bar: a run started here or watched, from its `events.jsonl` lines
//! (`driver::events::Event` as JSON): its status, passes, dispatches in flight, tokens and cost
//! so far, and wall time.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::model::Usage;

/// What the run bar shows.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RunBar {
    pub run: String,
    /// Started from the cockpit (`s` stops it), not only watched.
    pub background: bool,
    /// `running` until a pass ends, then the last pass's run status; the end status at the end.
    pub status: String,
    pub ended: bool,
    pub passes: u64,
    /// Beads with a dispatch started and not yet ended.
    pub in_flight: BTreeSet<String>,
    pub dispatches: u64,
    pub tokens: u64,
    /// `None` once a dispatch's cost is unknown.
    pub cost_usd: Option<f64>,
    /// The sum of the costs that are known (beside an unknown one: `$0.42 + unknown`).
    pub known_usd: f64,
    pub wall_s: u64,
}

impl RunBar {
    /// The run's cost as the header shows it: `$0.42`, `$0.42 + unknown`, `cost ?`.
    pub fn cost_text(&self) -> String {
        match self.cost_usd {
            Some(c) => format!("${c:.2}"),
            None if self.known_usd > 0.0 => format!("${:.2} + unknown", self.known_usd),
            None => "cost ?".into(),
        }
    }

    pub(crate) fn new(run: String, background: bool) -> RunBar {
        RunBar {
            run,
            background,
            status: "running".into(),
            cost_usd: Some(0.0),
            ..RunBar::default()
        }
    }

    /// Is the run still going?
    pub fn running(&self) -> bool {
        !self.ended
    }

    pub(crate) fn end(&mut self, status: String) {
        self.status = status;
        self.ended = true;
        self.in_flight.clear();
    }

    /// Take in one event line; a line of another shape is ignored (a newer run's event).
    pub(crate) fn event(&mut self, e: &Value) {
        let text = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_string);
        let num = |k: &str| e.get(k).and_then(Value::as_u64);
        match e.get("type").and_then(Value::as_str).unwrap_or("") {
            "pass_start" => self.passes = num("pass").unwrap_or(self.passes),
            "pass_end" => {
                if let Some(s) = text("status") {
                    self.status = s;
                }
            }
            "action" => {
                let a = e.get("action").unwrap_or(&Value::Null);
                let is = |k: &str, v: &str| a.get(k).and_then(Value::as_str) == Some(v);
                // A run reports a dispatch it started with `result: started`.
                if is("action", "dispatch")
                    && is("result", "started")
                    && let Some(bead) = a.get("bead").and_then(Value::as_str)
                {
                    self.in_flight.insert(bead.to_string());
                    self.dispatches += 1;
                }
            }
            "dispatch_end" => {
                if let Some(bead) = text("bead") {
                    self.in_flight.remove(&bead);
                }
                let usage: Option<Usage> = e
                    .get("usage")
                    .and_then(|u| serde_json::from_value(u.clone()).ok());
                match usage {
                    Some(u) => {
                        self.tokens = self.tokens.saturating_add(u.budget_tokens());
                        self.cost_usd = self.cost_usd.zip(u.cost_usd).map(|(a, b)| a + b);
                        self.known_usd += u.cost_usd.or(u.known_cost_usd).unwrap_or(0.0);
                    }
                    None => self.cost_usd = None,
                }
            }
            "result" => {
                self.tokens = num("tokens").unwrap_or(self.tokens);
                self.passes = num("num_passes").unwrap_or(self.passes);
                self.dispatches = num("dispatches").unwrap_or(self.dispatches);
                self.wall_s = num("duration_ms").map_or(self.wall_s, |ms| ms / 1000);
                if let Some(s) = text("status") {
                    self.end(s);
                }
            }
            _ => {}
        }
    }
}
