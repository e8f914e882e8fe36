//! The write-ahead journal, `.splice/journal.jsonl`: one line per transition record holding
//! what it does to every bead it changes — a new bead's whole image, an existing bead's patch
//! from the image the writer read ([`Patch`], [`super::delta`]) — then one commit-marker line
//! once the after-images are in place. Recovery only ever looks at the tail, so its cost does not grow with the journal.
//!
//! A record recovery would not apply (the journal is committed, so its last line may have been
//! written by anyone) is followed by a void line instead of a marker: `{"void": tx, "why": …}`.
//! Readers treat a voided record as never written.
//!
//! Every record carries an `id`, one more than the last record's across the whole journal (its
//! marker and void line repeat it), and a `tx`: the byte offset it starts at within its segment.
//! The live segment is `journal.jsonl`; once it grows past a bound, the writer closes it into
//! `journal/<generation>.jsonl` (kept, never deleted: the audit trail) and starts the next
//! generation ([`super::segments`]). Records written before ids existed read as id 0.

use std::fs::OpenOptions;
use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::Bead;

/// One bead's step before and after a transition.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct StepChange {
    pub bead: String,
    pub from: Option<String>,
    pub to: String,
    pub seq: u64,
}

/// What a record holds for a bead it changes that had a file before: the operations from the
/// image the writer read (at `seq` - 1) to the one it wrote, and the hash of the image they make
/// ([`super::delta`]). The new `seq` is the patch's own, not an operation, and so is the new
/// `updated_at`: the record's `at` (the writer stamps every bead it writes with it). A record's
/// `changes` names a patched bead only when its step moved.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Patch {
    /// The bead.
    pub id: String,
    /// The after-image's `seq`.
    pub seq: u64,
    /// The hash of the image it makes: whoever applies it checks the result against it, so a
    /// patch applied to another image than the one it was made from is found out.
    pub sha: String,
    pub ops: Vec<super::delta::Op>,
}

impl Patch {
    /// The after-image this patch makes from `base`, or why it cannot: an operation does not
    /// fit, or the result is not the image it names (`base` is not the one it was made from).
    pub fn apply(&self, base: &Bead, at: &str) -> std::result::Result<Bead, String> {
        use super::delta;
        let mut doc = serde_json::to_value(base).map_err(|e| e.to_string())?;
        // A patch written before `updated_at` was implied sets it itself, to the same `at`.
        if let Some(fields) = doc.as_object_mut() {
            fields.insert("updated_at".into(), at.into());
        }
        delta::apply(&mut doc, &self.ops).map_err(|e| {
            format!(
                "bead {}: {e} (its file is not the image the record's patch was made from)",
                self.id
            )
        })?;
        if let Some(p) = doc.get_mut("pipeline").and_then(|p| p.as_object_mut()) {
            p.insert("seq".into(), self.seq.into());
        }
        if delta::value_sha(&doc) != self.sha {
            return Err(format!(
                "bead {}: its file is not the image the record's patch was made from (the \
                 patched image is not the one the record names)",
                self.id
            ));
        }
        let bead: Bead = serde_json::from_value(doc)
            .map_err(|e| format!("bead {}: the patched image is not a bead: {e}", self.id))?;
        if bead.id != self.id || bead.pipeline.seq != self.seq {
            return Err(format!(
                "bead {}: the patched image is another bead's, or at another seq",
                self.id
            ));
        }
        Ok(bead)
    }
}

/// A transition record: what changed, who did it, and the after-images.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Record {
    /// The byte offset at which this record starts within its segment: unique and increasing
    /// there.
    pub tx: u64,
    /// One more than the previous record's, across every segment (0: written before ids).
    #[serde(default)]
    pub id: u64,
    pub verb: String,
    pub actor: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub at: String,
    /// The step before and after of each bead written whole and of each patched bead whose
    /// step moved (of every bead, in records written before patches named their beads).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<StepChange>,
    /// Whole after-images: of the beads the record creates, and of those a patch would not make
    /// smaller (every image, in records written before patches).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub beads: Vec<Bead>,
    /// The other beads it changes, as patches from the image the writer read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<Patch>,
}

impl Record {
    /// Every bead the record changes, with its after-image's seq: the whole images, then the
    /// patches.
    pub fn written(&self) -> impl Iterator<Item = (&str, u64)> {
        self.beads
            .iter()
            .map(|b| (b.id.as_str(), b.pipeline.seq))
            .chain(self.patches.iter().map(|p| (p.id.as_str(), p.seq)))
    }
}

/// The line that commits record `tx`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Marker {
    pub commit: u64,
    /// The committed record's id.
    #[serde(default)]
    pub id: u64,
}

/// The line that voids record `void`: recovery found it unfit to apply, and says why.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Void {
    pub void: u64,
    /// The voided record's id (never given to another record).
    #[serde(default)]
    pub id: u64,
    pub why: String,
}

/// A parsed journal line.
#[derive(Debug)]
pub enum Line {
    Record(Box<Record>),
    Marker(Marker),
    Void(Void),
}

impl Line {
    pub fn parse(text: &str) -> Option<Line> {
        let value: Value = serde_json::from_str(text).ok()?;
        if value.get("commit").is_some() {
            serde_json::from_value(value).ok().map(Line::Marker)
        } else if value.get("void").is_some() {
            serde_json::from_value(value).ok().map(Line::Void)
        } else {
            serde_json::from_value(value)
                .ok()
                .map(|r| Line::Record(Box::new(r)))
        }
    }
}

/// Append `record` (its `tx` set to the current end of the file) and sync. Returns the tx.
pub fn append_record(path: &Path, record: &mut Record) -> Result<u64> {
    let mut file = crate::store::atomic::open_append(path)?;
    let end = file
        .seek(SeekFrom::End(0))
        .map_err(|e| Error::io(path, e))?;
    record.tx = end;
    let mut line = serde_json::to_vec(record).expect("a record always serializes");
    line.push(b'\n');
    if line.len() as u64 > MAX_LINE {
        return Err(Error::Invalid(format!(
            "this transition's journal record would be {} bytes, more than the {} a journal \
             line may hold ({}); nothing was written: do it in parts (import or split fewer \
             beads at a time)",
            line.len(),
            crate::safe_read::size(MAX_LINE),
            path.display()
        )));
    }
    file.write_all(&line).map_err(|e| Error::io(path, e))?;
    file.sync_data().map_err(|e| Error::io(path, e))?;
    Ok(end)
}

/// Append the commit marker for record `tx` (id `id`). Not synced on its own: a lost marker only
/// means the record is rolled forward again with the same images, and the next record's sync
/// covers it.
pub fn append_marker(path: &Path, tx: u64, id: u64) -> Result<()> {
    let mut file = crate::store::atomic::open_append(path)?;
    let mut line = serde_json::to_vec(&Marker { commit: tx, id }).expect("a marker serializes");
    line.push(b'\n');
    file.write_all(&line).map_err(|e| Error::io(path, e))
}

/// Append the void line for record `tx`, saying why, and sync it: once recovery has reported a
/// record as not applied, no later recovery may apply it.
pub fn append_void(path: &Path, tx: u64, id: u64, why: &str) -> Result<()> {
    let mut file = crate::store::atomic::open_append(path)?;
    let void = Void {
        void: tx,
        id,
        why: why.to_string(),
    };
    let mut line = serde_json::to_vec(&void).expect("a void line serializes");
    line.push(b'\n');
    file.write_all(&line).map_err(|e| Error::io(path, e))?;
    file.sync_data().map_err(|e| Error::io(path, e))
}

/// The state of the journal's end.
#[derive(Debug)]
pub enum Tail {
    /// No journal, or it ends with a commit marker or a void line.
    Clean,
    /// The last line, starting at byte `at`, is a record with no marker after it.
    Uncommitted { record: Box<Record>, at: u64 },
    /// The last line is torn (no newline, or not JSON): truncate at `keep` bytes.
    Torn { keep: u64, dropped: u64 },
    /// The last line is torn, and the line before it, at byte `at` (`len` bytes with its
    /// newline), is not JSON either. A crash tears at most the last line (each append is made
    /// durable before the next), so that one was written by something else: nothing is cut.
    Garbled { at: u64, len: u64 },
}

/// The longest journal line splice writes ([`append_record`] refuses a longer record) and so the
/// longest any reader reads. A crash tears at most one line, so an end with no line break in
/// more than this many bytes is not a tear: something else wrote it (a file of NUL bytes, junk
/// appended), and every reader refuses it naming the file ([`too_long`]) rather than read it
/// all (a reader once held the whole of such a line in memory: 1 GiB of NUL bytes took 24 s
/// and 2 GB, and a sparse file of 100 GiB aborted on a failed allocation).
pub const MAX_LINE: u64 = 256 << 20;

/// Why a journal with no line break in the [`MAX_LINE`] bytes from byte `at` is not read.
pub fn too_long(path: &Path, at: u64) -> Error {
    Error::bad_file(
        path,
        format!(
            "no line break in the {} from byte {at} on: longer than any line splice writes, so \
             not a record a crash tore, but bytes something else wrote (NUL bytes, junk \
             appended). Nothing was cut or written; put the journal back as it was \
             (`git diff` shows what changed) and run the command again",
            crate::safe_read::size(MAX_LINE)
        ),
    )
}

/// The journal's last line: where it starts, its bytes (without the newline), and whether it
/// ended with one. `None` when the file is missing or empty. Reads backwards in growing chunks,
/// never the whole file, and never more than [`MAX_LINE`] of a line.
fn last_line(path: &Path) -> Result<Option<(u64, Vec<u8>, bool)>> {
    let file = match crate::store::atomic::open_read(path) {
        Ok(f) => f,
        Err(e) if crate::store::atomic::is_not_found(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    last_line_before(path, &file, len)
}

/// Where the last newline of `bytes` is (`memrchr(3)` on Linux: a scan of 256 MiB of a hostile
/// journal takes milliseconds, not seconds in a debug build).
fn last_newline(bytes: &[u8]) -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: the pointer and length are those of a live slice; memrchr only reads it.
        let at = unsafe { libc::memrchr(bytes.as_ptr().cast(), b'\n'.into(), bytes.len()) };
        (!at.is_null()).then(|| at as usize - bytes.as_ptr() as usize)
    }
    #[cfg(not(target_os = "linux"))]
    bytes.iter().rposition(|b| *b == b'\n')
}

/// Fill `buf` from `file` at `at`; the count read, short only at the file's end.
fn read_at(path: &Path, file: &std::fs::File, buf: &mut [u8], at: u64) -> Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], at + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(done)
}

/// The last line of the first `len` bytes of `file` (the journal at `path`), as [`last_line`].
/// The line break before it is looked for in a buffer reused chunk by chunk, so a long line
/// costs no memory until it is known to be at most [`MAX_LINE`].
fn last_line_before(
    path: &Path,
    file: &std::fs::File,
    len: u64,
) -> Result<Option<(u64, Vec<u8>, bool)>> {
    if len == 0 {
        return Ok(None);
    }
    let mut last = [0u8];
    if read_at(path, file, &mut last, len - 1)? == 0 {
        // It shrank meanwhile (a writer cut a torn line): read what is there now.
        let now = file.metadata().map_err(|e| Error::io(path, e))?.len();
        return last_line_before(path, file, now.min(len - 1));
    }
    let ends_clean = last[0] == b'\n';
    let end = len - u64::from(ends_clean);
    // A marker is short: start small, grow for a long record.
    let mut chunk = 4 * 1024u64;
    let mut buf = Vec::new();
    let mut hi = end;
    // Where the line starts, and whether it lies whole in `buf` (found in the first chunk).
    let (start, in_buf) = loop {
        if hi == 0 {
            break (0, hi == end);
        }
        if end - hi >= MAX_LINE {
            return Err(too_long(path, hi));
        }
        let lo = hi.saturating_sub(chunk);
        buf.resize((hi - lo) as usize, 0);
        if read_at(path, file, &mut buf, lo)? < buf.len() {
            let now = file.metadata().map_err(|e| Error::io(path, e))?.len();
            return last_line_before(path, file, now.min(len - 1));
        }
        let first = hi == end;
        if let Some(i) = last_newline(&buf) {
            buf.drain(..=i);
            break (lo + i as u64 + 1, first);
        }
        if lo == 0 {
            break (0, first);
        }
        hi = lo;
        chunk = (chunk * 4).min(1 << 20);
    };
    if end - start > MAX_LINE {
        return Err(too_long(path, start));
    }
    let line = if in_buf {
        buf
    } else {
        let mut line = vec![0u8; (end - start) as usize];
        let got = read_at(path, file, &mut line, start)?;
        line.truncate(got);
        line
    };
    Ok(Some((start, line, ends_clean)))
}

/// Read the journal's last line without reading the whole file.
pub fn read_tail(path: &Path) -> Result<Tail> {
    let Some((keep, line, ends_clean)) = last_line(path)? else {
        return Ok(Tail::Clean);
    };
    let len = keep + line.len() as u64 + u64::from(ends_clean);
    if ends_clean && let Some(parsed) = Line::parse(&String::from_utf8_lossy(&line)) {
        return Ok(match parsed {
            Line::Marker(_) | Line::Void(_) => Tail::Clean,
            Line::Record(record) => Tail::Uncommitted { record, at: keep },
        });
    }
    // Torn. The line before it, if any, must be one a writer wrote.
    let file = crate::store::atomic::open_read(path)?;
    if let Some((at, before, _)) = last_line_before(path, &file, keep)?
        && Line::parse(&String::from_utf8_lossy(&before)).is_none()
    {
        return Ok(Tail::Garbled { at, len: keep - at });
    }
    Ok(Tail::Torn {
        keep,
        dropped: len - keep,
    })
}

/// The lines of the journal at `path`, but its last (recovery's: [`read_tail`]), that are not
/// journal lines: where each starts and its length with its newline. Every reader passes them
/// by; only something other than splice writes them (an edit, a merge's conflict markers).
/// Reads the whole file (`splice doctor`), a line at a time, holding at most [`MAX_LINE`].
pub fn foreign_lines(path: &Path) -> Result<Vec<(u64, u64)>> {
    let file = match crate::store::atomic::open_read(path) {
        Ok(f) => f,
        Err(e) if crate::store::atomic::is_not_found(&e) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut out = Vec::new();
    let mut line = Vec::new();
    let mut at = 0u64;
    // The line before: where it starts, its length, and whether it is foreign. The last line
    // is recovery's, so a line is reported only once another follows it.
    let mut before: Option<(u64, u64, bool)> = None;
    loop {
        line.clear();
        let n = Read::by_ref(&mut reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        let (len, foreign) = if line.last() != Some(&b'\n') && n as u64 > MAX_LINE {
            // Longer than any journal line: foreign, and passed by without holding it.
            let rest = reader.skip_until(b'\n').map_err(|e| Error::io(path, e))?;
            (n as u64 + rest as u64, true)
        } else {
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            (
                n as u64,
                Line::parse(&String::from_utf8_lossy(body)).is_none(),
            )
        };
        if let Some((b_at, b_len, true)) = before {
            out.push((b_at, b_len));
        }
        before = Some((at, len, foreign));
        at += len;
    }
    Ok(out)
}

/// Why recovery will not touch a journal whose line at byte `at` (`len` bytes) is not JSON,
/// though it is not the last.
pub fn garbled(path: &Path, at: u64, len: u64) -> Error {
    Error::bad_file(
        path,
        format!(
            "the line at byte {at} ({len} bytes) is not a journal line, and it is not the last \
             line, which is all a crash can tear: something else wrote it (junk appended, a \
             merge's conflict markers). Nothing was cut or written; put the journal back as it \
             was (`git diff` shows what changed) and run the command again"
        ),
    )
}

/// The id of the last record of the segment at `path`, read from its last line (a marker, a
/// void line, or a record), or `None` when it holds none or its end is torn.
pub fn last_id(path: &Path) -> Result<Option<u64>> {
    let Some((_, line, true)) = last_line(path)? else {
        return Ok(None);
    };
    Ok(match Line::parse(&String::from_utf8_lossy(&line)) {
        Some(Line::Marker(m)) => Some(m.id),
        Some(Line::Void(v)) => Some(v.id),
        Some(Line::Record(r)) => Some(r.id),
        None => None,
    })
}

/// Cut the journal back to `keep` bytes (dropping a torn last line).
pub fn truncate(path: &Path, keep: u64) -> Result<()> {
    let file = crate::store::atomic::open_regular(path, OpenOptions::new().write(true))?;
    file.set_len(keep).map_err(|e| Error::io(path, e))?;
    file.sync_all().map_err(|e| Error::io(path, e))
}

/// Every committed record in order (for replay checks and the runner's change feed), starting
/// at byte `from`. Returns the records and the offset after the last complete line read.
pub fn read_committed(path: &Path, from: u64) -> Result<(Vec<Record>, u64)> {
    let mut file = match crate::store::atomic::open_read(path) {
        Ok(f) => f,
        Err(e) if crate::store::atomic::is_not_found(&e) => return Ok((Vec::new(), 0)),
        Err(e) => return Err(e),
    };
    file.seek(SeekFrom::Start(from))
        .map_err(|e| Error::io(path, e))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    // The pending record, and the offset its line starts at (what a void line names).
    let mut pending: Option<(u64, Record)> = None;
    let mut out = Vec::new();
    let mut offset = from;
    let mut consumed = from;
    let mut line = Vec::new();
    loop {
        line.clear();
        // A line at most MAX_LINE long (and its newline) is held at once; never more.
        Read::by_ref(&mut reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io(path, e))?;
        if line.last() != Some(&b'\n') {
            if line.len() as u64 > MAX_LINE {
                return Err(too_long(path, offset));
            }
            // The end: nothing more, or a line not yet whole.
            break;
        }
        let start = offset;
        offset += line.len() as u64;
        match Line::parse(&String::from_utf8_lossy(&line)) {
            Some(Line::Record(r)) => pending = Some((start, *r)),
            Some(Line::Marker(m)) => {
                if let Some((_, r)) = pending.take()
                    && r.tx == m.commit
                {
                    out.push(r);
                }
                consumed = offset;
            }
            Some(Line::Void(_)) => {
                pending = None;
                consumed = offset;
            }
            None => {}
        }
    }
    Ok((out, consumed))
}
