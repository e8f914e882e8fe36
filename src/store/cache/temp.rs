//! The cache's temporary files, `.beads.<pid>.<n>.tmp`: named, and cleaned when a crash mid-write
//! left them.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A temporary file this old, whose process is gone, was left by a crash.
const STALE: Duration = Duration::from_secs(60);

/// The temporary file of this process's `n`th write.
pub(super) fn path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!(".beads.{}.{n}.tmp", std::process::id()))
}

/// The writing process of a temporary file's name, when it is one.
fn writer(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(".beads.")?.strip_suffix(".tmp")?;
    let (pid, n) = rest.split_once('.')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Remove the temporary files in `dir` a crashed write left: older than [`STALE`], of a process
/// no longer running (never this one's, never a live writer's). Best effort: what cannot be
/// removed stays for the next write. Only regular files are removed (`remove_file` on a link
/// removes the link, never its target).
pub(super) fn clean_stale(dir: &Path, now: SystemTime) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(writer) else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age >= STALE);
        let gone = pid != std::process::id() && !crate::store::lock::alive(pid);
        if meta.is_file() && old && gone && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_temporary_files_name_names_its_writer() {
        assert_eq!(writer(".beads.123.4.tmp"), Some(123));
        assert_eq!(writer(".beads.123.tmp"), None);
        assert_eq!(writer("beads"), None);
        assert_eq!(writer(".beads.x.1.tmp"), None);
        assert_eq!(writer(".gitignore"), None);
    }
}
