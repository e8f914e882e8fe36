//! A dispatch's git quarantine (issue 31, item 4): while an agent runs, its worktree's `.git`
//! names a private repository of the node's, and nothing the agent does in git reaches the
//! repository until the runner imports it.
//!
//! Landlock cannot let a process create one ref and no other, and a writable object store lets
//! an agent replace loose objects git does not verify again. So a dispatch gets
//! `.splice/worktrees/.dispatch-git/<id>/` (`P`), the only git directory it may write:
//!
//! - its objects are its own, with the repository's objects as read-only alternates;
//! - its refs are the repository's branches, tags and remote branches and the node's loop
//!   snapshots as they were when the dispatch started (in `packed-refs`), and the node's branch
//!   `splice/<id>`, checked out;
//! - its config includes the repository's, then turns off gc and maintenance;
//! - its index is a copy of the worktree's.
//!
//! [`enter`] writes all of that afresh before each dispatch (nothing an agent left in `P` but
//! its objects and reflogs survives it) and points the worktree's `.git` at `P`. [`leave`],
//! after the dispatch whatever its end, imports only what `P`'s HEAD names: every object
//! reachable from it that the repository lacks is read from `P`'s objects, hashed again and
//! written to the repository, and `splice/<id>` is moved to it; then `.git` names the worktree's
//! own admin directory again. Everything else the agent did in `P` — other branches moved,
//! tags, config, hooks, stray objects — stays there.
//!
//! The runner never opens `P` as a repository: it reads `P`'s HEAD and refs as files (no link
//! followed, bounded) and its objects only after moving the object directory where no sandboxed
//! process can write (a process that outlived its dispatch cannot swap an object for a FIFO
//! under the import), checking that it holds only directories and regular files. A marker
//! outside `P` (`<id>.entered`) says a dispatch entered and was not left: the next runner to
//! claim the node imports a dead runner's work when it enters ([`enter`]); no one else touches
//! a quarantine a live dispatch may be in.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository};

use super::{check_id, git_at, node_path, open_repo};
use crate::error::{Error, Result};

/// The directory of the nodes' private git directories, under `.splice/worktrees/`.
const DIR: &str = ".dispatch-git";

/// The most of a ref file or of `HEAD` that is read.
const REF_CAP: u64 = 4096;

/// The most of `P`'s `packed-refs` that is read.
const PACKED_CAP: u64 = 256 << 20;

/// How many symbolic refs are followed from `HEAD`.
const SYMREF_DEPTH: usize = 5;

/// Node `id`'s private git directory.
pub fn gitdir(worktrees_dir: &Path, id: &str) -> PathBuf {
    worktrees_dir.join(DIR).join(id)
}

/// The marker of a dispatch that entered and was not left: it holds the branch's tip at entry.
fn marker(worktrees_dir: &Path, id: &str) -> PathBuf {
    worktrees_dir.join(DIR).join(format!("{id}.entered"))
}

/// Where `P`'s objects are moved while they are imported.
fn staging(worktrees_dir: &Path, id: &str) -> PathBuf {
    worktrees_dir.join(DIR).join(format!("{id}.import"))
}

/// Has a dispatch entered node `id`'s quarantine and not left it?
pub fn entered(worktrees_dir: &Path, id: &str) -> bool {
    marker(worktrees_dir, id).symlink_metadata().is_ok()
}

/// What [`leave`] did to the node's branch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Left {
    /// No dispatch had entered.
    NotEntered,
    /// The dispatch's HEAD is the branch's tip: nothing moved.
    Unchanged,
    /// `splice/<id>` moved from `from` to `to`, with `objects` objects imported.
    Moved {
        from: String,
        to: String,
        objects: usize,
    },
}

/// Make node `id`'s quarantine for a dispatch and point its worktree's `.git` at it; returns
/// its path. The worktree must be one splice made (`verify::open_checkout`).
pub fn enter(repo_root: &Path, worktrees_dir: &Path, id: &str) -> Result<PathBuf> {
    check_id(id)?;
    if entered(worktrees_dir, id) {
        leave(repo_root, worktrees_dir, id)?;
    }
    let path = node_path(worktrees_dir, id);
    let checkout = super::verify::open_checkout(&path)?;
    let main = open_repo(repo_root)?;
    let branch = format!("refs/heads/{}", super::branch_name(id));
    let tip = main
        .refname_to_id(&branch)
        .map_err(|e| git_at(repo_root, &format!("reading {branch}"), e))?;
    let p = gitdir(worktrees_dir, id);
    fs::create_dir_all(&p).map_err(|e| Error::io(&p, e))?;
    scrub(&p)?;
    let common = canonical(main.commondir());
    // The agent's objects stay; nothing under them is followed: an `info` that is not a
    // directory of its own (a link to the repository's) is replaced, never written through.
    let objects = p.join("objects");
    let info = objects.join("info");
    if !objects.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        remove_any(&objects)?;
        fs::create_dir(&objects).map_err(|e| Error::io(&objects, e))?;
    }
    if !info.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        remove_any(&info)?;
        fs::create_dir(&info).map_err(|e| Error::io(&info, e))?;
    }
    remove_any(&info.join("alternates"))?;
    write_new(
        &info.join("alternates"),
        format!("{}\n", common.join("objects").display()).as_bytes(),
    )?;
    write_new(&p.join("config"), config(&common, &path).as_bytes())?;
    write_new(&p.join("HEAD"), format!("ref: {branch}\n").as_bytes())?;
    write_new(
        &p.join("packed-refs"),
        packed_refs(&main, &branch, id)?.as_bytes(),
    )?;
    // Made afresh (the scrub removed them), each one new: none is an agent's link.
    let own = p.join(&branch);
    for dir in ["refs", "refs/heads", "refs/heads/splice", "refs/tags"] {
        let dir = p.join(dir);
        fs::create_dir(&dir).map_err(|e| Error::io(&dir, e))?;
    }
    write_new(&own, format!("{tip}\n").as_bytes())?;
    let index = checkout.path().join("index");
    if index.is_file() {
        let mut from = fs::File::open(&index).map_err(|e| Error::io(&index, e))?;
        let to_path = p.join("index");
        let mut to = create_new(&to_path)?;
        std::io::copy(&mut from, &mut to).map_err(|e| Error::io(&to_path, e))?;
    }
    crate::store::atomic::replace_file(&marker(worktrees_dir, id), format!("{tip}\n").as_bytes())?;
    point_git_file(&path, &p)?;
    Ok(p)
}

/// After a dispatch in node `id`'s quarantine, whatever its end: import what the quarantine's
/// HEAD names and move `splice/<id>` to it, then point the worktree's `.git` back at its own
/// admin directory (the module doc). An import that cannot be verified moves nothing and is an
/// error naming the quarantine; `.git` is pointed back all the same.
pub fn leave(repo_root: &Path, worktrees_dir: &Path, id: &str) -> Result<Left> {
    check_id(id)?;
    let mark = marker(worktrees_dir, id);
    if mark.symlink_metadata().is_err() {
        return Ok(Left::NotEntered);
    }
    let main = open_repo(repo_root)?;
    let path = node_path(worktrees_dir, id);
    let p = gitdir(worktrees_dir, id);
    let admin = canonical(main.commondir()).join("worktrees").join(id);
    let imported = import(&main, worktrees_dir, id, &p);
    // Whatever the import did, the worktree is the runner's own checkout again.
    if path.is_dir() {
        point_git_file(&path, &admin)?;
    }
    // The import was tried: a refused one is the caller's to report, not to try again.
    fs::remove_file(&mark).map_err(|e| Error::io(&mark, e))?;
    let left = imported?;
    if let Left::Moved { to, .. } = &left
        && path.is_dir()
    {
        // The index follows the branch: the worktree's files are as the agent left them.
        let checkout = super::verify::open_checkout(&path)?;
        let commit = checkout.find_object(Oid::from_str(to)?, None)?;
        checkout
            .reset(&commit, git2::ResetType::Mixed, None)
            .map_err(|e| git_at(&path, "updating the index to the imported commit", e))?;
    }
    Ok(left)
}

/// Remove node `id`'s quarantine, its marker and any staging left by a crash.
pub fn remove(worktrees_dir: &Path, id: &str) -> Result<()> {
    for path in [
        gitdir(worktrees_dir, id),
        staging(worktrees_dir, id),
        marker(worktrees_dir, id),
    ] {
        remove_any(&path)?;
    }
    Ok(())
}

/// Import what `P`'s HEAD names into `main` and move the node's branch to it.
fn import(main: &Repository, worktrees_dir: &Path, id: &str, p: &Path) -> Result<Left> {
    let branch = format!("refs/heads/{}", super::branch_name(id));
    let tip = main
        .refname_to_id(&branch)
        .map_err(|e| git_at(main.path(), &format!("reading {branch}"), e))?;
    let head = head_of(p)?;
    if head == tip {
        return Ok(Left::Unchanged);
    }
    let stage = staging(worktrees_dir, id);
    remove_any(&stage)?;
    let objects = p.join("objects");
    let moved = fs::rename(&objects, &stage);
    let copied = match moved {
        Ok(()) => copy_objects(main, &stage, head),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => copy_objects(main, &stage, head),
        Err(e) => Err(Error::io(&objects, e)),
    };
    // The agent's objects go back, for its next dispatch (its index may name them).
    if stage.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        remove_any(&objects)?;
        fs::rename(&stage, &objects).map_err(|e| Error::io(&stage, e))?;
    }
    let objects = copied?;
    let message = format!("splice: {id}'s dispatch committed");
    main.reference(&branch, head, true, &message)
        .map_err(|e| git_at(main.path(), &format!("moving {branch}"), e))?;
    Ok(Left::Moved {
        from: tip.to_string(),
        to: head.to_string(),
        objects,
    })
}

/// The commit `P`'s HEAD names, read as files: `HEAD`, then loose refs, then `packed-refs`.
fn head_of(p: &Path) -> Result<Oid> {
    let bad = |what: String| {
        Error::bad_file(
            p.join("HEAD"),
            format!("{what}; the dispatch's commits are not imported"),
        )
    };
    let mut text = read_small(p, "HEAD").ok_or_else(|| bad("cannot be read".into()))?;
    for _ in 0..SYMREF_DEPTH {
        let line = text.trim();
        let Some(name) = line.strip_prefix("ref:").map(str::trim) else {
            return Oid::from_str(line)
                .ok()
                .filter(|_| line.len() == 40)
                .ok_or_else(|| bad(format!("names no commit ({line:.60})")));
        };
        if !name.starts_with("refs/") || !git2::Reference::is_valid_name(name) {
            return Err(bad(format!("names {name:.60}, which is not a branch")));
        }
        text = match read_small(p, name) {
            Some(t) => t,
            None => packed(p, name).ok_or_else(|| bad(format!("{name} does not exist")))?,
        };
    }
    Err(bad("names a chain of symbolic refs".into()))
}

/// `name`'s sha in `P`'s `packed-refs`.
fn packed(p: &Path, name: &str) -> Option<String> {
    let bytes = crate::safe_read::read_beneath(p, "packed-refs", PACKED_CAP).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('^'))
        .find_map(|l| {
            let (sha, n) = l.split_once(' ')?;
            (n == name).then(|| sha.to_string())
        })
}

fn read_small(p: &Path, rel: &str) -> Option<String> {
    let bytes = crate::safe_read::read_beneath(p, rel, REF_CAP).ok()?;
    String::from_utf8(bytes).ok()
}

/// Copy every object reachable from `head` that `main` lacks from the object directory
/// `stage` into `main`, each hashed again on the way; how many were copied.
fn copy_objects(main: &Repository, stage: &Path, head: Oid) -> Result<usize> {
    let main_odb = main.odb()?;
    if main_odb.exists(head) {
        return Ok(0);
    }
    let bad = |what: String| {
        Error::bad_file(
            stage,
            format!("{what}; the dispatch's commits are not imported"),
        )
    };
    // Its own directory, never a link (a link to the repository's objects would have the
    // import read and clean up there).
    if !stage.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        return Err(bad(format!(
            "commit {head} is in no object directory of the dispatch's own"
        )));
    }
    only_files(stage, 0).map_err(&bad)?;
    for name in ["alternates", "http-alternates"] {
        remove_any(&stage.join("info").join(name))?;
    }
    let theirs = git2::Odb::new()?;
    theirs
        .add_disk_alternate(&stage.display().to_string())
        .map_err(|e| bad(format!("cannot be read: {}", e.message())))?;
    let mut todo = vec![head];
    let mut copied = 0;
    while let Some(oid) = todo.pop() {
        if main_odb.exists(oid) {
            continue;
        }
        let object = theirs.read(oid).map_err(|e| {
            bad(format!(
                "object {oid} is missing or corrupt ({})",
                e.message()
            ))
        })?;
        let written = main_odb.write(object.kind(), object.data())?;
        if written != oid {
            return Err(bad(format!("object {oid} holds the content of {written}")));
        }
        copied += 1;
        match object.kind() {
            ObjectType::Commit => {
                let commit = main.find_commit(oid)?;
                todo.push(commit.tree_id());
                todo.extend(commit.parent_ids());
            }
            ObjectType::Tree => {
                let tree = main.find_tree(oid)?;
                for entry in tree.iter() {
                    // A submodule's commit lives in the submodule.
                    if entry.filemode() != 0o160000 {
                        todo.push(entry.id());
                    }
                }
            }
            ObjectType::Tag => {
                let tag = main.find_tag(oid)?;
                todo.push(tag.target_id());
            }
            _ => {}
        }
    }
    if main.find_commit(head).is_err() {
        return Err(bad(format!("{head} is not a commit")));
    }
    Ok(copied)
}

/// Is everything under `dir` a directory or a regular file (git's object directory has two
/// levels, `info` and `pack` three)? Else what is not.
fn only_files(dir: &Path, depth: usize) -> std::result::Result<(), String> {
    if depth > 3 {
        return Err(format!(
            "{} is nested too deep for git objects",
            dir.display()
        ));
    }
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let kind = entry
            .file_type()
            .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        if kind.is_dir() {
            only_files(&entry.path(), depth + 1)?;
        } else if !kind.is_file() {
            return Err(format!(
                "{} is neither a file nor a directory",
                entry.path().display()
            ));
        }
    }
    Ok(())
}

/// `P`'s config: the repository's, without gc or maintenance, on the node's worktree.
fn config(common: &Path, worktree: &Path) -> String {
    format!(
        "[include]\n\tpath = {}\n[core]\n\trepositoryformatversion = 0\n\tbare = false\n\
         \tworktree = {}\n\tlogallrefupdates = true\n[gc]\n\tauto = 0\n\
         [maintenance]\n\tauto = false\n",
        quoted(&common.join("config")),
        quoted(&canonical(worktree)),
    )
}

/// A path as a git config value: quoted, `\` and `"` escaped.
fn quoted(path: &Path) -> String {
    let text = path.display().to_string();
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The repository's branches, tags and remote branches but `own`, and node `id`'s loop
/// snapshots (`refs/splice/snapshots/<id>/`), as a `packed-refs` file.
fn packed_refs(main: &Repository, own: &str, id: &str) -> Result<String> {
    let snapshots = format!("{}/", super::snapshots::prefix(id));
    let mut lines = Vec::new();
    for reference in main.references()? {
        let reference = reference?;
        let (Some(name), Some(oid)) = (reference.name(), reference.target()) else {
            continue;
        };
        let mirrored = ["refs/heads/", "refs/tags/", "refs/remotes/", &snapshots]
            .iter()
            .any(|p| name.starts_with(p));
        if mirrored && name != own && !name.contains(['\n', ' ']) {
            lines.push(format!("{oid} {name}\n"));
        }
    }
    lines.sort();
    Ok(lines.concat())
}

/// Remove everything in `P` but its objects and reflogs (what a dispatch keeps from the last).
fn scrub(p: &Path) -> Result<()> {
    for entry in fs::read_dir(p).map_err(|e| Error::io(p, e))? {
        let entry = entry.map_err(|e| Error::io(p, e))?;
        let kept = matches!(entry.file_name().to_str(), Some("objects" | "logs"))
            && entry.file_type().is_ok_and(|t| t.is_dir());
        if !kept {
            remove_any(&entry.path())?;
        }
    }
    Ok(())
}

/// Point the worktree's `.git` at `gitdir`, replacing whatever is there (a file, a link, a
/// directory an agent made), through a new file renamed over it.
fn point_git_file(worktree: &Path, gitdir: &Path) -> Result<()> {
    let dot_git = worktree.join(".git");
    let tmp = worktree.join(".git.splice-new");
    remove_any(&tmp)?;
    write_new(&tmp, format!("gitdir: {}\n", gitdir.display()).as_bytes())?;
    if dot_git.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        remove_any(&dot_git)?;
    }
    fs::rename(&tmp, &dot_git).map_err(|e| Error::io(&dot_git, e))
}

/// Remove the file, link or directory at `path`, following no link; nothing there is fine.
fn remove_any(path: &Path) -> Result<()> {
    let removed = match path.symlink_metadata() {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(_) => return Ok(()),
    };
    match removed {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(path, e)),
        _ => Ok(()),
    }
}

/// A new file at `path` (never through a link: it must not exist).
fn create_new(path: &Path) -> Result<fs::File> {
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| Error::io(path, e))
}

fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    create_new(path)?
        .write_all(bytes)
        .map_err(|e| Error::io(path, e))
}

fn canonical(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
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
}
