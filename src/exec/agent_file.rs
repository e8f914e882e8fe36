//! Files a dispatched agent can write or replace: its usage file, its result file, and its log
//! (in `.splice/runs/<run>/`, where its own files are). What it leaves there is read as an
//! agent's work is read, never trusted: a link is not followed (`/dev/zero`, `/etc/shadow`),
//! only a regular file is opened, without blocking (a FIFO would hang the runner in `open`
//! until a writer came, past every timeout and signal), and no more than a bound is read.

use std::path::Path;

use crate::error::Result;

/// The most of a usage or result file that is read: each is a small JSON object.
pub const SMALL: u64 = 1 << 20;

/// The most of a dispatch log that is read back (the log is written capped, far below this).
pub const LOG: u64 = 64 << 20;

/// The bytes of `path`, at most `cap` of them; `None` when it does not exist. A link, a FIFO,
/// a device or a directory is refused, and so is a file larger than `cap`, each naming it
/// ([`crate::safe_read`], which every reader of a file someone else may have put there uses).
pub fn read(path: &Path, cap: u64) -> Result<Option<Vec<u8>>> {
    crate::safe_read::read_optional(path, cap)
}

/// A dispatch log's text (lossy UTF-8), read as [`read`] does; empty when it is missing or
/// refused.
pub fn log_text(path: &Path) -> String {
    read(path, LOG)
        .ok()
        .flatten()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::read;

    #[test]
    fn a_link_a_fifo_or_an_oversized_file_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        assert_eq!(read(&p("missing"), 10).unwrap(), None);
        std::fs::write(p("ok"), b"{}").unwrap();
        assert_eq!(read(&p("ok"), 10).unwrap().as_deref(), Some(&b"{}"[..]));
        std::fs::write(p("big"), [b' '; 11]).unwrap();
        assert!(
            read(&p("big"), 10)
                .unwrap_err()
                .to_string()
                .contains("larger than 10")
        );
        std::os::unix::fs::symlink("/dev/zero", p("zero")).unwrap();
        assert!(
            read(&p("zero"), 10)
                .unwrap_err()
                .to_string()
                .contains("link")
        );
        let fifo = std::ffi::CString::new(p("fifo").to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        // Opening a FIFO with no writer for reading would block: refused at once.
        let err = read(&p("fifo"), 10).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
    }
}
