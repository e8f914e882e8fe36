//! The cache's text: bead JSON made compact, the body, and its checksum.

use std::io::Write;

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

/// A 64-bit checksum of the cache's body (not cryptographic: it catches a torn or damaged
/// file), as 16 hex digits.
#[cfg(test)]
pub(super) fn checksum(bytes: &[u8]) -> String {
    let mut sum = Sum::new(bytes.len() as u64);
    sum.update(bytes);
    sum.finish()
}

/// [`checksum`] over a body fed in pieces (its length known first).
pub(super) struct Sum {
    h: u64,
    pending: [u8; 8],
    filled: usize,
}

const PRIME: u64 = 0x0000_0100_0000_01b3;

impl Sum {
    pub fn new(len: u64) -> Sum {
        Sum {
            h: 0xcbf2_9ce4_8422_2325 ^ len,
            pending: [0; 8],
            filled: 0,
        }
    }

    pub fn update(&mut self, mut bytes: &[u8]) {
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

    pub fn finish(&self) -> String {
        let mut h = self.h;
        for &b in &self.pending[..self.filled] {
            h = (h ^ u64::from(b)).wrapping_mul(PRIME);
        }
        format!("{h:016x}")
    }
}

/// A line's start: the bead's id and its stamp's four numbers, tab-separated, then a tab.
fn prefix(out: &mut Vec<u8>, id: &str, s: &Stamp) {
    out.clear();
    let _ = write!(
        out,
        "{id}\t{}\t{}\t{}\t{}\t",
        s.size, s.mtime_ns, s.ctime_ns, s.ino
    );
}

/// Each line of the cache's body in order, a bead's line given as its start and where its JSON
/// is: the old cache's entry or the bytes read from its file.
fn lines<'a>(
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
                Ok((id, e.stamp, Source::Old(l, e.at, e.len)))
            }
            (Json::Cached(_), None) => Err(std::io::ErrorKind::NotFound.into()),
        }
    })
}

/// Where a line's JSON is.
enum Source<'a> {
    Bytes(&'a [u8]),
    /// In the old cache's file: its offset and length.
    Old(&'a Loaded, u64, usize),
}

/// The cache's body's length: a line per bead, without reading any bead's JSON.
pub(super) fn body_len(new: &New<'_>, old: Option<&Loaded>) -> std::io::Result<u64> {
    let mut start = Vec::with_capacity(128);
    let mut len = 0u64;
    for line in lines(new, old) {
        let (id, stamp, json) = line?;
        prefix(&mut start, id, &stamp);
        let json_len = match json {
            Source::Bytes(b) => b.len(),
            Source::Old(_, _, n) => n,
        };
        len += (start.len() + json_len + 1) as u64;
    }
    Ok(len)
}

/// Write the cache's body to `out`, a line per bead, its JSON from the old cache or from its
/// file, and return its checksum. Streamed: the body is never held whole (at 100,000 beads it
/// is ~100 MB).
pub(super) fn write_body(
    new: &New<'_>,
    old: Option<&Loaded>,
    len: u64,
    out: &mut impl Write,
) -> std::io::Result<String> {
    use std::os::unix::fs::FileExt;
    let mut sum = Sum::new(len);
    let mut start = Vec::with_capacity(128);
    let mut json = Vec::new();
    let mut written = 0u64;
    for line in lines(new, old) {
        let (id, stamp, source) = line?;
        prefix(&mut start, id, &stamp);
        let bytes = match source {
            Source::Bytes(b) => b,
            Source::Old(l, at, n) => {
                json.resize(n, 0);
                l.file.read_exact_at(&mut json, at)?;
                &json[..]
            }
        };
        for piece in [&start[..], bytes, b"\n"] {
            sum.update(piece);
            out.write_all(piece)?;
            written += piece.len() as u64;
        }
    }
    if written != len {
        return Err(std::io::ErrorKind::InvalidData.into());
    }
    Ok(sum.finish())
}
