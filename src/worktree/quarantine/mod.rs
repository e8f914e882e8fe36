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

use git2::{Oid, Repository};

mod import;

use super::{canonical, check_id, git_at, node_path, open_repo};
use crate::error::{Error, Result};

/// The directory of the nodes' private git directories, under `.splice/worktrees/`.
const DIR: &str = ".dispatch-git";

/// Node `id`'s private git directory.
pub fn gitdir(worktrees_dir: &Path, id: &str) -> PathBuf {
    worktrees_dir.join(DIR).join(id)
}

/// The marker of a dispatch that entered and was not left: it holds the branch's tip at entry.
fn marker(worktrees_dir: &Path, id: &str) -> PathBuf {
    worktrees_dir.join(DIR).join(format!("{id}.entered"))
}

/// Where `P`'s objects are moved while they are imported.
pub(super) fn staging(worktrees_dir: &Path, id: &str) -> PathBuf {
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
    let imported = import::import(&main, worktrees_dir, id, &p);
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
        super::retry_busy(|| checkout.reset(&commit, git2::ResetType::Mixed, None))
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
pub(super) fn remove_any(path: &Path) -> Result<()> {
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

#[cfg(test)]
mod tests;
