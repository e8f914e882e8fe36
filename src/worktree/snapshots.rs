//! A loop node's snapshots (issue 13, `docs/monitor.md`): git refs
//! `refs/splice/snapshots/<id>/<n>` at its worktree's `HEAD`, taken before the first iteration
//! (`0`) and after each complete one (`n`), restored by a rollback, deleted when the node's
//! checkouts go (unless the run keeps them). Only committed work is a snapshot: it is what the
//! iteration was measured on.

use std::path::Path;

use git2::Repository;

use super::{check_id, git_at, reset_hard_clean};
use crate::error::{Error, Result};

/// Where node `id`'s snapshot refs are.
pub fn prefix(id: &str) -> String {
    format!("refs/splice/snapshots/{id}")
}

/// The ref of snapshot `n` of node `id`.
pub fn snapshot_ref(id: &str, n: u32) -> String {
    format!("{}/{n}", prefix(id))
}

/// Point snapshot `n` of node `id` at the `HEAD` of its worktree at `path`; returns the ref.
pub fn take(path: &Path, id: &str, n: u32) -> Result<String> {
    check_id(id)?;
    let repo = Repository::open(path).map_err(|e| git_at(path, "not a git worktree", e))?;
    let head = repo
        .head()
        .and_then(|h| h.peel_to_commit())
        .map_err(|e| git_at(path, "reading HEAD", e))?;
    let name = snapshot_ref(id, n);
    repo.reference(&name, head.id(), true, "splice: loop snapshot")
        .map_err(|e| git_at(path, &format!("writing {name}"), e))?;
    Ok(name)
}

/// Restore the worktree at `path` to snapshot `n` of node `id` (reset hard, untracked files
/// removed); returns the commit. An error when the snapshot does not exist.
pub fn restore(path: &Path, id: &str, n: u32) -> Result<String> {
    check_id(id)?;
    let name = snapshot_ref(id, n);
    let repo = super::verify::open_checkout(path)?;
    let commit = repo
        .revparse_single(&name)
        .and_then(|o| o.peel_to_commit())
        .map_err(|e| Error::Git(format!("{name}: no such snapshot ({})", e.message())))?
        .id()
        .to_string();
    reset_hard_clean(path, &commit)?;
    Ok(commit)
}

/// Delete every snapshot of node `id` in the repository at `repo_root`; returns how many.
pub fn delete_all(repo_root: &Path, id: &str) -> Result<usize> {
    check_id(id)?;
    let repo =
        Repository::open(repo_root).map_err(|e| git_at(repo_root, "not a git repository", e))?;
    let glob = format!("{}/*", prefix(id));
    let names: Vec<String> = repo
        .references_glob(&glob)
        .map_err(|e| git_at(repo_root, "listing snapshots", e))?
        .flatten()
        .filter_map(|r| r.name().map(str::to_string))
        .collect();
    let mut deleted = 0;
    for name in &names {
        let Ok(mut r) = repo.find_reference(name) else {
            continue;
        };
        match r.delete() {
            Ok(()) => deleted += 1,
            // Another runner cleaning up the same closed node holds the ref's lock, or has
            // deleted it already: its cleanup is this one's.
            Err(e) if e.code() == git2::ErrorCode::Locked || repo.find_reference(name).is_err() => {
            }
            Err(e) => return Err(git_at(repo_root, &format!("deleting {name}"), e)),
        }
    }
    Ok(deleted)
}

/// The snapshots of node `id`, by number.
pub fn list(repo_root: &Path, id: &str) -> Result<Vec<u32>> {
    check_id(id)?;
    let repo =
        Repository::open(repo_root).map_err(|e| git_at(repo_root, "not a git repository", e))?;
    let prefix = format!("{}/", prefix(id));
    let mut ns: Vec<u32> = repo
        .references_glob(&format!("{prefix}*"))
        .map_err(|e| git_at(repo_root, "listing snapshots", e))?
        .flatten()
        .filter_map(|r| r.name()?.strip_prefix(&prefix)?.parse().ok())
        .collect();
    ns.sort_unstable();
    Ok(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The load test's failure: two runners cleaning up one node's snapshots at once; the
    /// second found a ref locked by the first and stopped its run.
    #[test]
    fn a_snapshot_another_process_is_deleting_is_left_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let sig = git2::Signature::now("t", "t@x").unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let tree = repo.find_tree(tree).unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "c", &tree, &[])
            .unwrap();
        take(dir.path(), "sp-1", 0).unwrap();
        take(dir.path(), "sp-1", 1).unwrap();
        let lock = dir.path().join(".git/refs/splice/snapshots/sp-1/1.lock");
        std::fs::write(&lock, "").unwrap();
        assert_eq!(delete_all(dir.path(), "sp-1").unwrap(), 1);
        std::fs::remove_file(&lock).unwrap();
        assert_eq!(list(dir.path(), "sp-1").unwrap(), [1]);
        assert_eq!(delete_all(dir.path(), "sp-1").unwrap(), 1);
        assert!(list(dir.path(), "sp-1").unwrap().is_empty());
    }
}
