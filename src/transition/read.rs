//! Read-only verbs: `show`, `step`, `kind`, `autonomy`, `target`, `delivery`. They never lock and
//! never recover; a rename makes every file they read whole.

use serde_json::{Value, json};

use super::{Ctx, ancestors_unlocked, create::current_branch, defaults};
use crate::error::Result;
use crate::policy::Lineage;

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
        Query::Autonomy | Query::Target | Query::Delivery => {
            let config = ctx.store.config()?;
            let branch = current_branch(ctx.store);
            let ancestors = ancestors_unlocked(ctx.store, &bead)?;
            let lineage = Lineage::new(&ancestors, defaults(&config, &branch));
            if what == Query::Autonomy {
                let (level, source) = lineage.autonomy(&bead);
                json!({ "bead": id, "autonomy": level, "source": source.label(), "own": bead.pipeline.autonomy })
            } else {
                json!({ "bead": id, "target": lineage.target(&bead), "delivery": lineage.delivery(&bead) })
            }
        }
    })
}
