//! Reading the beads through the cache: which files' entries still hold (a stat of each), then
//! every file read in blocks on a few threads, a hit from the cache's JSON and the rest from
//! their files, each bead into the scan in order.

use std::collections::HashSet;
use std::fs;
use std::path::Path;

use super::load::{self, Loaded};
use super::text::{compact, entry_sum};
use super::{NEVER, Stamp};
use crate::error::Result;
use crate::model::Bead;
use crate::store::{self, Named, Scan, Unread, ids, parse_bead};

/// Where a new cache takes a readable bead's compact JSON from: the old cache's entry, or the
/// bytes read from its file (an index into [`Reading::read`]).
#[derive(Clone, Copy)]
pub(super) enum Json {
    Cached(u32),
    Read(u32),
}

/// A readable bead of a new cache: its file (an index into the names) and where its JSON is.
/// Small on purpose (12 bytes): one is kept per bead while the beads are read.
#[derive(Clone, Copy)]
pub(super) struct Fresh {
    pub named: u32,
    pub json: Json,
}

/// What reading one file gave: the bead (or why not), and where its JSON for a new cache is
/// (`None` when unreadable).
pub(super) type Outcome = (Result<Bead>, Option<Found>);

/// A bead's JSON as [`read_entry`] found it: its cache entry's index, or the file's bytes made
/// compact with the stamp of the file opened.
pub(super) enum Found {
    Cached(u32),
    Read(Option<Stamp>, Vec<u8>),
}

/// A read through the cache so far.
pub(super) struct Reading {
    pub scan: Scan,
    /// What a new cache would hold: each readable bead in id order.
    pub fresh: Vec<Fresh>,
    /// The stamp and compact JSON of each readable bead read from its file.
    pub read: Vec<(Stamp, Vec<u8>)>,
    pub from_files: usize,
    /// Readable files read from disk and old enough to be cached with their stamp: what a new
    /// cache would save the next read (an unreadable file is read every time anyway).
    pub changed: usize,
}

impl Reading {
    /// Read every file of `named`, each with its cache entry (`hits`, beside) when its stamp
    /// holds: on a few threads, a block of files at a time (the cached JSON of a block's hits
    /// read in one piece, then parsed), each bead into the scan in order as its block is done.
    pub(super) fn read(
        &mut self,
        dir: &Path,
        (named, hits): (&[Named], &[Option<u32>]),
        loaded: Option<&Loaded>,
        racy: &impl Fn(&Stamp) -> bool,
    ) {
        let Reading {
            scan,
            fresh,
            read: reads,
            from_files,
            changed,
        } = self;
        let mut k = 0u32;
        let read = |start: usize, part: &[Named]| {
            read_block(dir, part, &hits[start..start + part.len()], loaded)
        };
        // Mostly hits, the work is parsing (CPU); mostly files to read, system calls.
        let count = hits.iter().filter(|h| h.is_some()).count();
        let bound = if count * 2 > hits.len() {
            store::Bound::Cpu
        } else {
            store::Bound::Io
        };
        // Streamed: each bead goes into the scan as it is parsed, never through a second list.
        store::par_blocks(named, bound, read, |file, (read, json)| {
            let from_file = !matches!(json, Some(Found::Cached(_)));
            *from_files += usize::from(from_file);
            match read {
                Ok(bead) => {
                    let json = match json {
                        Some(Found::Cached(i)) => Some(Json::Cached(i)),
                        Some(Found::Read(stamp, bytes)) => {
                            let stamp = stamp.filter(|s| !racy(s)).unwrap_or(NEVER);
                            *changed += usize::from(stamp != NEVER);
                            reads.push((stamp, bytes));
                            Some(Json::Read((reads.len() - 1) as u32))
                        }
                        None => None,
                    };
                    if let Some(json) = json {
                        fresh.push(Fresh { named: k, json });
                    }
                    scan.beads.push(bead);
                }
                Err(error) => scan.unreadable.push(Unread {
                    id: file.id.to_string(),
                    path: file.path(dir),
                    error,
                }),
            }
            k += 1;
        });
    }
}

/// Each file's cache entry when its stamp still holds, else `None` (read the file). First each
/// file's entry of the same id (both are in id order: one walk, no search), then a stat of
/// those files only: a file with no entry is read anyway. The entries' names and stamps are
/// dropped here: the parse that follows does not need them.
pub(super) fn hits(
    dir: &Path,
    named: &[Named],
    loaded: &mut Loaded,
    touched: &HashSet<String>,
    racy: &impl Fn(&Stamp) -> bool,
) -> Vec<Option<u32>> {
    let names = loaded.take_ids();
    let stamps = loaded.take_stamps();
    let mut next = 0;
    let mut hits: Vec<Option<u32>> = named
        .iter()
        .map(|file| {
            let id = &file.id;
            while names.get(next).is_some_and(|n| n < id) {
                next += 1;
            }
            let i = next;
            let stamp = stamps.get(i).filter(|_| names[i] == *id)?;
            let maybe = ids::is_valid(id) && !touched.contains(id.as_str()) && !racy(stamp);
            u32::try_from(i).ok().filter(|_| maybe)
        })
        .collect();
    drop(names);
    // The files with a candidate entry, by position; a hit stands when its stat matches.
    let candidates: Vec<usize> = (0..hits.len()).filter(|&k| hits[k].is_some()).collect();
    let opened = (!candidates.is_empty())
        .then(|| fs::File::open(dir).ok())
        .flatten();
    let holds = store::par_map(&candidates, store::Bound::Io, |&k| {
        let file = &named[k];
        let stamp = match (&opened, file.is_plain()) {
            (Some(d), true) => Stamp::at(d, &file.id),
            _ => fs::symlink_metadata(file.path(dir))
                .ok()
                .map(|m| Stamp::of(&m)),
        };
        hits[k].is_some_and(|i| stamp == Some(stamps[i as usize]))
    });
    for (k, holds) in candidates.into_iter().zip(holds) {
        if !holds {
            hits[k] = None;
        }
    }
    hits
}

/// A block of files, each with its cache entry (`hits`, beside) when its stamp holds: the
/// entries' JSON read in one piece (a hit whose piece cannot be read is read from its file),
/// then each bead parsed. Only the blocks in flight hold cached JSON, never the whole cache's.
fn read_block(
    dir: &Path,
    part: &[Named],
    hits: &[Option<u32>],
    loaded: Option<&Loaded>,
) -> Vec<Outcome> {
    let mut each = hits.iter().filter_map(|h| h.map(|i| i as usize));
    let span = match (loaded, each.next(), each.next_back()) {
        (Some(l), Some(a), last) => l.span(a, last.unwrap_or(a)).map(|s| (l, s)),
        _ => None,
    };
    part.iter()
        .zip(hits)
        .map(|(file, &hit)| {
            let cached = hit.zip(span.as_ref()).map(|(i, (l, (base, bytes)))| {
                let e = &l.entries[i as usize];
                let from = (e.at - base) as usize;
                (i, e, &bytes[from..from + e.len])
            });
            read_entry(dir, file, cached)
        })
        .collect()
}

/// One bead: parsed from its cached JSON when it has a hit whose JSON matches its checksum
/// (its file read when it does not, or does not parse), else from its file.
fn read_entry(dir: &Path, file: &Named, cached: Option<(u32, &load::Entry, &[u8])>) -> Outcome {
    let id = &file.id;
    if let Some((i, _, json)) = cached.filter(|(_, e, json)| entry_sum(json) == e.sum) {
        // A cached bead that does not parse is read from its file, which gives the error: the
        // path is only for that message.
        if let Ok(bead) = parse_bead(Path::new(""), id, json) {
            return (Ok(store::held(bead)), Some(Found::Cached(i)));
        }
    }
    read_stamped(id, &file.path(dir))
}

/// Read one bead file as [`Store::scan`] does (the same checks, the same errors), with the
/// stamp of the file it opened and its JSON made compact.
fn read_stamped(id: &str, path: &Path) -> Outcome {
    let file = match store::open_named(id, path) {
        Ok(f) => f,
        Err(e) => return (Err(e), None),
    };
    let stamp = file.metadata().ok().map(|m| Stamp::of(&m));
    let bytes = match store::bead_bytes(path, file) {
        Ok(bytes) => bytes,
        Err(e) => return (Err(e), None),
    };
    match parse_bead(path, id, &bytes) {
        Ok(bead) => (
            Ok(store::held(bead)),
            Some(Found::Read(stamp, compact(&bytes))),
        ),
        Err(e) => (Err(e), None),
    }
}
