//! `propose`: record the artifact a step produced, awaiting acceptance by `complete`.

use serde_json::json;

use super::{Ctx, Outcome, require_lease_free_for, require_open, require_seq, require_step};
use crate::error::{Error, Result};
use crate::model::bead::Proposal;

/// What a proposal carries.
#[derive(Clone, Debug, Default)]
pub struct ProposeArgs {
    pub step: String,
    pub artifact: String,
    pub result: Option<String>,
    pub pr_url: Option<String>,
}

/// Record a proposal on the node's current step. A dispatched session names its holder and is
/// refused unless it still holds the claim; a person proposes on an unclaimed node.
pub fn propose(ctx: &Ctx, id: &str, args: ProposeArgs) -> Result<Outcome> {
    if args.artifact.trim().is_empty() {
        return Err(Error::Invalid("--artifact must not be empty".into()));
    }
    ctx.store.transact("propose", &ctx.actor(), |tx| {
        let mut bead = tx.read(id)?;
        require_open(&bead)?;
        require_step(&bead, &args.step)?;
        require_seq(&bead, ctx.expect_seq)?;
        require_lease_free_for(&bead, ctx.holder.as_deref())?;
        let now = tx.now.clone();
        let seq = bead.bump(&now);
        bead.pipeline.proposal = Some(Proposal {
            step: args.step.clone(),
            seq,
            artifact: args.artifact.clone(),
            result: args.result.clone(),
            pr_url: args.pr_url.clone(),
            holder: ctx.holder.clone(),
            at: now,
        });
        tx.set_reason(format!("proposed {} for {}", args.artifact, args.step));
        tx.put(bead);
        Ok(Outcome::ok(json!({
            "bead": id, "step": args.step, "artifact": args.artifact, "seq": seq,
        })))
    })
}
