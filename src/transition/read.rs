//! Read-only verbs: `show`, `step`, `kind`, `autonomy`, `target`, `delivery`. They never lock and
//! never recover; a rename makes every file they read whole.

use serde::Serialize;

use super::{ancestors_unlocked, defaults};
use crate::error::Result;
use crate::model::bead::{DeliveryMethod, Kind, Status};
use crate::model::{Autonomy, Bead};
use crate::policy::Lineage;
use crate::store::Store;
use crate::worktree::current_branch;

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

impl Query {
    /// The verb's name (`transition step`) and `show --field`'s value.
    pub fn name(self) -> &'static str {
        match self {
            Query::Show => "show",
            Query::Step => "step",
            Query::Kind => "kind",
            Query::Autonomy => "autonomy",
            Query::Target => "target",
            Query::Delivery => "delivery",
        }
    }
}

/// A read-only verb's answer.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum Answer {
    /// `show`: the bead as stored.
    Show(Box<Bead>),
    Step {
        bead: String,
        step: String,
        route: String,
        status: Status,
        seq: u64,
    },
    Kind {
        bead: String,
        kind: Kind,
    },
    /// The resolved level, the node (or `config`, `default`) that supplied it, and the node's own.
    Autonomy {
        bead: String,
        autonomy: Autonomy,
        source: String,
        own: Option<Autonomy>,
    },
    /// `target`: the branch the node's work lands on, resolved through its lineage.
    Target {
        bead: String,
        target: Option<String>,
    },
    /// `delivery`: how the node's work lands, resolved through its lineage.
    Delivery {
        bead: String,
        delivery: DeliveryMethod,
    },
}

pub fn query(store: &Store, id: &str, what: Query) -> Result<Answer> {
    let bead = store.read_bead(id)?;
    let id = id.to_string();
    Ok(match what {
        Query::Show => Answer::Show(Box::new(bead)),
        Query::Step => Answer::Step {
            bead: id,
            step: bead.pipeline.step.to_string(),
            route: bead.pipeline.route.to_string(),
            status: bead.status,
            seq: bead.pipeline.seq,
        },
        Query::Kind => Answer::Kind {
            bead: id,
            kind: bead.pipeline.kind,
        },
        Query::Autonomy | Query::Target | Query::Delivery => {
            let config = store.config()?;
            let branch = current_branch(store.repo());
            let ancestors = ancestors_unlocked(store, &bead)?;
            let lineage = Lineage::new(&ancestors, defaults(&config, &branch));
            if what == Query::Autonomy {
                let (level, source) = lineage.autonomy(&bead);
                Answer::Autonomy {
                    bead: id,
                    autonomy: level,
                    source: source.label(),
                    own: bead.pipeline.autonomy,
                }
            } else if what == Query::Target {
                Answer::Target {
                    bead: id,
                    target: lineage.target(&bead).map(str::to_string),
                }
            } else {
                Answer::Delivery {
                    bead: id,
                    delivery: lineage.delivery(&bead),
                }
            }
        }
    })
}
