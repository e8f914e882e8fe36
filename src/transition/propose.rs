//! `propose`: record the artifact a step produced, awaiting acceptance by `complete`.

use serde::Serialize;

use super::{
    Caller, Ctx, Refusal, Verb, next_seq, require_lease_free_for, require_open, require_step,
};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::model::bead::Proposal;
use crate::store::{Change, Reads};

/// What a proposal carries.
#[derive(Clone, Debug, Default)]
pub struct ProposeArgs {
    pub step: String,
    pub artifact: String,
    pub result: Option<String>,
    pub pr_url: Option<String>,
    /// The agent's confidence, 0..1.
    pub confidence: Option<f64>,
}

/// A recorded proposal.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Proposed {
    pub bead: String,
    pub step: String,
    pub artifact: String,
    /// The seq the proposal was recorded at.
    pub seq: u64,
}

/// Record a proposal on the node's current step. A dispatched session names its holder and is
/// refused unless it still holds the claim; a person proposes on an unclaimed node.
pub fn propose(ctx: &Ctx, id: &str, args: ProposeArgs) -> Result<Proposed> {
    check_args(&args)?;
    ctx.apply(Verb::Propose, &Reads::subject(id), |fresh, who| {
        Ok(plan(&args, who, &fresh.subject, &ctx.now)?)
    })
}

/// The checks a proposal's arguments pass before anything is read (a cluster dispatch's
/// `propose` makes them too, before it records the proposal).
pub fn check_args(args: &ProposeArgs) -> Result<()> {
    if args.artifact.trim().is_empty() {
        return Err(Error::Invalid("--artifact must not be empty".into()));
    }
    if let Some(c) = args.confidence
        && !(c.is_finite() && (0.0..=1.0).contains(&c))
    {
        return Err(Error::Invalid(format!("--confidence {c} is outside 0..1")));
    }
    Ok(())
}

/// The proposal on `bead`'s current step, by `who`.
pub fn plan(
    args: &ProposeArgs,
    who: Caller,
    bead: &Bead,
    now: &str,
) -> Result<Change<Proposed>, Refusal> {
    who.admit(Verb::Propose)?;
    require_open(bead)?;
    require_step(bead, &args.step)?;
    require_lease_free_for(bead, who.holder)?;
    let seq = next_seq(bead);
    let mut after = bead.clone();
    after.pipeline.proposal = Some(Box::new(Proposal {
        step: args.step.clone(),
        seq,
        artifact: args.artifact.clone(),
        result: args.result.clone(),
        pr_url: args.pr_url.clone(),
        holder: who.holder.map(str::to_string),
        confidence: args.confidence,
        at: now.to_string(),
    }));
    let reason = format!("proposed {} for {}", args.artifact, args.step);
    let output = Proposed {
        bead: bead.id.to_string(),
        step: args.step.clone(),
        artifact: args.artifact.clone(),
        seq,
    };
    Ok(Change::one(after, Some(reason), output))
}
