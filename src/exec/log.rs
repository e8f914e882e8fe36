//! A bounded dispatch log: the first half of the cap goes straight to the file, the last half is
//! kept in a ring buffer and written at the end, and whatever fell between is replaced by one
//! marker line saying how much was elided. Memory is bounded by half the cap, disk by the cap
//! plus the marker, however much the command prints.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Default cap: 1 MiB (512 KiB of head, 512 KiB of tail).
pub const DEFAULT_CAP: usize = 1024 * 1024;

#[derive(Debug)]
pub struct BoundedLog {
    file: File,
    path: PathBuf,
    head_cap: usize,
    tail_cap: usize,
    head_written: usize,
    tail: VecDeque<u8>,
    total: u64,
    finished: bool,
    /// The first write error; later writes are skipped and `finish` reports it.
    failed: Option<std::io::Error>,
}

impl BoundedLog {
    /// Create (truncate) the log file at `path`.
    pub fn create(path: &Path, cap: usize) -> Result<BoundedLog> {
        let file = File::create(path).map_err(|e| Error::io(path, e))?;
        let head_cap = cap / 2;
        Ok(BoundedLog {
            file,
            path: path.to_path_buf(),
            head_cap,
            tail_cap: cap - head_cap,
            head_written: 0,
            tail: VecDeque::new(),
            total: 0,
            finished: false,
            failed: None,
        })
    }

    /// Record output. After [`finish`](Self::finish) this does nothing.
    pub fn write(&mut self, mut buf: &[u8]) {
        if self.finished || self.failed.is_some() {
            return;
        }
        self.total += buf.len() as u64;
        let room = self.head_cap - self.head_written;
        if room > 0 {
            let n = room.min(buf.len());
            if let Err(e) = self.file.write_all(&buf[..n]) {
                self.failed = Some(e);
                return;
            }
            self.head_written += n;
            buf = &buf[n..];
        }
        if buf.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&buf[buf.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + buf.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(buf);
        }
    }

    /// Bytes of output seen so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Write the marker (if anything was elided) and the tail, and flush. Idempotent.
    pub fn finish(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if let Some(e) = self.failed.take() {
            return Err(Error::io(&self.path, e));
        }
        let kept = self.head_written as u64 + self.tail.len() as u64;
        let elided = self.total - kept;
        let mut out = Vec::with_capacity(self.tail.len() + 160);
        if elided > 0 {
            out.extend_from_slice(
                format!(
                    "\n[splice: {elided} bytes of output elided; kept the first {} and the last \
                     {} of {} bytes]\n",
                    self.head_written,
                    self.tail.len(),
                    self.total
                )
                .as_bytes(),
            );
        }
        let (a, b) = self.tail.as_slices();
        out.extend_from_slice(a);
        out.extend_from_slice(b);
        self.tail = VecDeque::new();
        self.file
            .write_all(&out)
            .and_then(|()| self.file.flush())
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Append a note from splice itself (not the command's output), after `finish`.
    pub fn note(&mut self, text: &str) -> Result<()> {
        let line = format!("[splice: {}]\n", text.trim_end());
        self.file
            .write_all(line.as_bytes())
            .map_err(|e| Error::io(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        let mut log = BoundedLog::create(&path, 100).unwrap();
        log.write(b"hello ");
        log.write(b"world");
        log.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"hello world");
    }

    #[test]
    fn large_output_keeps_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        let mut log = BoundedLog::create(&path, 10).unwrap();
        for chunk in [&b"abc"[..], b"defgh", b"ijklmnop", b"qrstuvwxyz"] {
            log.write(chunk);
        }
        log.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("abcde\n[splice: 16 bytes"), "{text}");
        assert!(text.ends_with("]\nvwxyz"), "{text}");
        // A single chunk larger than the tail.
        let mut log = BoundedLog::create(&path, 4).unwrap();
        log.write(b"0123456789");
        log.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("01\n") && text.ends_with("89"), "{text}");
    }
}
