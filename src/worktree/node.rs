//! A node's worktree: `.splice/worktrees/<id>` on branch `splice/<id>`, created from the node's
//! delivery target, reset for resume `redo`, removed once the node finished its route or its
//! container closed (DESIGN §7), its branch with it when all its commits are on the target.
//!
//! Resume policy ([`prepare_for_attempt`]):
//!
//! | dispatch | `redo` | `continue` |
//! |---|---|---|
//! | the step's first since the node entered it | keep the tree | keep the tree |
//! | a retry ([`is_retry`]: attempt > 1, or an earlier dispatch of this entry ended — after `unpark` reset the attempts, or a transient end) | reset to the step's base and remove untracked files | keep the tree |
//!
//! The base is the node's HEAD when it entered the step ([`step_base`]). Ignored files (build
//! caches) survive a redo, as with `git clean -fd`.

use std::fs;
use std::path::{Path, PathBuf};

use git2::{BranchType, ResetType, StatusOptions};

use super::{check_id, git_at, is_worktree, node_path, open_repo, prune, resolve, target_name};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::model::manifest::Resume;

/// A node's worktree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Worktree {
    pub path: PathBuf,
    /// `splice/<id>`.
    pub branch: String,
    /// The commit `splice/<id>` is at (the worktree's HEAD), read under the checkouts' lock.
    pub head: String,
    /// Whether this call created it (false: an existing worktree was reused).
    pub created: bool,
}

/// What [`prepare_for_attempt`] did to the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prepared {
    /// The first dispatch of the step: the tree is as the last step left it.
    First,
    /// `redo` on a retry: reset to this commit and cleaned.
    Reset(String),
    /// `continue` on a retry: kept as the last attempt left it.
    Kept,
}

/// The branch a node's worktree is on.
pub fn branch_name(id: &str) -> String {
    format!("splice/{id}")
}

/// The marker of a worktree being created (`.splice/worktrees/.<id>.creating`): made before git
/// adds the worktree, removed once it is whole. Found under the checkouts' lock, it is a
/// creation that was cut off (its runner died): git writes a worktree's `.git` before its files
/// and index, so such a worktree opens as a repository and is not whole.
fn creating(worktrees_dir: &Path, id: &str) -> PathBuf {
    worktrees_dir.join(format!(".{id}.creating"))
}

/// Create the node's worktree, or reuse the one already there. The branch `splice/<id>` is
/// created at `target` ([`resolve`]) if it does not exist; an existing branch is checked out as
/// it is.
///
/// All of it under the checkouts' lock, reuse included: runners deciding on snapshots a moment
/// old may both get here for one node (the claim after this says which dispatches), and another
/// may be removing the checkouts of a node just closed. So a worktree is never reused while
/// another runner is still making it, nor read while it is being removed, and it is whole
/// (made to the end: no creation marker) when this returns.
pub fn ensure(repo_root: &Path, worktrees_dir: &Path, id: &str, target: &str) -> Result<Worktree> {
    check_id(id)?;
    let path = node_path(worktrees_dir, id);
    let branch = branch_name(id);
    let _lock = super::lock(worktrees_dir)?;
    let repo = open_repo(repo_root)?;
    let reuse = |path: PathBuf, branch: String| -> Result<Worktree> {
        let head = tip(&repo, &branch)?;
        Ok(Worktree {
            path,
            branch,
            head,
            created: false,
        })
    };
    let marker = creating(worktrees_dir, id);
    let cut_off = marker.symlink_metadata().is_ok();
    if cut_off {
        // Nothing was ever dispatched into it: `ensure` returns only once the marker is gone.
        prune(&repo, id, true).map_err(|e| git_at(&path, "removing a half-made worktree", e))?;
        super::quarantine::remove_any(&path)?;
    } else {
        // A dispatch's quarantine points its `.git` elsewhere, so it is no worktree of the
        // repository's while it runs: another runner's live dispatch, or one a dead runner left.
        // Only the next claimant may touch it (`quarantine::enter` imports a dead one's work
        // first); until then it is reused as it is. Its marker is written before `.git` is
        // pointed away and removed after it points back, so asking before and after sees it.
        let entered = super::quarantine::entered(worktrees_dir, id);
        if is_worktree(&path) {
            return reuse(path, branch);
        }
        if (entered || super::quarantine::entered(worktrees_dir, id)) && path.is_dir() {
            return reuse(path, branch);
        }
    }
    if path.exists() {
        let empty = fs::read_dir(&path)
            .map_err(|e| Error::io(&path, e))?
            .next()
            .is_none();
        if !empty {
            return Err(Error::bad_file(
                &path,
                "exists but is not a git worktree; move it away or remove it",
            ));
        }
        fs::remove_dir(&path).map_err(|e| Error::io(&path, e))?;
    }
    // A registration whose directory is gone (deleted by hand) would block the add.
    prune(&repo, id, false)
        .map_err(|e| git_at(&path, "pruning a stale worktree registration", e))?;
    let local = match repo.find_branch(&branch, BranchType::Local) {
        Ok(b) => b,
        Err(_) => {
            let commit = repo.find_commit(resolve(&repo, target)?)?;
            repo.branch(&branch, &commit, false)
                .map_err(|e| git_at(repo_root, &format!("creating branch {branch}"), e))?
        }
    };
    fs::create_dir_all(worktrees_dir).map_err(|e| Error::io(worktrees_dir, e))?;
    fs::write(&marker, b"").map_err(|e| Error::io(&marker, e))?;
    let refname = local
        .get()
        .name()
        .map(str::to_string)
        .unwrap_or_else(|| format!("refs/heads/{branch}"));
    super::add::on_branch(&repo, id, &path, &refname)
        .map_err(|e| git_at(&path, &format!("adding a worktree on {branch}"), e))?;
    let head = tip(&repo, &branch)?;
    fs::remove_file(&marker).map_err(|e| Error::io(&marker, e))?;
    Ok(Worktree {
        path,
        branch,
        head,
        created: true,
    })
}

/// The commit the local branch `branch` is at.
fn tip(repo: &git2::Repository, branch: &str) -> Result<String> {
    let refname = format!("refs/heads/{branch}");
    repo.refname_to_id(&refname)
        .map(|oid| oid.to_string())
        .map_err(|e| git_at(repo.path(), &format!("reading {branch}"), e))
}

/// Reset the worktree at `path` hard to `sha` and remove untracked files and directories
/// (ignored files are kept).
pub fn reset_hard_clean(path: &Path, sha: &str) -> Result<()> {
    // Only through the admin data splice made: a `.git` an agent redirected could make this
    // reset move `main` or clean the main checkout.
    let repo = super::verify::open_checkout(path)?;
    let target = repo
        .revparse_single(sha)
        .and_then(|o| o.peel_to_commit())
        .map_err(|e| git_at(path, &format!("commit {sha} not found"), e))?;
    super::retry_busy(|| repo.reset(target.as_object(), ResetType::Hard, None))
        .map_err(|e| git_at(path, &format!("reset --hard {sha}"), e))?;
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(false)
        .include_ignored(false);
    let statuses = repo
        .statuses(Some(&mut opts))
        .map_err(|e| git_at(path, "listing untracked files", e))?;
    for entry in statuses.iter() {
        if !entry.status().contains(git2::Status::WT_NEW) {
            continue;
        }
        let Some(rel) = entry.path() else { continue };
        let victim = path.join(rel.trim_end_matches('/'));
        let Ok(meta) = fs::symlink_metadata(&victim) else {
            continue;
        };
        let removed = if meta.is_dir() {
            fs::remove_dir_all(&victim)
        } else {
            fs::remove_file(&victim)
        };
        removed.map_err(|e| Error::io(&victim, e))?;
    }
    Ok(())
}

/// Remove the node's checkouts: its worktree and its target checkout (`<id>@target`), each
/// registration and directory. The branch is kept (it holds the node's work; see
/// [`delete_branch_if_on`]).
pub fn remove(repo_root: &Path, worktrees_dir: &Path, id: &str) -> Result<()> {
    check_id(id)?;
    let _lock = super::lock(worktrees_dir)?;
    let repo = open_repo(repo_root)?;
    for name in [id.to_string(), target_name(id)] {
        let path = worktrees_dir.join(&name);
        prune(&repo, &name, true).map_err(|e| git_at(&path, "pruning the worktree", e))?;
        match fs::remove_dir_all(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&path, e)),
        }
    }
    super::quarantine::remove(worktrees_dir, id)
}

/// What became of a node's branch `splice/<id>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Branch {
    /// There is none.
    Absent,
    /// Deleted: every commit of it was on the target.
    Deleted { branch: String },
    /// Kept: `commits` of its commits are not on `target` (or the target does not resolve, and
    /// `commits` is 0).
    Kept {
        branch: String,
        target: String,
        commits: usize,
    },
    /// Kept: its worktree is there again (another runner, deciding on a snapshot from before the
    /// node closed, made it meanwhile); the cleanup that removes that worktree deletes it.
    CheckedOut { branch: String },
}

/// Delete the node's branch `splice/<id>` when all its commits are on `target`; keep it
/// otherwise (its work would be lost) and say how many are not. A branch checked out somewhere
/// is never deleted (git refuses; remove the checkout first). Under the checkouts' lock, so two
/// runners cleaning up after the same node do not collide.
pub fn delete_branch_if_on(
    repo_root: &Path,
    worktrees_dir: &Path,
    id: &str,
    target: &str,
) -> Result<Branch> {
    check_id(id)?;
    let _lock = super::lock(worktrees_dir)?;
    let repo = open_repo(repo_root)?;
    let branch = branch_name(id);
    let Ok(mut local) = repo.find_branch(&branch, BranchType::Local) else {
        return Ok(Branch::Absent);
    };
    if is_worktree(&node_path(worktrees_dir, id)) {
        return Ok(Branch::CheckedOut { branch });
    }
    let tip = local.get().peel_to_commit()?.id();
    let kept = |commits| Branch::Kept {
        branch: branch.clone(),
        target: target.to_string(),
        commits,
    };
    let Ok(on) = resolve(&repo, target) else {
        return Ok(kept(0));
    };
    let mut walk = repo.revwalk()?;
    walk.push(tip)?;
    walk.hide(on)?;
    let commits = walk.count();
    if commits > 0 {
        return Ok(kept(commits));
    }
    local
        .delete()
        .map_err(|e| git_at(repo_root, &format!("deleting branch {branch}"), e))?;
    Ok(Branch::Deleted { branch })
}

/// The commit the node's current step started from: the HEAD recorded on the history entry of
/// the current entry into the step. An earlier entry's head is never used: resetting to it could
/// discard work made since.
pub fn step_base(bead: &Bead) -> Option<&str> {
    let p = &bead.pipeline;
    p.history
        .iter()
        .rev()
        .find(|e| e.step == p.step && e.seq == p.entered)
        .and_then(|e| e.head.as_deref())
}

/// Is a dispatch of attempt `attempt` (1-based) on `bead`'s current step a retry: not the
/// step's first dispatch since the node entered it? Attempt numbers alone do not say: `unpark`
/// resets the step's attempts, so the dispatch after it is attempt 1 again, on a tree a refused
/// attempt left. An exit recorded on the step since entry is an earlier dispatch of this entry.
pub fn is_retry(bead: &Bead, attempt: u32) -> bool {
    attempt > 1 || bead.exit_since_entry().is_some()
}

/// Apply the step's resume policy before a dispatch; `retry` is [`is_retry`]. `base_sha` is the
/// node's HEAD when it entered the step; a `redo` retry without one is an error (resetting to a
/// guess could destroy work).
pub fn prepare_for_attempt(
    path: &Path,
    resume: Resume,
    retry: bool,
    base_sha: Option<&str>,
) -> Result<Prepared> {
    if !retry {
        return Ok(Prepared::First);
    }
    match resume {
        Resume::Continue => Ok(Prepared::Kept),
        Resume::Redo => {
            let Some(sha) = base_sha else {
                return Err(Error::Invalid(format!(
                    "{}: resume `redo` needs the commit the step started from, and none was \
                     recorded",
                    path.display()
                )));
            };
            reset_hard_clean(path, sha)?;
            Ok(Prepared::Reset(sha.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::bead::{StepEntry, ThinText};

    fn entry(step: &str, seq: u64, head: Option<&str>) -> StepEntry {
        StepEntry {
            step: step.into(),
            seq,
            at: "t".into(),
            head: head.map(ThinText::from),
            attempts_before: None,
        }
    }

    #[test]
    fn step_base_is_the_head_recorded_on_entry() {
        let mut b = Bead::new("sp-1".into(), "t".into(), String::new(), "t");
        assert_eq!(step_base(&b), None);
        b.pipeline.step = "implement".into();
        b.pipeline.entered = 7;
        b.pipeline.history = vec![
            entry("implement", 3, Some("old")),
            entry("review", 5, Some("rev")),
            entry("implement", 7, Some("new")),
        ];
        assert_eq!(step_base(&b), Some("new"));
        b.pipeline.history[2].head = None;
        assert_eq!(step_base(&b), None);
    }

    #[test]
    fn a_dispatch_after_an_earlier_one_of_the_same_entry_is_a_retry() {
        use crate::model::bead::{ExitKind, ExitRecord};
        let mut b = Bead::new("sp-1".into(), "t".into(), String::new(), "t");
        b.pipeline.step = "review".into();
        b.pipeline.entered = 5;
        assert!(!is_retry(&b, 1));
        assert!(is_retry(&b, 2));
        let exit = |seq| ExitRecord {
            step: "review".into(),
            attempt: 1,
            seq,
            exit: ExitKind::Ok,
            code: Some(0),
            cause: None,
            proposed: true,
            log: None,
            usage: None,
            retry_after_s: None,
            at: "t".into(),
        };
        // An exit of an earlier entry is not this entry's.
        b.push_exit(exit(4));
        assert!(!is_retry(&b, 1));
        // After `unpark` reset the attempts, the refused attempt's exit is still there.
        b.push_exit(exit(7));
        assert!(is_retry(&b, 1));
    }

    #[test]
    fn branch_names() {
        assert_eq!(branch_name("sp-1.2"), "splice/sp-1.2");
    }
}
