//! A loop step's rules (issue 13, `docs/monitor.md` "The loop in a run"): rules 14–21 of the
//! module table, in place of rules 22–24 and 30 for a node whose step declares `loop`. The pure
//! monitor judges the iterations recorded since the node entered the step; its decision becomes
//! an action or a rest:
//!
//! | rule | monitor | outcome |
//! |---|---|---|
//! | 14 | (any: the check since entry escalated) | rest `escalated` |
//! | 25–29 | (no iteration yet) | dispatch iteration 1 (skip, park, backoff, no target, as for any step) |
//! | 15 | `success` | action `check` (`transition complete`: the step's floors and gate still apply), unless a check since that iteration refused: then as `continue` |
//! | 16 | `stop_iteration_limit`, `stop_budget` | action `park` with the limit that stopped it |
//! | — | any other, when the latest iteration's decision was already carried out (its `effect`) | as `continue` |
//! | 17 | `escalate_oscillation`, `escalate_repeated` | action `escalate` |
//! | 18 | `rollback` | action `rollback` {restore} |
//! | 19 | `step_back` | action `step-back` |
//! | 20 | `ask_user` | rest `awaiting-human` with the question (`transition guide` or cancel); action `park` in a run with no person |
//! | 21, 25–29 | `continue` | the wall time left? dispatch the next iteration (no backoff after a measured one, rules 25–29), else park (21) |

use chrono::DateTime;

use crate::model::bead::Verdict;
use crate::model::manifest::LoopSpec;
use crate::model::trajectory::Iteration;
use crate::model::{Action, Bead, Rest, Rule, Step};
use crate::policy::monitor::{MonitorDecision, input_of, monitor};

use super::dispatch::dispatch_or_park;
use super::index::Index;
use super::rules::{Outcome, resolve_autonomy};

/// The outcome of a node on loop step `step`.
pub(crate) fn outcome<'a>(
    ix: &Index<'a>,
    bead: &'a Bead,
    step: &'a Step,
    spec: &'a LoopSpec,
) -> Outcome<'a> {
    let p = &bead.pipeline;
    // 14: the check could not check.
    if let Some(c) = bead.check_since_entry()
        && c.verdict == Verdict::Escalate
    {
        return Outcome::Rest(
            Rule::LoopEscalated,
            Rest::Escalated {
                reason: c.reason.clone(),
            },
        );
    }
    let its: Vec<&Iteration> = bead.iterations_since_entry().collect();
    let Some(latest) = its.last() else {
        return dispatch_or_park(ix, bead, step, 0);
    };
    let input = input_of(spec, ix.snapshot.limits.max_turns, &its);
    let decision = monitor(&input);
    if let Some(judged) = judged(ix, bead, &decision, latest) {
        return judged;
    }
    // 21: the wall time is used up.
    if let Some(reason) = out_of_time(ix, &its, spec, step) {
        return Outcome::Act(
            Rule::LoopWallTime,
            Action::Park {
                bead: bead.id.to_string(),
                step: p.step.to_string(),
                reason,
            },
        );
    }
    dispatch_or_park(ix, bead, step, latest.attempt)
}

/// Rules 15–20: the outcome the monitor's `decision` after iteration `latest` asks for, or
/// `None` to go on with the next iteration.
fn judged<'a>(
    ix: &Index<'a>,
    bead: &'a Bead,
    decision: &MonitorDecision,
    latest: &Iteration,
) -> Option<Outcome<'a>> {
    let (id, step) = (bead.id.to_string(), bead.pipeline.step.to_string());
    let iteration = latest.state.iteration;
    let (rule, action) = match decision {
        // 15: success, unless a check since this iteration refused (the step's own floors
        // want more).
        MonitorDecision::Success { .. } => {
            let refused = bead
                .check_since_entry()
                .is_some_and(|c| c.seq > latest.seq && c.verdict == Verdict::Refuse);
            let check = (!refused).then_some(Action::Check { bead: id, step })?;
            (Rule::LoopSuccess, check)
        }
        // 16: a limit stopped the loop.
        MonitorDecision::StopIterationLimit { .. } | MonitorDecision::StopBudget { .. } => {
            let reason = stop_reason(&step, decision);
            let park = Action::Park {
                bead: id,
                step,
                reason,
            };
            (Rule::LoopStop, park)
        }
        // Carried out already: the next iteration.
        _ if latest.effect.is_some() => return None,
        // 17: a cycle or an oscillation.
        MonitorDecision::EscalateOscillation { .. } | MonitorDecision::EscalateRepeated { .. } => {
            let escalate = Action::Escalate {
                bead: id,
                step,
                iteration,
                rule: decision.name().to_string(),
            };
            (Rule::LoopEscalate, escalate)
        }
        // 18: the score fell below the first.
        MonitorDecision::Rollback { restore, .. } => {
            let rollback = Action::Rollback {
                bead: id,
                step,
                iteration,
                restore: restore.iteration,
            };
            (Rule::LoopRollback, rollback)
        }
        // 19: the scores stopped rising.
        MonitorDecision::StepBack { last_three } => {
            let scores: Vec<String> = last_three.iter().map(|s| s.score.to_string()).collect();
            let step_back = Action::StepBack {
                bead: id,
                step,
                iteration,
                reason: format!("the last three scores ({}) did not rise", scores.join(", ")),
            };
            (Rule::LoopStepBack, step_back)
        }
        // 20: the confidence fell.
        MonitorDecision::AskUser { last_three } => {
            return Some(ask(
                ix,
                bead,
                last_three[0].iteration,
                iteration,
                last_three,
            ));
        }
        MonitorDecision::Continue {} => return None,
    };
    Some(Outcome::Act(rule, action))
}

/// Rule 20: the monitor asks a person about the confidences `c` of iterations `from`–`to`: the
/// node rests `awaiting-human` with the question, or, in a run with no person, is parked.
fn ask<'a>(
    ix: &Index<'a>,
    bead: &'a Bead,
    from: u32,
    to: u32,
    c: &[crate::policy::monitor::Confident],
) -> Outcome<'a> {
    let step = bead.pipeline.step.to_string();
    if ix.snapshot.limits.no_person {
        return Outcome::Act(
            Rule::LoopAsk,
            Action::Park {
                bead: bead.id.to_string(),
                step,
                reason: format!(
                    "the pass monitor asked a person (the agent's confidence fell over \
                     iterations {from}–{to}) and this run has none (`splice exec`)"
                ),
            },
        );
    }
    let (level, source) = resolve_autonomy(ix, bead);
    let c: Vec<String> = c.iter().map(|c| format!("{}", c.confidence)).collect();
    Outcome::Rest(
        Rule::LoopAsk,
        Rest::AwaitingHuman {
            gate: None,
            step: step.into(),
            autonomy: level,
            autonomy_source: source.label().into(),
            relaxes: None,
            question: Some(format!(
                "the agent's confidence fell over iterations {from}–{to} ({}): continue with \
             guidance (`splice transition guide --bead {id} --text TEXT`) or cancel (`splice \
             cancel {id} --reason R`)",
                c.join(" > "),
                id = bead.id
            )),
            land: None,
        },
    )
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
