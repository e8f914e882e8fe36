//! Read-only verbs: `show`, `step`, `kind`, `autonomy`, `target`, `delivery`. They never lock and
//! never recover; a rename makes every file they read whole.

use serde_json::{Value, json};

use super::settings::resolved_delivery;
use super::{Ctx, ancestors_unlocked, resolve_autonomy};
use crate::error::Result;

/// Which read-only verb.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    Show,
    Step,
    Kind,
    Autonomy,
    Target,
    Delivery,
}

pub fn query(ctx: &Ctx, id: &str, what: Query) -> Result<Value> {
    let bead = ctx.store.read_bead(id)?;
    Ok(match what {
        Query::Show => serde_json::to_value(&bead).unwrap_or(Value::Null),
        Query::Step => json!({
            "bead": id, "step": bead.pipeline.step, "route": bead.pipeline.route,
            "status": bead.status, "seq": bead.pipeline.seq,
        }),
        Query::Kind => json!({ "bead": id, "kind": bead.pipeline.kind }),
        Query::Autonomy => {
            let config = ctx.store.config()?;
            let lineage = ancestors_unlocked(ctx.store, &bead)?;
            let (level, source) = resolve_autonomy(&bead, &lineage, config.autonomy.default);
            json!({ "bead": id, "autonomy": level, "source": source.label(), "own": bead.pipeline.autonomy })
        }
        Query::Target | Query::Delivery => {
            let config = ctx.store.config()?;
            let lineage = ancestors_unlocked(ctx.store, &bead)?;
            let (target, method) = resolved_delivery(&bead, &lineage, &config);
            json!({ "bead": id, "target": target, "delivery": method })
        }
    })
}
