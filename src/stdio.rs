//! The process's stdout and stderr: every byte splice prints goes through here (the cockpit's
//! terminal aside, which ratatui draws), so one rule holds for every command.
//!
//! The rule (`docs/cli.md`, "Output"): a reader that went away (`splice status | head -1`, a
//! closed pipe) ends what it receives, never the command. A write to a closed pipe is dropped
//! and reports success, here, where no caller can turn it into a fault: a verb that committed
//! its write exits as it ran, a read command exits 0, and a runner keeps running and recording
//! its passes. Rust ignores `SIGPIPE`, so the kernel says `EPIPE` (`BrokenPipe`) instead of
//! killing the process. Any other failure to write stdout (a full disk behind `> file`) is
//! still an error for [`Stdout`]'s user: the output is incomplete and nobody was told.
//!
//! `tests/closed_pipe.rs` scans `src/` so that nothing else writes to stdout.

use std::io::{self, BufWriter, Write};

/// Write `text` to stdout; a reader that went away loses it, nothing else happens. Any other
/// failure (a full disk behind `> file`) is kept for [`lost`]: the command still finishes what
/// it does, and then fails for it.
pub fn out(text: &str) {
    let mut stdout = stdout();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        let mut first = LOST.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert_with(|| e.to_string());
    }
}

/// The first failure of [`out`] to write stdout (not a closed pipe), if any: `main` turns it
/// into exit 2 for a command that would have exited 0, since its output is incomplete.
pub fn lost() -> Option<String> {
    LOST.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

static LOST: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Write `text` to stderr, the same way.
pub fn err(text: &str) {
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

/// Stdout, locked and buffered (64 KiB), for output written as it is made (a snapshot, the
/// rows of `status`): module docs. Flush it before the command ends; dropping it flushes too,
/// but then an error is lost.
pub fn stdout() -> Stdout {
    Stdout {
        inner: Some(BufWriter::with_capacity(1 << 16, io::stdout().lock())),
    }
}

/// What [`stdout`] returns.
pub struct Stdout {
    /// `None` once the reader went away: everything after is dropped.
    inner: Option<BufWriter<io::StdoutLock<'static>>>,
}

impl Stdout {
    /// `result` of a write, with a closed pipe turned into success: the buffer, which cannot
    /// be written, is dropped unwritten (so dropping it does not try again).
    fn settle<T>(&mut self, result: io::Result<T>, done: T) -> io::Result<T> {
        match result {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                if let Some(inner) = self.inner.take() {
                    drop(inner.into_parts());
                }
                Ok(done)
            }
            other => other,
        }
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let Some(inner) = self.inner.as_mut() else {
            return Ok(buf.len());
        };
        let written = inner.write(buf);
        self.settle(written, buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let Some(inner) = self.inner.as_mut() else {
            return Ok(());
        };
        let written = inner.write_all(buf);
        self.settle(written, ())
    }

    fn flush(&mut self) -> io::Result<()> {
        let Some(inner) = self.inner.as_mut() else {
            return Ok(());
        };
        let flushed = inner.flush();
        self.settle(flushed, ())
    }
}
