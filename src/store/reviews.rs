//! Kept reviews: `.splice/reviews/<bead>/<sha256>.md`, the text of each review a check read,
//! kept in the state users commit. The reviewer writes `reviews/<bead>.md` in the node's
//! worktree, which goes when the node is done; this copy stays, where a clone sees it, and the
//! bead records only its hash, so neither the bead nor the journal grows with the text.
//!
//! The writer is this file's one owner: `complete` keeps the text in its slow phase, before the
//! lock, and the check it then journals names the hash. A file is content-addressed, so it is
//! written once (a temp file of the writer's own, sync, rename, sync the directory:
//! [`atomic::replace_file_shared`]) and never changed; a check that then refuses for a stale
//! seq leaves a file no bead names, which is harmless. The text is redacted as bead files are
//! ([`Redactor`]) before it is hashed.
//!
//! The text may be hostile: at most [`MAX_REVIEW_BYTES`], UTF-8, never through a link (a
//! `.splice/reviews` that is a link is refused by every command; a link at `<bead>/` or at the
//! file is replaced, never written through), never run. A read ([`Store::read_review`]) follows
//! no link and checks the text against its name.

use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::Store;
use super::atomic;
use super::ids;
use super::redact::Redactor;
use crate::error::{Error, Result};
use crate::safe_read::{self, Unread};

/// The largest review splice keeps (and the review floor reads).
pub const MAX_REVIEW_BYTES: u64 = 256 << 10;

/// The kept review's path relative to the repository, as a person names it.
pub fn review_rel(id: &str, sha256: &str) -> String {
    format!("{}/reviews/{id}/{sha256}.md", super::STATE_DIR)
}

/// sha256 of `text`, hex.
pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn is_hash(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Store {
    pub fn reviews_dir(&self) -> PathBuf {
        self.dir().join("reviews")
    }

    /// Where the review of `id` whose text hashes to `sha256` is kept.
    pub fn review_path(&self, id: &str, sha256: &str) -> PathBuf {
        self.reviews_dir().join(id).join(format!("{sha256}.md"))
    }

    /// Keep `text` as a review of `id`, redacted; returns its sha256 (the file's name).
    pub fn keep_review(&self, id: &str, text: &str) -> Result<String> {
        if !ids::is_valid(id) {
            return Err(Error::Invalid(format!(
                "{} is not a bead id",
                ids::shown(id)
            )));
        }
        if text.len() as u64 > MAX_REVIEW_BYTES {
            return Err(Error::Invalid(format!(
                "a review of {id} is larger than {}, the most splice keeps",
                safe_read::size(MAX_REVIEW_BYTES)
            )));
        }
        let redactor = Redactor::from_env(Some(&self.config()?.security.redact_env()));
        let text = redactor.text(text).unwrap_or_else(|| text.to_string());
        let sha = sha256_hex(&text);
        let dir = self.reviews_dir();
        let node = dir.join(id);
        let path = self.review_path(id, &sha);
        own_dir(&dir)?;
        own_dir(&node)?;
        if self.read_review(id, &sha).is_ok() {
            return Ok(sha);
        }
        // Two runners can keep the same review at once (each before the lock): each writes
        // through a temp file of its own.
        atomic::replace_file_shared(&path, text.as_bytes())?;
        Ok(sha)
    }

    /// The text of `id`'s kept review `sha256`; `Err` says, in words after its path, why it
    /// cannot be shown (missing in this clone, a link, too large, not UTF-8, altered).
    pub fn read_review(&self, id: &str, sha256: &str) -> std::result::Result<String, String> {
        if !ids::is_valid(id) || !is_hash(sha256) {
            return Err("is not the name of a kept review".into());
        }
        let rel = format!("reviews/{id}/{sha256}.md");
        let bytes =
            safe_read::read_beneath(self.dir(), &rel, MAX_REVIEW_BYTES).map_err(|u| match u {
                Unread::Missing => {
                    "does not exist (the state was committed without it, or it was deleted)"
                        .to_string()
                }
                other => other.says(),
            })?;
        let text = String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_string())?;
        if sha256_hex(&text) != sha256.to_ascii_lowercase() {
            return Err(format!(
                "does not match its name (its text's sha256 is not {sha256}): it was changed \
                 after splice kept it"
            ));
        }
        Ok(text)
    }
}

/// Make `dir` a directory of splice's own: created when missing (and its entry made durable),
/// refused when a link or anything but a directory is there.
fn own_dir(dir: &Path) -> Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(m) if m.file_type().is_symlink() => {
            return Err(Error::bad_file(
                dir,
                "is a symbolic link, and splice follows no link in its state (a committed link \
                 would send its writes wherever it points); make it a directory of its own",
            ));
        }
        Ok(_) => return Err(Error::bad_file(dir, "is not a directory; remove it")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(dir, e)),
    }
    match fs::create_dir(dir) {
        Ok(()) => {}
        // Another writer made it meanwhile: look again.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return own_dir(dir),
        Err(e) => return Err(Error::io(dir, e)),
    }
    if let Some(parent) = dir.parent() {
        atomic::sync_dir(parent)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_once_by_content_and_checked_on_read() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(Some(tmp.path())).unwrap();
        let sha = store.keep_review("sp-a", "## Review\n").unwrap();
        assert_eq!(sha, sha256_hex("## Review\n"));
        assert_eq!(store.keep_review("sp-a", "## Review\n").unwrap(), sha);
        assert_eq!(store.read_review("sp-a", &sha).unwrap(), "## Review\n");
        fs::write(store.review_path("sp-a", &sha), "other").unwrap();
        assert!(
            store
                .read_review("sp-a", &sha)
                .unwrap_err()
                .contains("does not match")
        );
        // Keeping it again repairs it.
        store.keep_review("sp-a", "## Review\n").unwrap();
        assert!(store.read_review("sp-a", &sha).is_ok());
        assert!(store.read_review("../x", &sha).is_err());
        assert!(store.read_review("sp-a", "../../beads").is_err());
        assert!(store.keep_review("../x", "t").is_err());
        let big = "x".repeat(MAX_REVIEW_BYTES as usize + 1);
        assert!(store.keep_review("sp-a", &big).is_err());
    }

    #[test]
    fn writers_keeping_the_same_review_at_once_all_succeed() {
        // Two runners can keep the same review of one node at once (each in its slow phase,
        // before the lock): neither may remove the other's temp file or find its own gone.
        let tmp = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(Store::open_or_create(Some(tmp.path())).unwrap());
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
        let writers: Vec<_> = (0..4)
            .map(|_| {
                let (store, barrier) = (store.clone(), barrier.clone());
                // No panic inside: one would leave the others at the barrier.
                std::thread::spawn(move || {
                    let mut failed = Vec::new();
                    for k in 0..200 {
                        barrier.wait();
                        let text = format!("## Review {k}\n{}", "body ".repeat(k * 50));
                        match store.keep_review("sp-a", &text) {
                            Ok(sha) if store.read_review("sp-a", &sha).as_ref() == Ok(&text) => {}
                            Ok(sha) => failed.push(format!("{k}: {sha} reads otherwise")),
                            Err(e) => failed.push(format!("{k}: {e}")),
                        }
                    }
                    failed
                })
            })
            .collect();
        let failed: Vec<String> = writers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        assert!(
            failed.is_empty(),
            "{} failed: {:?}",
            failed.len(),
            &failed[..failed.len().min(3)]
        );
        let left: Vec<_> = fs::read_dir(store.reviews_dir().join("sp-a"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with(".md"))
            .collect();
        assert!(left.is_empty(), "temp files left: {left:?}");
    }

    #[test]
    fn a_link_for_a_nodes_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(Some(tmp.path())).unwrap();
        fs::create_dir(store.reviews_dir()).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), store.reviews_dir().join("sp-a")).unwrap();
        let err = store.keep_review("sp-a", "t").unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }
}
