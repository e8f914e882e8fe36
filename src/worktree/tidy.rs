//! Cleaning up after a node that will not be worked on again — its route finished (the runner's
//! `cleanup-fanout`), its container closed, or a person cancelled it (`splice cancel`): one
//! function, so every path makes the same safety checks.
//!
//! Its checkouts go (the worktree and the `<id>@target` checkout: [`remove`]), its loop
//! snapshot refs unless asked to keep them, and its branch `splice/<id>` only when every commit
//! of it is on the node's target ([`delete_branch_if_on`]): a branch holding other commits is
//! kept, and the answer names it. Uncommitted files in the worktree go with it, as they do when
//! the runner cleans up.

use std::path::Path;

use serde::Serialize;

use super::{Branch, delete_branch_if_on, remove, snapshots};
use crate::error::Result;

/// What cleaning up after some nodes did, as verbs and the runner report it.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Tidied {
    /// The nodes whose checkouts were removed.
    pub removed: Vec<String>,
    /// The branches deleted: all their commits are on their target.
    pub deleted: Vec<String>,
    /// The branches kept: they hold commits that are not on their target.
    pub kept: Vec<KeptBranch>,
}

/// A branch kept because its work is not on the target.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct KeptBranch {
    pub branch: String,
    pub target: String,
    /// Its commits not on `target` (0 when the target does not resolve).
    pub commits: usize,
}

impl KeptBranch {
    /// What a person reads, with what to run once the work is not needed.
    pub fn says(&self) -> String {
        format!(
            "kept {branch}: {commits} commit(s) not on {target}; delete it with `git branch -D \
             {branch}` once they are not needed",
            branch = self.branch,
            commits = self.commits,
            target = self.target
        )
    }
}

/// Is anything of node `id`'s there to clean up: a checkout, or its branch?
pub fn has_leftovers(repo_root: &Path, worktrees_dir: &Path, id: &str) -> bool {
    if super::check_id(id).is_err() {
        return false;
    }
    let checkout = [
        super::node_path(worktrees_dir, id),
        super::target_path(worktrees_dir, id),
    ]
    .iter()
    .any(|p| std::fs::symlink_metadata(p).is_ok());
    checkout
        || git2::Repository::open(repo_root).is_ok_and(|r| {
            r.find_branch(&super::branch_name(id), git2::BranchType::Local)
                .is_ok()
        })
}

impl Tidied {
    /// Clean up after node `id`, whose work lands on `target` (its branch is kept when it has
    /// none); loop snapshot refs are kept with `keep_snapshots`.
    pub fn node(
        &mut self,
        repo_root: &Path,
        worktrees_dir: &Path,
        id: &str,
        target: Option<&str>,
        keep_snapshots: bool,
    ) -> Result<()> {
        remove(repo_root, worktrees_dir, id)?;
        self.removed.push(id.to_string());
        if !keep_snapshots {
            snapshots::delete_all(repo_root, id)?;
        }
        let Some(target) = target else {
            return Ok(());
        };
        match delete_branch_if_on(repo_root, worktrees_dir, id, target)? {
            // Another runner made its worktree again meanwhile: the next cleanup removes both.
            Branch::Absent | Branch::CheckedOut { .. } => {}
            Branch::Deleted { branch } => self.deleted.push(branch),
            Branch::Kept {
                branch,
                target,
                commits,
            } => self.kept.push(KeptBranch {
                branch,
                target,
                commits,
            }),
        }
        Ok(())
    }
}
