//! Where a command's output goes, bounded however much it prints.
//!
//! Both sinks keep the first half of their cap as it came and the last half in a ring; whatever
//! fell between is replaced by one marker line saying how much was elided. [`BoundedLog`] writes
//! the head straight to a file and the tail at the end (the dispatch log: disk bounded by the cap
//! plus the marker and splice's notes, memory by half the cap). [`Capture`] keeps both in memory
//! (a floor's evidence: memory bounded by the cap).
//!
//! Limits: the cut is by bytes, so a multi-byte character split at the head or tail edge reads
//! as U+FFFD in [`Capture::take_text`].

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Default cap of a dispatch log: 1 MiB (512 KiB of head, 512 KiB of tail).
pub const DEFAULT_CAP: usize = 1024 * 1024;

/// Something the runner's reader threads write output into, chunk by chunk in the order read.
pub trait Sink: Send {
    fn write(&mut self, bytes: &[u8]);
}

/// The head/tail bookkeeping both sinks share.
#[derive(Debug)]
struct Bounds {
    head_cap: usize,
    head_len: usize,
    tail_cap: usize,
    tail: VecDeque<u8>,
    total: u64,
}

impl Bounds {
    fn new(cap: usize) -> Bounds {
        let head_cap = cap / 2;
        Bounds {
            head_cap,
            head_len: 0,
            tail_cap: cap - head_cap,
            tail: VecDeque::new(),
            total: 0,
        }
    }

    /// Account for `buf`: the returned prefix belongs to the head (the caller keeps it as is);
    /// the rest goes into the tail ring.
    fn take<'b>(&mut self, buf: &'b [u8]) -> &'b [u8] {
        self.total += buf.len() as u64;
        let n = (self.head_cap - self.head_len).min(buf.len());
        self.head_len += n;
        let (head, rest) = buf.split_at(n);
        if rest.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&rest[rest.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + rest.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(rest);
        }
        head
    }

    fn elided(&self) -> u64 {
        self.total - self.head_len as u64 - self.tail.len() as u64
    }

    /// The marker and the tail, emptying the ring.
    fn finish(&mut self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.tail.len() + 160);
        let elided = self.elided();
        if elided > 0 {
            out.extend_from_slice(
                format!(
                    "\n[splice: {elided} bytes of output elided; kept the first {} and the last \
                     {} of {} bytes]\n",
                    self.head_len,
                    self.tail.len(),
                    self.total
                )
                .as_bytes(),
            );
        }
        out.extend(self.tail.drain(..));
        self.tail = VecDeque::new();
        out
    }
}

/// A bounded log file.
#[derive(Debug)]
pub struct BoundedLog {
    file: File,
    path: PathBuf,
    bounds: Bounds,
    finished: bool,
    /// The first write error; later writes are skipped and `finish` reports it.
    failed: Option<std::io::Error>,
}

impl BoundedLog {
    /// Create (truncate) the log file at `path`.
    pub fn create(path: &Path, cap: usize) -> Result<BoundedLog> {
        let file = File::create(path).map_err(|e| Error::io(path, e))?;
        Ok(BoundedLog {
            file,
            path: path.to_path_buf(),
            bounds: Bounds::new(cap),
            finished: false,
            failed: None,
        })
    }

    /// Bytes of output seen so far.
    pub fn total(&self) -> u64 {
        self.bounds.total
    }

    /// Write the marker (if anything was elided) and the tail, and flush. Idempotent; later
    /// output is dropped.
    pub fn finish(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if let Some(e) = self.failed.take() {
            return Err(Error::io(&self.path, e));
        }
        let out = self.bounds.finish();
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

impl Sink for BoundedLog {
    fn write(&mut self, buf: &[u8]) {
        if self.finished || self.failed.is_some() {
            return;
        }
        let head = self.bounds.take(buf);
        if let Err(e) = self.file.write_all(head) {
            self.failed = Some(e);
        }
    }
}

/// Output kept in memory.
#[derive(Debug)]
pub struct Capture {
    bounds: Bounds,
    head: Vec<u8>,
    taken: bool,
}

impl Capture {
    pub fn new(cap: usize) -> Capture {
        Capture {
            bounds: Bounds::new(cap),
            head: Vec::new(),
            taken: false,
        }
    }

    /// Bytes of output that were dropped from the middle.
    pub fn elided(&self) -> u64 {
        self.bounds.elided()
    }

    /// The output kept, as text (invalid UTF-8 replaced), with the marker where some was
    /// elided. Later output is dropped.
    pub fn take_text(&mut self) -> String {
        self.taken = true;
        let mut bytes = std::mem::take(&mut self.head);
        bytes.extend(self.bounds.finish());
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Sink for Capture {
    fn write(&mut self, buf: &[u8]) {
        if !self.taken {
            let head = self.bounds.take(buf);
            self.head.extend_from_slice(head);
        }
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
        let mut c = Capture::new(100);
        c.write(b"hello ");
        c.write(b"world");
        assert_eq!(c.elided(), 0);
        assert_eq!(c.take_text(), "hello world");
    }

    #[test]
    fn large_output_keeps_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        let chunks = [&b"abc"[..], b"defgh", b"ijklmnop", b"qrstuvwxyz"];
        let mut log = BoundedLog::create(&path, 10).unwrap();
        let mut c = Capture::new(10);
        for chunk in chunks {
            log.write(chunk);
            c.write(chunk);
        }
        log.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("abcde\n[splice: 16 bytes"), "{text}");
        assert!(text.ends_with("]\nvwxyz"), "{text}");
        assert_eq!(c.elided(), 16);
        assert_eq!(c.take_text(), text);
        // A single chunk larger than the tail.
        let mut log = BoundedLog::create(&path, 4).unwrap();
        log.write(b"0123456789");
        log.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("01\n") && text.ends_with("89"), "{text}");
    }

    #[test]
    fn output_after_the_end_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        let mut log = BoundedLog::create(&path, 100).unwrap();
        log.write(b"kept");
        log.finish().unwrap();
        log.write(b"late");
        log.note("a note").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "kept[splice: a note]\n"
        );
        let mut c = Capture::new(100);
        c.write(b"kept");
        assert_eq!(c.take_text(), "kept");
        c.write(b"late");
        assert_eq!(c.take_text(), "");
    }
}
