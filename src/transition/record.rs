//! `record-exit` (a dispatch's typed exit, by the holder that dispatched) and `record-run` (a
//! pass's envelope on the scope root).

use serde_json::{Map, Value, json};

use super::{Ctx, Outcome, require_seq};
use crate::error::{Error, Result};
use crate::model::bead::{ExitKind, ExitRecord};

/// What a dispatch left.
#[derive(Clone, Debug)]
pub struct ExitArgs {
    pub exit: ExitKind,
    pub code: Option<i32>,
    pub log: Option<String>,
    pub usage: Option<Value>,
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
            add_usage(&mut bead.pipeline.usage, usage);
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

/// Add one dispatch's usage to a node's totals: numbers add; a null cost makes the total cost
/// unknown (never 0).
fn add_usage(total: &mut Option<Value>, usage: &Value) {
    let Some(add) = usage.as_object() else { return };
    let mut sum: Map<String, Value> = total
        .as_ref()
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let first = total.is_none();
    for (key, value) in add {
        match (sum.get(key), value) {
            (Some(Value::Number(a)), Value::Number(b)) => {
                let v = match (a.as_u64(), b.as_u64()) {
                    (Some(x), Some(y)) => json!(x + y),
                    _ => json!(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)),
                };
                sum.insert(key.clone(), v);
            }
            (None, v) if first => {
                sum.insert(key.clone(), v.clone());
            }
            (None, Value::Number(_)) if key != "cost_usd" => {
                sum.insert(key.clone(), value.clone());
            }
            (_, Value::Null) if key == "cost_usd" => {
                sum.insert(key.clone(), Value::Null);
            }
            _ => {}
        }
    }
    *total = Some(Value::Object(sum));
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
    use super::*;

    #[test]
    fn unknown_cost_stays_unknown() {
        let mut total = None;
        add_usage(&mut total, &json!({"input_tokens": 10, "cost_usd": 0.5}));
        add_usage(&mut total, &json!({"input_tokens": 5, "cost_usd": null}));
        let t = total.unwrap();
        assert_eq!(t["input_tokens"], 15);
        assert!(t["cost_usd"].is_null());
        let mut again = Some(t);
        add_usage(&mut again, &json!({"input_tokens": 1, "cost_usd": 1.0}));
        assert_eq!(again.unwrap()["cost_usd"], Value::Null);
    }
}
