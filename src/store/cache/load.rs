//! Reading the cache: its header, then its body checked (length, checksum) and indexed in one
//! streamed pass. The body is not held: a read takes the beads' JSON from the file again, a
//! window at a time, as it parses them ([`Store::scan_cached`](super::Store::scan_cached)).
//! The file is only ever replaced by rename, never written in place, so the open file keeps the
//! bytes that were checked.

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::text::Sum;
use super::{FORMAT, MAGIC, Mark, Stamp};
use crate::store::atomic;

/// An entry of the cache: a bead file's stamp and where its JSON is in the file (its name is
/// in [`Loaded::ids`], beside).
pub(super) struct Entry {
    pub stamp: Stamp,
    pub at: u64,
    pub len: usize,
}

/// An open cache whose body checked out.
pub(super) struct Loaded {
    pub file: fs::File,
    pub mark: Mark,
    /// In id order.
    pub entries: Vec<Entry>,
    /// Each entry's file name, in the same order: dropped once the files are matched to the
    /// entries ([`Loaded::take_ids`]), so a read does not hold them while it parses.
    pub ids: Vec<crate::model::Text>,
}

impl Loaded {
    /// The entries' names, taken out.
    pub fn take_ids(&mut self) -> Vec<crate::model::Text> {
        std::mem::take(&mut self.ids)
    }

    /// The bytes from the start of entry `first` to the end of entry `last` (`None` when the
    /// file cannot be read).
    pub fn span(&self, first: usize, last: usize) -> Option<(u64, Vec<u8>)> {
        let (a, b) = (&self.entries[first], &self.entries[last]);
        let mut bytes = vec![0; usize::try_from(b.at - a.at).ok()? + b.len];
        self.file.read_exact_at(&mut bytes, a.at).ok()?;
        Some((a.at, bytes))
    }
}

/// The cache at `path`, when it is whole and of this format.
pub(super) fn load(path: &Path) -> Option<Loaded> {
    let file = atomic::open_read(path).ok()?;
    let mut reader = BufReader::with_capacity(1 << 16, &file);
    let mut line = Vec::with_capacity(4096);
    reader.read_until(b'\n', &mut line).ok()?;
    let header = std::str::from_utf8(line.strip_suffix(b"\n")?).ok()?;
    let words: Vec<&str> = header.split(' ').collect();
    let [magic, format, generation, offset, id, len, sum] = words[..] else {
        return None;
    };
    if magic != MAGIC || format.parse::<u32>().ok()? != FORMAT {
        return None;
    }
    let (len, sum) = (len.parse::<u64>().ok()?, sum.to_string());
    let mark = Mark {
        generation: generation.parse().ok()?,
        offset: offset.parse().ok()?,
        id: id.parse().ok()?,
    };
    let start = line.len() as u64;
    let mut at = start;
    let mut hash = Sum::new(len);
    let mut entries: Vec<Entry> = Vec::new();
    let mut ids: Vec<crate::model::Text> = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).ok()?;
        if n == 0 {
            break;
        }
        hash.update(&line);
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        if !text.is_empty() {
            let (id, entry) = entry(text, at)?;
            if ids.last().is_some_and(|last| *last >= id) {
                return None;
            }
            entries.push(entry);
            ids.push(id);
        }
        at += n as u64;
    }
    if at - start != len || hash.finish() != sum {
        return None;
    }
    drop(reader);
    entries.shrink_to_fit();
    ids.shrink_to_fit();
    Some(Loaded {
        file,
        mark,
        entries,
        ids,
    })
}

/// One line of the body, which starts at `at` in the file: `id`, the stamp's four numbers and
/// the JSON, tab-separated.
fn entry(line: &[u8], at: u64) -> Option<(crate::model::Text, Entry)> {
    let mut parts = line.splitn(6, |b| *b == b'\t');
    let mut word = || std::str::from_utf8(parts.next()?).ok();
    let id: crate::model::Text = word()?.into();
    let stamp = Stamp {
        size: word()?.parse().ok()?,
        mtime_ns: word()?.parse().ok()?,
        ctime_ns: word()?.parse().ok()?,
        ino: word()?.parse().ok()?,
    };
    let json = parts.next()?;
    let prefix = line.len() - json.len();
    Some((
        id,
        Entry {
            stamp,
            at: at + prefix as u64,
            len: json.len(),
        },
    ))
}
