//! Executor worktrees against real git repositories made with the `git` command.

use std::fs;
use std::path::Path;
use std::process::Command;

use splice::model::manifest::Resume;
use splice::worktree::{self, Prepared};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        // None of the machine's git configuration (tests/common's `hermetic_git`).
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env("HOME", dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository on `main` with one commit holding `README.md`, and `.splice/worktrees/` ignored.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    fs::write(root.join("README.md"), "hello\n").unwrap();
    fs::write(root.join(".gitignore"), ".splice/\n*.cache\n").unwrap();
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "first"]);
    dir
}

#[test]
fn create_reuse_and_remove() {
    let dir = repo();
    let root = dir.path();
    let wts = root.join(".splice/worktrees");
    let wt = worktree::ensure(root, &wts, "sp-1.2", "main").unwrap();
    assert!(wt.created);
    assert_eq!(wt.path, wts.join("sp-1.2"));
    assert_eq!(wt.branch, "splice/sp-1.2");
    assert_eq!(
        fs::read_to_string(wt.path.join("README.md")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        git(&wt.path, &["rev-parse", "--abbrev-ref", "HEAD"]),
        "splice/sp-1.2"
    );
    let main_sha = git(root, &["rev-parse", "main"]);
    assert_eq!(worktree::head(&wt.path).unwrap(), main_sha);

    // Work in the tree survives a second ensure.
    fs::write(wt.path.join("work.txt"), "mine").unwrap();
    let again = worktree::ensure(root, &wts, "sp-1.2", "main").unwrap();
    assert!(!again.created);
    assert_eq!(again.path, wt.path);
    assert!(again.path.join("work.txt").exists());
    assert_eq!(worktree::list(&wts).unwrap(), vec!["sp-1.2".to_string()]);

    // A commit on the node's branch, then remove: the directory goes, the branch stays.
    git(&wt.path, &["add", "work.txt"]);
    git(&wt.path, &["commit", "-q", "-m", "work"]);
    let work_sha = worktree::head(&wt.path).unwrap();
    worktree::remove(root, &wts, "sp-1.2").unwrap();
    assert!(!wt.path.exists());
    assert!(worktree::list(&wts).unwrap().is_empty());
    assert_eq!(git(root, &["rev-parse", "splice/sp-1.2"]), work_sha);
    assert!(!git(root, &["worktree", "list"]).contains("sp-1.2"));

    // Re-creating checks the kept branch out again, with its work.
    let back = worktree::ensure(root, &wts, "sp-1.2", "main").unwrap();
    assert!(back.created);
    assert_eq!(worktree::head(&back.path).unwrap(), work_sha);
    // Removing twice is fine.
    worktree::remove(root, &wts, "sp-1.2").unwrap();
    worktree::remove(root, &wts, "sp-1.2").unwrap();
}

#[test]
fn a_deleted_directory_is_recreated() {
    let dir = repo();
    let root = dir.path();
    let wts = root.join(".splice/worktrees");
    let wt = worktree::ensure(root, &wts, "sp-9", "main").unwrap();
    fs::remove_dir_all(&wt.path).unwrap();
    let again = worktree::ensure(root, &wts, "sp-9", "main").unwrap();
    assert!(again.created);
    assert!(again.path.join("README.md").exists());

    // Only nodes are listed, once each (`sp-9` has a worktree and a target checkout): not files
    // or hidden entries.
    fs::create_dir_all(wts.join("sp-9@target")).unwrap();
    fs::create_dir_all(wts.join(".tmp")).unwrap();
    fs::write(wts.join("stray-file"), "x").unwrap();
    assert_eq!(worktree::list(&wts).unwrap(), vec!["sp-9".to_string()]);
    assert!(worktree::list(&root.join("missing")).unwrap().is_empty());
}

#[test]
fn target_is_a_branch_and_bad_input_is_an_error() {
    let dir = repo();
    let root = dir.path();
    git(root, &["checkout", "-q", "-b", "campaign"]);
    fs::write(root.join("c.txt"), "c").unwrap();
    git(root, &["add", "c.txt"]);
    git(root, &["commit", "-q", "-m", "campaign"]);
    git(root, &["checkout", "-q", "main"]);
    let wts = root.join(".splice/worktrees");
    let wt = worktree::ensure(root, &wts, "sp-2", "campaign").unwrap();
    assert!(wt.path.join("c.txt").exists());

    let err = worktree::ensure(root, &wts, "sp-3", "no-such-branch").unwrap_err();
    assert!(err.to_string().contains("no-such-branch"), "{err}");
    assert!(worktree::ensure(root, &wts, "../escape", "main").is_err());
    assert!(worktree::remove(root, &wts, "a/b").is_err());
    let not_repo = tempfile::tempdir().unwrap();
    let err = worktree::ensure(not_repo.path(), &wts, "sp-4", "main").unwrap_err();
    assert!(err.to_string().contains("not a git repository"), "{err}");
    // A stray non-empty directory is not taken over.
    fs::create_dir_all(wts.join("sp-5")).unwrap();
    fs::write(wts.join("sp-5/x"), "x").unwrap();
    let err = worktree::ensure(root, &wts, "sp-5", "main").unwrap_err();
    assert!(err.to_string().contains("sp-5"), "{err}");
}

#[test]
fn redo_resets_and_cleans_on_a_retry_continue_keeps() {
    let dir = repo();
    let root = dir.path();
    let wts = root.join(".splice/worktrees");
    let wt = worktree::ensure(root, &wts, "sp-7", "main").unwrap();
    let base = worktree::head(&wt.path).unwrap();

    let dirty = |p: &Path| {
        fs::write(p.join("README.md"), "changed\n").unwrap();
        fs::write(p.join("new.txt"), "new").unwrap();
        fs::create_dir_all(p.join("newdir/sub")).unwrap();
        fs::write(p.join("newdir/sub/f"), "f").unwrap();
        fs::write(p.join("build.cache"), "ignored").unwrap();
        fs::write(p.join("committed.txt"), "c").unwrap();
        git(p, &["add", "committed.txt"]);
        git(p, &["commit", "-q", "-m", "attempt work"]);
    };
    dirty(&wt.path);

    // The first dispatch of a step never resets, whatever the policy.
    let first = worktree::prepare_for_attempt(&wt.path, Resume::Redo, false, Some(&base)).unwrap();
    assert_eq!(first, Prepared::First);
    assert!(wt.path.join("new.txt").exists());

    // continue keeps everything.
    let kept =
        worktree::prepare_for_attempt(&wt.path, Resume::Continue, true, Some(&base)).unwrap();
    assert_eq!(kept, Prepared::Kept);
    assert!(wt.path.join("new.txt").exists());
    assert_ne!(worktree::head(&wt.path).unwrap(), base);

    // redo on a retry: back to the base, untracked gone, ignored kept.
    let reset = worktree::prepare_for_attempt(&wt.path, Resume::Redo, true, Some(&base)).unwrap();
    assert_eq!(reset, Prepared::Reset(base.clone()));
    assert_eq!(worktree::head(&wt.path).unwrap(), base);
    assert_eq!(
        fs::read_to_string(wt.path.join("README.md")).unwrap(),
        "hello\n"
    );
    assert!(!wt.path.join("new.txt").exists());
    assert!(!wt.path.join("newdir").exists());
    assert!(!wt.path.join("committed.txt").exists());
    assert!(wt.path.join("build.cache").exists());
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");

    // redo without a recorded base refuses to guess.
    let err = worktree::prepare_for_attempt(&wt.path, Resume::Redo, true, None).unwrap_err();
    assert!(err.to_string().contains("redo"), "{err}");
}

#[test]
fn a_target_checkout_is_detached_at_the_tip_and_lists_its_node() {
    let dir = repo();
    let root = dir.path();
    let first = git(root, &["rev-parse", "main"]);
    // A tag named like the branch, on an older commit: the branch wins.
    git(root, &["tag", "campaign", &first]);
    git(root, &["checkout", "-q", "-b", "campaign"]);
    fs::write(root.join("c.txt"), "c").unwrap();
    git(root, &["add", "c.txt"]);
    git(root, &["commit", "-q", "-m", "campaign"]);
    let tip = git(root, &["rev-parse", "refs/heads/campaign"]);
    let wts = root.join(".splice/worktrees");

    let co = worktree::checkout_target(root, &wts, "sp-4", "campaign").unwrap();
    assert_eq!(co.path, worktree::target_path(&wts, "sp-4"));
    assert_eq!(co.path, wts.join("sp-4@target"));
    assert_eq!(co.tip, tip);
    assert_eq!(
        git(&co.path, &["rev-parse", "--abbrev-ref", "HEAD"]),
        "HEAD"
    );
    assert!(co.path.join("c.txt").exists());
    assert_eq!(git(root, &["branch", "--list", "sp-4@target"]), "");
    assert_eq!(worktree::head(&co.path).unwrap(), tip);
    // Issue 10: the node is listed for its target checkout, so the runner can clean it up.
    assert_eq!(worktree::list(&wts).unwrap(), vec!["sp-4".to_string()]);

    // A refresh removes stray files and follows the tip.
    fs::write(co.path.join("stray.txt"), "x").unwrap();
    git(root, &["checkout", "-q", "main"]);
    let again = worktree::checkout_target(root, &wts, "sp-4", "main").unwrap();
    assert_eq!(again.tip, first);
    assert!(!again.path.join("stray.txt").exists() && !again.path.join("c.txt").exists());

    let repo = worktree::open_repo(root).unwrap();
    let (first, tip) = (
        git2::Oid::from_str(&first).unwrap(),
        worktree::resolve(&repo, "campaign").unwrap(),
    );
    assert!(worktree::is_on(&repo, first, tip).unwrap());
    assert!(!worktree::is_on(&repo, tip, first).unwrap());
    let err = worktree::resolve(&repo, "nowhere").unwrap_err();
    assert!(err.to_string().contains("`nowhere`"), "{err}");
    assert_eq!(worktree::current_branch(root).as_deref(), Some("main"));
}

#[test]
fn removal_takes_both_checkouts_and_a_branch_goes_only_when_its_commits_are_on_the_target() {
    let dir = repo();
    let root = dir.path();
    let wts = root.join(".splice/worktrees");
    let wt = worktree::ensure(root, &wts, "sp-5", "main").unwrap();
    worktree::checkout_target(root, &wts, "sp-5", "main").unwrap();
    fs::write(wt.path.join("work.txt"), "work").unwrap();
    git(&wt.path, &["add", "work.txt"]);
    git(&wt.path, &["commit", "-q", "-m", "work"]);
    worktree::remove(root, &wts, "sp-5").unwrap();
    assert!(!wts.join("sp-5").exists() && !wts.join("sp-5@target").exists());
    assert!(worktree::list(&wts).unwrap().is_empty());
    assert_eq!(
        git(root, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );

    // One commit is not on main: the branch is kept, and says how many.
    assert_eq!(
        worktree::delete_branch_if_on(root, &wts, "sp-5", "main").unwrap(),
        worktree::Branch::Kept {
            branch: "splice/sp-5".into(),
            target: "main".into(),
            commits: 1
        }
    );
    assert_eq!(
        git(root, &["branch", "--list", "splice/sp-5"]),
        "splice/sp-5"
    );
    // Once it is on main, the branch goes; then there is nothing to delete.
    git(root, &["merge", "-q", "--ff-only", "splice/sp-5"]);
    assert_eq!(
        worktree::delete_branch_if_on(root, &wts, "sp-5", "main").unwrap(),
        worktree::Branch::Deleted {
            branch: "splice/sp-5".into()
        }
    );
    assert_eq!(git(root, &["branch", "--list", "splice/*"]), "");
    assert_eq!(
        worktree::delete_branch_if_on(root, &wts, "sp-5", "main").unwrap(),
        worktree::Branch::Absent
    );
}

// --- issue 33: worktrees under concurrency -------------------------------------------------

/// The admin directory git keeps for worktree `name` of the repository at `root`.
fn admin(root: &Path, name: &str) -> std::path::PathBuf {
    root.join(".git/worktrees").join(name)
}

#[test]
fn runners_ensuring_one_node_at_once_get_one_whole_worktree() {
    // Before: a second runner took a worktree another was still adding (its `.git` written,
    // its files and index not yet) for a finished one.
    let dir = repo();
    let root = dir.path().to_path_buf();
    let wts = root.join(".splice/worktrees");
    let main_sha = git(&root, &["rev-parse", "main"]);
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let (root, wts) = (root.clone(), wts.clone());
            std::thread::spawn(move || {
                let wt = worktree::ensure(&root, &wts, "sp-7", "main").unwrap();
                // Whole when handed over: files, index and HEAD.
                assert!(wt.path.join("README.md").is_file());
                assert!(admin(&root, "sp-7").join("index").is_file());
                assert_eq!(worktree::head(&wt.path).unwrap(), wt.head);
                wt
            })
        })
        .collect();
    let made: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(made.iter().filter(|w| w.created).count(), 1);
    assert!(made.iter().all(|w| w.head == main_sha));
}

#[test]
fn a_creation_cut_off_is_made_again_and_removals_racing_with_ensures_never_fail() {
    let dir = repo();
    let root = dir.path().to_path_buf();
    let wts = root.join(".splice/worktrees");
    let wt = worktree::ensure(&root, &wts, "sp-8", "main").unwrap();
    // A runner died while git added the worktree: its marker is left, and git had written the
    // `.git` but not the files or the index.
    fs::write(wts.join(".sp-8.creating"), "").unwrap();
    fs::remove_file(wt.path.join("README.md")).unwrap();
    fs::remove_file(admin(&root, "sp-8").join("index")).unwrap();
    let again = worktree::ensure(&root, &wts, "sp-8", "main").unwrap();
    assert!(again.created);
    assert!(again.path.join("README.md").is_file());
    assert!(admin(&root, "sp-8").join("index").is_file());
    assert!(!wts.join(".sp-8.creating").exists());
    assert_eq!(worktree::list(&wts).unwrap(), vec!["sp-8".to_string()]);

    // One runner cleans up after the node closed while another, deciding on an older snapshot,
    // makes its worktree: neither fails, and a branch checked out again is kept, not deleted.
    let (r2, w2) = (root.clone(), wts.clone());
    let cleaner = std::thread::spawn(move || {
        for _ in 0..30 {
            worktree::remove(&r2, &w2, "sp-8").unwrap();
            let _ = worktree::delete_branch_if_on(&r2, &w2, "sp-8", "main").unwrap();
        }
    });
    for _ in 0..30 {
        let wt = worktree::ensure(&root, &wts, "sp-8", "main").unwrap();
        assert_eq!(wt.head, git(&root, &["rev-parse", "main"]));
    }
    cleaner.join().unwrap();
    let wt = worktree::ensure(&root, &wts, "sp-8", "main").unwrap();
    assert_eq!(
        worktree::delete_branch_if_on(&root, &wts, "sp-8", "main").unwrap(),
        worktree::Branch::CheckedOut {
            branch: wt.branch.clone()
        }
    );
}
