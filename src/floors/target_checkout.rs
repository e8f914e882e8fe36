//! The integration target and its detached checkout.
//!
//! `coverage` and `suite` at integrate read the target branch's tip, since that is where the
//! children's work landed (DESIGN §6). The checkout is a git worktree at
//! `.splice/worktrees/<id>@target` with a detached HEAD, created or refreshed with git2 on every
//! check; it is the only thing floors write under `.splice/`.

use std::path::{Path, PathBuf};

use git2::{BranchType, Oid, Repository, WorktreeAddOptions, WorktreePruneOptions, build};

use super::Ctx;

/// The commit at the tip of `target`: a local branch, else any revision git can resolve
/// (`origin/main`).
pub fn target_tip(repo: &Repository, target: &str) -> Result<Oid, String> {
    if let Ok(branch) = repo.find_branch(target, BranchType::Local)
        && let Ok(commit) = branch.get().peel_to_commit()
    {
        return Ok(commit.id());
    }
    repo.revparse_single(target)
        .and_then(|o| o.peel_to_commit())
        .map(|c| c.id())
        .map_err(|e| {
            format!(
                "target `{target}` does not resolve to a commit: {}",
                e.message()
            )
        })
}

/// Is `commit` the tip of, or reachable from, `tip`?
pub fn is_on(repo: &Repository, commit: Oid, tip: Oid) -> Result<bool, String> {
    if commit == tip {
        return Ok(true);
    }
    repo.graph_descendant_of(tip, commit)
        .map_err(|e| format!("git: {}", e.message()))
}

/// A ready checkout of the target's tip.
#[derive(Debug)]
pub struct TargetCheckout {
    pub path: PathBuf,
    pub target: String,
    pub tip: String,
}

/// Create or refresh `.splice/worktrees/<id>@target` at the tip of the node's target. `Err` is a
/// plain reason: the floor cannot check.
pub fn prepare(ctx: &Ctx) -> Result<TargetCheckout, String> {
    let target = ctx.target().map(str::to_string).ok_or_else(|| {
        "no integration target: set one with `splice transition set-target`, or `[delivery] target` in config.toml".to_string()
    })?;
    let repo = Repository::discover(ctx.store.repo()).map_err(|e| {
        format!(
            "no git repository at {}: {}",
            ctx.store.repo().display(),
            e.message()
        )
    })?;
    let tip = target_tip(&repo, &target)?;
    let name = format!("{}@target", ctx.bead.id);
    let path = ctx.store.worktrees_dir().join(&name);
    checkout_detached(&repo, &name, &path, tip)?;
    Ok(TargetCheckout {
        path,
        target,
        tip: tip.to_string(),
    })
}

fn git(e: git2::Error) -> String {
    format!("git: {}", e.message())
}

/// Make `path` a worktree named `name` with HEAD detached at `tip`, its files matching `tip`
/// (untracked files removed, ignored ones such as build caches kept).
fn checkout_detached(repo: &Repository, name: &str, path: &Path, tip: Oid) -> Result<(), String> {
    let existing = path
        .is_dir()
        .then(|| Repository::open(path).ok())
        .flatten()
        .filter(|wt| wt.is_worktree());
    let wt_repo = match existing {
        Some(wt) => wt,
        None => {
            if path.exists() {
                std::fs::remove_dir_all(path)
                    .map_err(|e| format!("cannot clear {}: {e}", path.display()))?;
            }
            // A worktree record whose directory is gone blocks re-adding under the same name.
            if let Ok(stale) = repo.find_worktree(name) {
                stale
                    .prune(Some(WorktreePruneOptions::new().valid(true).locked(true)))
                    .map_err(git)?;
            }
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            // libgit2 only adds a worktree on a branch (a new one named after the worktree, as
            // the target branch may be checked out elsewhere); detach and drop it right after.
            if let Ok(mut leftover) = repo.find_branch(name, BranchType::Local) {
                leftover.delete().map_err(git)?;
            }
            let wt = repo
                .worktree(name, path, Some(&WorktreeAddOptions::new()))
                .map_err(git)?;
            Repository::open_from_worktree(&wt).map_err(git)?
        }
    };
    wt_repo.set_head_detached(tip).map_err(git)?;
    wt_repo
        .checkout_head(Some(
            build::CheckoutBuilder::new().force().remove_untracked(true),
        ))
        .map_err(git)?;
    if let Ok(mut branch) = repo.find_branch(name, BranchType::Local) {
        branch.delete().map_err(git)?;
    }
    Ok(())
}
