//! Autonomy resolution and gate relaxation: pure functions shared by `decide` and the writer.
//!
//! A node uses its own level, else the nearest ancestor's, else the configured default, else
//! `hitl`. `wave` relaxes spec and implement gates; `deep` also fan-out and integration (the
//! latter only with a campaign branch as target). Planning gates never relax, and a spec step
//! whose spec recorded no `leaf`/`compound` verdict always rests for a person.

use std::collections::HashMap;

use crate::model::{Autonomy, Bead, Step};

/// Where a node's level came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// This node or an ancestor set it.
    Node(String),
    /// `[autonomy] default` in the config.
    Config,
    /// Nothing set: `hitl`.
    Fallback,
}

impl Source {
    /// The node id, or `config` / `default`, for records and output.
    pub fn label(&self) -> String {
        match self {
            Source::Node(id) => id.clone(),
            Source::Config => "config".into(),
            Source::Fallback => "default".into(),
        }
    }
}

/// Resolve `bead`'s autonomy. `lookup` finds an ancestor by id (absent ancestors end the walk).
pub fn resolve<'a>(
    bead: &'a Bead,
    lookup: impl Fn(&str) -> Option<&'a Bead>,
    default: Option<Autonomy>,
) -> (Autonomy, Source) {
    let mut node = Some(bead);
    // Bound the walk so a parent cycle in hand-edited files cannot loop forever.
    for _ in 0..1024 {
        let Some(n) = node else { break };
        if let Some(level) = n.pipeline.autonomy {
            return (level, Source::Node(n.id.clone()));
        }
        node = n.parent.as_deref().and_then(&lookup);
    }
    match default {
        Some(level) => (level, Source::Config),
        None => (Autonomy::Hitl, Source::Fallback),
    }
}

/// Resolve with a map of beads by id.
pub fn resolve_in(
    bead: &Bead,
    beads: &HashMap<&str, &Bead>,
    default: Option<Autonomy>,
) -> (Autonomy, Source) {
    resolve(bead, |id| beads.get(id).copied(), default)
}

/// Branch names that are never a campaign branch.
pub fn is_mainline(target: &str) -> bool {
    matches!(target, "main" | "master")
}

/// Would `level` pass `step`'s human gate for `bead` (whose target is `target`)?
pub fn gate_relaxes(step: &Step, bead: &Bead, level: Autonomy, target: Option<&str>) -> bool {
    if step.gate.is_none() {
        return true;
    }
    if !step.relaxed_by(level) {
        return false;
    }
    let is_spec_step = step.floors.iter().any(|f| f.kind == "spec");
    if is_spec_step && !matches!(bead.pipeline.verdict.as_deref(), Some("leaf" | "compound")) {
        return false;
    }
    if step.relax_needs_branch && target.is_none_or(is_mainline) {
        return false;
    }
    true
}
