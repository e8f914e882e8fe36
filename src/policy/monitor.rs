//! The pass monitor (issue 13, seed 000 "Decision order"): after each iteration of a loop step,
//! whether to stop, escalate, roll back, step back, ask the user or go on.
//!
//! Pure like the rest of `policy`: [`monitor`] reads only its [`MonitorInput`]. The rules, in
//! the order the code applies them (`docs/monitor.md` gives the reasons and where splice
//! differs from the upstream). "History" is the completed iterations (no `stage_failed`);
//! "the last three" are its last three entries.
//!
//! | # | decision | fires when |
//! |---|---|---|
//! | 0 | `success` | the latest iteration succeeded ([`IterationState::succeeded`]); wins over every rule |
//! | 1 | `stop_iteration_limit` | iterations recorded (stage failures included) ≥ `max_iterations` |
//! | 2 | `stop_budget` | spent tokens ≥ `token_budget`, or spent cost ≥ `cost_budget_usd` (spent = `budget` + every iteration's) |
//! | – | `continue` | the latest iteration failed a stage, or the history is empty: rules 3–7 judge measured states only |
//! | 3 | `escalate_oscillation` | ≥ 4 states; the last four hashes a,b,c,d with a = c, b = d, a ≠ b |
//! | 4 | `escalate_repeated` | the latest hash equals any earlier state's hash |
//! | 5 | `rollback` | ≥ 3 states and score(latest) < score(first) |
//! | 6 | `step_back` | ≥ 3 states; last three scores s1,s2,s3 with neither s2 > s1 nor s3 > s2 |
//! | 7 | `ask_user` | the last three confidences are all given and c1 > c2 > c3 |
//! | 8 | `continue` | otherwise |

use serde::Serialize;

use crate::model::manifest::LoopSpec;
use crate::model::trajectory::{
    Effect, Iteration, IterationState, MONITOR_SCHEMA, MonitorInput, Spent, Weights,
};

/// The quality score of a measured state: the weighted sum of its counts (integers, exact).
/// Other fields are evidence only.
#[must_use]
pub fn score(s: &IterationState, w: &Weights) -> i64 {
    let terms = [
        (s.tests.passed, w.tests_passed),
        (s.tests.failed, w.tests_failed),
        (s.tests.errored, w.tests_errored),
        (s.acceptance.passed, w.acceptance_passed),
        (s.acceptance.failed, w.acceptance_failed),
        (s.acceptance.errored, w.acceptance_errored),
        (s.lint.critical, w.lint_critical),
        (s.lint.high, w.lint_high),
        (s.lint.medium, w.lint_medium),
        (s.lint.low, w.lint_low),
        (s.security.critical, w.security_critical),
        (s.security.high, w.security_high),
        (s.security.medium, w.security_medium),
        (s.security.low, w.security_low),
    ];
    terms.iter().fold(0i64, |acc, &(n, weight)| {
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        acc.saturating_add(n.saturating_mul(weight))
    })
}

/// One iteration's score.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scored {
    /// The iteration.
    pub iteration: u32,
    /// Its score.
    pub score: i64,
}

/// One iteration's confidence.
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
pub struct Confident {
    /// The iteration.
    pub iteration: u32,
    /// Its confidence, 0..1.
    pub confidence: f64,
}

/// Which budget ran out.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BudgetKind {
    /// The token budget.
    Tokens,
    /// The cost budget.
    CostUsd,
}

/// The monitor's decision and the evidence of the rule that made it. The names are stable.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum MonitorDecision {
    /// The latest iteration passed every stage: check the step.
    Success {
        /// The iteration that succeeded.
        iteration: u32,
    },
    /// The iteration limit is reached without success.
    StopIterationLimit {
        /// Iterations so far.
        iterations: u32,
        /// The limit.
        max_iterations: u32,
    },
    /// A budget ran out without success.
    StopBudget {
        /// Which ran out.
        exhausted: Vec<BudgetKind>,
        /// Tokens spent, iterations and outside them.
        tokens_spent: u64,
        /// The token budget.
        #[serde(skip_serializing_if = "Option::is_none")]
        token_budget: Option<u64>,
        /// Cost spent, in USD.
        cost_spent_usd: f64,
        /// The cost budget, in USD.
        #[serde(skip_serializing_if = "Option::is_none")]
        cost_budget_usd: Option<f64>,
    },
    /// The change hashes alternate a, b, a, b.
    EscalateOscillation {
        /// The two alternating hashes, a then b.
        hashes: [String; 2],
        /// The four iterations a, b, a, b.
        iterations: [u32; 4],
    },
    /// The latest change hash repeats an earlier one.
    EscalateRepeated {
        /// The repeated hash.
        hash: String,
        /// Every iteration with this hash, the latest last.
        iterations: Vec<u32>,
    },
    /// The latest score (third or later) fell below the first.
    Rollback {
        /// The first iteration's score.
        first: Scored,
        /// The latest iteration's score.
        latest: Scored,
        /// The iteration to restore: the highest score before the latest; a tie, the later.
        restore: Scored,
    },
    /// Three passes without improvement: analyse the plateau.
    StepBack {
        /// The last three scores, oldest first: none rose.
        last_three: [Scored; 3],
    },
    /// The agent's confidence fell across three passes: ask a person.
    AskUser {
        /// The last three confidences, oldest first: each strictly below the one before.
        last_three: [Confident; 3],
    },
    /// None of the above: the next iteration.
    Continue {},
}

impl MonitorDecision {
    /// The decision's stable name.
    pub fn name(&self) -> &'static str {
        match self {
            MonitorDecision::Success { .. } => "success",
            MonitorDecision::StopIterationLimit { .. } => "stop_iteration_limit",
            MonitorDecision::StopBudget { .. } => "stop_budget",
            MonitorDecision::EscalateOscillation { .. } => "escalate_oscillation",
            MonitorDecision::EscalateRepeated { .. } => "escalate_repeated",
            MonitorDecision::Rollback { .. } => "rollback",
            MonitorDecision::StepBack { .. } => "step_back",
            MonitorDecision::AskUser { .. } => "ask_user",
            MonitorDecision::Continue {} => "continue",
        }
    }
}

/// What `splice monitor` prints: the decision, the latest iteration and the score history.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct MonitorReport {
    /// The report's shape ([`MONITOR_SCHEMA`](crate::model::trajectory::MONITOR_SCHEMA)).
    pub schema_version: u32,
    /// The decision, with its evidence.
    #[serde(flatten)]
    pub decision: MonitorDecision,
    /// The latest iteration's number.
    pub latest_iteration: u32,
    /// Every measured iteration's score, in order (stage failures have none).
    pub scores: Vec<Scored>,
}

impl MonitorReport {
    /// Indented JSON with a final newline; the same bytes for the same input.
    pub fn to_pretty_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a report always serializes");
        s.push('\n');
        s
    }
}

/// The decision and its context, for printing.
#[must_use]
pub fn report(input: &MonitorInput) -> MonitorReport {
    MonitorReport {
        schema_version: MONITOR_SCHEMA,
        decision: monitor(input),
        latest_iteration: input.trajectory.last().map_or(0, |s| s.iteration),
        scores: history(input)
            .map(|s| Scored {
                iteration: s.iteration,
                score: score(s, &input.settings.weights),
            })
            .collect(),
    }
}

fn history(input: &MonitorInput) -> impl Iterator<Item = &IterationState> {
    input.trajectory.iter().filter(|s| !s.stage_failed)
}

/// The monitor's input: the step's settings under the run's `--max-turns`, what the step-back
/// analyses spent, and the iterations' states.
pub fn input_of(spec: &LoopSpec, max_turns: Option<u32>, its: &[&Iteration]) -> MonitorInput {
    let mut spent = Spent::default();
    for it in its {
        if let Some(Effect::SteppedBack {
            tokens, cost_usd, ..
        }) = &it.effect
        {
            spent.tokens = spent.tokens.saturating_add(*tokens);
            spent.cost_usd += cost_usd.max(0.0);
        }
    }
    MonitorInput {
        settings: spec.settings(max_turns),
        spent,
        trajectory: its.iter().map(|it| it.state.clone()).collect(),
    }
}

/// Decide after the latest iteration. An empty trajectory continues.
#[must_use]
pub fn monitor(input: &MonitorInput) -> MonitorDecision {
    let Some(latest) = input.trajectory.last() else {
        return MonitorDecision::Continue {};
    };
    if latest.succeeded() {
        return MonitorDecision::Success {
            iteration: latest.iteration,
        };
    }
    let iterations = u32::try_from(input.trajectory.len()).unwrap_or(u32::MAX);
    if iterations >= input.settings.max_iterations {
        return MonitorDecision::StopIterationLimit {
            iterations,
            max_iterations: input.settings.max_iterations,
        };
    }
    if let Some(stop) = budget(input) {
        return stop;
    }
    if latest.stage_failed {
        return MonitorDecision::Continue {};
    }
    let states: Vec<&IterationState> = history(input).collect();
    let w = &input.settings.weights;
    oscillation(&states)
        .or_else(|| repeated(&states))
        .or_else(|| rollback(&states, w))
        .or_else(|| step_back(&states, w))
        .or_else(|| ask_user(&states))
        .unwrap_or(MonitorDecision::Continue {})
}

fn budget(input: &MonitorInput) -> Option<MonitorDecision> {
    let tokens_spent = input
        .trajectory
        .iter()
        .fold(input.spent.tokens, |acc, s| acc.saturating_add(s.tokens));
    // Costs add up in whole micro-dollars, so `≥` at the boundary does not depend on binary
    // fractions (0.1 + 0.2 reaches a 0.3 budget).
    let cost_spent = input
        .trajectory
        .iter()
        .fold(micro_usd(input.spent.cost_usd), |acc, s| {
            acc.saturating_add(micro_usd(s.cost_usd))
        });
    let cost_spent_usd = cost_spent as f64 / 1e6;
    let token_budget = input.settings.token_budget;
    let cost_budget_usd = input.settings.cost_budget_usd;
    let mut exhausted = Vec::new();
    if token_budget.is_some_and(|b| tokens_spent >= b) {
        exhausted.push(BudgetKind::Tokens);
    }
    if cost_budget_usd.is_some_and(|b| cost_spent >= micro_usd(b)) {
        exhausted.push(BudgetKind::CostUsd);
    }
    (!exhausted.is_empty()).then_some(MonitorDecision::StopBudget {
        exhausted,
        tokens_spent,
        token_budget,
        cost_spent_usd,
        cost_budget_usd,
    })
}

/// Dollars to whole micro-dollars (a negative or non-finite cost, refused at parse, counts 0).
fn micro_usd(usd: f64) -> u64 {
    let micros = (usd * 1e6).round();
    if micros.is_finite() && micros > 0.0 {
        micros as u64
    } else {
        0
    }
}

fn oscillation(states: &[&IterationState]) -> Option<MonitorDecision> {
    let [a, b, c, d] = states.get(states.len().checked_sub(4)?..)? else {
        return None;
    };
    (a.change_hash == c.change_hash
        && b.change_hash == d.change_hash
        && a.change_hash != b.change_hash)
        .then(|| MonitorDecision::EscalateOscillation {
            hashes: [a.change_hash.clone(), b.change_hash.clone()],
            iterations: [a.iteration, b.iteration, c.iteration, d.iteration],
        })
}

fn repeated(states: &[&IterationState]) -> Option<MonitorDecision> {
    let (latest, earlier) = states.split_last()?;
    let iterations: Vec<u32> = earlier
        .iter()
        .filter(|s| s.change_hash == latest.change_hash)
        .map(|s| s.iteration)
        .chain([latest.iteration])
        .collect();
    (iterations.len() > 1).then(|| MonitorDecision::EscalateRepeated {
        hash: latest.change_hash.clone(),
        iterations,
    })
}

fn scored(s: &IterationState, w: &Weights) -> Scored {
    Scored {
        iteration: s.iteration,
        score: score(s, w),
    }
}

fn rollback(states: &[&IterationState], w: &Weights) -> Option<MonitorDecision> {
    if states.len() < 3 {
        return None;
    }
    let (latest, earlier) = states.split_last()?;
    let first = scored(earlier.first()?, w);
    let latest = scored(latest, w);
    if latest.score >= first.score {
        return None;
    }
    // The highest score before the latest; `>=` keeps the later of equal scores.
    let restore = earlier
        .iter()
        .map(|s| scored(s, w))
        .reduce(|best, s| if s.score >= best.score { s } else { best })?;
    Some(MonitorDecision::Rollback {
        first,
        latest,
        restore,
    })
}

fn step_back(states: &[&IterationState], w: &Weights) -> Option<MonitorDecision> {
    let [s1, s2, s3] = states.get(states.len().checked_sub(3)?..)? else {
        return None;
    };
    let last_three = [scored(s1, w), scored(s2, w), scored(s3, w)];
    let [a, b, c] = last_three.map(|s| s.score);
    (!(b > a || c > b)).then_some(MonitorDecision::StepBack { last_three })
}

fn ask_user(states: &[&IterationState]) -> Option<MonitorDecision> {
    let [s1, s2, s3] = states.get(states.len().checked_sub(3)?..)? else {
        return None;
    };
    let c = |s: &IterationState| {
        s.confidence.map(|confidence| Confident {
            iteration: s.iteration,
            confidence,
        })
    };
    let last_three = [c(s1)?, c(s2)?, c(s3)?];
    let [a, b, c] = last_three.map(|s| s.confidence);
    (a > b && b > c).then_some(MonitorDecision::AskUser { last_three })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::trajectory::{LoopSettings, Outcomes};

    fn state(n: u32, passed: u64, failed: u64, hash: &str) -> IterationState {
        IterationState {
            iteration: n,
            tests: Outcomes {
                passed,
                failed,
                errored: 0,
            },
            change_hash: hash.into(),
            ..IterationState::default()
        }
    }

    fn input(trajectory: Vec<IterationState>) -> MonitorInput {
        MonitorInput {
            settings: LoopSettings::default(),
            trajectory,
            ..MonitorInput::default()
        }
    }

    #[test]
    fn default_score_follows_the_issue() {
        let mut s = state(1, 3, 2, "h");
        s.tests.errored = 1;
        s.acceptance = Outcomes {
            passed: 1,
            failed: 1,
            errored: 1,
        };
        s.lint.high = 1;
        s.lint.medium = 2;
        s.lint.critical = 5;
        s.security.critical = 1;
        s.security.high = 1;
        // 30 - 16 - 12 + 10 - 12 - 12 - 3 - 2 + 0 - 50 - 20
        assert_eq!(score(&s, &Weights::default()), -87);
    }

    #[test]
    fn rollback_tie_restores_the_later() {
        let t = vec![
            state(1, 5, 1, "a"),
            state(2, 5, 1, "b"),
            state(3, 1, 1, "c"),
        ];
        let MonitorDecision::Rollback { restore, .. } = monitor(&input(t)) else {
            panic!("expected rollback");
        };
        assert_eq!(restore.iteration, 2);
    }

    #[test]
    fn success_wins_on_the_last_iteration() {
        let mut t: Vec<_> = (1..=4).map(|n| state(n, 1, 1, "x")).collect();
        t.push(state(5, 1, 0, "x"));
        assert_eq!(monitor(&input(t)).name(), "success");
    }
}
