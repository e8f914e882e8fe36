//! `approve` and `reject`: a person's judgment at a human gate.

use serde::Serialize;
use serde_json::Value;

use super::{
    Caller, Ctx, Refusal, Verb, advance, branch, declared, next_seq, require_not_foreign,
    require_open, require_step,
};
use crate::error::{Error, Result};
use crate::model::bead::{Check, GateLand, GateState, Verdict};
use crate::model::{Bead, Manifest};
use crate::store::{Change, Reads};

/// An approved gate.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Approved {
    pub bead: String,
    pub step: String,
    /// Always `true`.
    pub approved: bool,
    /// The step entered, or `None` when the node closed or (a landing gate) stays to land.
    pub next: Option<String>,
    pub closed: bool,
    /// A landing gate: what was approved to land. The node stays on its step, and its next
    /// check lands that commit and advances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lands: Option<GateLand>,
}

/// A recorded rejection.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Rejected {
    pub bead: String,
    pub step: String,
    /// Always `true`.
    pub rejected: bool,
    pub reason: String,
}

/// Approve the pending gate on `step` (`None`: the one pending on the bead) and advance, without
/// re-running floors.
pub fn approve(ctx: &Ctx, id: &str, step: Option<&str>) -> Result<Approved> {
    ctx.admit(Verb::Approve)?;
    let manifest = ctx.store.manifest()?;
    ctx.apply(Verb::Approve, &Reads::subject(id), |fresh, who| {
        Ok(plan_approve(
            step,
            who,
            &fresh.subject,
            &manifest,
            &ctx.now,
        )?)
    })
}

/// Approve the gate pending on `step` of `bead` (`None`: the one pending, [`gate_step`]).
pub fn plan_approve(
    step: Option<&str>,
    who: Caller,
    bead: &Bead,
    manifest: &Manifest,
    now: &str,
) -> Result<Change<Approved>, Refusal> {
    who.admit(Verb::Approve)?;
    require_open(bead)?;
    let step = gate_step(bead, step)?;
    require_step(bead, step)?;
    require_not_foreign(bead, who.holder)?;
    if !bead
        .gate_on_step()
        .is_some_and(|g| g.state == GateState::Pending)
    {
        return Err(Refusal::NothingPending {
            bead: bead.id.to_string(),
            step: step.to_string(),
        });
    }
    let actor = who.actor();
    let seq = next_seq(bead);
    let mut after = bead.clone();
    if let Some(gate) = after.pipeline.gate.as_mut() {
        gate.state = GateState::Approved;
        gate.by = Some(actor.clone());
        gate.seq = seq;
        gate.at = now.to_string();
    }
    // A route gate (a branch's `suggest_route`) switches the node; a landing gate leaves it on
    // its step for the check that lands; any other gate advances it.
    let gate = bead.gate_on_step();
    let lands = gate.and_then(|g| g.land.clone());
    let next = match (gate.and_then(|g| g.route.clone()), &lands) {
        (Some(route), _) => branch::approve_route(&mut after, manifest, &route, (seq, now)),
        (None, Some(_)) => None,
        (None, None) => advance(&mut after, manifest, seq, now),
    };
    let reason = match &lands {
        Some(l) => format!(
            "{step}: landing {} on {} approved by {actor}",
            l.sha.get(..10).unwrap_or(&l.sha),
            l.target
        ),
        None => format!("{step} approved by {actor}"),
    };
    let output = Approved {
        bead: bead.id.to_string(),
        step: step.to_string(),
        approved: true,
        next,
        closed: after.is_closed(),
        lands,
    };
    Ok(Change::one(after, Some(reason), output))
}

/// The step a gate verb acts on: the one named, else the step whose gate is pending — a bead
/// holds at most one gate, its current step's. Named none and none pending: refused, naming the
/// step the bead is at (a person names it with `--step` to reject a result no gate holds).
fn gate_step<'a>(bead: &'a Bead, named: Option<&'a str>) -> Result<&'a str, Refusal> {
    if let Some(step) = named {
        return Ok(step);
    }
    match bead.gate_on_step() {
        Some(g) if g.state == GateState::Pending => Ok(bead.pipeline.step.as_str()),
        _ => Err(Refusal::NoGatePending {
            bead: bead.id.to_string(),
            at: bead.pipeline.step.to_string(),
        }),
    }
}

/// Record a person's refusal of `step`'s result (`None`: the step whose gate is pending). The next
/// pass treats it like a refused check and re-dispatches with the reason as revision guidance.
pub fn reject(ctx: &Ctx, id: &str, step: Option<&str>, reason: &str) -> Result<Rejected> {
    ctx.admit(Verb::Reject)?;
    if reason.trim().is_empty() {
        return Err(Error::Invalid("--reason must say what is wrong".into()));
    }
    let manifest = ctx.store.manifest()?;
    ctx.apply(Verb::Reject, &Reads::subject(id), |fresh, who| {
        Ok(plan_reject(
            step,
            reason,
            who,
            &fresh.subject,
            &manifest,
            &ctx.now,
        )?)
    })
}

/// Reject `step` of `bead` for `reason`: a refused check, the reason as guidance, and a pending
/// gate withdrawn. A pending route gate rejected keeps the node on its route: it goes on as
/// declared (its step was accepted before the branch suggested the route).
pub fn plan_reject(
    step: Option<&str>,
    reason: &str,
    who: Caller,
    bead: &Bead,
    manifest: &Manifest,
    now: &str,
) -> Result<Change<Rejected>, Refusal> {
    who.admit(Verb::Reject)?;
    require_open(bead)?;
    let step = gate_step(bead, step)?;
    require_step(bead, step)?;
    require_not_foreign(bead, who.holder)?;
    let actor = who.actor();
    let seq = next_seq(bead);
    let mut after = bead.clone();
    if let Some(route) = bead.gate_on_step().and_then(|g| g.route.clone())
        && bead
            .gate_on_step()
            .is_some_and(|g| g.state == GateState::Pending)
    {
        return Ok(stay(
            step,
            &route,
            reason,
            &actor,
            bead,
            manifest,
            (seq, now),
        ));
    }
    if after
        .gate_on_step()
        .is_some_and(|g| g.state == GateState::Pending)
    {
        after.pipeline.gate = None;
    }
    after.pipeline.last_check = Some(Box::new(Check {
        step: step.to_string(),
        seq,
        verdict: Verdict::Refuse,
        reason: format!("rejected by {actor}: {reason}"),
        evidence: Value::Null,
        run: Some(actor),
        awaiting_merge: false,
        recheck: false,
        at: now.to_string(),
    }));
    after.pipeline.guidance = Some(reason.into());
    let output = Rejected {
        bead: bead.id.to_string(),
        step: step.to_string(),
        rejected: true,
        reason: reason.to_string(),
    };
    Ok(Change::one(
        after,
        Some(format!("{step} rejected: {reason}")),
        output,
    ))
}

/// A person rejected the route `route` a branch suggested: the gate closes and the node goes on
/// as its route declares.
fn stay(
    step: &str,
    route: &str,
    reason: &str,
    actor: &str,
    bead: &Bead,
    manifest: &Manifest,
    (seq, now): (u64, &str),
) -> Change<Rejected> {
    let mut after = bead.clone();
    if let Some(gate) = after.pipeline.gate.as_mut() {
        gate.state = GateState::Approved;
        gate.by = Some(actor.to_string());
        gate.seq = seq;
        gate.at = now.to_string();
    }
    let record = branch::settled(bead, "rejected", None, seq, now);
    after.pipeline.routing.push(record);
    after.pipeline.guidance = None;
    let next = declared(&mut after, manifest, "accepted", seq, now);
    let output = Rejected {
        bead: bead.id.to_string(),
        step: step.to_string(),
        rejected: true,
        reason: reason.to_string(),
    };
    let went = match (&next, &after.pipeline.dead_letter) {
        (Some(s), _) => format!("on to {s}"),
        (None, Some(_)) => "parked".to_string(),
        (None, None) => "closed".to_string(),
    };
    Change::one(
        after,
        Some(format!(
            "route {route} suggested at {step} rejected by {actor}: {reason}; stays, {went}"
        )),
        output,
    )
}
