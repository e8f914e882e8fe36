//! The run bar: a run started here or watched, from the [`Event`]s of its `events.jsonl`: its
//! status, passes, dispatches in flight, tokens and cost so far, and wall time.

use std::collections::BTreeSet;

use crate::driver::events::Event;
use crate::model::envelope::{ActResult, ActionReport};
use crate::model::{Action, RunStatus};

/// What the run bar shows.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RunBar {
    pub run: String,
    /// Started from the cockpit (`s` stops it), not only watched.
    pub background: bool,
    /// `None` (running) until a pass ends, then the last pass's run status; the end status at
    /// the end.
    pub status: Option<RunStatus>,
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
            cost_usd: Some(0.0),
            ..RunBar::default()
        }
    }

    /// The status in a word: `running` until a pass ends, then [`RunBar::status`].
    pub fn status_text(&self) -> &'static str {
        self.status.map_or("running", RunStatus::as_str)
    }

    /// Is the run still going?
    pub fn running(&self) -> bool {
        !self.ended
    }

    pub(crate) fn end(&mut self, status: RunStatus) {
        self.status = Some(status);
        self.ended = true;
        self.in_flight.clear();
    }

    /// Take in one event (the kinds the bar does not show change nothing).
    pub(crate) fn event(&mut self, e: &Event) {
        match e {
            Event::PassStart { pass } => self.passes = *pass,
            // The read that finds the budget spent ends the run and is no pass of it (the run's
            // `num_passes` does not count it): the bar says the passes run, as the result will.
            Event::PassEnd { pass, status } => {
                if *status == RunStatus::Budget {
                    self.passes = pass.saturating_sub(1);
                }
                self.status = Some(*status);
            }
            // A run reports a dispatch it started with `result: started`.
            Event::Action {
                action:
                    ActionReport {
                        action: Action::Dispatch { bead, .. },
                        result: ActResult::Started,
                    },
                ..
            } => {
                self.in_flight.insert(bead.clone());
                self.dispatches += 1;
            }
            Event::DispatchEnd { bead, usage, .. } => {
                self.in_flight.remove(bead);
                match usage {
                    Some(u) => {
                        self.tokens = self.tokens.saturating_add(u.budget_tokens());
                        self.cost_usd = self.cost_usd.zip(u.cost_usd).map(|(a, b)| a + b);
                        self.known_usd += u.cost_usd.or(u.known_cost_usd).unwrap_or(0.0);
                    }
                    None => self.cost_usd = None,
                }
            }
            Event::Result {
                status,
                num_passes,
                dispatches,
                tokens,
                duration_ms,
                ..
            } => {
                self.tokens = *tokens;
                self.passes = *num_passes;
                self.dispatches = *dispatches;
                self.wall_s = duration_ms / 1000;
                self.end(*status);
            }
            _ => {}
        }
    }
}
