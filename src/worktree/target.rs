//! A detached checkout of the integration target's tip: `.splice/worktrees/<id>@target`, created
//! or refreshed on every call, its files matching the tip (untracked files removed, ignored ones
//! such as build caches kept).

use std::path::{Path, PathBuf};

use git2::{BranchType, Oid, Repository, WorktreeAddOptions, build};

use super::{check_id, git_at, is_worktree, open_repo, prune, resolve, target_name, target_path};
use crate::error::{Error, Result};

/// A ready checkout of a target's tip.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetCheckout {
    pub path: PathBuf,
    pub target: String,
    /// The sha HEAD is detached at.
    pub tip: String,
}

/// Create or refresh node `id`'s checkout of `target` ([`resolve`]d in the repository at
/// `repo_root`) under `worktrees_dir`.
pub fn checkout_target(
    repo_root: &Path,
    worktrees_dir: &Path,
    id: &str,
    target: &str,
) -> Result<TargetCheckout> {
    check_id(id)?;
    let _lock = super::lock(worktrees_dir)?;
    let repo = open_repo(repo_root)?;
    let tip = resolve(&repo, target)?;
    let name = target_name(id);
    let path = target_path(worktrees_dir, id);
    checkout_detached(&repo, &name, &path, tip)?;
    Ok(TargetCheckout {
        path,
        target: target.to_string(),
        tip: tip.to_string(),
    })
}

/// Make `path` a worktree named `name` with HEAD detached at `tip` and its files matching it.
fn checkout_detached(repo: &Repository, name: &str, path: &Path, tip: Oid) -> Result<()> {
    let wt_repo = if is_worktree(path) {
        Repository::open(path).map_err(|e| git_at(path, "opening the checkout", e))?
    } else {
        add_on_helper_branch(repo, name, path)?
    };
    wt_repo
        .set_head_detached(tip)
        .map_err(|e| git_at(path, &format!("detaching HEAD at {tip}"), e))?;
    super::retry_busy(|| {
        wt_repo.checkout_head(Some(
            build::CheckoutBuilder::new().force().remove_untracked(true),
        ))
    })
    .map_err(|e| git_at(path, "checking out the tip", e))?;
    delete_helper_branch(repo, name)
}

/// Add the worktree `name` at `path`, clearing whatever was there. libgit2 only adds a worktree
/// on a branch: a new one named after the worktree (the target branch itself may be checked out
/// elsewhere), which [`delete_helper_branch`] drops once HEAD is detached.
fn add_on_helper_branch(repo: &Repository, name: &str, path: &Path) -> Result<Repository> {
    if path.exists() {
        std::fs::remove_dir_all(path).map_err(|e| Error::io(path, e))?;
    }
    prune(repo, name, false)
        .map_err(|e| git_at(path, "pruning a stale worktree registration", e))?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    delete_helper_branch(repo, name)?;
    let wt = repo
        .worktree(name, path, Some(&WorktreeAddOptions::new()))
        .map_err(|e| git_at(path, "adding a worktree", e))?;
    Repository::open_from_worktree(&wt).map_err(|e| git_at(path, "opening the checkout", e))
}

fn delete_helper_branch(repo: &Repository, name: &str) -> Result<()> {
    if let Ok(mut branch) = repo.find_branch(name, BranchType::Local) {
        branch.delete()?;
    }
    Ok(())
}
