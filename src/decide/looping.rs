//! A loop step's rules (issue 13, `docs/monitor.md` "The loop in a run"), in place of rules 10
//! and 12a–16 for a node whose step declares `loop`. The pure monitor judges the iterations
//! recorded since the node entered the step; its decision becomes an action or a rest:
//!
//! | monitor | outcome |
//! |---|---|
//! | (no iteration yet) | dispatch iteration 1 (rules 12a–15 as usual) |
//! | `success` | action `check` (`transition complete`: the step's floors and gate still apply), unless a check since that iteration refused: then as `continue` |
//! | `stop_iteration_limit`, `stop_budget` | action `park` with the limit that stopped it |
//! | any, when the latest iteration's decision was already carried out (its `effect`) | as `continue` |
//! | `escalate_oscillation`, `escalate_repeated` | action `escalate` |
//! | `rollback` | action `rollback` {restore} |
//! | `step_back` | action `step-back` |
//! | `ask_user` | rest `awaiting-human` with the question (`transition guide` or cancel) |
//! | `continue` | the wall time left? dispatch the next iteration (no backoff after a measured one), else park |
//!
//! A check that could not check rests `escalated` (rule 11).

use chrono::DateTime;

use crate::model::bead::Verdict;
use crate::model::manifest::LoopSpec;
use crate::model::trajectory::{Iteration, since_entry};
use crate::model::{Action, Bead, Rest, Step};
use crate::policy::monitor::{MonitorDecision, input_of, monitor};

use super::index::Index;
use super::rules::{Outcome, dispatch_or_park, resolve_autonomy};

/// The outcome of a node on loop step `step`.
pub(crate) fn outcome<'a>(
    ix: &Index<'a>,
    bead: &'a Bead,
    step: &'a Step,
    spec: &'a LoopSpec,
) -> Outcome<'a> {
    let p = &bead.pipeline;
    let check = bead.check_since_entry();
    if let Some(c) = check
        && c.verdict == Verdict::Escalate
    {
        return Outcome::Rest(Rest::Escalated {
            reason: c.reason.clone(),
        });
    }
    let its: Vec<&Iteration> = since_entry(&p.trajectory, &p.step, p.entered).collect();
    let Some(latest) = its.last() else {
        return dispatch_or_park(ix, bead, step, 0);
    };
    let input = input_of(spec, ix.snapshot.limits.max_turns, &its);
    let decision = monitor(&input);
    let act = |action| Outcome::Act(action);
    let (id, here) = (|| bead.id.clone(), || p.step.clone());
    let iteration = latest.state.iteration;
    match decision {
        MonitorDecision::Success { .. } => {
            // A check since this iteration refused: the step's own floors want more.
            let refused = check.is_some_and(|c| c.seq > latest.seq && c.verdict == Verdict::Refuse);
            if !refused {
                return act(Action::Check {
                    bead: id(),
                    step: here(),
                });
            }
        }
        MonitorDecision::StopIterationLimit { .. } | MonitorDecision::StopBudget { .. } => {
            return act(Action::Park {
                bead: id(),
                step: here(),
                reason: stop_reason(&p.step, &decision),
            });
        }
        _ if latest.effect.is_some() => {}
        MonitorDecision::EscalateOscillation { .. } | MonitorDecision::EscalateRepeated { .. } => {
            return act(Action::Escalate {
                bead: id(),
                step: here(),
                iteration,
                rule: decision.name().to_string(),
            });
        }
        MonitorDecision::Rollback { restore, .. } => {
            return act(Action::Rollback {
                bead: id(),
                step: here(),
                iteration,
                restore: restore.iteration,
            });
        }
        MonitorDecision::StepBack { last_three } => {
            let scores: Vec<String> = last_three.iter().map(|s| s.score.to_string()).collect();
            return act(Action::StepBack {
                bead: id(),
                step: here(),
                iteration,
                reason: format!("the last three scores ({}) did not rise", scores.join(", ")),
            });
        }
        MonitorDecision::AskUser { last_three } if ix.snapshot.limits.no_person => {
            return act(Action::Park {
                bead: id(),
                step: here(),
                reason: format!(
                    "the pass monitor asked a person (the agent's confidence fell over \
                     iterations {}–{iteration}) and this run has none (`splice exec`)",
                    last_three[0].iteration
                ),
            });
        }
        MonitorDecision::AskUser { last_three } => {
            let (level, source) = resolve_autonomy(ix, bead);
            let c: Vec<String> = last_three
                .iter()
                .map(|c| format!("{}", c.confidence))
                .collect();
            return Outcome::Rest(Rest::AwaitingHuman {
                gate: None,
                step: here(),
                autonomy: level,
                autonomy_source: source.label(),
                relaxes: None,
                question: Some(format!(
                    "the agent's confidence fell over iterations {}–{} ({}): continue with \
                     guidance (`splice transition guide --bead {} --text TEXT`) or cancel \
                     (`splice cancel {} --reason R`)",
                    last_three[0].iteration,
                    iteration,
                    c.join(" > "),
                    bead.id,
                    bead.id
                )),
            });
        }
        MonitorDecision::Continue {} => {}
    }
    if let Some(reason) = out_of_time(ix, &its, spec, step) {
        return act(Action::Park {
            bead: id(),
            step: here(),
            reason,
        });
    }
    dispatch_or_park(ix, bead, step, latest.attempt)
}

/// Why a stopped loop parks: the limit, with what was spent.
fn stop_reason(step: &str, decision: &MonitorDecision) -> String {
    match decision {
        MonitorDecision::StopIterationLimit {
            iterations,
            max_iterations,
        } => format!(
            "loop stopped on {step} (stop_iteration_limit): {iterations} of {max_iterations} \
             iterations without success"
        ),
        MonitorDecision::StopBudget {
            tokens_spent,
            token_budget,
            cost_spent_usd,
            cost_budget_usd,
            ..
        } => {
            let tokens =
                token_budget.map_or(String::new(), |b| format!(" tokens {tokens_spent} of {b};"));
            let cost = cost_budget_usd.map_or(String::new(), |b| {
                format!(" cost ${cost_spent_usd:.2} of ${b:.2};")
            });
            format!("loop stopped on {step} (stop_budget):{tokens}{cost} no success",)
        }
        other => format!("loop stopped on {step} ({})", other.name()),
    }
}

/// The wall-time limit, counted from the first iteration's start: why no iteration may start,
/// if the time is up. A time that does not parse (a hand-edited file) limits nothing.
fn out_of_time(ix: &Index, its: &[&Iteration], spec: &LoopSpec, step: &Step) -> Option<String> {
    let first = its.first()?;
    let started = DateTime::parse_from_rfc3339(&first.started_at).ok()?;
    let now = DateTime::parse_from_rfc3339(&ix.snapshot.now).ok()?;
    let limit = spec.wall_time_s(step.timeout_s);
    let used = (now - started).num_seconds();
    (used >= i64::try_from(limit).ok()?).then(|| {
        format!(
            "loop stopped on {} (wall time): {used} s since iteration 1 started, of {limit} s \
             (wall_time_s)",
            step.name
        )
    })
}
