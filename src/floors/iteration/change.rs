//! The change an iteration proposes: the diff of the worktree's `HEAD` tree against the step's
//! base commit (git2), its counts and its stable hash.
//!
//! Only committed work counts: the agent commits in its worktree, and the node's branch is what
//! is delivered. Uncommitted edits and untracked files (build output, caches) are not part of the
//! change, so they change neither the counts nor the hash.

use std::path::Path;

use git2::{Delta, DiffFile, DiffOptions, FileMode, Repository};
use sha2::{Digest, Sha256};

/// How many changed paths the revision context lists.
pub const MAX_CHANGED_FILES: usize = 50;

/// The diff facts of one iteration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Change {
    pub changed_paths: u64,
    pub lines_added: u64,
    pub lines_removed: u64,
    /// Bytes of the new content of every added or modified file (deletions excluded).
    pub code_size_bytes: u64,
    /// sha256 (lowercase hex) of the sorted (path, new content) entries; see [`change_hash`].
    pub hash: String,
    /// The first changed paths, sorted.
    pub files: Vec<String>,
}

/// One entry of the change: a path and its new content, `None` when it was deleted.
pub type Entry = (String, Option<Vec<u8>>);

/// The stable hash of a change: sha256 over its entries sorted by path, each written as the
/// path's length (8 bytes, big-endian) and bytes, then `D` for a deletion or `F`, the content's
/// length (8 bytes, big-endian) and the content. Lengths make the encoding unambiguous; nothing
/// of the base or the workspace enters it, so the same change on two bases of the same tree has
/// the same hash. No entries: the hash of the empty input.
pub fn change_hash(entries: &[Entry]) -> String {
    let mut sorted: Vec<&Entry> = entries.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut h = Sha256::new();
    for (path, content) in sorted {
        h.update((path.len() as u64).to_be_bytes());
        h.update(path.as_bytes());
        match content {
            None => h.update(b"D"),
            Some(bytes) => {
                h.update(b"F");
                h.update((bytes.len() as u64).to_be_bytes());
                h.update(bytes);
            }
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The change committed in the repository at `worktree` since `base` (a commit-ish). `Err`
/// names what git could not do.
pub fn measure_change(worktree: &Path, base: &str) -> Result<Change, String> {
    let repo = Repository::open(worktree).map_err(|e| {
        format!(
            "{} is not a git worktree: {}",
            worktree.display(),
            e.message()
        )
    })?;
    let base_tree = repo
        .revparse_single(base)
        .and_then(|o| o.peel_to_tree())
        .map_err(|e| format!("the base `{base}` is not a commit here: {}", e.message()))?;
    let head_tree = repo
        .head()
        .and_then(|h| h.peel_to_tree())
        .map_err(|e| format!("the worktree has no HEAD commit: {}", e.message()))?;
    let diff = repo
        .diff_tree_to_tree(
            Some(&base_tree),
            Some(&head_tree),
            Some(&mut DiffOptions::new()),
        )
        .map_err(|e| format!("cannot diff against the base: {}", e.message()))?;
    let stats = diff
        .stats()
        .map_err(|e| format!("cannot count the diff's lines: {}", e.message()))?;
    let mut entries: Vec<Entry> = Vec::new();
    let mut size = 0u64;
    for delta in diff.deltas() {
        let (path, content) = match delta.status() {
            Delta::Deleted => (delta.old_file().path(), None),
            _ => (
                delta.new_file().path(),
                Some(content(&repo, &delta.new_file())?),
            ),
        };
        let path = path
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        size += content.as_ref().map_or(0, |c| c.len() as u64);
        entries.push((path, content));
    }
    let mut files: Vec<String> = entries.iter().map(|(p, _)| p.clone()).collect();
    files.sort();
    files.truncate(MAX_CHANGED_FILES);
    Ok(Change {
        changed_paths: entries.len() as u64,
        lines_added: stats.insertions() as u64,
        lines_removed: stats.deletions() as u64,
        code_size_bytes: size,
        hash: change_hash(&entries),
        files,
    })
}

/// A file's new content; a submodule's is the commit it points to (hex).
fn content(repo: &Repository, file: &DiffFile) -> Result<Vec<u8>, String> {
    let id = file.id();
    if file.mode() == FileMode::Commit {
        return Ok(id.to_string().into_bytes());
    }
    repo.find_blob(id)
        .map(|b| b.content().to_vec())
        .map_err(|e| format!("cannot read blob {id}: {}", e.message()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_order_free_and_unambiguous() {
        let a = ("a".to_string(), Some(b"x".to_vec()));
        let b = ("b".to_string(), None);
        assert_eq!(
            change_hash(&[a.clone(), b.clone()]),
            change_hash(&[b.clone(), a.clone()])
        );
        assert_ne!(
            change_hash(&[("ab".into(), Some(b"c".to_vec()))]),
            change_hash(&[("a".into(), Some(b"bc".to_vec()))])
        );
        assert_ne!(
            change_hash(&[("a".into(), Some(Vec::new()))]),
            change_hash(&[("a".into(), None)])
        );
        assert_eq!(
            change_hash(&[]),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
