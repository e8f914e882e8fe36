//! A checkout splice made is opened only through the admin data splice made for it (issue 31):
//! an agent may write its worktree, so its `.git` file may have been pointed at the
//! repository's own `.git`, or at a fake repository whose `core.worktree` is the main checkout.
//! A reset, a clean or a rollback through such a checkout would move `main` or write the main
//! checkout. [`open_checkout`] opens `<repo>/.splice/worktrees/<name>` only when:
//!
//! - its `.git` is a regular file reading `gitdir: <common dir>/worktrees/<name>`;
//! - that admin directory's `gitdir` names this checkout's `.git` and its `commondir` is
//!   `../..` (git's own, pointing back at the repository's common directory);
//! - git2, opening it, agrees: a linked worktree, whose git directory is that admin directory
//!   and whose work tree is this checkout.
//!
//! Anything else is an error naming what changed: the caller escalates, and nothing is reset.
//! Its remedy moves the checkout aside and runs no git in it ([`set_aside`]).

use std::path::{Path, PathBuf};

use git2::Repository;

use super::{canonical, git_at};
use crate::error::{Error, Result};

/// Open the checkout at `path` (a node's worktree or a target checkout under
/// `.splice/worktrees/`), verified as the module doc says.
pub fn open_checkout(path: &Path) -> Result<Repository> {
    let changed = |what: String| {
        Error::bad_file(
            path.join(".git"),
            format!(
                "{what}: this checkout's git data is not what splice made (an agent may have \
                 changed it), so splice does not reset, clean or roll it back; set the checkout \
                 aside (`{} && git -C {} worktree prune`), look at its files without running git \
                 in it, and run again",
                set_aside(path, &aside_of(path), &|p| p.display().to_string()),
                // `<repo>/.splice/worktrees/<name>`: the repository is three levels up.
                crate::hooks::shell_word(path.ancestors().nth(3).unwrap_or(Path::new(".")))
            ),
        )
    };
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| changed("the checkout has no name".into()))?;
    // `<repo>/.splice/worktrees/<name>`: the repository is three levels up.
    let repo_root = path
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .ok_or_else(|| changed("the checkout is not under .splice/worktrees/".into()))?;
    let main =
        Repository::open(repo_root).map_err(|e| git_at(repo_root, "not a git repository", e))?;
    let common = canonical(main.commondir());
    let admin = common.join("worktrees").join(name);
    let dot_git = path.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git)
        .map_err(|e| changed(format!("its .git cannot be read ({e})")))?;
    if !meta.is_file() {
        return Err(changed("its .git is not a file".into()));
    }
    let text = small(&dot_git).ok_or_else(|| changed("its .git cannot be read".into()))?;
    let named = text
        .strip_prefix("gitdir:")
        .map(|s| path.join(s.trim()))
        .ok_or_else(|| changed("its .git names no gitdir".into()))?;
    if canonical(&named) != admin {
        return Err(changed(format!(
            "its .git names {}, not {}",
            named.display(),
            admin.display()
        )));
    }
    let back = small(&admin.join("gitdir"))
        .map(|t| canonical(Path::new(t.trim())))
        .unwrap_or_default();
    if back != canonical(&dot_git) {
        return Err(changed(format!(
            "{}/gitdir does not name this checkout",
            admin.display()
        )));
    }
    let commondir = small(&admin.join("commondir")).unwrap_or_default();
    if canonical(&admin.join(commondir.trim())) != common {
        return Err(changed(format!(
            "{}/commondir does not name the repository's git directory",
            admin.display()
        )));
    }
    let repo = Repository::open(path).map_err(|e| git_at(path, "not a git worktree", e))?;
    let same_dir = canonical(repo.path()) == admin;
    let same_tree = repo.workdir().map(canonical) == Some(canonical(path));
    if !repo.is_worktree() || !same_dir || !same_tree {
        return Err(changed(
            "git opens it as another repository or work tree (core.worktree?)".into(),
        ));
    }
    Ok(repo)
}

/// Where the checkout at `path` is set aside ([`aside`]).
fn aside_of(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    aside(path.parent().unwrap_or(path), &name)
}

/// Where a directory `name` under `.splice/worktrees/` is set aside:
/// `.splice/worktrees/.set-aside/<name>`, or `<name>-2`, `-3`, … when that is taken. A hidden
/// name, so no listing of the nodes' checkouts sees it (`worktree::list`), and under
/// `.splice/worktrees/`, which the repository ignores.
pub fn aside(worktrees_dir: &Path, name: &str) -> PathBuf {
    let dir = worktrees_dir.join(SET_ASIDE);
    (1..)
        .map(|n| match n {
            1 => dir.join(name),
            _ => dir.join(format!("{name}-{n}")),
        })
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .expect("a free name")
}

/// The directory of [`aside`], under `.splice/worktrees/`.
pub const SET_ASIDE: &str = ".set-aside";

/// The commands a person runs to move the checkout at `from` to `to` (an [`aside`] path), each
/// path as `shown` writes it, quoted for a shell; `git worktree prune` after them makes the
/// repository forget the checkout.
///
/// They move the directory and never run git in it: its `.git` may name a repository an agent
/// made, whose config (`core.fsmonitor`, a filter, a hook) runs a command of the agent's when
/// git opens it (`git worktree remove` runs `git status` in it; `git stash` too). Moving it
/// keeps everything in it — uncommitted and ignored files, which `git worktree remove --force`
/// deletes — and `git worktree prune`, run in the repository, only reads the repository's own
/// admin directories and forgets those whose checkout is gone. The node's branch and its
/// commits are not touched.
pub fn set_aside(from: &Path, to: &Path, shown: &dyn Fn(&Path) -> String) -> String {
    let word = |p: &Path| crate::hooks::shell_word(Path::new(&shown(p)));
    format!(
        "mkdir -p {} && mv {} {}",
        word(to.parent().unwrap_or(to)),
        word(from),
        word(to)
    )
}

/// The text of a small git file (at most 4 KiB, no link followed), `None` when unreadable.
fn small(path: &Path) -> Option<String> {
    crate::safe_read::read_text(path, 4096).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with one commit and a worktree `sp-1` under `.splice/worktrees/`.
    fn fixture() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let commit = repo
            .commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
            .unwrap();
        let commit = repo.find_commit(commit).unwrap();
        repo.branch("splice/sp-1", &commit, false).unwrap();
        let path = dir.path().join(".splice/worktrees/sp-1");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let branch = repo.find_reference("refs/heads/splice/sp-1").unwrap();
        let mut opts = git2::WorktreeAddOptions::new();
        opts.reference(Some(&branch));
        repo.worktree("sp-1", &path, Some(&opts)).unwrap();
        (dir, path)
    }

    fn refused(path: &Path) -> String {
        match open_checkout(path) {
            Ok(_) => panic!("{} opened", path.display()),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_checkout_splice_made_opens() {
        let (_dir, path) = fixture();
        let repo = open_checkout(&path).unwrap();
        assert!(repo.is_worktree());
    }

    #[test]
    fn a_git_file_pointed_at_the_repository_is_refused() {
        let (dir, path) = fixture();
        let common = dir.path().join(".git");
        std::fs::write(path.join(".git"), format!("gitdir: {}\n", common.display())).unwrap();
        let e = refused(&path);
        assert!(e.contains("not what splice made"), "{e}");
    }

    #[test]
    fn an_admin_directory_pointed_at_another_repository_is_refused() {
        let (dir, path) = fixture();
        let fake = dir.path().join("fake");
        Repository::init(&fake).unwrap();
        let admin = dir.path().join(".git/worktrees/sp-1");
        std::fs::write(
            admin.join("commondir"),
            format!("{}\n", fake.join(".git").display()),
        )
        .unwrap();
        let e = refused(&path);
        assert!(e.contains("commondir"), "{e}");
        std::fs::write(admin.join("commondir"), "../..\n").unwrap();
        std::fs::write(admin.join("gitdir"), "/elsewhere/.git\n").unwrap();
        let e = refused(&path);
        assert!(e.contains("gitdir"), "{e}");
    }

    #[test]
    fn a_linked_git_file_is_refused() {
        let (_dir, path) = fixture();
        let text = std::fs::read_to_string(path.join(".git")).unwrap();
        std::fs::write(path.join("git-file"), text).unwrap();
        std::fs::remove_file(path.join(".git")).unwrap();
        std::os::unix::fs::symlink(path.join("git-file"), path.join(".git")).unwrap();
        let e = refused(&path);
        assert!(e.contains("not a file"), "{e}");
    }

    #[test]
    fn a_changed_checkouts_remedy_sets_it_aside_and_loses_nothing() {
        let (dir, path) = fixture();
        std::fs::write(path.join("notes.md"), "uncommitted\n").unwrap();
        let common = dir.path().join(".git");
        std::fs::write(path.join(".git"), format!("gitdir: {}\n", common.display())).unwrap();
        let e = refused(&path);
        let fix = e
            .split_once("aside (`")
            .and_then(|(_, rest)| rest.split_once("`)"))
            .map(|(fix, _)| fix)
            .unwrap_or_else(|| panic!("no command in {e}"));
        assert!(!fix.contains("--force") && !fix.contains("rm "), "{fix}");
        // A person runs it wherever they are.
        let out = std::process::Command::new("sh")
            .args(["-c", fix])
            .current_dir(std::env::temp_dir())
            .output()
            .unwrap();
        assert!(out.status.success(), "{fix}: {out:?}");
        let aside = dir.path().join(".splice/worktrees/.set-aside/sp-1");
        assert_eq!(
            std::fs::read_to_string(aside.join("notes.md")).unwrap(),
            "uncommitted\n"
        );
        assert!(!path.exists());
        let repo = Repository::open(dir.path()).unwrap();
        assert!(repo.find_worktree("sp-1").is_err(), "git forgot it: {fix}");
    }
}
