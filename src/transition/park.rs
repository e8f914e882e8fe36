//! `park` (dead-letter a node for a person) and `unpark` (a person puts it back in play).

use serde_json::json;

use super::{Ctx, Outcome, require_not_foreign, require_open, require_seq};
use crate::error::{Error, Result};
use crate::model::bead::DeadLetter;

/// Park the node at its current step with `reason`.
pub fn park(ctx: &Ctx, id: &str, reason: &str) -> Result<Outcome> {
    if reason.trim().is_empty() {
        return Err(Error::Invalid(
            "--reason must say why the node is parked".into(),
        ));
    }
    ctx.store.transact("park", &ctx.actor(), |tx| {
        let mut bead = tx.read(id)?;
        require_open(&bead)?;
        require_seq(&bead, ctx.expect_seq)?;
        require_not_foreign(&bead, ctx.holder.as_deref())?;
        if let Some(dl) = &bead.pipeline.dead_letter {
            return Err(Error::refused(format!(
                "bead {id} is already parked: {}",
                dl.reason
            )));
        }
        let now = tx.now.clone();
        let seq = bead.bump(&now);
        bead.pipeline.dead_letter = Some(DeadLetter {
            step: bead.pipeline.step.clone(),
            reason: reason.to_string(),
            seq,
            at: now,
        });
        tx.set_reason(reason.to_string());
        let step = bead.pipeline.step.clone();
        tx.put(bead);
        Ok(Outcome::ok(
            json!({ "bead": id, "parked": true, "step": step, "reason": reason }),
        ))
    })
}

/// Unpark: reset the step's attempts and clear the last check, so the node is checked again.
pub fn unpark(ctx: &Ctx, id: &str, reason: &str) -> Result<Outcome> {
    ctx.person_only("unpark")?;
    if reason.trim().is_empty() {
        return Err(Error::Invalid(
            "--reason must say why the node may go on".into(),
        ));
    }
    ctx.store.transact("unpark", &ctx.actor(), |tx| {
        let mut bead = tx.read(id)?;
        require_open(&bead)?;
        require_seq(&bead, ctx.expect_seq)?;
        if bead.pipeline.dead_letter.is_none() {
            return Err(Error::refused(format!("bead {id} is not parked")));
        }
        let now = tx.now.clone();
        bead.bump(&now);
        bead.pipeline.dead_letter = None;
        let step = bead.pipeline.step.clone();
        bead.pipeline.attempts.remove(&step);
        bead.pipeline.last_check = None;
        tx.set_reason(reason.to_string());
        tx.put(bead);
        Ok(Outcome::ok(
            json!({ "bead": id, "unparked": true, "step": step }),
        ))
    })
}
