//! Build a [`Snapshot`] from the state directory: one directory read of the beads (in
//! parallel), one of the worktrees, the manifest and the config. No lock, no subprocess.
//!
//! A bead file that cannot be read fails no read: it goes into the snapshot's `unreadable` with
//! its error (for `decide` to rest it `escalated`), and the other beads are read as usual. In a
//! scoped snapshot an unreadable file is kept when it is the parent of a bead in scope or of the
//! scope's ancestors, or its name is a child id of the scope root (`<root>.N`); an unreadable
//! scope root is a fault naming its file.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::clock;
use crate::error::{Error, Result};
use crate::model::snapshot::{DEFAULT_BACKOFF_S, SNAPSHOT_VERSION, Unreadable};
use crate::model::{Bead, Counters, Limits, Snapshot};
use crate::store::{STATE_DIR, Store, Unread};

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
    let scan = store.scan_cached()?;
    let (beads, ancestors, unreadable) = match scope {
        Some(root) => {
            let mut unreadable = scan.unreadable;
            if let Some(at) = unreadable.iter().position(|u| u.id == root) {
                return Err(unreadable.swap_remove(at).error);
            }
            let (beads, ancestors) = in_scope(scan.beads, root)?;
            let unreadable = unreadable_in_scope(unreadable, root, &beads, &ancestors);
            (beads, ancestors, unreadable)
        }
        None => (scan.beads, Vec::new(), scan.unreadable),
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
        backoff_s: config.limits.backoff_s.unwrap_or(DEFAULT_BACKOFF_S),
        max_turns: None,
        no_person: false,
    };
    let unavailable = super::commands::unavailable(&config, &manifest);
    let mut snapshot = Snapshot {
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
        missing_targets: Vec::new(),
        unavailable,
        dead_holders: Default::default(),
        shipped: Default::default(),
        manifest,
        beads,
        unreadable: unreadable.into_iter().map(unreadable_of).collect(),
    };
    snapshot.missing_targets = missing_targets(store, &snapshot);
    snapshot.dead_holders = super::holder::dead_holders(store.dir(), &snapshot);
    snapshot.shipped = super::external::shipped(
        store.repo(),
        &config.bd.external_projects,
        snapshot.beads.iter().flat_map(|b| b.blockers()),
    );
    Ok(snapshot)
}

/// The targets `snap`'s nodes may use that name no commit in the store's repository, sorted.
/// None when there is no repository to ask: then nothing can be dispatched at all, and the
/// dispatch's fault says so (`init` refuses outside a repository).
pub fn missing_targets(store: &Store, snap: &Snapshot) -> Vec<String> {
    let Ok(repo) = crate::worktree::open_repo(store.repo()) else {
        return Vec::new();
    };
    let named: BTreeSet<&str> = snap
        .beads
        .iter()
        .chain(&snap.ancestors)
        .filter_map(|b| b.pipeline.target.as_deref())
        .chain(snap.delivery_target.as_deref())
        .chain(snap.branch.as_deref())
        .collect();
    named
        .into_iter()
        .filter(|t| crate::worktree::resolve(&repo, t).is_err())
        .map(str::to_string)
        .collect()
}

/// The snapshot's record of a file that could not be read: the error without the absolute path
/// (the file is named relative to the repository root instead).
fn unreadable_of(u: Unread) -> Unreadable {
    let error = match u.error {
        Error::BadFile { msg, .. } => msg,
        Error::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    };
    Unreadable {
        file: format!("{STATE_DIR}/beads/{}.json", u.id),
        id: u.id,
        error,
    }
}

/// The unreadable files a scoped snapshot keeps: parents of what it holds, and the scope root's
/// children by name.
fn unreadable_in_scope(
    unreadable: Vec<Unread>,
    root: &str,
    beads: &[Bead],
    ancestors: &[Bead],
) -> Vec<Unread> {
    if unreadable.is_empty() {
        return unreadable;
    }
    let parents: HashSet<&str> = beads
        .iter()
        .chain(ancestors)
        .filter_map(|b| b.parent.as_deref())
        .collect();
    let child_prefix = format!("{root}.");
    unreadable
        .into_iter()
        .filter(|u| parents.contains(u.id.as_str()) || u.id.starts_with(&child_prefix))
        .collect()
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
                .take_while(|a| !keep.contains(a.id.as_str()))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let beads = beads
        .into_iter()
        .filter(|b| keep.contains(b.id.as_str()))
        .collect();
    Ok((beads, ancestors))
}
