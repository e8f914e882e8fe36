//! A branch splice moves may be checked out — in the main checkout (`init` defaults the target
//! to the branch checked out there) or in another worktree. Moving only the ref would leave that
//! checkout's index and files on the old commit: `git status` would show staged changes that
//! reverse the delivered work, and a `git commit -a` would undo it. So before the ref moves,
//! [`update`] brings that checkout to the new commit as `git merge --ff-only` would, or refuses
//! when it has uncommitted changes (a person's work in progress is never touched). A landing
//! that only says what would move (a dry run, waiting for a person's approval) asks
//! [`would_block`] the same question, reading only, so nobody approves a landing the checkout
//! would then refuse.
//!
//! "Uncommitted" means tracked files modified or staged, outside `.splice/` (its bead files and
//! journal change with every transition when users commit them; a landing never changes them,
//! since a branch touching `.splice/` is refused), and untracked files the new commit would
//! overwrite. Other untracked files are left alone.
//!
//! `.splice/` is not this module's business at all: the status leaves it out before git reads a
//! file ([`super::outside_state`]), and the checkout writes only the paths that differ between
//! the two commits, none of them under `.splice/`, so git never hashes a bead file the writer
//! is renaming meanwhile (issue 33: "error reading file for hashing", naming no path). The
//! index is written with git's own lock: when someone else holds it (a person's `git status`),
//! the checkout is tried again ([`super::retry_busy`]; a try that failed on the lock wrote files
//! the next one finds already as the new commit has them).

use std::path::{Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{CheckoutNotificationType, ErrorCode, Oid, Repository, Status, StatusOptions};

use super::{git_at, in_state, is_busy, outside_state, retry_busy};
use crate::error::Result;
use crate::store::STATE_DIR;

/// What [`update`] found and did.
#[derive(Debug)]
pub(super) enum Update {
    /// No checkout has the branch checked out.
    NotCheckedOut,
    /// The checkout at this path now holds the new commit's files and index.
    Updated(PathBuf),
    /// The checkout has uncommitted changes to these paths; nothing was written.
    Dirty {
        checkout: PathBuf,
        paths: Vec<String>,
    },
    /// The checkout stayed busy ([`super::is_busy`]: its index lock held by another process)
    /// for as long as [`super::retry_busy`] waits; its files and index are as they were.
    Busy { checkout: PathBuf, cause: String },
}

/// Where `refname` is checked out: the main checkout or a linked worktree of `repo`.
fn checked_out(repo: &Repository, refname: &str) -> Result<Option<Repository>> {
    Ok(holder(repo, refname, true)?)
}

/// [`checked_out`], with git's error; with `valid_only` false, a registration is not validated
/// first (libgit2's own check before adding a worktree does not validate). A linked worktree is opened only when its HEAD file may
/// name `refname` ([`may_hold`]): opening one reads the git config again, and a repository has
/// a worktree for every node in flight, so opening them all made each landing cost as much as
/// the store had worktrees (issue 38).
pub(super) fn holder(
    repo: &Repository,
    refname: &str,
    valid_only: bool,
) -> std::result::Result<Option<Repository>, git2::Error> {
    let main = Repository::open(repo.commondir())?;
    if on_branch(&main, refname) {
        return Ok(Some(main));
    }
    let admin = main.commondir().join("worktrees");
    let mut names: Vec<String> = match std::fs::read_dir(&admin) {
        Ok(entries) => entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    for name in names {
        if !may_hold(&admin.join(&name).join("HEAD"), refname) {
            continue;
        }
        let Ok(wt) = main.find_worktree(&name) else {
            continue;
        };
        if valid_only && wt.validate().is_err() {
            continue;
        }
        if let Ok(candidate) = Repository::open_from_worktree(&wt)
            && on_branch(&candidate, refname)
        {
            return Ok(Some(candidate));
        }
    }
    Ok(None)
}

/// Is `refname` the branch checked out in `candidate`?
fn on_branch(candidate: &Repository, refname: &str) -> bool {
    !candidate.is_bare()
        && candidate
            .head()
            .ok()
            .is_some_and(|h| h.is_branch() && h.name() == Some(refname))
}

/// Might the worktree whose HEAD file is at `head` have `refname` checked out? No only when the
/// file reads plainly as another branch (`ref: <other>`) or a detached commit; anything else
/// (unreadable, a link, too long, not text) is left for git to judge, so the answer is git's.
fn may_hold(head: &Path, refname: &str) -> bool {
    let Ok(Some(bytes)) = crate::safe_read::read_optional(head, 4096) else {
        return true;
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return true;
    };
    let text = text.trim();
    match text.strip_prefix("ref:") {
        Some(target) => target.trim() == refname,
        None => !(text.len() >= 40 && text.bytes().all(|b| b.is_ascii_hexdigit())),
    }
}

/// Tracked paths with uncommitted changes (modified, staged, deleted), outside `.splice/`.
fn uncommitted(repo: &Repository) -> std::result::Result<Vec<String>, git2::Error> {
    let mut opts = StatusOptions::new();
    outside_state(&mut opts)
        .include_untracked(false)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = retry_busy(|| repo.statuses(Some(&mut opts)))?;
    let mut paths: Vec<String> = statuses
        .iter()
        .filter(|e| e.status() != Status::CURRENT)
        .filter_map(|e| e.path().map(str::to_string))
        .filter(|p| !in_state(p))
        .collect();
    paths.sort();
    Ok(paths)
}

/// What [`update`] would refuse moving `refname` (now at `old`) to a commit with tree `to` for,
/// reading only (a dry run of a landing): the checkout's uncommitted changes, else untracked
/// files where `to` adds one (those [`update`] finds as conflicts), as [`Update::Dirty`]; or
/// [`Update::Busy`] when its status cannot be read for git's index lock. `None` when
/// `refname` is not checked out, or the checkout would take the new commit.
pub(super) fn would_block(
    repo: &Repository,
    refname: &str,
    old: Oid,
    to: Oid,
) -> Result<Option<Update>> {
    let Some(wt) = checked_out(repo, refname)? else {
        return Ok(None);
    };
    let path = checkout_path(&wt);
    let mut paths = match uncommitted(&wt) {
        Ok(paths) => paths,
        Err(e) if is_busy(&e) => return Ok(Some(busy(path, &e))),
        Err(e) => return Err(git_at(&path, "reading the checkout's status", e)),
    };
    if paths.is_empty() {
        paths = in_the_way(&wt, old, to)?;
    }
    Ok((!paths.is_empty()).then_some(Update::Dirty {
        checkout: path,
        paths,
    }))
}

/// Untracked files of the checkout `wt` (not ignored: git overwrites those) at paths that the
/// tree `to` adds to `old`'s: a safe checkout would not overwrite them. A limit: an untracked
/// file where `to` puts a directory (`src` before `src/a.rs`) is not seen here; [`update`]
/// still refuses it when the landing runs.
fn in_the_way(wt: &Repository, old: Oid, to: Oid) -> Result<Vec<String>> {
    let Some(workdir) = wt.workdir() else {
        return Ok(Vec::new());
    };
    let (from, to) = (wt.find_commit(old)?.tree()?, wt.find_tree(to)?);
    let mut paths = Vec::new();
    for p in changed_between(wt, &from, &to)? {
        let added = to.get_path(&p).is_ok() && from.get_path(&p).is_err();
        if added
            && workdir.join(&p).symlink_metadata().is_ok()
            && !wt.status_should_ignore(&p).unwrap_or(false)
        {
            paths.push(p.to_string_lossy().into_owned());
        }
    }
    Ok(paths)
}

/// Where the checkout `wt` is, as a person reads and pastes it (`workdir` ends with a
/// separator; a pasted path does not).
fn checkout_path(wt: &Repository) -> PathBuf {
    wt.workdir().unwrap_or(wt.path()).components().collect()
}

/// If `refname` (now at `old`) is checked out somewhere, bring that checkout's index and files
/// from `old` to `new`, unless it has uncommitted changes. The ref itself is not moved.
pub(super) fn update(repo: &Repository, refname: &str, old: Oid, new: Oid) -> Result<Update> {
    let Some(wt) = checked_out(repo, refname)? else {
        return Ok(Update::NotCheckedOut);
    };
    let path = checkout_path(&wt);
    let head = wt.head().ok().and_then(|h| h.target());
    if head != Some(old) {
        return Err(crate::error::Error::Git(format!(
            "{}: HEAD is not at {refname}'s tip {old}; not updating this checkout",
            path.display()
        )));
    }
    let paths = match uncommitted(&wt) {
        Ok(paths) => paths,
        Err(e) if is_busy(&e) => return Ok(busy(path, &e)),
        Err(e) => return Err(git_at(&path, "reading the checkout's status", e)),
    };
    if !paths.is_empty() {
        return Ok(Update::Dirty {
            checkout: path,
            paths,
        });
    }
    let changed = changed_paths(&wt, old, new)?;
    if changed.is_empty() {
        return Ok(Update::Updated(path));
    }
    // HEAD is at `old` (it names `refname`, read under the landing's lock), so the checkout's
    // baseline is `old`'s tree: a file that differs from it is a conflict, never overwritten.
    // The files first, leaving the index alone; then the index, on its own, so a lock held by
    // someone else only delays that one write.
    let to = wt.find_commit(new)?.tree()?;
    let mut blocked: Vec<String> = Vec::new();
    let result = {
        let mut cb = CheckoutBuilder::new();
        cb.safe()
            .update_index(false)
            .disable_pathspec_match(true)
            .notify_on(CheckoutNotificationType::CONFLICT)
            .notify(|_, p, _, _, _| {
                if let Some(p) = p {
                    blocked.push(p.to_string_lossy().into_owned());
                }
                true
            });
        for p in &changed {
            cb.path(p.as_path());
        }
        wt.checkout_tree(to.as_object(), Some(&mut cb))
    };
    match result {
        Ok(()) => {}
        Err(e) if e.code() == ErrorCode::Conflict || !blocked.is_empty() => {
            blocked.sort();
            blocked.dedup();
            return Ok(Update::Dirty {
                checkout: path,
                paths: blocked,
            });
        }
        Err(e) if is_busy(&e) => return Ok(busy(path, &e)),
        Err(e) => return Err(git_at(&path, "updating the checkout", e)),
    }
    if let Err(e) = stage(&wt, &to, &changed) {
        // The files go back to HEAD's, as the index still has them.
        put_back(&wt, &changed, false)
            .map_err(|e| git_at(&path, "putting the checkout's files back", e))?;
        if is_busy(&e) {
            return Ok(busy(path, &e));
        }
        return Err(git_at(&path, "updating the index", e));
    }
    Ok(Update::Updated(path))
}

fn busy(checkout: PathBuf, e: &git2::Error) -> Update {
    Update::Busy {
        checkout,
        cause: e.message().to_string(),
    }
}

/// Set the index entries of `paths` to the files just checked out from `to` (removing those
/// `to` does not hold), and write the index, waiting for its lock ([`retry_busy`]).
fn stage(
    wt: &Repository,
    to: &git2::Tree,
    paths: &[PathBuf],
) -> std::result::Result<(), git2::Error> {
    let mut index = wt.index()?;
    retry_busy(|| {
        index.read(true)?;
        for p in paths {
            match to.get_path(p) {
                Ok(_) => index.add_path(p)?,
                Err(e) if e.code() == ErrorCode::NotFound => match index.remove_path(p) {
                    Err(e) if e.code() != ErrorCode::NotFound => return Err(e),
                    _ => {}
                },
                Err(e) => return Err(e),
            }
        }
        index.write()
    })
}

/// Check `paths` out from HEAD, forced; with `update_index`, their index entries too.
fn put_back(
    wt: &Repository,
    paths: &[PathBuf],
    update_index: bool,
) -> std::result::Result<(), git2::Error> {
    retry_busy(|| {
        let mut cb = CheckoutBuilder::new();
        cb.force()
            .update_index(update_index)
            .disable_pathspec_match(true);
        for p in paths {
            cb.path(p.as_path());
        }
        wt.checkout_head(Some(&mut cb))
    })
}

/// After [`update`] brought the checkout at `path` from `old` to `new` but the ref could not be
/// moved (someone moved it meanwhile): put the files it wrote back to what HEAD now holds.
pub(super) fn restore(path: &Path, old: Oid, new: Oid) -> Result<()> {
    let wt = super::verify::open_checkout(path)?;
    let changed = changed_paths(&wt, old, new)?;
    if changed.is_empty() {
        return Ok(());
    }
    put_back(&wt, &changed, true).map_err(|e| git_at(path, "restoring the checkout", e))
}

/// The paths that differ between `old`'s and `new`'s trees (each side of a change), outside
/// `.splice/`: all a checkout moving from one to the other writes.
fn changed_paths(repo: &Repository, old: Oid, new: Oid) -> Result<Vec<PathBuf>> {
    let (from, to) = (
        repo.find_commit(old)?.tree()?,
        repo.find_commit(new)?.tree()?,
    );
    changed_between(repo, &from, &to)
}

/// The paths that differ between the trees `from` and `to` (each side of a change), outside
/// `.splice/`.
fn changed_between(repo: &Repository, from: &git2::Tree, to: &git2::Tree) -> Result<Vec<PathBuf>> {
    let diff = repo.diff_tree_to_tree(Some(from), Some(to), None)?;
    let mut paths: Vec<PathBuf> = diff
        .deltas()
        .flat_map(|d| [d.old_file().path(), d.new_file().path()])
        .flatten()
        .filter(|p| !p.starts_with(STATE_DIR))
        .map(Path::to_path_buf)
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    const MAIN: &str = "refs/heads/main";

    /// A repository whose `main` (checked out) holds `README.md` and, committed, five bead files
    /// under `.splice/beads/`; and a commit on top of it adding `work/x.md`. Returns (dir, old,
    /// new).
    fn fixture() -> (tempfile::TempDir, Oid, Oid) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        repo.set_head(MAIN).unwrap();
        fs::write(dir.path().join("README.md"), "hello\n").unwrap();
        fs::create_dir_all(dir.path().join(".splice/beads")).unwrap();
        for i in 0..5 {
            fs::write(dir.path().join(format!(".splice/beads/b{i}.json")), "{}\n").unwrap();
        }
        let mut index = repo.index().unwrap();
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let old = repo
            .commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
            .unwrap();
        let blob = repo.blob(b"work\n").unwrap();
        let mut work = repo.treebuilder(None).unwrap();
        work.insert("x.md", blob, 0o100644).unwrap();
        let work = work.write().unwrap();
        let mut tb = repo.treebuilder(Some(&tree)).unwrap();
        tb.insert("work", work, 0o040000).unwrap();
        let tree = repo.find_tree(tb.write().unwrap()).unwrap();
        let parent = repo.find_commit(old).unwrap();
        let new = repo
            .commit(None, &sig, &sig, "work", &tree, &[&parent])
            .unwrap();
        (dir, old, new)
    }

    /// What the writer does to committed bead files while a landing runs: replace each, by
    /// rename, with a longer or a shorter one, over and over until `stop`.
    fn rewrite_beads(root: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
        let beads = root.join(".splice/beads");
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let text = if n.is_multiple_of(2) {
                    "x".repeat(64 << 10)
                } else {
                    "{}\n".into()
                };
                let name = format!("b{}.json", n % 5);
                let tmp = beads.join(format!(".{name}.tmp"));
                fs::write(&tmp, text).unwrap();
                fs::rename(&tmp, beads.join(&name)).unwrap();
                n += 1;
            }
            n
        })
    }

    /// Bring the checkout from `from` to `to` and move `main` there.
    fn step(repo: &Repository, from: Oid, to: Oid) {
        match update(repo, MAIN, from, to).unwrap() {
            Update::Updated(_) => {}
            other => panic!("{other:?}"),
        }
        repo.reference(MAIN, to, true, "test").unwrap();
    }

    #[test]
    fn updating_never_reads_the_state_files_the_writer_is_replacing() {
        // Before: "error reading file for hashing" (no path) now and then, when git's status
        // hashed a bead file replaced by a shorter one between its `lstat` and its read.
        let (dir, old, new) = fixture();
        let repo = Repository::open(dir.path()).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let writer = rewrite_beads(dir.path(), stop.clone());
        for _ in 0..150 {
            step(&repo, old, new);
            assert!(dir.path().join("work/x.md").is_file());
            step(&repo, new, old);
            assert!(!dir.path().join("work/x.md").exists());
        }
        stop.store(true, Ordering::Relaxed);
        assert!(writer.join().unwrap() > 0);
        // The index follows the commit; the bead files' changes are left as they are.
        let statuses = repo.statuses(None).unwrap();
        let changed: Vec<String> = statuses
            .iter()
            .filter(|e| e.status() != Status::CURRENT)
            .filter_map(|e| e.path().map(str::to_string))
            .collect();
        assert!(changed.iter().all(|p| in_state(p)), "{changed:?}");
    }

    #[test]
    fn a_held_index_lock_is_waited_for() {
        let (dir, old, new) = fixture();
        let repo = Repository::open(dir.path()).unwrap();
        let lock = dir.path().join(".git/index.lock");
        fs::write(&lock, "").unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            fs::remove_file(&lock).unwrap();
        });
        step(&repo, old, new);
        release.join().unwrap();
        assert!(dir.path().join("work/x.md").is_file());
        let index = repo.index().unwrap();
        assert!(index.get_path(Path::new("work/x.md"), 0).is_some());
    }

    #[test]
    fn would_block_says_what_update_would_refuse_and_writes_nothing() {
        let (dir, old, new) = fixture();
        let repo = Repository::open(dir.path()).unwrap();
        let to = repo.find_commit(new).unwrap().tree_id();
        let dirty = |paths: &[&str]| match would_block(&repo, MAIN, old, to).unwrap() {
            Some(Update::Dirty { paths: got, .. }) => assert_eq!(got, paths),
            other => panic!("{other:?}"),
        };
        assert!(
            would_block(&repo, MAIN, old, to).unwrap().is_none(),
            "clean"
        );
        // An untracked file where the new commit adds one, then a tracked edit.
        fs::create_dir_all(dir.path().join("work")).unwrap();
        fs::write(dir.path().join("work/x.md"), "mine\n").unwrap();
        dirty(&["work/x.md"]);
        fs::write(dir.path().join("README.md"), "a person's edit\n").unwrap();
        dirty(&["README.md"]);
        // Nothing was written: update refuses for the same reason, and HEAD stays.
        assert_eq!(
            fs::read_to_string(dir.path().join("work/x.md")).unwrap(),
            "mine\n"
        );
        assert!(matches!(
            update(&repo, MAIN, old, new).unwrap(),
            Update::Dirty { .. }
        ));
        assert_eq!(repo.head().unwrap().target(), Some(old));
        assert!(
            would_block(&repo, "refs/heads/other", old, to)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn state_changes_in_the_checkout_are_not_uncommitted_work_and_are_kept() {
        let (dir, old, new) = fixture();
        let repo = Repository::open(dir.path()).unwrap();
        fs::write(dir.path().join(".splice/beads/b0.json"), "changed\n").unwrap();
        fs::write(dir.path().join(".splice/new.json"), "new\n").unwrap();
        step(&repo, old, new);
        let b0 = fs::read_to_string(dir.path().join(".splice/beads/b0.json")).unwrap();
        assert_eq!(b0, "changed\n");
        fs::write(dir.path().join("README.md"), "a person's edit\n").unwrap();
        match update(&repo, MAIN, new, old).unwrap() {
            Update::Dirty { paths, .. } => assert_eq!(paths, vec!["README.md".to_string()]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_holder_is_found_by_its_head_file_and_a_head_file_splice_cannot_read_is_left_to_git() {
        let (dir, old, _) = fixture();
        let repo = Repository::open(dir.path()).unwrap();
        let commit = repo.find_commit(old).unwrap();
        let mut wts = Vec::new();
        for name in ["a", "b", "c"] {
            let branch = repo.branch(name, &commit, false).unwrap();
            let path = dir.path().join("wt").join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            let reference = branch.into_reference();
            let mut opts = git2::WorktreeAddOptions::new();
            opts.reference(Some(&reference));
            wts.push(repo.worktree(name, &path, Some(&opts)).unwrap());
        }
        let found = |refname: &str| {
            holder(&repo, refname, true)
                .unwrap()
                .map(|r| checkout_path(&r))
        };
        assert_eq!(found(MAIN), Some(dir.path().to_path_buf()));
        assert_eq!(found("refs/heads/b"), Some(dir.path().join("wt/b")));
        assert_eq!(found("refs/heads/none"), None);
        // b's HEAD a link: not read by splice, but git still says b is checked out there.
        let admin = repo.commondir().join("worktrees/b");
        fs::rename(admin.join("HEAD"), admin.join("HEAD.real")).unwrap();
        std::os::unix::fs::symlink("HEAD.real", admin.join("HEAD")).unwrap();
        assert!(may_hold(&admin.join("HEAD"), "refs/heads/zzz"));
        // A worktree whose directory is gone is not validated when asked so, and no fault.
        fs::remove_dir_all(dir.path().join("wt/c")).unwrap();
        assert_eq!(found("refs/heads/c"), None);
        assert!(holder(&repo, "refs/heads/c", false).is_ok());
        let head = admin.join("HEAD.real");
        assert!(may_hold(&head, "refs/heads/b") && !may_hold(&head, "refs/heads/a"));
        fs::write(&head, format!("{old}\n")).unwrap();
        assert!(!may_hold(&head, "refs/heads/b"));
        fs::write(&head, "garbage").unwrap();
        assert!(may_hold(&head, "refs/heads/b"));
        fs::write(&head, [0xff, 0xfe]).unwrap();
        assert!(may_hold(&head, "refs/heads/b"));
    }
}
