//! `park` (dead-letter a node for a person) and `unpark` (a person puts it back in play).

use serde::Serialize;

use super::{Caller, Ctx, Refusal, Verb, next_seq, require_not_foreign, require_open};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::store::{Change, Reads};

/// A parked node.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Parked {
    pub bead: String,
    /// Always `true`.
    pub parked: bool,
    pub step: String,
    pub reason: String,
}

/// An unparked node.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Unparked {
    pub bead: String,
    /// Always `true`.
    pub unparked: bool,
    pub step: String,
}

/// Park the node at its current step with `reason`.
pub fn park(ctx: &Ctx, id: &str, reason: &str) -> Result<Parked> {
    ctx.admit(Verb::Park)?;
    if reason.trim().is_empty() {
        return Err(Error::Invalid(
            "--reason must say why the node is parked".into(),
        ));
    }
    ctx.apply(Verb::Park, &Reads::subject(id), |fresh, who| {
        Ok(plan_park(reason, who, &fresh.subject, &ctx.now)?)
    })
}

/// Dead-letter `bead` at its current step.
pub fn plan_park(
    reason: &str,
    who: Caller,
    bead: &Bead,
    now: &str,
) -> Result<Change<Parked>, Refusal> {
    who.admit(Verb::Park)?;
    require_open(bead)?;
    require_not_foreign(bead, who.holder)?;
    if let Some(dl) = &bead.pipeline.dead_letter {
        return Err(Refusal::AlreadyParked {
            bead: bead.id.to_string(),
            reason: dl.reason.clone(),
        });
    }
    let mut after = bead.clone();
    // Inside a call, the reason recorded also names it (which route, called from where).
    let reason = after.park(&bead.pipeline.step, reason, next_seq(bead), now);
    let output = Parked {
        bead: bead.id.to_string(),
        parked: true,
        step: bead.pipeline.step.to_string(),
        reason: reason.clone(),
    };
    Ok(Change::one(after, Some(reason), output))
}

/// Unpark: reset the step's attempts and clear the last check, so the node is checked again.
pub fn unpark(ctx: &Ctx, id: &str, reason: &str) -> Result<Unparked> {
    ctx.admit(Verb::Unpark)?;
    if reason.trim().is_empty() {
        return Err(Error::Invalid(
            "--reason must say why the node may go on".into(),
        ));
    }
    ctx.apply(Verb::Unpark, &Reads::subject(id), |fresh, who| {
        Ok(plan_unpark(reason, who, &fresh.subject)?)
    })
}

/// Put `bead` back in play at its step, with fresh attempts and no last check.
pub fn plan_unpark(reason: &str, who: Caller, bead: &Bead) -> Result<Change<Unparked>, Refusal> {
    who.admit(Verb::Unpark)?;
    require_open(bead)?;
    if bead.pipeline.dead_letter.is_none() {
        return Err(Refusal::NotParked {
            bead: bead.id.to_string(),
        });
    }
    let mut after = bead.clone();
    let step = after.pipeline.step.clone();
    after.pipeline.dead_letter = None;
    after.pipeline.attempts.remove(&step);
    after.pipeline.last_check = None;
    let output = Unparked {
        bead: bead.id.to_string(),
        unparked: true,
        step: step.to_string(),
    };
    Ok(Change::one(after, Some(reason.to_string()), output))
}
