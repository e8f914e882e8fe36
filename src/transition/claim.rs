//! `claim` and `release`: the lease that says who is acting on a node. A claim never expires;
//! only its holder releases it, or a person clears it.

use serde_json::json;

use super::{Ctx, Outcome, current_step, require_not_foreign, require_open, require_seq};
use crate::error::{Error, Result};
use crate::model::bead::{Dispatch, Lease};

/// Claim `id` for `holder`. Idempotent for the same holder. With `dispatch`, the claim starts a
/// dispatch of the current step and counts one attempt on it; `base` is the worktree's HEAD,
/// recorded as the commit the step started from when none is recorded yet (resume `redo` resets
/// to it on a retry).
pub fn claim(
    ctx: &Ctx,
    id: &str,
    holder: &str,
    dispatch: bool,
    base: Option<&str>,
) -> Result<Outcome> {
    if holder.trim().is_empty() {
        return Err(Error::Invalid("--holder must not be empty".into()));
    }
    let manifest = ctx.store.manifest()?;
    ctx.store.transact("claim", holder, |tx| {
        let mut bead = tx.read(id)?;
        require_open(&bead)?;
        require_seq(&bead, ctx.expect_seq)?;
        require_not_foreign(&bead, Some(holder))?;
        let already = bead.pipeline.lease.is_some();
        let mut attempt = None;
        if dispatch {
            if let Some(dl) = &bead.pipeline.dead_letter {
                return Err(Error::refused(format!(
                    "bead {id} is parked ({}); unpark it first",
                    dl.reason
                )));
            }
            let step = current_step(&manifest, &bead)?;
            let spent = bead.attempts_on(&step.name);
            if spent >= step.max_attempts {
                return Err(Error::refused(format!(
                    "bead {id}: attempts on {} exhausted ({spent} of {})",
                    step.name, step.max_attempts
                )));
            }
            attempt = Some(spent + 1);
        } else if already {
            return Ok(Outcome::ok(json!({ "bead": id, "holder": holder, "claimed": true, "new": false })));
        }
        let now = tx.now.clone();
        let seq = bead.bump(&now);
        if !already {
            bead.pipeline.lease = Some(Lease {
                holder: holder.to_string(),
                since: now.clone(),
            });
        }
        if let Some(n) = attempt {
            let step = bead.pipeline.step.clone();
            if let Some(sha) = base {
                record_base(&mut bead, sha, &now);
            }
            bead.pipeline.attempts.insert(step.clone(), n);
            bead.pipeline.last_dispatch = Some(Dispatch {
                step: step.clone(),
                attempt: n,
                seq,
                holder: holder.to_string(),
                at: now,
            });
            tx.set_reason(format!("dispatch {step} attempt {n}"));
        }
        tx.put(bead);
        Ok(Outcome::ok(json!({
            "bead": id, "holder": holder, "claimed": true, "new": !already, "attempt": attempt, "seq": seq,
        })))
    })
}

/// Record `sha` as the head the current step started from, unless one is recorded already.
fn record_base(bead: &mut crate::model::Bead, sha: &str, now: &str) {
    let p = &mut bead.pipeline;
    let (step, entered) = (p.step.clone(), p.entered);
    match p
        .history
        .iter_mut()
        .rev()
        .find(|e| e.step == step && e.seq == entered)
    {
        Some(entry) if entry.head.is_none() => entry.head = Some(sha.to_string()),
        Some(_) => {}
        None => p.history.push(crate::model::bead::StepEntry {
            step,
            seq: entered,
            at: now.to_string(),
            head: Some(sha.to_string()),
        }),
    }
}

/// Release the holder's own claim. Releasing an unclaimed bead is a no-op.
pub fn release(ctx: &Ctx, id: &str, holder: &str) -> Result<Outcome> {
    ctx.store.transact("release", holder, |tx| {
        let mut bead = tx.read(id)?;
        require_seq(&bead, ctx.expect_seq)?;
        match &bead.pipeline.lease {
            None => return Ok(Outcome::ok(json!({ "bead": id, "released": false }))),
            Some(lease) if lease.holder != holder => {
                return Err(Error::refused(format!(
                    "bead {id} is claimed by {}, not {holder}",
                    lease.holder
                )));
            }
            Some(_) => {}
        }
        let now = tx.now.clone();
        bead.bump(&now);
        bead.pipeline.lease = None;
        tx.put(bead);
        Ok(Outcome::ok(json!({ "bead": id, "released": true })))
    })
}

/// A person clears someone else's claim (they judged the holder dead). Counts no attempt.
pub fn clear(ctx: &Ctx, id: &str, reason: &str) -> Result<Outcome> {
    ctx.person_only("release --clear")?;
    if reason.trim().is_empty() {
        return Err(Error::Invalid(
            "--reason must say why the claim is cleared".into(),
        ));
    }
    ctx.store.transact("release-clear", &ctx.actor(), |tx| {
        let mut bead = tx.read(id)?;
        require_seq(&bead, ctx.expect_seq)?;
        let Some(lease) = bead.pipeline.lease.take() else {
            return Err(Error::refused(format!("bead {id} is not claimed")));
        };
        let now = tx.now.clone();
        bead.bump(&now);
        // The dispatch the dead holder started counts no attempt.
        if let Some(d) = bead.pipeline.last_dispatch.take()
            && d.holder == lease.holder
            && let Some(n) = bead.pipeline.attempts.get_mut(&d.step)
        {
            *n = n.saturating_sub(1);
        }
        tx.set_reason(format!("cleared claim of {}: {reason}", lease.holder));
        tx.put(bead);
        Ok(Outcome::ok(
            json!({ "bead": id, "cleared": lease.holder, "reason": reason }),
        ))
    })
}
