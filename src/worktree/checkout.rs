//! A branch splice moves may be checked out — in the main checkout (`init` defaults the target
//! to the branch checked out there) or in another worktree. Moving only the ref would leave that
//! checkout's index and files on the old commit: `git status` would show staged changes that
//! reverse the delivered work, and a `git commit -a` would undo it. So before the ref moves,
//! [`update`] brings that checkout to the new commit as `git merge --ff-only` would, or refuses
//! when it has uncommitted changes (a person's work in progress is never touched).
//!
//! "Uncommitted" means tracked files modified or staged, outside `.splice/` (its bead files and
//! journal change with every transition when users commit them; a landing never changes them,
//! since a branch touching `.splice/` is refused), and untracked files the new commit would
//! overwrite. Other untracked files are left alone.

use std::path::{Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{CheckoutNotificationType, ErrorCode, Oid, Repository, Status, StatusOptions};

use super::git_at;
use crate::error::Result;
use crate::store::STATE_DIR;

/// What [`update`] found and did.
#[derive(Debug)]
pub enum Update {
    /// No checkout has the branch checked out.
    NotCheckedOut,
    /// The checkout at this path now holds the new commit's files and index.
    Updated(PathBuf),
    /// The checkout has uncommitted changes to these paths; nothing was written.
    Dirty {
        checkout: PathBuf,
        paths: Vec<String>,
    },
}

/// Where `refname` is checked out: the main checkout or a linked worktree of `repo`.
fn checked_out(repo: &Repository, refname: &str) -> Result<Option<Repository>> {
    let main = Repository::open(repo.commondir())?;
    let names = main.worktrees()?;
    let linked: Vec<Repository> = names
        .iter()
        .flatten()
        .filter_map(|name| main.find_worktree(name).ok())
        .filter(|wt| wt.validate().is_ok())
        .filter_map(|wt| Repository::open_from_worktree(&wt).ok())
        .collect();
    let candidates = std::iter::once(main).chain(linked);
    for candidate in candidates {
        let on_branch = !candidate.is_bare()
            && candidate
                .head()
                .ok()
                .is_some_and(|h| h.is_branch() && h.name() == Some(refname));
        if on_branch {
            return Ok(Some(candidate));
        }
    }
    Ok(None)
}

/// Tracked paths with uncommitted changes (modified, staged, deleted), outside `.splice/`.
fn uncommitted(repo: &Repository) -> Result<Vec<String>> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(false)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo.statuses(Some(&mut opts))?;
    let state = format!("{STATE_DIR}/");
    let mut paths: Vec<String> = statuses
        .iter()
        .filter(|e| e.status() != Status::CURRENT)
        .filter_map(|e| e.path().map(str::to_string))
        .filter(|p| p != STATE_DIR && !p.starts_with(&state))
        .collect();
    paths.sort();
    Ok(paths)
}

/// If `refname` (now at `old`) is checked out somewhere, bring that checkout's index and files
/// from `old` to `new`, unless it has uncommitted changes. The ref itself is not moved.
pub fn update(repo: &Repository, refname: &str, old: Oid, new: Oid) -> Result<Update> {
    let Some(wt) = checked_out(repo, refname)? else {
        return Ok(Update::NotCheckedOut);
    };
    // `workdir` ends with a separator; a path a person reads and pastes does not.
    let path: PathBuf = wt.workdir().unwrap_or(wt.path()).components().collect();
    let head = wt.head().ok().and_then(|h| h.target());
    if head != Some(old) {
        return Err(crate::error::Error::Git(format!(
            "{}: HEAD is not at {refname}'s tip {old}; not updating this checkout",
            path.display()
        )));
    }
    let paths = uncommitted(&wt)?;
    if !paths.is_empty() {
        return Ok(Update::Dirty {
            checkout: path,
            paths,
        });
    }
    // HEAD is at `old` (it names `refname`, read under the landing's lock), so the checkout's
    // baseline is `old`'s tree: a file that differs from it is a conflict, never overwritten.
    let to = wt.find_commit(new)?.tree()?;
    let mut blocked: Vec<String> = Vec::new();
    let result = {
        let mut cb = CheckoutBuilder::new();
        cb.safe()
            .notify_on(CheckoutNotificationType::CONFLICT)
            .notify(|_, p, _, _, _| {
                if let Some(p) = p {
                    blocked.push(p.to_string_lossy().into_owned());
                }
                true
            });
        wt.checkout_tree(to.as_object(), Some(&mut cb))
    };
    match result {
        Ok(()) => Ok(Update::Updated(path)),
        Err(e) if e.code() == ErrorCode::Conflict || !blocked.is_empty() => {
            blocked.sort();
            blocked.dedup();
            Ok(Update::Dirty {
                checkout: path,
                paths: blocked,
            })
        }
        Err(e) => Err(git_at(&path, "updating the checkout", e)),
    }
}

/// After [`update`] brought the checkout at `path` from `old` to `new` but the ref could not be
/// moved (someone moved it meanwhile): put the files it wrote back to what HEAD now holds.
pub fn restore(path: &Path, old: Oid, new: Oid) -> Result<()> {
    let wt = super::verify::open_checkout(path)?;
    let (from, to) = (wt.find_commit(old)?.tree()?, wt.find_commit(new)?.tree()?);
    let diff = wt.diff_tree_to_tree(Some(&from), Some(&to), None)?;
    let mut cb = CheckoutBuilder::new();
    cb.force().disable_pathspec_match(true);
    let mut any = false;
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(p) = file.path() {
                cb.path(p);
                any = true;
            }
        }
    }
    if !any {
        return Ok(());
    }
    wt.checkout_head(Some(&mut cb))
        .map_err(|e| git_at(path, "restoring the checkout", e))
}
