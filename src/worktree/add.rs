//! Adding a node's worktree on its branch, as libgit2's `git_worktree_add` does, but for its
//! check that the branch is checked out nowhere: libgit2 opens every linked worktree as a
//! repository for it (`git_branch_is_checked_out`), each open reading the git config again, so
//! a dispatch cost as much as the repository had worktrees, and a run over N nodes O(N²)
//! (issue 38). Here the same question is asked of the worktrees' HEAD files first
//! ([`super::checkout::holder`]), opening only a worktree whose HEAD may name the branch.
//!
//! What is written is what libgit2 writes, in the same order: the admin directory
//! `<common dir>/worktrees/<name>/` and the work tree, each made new (neither may exist); the
//! work tree's `.git` naming the admin directory; the admin directory's `commondir`, `gitdir`
//! and `HEAD`; then HEAD checked out in the new worktree with git's safe checkout.

use std::fs;
use std::io::Write;
use std::path::Path;

use git2::Repository;
use git2::build::CheckoutBuilder;

/// Add the worktree `name` at `path` (which must not exist) with `refname` (a local branch)
/// checked out.
pub(super) fn on_branch(
    repo: &Repository,
    name: &str,
    path: &Path,
    refname: &str,
) -> std::result::Result<(), git2::Error> {
    if super::checkout::holder(repo, refname, false)?.is_some() {
        return Err(git2::Error::from_str(&format!(
            "reference {refname} is already checked out"
        )));
    }
    let common = repo.commondir();
    let admin_root = common.join("worktrees");
    if !admin_root.exists() {
        fs::create_dir(&admin_root).map_err(|e| os(&admin_root, e))?;
    }
    let admin = admin_root.join(name);
    fs::create_dir(&admin).map_err(|e| os(&admin, e))?;
    let admin = fs::canonicalize(&admin).map_err(|e| os(&admin, e))?;
    fs::create_dir(path).map_err(|e| os(path, e))?;
    let workdir = fs::canonicalize(path).map_err(|e| os(path, e))?;
    let common = fs::canonicalize(common).map_err(|e| os(common, e))?;
    write_new(
        &workdir.join(".git"),
        &format!("gitdir: {}/\n", admin.display()),
    )?;
    write_new(
        &admin.join("commondir"),
        &format!("{}/\n", common.display()),
    )?;
    write_new(
        &admin.join("gitdir"),
        &format!("{}\n", workdir.join(".git").display()),
    )?;
    write_new(&admin.join("HEAD"), &format!("ref: {refname}\n"))?;
    let wt = Repository::open(&workdir)?;
    wt.checkout_head(Some(&mut CheckoutBuilder::new()))
}

/// A new file at `path` (it must not exist) holding `text`.
fn write_new(path: &Path, text: &str) -> std::result::Result<(), git2::Error> {
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| os(path, e))
}

/// An I/O failure at `path` as git's error.
fn os(path: &Path, e: std::io::Error) -> git2::Error {
    git2::Error::new(
        git2::ErrorCode::GenericError,
        git2::ErrorClass::Os,
        format!("{}: {e}", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worktree_is_the_one_libgit2_would_add_and_a_checked_out_branch_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        repo.set_head("refs/heads/main").unwrap();
        fs::write(dir.path().join("README.md"), "hello\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("README.md")).unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let tip = repo
            .commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
            .unwrap();
        repo.branch("splice/sp-1", &repo.find_commit(tip).unwrap(), false)
            .unwrap();
        let path = dir.path().join("wt/sp-1");
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        on_branch(&repo, "sp-1", &path, "refs/heads/splice/sp-1").unwrap();
        let wt = Repository::open(&path).unwrap();
        assert!(wt.is_worktree());
        assert_eq!(wt.head().unwrap().name(), Some("refs/heads/splice/sp-1"));
        assert_eq!(
            fs::read_to_string(path.join("README.md")).unwrap(),
            "hello\n"
        );
        assert!(wt.statuses(None).unwrap().is_empty());
        let found = repo.find_worktree("sp-1").unwrap();
        assert!(found.validate().is_ok());
        let refused = |name: &str, refname: &str| {
            let path = dir.path().join("wt").join(name);
            let e = on_branch(&repo, name, &path, refname).unwrap_err();
            assert!(e.message().contains("already checked out"), "{e}");
            assert!(!path.exists());
        };
        refused("again", "refs/heads/splice/sp-1");
        refused("main", "refs/heads/main");
        // A name taken is refused as libgit2 refuses it: the admin directory exists.
        assert!(on_branch(&repo, "sp-1", &dir.path().join("wt/x"), "refs/heads/other").is_err());
    }
}
