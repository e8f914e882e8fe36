//! Build a [`Snapshot`] from the state directory: one directory read of the beads (in
//! parallel), one of the worktrees, the manifest and the config. No lock, no subprocess.

use std::collections::{HashMap, HashSet};

use crate::clock;
use crate::error::{Error, Result};
use crate::model::snapshot::SNAPSHOT_VERSION;
use crate::model::{Bead, Counters, Limits, Snapshot};
use crate::store::Store;

/// Who is asking, and which run.
#[derive(Clone, Debug, Default)]
pub struct Identity {
    pub holder: String,
    pub run: String,
}

/// Read the state into a snapshot. `scope` keeps that bead and its descendants.
pub fn build(store: &Store, scope: Option<&str>, who: Identity) -> Result<Snapshot> {
    let manifest = store.manifest()?;
    let config = store.config()?;
    let beads = store.read_all()?;
    let (beads, ancestors) = match scope {
        Some(root) => in_scope(beads, root)?,
        None => (beads, Vec::new()),
    };
    let ids: HashSet<&str> = beads.iter().map(|b| b.id.as_str()).collect();
    let worktrees = crate::worktree::list(&store.worktrees_dir())?
        .into_iter()
        .filter(|w| ids.contains(w.as_str()))
        .collect();
    let limits = Limits {
        max_passes: config.limits.max_passes,
        token_budget: config.limits.token_budget,
        wall_time_s: config.limits.wall_time_s,
        jobs: config.limits.jobs.unwrap_or(1),
    };
    Ok(Snapshot {
        version: SNAPSHOT_VERSION,
        now: clock::now_string()?,
        holder: who.holder,
        run: who.run,
        scope: scope.map(str::to_string),
        limits,
        counters: Counters::default(),
        autonomy_default: config.autonomy.default,
        delivery_target: config.delivery.target,
        delivery_method: config.delivery.method,
        branch: crate::worktree::current_branch(store.repo()),
        ancestors,
        worktrees,
        manifest,
        beads,
    })
}

/// `root` and every bead below it via `parent`, in id order; and `root`'s ancestors, nearest
/// first (what the scope inherits from).
fn in_scope(beads: Vec<Bead>, root: &str) -> Result<(Vec<Bead>, Vec<Bead>)> {
    if !beads.iter().any(|b| b.id == root) {
        return Err(Error::Invalid(format!(
            "--scope {root}: no such bead (see `splice status` for the ids)"
        )));
    }
    let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
    for b in &beads {
        if let Some(parent) = b.parent.as_deref() {
            children.entry(parent).or_default().push(b.id.as_str());
        }
    }
    let mut keep: HashSet<String> = HashSet::new();
    let mut stack = vec![root];
    while let Some(id) = stack.pop() {
        // A parent cycle in hand-edited files must not loop.
        if keep.insert(id.to_string()) {
            stack.extend(children.get(id).into_iter().flatten().copied());
        }
    }
    let by_id: HashMap<&str, &Bead> = beads.iter().map(|b| (b.id.as_str(), b)).collect();
    let ancestors: Vec<Bead> = by_id
        .get(root)
        .map(|r| {
            crate::policy::lineage::chain(r, |id| by_id.get(id).copied())
                .skip(1)
                .take_while(|a| !keep.contains(&a.id))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let beads = beads.into_iter().filter(|b| keep.contains(&b.id)).collect();
    Ok((beads, ancestors))
}
