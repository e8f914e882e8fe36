//! Reading the cache: its header, then its index (each bead's id, stamp, and where its JSON is,
//! with the JSON's checksum), checked whole (length, checksum). The body is not read here: a
//! read takes the beads' JSON from the file a window at a time as it parses them, and checks
//! each bead's JSON against its checksum first ([`Store::scan_cached`](super::Store::scan_cached)).
//! The file is only ever replaced by rename, never written in place, so the open file keeps the
//! bytes that were checked.
//!
//! The entries' stamps are kept apart ([`Loaded::stamps`]): a read needs them only to stat the
//! files, and drops them before it parses; a new cache that copies old entries reads them again
//! from the index ([`Loaded::stamps_again`]).

use std::fs;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::text::Sum;
use super::{FORMAT, MAGIC, Mark, Stamp};
use crate::store::atomic;

/// An entry of the cache: where a bead's JSON is in the file, and the JSON's checksum (its name
/// is in [`Loaded::ids`] and its file's stamp in [`Loaded::stamps`], beside). 24 bytes: one is
/// held per bead while every bead is parsed.
pub(super) struct Entry {
    pub at: u64,
    pub len: usize,
    pub sum: u64,
}

/// An open cache whose index checked out.
pub(super) struct Loaded {
    pub file: fs::File,
    pub mark: Mark,
    /// In id order.
    pub entries: Vec<Entry>,
    /// Each entry's file name, in the same order: dropped once the files are matched to the
    /// entries ([`Loaded::take_ids`]), so a read does not hold them while it parses.
    pub ids: Vec<crate::model::Text>,
    /// Each entry's stamp, in the same order: dropped once the files are statted
    /// ([`Loaded::take_stamps`]), for the same reason.
    pub stamps: Vec<Stamp>,
    /// Where the index is, its length and its checksum: to read the stamps again.
    index: (u64, u64, String),
}

impl Loaded {
    /// The entries' names, taken out.
    pub(super) fn take_ids(&mut self) -> Vec<crate::model::Text> {
        std::mem::take(&mut self.ids)
    }

    /// The entries' stamps, taken out.
    pub(super) fn take_stamps(&mut self) -> Vec<Stamp> {
        std::mem::take(&mut self.stamps)
    }

    /// The entries' stamps read again from the index, streamed (`None` when the index no
    /// longer reads as it did: it must pass its checksum again and hold as many entries).
    pub(super) fn stamps_again(&self) -> Option<Vec<Stamp>> {
        let (index_at, index_len, ref sum) = self.index;
        let mut file = &self.file;
        file.seek(SeekFrom::Start(index_at)).ok()?;
        let mut lines = BufReader::with_capacity(1 << 16, file.take(index_len));
        let mut hash = Sum::new(index_len);
        let mut stamps = Vec::with_capacity(self.entries.len());
        let mut line = Vec::with_capacity(128);
        while lines.read_until(b'\n', &mut line).ok()? > 0 {
            hash.update(&line);
            let (_, stamp, _) = entry(line.strip_suffix(b"\n")?, 0)?;
            stamps.push(stamp);
            line.clear();
        }
        (hash.finish() == *sum && stamps.len() == self.entries.len()).then_some(stamps)
    }

    /// The bytes from the start of entry `first` to the end of entry `last` (`None` when the
    /// file cannot be read).
    pub(super) fn span(&self, first: usize, last: usize) -> Option<(u64, Vec<u8>)> {
        let (a, b) = (&self.entries[first], &self.entries[last]);
        let mut bytes = vec![0; usize::try_from(b.at - a.at).ok()? + b.len];
        self.file.read_exact_at(&mut bytes, a.at).ok()?;
        Some((a.at, bytes))
    }
}

/// The cache at `path`, when its header and index are whole and of this format.
pub(super) fn load(path: &Path) -> Option<Loaded> {
    let file = atomic::open_read(path).ok()?;
    // The header is one short line: its first 256 bytes hold it.
    let mut head = vec![0; 256];
    let n = file.read_at(&mut head, 0).ok()?;
    let header_len = head[..n].iter().position(|&b| b == b'\n')? + 1;
    let header = std::str::from_utf8(&head[..header_len - 1]).ok()?;
    let words: Vec<&str> = header.split(' ').collect();
    let [
        magic,
        format,
        generation,
        offset,
        id,
        body_len,
        index_len,
        sum,
    ] = words[..]
    else {
        return None;
    };
    if magic != MAGIC || format.parse::<u32>().ok()? != FORMAT {
        return None;
    }
    let mark = Mark {
        generation: generation.parse().ok()?,
        offset: offset.parse().ok()?,
        id: id.parse().ok()?,
    };
    let (body_len, index_len) = (
        body_len.parse::<u64>().ok()?,
        index_len.parse::<u64>().ok()?,
    );
    let start = header_len as u64;
    let index_at = start.checked_add(body_len)?;
    if file.metadata().ok()?.len() != index_at.checked_add(index_len)? {
        return None;
    }
    let mut index = vec![0; usize::try_from(index_len).ok()?];
    file.read_exact_at(&mut index, index_at).ok()?;
    let mut hash = Sum::new(index_len);
    hash.update(&index);
    if hash.finish() != sum {
        return None;
    }
    let count = index.iter().filter(|&&b| b == b'\n').count();
    let mut entries: Vec<Entry> = Vec::with_capacity(count);
    let mut ids: Vec<crate::model::Text> = Vec::with_capacity(count);
    let mut stamps: Vec<Stamp> = Vec::with_capacity(count);
    let mut at = start;
    for line in index.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let (id, stamp, entry) = entry(line, at)?;
        if ids.last().is_some_and(|last| *last >= id) {
            return None;
        }
        // Every number here is the file's word, checksum or not: no sum may overflow.
        at = at
            .checked_add(u64::try_from(entry.len).ok()?)?
            .checked_add(1)?;
        entries.push(entry);
        ids.push(id);
        stamps.push(stamp);
    }
    if at != index_at {
        return None;
    }
    Some(Loaded {
        file,
        mark,
        entries,
        ids,
        stamps,
        index: (index_at, index_len, sum.to_string()),
    })
}

/// One line of the index, for the JSON that starts at `at` in the file: `id`, the stamp's four
/// numbers, the JSON's length and its checksum (16 hex digits), tab-separated.
fn entry(line: &[u8], at: u64) -> Option<(crate::model::Text, Stamp, Entry)> {
    let text = std::str::from_utf8(line).ok()?;
    let mut parts = text.split('\t');
    let mut word = || parts.next();
    let id: crate::model::Text = word()?.into();
    let stamp = Stamp {
        size: word()?.parse().ok()?,
        mtime_ns: word()?.parse().ok()?,
        ctime_ns: word()?.parse().ok()?,
        ino: word()?.parse().ok()?,
    };
    let len = word()?.parse().ok()?;
    let sum = word().filter(|s| s.len() == 16)?;
    let sum = u64::from_str_radix(sum, 16).ok()?;
    if word().is_some() {
        return None;
    }
    Some((id, stamp, Entry { at, len, sum }))
}
