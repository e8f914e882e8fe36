//! `approve` and `reject`: a person's judgment at a human gate.

use serde_json::{Value, json};

use super::{Ctx, Outcome, advance, require_not_foreign, require_open, require_seq, require_step};
use crate::error::{Error, Result};
use crate::model::bead::{Check, GateState, Verdict};

/// Approve the pending gate on `step` and advance, without re-running floors.
pub fn approve(ctx: &Ctx, id: &str, step: &str) -> Result<Outcome> {
    ctx.person_only("approve")?;
    let manifest = ctx.store.manifest()?;
    let actor = ctx.actor();
    ctx.store.transact("approve", &actor, |tx| {
        let mut bead = tx.read(id)?;
        require_open(&bead)?;
        require_step(&bead, step)?;
        require_seq(&bead, ctx.expect_seq)?;
        require_not_foreign(&bead, ctx.holder.as_deref())?;
        if !bead
            .gate_on_step()
            .is_some_and(|g| g.state == GateState::Pending)
        {
            return Err(Error::refused(format!(
                "no gate is pending on {step} of bead {id}; a gate is pending only after \
                 `complete` passed its floors"
            )));
        }
        let now = tx.now.clone();
        let seq = bead.bump(&now);
        if let Some(gate) = bead.pipeline.gate.as_mut() {
            gate.state = GateState::Approved;
            gate.by = Some(actor.clone());
            gate.seq = seq;
            gate.at = now.clone();
        }
        let next = advance(&mut bead, &manifest, seq, &now);
        tx.set_reason(format!("{step} approved by {actor}"));
        let closed = bead.is_closed();
        tx.put(bead);
        Ok(Outcome::ok(json!({
            "bead": id, "step": step, "approved": true, "next": next, "closed": closed,
        })))
    })
}

/// Record a person's refusal of `step`'s result. The next pass treats it like a refused check and
/// re-dispatches with the reason as revision guidance.
pub fn reject(ctx: &Ctx, id: &str, step: &str, reason: &str) -> Result<Outcome> {
    ctx.person_only("reject")?;
    if reason.trim().is_empty() {
        return Err(Error::Invalid("--reason must say what is wrong".into()));
    }
    let actor = ctx.actor();
    ctx.store.transact("reject", &actor, |tx| {
        let mut bead = tx.read(id)?;
        require_open(&bead)?;
        require_step(&bead, step)?;
        require_seq(&bead, ctx.expect_seq)?;
        require_not_foreign(&bead, ctx.holder.as_deref())?;
        let now = tx.now.clone();
        let seq = bead.bump(&now);
        if bead
            .gate_on_step()
            .is_some_and(|g| g.state == GateState::Pending)
        {
            bead.pipeline.gate = None;
        }
        bead.pipeline.last_check = Some(Check {
            step: step.to_string(),
            seq,
            verdict: Verdict::Refuse,
            reason: format!("rejected by {actor}: {reason}"),
            evidence: Value::Null,
            run: Some(actor.clone()),
            awaiting_merge: false,
            at: now,
        });
        bead.pipeline.guidance = Some(reason.to_string());
        tx.set_reason(format!("{step} rejected: {reason}"));
        tx.put(bead);
        Ok(Outcome::ok(
            json!({ "bead": id, "step": step, "rejected": true, "reason": reason }),
        ))
    })
}
