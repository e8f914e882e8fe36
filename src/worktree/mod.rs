//! The git checkouts splice makes under `.splice/worktrees/`, and the git helpers they share.
//!
//! | checkout | path | HEAD | made by | used by |
//! |---|---|---|---|---|
//! | a node's worktree ([`ensure`]) | `<id>` | branch `splice/<id>`, from the delivery target | the executor, before a dispatch | the agent, and floors reading the node's work |
//! | a target checkout ([`checkout_target`]) | `<id>@target` | detached at the integration target's tip | the `coverage` and `suite` floors | those floors (DESIGN §6) |
//!
//! Both go ([`remove`]) when the runner cleans up after a closed node or a person cancels one,
//! and the node's branch with them when all its commits are on the target
//! ([`delete_branch_if_on`]); [`Tidied::node`] is that cleanup, the same for every caller. A direct delivery is
//! landed on the target here too ([`land`]), keeping a checkout of the target current
//! (`checkout.rs`).
//!
//! All of it is done with git2, never by running `git`. Shared here: opening
//! the repository ([`open_repo`]), resolving a target to a commit ([`resolve`]), ancestry
//! ([`is_on`]), a checkout's HEAD ([`head`]), the branch checked out in the repository
//! ([`current_branch`]), forgetting stale registrations, and the one listing of node worktrees
//! ([`list`]).
//!
//! Under concurrency (issue 33): every checkout is created, verified whole and removed under one
//! lock ([`lock`]), so no runner reuses a worktree another is still making or removing; nothing
//! here hashes, stages or checks out a path under `.splice/` in the main checkout
//! ([`outside_state`]: its files change under git's feet while runners write them, when users
//! commit them); and a git operation that finds one of git's lock files held by someone else (a
//! person's `git status` refreshing the index) or a file rewritten as git reads it is tried
//! again for a while ([`retry_busy`]) rather than failing the run.
//!
//! Limits: git2 only adds a worktree on a branch, so a target checkout is added on a helper
//! branch named after it and detached right after. A registration whose directory is gone is
//! pruned even when locked: splice owns what is under `.splice/worktrees/`.

mod add;
mod checkout;
mod land;
mod node;
pub mod quarantine;
pub mod snapshots;
mod target;
mod tidy;
pub mod verify;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use git2::{BranchType, ErrorClass, ErrorCode, Oid, Repository, WorktreePruneOptions};

use crate::error::{Error, Result};
use crate::store::{STATE_DIR, ids};

pub use land::{Landed, Landing, Refused, land, remote_main_lines};
pub use node::{
    Branch, Prepared, Worktree, branch_name, delete_branch_if_on, ensure, is_retry,
    prepare_for_attempt, remove, reset_hard_clean, step_base,
};
pub use target::{TargetCheckout, checkout_target};
pub use tidy::{KeptBranch, Tidied, has_leftovers};

/// How long to wait for another process creating or removing a checkout.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Held while a checkout under `.splice/worktrees/` is created, refreshed or removed: two
/// runners doing it at once collide on git's own lock files and branches ("… .lock: File
/// exists", "already checked out"). Dropping it releases the lock.
pub(crate) struct CheckoutLock {
    _file: fs::File,
}

/// Take the checkouts' lock (`.splice/worktrees/.lock`), waiting at most [`LOCK_WAIT`].
pub(crate) fn lock(worktrees_dir: &Path) -> Result<CheckoutLock> {
    lock_file(
        &worktrees_dir.join(".lock"),
        "creating or removing a checkout",
    )
}

/// Take the lock on the file at `path` (created if missing), waiting at most [`LOCK_WAIT`] for
/// another process `doing` something under it.
pub(crate) fn lock_file(path: &Path, doing: &str) -> Result<CheckoutLock> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(CheckoutLock { _file: file }),
            Err(fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(Error::bad_file(
                    path,
                    format!(
                        "another process has been {doing} for {}s; is a runner stuck?",
                        LOCK_WAIT.as_secs()
                    ),
                ));
            }
            Err(fs::TryLockError::Error(e)) => return Err(Error::io(path, e)),
        }
    }
}

/// How long [`retry_busy`] keeps trying: far longer than anyone holds git's lock files in
/// passing, short enough that a lock a crashed git left behind is reported within the pass.
const BUSY_WAIT: Duration = Duration::from_secs(10);

/// Is `e` a fault someone else causes for a moment: one of git's lock files (`index.lock`,
/// `refs/heads/<b>.lock`) held, or a file that shrank while git hashed it (libgit2's
/// "error reading file for hashing", naming no path)?
pub(crate) fn is_busy(e: &git2::Error) -> bool {
    e.code() == ErrorCode::Locked
        || (e.class() == ErrorClass::Os
            && e.message().starts_with("error reading file for hashing"))
}

/// Run `op` again while it fails [`is_busy`], pausing 5 ms, then twice as long each time (at
/// most 250 ms), for at most [`BUSY_WAIT`]; then its last answer stands. `op` must be safe to
/// run again after such a failure (git writes its lock file first, its result last).
pub(crate) fn retry_busy<T>(
    mut op: impl FnMut() -> std::result::Result<T, git2::Error>,
) -> std::result::Result<T, git2::Error> {
    let deadline = Instant::now() + BUSY_WAIT;
    let mut pause = Duration::from_millis(5);
    loop {
        match op() {
            Err(e) if is_busy(&e) && Instant::now() + pause < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(250));
            }
            answer => return answer,
        }
    }
}

/// Limit a status of a checkout to the paths outside `.splice/`: git never reads them, let alone
/// hashes them (the writer renames bead files and appends the journal under its feet; a file
/// replaced by a shorter one between git's `lstat` and its read fails the whole status).
pub(crate) fn outside_state(opts: &mut git2::StatusOptions) -> &mut git2::StatusOptions {
    // libgit2's pathspecs are matched in order, the first that matches deciding; `!` excludes.
    opts.pathspec(format!("!{STATE_DIR}")).pathspec("*")
}

/// Is `path` (relative to a checkout's root) `.splice/` or under it?
pub(crate) fn in_state(path: &str) -> bool {
    path.strip_prefix(STATE_DIR)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Where a node's worktree lives.
pub fn node_path(worktrees_dir: &Path, id: &str) -> PathBuf {
    worktrees_dir.join(id)
}

/// Where a node's checkout of its integration target lives.
pub fn target_path(worktrees_dir: &Path, id: &str) -> PathBuf {
    worktrees_dir.join(target_name(id))
}

/// What a target checkout's name adds to its node's id.
const TARGET_SUFFIX: &str = "@target";

/// The name of a target checkout: its directory, its worktree registration, its helper branch.
fn target_name(id: &str) -> String {
    format!("{id}{TARGET_SUFFIX}")
}

/// A git error with the path it happened at and what was being done.
fn git_at(path: &Path, what: &str, e: git2::Error) -> Error {
    Error::Git(format!("{}: {what}: {}", path.display(), e.message()))
}

fn check_id(id: &str) -> Result<()> {
    if ids::is_valid(id) {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "{id:?} is not a bead id; cannot name a worktree after it"
        )))
    }
}

/// The repository `path` is in (it may be a subdirectory).
pub fn open_repo(path: &Path) -> Result<Repository> {
    Repository::discover(path).map_err(|e| git_at(path, "not a git repository", e))
}

/// The commit `target` names: a local branch, else any revision git can resolve
/// (`origin/main`, a tag, a sha). A local branch wins over a tag of the same name.
pub fn resolve(repo: &Repository, target: &str) -> Result<Oid> {
    if let Ok(branch) = repo.find_branch(target, BranchType::Local)
        && let Ok(commit) = branch.get().peel_to_commit()
    {
        return Ok(commit.id());
    }
    repo.revparse_single(target)
        .and_then(|o| o.peel_to_commit())
        .map(|c| c.id())
        .map_err(|e| {
            Error::Invalid(format!(
                "target `{target}` does not resolve to a commit: {}",
                e.message()
            ))
        })
}

/// Is `commit` the tip of, or reachable from, `tip`?
pub fn is_on(repo: &Repository, commit: Oid, tip: Oid) -> Result<bool> {
    if commit == tip {
        return Ok(true);
    }
    Ok(repo.graph_descendant_of(tip, commit)?)
}

/// The sha of HEAD in the checkout at `path`.
pub fn head(path: &Path) -> Result<String> {
    let repo = Repository::open(path).map_err(|e| git_at(path, "not a git worktree", e))?;
    let commit = repo
        .head()
        .and_then(|h| h.peel_to_commit())
        .map_err(|e| git_at(path, "reading HEAD", e))?;
    Ok(commit.id().to_string())
}

/// The branch checked out in the repository at `repo_root`; `None` when HEAD is detached or
/// there is no repository.
pub fn current_branch(repo_root: &Path) -> Option<String> {
    let repo = Repository::discover(repo_root).ok()?;
    let head = repo.head().ok()?;
    if !head.is_branch() {
        return None;
    }
    head.shorthand().map(str::to_string)
}

/// Paths with uncommitted changes in the repository's main checkout (tracked files modified,
/// staged or deleted, and untracked files), sorted, leaving out `.splice/` and ignored files.
/// Agents branch from committed commits, so these are not part of their work. `None` when
/// there is no repository to ask.
pub fn uncommitted(repo_root: &Path) -> Option<Vec<String>> {
    let repo = Repository::discover(repo_root).ok()?;
    let mut opts = git2::StatusOptions::new();
    outside_state(&mut opts)
        .include_untracked(true)
        .recurse_untracked_dirs(false)
        .include_ignored(false);
    let statuses = retry_busy(|| repo.statuses(Some(&mut opts))).ok()?;
    let mut paths: Vec<String> = statuses
        .iter()
        .filter(|e| e.status() != git2::Status::CURRENT)
        .filter_map(|e| e.path().map(str::to_string))
        .filter(|p| !in_state(p))
        .collect();
    paths.sort();
    Some(paths)
}

/// `p` with every link resolved, or as it is when it cannot be (it does not exist).
fn canonical(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Is `path` an opened worktree of some repository (its `.git` file is valid)?
fn is_worktree(path: &Path) -> bool {
    path.join(".git").exists()
        && Repository::open(path).is_ok_and(|r| r.workdir().is_some() && r.is_worktree())
}

/// Forget the worktree registration `name`, if there is one, locked or not; with
/// `working_tree`, delete its directory too. A registration whose directory is gone blocks
/// adding a worktree under the same name.
fn prune(
    repo: &Repository,
    name: &str,
    working_tree: bool,
) -> std::result::Result<(), git2::Error> {
    match repo.find_worktree(name) {
        Ok(wt) => wt.prune(Some(
            WorktreePruneOptions::new()
                .valid(true)
                .locked(true)
                .working_tree(working_tree),
        )),
        Err(_) => Ok(()),
    }
}

/// The ids of the nodes that have a checkout directory (a worktree `<id>`, or a target checkout
/// `<id>@target`), sorted, each once. Files, hidden entries and names that are not bead ids are
/// left out; a missing directory lists nothing.
pub fn list(worktrees_dir: &Path) -> Result<Vec<String>> {
    let entries = match fs::read_dir(worktrees_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(worktrees_dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(worktrees_dir, e))?;
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let id = name.strip_suffix(TARGET_SUFFIX).unwrap_or(&name);
        if ids::is_valid(id) {
            out.push(id.to_string());
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncommitted_leaves_out_splice_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let files = [
            "README.md",
            ".env",
            "src/a.rs",
            ".splice/beads/b.json",
            ".splicex",
        ];
        for f in files {
            let path = dir.path().join(f);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, "one\n").unwrap();
        }
        let mut index = repo.index().unwrap();
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
            .unwrap();
        assert_eq!(uncommitted(dir.path()), Some(vec![]));
        for f in files {
            fs::write(dir.path().join(f), "two, longer\n").unwrap();
        }
        fs::write(dir.path().join(".splice/new.json"), "new\n").unwrap();
        fs::write(dir.path().join("new.txt"), "new\n").unwrap();
        let expected = [".env", ".splicex", "README.md", "new.txt", "src/a.rs"];
        assert_eq!(
            uncommitted(dir.path()),
            Some(expected.map(String::from).to_vec())
        );
        assert!(in_state(".splice") && in_state(".splice/beads/b.json"));
        assert!(!in_state(".splicex") && !in_state("a/.splice"));
    }

    #[test]
    fn busy_faults_are_retried_and_others_are_not() {
        let mut tries = 0;
        let answer = retry_busy(|| {
            tries += 1;
            if tries < 3 {
                Err(git2::Error::new(
                    ErrorCode::Locked,
                    ErrorClass::Index,
                    "locked",
                ))
            } else {
                Ok(tries)
            }
        });
        assert_eq!(answer.unwrap(), 3);
        let mut tries = 0;
        let answer: std::result::Result<(), _> = retry_busy(|| {
            tries += 1;
            Err(git2::Error::new(
                ErrorCode::NotFound,
                ErrorClass::Reference,
                "gone",
            ))
        });
        assert!(answer.is_err());
        assert_eq!(tries, 1);
    }
}
