//! The cache's text: bead JSON made compact, the body, and its checksum.

use std::io::Write;

use super::{Json, Loaded, New};

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

/// The cache's body: a line per bead, its JSON from the old cache or from its file.
pub(super) fn body(new: &New<'_>, old: Option<&Loaded>) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let size = |json: &Json| match (json, old) {
        (Json::Read(j), _) => new.read[*j as usize].1.len(),
        (Json::Cached(i), Some(l)) => l.entries[*i as usize].len,
        (Json::Cached(_), None) => 0,
    };
    let mut body = Vec::with_capacity(new.fresh.iter().map(|f| size(&f.json) + 64).sum());
    for f in new.fresh {
        let id = &new.named[f.named as usize].id;
        let s = match (f.json, old) {
            (Json::Read(j), _) => new.read[j as usize].0,
            (Json::Cached(i), Some(l)) => l.entries[i as usize].stamp,
            (Json::Cached(_), None) => return Err(std::io::ErrorKind::NotFound.into()),
        };
        let _ = write!(
            body,
            "{id}\t{}\t{}\t{}\t{}\t",
            s.size, s.mtime_ns, s.ctime_ns, s.ino
        );
        match (f.json, old) {
            (Json::Read(j), _) => body.extend_from_slice(&new.read[j as usize].1),
            (Json::Cached(i), Some(l)) => {
                let (e, at) = (&l.entries[i as usize], body.len());
                body.resize(at + e.len, 0);
                l.file.read_exact_at(&mut body[at..], e.at)?;
            }
            (Json::Cached(_), None) => return Err(std::io::ErrorKind::NotFound.into()),
        }
        body.push(b'\n');
    }
    Ok(body)
}
