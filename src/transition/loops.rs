//! A loop step's verbs (issue 13, `docs/monitor.md`): `iterate` appends a measured iteration to
//! the node's trajectory (runner), `loop-effect` records what the runner did about the
//! monitor's decision after it (runner: escalate, roll back, step back), and `guide` is a
//! person's answer when the monitor asks (person). Each is a pure plan through the one shell,
//! journaled like every other verb.

use serde::Serialize;

use super::{
    Caller, Ctx, Refusal, Verb, next_seq, require_lease_free_for, require_open, require_step,
};
use crate::error::{Error, Result};
use crate::model::manifest::LoopSpec;
use crate::model::trajectory::{
    Effect, Escalation, Iteration, IterationState, MAX_TRAJECTORY, RevisionContext,
};
use crate::model::{Bead, Manifest};
use crate::policy::monitor::{self, MonitorDecision};
use crate::store::{Change, Reads};

/// One measured iteration, as the runner hands it to `iterate`.
#[derive(Clone, Debug)]
pub struct IterateArgs {
    pub step: String,
    pub attempt: u32,
    pub started_at: String,
    pub state: IterationState,
    pub context: RevisionContext,
    pub snapshot: Option<String>,
    /// The run's `--max-turns`, for the recorded decision.
    pub max_turns: Option<u32>,
}

/// A recorded iteration.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Iterated {
    pub bead: String,
    pub step: String,
    pub iteration: u32,
    /// What it measured.
    pub state: IterationState,
    pub score: Option<i64>,
    /// The monitor's decision after it, with the rule's evidence and the score history.
    pub monitor: serde_json::Value,
    pub seq: u64,
}

/// Append a measured iteration to the node's trajectory. Only the holder of the node's claim
/// (the runner whose dispatch it was) may.
pub fn iterate(ctx: &Ctx, id: &str, args: &IterateArgs) -> Result<Iterated> {
    let manifest = ctx.store.manifest()?;
    ctx.apply(Verb::Iterate, &Reads::subject(id), |fresh, who| {
        Ok(plan_iterate(
            args,
            who,
            &fresh.subject,
            &manifest,
            &ctx.now,
        )?)
    })
}

fn loop_of<'m>(manifest: &'m Manifest, bead: &Bead, step: &str) -> Result<&'m LoopSpec, Refusal> {
    manifest
        .step(step)
        .and_then(|s| s.loop_.as_ref())
        .ok_or_else(|| Refusal::NotALoop {
            bead: bead.id.to_string(),
            step: step.to_string(),
        })
}

pub fn plan_iterate(
    args: &IterateArgs,
    who: Caller,
    bead: &Bead,
    manifest: &Manifest,
    now: &str,
) -> Result<Change<Iterated>, Refusal> {
    who.admit(Verb::Iterate)?;
    require_open(bead)?;
    require_step(bead, &args.step)?;
    let spec = loop_of(manifest, bead, &args.step)?;
    // The dispatch's own runner, while it still holds the claim.
    if who.holder.is_none() || bead.pipeline.lease.is_none() {
        return Err(Refusal::NoDispatch {
            bead: bead.id.to_string(),
            holder: who.holder.unwrap_or("(none)").to_string(),
        });
    }
    require_lease_free_for(bead, who.holder)?;
    let its: Vec<&Iteration> = bead.iterations_since_entry().collect();
    let iteration = u32::try_from(its.len())
        .unwrap_or(u32::MAX)
        .saturating_add(1);
    let mut state = args.state.clone();
    state.iteration = iteration;
    let settings = spec.settings(args.max_turns);
    let score = (!state.stage_failed).then(|| monitor::score(&state, &settings.weights));
    let mut states: Vec<&Iteration> = its;
    let seq = next_seq(bead);
    let entry = Iteration {
        step: args.step.clone(),
        seq,
        attempt: args.attempt,
        started_at: args.started_at.clone(),
        at: now.to_string(),
        state,
        score,
        monitor: serde_json::Value::Null,
        context: args.context.clone(),
        snapshot: args.snapshot.clone(),
        effect: None,
    };
    states.push(&entry);
    let input = monitor::input_of(spec, args.max_turns, &states);
    let decision = serde_json::to_value(monitor::report(&input)).unwrap_or_default();
    let mut entry = entry.clone();
    entry.monitor = decision.clone();
    let name = decision
        .get("decision")
        .and_then(|d| d.as_str())
        .unwrap_or("continue")
        .to_string();
    let state = entry.state.clone();
    let mut after = bead.clone();
    after.pipeline.trajectory.push(entry);
    let extra = after
        .pipeline
        .trajectory
        .len()
        .saturating_sub(MAX_TRAJECTORY);
    after.pipeline.trajectory.drain(..extra);
    let score_text = score.map_or("stage failed".to_string(), |s| format!("score {s}"));
    let reason = format!(
        "iteration {iteration} of {}: {score_text}; monitor: {name}",
        args.step
    );
    let output = Iterated {
        bead: bead.id.to_string(),
        step: args.step.clone(),
        iteration,
        state,
        score,
        monitor: decision,
        seq,
    };
    Ok(Change::one(after, Some(reason), output))
}

/// What the runner did about an iteration's monitor decision.
#[derive(Clone, Debug)]
pub enum EffectArgs {
    /// Escalate to `command` (the config's `[agent] escalation_command`, if any).
    Escalate {
        rule: String,
        command: Option<Vec<String>>,
    },
    RolledBack {
        restored: u32,
        snapshot: String,
    },
    SteppedBack {
        root_cause: String,
        tokens: u64,
        cost_usd: f64,
    },
}

/// A recorded effect.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Effected {
    pub bead: String,
    pub step: String,
    pub iteration: u32,
    pub effect: Effect,
}

/// Record `effect` on iteration `iteration` of the node's `step`, its latest.
pub fn loop_effect(
    ctx: &Ctx,
    id: &str,
    step: &str,
    iteration: u32,
    effect: &EffectArgs,
) -> Result<Effected> {
    let manifest = ctx.store.manifest()?;
    ctx.apply(Verb::LoopEffect, &Reads::subject(id), |fresh, who| {
        who.admit(Verb::LoopEffect)?;
        let bead = &fresh.subject;
        super::require_not_foreign(bead, who.holder)?;
        let at = Target { step, iteration };
        let effect = match effect {
            EffectArgs::Escalate { rule, command } => escalation(bead, rule, command.as_ref()),
            EffectArgs::RolledBack { restored, snapshot } => Effect::RolledBack {
                restored: *restored,
                snapshot: snapshot.clone(),
            },
            EffectArgs::SteppedBack {
                root_cause,
                tokens,
                cost_usd,
            } => Effect::SteppedBack {
                root_cause: root_cause.clone(),
                tokens: *tokens,
                cost_usd: cost_usd.max(0.0),
            },
        };
        Ok(plan_effect(bead, &manifest, &at, effect, &ctx.now)?)
    })
}

/// Which iteration an effect is about.
pub struct Target<'a> {
    pub step: &'a str,
    pub iteration: u32,
}

/// Escalate once per node: to the configured command if the node has not escalated yet, else
/// recovery context with the command kept.
fn escalation(bead: &Bead, rule: &str, command: Option<&Vec<String>>) -> Effect {
    match (&bead.pipeline.escalation, command) {
        (Some(done), _) => Effect::Recovery {
            rule: rule.to_string(),
            why: format!(
                "the node already escalated (iteration {} of {}, {}); it escalates once",
                done.iteration, done.step, done.rule
            ),
        },
        (None, None) => Effect::Recovery {
            rule: rule.to_string(),
            why: "no `[agent] escalation_command` is configured".into(),
        },
        (None, Some(cmd)) => Effect::Escalated {
            rule: rule.to_string(),
            command: cmd.clone(),
        },
    }
}

/// Record `effect` on the node's latest iteration of `at.step`, which must be `at.iteration`
/// and have none yet. An escalation also goes on the node (`pipeline.escalation`).
pub fn plan_effect(
    bead: &Bead,
    manifest: &Manifest,
    at: &Target,
    effect: Effect,
    now: &str,
) -> Result<Change<Effected>, Refusal> {
    require_open(bead)?;
    require_step(bead, at.step)?;
    loop_of(manifest, bead, at.step)?;
    let latest = bead
        .iterations_since_entry()
        .last()
        .map(|i| (i.state.iteration, i.effect.clone()));
    let stale = |why: String| Refusal::StaleIteration {
        bead: bead.id.to_string(),
        why,
    };
    match latest {
        None => return Err(stale(format!("no iteration of {} is recorded", at.step))),
        Some((n, _)) if n != at.iteration => {
            return Err(stale(format!(
                "its latest iteration of {} is {n}, not {}",
                at.step, at.iteration
            )));
        }
        Some((n, Some(done))) => {
            return Err(stale(format!(
                "iteration {n}'s decision was already carried out ({})",
                done.name()
            )));
        }
        Some(_) => {}
    }
    let mut after = bead.clone();
    if let Effect::Escalated { rule, command } = &effect {
        after.pipeline.escalation = Some(Box::new(Escalation {
            step: at.step.to_string(),
            iteration: at.iteration,
            rule: rule.clone(),
            command: command.clone(),
            at: now.to_string(),
        }));
    }
    if let Effect::Guided { text, .. } = &effect {
        after.pipeline.guidance = Some(text.clone().into());
    }
    let p = &mut after.pipeline;
    let (step, entered) = (p.step.clone(), p.entered);
    if let Some(entry) = p
        .trajectory
        .iter_mut()
        .rev()
        .find(|i| i.step == step && i.seq > entered)
    {
        entry.effect = Some(effect.clone());
    }
    let reason = format!(
        "iteration {} of {}: {}",
        at.iteration,
        at.step,
        describe(&effect)
    );
    let output = Effected {
        bead: bead.id.to_string(),
        step: at.step.to_string(),
        iteration: at.iteration,
        effect,
    };
    Ok(Change::one(after, Some(reason), output))
}

/// One line for the journal and a person.
pub fn describe(effect: &Effect) -> String {
    match effect {
        Effect::Escalated { rule, command } => {
            format!("escalated ({rule}) to `{}`", command.join(" "))
        }
        Effect::Recovery { rule, why } => {
            format!("{rule}: command kept, recovery context added ({why})")
        }
        Effect::RolledBack { restored, snapshot } => {
            format!("rolled back to iteration {restored} ({snapshot})")
        }
        Effect::SteppedBack { root_cause, .. } => format!("stepped back: {root_cause}"),
        Effect::Guided { text, by } => format!("guided by {by}: {text}"),
    }
}

/// A person's answer to the monitor's question: go on with `text` as guidance.
pub fn guide(ctx: &Ctx, id: &str, text: &str) -> Result<Effected> {
    if text.trim().is_empty() {
        return Err(Error::Invalid(
            "--text must say how the agent should go on".into(),
        ));
    }
    let manifest = ctx.store.manifest()?;
    ctx.apply(Verb::Guide, &Reads::subject(id), |fresh, who| {
        who.admit(Verb::Guide)?;
        Ok(plan_guide(&fresh.subject, &manifest, text, &ctx.now)?)
    })
}

pub fn plan_guide(
    bead: &Bead,
    manifest: &Manifest,
    text: &str,
    now: &str,
) -> Result<Change<Effected>, Refusal> {
    require_open(bead)?;
    require_lease_free_for(bead, None)?;
    let step = bead.pipeline.step.clone();
    let spec = loop_of(manifest, bead, &step)?;
    let its: Vec<&Iteration> = bead.iterations_since_entry().collect();
    let not_asking = |why: &str| Refusal::NotAsking {
        bead: bead.id.to_string(),
        why: why.to_string(),
    };
    let Some(latest) = its.last() else {
        return Err(not_asking("no iteration is recorded on its step"));
    };
    if latest.effect.is_some() {
        return Err(not_asking(
            "its latest iteration's decision was carried out",
        ));
    }
    // The decision recorded on the iteration, made with the limit of the run that measured it
    // (`--max-turns`): judged again with the manifest's own limit, a question a run asked could
    // not be answered. The monitor judges again only when none is recorded.
    let asked = match latest.monitor.get("decision").and_then(|d| d.as_str()) {
        Some(name) => name == "ask_user",
        None => matches!(
            monitor::monitor(&monitor::input_of(spec, None, &its)),
            MonitorDecision::AskUser { .. }
        ),
    };
    if !asked {
        return Err(not_asking("its latest decision is not ask_user"));
    }
    let at = Target {
        step: &step,
        iteration: latest.state.iteration,
    };
    let effect = Effect::Guided {
        text: text.to_string(),
        by: "person".into(),
    };
    plan_effect(bead, manifest, &at, effect, now)
}
