//! A delivery target must name a commit when it is given: when a node is created (`init`,
//! `init-task`: `--target`, else `[delivery] target`, else the branch checked out) and when it
//! is set (`set-target`). A target that disappears later (a branch deleted) is `decide`'s: the
//! snapshot lists the targets that name no commit, and a node about to dispatch to one rests
//! `escalated` alone.
//!
//! These checks read git (through [`crate::worktree`]) before the shell, like `set-config`'s
//! check that its test paths exist; the plans stay pure.

use std::path::Path;

use super::Refusal;
use crate::model::Config;
use crate::worktree;

/// The target a new node in the repository at `repo_root` gets, checked: `given`, else the
/// config's `[delivery] target`, else the branch checked out. Refused when there is no git
/// repository, no commit, nothing naming a target, or a target that names no commit.
pub fn for_new_node(
    repo_root: &Path,
    config: &Config,
    given: Option<&str>,
) -> Result<String, Refusal> {
    let Ok(repo) = worktree::open_repo(repo_root) else {
        return Err(Refusal::NoRepository {
            dir: repo_root.to_path_buf(),
        });
    };
    let root = repo_root.to_path_buf();
    let unborn = matches!(repo.head(), Err(e) if e.code() == git2::ErrorCode::UnbornBranch);
    if unborn || repo.is_empty().unwrap_or(false) {
        return Err(Refusal::NoCommits { repo: root });
    }
    let target = given
        .map(str::to_string)
        .or_else(|| config.delivery.target.clone())
        .or_else(|| worktree::current_branch(repo_root));
    let Some(target) = target else {
        return Err(Refusal::NoTarget { repo: root });
    };
    exists_in(&repo, &root, &target)?;
    Ok(target)
}

/// Refuse unless `target` names a commit in the repository at `repo_root`.
pub fn require_exists(repo_root: &Path, target: &str) -> Result<(), Refusal> {
    let Ok(repo) = worktree::open_repo(repo_root) else {
        return Err(Refusal::NoRepository {
            dir: repo_root.to_path_buf(),
        });
    };
    exists_in(&repo, repo_root, target)
}

fn exists_in(repo: &git2::Repository, root: &Path, target: &str) -> Result<(), Refusal> {
    worktree::resolve(repo, target)
        .map(drop)
        .map_err(|_| Refusal::NoSuchTarget {
            target: target.to_string(),
            repo: root.to_path_buf(),
        })
}
