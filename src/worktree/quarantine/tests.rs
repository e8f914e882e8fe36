//! The quarantine's tests: a real repository, a worktree splice made, git2 standing in for an
//! agent's `git`.

use super::*;

/// A repository on `main` with one commit, and node `sp-1`'s worktree (branch `splice/sp-1`).
fn fixture() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    repo.set_head("refs/heads/main").unwrap();
    let sig = git2::Signature::now("t", "t@example.com").unwrap();
    let blob = repo.blob(b"a\n").unwrap();
    let mut tb = repo.treebuilder(None).unwrap();
    tb.insert("a", blob, 0o100644).unwrap();
    let tree = repo.find_tree(tb.write().unwrap()).unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
        .unwrap();
    let worktrees = dir.path().join(".splice/worktrees");
    super::super::ensure(dir.path(), &worktrees, "sp-1", "main").unwrap();
    let root = dir.path().to_path_buf();
    (dir, root, worktrees)
}

/// What an agent does in its worktree: a commit on HEAD (its branch in the quarantine), with
/// git2 standing in for `git`. Returns the commit.
fn agent_commits(worktrees: &Path, text: &str) -> Oid {
    let wt = Repository::open(worktrees.join("sp-1")).unwrap();
    let sig = git2::Signature::now("a", "a@example.com").unwrap();
    fs::write(worktrees.join("sp-1/work"), text).unwrap();
    let blob = wt.blob(text.as_bytes()).unwrap();
    let parent = wt.head().unwrap().peel_to_commit().unwrap();
    let mut tb = wt.treebuilder(Some(&parent.tree().unwrap())).unwrap();
    tb.insert("work", blob, 0o100644).unwrap();
    let tree = wt.find_tree(tb.write().unwrap()).unwrap();
    wt.commit(Some("HEAD"), &sig, &sig, "work", &tree, &[&parent])
        .unwrap()
}

fn tip(root: &Path, name: &str) -> Oid {
    Repository::open(root).unwrap().refname_to_id(name).unwrap()
}

fn loose(p: &Path, oid: Oid) -> PathBuf {
    let hex = oid.to_string();
    p.join("objects").join(&hex[..2]).join(&hex[2..])
}

#[test]
fn the_agents_commit_is_imported_and_nothing_else() {
    let (_dir, root, worktrees) = fixture();
    let main_before = tip(&root, "refs/heads/main");
    let p = enter(&root, &worktrees, "sp-1").unwrap();
    let commit = agent_commits(&worktrees, "work\n");
    // It moves what it can in its quarantine: main, another node's branch, a tag.
    let wt = Repository::open(worktrees.join("sp-1")).unwrap();
    assert_eq!(wt.path(), canonical(&p).join("").as_path());
    for name in [
        "refs/heads/main",
        "refs/heads/splice/sp-2",
        "refs/tags/planted",
    ] {
        wt.reference(name, commit, true, "agent").unwrap();
    }
    assert!(
        !Repository::open(&root)
            .unwrap()
            .odb()
            .unwrap()
            .exists(commit),
        "the commit is in the quarantine only"
    );
    let left = leave(&root, &worktrees, "sp-1").unwrap();
    assert!(
        matches!(&left, Left::Moved { to, objects: 3, .. } if *to == commit.to_string()),
        "{left:?}"
    );
    let main = Repository::open(&root).unwrap();
    assert_eq!(tip(&root, "refs/heads/splice/sp-1"), commit);
    assert_eq!(tip(&root, "refs/heads/main"), main_before);
    assert!(main.find_reference("refs/heads/splice/sp-2").is_err());
    assert!(main.find_reference("refs/tags/planted").is_err());
    // The worktree is splice's own checkout again, its index on the imported commit.
    let checkout = super::super::verify::open_checkout(&worktrees.join("sp-1")).unwrap();
    assert!(checkout.statuses(None).unwrap().is_empty());
    assert!(!entered(&worktrees, "sp-1"));
    assert_eq!(leave(&root, &worktrees, "sp-1").unwrap(), Left::NotEntered);
}

#[test]
fn a_dispatch_that_committed_nothing_moves_nothing() {
    let (_dir, root, worktrees) = fixture();
    let before = tip(&root, "refs/heads/splice/sp-1");
    enter(&root, &worktrees, "sp-1").unwrap();
    assert_eq!(leave(&root, &worktrees, "sp-1").unwrap(), Left::Unchanged);
    assert_eq!(tip(&root, "refs/heads/splice/sp-1"), before);
}

#[test]
fn an_object_whose_content_is_another_is_not_imported() {
    let (_dir, root, worktrees) = fixture();
    let before = tip(&root, "refs/heads/splice/sp-1");
    let p = enter(&root, &worktrees, "sp-1").unwrap();
    let commit = agent_commits(&worktrees, "work\n");
    // The commit's file now holds a blob's bytes (a valid object, under the wrong name).
    let wt = Repository::open(worktrees.join("sp-1")).unwrap();
    let blob = wt.blob(b"something else\n").unwrap();
    let (from, to) = (loose(&p, blob), loose(&p, commit));
    let mut perms = fs::metadata(&to).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    fs::set_permissions(&to, perms).unwrap();
    fs::copy(&from, &to).unwrap();
    let e = leave(&root, &worktrees, "sp-1").unwrap_err().to_string();
    assert!(e.contains("not imported"), "{e}");
    assert_eq!(tip(&root, "refs/heads/splice/sp-1"), before);
    assert!(super::super::verify::open_checkout(&worktrees.join("sp-1")).is_ok());
    assert!(!entered(&worktrees, "sp-1"));
}

#[test]
fn a_link_the_agent_left_in_its_objects_is_never_written_through() {
    let (dir, root, worktrees) = fixture();
    let p = enter(&root, &worktrees, "sp-1").unwrap();
    leave(&root, &worktrees, "sp-1").unwrap();
    // The agent points its objects' `info` at the repository's.
    let theirs = dir.path().join(".git/objects/info");
    fs::create_dir_all(&theirs).unwrap();
    fs::write(theirs.join("alternates"), "keep\n").unwrap();
    fs::remove_dir_all(p.join("objects/info")).unwrap();
    std::os::unix::fs::symlink(&theirs, p.join("objects/info")).unwrap();
    enter(&root, &worktrees, "sp-1").unwrap();
    assert_eq!(
        fs::read_to_string(theirs.join("alternates")).unwrap(),
        "keep\n"
    );
    assert!(p.join("objects/info").symlink_metadata().unwrap().is_dir());
    leave(&root, &worktrees, "sp-1").unwrap();
}

#[test]
fn objects_that_are_a_link_are_refused_and_what_it_names_is_left_alone() {
    let (dir, root, worktrees) = fixture();
    let p = enter(&root, &worktrees, "sp-1").unwrap();
    agent_commits(&worktrees, "work\n");
    let theirs = dir.path().join(".git/objects");
    fs::create_dir_all(theirs.join("info")).unwrap();
    fs::write(theirs.join("info/alternates"), "keep\n").unwrap();
    let before = tip(&root, "refs/heads/splice/sp-1");
    fs::remove_dir_all(p.join("objects")).unwrap();
    std::os::unix::fs::symlink(&theirs, p.join("objects")).unwrap();
    let e = leave(&root, &worktrees, "sp-1").unwrap_err().to_string();
    assert!(e.contains("not imported"), "{e}");
    assert_eq!(
        fs::read_to_string(theirs.join("info/alternates")).unwrap(),
        "keep\n"
    );
    assert_eq!(tip(&root, "refs/heads/splice/sp-1"), before);
}

#[test]
fn a_link_among_the_objects_is_refused() {
    let (_dir, root, worktrees) = fixture();
    let p = enter(&root, &worktrees, "sp-1").unwrap();
    agent_commits(&worktrees, "work\n");
    std::os::unix::fs::symlink("/dev/zero", p.join("objects/zz")).unwrap();
    let e = leave(&root, &worktrees, "sp-1").unwrap_err().to_string();
    assert!(e.contains("neither a file nor a directory"), "{e}");
    // The agent's objects are back in its quarantine for a next dispatch.
    assert!(p.join("objects/info/alternates").is_file());
}

#[test]
fn what_an_agent_left_in_its_quarantine_is_gone_at_the_next_dispatch() {
    let (_dir, root, worktrees) = fixture();
    let p = enter(&root, &worktrees, "sp-1").unwrap();
    let commit = agent_commits(&worktrees, "work\n");
    fs::create_dir_all(p.join("hooks")).unwrap();
    fs::write(p.join("hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    fs::write(p.join("config"), "[core]\n\tfsmonitor = evil\n").unwrap();
    fs::write(p.join("commondir"), "../..\n").unwrap();
    leave(&root, &worktrees, "sp-1").unwrap();
    enter(&root, &worktrees, "sp-1").unwrap();
    assert!(!p.join("hooks").exists() && !p.join("commondir").exists());
    let config = fs::read_to_string(p.join("config")).unwrap();
    assert!(!config.contains("evil"), "{config}");
    // Its branch is where the import left it, and its object is still at hand.
    let wt = Repository::open(worktrees.join("sp-1")).unwrap();
    assert_eq!(wt.head().unwrap().target(), Some(commit));
    assert_eq!(wt.head().unwrap().name(), Some("refs/heads/splice/sp-1"));
    leave(&root, &worktrees, "sp-1").unwrap();
}

#[test]
fn a_runner_that_died_mid_dispatch_has_the_work_imported_by_the_next() {
    let (_dir, root, worktrees) = fixture();
    let before = tip(&root, "refs/heads/splice/sp-1");
    enter(&root, &worktrees, "sp-1").unwrap();
    let commit = agent_commits(&worktrees, "work\n");
    // No leave. `ensure`, which runs before a claim, touches nothing (the dispatch may be
    // another runner's, alive).
    let wt = super::super::ensure(&root, &worktrees, "sp-1", "main").unwrap();
    assert!(!wt.created);
    assert!(entered(&worktrees, "sp-1"));
    assert_eq!(tip(&root, "refs/heads/splice/sp-1"), before);
    // The next claimant's entry imports the work first.
    enter(&root, &worktrees, "sp-1").unwrap();
    assert_eq!(tip(&root, "refs/heads/splice/sp-1"), commit);
    leave(&root, &worktrees, "sp-1").unwrap();
    assert!(!entered(&worktrees, "sp-1"));
}
