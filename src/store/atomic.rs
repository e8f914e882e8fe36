//! Durable file replacement: temp → fsync → rename → fsync the directory (git's lockfile and
//! jj's `file_util` pattern). A reader sees the old file or the new one, never half of either.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Named points where `SPLICE_FAILPOINT` aborts the process, for crash tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failpoint {
    /// The journal record is durable; no bead file has been touched.
    AfterJournal,
    /// Temp files are written and synced; none renamed yet.
    AfterTmp,
    /// Every bead file is renamed into place; the commit marker is not yet written.
    AfterRename,
}

impl Failpoint {
    fn name(self) -> &'static str {
        match self {
            Failpoint::AfterJournal => "after-journal",
            Failpoint::AfterTmp => "after-tmp",
            Failpoint::AfterRename => "after-rename",
        }
    }

    /// Abort the process here if `SPLICE_FAILPOINT` names this point.
    pub fn hit(self) {
        if std::env::var("SPLICE_FAILPOINT").is_ok_and(|v| v == self.name()) {
            // The library does not print; this line only says why the process is about to die.
            let _ = writeln!(
                std::io::stderr(),
                "splice: failpoint {} reached, aborting",
                self.name()
            );
            std::process::abort();
        }
    }
}

/// The temp path used while replacing `path`: `.<name>.tmp` beside it.
pub fn tmp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

/// Write `bytes` to the temp file for `path` and sync it.
pub fn write_tmp(path: &Path, bytes: &[u8]) -> Result<PathBuf> {
    let tmp = tmp_path(path);
    let mut file = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    file.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
    file.sync_data().map_err(|e| Error::io(&tmp, e))?;
    Ok(tmp)
}

/// Rename the temp file for `path` over `path`.
pub fn publish(path: &Path) -> Result<()> {
    let tmp = tmp_path(path);
    fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// Make a directory's entries (renames, creations) durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    let handle = File::open(dir).map_err(|e| Error::io(dir, e))?;
    handle.sync_all().map_err(|e| Error::io(dir, e))
}

/// Replace one file atomically and durably (used outside the bead store, e.g. config files).
pub fn replace_file(path: &Path, bytes: &[u8]) -> Result<()> {
    write_tmp(path, bytes)?;
    publish(path)?;
    if let Some(dir) = path.parent() {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Open a file for appending, creating it.
pub fn open_append(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io(path, e))
}
