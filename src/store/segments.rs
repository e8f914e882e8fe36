//! The journal's segments. The live segment is `.splice/journal.jsonl`; recovery reads only its
//! tail. When it grows past `[journal] segment_bytes`, the writer — under the lock, right after a
//! record's commit marker, so the segment ends clean — closes it: it is renamed to
//! `.splice/journal/<generation>.jsonl`, kept for good (it is the audit trail; nothing deletes
//! it), and the next write starts the next generation's live segment.
//!
//! A segment's generation is its number in that sequence: the live one is one more than the
//! newest closed one (1 when none is closed). Record ids run on across segments, so a follower
//! (the runner's feed) keeps its place as (generation, offset within that segment): offsets in a
//! closed segment never change, and a new live segment is a new generation, never an old offset
//! reused.

use std::fs;
use std::path::PathBuf;

use serde::Serialize;

use super::{Store, atomic, journal};
use crate::error::{Error, Result};

/// The journal's size ([`Store::journal_size`]).
#[derive(Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JournalSize {
    /// `.splice/journal.jsonl`, in bytes.
    pub live_bytes: u64,
    /// How many closed segments `.splice/journal/` holds.
    pub closed_segments: u64,
    /// Their bytes, together.
    pub closed_bytes: u64,
}

impl Store {
    /// `.splice/journal/`: the closed segments.
    pub fn segments_dir(&self) -> PathBuf {
        self.dir().join("journal")
    }

    /// The closed segments, oldest first: (generation, path).
    pub fn closed_segments(&self) -> Result<Vec<(u64, PathBuf)>> {
        let dir = self.segments_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&dir, e))?;
            let name = entry.file_name();
            let generation = name
                .to_str()
                .and_then(|n| n.strip_suffix(".jsonl"))
                .and_then(|n| n.parse::<u64>().ok());
            if let Some(g) = generation {
                out.push((g, entry.path()));
            }
        }
        out.sort();
        Ok(out)
    }

    /// The live segment's generation.
    pub fn live_generation(&self) -> Result<u64> {
        Ok(self
            .closed_segments()?
            .last()
            .map_or(1, |(g, _)| g.saturating_add(1)))
    }

    /// The path of generation `generation`'s segment: the live journal, or a closed one.
    pub fn segment_path(&self, generation: u64) -> Result<PathBuf> {
        if generation >= self.live_generation()? {
            return Ok(self.journal_path());
        }
        Ok(self.segments_dir().join(format!("{generation:06}.jsonl")))
    }

    /// How big the journal is, read without the lock: the live segment's bytes and the closed
    /// segments' count and bytes (`splice doctor`).
    pub fn journal_size(&self) -> Result<JournalSize> {
        let live = self.journal_path();
        // As the writer opens it: a link, a FIFO or a directory is refused, not measured.
        let live_bytes = match atomic::open_read(&live) {
            Ok(file) => file.metadata().map_err(|e| Error::io(&live, e))?.len(),
            Err(e) if atomic::is_not_found(&e) => 0,
            Err(e) => return Err(e),
        };
        let mut size = JournalSize {
            live_bytes,
            ..JournalSize::default()
        };
        for (_, path) in self.closed_segments()? {
            size.closed_segments += 1;
            size.closed_bytes += fs::metadata(&path).map_err(|e| Error::io(&path, e))?.len();
        }
        Ok(size)
    }

    /// The id the next record gets: one more than the last one, in the live segment or, when it
    /// holds none, the newest closed one (caller holds the lock, after recovery).
    pub(super) fn next_record_id(&self) -> Result<u64> {
        let last = match journal::last_id(&self.journal_path())? {
            Some(id) => id,
            None => match self.closed_segments()?.last() {
                Some((_, path)) => journal::last_id(path)?.unwrap_or(0),
                None => 0,
            },
        };
        Ok(last.saturating_add(1))
    }

    /// Close the live segment if it has grown past `limit` bytes (caller holds the lock, the
    /// segment ends with a commit marker). Returns the generation closed.
    pub(super) fn close_segment_past(&self, limit: u64) -> Result<Option<u64>> {
        let live = self.journal_path();
        let len = fs::metadata(&live).map_or(0, |m| m.len());
        if len < limit {
            return Ok(None);
        }
        let generation = self.live_generation()?;
        let dir = self.segments_dir();
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let closed = dir.join(format!("{generation:06}.jsonl"));
        if closed.exists() {
            return Err(Error::bad_file(
                &closed,
                "a closed journal segment of this generation exists already; the journal was \
                 edited by hand: move the file away",
            ));
        }
        fs::rename(&live, &closed).map_err(|e| Error::io(&live, e))?;
        atomic::Failpoint::AfterClose.hit();
        atomic::sync_dir(&dir)?;
        atomic::sync_dir(self.dir())?;
        Ok(Some(generation))
    }
}
