//! `claim` and `release`: the lease that says who is acting on a node. A claim never expires;
//! only its holder releases it, or a person clears it. A dispatch's claim carries the sha256 of
//! that dispatch's credential ([`claim_for_dispatch`]): while the claim lasts, the dispatch may
//! act on this node and on no other ([`super::authority`]). Releasing or clearing a claim that
//! is not there is a no-op, both ways.

use serde::Serialize;

use super::{
    Caller, Ctx, Refusal, Verb, current_step, next_seq, require_not_foreign, require_open,
};
use crate::error::{Error, Result};
use crate::model::bead::{Dispatch, Lease, StepEntry};
use crate::model::{Bead, Step};
use crate::store::{Change, Reads};

/// What a claim asks for.
#[derive(Clone, Copy, Debug)]
pub struct ClaimArgs<'a> {
    pub holder: &'a str,
    /// Start a dispatch of the bead's current step, which the manifest defines as this (one
    /// attempt).
    pub dispatch: Option<&'a Step>,
    /// The worktree's HEAD, recorded as the commit the step started from.
    pub base: Option<&'a str>,
    /// With a dispatch: the sha256 of the dispatch's credential, put on the claim (replacing
    /// any earlier dispatch's).
    pub credential_sha256: Option<&'a str>,
    /// A run's `--max-turns`: a loop step's dispatch limit in its `max_iterations`' place.
    pub max_turns: Option<u32>,
}

/// A claim held.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Claimed {
    pub bead: String,
    pub holder: String,
    /// Always `true`.
    pub claimed: bool,
    /// Whether this call took the claim (`false`: the holder had it already).
    pub new: bool,
    /// Present when this call wrote something.
    #[serde(flatten)]
    pub wrote: Option<ClaimWrite>,
}

/// What a claim that wrote recorded.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct ClaimWrite {
    /// The attempt a dispatch claim started.
    pub attempt: Option<u32>,
    pub seq: u64,
}

/// A release (`released: false` when there was no claim to release).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Released {
    pub bead: String,
    pub released: bool,
}

/// A claim a person cleared (`cleared: null` when there was no claim to clear).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Cleared {
    pub bead: String,
    /// The holder whose claim was cleared.
    pub cleared: Option<String>,
    pub reason: String,
}

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
) -> Result<Claimed> {
    claim_with(ctx, id, holder, (dispatch, base, None), None)
}

/// The runner's claim for a dispatch whose credential hashes to `credential_sha256`: as
/// [`claim`] with `dispatch`, the hash on the claim.
/// `max_turns` is the run's `--max-turns`: a loop step's dispatch limit in its
/// `max_iterations`' place.
pub fn claim_for_dispatch(
    ctx: &Ctx,
    id: &str,
    holder: &str,
    base: Option<&str>,
    (credential_sha256, max_turns): (&str, Option<u32>),
) -> Result<Claimed> {
    claim_with(
        ctx,
        id,
        holder,
        (true, base, max_turns),
        Some(credential_sha256),
    )
}

fn claim_with(
    ctx: &Ctx,
    id: &str,
    holder: &str,
    (dispatch, base, max_turns): (bool, Option<&str>, Option<u32>),
    credential_sha256: Option<&str>,
) -> Result<Claimed> {
    if holder.trim().is_empty() {
        return Err(Error::Invalid("--holder must not be empty".into()));
    }
    let manifest = ctx.store.manifest()?;
    let named = Ctx {
        holder: Some(holder.to_string()),
        ..ctx.clone()
    };
    named.apply(Verb::Claim, &Reads::subject(id), |fresh, _| {
        let bead = &fresh.subject;
        // A step the manifest does not declare is the manifest's fault, not a refusal.
        let step = match dispatch {
            true => Some(current_step(&manifest, bead)?),
            false => None,
        };
        let args = ClaimArgs {
            holder,
            dispatch: step,
            base,
            credential_sha256,
            max_turns,
        };
        Ok(plan_claim(&args, bead, &ctx.now)?)
    })
}

/// Claim `bead` for `args.holder`, and start a dispatch when asked.
pub fn plan_claim(args: &ClaimArgs, bead: &Bead, now: &str) -> Result<Change<Claimed>, Refusal> {
    require_open(bead)?;
    require_not_foreign(bead, Some(args.holder))?;
    let already = bead.pipeline.lease.is_some();
    let mut claimed = Claimed {
        bead: bead.id.to_string(),
        holder: args.holder.to_string(),
        claimed: true,
        new: !already,
        wrote: None,
    };
    let attempt = match (args.dispatch, &bead.pipeline.dead_letter) {
        (Some(_), Some(dl)) => {
            return Err(Refusal::Parked {
                bead: bead.id.to_string(),
                reason: dl.reason.clone(),
            });
        }
        (Some(step), None) => Some(next_attempt(bead, step, args.max_turns)?),
        (None, _) if already => return Ok(Change::nothing(claimed)),
        (None, _) => None,
    };
    let seq = next_seq(bead);
    let mut after = bead.clone();
    let lease = after.pipeline.lease.get_or_insert_with(|| {
        Box::new(Lease {
            holder: args.holder.to_string(),
            since: now.to_string(),
            credential_sha256: None,
            job: None,
        })
    });
    let mut reason = None;
    if let Some(n) = attempt {
        lease.credential_sha256 = args.credential_sha256.map(str::to_string);
        let step = after.pipeline.step.clone();
        if let Some(sha) = args.base {
            record_base(&mut after, sha, now);
        }
        after.pipeline.attempts.insert(step.clone(), n);
        after.pipeline.last_dispatch = Some(Box::new(Dispatch {
            step: step.to_string(),
            attempt: n,
            seq,
            holder: args.holder.to_string(),
            at: now.to_string(),
        }));
        reason = Some(format!("dispatch {step} attempt {n}"));
    }
    claimed.wrote = Some(ClaimWrite { attempt, seq });
    Ok(Change::one(after, reason, claimed))
}

/// The attempt a dispatch of `step` would be, or the refusal when none is left.
fn next_attempt(bead: &Bead, step: &Step, max_turns: Option<u32>) -> Result<u32, Refusal> {
    let spent = match step.loop_ {
        Some(_) => bead.attempts_since_entry(),
        None => bead.attempts_on(&step.name),
    };
    let max = step.dispatch_limit(max_turns);
    if spent >= max {
        return Err(Refusal::AttemptsExhausted {
            bead: bead.id.to_string(),
            step: step.name.clone(),
            spent,
            max,
        });
    }
    Ok(bead.attempts_on(&step.name) + 1)
}

/// Record `sha` as the head the current step started from, unless one is recorded already.
fn record_base(bead: &mut Bead, sha: &str, now: &str) {
    let p = &mut bead.pipeline;
    let (step, entered) = (p.step.clone(), p.entered);
    match p
        .history
        .iter_mut()
        .rev()
        .find(|e| e.step == step && e.seq == entered)
    {
        Some(entry) if entry.head.is_none() => entry.head = Some(sha.into()),
        Some(_) => {}
        None => p.history.push(StepEntry {
            step,
            seq: entered,
            at: now.into(),
            head: Some(sha.into()),
            attempts_before: None,
        }),
    }
}

/// Release the holder's own claim. Releasing an unclaimed bead is a no-op.
pub fn release(ctx: &Ctx, id: &str, holder: &str) -> Result<Released> {
    let named = Ctx {
        holder: Some(holder.to_string()),
        ..ctx.clone()
    };
    named.apply(Verb::Release, &Reads::subject(id), |fresh, _| {
        Ok(plan_release(holder, &fresh.subject)?)
    })
}

/// Release `holder`'s claim on `bead`.
pub fn plan_release(holder: &str, bead: &Bead) -> Result<Change<Released>, Refusal> {
    let mut released = Released {
        bead: bead.id.to_string(),
        released: false,
    };
    match &bead.pipeline.lease {
        None => return Ok(Change::nothing(released)),
        Some(lease) if lease.holder != holder => {
            return Err(Refusal::HeldByOther {
                bead: bead.id.to_string(),
                holder: lease.holder.clone(),
                asker: holder.to_string(),
            });
        }
        Some(_) => {}
    }
    let mut after = bead.clone();
    after.pipeline.lease = None;
    released.released = true;
    Ok(Change::one(after, None, released))
}

/// A person clears someone else's claim (they judged the holder dead). Counts no attempt.
/// Clearing an unclaimed bead is a no-op.
pub fn clear(ctx: &Ctx, id: &str, reason: &str) -> Result<Cleared> {
    ctx.admit(Verb::ReleaseClear)?;
    if reason.trim().is_empty() {
        return Err(Error::Invalid(
            "--reason must say why the claim is cleared".into(),
        ));
    }
    let reads = Reads::subject(id);
    ctx.apply(Verb::ReleaseClear, &reads, |fresh, who| {
        Ok(plan_clear(reason, who, &fresh.subject)?)
    })
}

/// Clear whoever's claim is on `bead`, giving back the attempt its holder's dispatch counted.
pub fn plan_clear(reason: &str, who: Caller, bead: &Bead) -> Result<Change<Cleared>, Refusal> {
    who.admit(Verb::ReleaseClear)?;
    let mut after = bead.clone();
    let Some(lease) = after.pipeline.lease.take() else {
        return Ok(Change::nothing(Cleared {
            bead: bead.id.to_string(),
            cleared: None,
            reason: reason.to_string(),
        }));
    };
    // The dispatch the dead holder started counts no attempt.
    if let Some(d) = after.pipeline.last_dispatch.take()
        && d.holder == lease.holder
        && let Some(n) = after.pipeline.attempts.get_mut(&d.step)
    {
        *n = n.saturating_sub(1);
    }
    let output = Cleared {
        bead: bead.id.to_string(),
        cleared: Some(lease.holder.clone()),
        reason: reason.to_string(),
    };
    let why = format!("cleared claim of {}: {reason}", lease.holder);
    Ok(Change::one(after, Some(why), output))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-01-01T00:00:00Z";

    fn node() -> Bead {
        Bead::new("sp-t".into(), "t".into(), String::new(), "then")
    }

    fn leased(holder: &str) -> Bead {
        let mut b = node();
        b.pipeline.lease = Some(Box::new(Lease {
            holder: holder.into(),
            since: "then".into(),
            credential_sha256: None,
            job: None,
        }));
        b
    }

    #[test]
    fn claiming_again_writes_nothing_and_only_the_holder_releases() {
        let b = leased("h");
        let hold = ClaimArgs {
            holder: "h",
            dispatch: None,
            base: None,
            credential_sha256: None,
            max_turns: None,
        };
        let change = plan_claim(&hold, &b, NOW).unwrap();
        assert!(change.beads.is_empty() && !change.output.new);
        assert_eq!(
            plan_release("other", &b).unwrap_err().kind(),
            "held-by-other"
        );
        let released = plan_release("h", &b).unwrap();
        assert_eq!(released.beads[0].pipeline.lease, None);
        assert!(plan_release("h", &node()).unwrap().beads.is_empty());
    }

    #[test]
    fn a_dispatch_claim_carries_its_credentials_hash_and_the_next_replaces_it() {
        let manifest = crate::model::Manifest::default_manifest();
        let mut b = node();
        b.pipeline.step = "implement".into();
        let first = ClaimArgs {
            holder: "h",
            dispatch: manifest.step("implement"),
            base: None,
            credential_sha256: Some("hash-1"),
            max_turns: None,
        };
        let after = plan_claim(&first, &b, NOW).unwrap().beads.remove(0);
        let lease = after.pipeline.lease.clone().unwrap();
        assert_eq!(lease.credential_sha256.as_deref(), Some("hash-1"));
        let next = ClaimArgs {
            credential_sha256: Some("hash-2"),
            max_turns: None,
            ..first
        };
        let again = plan_claim(&next, &after, NOW).unwrap().beads.remove(0);
        let lease = again.pipeline.lease.clone().unwrap();
        assert_eq!(lease.credential_sha256.as_deref(), Some("hash-2"));
        assert_eq!(again.attempts_on("implement"), 2);
        // A claim without a dispatch leaves the hash alone; a release takes it away.
        let hold = ClaimArgs {
            dispatch: None,
            ..next
        };
        assert!(plan_claim(&hold, &again, NOW).unwrap().beads.is_empty());
        let released = plan_release("h", &again).unwrap().beads.remove(0);
        assert_eq!(released.pipeline.lease, None);
    }

    #[test]
    fn clearing_a_claim_that_is_not_there_is_a_no_op_as_releasing_one_is() {
        let cleared = plan_clear("dead", Caller::default(), &node()).unwrap();
        assert!(cleared.beads.is_empty());
        assert_eq!(cleared.output.cleared, None);
        let cleared = plan_clear("dead", Caller::default(), &leased("h")).unwrap();
        assert_eq!(cleared.output.cleared.as_deref(), Some("h"));
        assert_eq!(cleared.beads[0].pipeline.lease, None);
    }
}
