//! `split`: create a node's children in one journal record, each with provenance naming the
//! split that created it. A node splits once, at the manifest's step with role `split` (the
//! default manifest's `to-issues`).

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{
    Caller, Ctx, Refusal, Verb, create::normalize_scenarios, next_seq, require_lease_free_for,
    require_open,
};
use crate::error::{Error, Result};
use crate::model::bead::{Dependency, Kind, Provenance, SplitRecord};
use crate::model::{Bead, Manifest, Role, Text};
use crate::store::{Change, Reads, ids};

/// One child in the `--children` file (and, inline, in a proposal file's `split` line).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ChildSpec {
    pub title: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub scenarios: Vec<String>,
    #[serde(default)]
    pub files: Vec<String>,
    /// Indexes (0-based) of earlier children this one waits for.
    #[serde(default)]
    pub depends_on: Vec<usize>,
    #[serde(default)]
    pub priority: Option<i64>,
}

/// Read and validate a children file. Problems name the file and the child.
pub fn read_children(path: &Path) -> Result<Vec<ChildSpec>> {
    let text = crate::safe_read::read_text(path, crate::safe_read::INPUT)?;
    let children: Vec<ChildSpec> = serde_json::from_str(&text).map_err(|e| {
        Error::bad_file(
            path,
            format!(
                "expected a JSON array of {{title, description, scenarios, files, depends_on}}: {e}"
            ),
        )
    })?;
    check_children(&children).map_err(|msg| Error::bad_file(path, msg))?;
    Ok(children)
}

/// The checks a children list passes, wherever it comes from (a file, a proposal line): the
/// problem names the child by its JSON path (`[2].title`).
pub fn check_children(children: &[ChildSpec]) -> std::result::Result<(), String> {
    if children.is_empty() {
        return Err("the children list is empty".into());
    }
    for (i, child) in children.iter().enumerate() {
        if child.title.trim().is_empty() {
            return Err(format!("[{i}].title: empty title"));
        }
        if let Some(bad) = child.depends_on.iter().find(|d| **d >= i) {
            return Err(format!(
                "[{i}].depends_on: {bad} is not an earlier child (indexes are 0-based)"
            ));
        }
        if let Some(bad) = child
            .files
            .iter()
            .find(|f| !crate::floors::is_relative_inside(f))
        {
            return Err(format!(
                "[{i}].files: {bad:?} must be a repository-relative path without `..`"
            ));
        }
        normalize_scenarios(&child.scenarios).map_err(|e| format!("[{i}].scenarios: {e}"))?;
    }
    Ok(())
}

/// A split: the children created, in order.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct SplitDone {
    pub bead: String,
    pub children: Vec<String>,
}

/// Split `id` into `children`, all created in one transition.
pub fn split(ctx: &Ctx, id: &str, children: &[ChildSpec]) -> Result<SplitDone> {
    ctx.admit(Verb::Split)?;
    let prepared = Prepared::new(ctx, children)?;
    let (children, entry, split_step) =
        (&prepared.children, prepared.entry(), prepared.split_step());
    let ids = (1..=children.len()).map(|i| ids::child_id(id, i)).collect();
    let reads = Reads::subject(id).probing(ids);
    let config = ctx.store.config()?;
    let branch = crate::worktree::current_branch(ctx.store.repo());
    // The integration branch is made before the children name it (it is the root's own branch,
    // there already once the root was dispatched).
    let defaults = super::defaults(&config, &branch);
    // A bead that cannot be read is refused under the lock, as always.
    if let Ok(parent) = ctx.store.read_bead(id)
        && let (Some(integration), Some(target)) = (
            integration_branch(&parent, &defaults),
            crate::policy::Lineage::new(&[], defaults).target(&parent),
        )
    {
        ensure_branch(ctx.store.repo(), &integration, target)?;
    }
    ctx.apply(Verb::Split, &reads, |fresh, who| {
        let input = SplitInput {
            children,
            entry,
            taken: &fresh.taken,
            split_step,
        };
        let mut change = plan(&input, who, &fresh.subject, &ctx.now)?;
        let defaults = super::defaults(&config, &branch);
        if let Some(branch) = integration_branch(&fresh.subject, &defaults) {
            aim_children(&mut change.beads, id, &branch);
        }
        Ok(change)
    })
}

/// The branch a campaign root integrates on when it does not integrate on its target
/// ([`crate::policy::Lineage::integrates_on_own_branch`]): its own, `splice/<id>`, where its
/// pieces land unattended; its integrate step lands that branch on the main line behind a
/// person's landing approval (`land.rs`).
pub fn integration_branch(
    root: &Bead,
    defaults: &crate::policy::lineage::Defaults,
) -> Option<String> {
    crate::policy::Lineage::new(&[], *defaults)
        .integrates_on_own_branch(root)
        .then(|| crate::worktree::branch_name(&root.id))
}

/// Make the local branch `branch` at `target`'s tip, unless it exists.
pub(super) fn ensure_branch(repo: &Path, branch: &str, target: &str) -> Result<()> {
    let git = crate::worktree::open_repo(repo)?;
    if git.find_branch(branch, git2::BranchType::Local).is_ok() {
        return Ok(());
    }
    let tip = crate::worktree::resolve(&git, target)?;
    let commit = git
        .find_commit(tip)
        .map_err(|e| Error::Invalid(e.to_string()))?;
    git.branch(branch, &commit, false)
        .map_err(|e| Error::Invalid(format!("cannot make the integration branch {branch}: {e}")))?;
    Ok(())
}

/// The children of `parent` among `beads` target `branch`.
pub(super) fn aim_children(beads: &mut [Bead], parent: &str, branch: &str) {
    for b in beads
        .iter_mut()
        .filter(|b| b.parent.as_deref() == Some(parent))
    {
        b.pipeline.target = Some(branch.into());
    }
}

/// What a split and a re-split read before the lock: the manifest (for the leaf route's entry
/// step, where every child starts, and the split step) and the children, their scenario ids
/// normalized.
pub(super) struct Prepared {
    manifest: Manifest,
    pub children: Vec<ChildSpec>,
}

impl Prepared {
    pub(super) fn new(ctx: &Ctx, children: &[ChildSpec]) -> Result<Prepared> {
        let manifest = ctx.store.manifest()?;
        if manifest.entry_step(Kind::Leaf.route()).is_none() {
            return Err(Error::Invalid("the manifest has no leaf route".into()));
        }
        let mut children = children.to_vec();
        for child in &mut children {
            child.scenarios = normalize_scenarios(&child.scenarios)?;
        }
        Ok(Prepared { manifest, children })
    }

    pub(super) fn entry(&self) -> &str {
        // Checked in `new`.
        self.manifest
            .entry_step(Kind::Leaf.route())
            .unwrap_or_default()
    }

    pub(super) fn split_step(&self) -> Option<&str> {
        self.manifest
            .step_with(Role::Split)
            .map(|s| s.name.as_str())
    }
}

/// What a split plan needs besides the parent.
#[derive(Clone, Copy, Debug)]
pub struct SplitInput<'a> {
    /// The children, their scenario ids normalized.
    pub children: &'a [ChildSpec],
    /// The leaf route's entry step, where every child starts.
    pub entry: &'a str,
    /// Which of the children's ids are taken already.
    pub taken: &'a BTreeSet<String>,
    /// The manifest's step with role `split`, the only step a node splits at.
    pub split_step: Option<&'a str>,
}

/// Split `parent` into `input.children`: the children's after-images first, then the parent's.
pub fn plan(
    input: &SplitInput,
    who: Caller,
    parent: &Bead,
    now: &str,
) -> Result<Change<SplitDone>, Refusal> {
    let id = &parent.id;
    who.admit(Verb::Split)?;
    require_open(parent)?;
    require_lease_free_for(parent, who.holder)?;
    if parent.pipeline.kind == Kind::Leaf {
        return Err(Refusal::LeafSplit {
            bead: id.to_string(),
        });
    }
    if let Some(split) = &parent.pipeline.split {
        return Err(Refusal::AlreadySplit {
            bead: id.to_string(),
            children: split.children.iter().map(|c| c.to_string()).collect(),
            seq: split.seq,
        });
    }
    if input.split_step != Some(parent.pipeline.step.as_str()) {
        return Err(Refusal::NotASplitStep {
            bead: id.to_string(),
            step: parent.pipeline.step.to_string(),
            split_step: input.split_step.map(str::to_string),
        });
    }
    let seq = next_seq(parent);
    let mut beads = Vec::with_capacity(input.children.len() + 1);
    for (i, spec) in input.children.iter().enumerate() {
        let child_id = ids::child_id(id, i + 1);
        if input.taken.contains(&child_id) {
            return Err(Refusal::ChildExists { child: child_id });
        }
        beads.push(child(
            parent,
            spec,
            child_id,
            (seq, i + 1, 0),
            input.entry,
            now,
        ));
    }
    let children: Vec<String> = beads.iter().map(|b| b.id.to_string()).collect();
    let mut after = parent.clone();
    after.pipeline.split = Some(Box::new(SplitRecord {
        children: children.iter().map(Text::from).collect(),
        seq,
    }));
    beads.push(after);
    Ok(Change {
        beads,
        reason: Some(format!("split into {} children", children.len())),
        output: SplitDone {
            bead: id.to_string(),
            children,
        },
    })
}

/// The `index`-th child of `parent`'s split at `seq`, a new leaf at `entry`. The split's
/// children are numbered after `offset` (0 for a first split; a re-split continues after the
/// children it replaces), and so are the ids its `depends_on` indexes name.
pub(super) fn child(
    parent: &Bead,
    spec: &ChildSpec,
    child_id: String,
    (seq, index, offset): (u64, usize, usize),
    entry: &str,
    now: &str,
) -> Bead {
    let mut child = Bead::new(child_id, spec.title.clone(), spec.description.clone(), now);
    child.parent = Some(parent.id.clone());
    child.priority = spec.priority.unwrap_or(parent.priority);
    child.dependencies = spec
        .depends_on
        .iter()
        .map(|d| Dependency {
            depends_on_id: ids::child_id(&parent.id, offset + d + 1).into(),
            dep_type: "blocks".into(),
            extra: Default::default(),
        })
        .collect();
    let child_seq = next_seq(&child);
    let p = &mut child.pipeline;
    p.kind = Kind::Leaf;
    p.route = Kind::Leaf.route().into();
    p.scenarios = spec.scenarios.clone().into();
    p.files = spec.files.iter().map(|f| f.as_str().into()).collect();
    p.provenance = Some(Box::new(Provenance {
        split_by: parent.id.to_string(),
        seq,
        index,
    }));
    child.enter_step(entry, child_seq, now);
    child
}
