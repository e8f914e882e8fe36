//! `record-exit` (a dispatch's typed exit, by the holder that dispatched) and `record-run` (a
//! pass's envelope on the scope root).

use serde_json::{Value, json};

use super::{Ctx, Outcome, require_seq};
use crate::error::{Error, Result};
use crate::model::Usage;
use crate::model::bead::{ExitKind, ExitRecord};

/// What a dispatch left.
#[derive(Clone, Debug)]
pub struct ExitArgs {
    pub exit: ExitKind,
    pub code: Option<i32>,
    pub log: Option<String>,
    pub usage: Option<Usage>,
}

/// Record how the holder's dispatch on the current step ended.
pub fn record_exit(ctx: &Ctx, id: &str, args: ExitArgs) -> Result<Outcome> {
    let Some(holder) = ctx.holder.clone() else {
        return Err(Error::Invalid(
            "record-exit needs --holder (or SPLICE_HOLDER)".into(),
        ));
    };
    ctx.store.transact("record-exit", &holder, |tx| {
        let mut bead = tx.read(id)?;
        require_seq(&bead, ctx.expect_seq)?;
        if bead.pipeline.lease.as_ref().map(|l| l.holder.as_str()) != Some(holder.as_str()) {
            return Err(Error::refused(format!("bead {id} is not claimed by {holder}")));
        }
        let Some(dispatch) = bead.pipeline.last_dispatch.clone().filter(|d| d.holder == holder) else {
            return Err(Error::refused(format!(
                "bead {id} has no dispatch by {holder} to record an exit for"
            )));
        };
        let proposed = bead
            .pipeline
            .proposal
            .as_ref()
            .is_some_and(|p| p.step == dispatch.step && p.seq > dispatch.seq);
        let now = tx.now.clone();
        let seq = bead.bump(&now);
        if let Some(usage) = &args.usage {
            Usage::accumulate(&mut bead.pipeline.usage, usage);
        }
        bead.push_exit(ExitRecord {
            step: dispatch.step.clone(),
            attempt: dispatch.attempt,
            seq,
            exit: args.exit,
            code: args.code,
            proposed,
            log: args.log.clone(),
            usage: args.usage.clone(),
            at: now,
        });
        tx.set_reason(format!("{} attempt {} exited {:?}", dispatch.step, dispatch.attempt, args.exit));
        tx.put(bead);
        Ok(Outcome::ok(json!({
            "bead": id, "step": dispatch.step, "attempt": dispatch.attempt, "exit": args.exit, "proposed": proposed,
        })))
    })
}

/// Record a pass's envelope as the scope root's `driver_last`.
pub fn record_run(ctx: &Ctx, id: &str, envelope: Value) -> Result<Outcome> {
    ctx.store.transact("record-run", &ctx.actor(), |tx| {
        let mut bead = tx.read(id)?;
        let now = tx.now.clone();
        bead.bump(&now);
        let status = envelope.get("status").cloned().unwrap_or(Value::Null);
        bead.pipeline.driver_last = Some(envelope.clone());
        tx.set_reason(format!("run status {status}"));
        tx.put(bead);
        Ok(Outcome::ok(
            json!({ "bead": id, "recorded": true, "status": status }),
        ))
    })
}

#[cfg(test)]
mod tests {
    use crate::model::Usage;

    #[test]
    fn unknown_cost_stays_unknown_and_counts_saturate() {
        let mut total = None;
        let one = |tokens: u64, cost: Option<f64>| Usage {
            input_tokens: tokens,
            cost_usd: cost,
            ..Usage::default()
        };
        Usage::accumulate(&mut total, &one(10, Some(0.5)));
        Usage::accumulate(&mut total, &one(5, None));
        let t = total.clone().unwrap();
        assert_eq!(t.input_tokens, 15);
        assert_eq!(t.cost_usd, None);
        Usage::accumulate(&mut total, &one(u64::MAX, Some(1.0)));
        let t = total.unwrap();
        assert_eq!(t.cost_usd, None);
        assert_eq!(t.input_tokens, u64::MAX);
    }
}
