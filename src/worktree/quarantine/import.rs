//! The import after a dispatch ([`super::leave`]): `P`'s HEAD read as files, and the objects
//! it reaches copied into the repository, each hashed again, from where no sandboxed process
//! can write (the module doc of [`super`]).

use std::fs;
use std::path::Path;

use git2::{ObjectType, Oid, Repository};

use super::{Left, remove_any, staging};
use crate::error::{Error, Result};
use crate::worktree::git_at;

/// The most of a ref file or of `HEAD` that is read.
const REF_CAP: u64 = 4096;

/// The most of `P`'s `packed-refs` that is read.
const PACKED_CAP: u64 = 256 << 20;

/// How many symbolic refs are followed from `HEAD`.
const SYMREF_DEPTH: usize = 5;

/// Import what `P`'s HEAD names into `main` and move the node's branch to it.
pub(super) fn import(main: &Repository, worktrees_dir: &Path, id: &str, p: &Path) -> Result<Left> {
    let branch = format!("refs/heads/{}", crate::worktree::branch_name(id));
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
