//! `splice hooks pre-commit`, the check the installed git `pre-commit` hook delegates to: a
//! commit made from a dispatched session may not change `.splice/`.
//!
//! "Dispatched" is the writer's rule, [`crate::authority::recognize`] (descent from a live
//! runner of the state directory, or `SPLICE_DISPATCHED`/`SPLICE_CREDENTIAL` in the
//! environment), never a rule of this hook's. A person's commit is never looked at: people
//! commit the state on purpose. What is staged is read with git2 as git itself would: the
//! repository and index git points the hook at (`GIT_DIR`, `GIT_INDEX_FILE`, which `git commit
//! -a` and `git commit <paths>` set to a temporary index), compared with `HEAD`.
//!
//! In a node's worktree `.splice/` is the checked-out copy of the state (when users commit it);
//! in the main checkout, the live one. Both are refused: changing the copy on a node's branch
//! would overwrite the live state when the branch lands, and landing refuses such a branch anyway.

use std::path::Path;

use crate::authority;
use crate::error::Result;
use crate::store::STATE_DIR;

/// What the check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not a dispatched session: the commit goes ahead, unread.
    Person,
    /// A dispatched session's commit that leaves `.splice/` alone.
    Clean,
    /// A dispatched session's commit that changes these paths under `.splice/`.
    Refused(Vec<String>),
}

/// Check the commit being made, for the state directory `state_dir` (the live one, which
/// descent from a runner is looked up in).
pub fn check(state_dir: &Path) -> Result<Verdict> {
    if authority::recognize(state_dir).dispatched.is_none() {
        return Ok(Verdict::Person);
    }
    let repo = git2::Repository::open_from_env()?;
    let paths = staged_state_paths(&repo)?;
    Ok(if paths.is_empty() {
        Verdict::Clean
    } else {
        Verdict::Refused(paths)
    })
}

/// The staged paths (index against `HEAD`; everything, before the first commit) under
/// `.splice/`, in order, each once.
pub fn staged_state_paths(repo: &git2::Repository) -> Result<Vec<String>> {
    let head = match repo.head() {
        Ok(head) => Some(head.peel_to_tree()?),
        Err(_) => None,
    };
    let index = repo.index()?;
    let diff = repo.diff_tree_to_index(head.as_ref(), Some(&index), None)?;
    let prefix = format!("{STATE_DIR}/");
    let mut paths: Vec<String> = diff
        .deltas()
        .flat_map(|d| [d.old_file().path(), d.new_file().path()])
        .flatten()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| p.starts_with(&prefix))
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}
