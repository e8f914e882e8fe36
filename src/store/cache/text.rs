//! The cache's text: bead JSON made compact, the body and the index, and their checksums.

use std::io::Write;

use super::load::Entry;
use super::{Json, Loaded, New, Stamp};

/// JSON text without the whitespace between tokens (never inside a string). The result holds
/// no newline: a valid JSON string holds none raw.
pub(super) fn compact(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for &b in json {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
            continue;
        } else if b == b'"' {
            in_string = true;
        }
        out.push(b);
    }
    out
}

/// A 64-bit checksum of the cache's index, or of one bead's JSON (not cryptographic: it catches
/// a torn or damaged file), as 16 hex digits.
#[cfg(test)]
pub(super) fn checksum(bytes: &[u8]) -> String {
    let mut sum = Sum::new(bytes.len() as u64);
    sum.update(bytes);
    sum.finish()
}

/// [`checksum`] over bytes fed in pieces (their length known first).
pub(super) struct Sum {
    h: u64,
    pending: [u8; 8],
    filled: usize,
}

const PRIME: u64 = 0x0000_0100_0000_01b3;

impl Sum {
    pub(super) fn new(len: u64) -> Sum {
        Sum {
            h: 0xcbf2_9ce4_8422_2325 ^ len,
            pending: [0; 8],
            filled: 0,
        }
    }

    pub(super) fn update(&mut self, mut bytes: &[u8]) {
        if self.filled > 0 {
            let take = (8 - self.filled).min(bytes.len());
            self.pending[self.filled..self.filled + take].copy_from_slice(&bytes[..take]);
            self.filled += take;
            bytes = &bytes[take..];
            if self.filled < 8 {
                return;
            }
            self.word(self.pending);
            self.filled = 0;
        }
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.word(c.try_into().expect("eight bytes"));
        }
        let rest = chunks.remainder();
        self.pending[..rest.len()].copy_from_slice(rest);
        self.filled = rest.len();
    }

    fn word(&mut self, w: [u8; 8]) {
        self.h = (self.h ^ u64::from_le_bytes(w))
            .wrapping_mul(PRIME)
            .rotate_left(29);
    }

    pub(super) fn finish(&self) -> String {
        format!("{:016x}", self.value())
    }

    pub(super) fn value(&self) -> u64 {
        let mut h = self.h;
        for &b in &self.pending[..self.filled] {
            h = (h ^ u64::from(b)).wrapping_mul(PRIME);
        }
        h
    }
}

/// The checksum of one bead's JSON, kept in its index line: a read checks it before it parses
/// the JSON, so a damaged entry is read from its file instead.
pub(super) fn entry_sum(json: &[u8]) -> u64 {
    let mut sum = Sum::new(json.len() as u64);
    sum.update(json);
    sum.value()
}

/// One line of the index: the bead's id, its stamp's four numbers, its JSON's length and the
/// JSON's checksum, tab-separated.
fn index_line(out: &mut Vec<u8>, id: &str, s: &Stamp, len: usize, sum: u64) {
    out.clear();
    let _ = writeln!(
        out,
        "{id}\t{}\t{}\t{}\t{}\t{len}\t{sum:016x}",
        s.size, s.mtime_ns, s.ctime_ns, s.ino
    );
}

/// Each bead of the new cache in order: its id, its stamp, and where its JSON is (the old
/// cache's entry or the bytes read from its file).
fn beads<'a>(
    new: &'a New<'a>,
    old: Option<&'a Loaded>,
) -> impl Iterator<Item = std::io::Result<(&'a str, Stamp, Source<'a>)>> + 'a {
    new.fresh.iter().map(move |f| {
        let id = new.named[f.named as usize].id.as_str();
        match (f.json, old) {
            (Json::Read(j), _) => {
                let (stamp, bytes) = &new.read[j as usize];
                Ok((id, *stamp, Source::Bytes(bytes)))
            }
            (Json::Cached(i), Some(l)) => {
                let e = &l.entries[i as usize];
                let stamp = new.old_stamps.get(i as usize);
                let stamp = stamp.ok_or(std::io::ErrorKind::NotFound)?;
                Ok((id, *stamp, Source::Old(l, e)))
            }
            (Json::Cached(_), None) => Err(std::io::ErrorKind::NotFound.into()),
        }
    })
}

/// Where a bead's JSON is.
enum Source<'a> {
    Bytes(&'a [u8]),
    /// In the old cache's file.
    Old(&'a Loaded, &'a Entry),
}

impl Source<'_> {
    fn len(&self) -> usize {
        match self {
            Source::Bytes(b) => b.len(),
            Source::Old(_, e) => e.len,
        }
    }
}

/// The lengths of the cache's body (a line of JSON per bead) and of its index (a line per
/// bead), without reading any bead's JSON: the header, written last, has its place before them.
pub(super) fn lengths(new: &New<'_>, old: Option<&Loaded>) -> std::io::Result<(u64, u64)> {
    let mut line = Vec::with_capacity(128);
    let (mut body, mut index) = (0u64, 0u64);
    for bead in beads(new, old) {
        let (id, stamp, json) = bead?;
        index_line(&mut line, id, &stamp, json.len(), 0);
        body += json.len() as u64 + 1;
        index += line.len() as u64;
    }
    Ok((body, index))
}

/// Write the cache's body and then its index to `out`, and return the index's checksum.
/// Streamed: the body is never held whole (at 100,000 beads it is ~100 MB). JSON copied from
/// the old cache must still match its checksum, so a damaged entry is never stamped anew.
pub(super) fn write_body_and_index(
    new: &New<'_>,
    old: Option<&Loaded>,
    (body_len, index_len): (u64, u64),
    out: &mut impl Write,
) -> std::io::Result<String> {
    use std::os::unix::fs::FileExt;
    let mut sums = Vec::with_capacity(new.fresh.len());
    let mut json = Vec::new();
    let mut written = 0u64;
    for bead in beads(new, old) {
        let (_, _, source) = bead?;
        let bytes = match source {
            Source::Bytes(b) => b,
            Source::Old(l, e) => {
                json.resize(e.len, 0);
                l.file.read_exact_at(&mut json, e.at)?;
                if entry_sum(&json) != e.sum {
                    return Err(std::io::ErrorKind::InvalidData.into());
                }
                &json[..]
            }
        };
        sums.push(entry_sum(bytes));
        out.write_all(bytes)?;
        out.write_all(b"\n")?;
        written += bytes.len() as u64 + 1;
    }
    let mut index = Sum::new(index_len);
    let mut line = Vec::with_capacity(128);
    for (bead, sum) in beads(new, old).zip(sums) {
        let (id, stamp, source) = bead?;
        index_line(&mut line, id, &stamp, source.len(), sum);
        index.update(&line);
        out.write_all(&line)?;
        written += line.len() as u64;
    }
    if written != body_len + index_len {
        return Err(std::io::ErrorKind::InvalidData.into());
    }
    Ok(index.finish())
}
