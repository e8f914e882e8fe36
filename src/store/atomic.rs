//! Durable file replacement: temp → fsync → rename → fsync the directory (git's lockfile and
//! jj's `file_util` pattern). A reader sees the old file or the new one, never half of either.
//!
//! State files may come from someone else's commit, so no link is followed and nothing but a
//! regular file is opened: a temp file is always created fresh (a link or file already at its
//! path is removed first, never written through), and [`open_regular`] refuses a symbolic link, a
//! FIFO or a device with a message naming the file instead of following, blocking or reading it.
//!
//! An error writing the temp file or renaming it names the file being replaced, never the temp
//! file, which the user never asked for ([`replace_error`]).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
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
    /// The full live journal segment is renamed into `journal/`; no new one exists yet.
    AfterClose,
    /// A Slurm job is submitted; its id is not on the claim yet (`src/driver/slurm.rs`).
    AfterSbatch,
}

impl Failpoint {
    fn name(self) -> &'static str {
        match self {
            Failpoint::AfterJournal => "after-journal",
            Failpoint::AfterTmp => "after-tmp",
            Failpoint::AfterRename => "after-rename",
            Failpoint::AfterClose => "after-close",
            Failpoint::AfterSbatch => "after-sbatch",
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

/// An error writing `path` through a temp file beside it (creating, writing or syncing the temp
/// file, or renaming it over `path`), named after `path`: the file the user knows. The two a
/// person most often meets are said in words: a directory that does not exist (the temp file's
/// creation fails) and a directory where the file goes (the rename fails). The error's kind is
/// kept, so [`is_not_found`] still reads it.
pub fn replace_error(path: &Path, e: std::io::Error) -> Error {
    use std::io::ErrorKind;
    let said = match e.kind() {
        ErrorKind::NotFound => "its directory does not exist",
        ErrorKind::IsADirectory => "is a directory, not a file",
        _ => return Error::io(path, e),
    };
    Error::io(path, std::io::Error::new(e.kind(), said))
}

/// Write `bytes` to a new temp file for `path` and sync it. Whatever is at the temp path (a
/// leftover, or a link planted there) is removed, not written through.
pub fn write_tmp(path: &Path, bytes: &[u8]) -> Result<PathBuf> {
    let (tmp, file) = write_tmp_unsynced(path, bytes)?;
    if let Err(e) = file.sync_data() {
        let _ = fs::remove_file(&tmp);
        return Err(replace_error(path, e));
    }
    Ok(tmp)
}

/// Write `bytes` to a new temp file for `path`, not synced: the caller makes it durable (one
/// [`sync_fs`] for many files) before renaming it. Returns the temp path and the open file.
pub fn write_tmp_unsynced(path: &Path, bytes: &[u8]) -> Result<(PathBuf, File)> {
    write_tmp_at(tmp_path(path), path, bytes)
}

fn write_tmp_at(tmp: PathBuf, path: &Path, bytes: &[u8]) -> Result<(PathBuf, File)> {
    // Create it exclusively (O_EXCL: never through a link); only when something is there
    // already is it removed first — one system call fewer for the usual empty path.
    let create = || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
    };
    let mut file = match create() {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // What cannot be removed there (a directory) is the temp file's fault: named.
            fs::remove_file(&tmp).map_err(|e| Error::io(&tmp, e))?;
            create().map_err(|e| replace_error(path, e))?
        }
        Err(e) => return Err(replace_error(path, e)),
    };
    if let Err(e) = file.write_all(bytes) {
        let _ = fs::remove_file(&tmp);
        return Err(replace_error(path, e));
    }
    Ok((tmp, file))
}

/// Can [`sync_fs`] make many files durable in one flush on this platform?
pub const ONE_FLUSH: bool = cfg!(target_os = "linux");

/// Make every written file on the file system holding `dir` durable, in one flush: Linux's
/// `syncfs(2)`, which (since 5.8) also reports a write-back error of any file on it. Only
/// where [`ONE_FLUSH`] holds; elsewhere the caller syncs each file.
#[cfg(target_os = "linux")]
pub fn sync_fs(dir: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let handle = File::open(dir).map_err(|e| Error::io(dir, e))?;
    // SAFETY: the descriptor is open for the duration of the call; syncfs reads nothing else.
    if unsafe { libc::syncfs(handle.as_raw_fd()) } != 0 {
        return Err(Error::io(dir, std::io::Error::last_os_error()));
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn sync_fs(dir: &Path) -> Result<()> {
    Err(Error::Invalid(format!(
        "internal: no one-flush sync on this platform for {}; sync each file",
        dir.display()
    )))
}

/// Rename the temp file for `path` over `path`.
pub fn publish(path: &Path) -> Result<()> {
    let tmp = tmp_path(path);
    fs::rename(&tmp, path).map_err(|e| replace_error(path, e))
}

/// Make a directory's entries (renames, creations) durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    let handle = File::open(dir).map_err(|e| Error::io(dir, e))?;
    handle.sync_all().map_err(|e| Error::io(dir, e))
}

/// Replace one file atomically and durably (used outside the bead store, e.g. config files).
pub fn replace_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = write_tmp(path, bytes)?;
    if let Err(e) = publish(path) {
        // Not left beside a file that was not replaced (a directory in its place).
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    if let Some(dir) = path.parent() {
        // A bare file name's parent is "": the working directory.
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        sync_dir(dir)?;
    }
    Ok(())
}

/// [`replace_file`] for a file more than one process may write at once without a lock (a
/// content-addressed file, whose every writer writes the same bytes): each writer's temp file
/// has a name of its own (process id and a counter), so none removes another's or finds its own
/// renamed away. The last rename wins, and every writer's bytes are the same.
pub fn replace_file_shared(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_file_name(format!(".{name}.{}-{n}.tmp", std::process::id()));
    let (tmp, file) = write_tmp_at(tmp, path, bytes)?;
    let written = file
        .sync_data()
        .map_err(|e| replace_error(path, e))
        .and_then(|()| fs::rename(&tmp, path).map_err(|e| replace_error(path, e)));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => sync_dir(dir),
        _ => sync_dir(Path::new(".")),
    }
}

/// Open a file for appending, creating it; a link or anything but a regular file is refused.
pub fn open_append(path: &Path) -> Result<File> {
    open_regular(path, OpenOptions::new().create(true).append(true))
}

/// Open an existing file for reading; a link or anything but a regular file is refused.
pub fn open_read(path: &Path) -> Result<File> {
    open_regular(path, OpenOptions::new().read(true))
}

/// Open `path` with `options`, never following a link at it and never blocking on a FIFO; then
/// refuse anything that is not a regular file. A missing file is an [`Error::Io`] of kind
/// `NotFound` (callers that expect one match on it); the other refusals name the file.
pub fn open_regular(path: &Path, options: &mut OpenOptions) -> Result<File> {
    let file = options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => Error::bad_file(path, LINK),
            Some(libc::ENXIO) => Error::bad_file(path, NOT_REGULAR),
            _ => Error::io(path, e),
        })?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::bad_file(path, NOT_REGULAR));
    }
    Ok(file)
}

const LINK: &str = "is a symbolic link, and splice follows no link in .splice/ (a committed link \
                    could point anywhere); replace it with the file itself";
const NOT_REGULAR: &str = "is not a regular file (a FIFO, a device or a directory); remove it";

/// Is this error a missing file?
pub fn is_not_found(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}
