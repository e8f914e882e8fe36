//! The writer's lock: an exclusive `File::lock` on `.splice/lock`, a file that is never renamed
//! and never holds data, so the lock and the data can never be confused.
//!
//! A writer waits for it at most its timeout (`[lock] timeout_s`), then gives up with a fault
//! naming the holder. Who holds it is recorded beside it, in `.splice/lock.holder` (pid, verb,
//! since), written once the lock is taken and removed before it is released; a record whose pid
//! is gone, or none at all, means the holder is not a splice writer. The lock path must be a
//! regular file: a FIFO, a device or a link there is refused, never opened blocking or followed.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::atomic;
use crate::error::{Error, Result};

/// Who holds the lock, as recorded beside it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Holder {
    pub pid: u32,
    pub verb: String,
    /// The holder's transition time (RFC 3339).
    pub since: String,
}

/// Held while a transition runs; dropping it releases the lock.
pub struct LockGuard {
    file: File,
    record: PathBuf,
}

/// The holder record's path for the lock at `path`.
pub fn holder_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!("{name}.holder"))
}

impl LockGuard {
    /// Take the lock, waiting at most `timeout`, and record `who` beside it.
    pub fn acquire(path: &Path, timeout: Duration, who: &Holder) -> Result<LockGuard> {
        let file = atomic::open_regular(
            path,
            OpenOptions::new().create(true).truncate(false).write(true),
        )
        .map_err(|e| kernel_refused(path, e))?;
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(path, e)),
            }
            let waited = started.elapsed();
            if waited >= timeout {
                return Err(Error::bad_file(path, timed_out(path, timeout)));
            }
            std::thread::sleep(pause.min(timeout - waited));
            pause = (pause * 2).min(Duration::from_millis(50));
        }
        let record = holder_path(path);
        // Only a diagnostic: a record that cannot be written does not stop the transition.
        let _ = write_record(&record, who);
        Ok(LockGuard { file, record })
    }
}

/// A lock the kernel will not let this process open for writing, when the process is
/// confined (no_new_privs set, as in every splice sandbox: issue 31), is a refusal saying so in
/// words; any other error is as it was.
fn kernel_refused(path: &Path, e: Error) -> Error {
    let denied = matches!(&e, Error::Io { source, .. }
        if matches!(source.raw_os_error(), Some(libc::EACCES | libc::EPERM | libc::EROFS)));
    if denied && confined() {
        return Error::Refused(crate::refusal::Refusal::Sandboxed {
            path: path.display().to_string(),
        });
    }
    e
}

/// Does this process run with no_new_privs (Linux's `/proc/self/status`)? Every splice sandbox
/// sets it; the answer only chooses the words of a refusal the kernel already made.
fn confined() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("NoNewPrivs:") && l.trim_end().ends_with('1'))
    })
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.record);
        // Closing the descriptor releases the lock too; unlocking first makes it prompt.
        let _ = self.file.unlock();
    }
}

/// Write the holder record by rename (a reader sees a whole one); no sync: it is a diagnostic.
fn write_record(path: &Path, who: &Holder) -> std::io::Result<()> {
    let tmp = atomic::tmp_path(path);
    let _ = fs::remove_file(&tmp);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    let mut line = serde_json::to_vec(who).unwrap_or_default();
    line.push(b'\n');
    file.write_all(&line)?;
    fs::rename(&tmp, path)
}

/// The message when the wait ran out: who holds the lock, and what to do.
fn timed_out(path: &Path, timeout: Duration) -> String {
    let secs = timeout.as_secs();
    let holder = read_record(&holder_path(path));
    let who = match holder {
        Some(h) if alive(h.pid) => format!(
            "it is held by pid {} (splice `{}`, since {})",
            h.pid,
            crate::store::ids::shown(&h.verb),
            crate::store::ids::shown(&h.since)
        ),
        Some(h) => format!(
            "the last splice writer recorded (pid {}, `{}`) is gone, so the holder is another \
             program (`fuser {}` names it)",
            h.pid,
            crate::store::ids::shown(&h.verb),
            path.display()
        ),
        None => format!(
            "no splice writer recorded itself holding it, so the holder is another program \
             (`fuser {}` names it)",
            path.display()
        ),
    };
    format!(
        "the writer's lock is still taken after waiting {secs} s: {who}. Nothing was written; run \
         the verb again once the holder has finished, or stop the holder if it hangs (raise \
         `[lock] timeout_s` in .splice/config.toml to wait longer)"
    )
}

/// The holder record, if there is a readable one.
fn read_record(path: &Path) -> Option<Holder> {
    use std::io::Read;
    let mut text = String::new();
    atomic::open_read(path)
        .ok()?
        .take(4096)
        .read_to_string(&mut text)
        .ok()?;
    serde_json::from_str(&text).ok()
}

/// Is a process with this pid running (or at least present)?
pub(crate) fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(verb: &str) -> Holder {
        Holder {
            pid: std::process::id(),
            verb: verb.into(),
            since: "2026-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn a_second_writer_times_out_naming_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let first = LockGuard::acquire(&path, Duration::ZERO, &who("park")).unwrap();
        assert_eq!(read_record(&holder_path(&path)), Some(who("park")));
        let started = Instant::now();
        let second = LockGuard::acquire(&path, Duration::from_millis(200), &who("claim"));
        let err = second.err().expect("the lock is taken").to_string();
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert!(
            err.contains(&format!("pid {}", std::process::id())) && err.contains("park"),
            "{err}"
        );
        drop(first);
        assert!(!holder_path(&path).exists());
        LockGuard::acquire(&path, Duration::ZERO, &who("claim")).expect("free again");
    }

    #[test]
    fn a_gone_holder_is_told_apart() {
        assert!(alive(std::process::id()));
        assert!(!alive(0) && !alive(u32::MAX));
    }
}
