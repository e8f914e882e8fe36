//! Recovery, under the lock before every write: cut a torn last line, and roll an uncommitted
//! last record forward — but only a record this protocol could have left there. A crash tears
//! at most the last line; a line before it that is not JSON is refused, not cut.
//!
//! The journal is committed to git, so its last line may have been copied, edited or forged. A
//! record is applied only if it passes every check a crash could not break:
//!
//! * its `tx` is the byte offset it starts at (a copied line keeps its old offset);
//! * it holds at least one after-image or patch, every id is a bead id, none twice, and its
//!   `changes` name the same beads at the same seqs;
//! * each after-image's `seq` follows the bead's file: one more than the file's (not yet
//!   written), the file's own (already renamed into place: left as it is), or 1 with no file (a
//!   bead the record creates);
//! * a patch ([`journal::Patch`]) whose bead is not yet written applies to the bead's file: the
//!   file is the image it names as its base, and the result the image it names.
//!
//! A record that fails is not applied and not kept pending: a void line saying why follows it, so
//! writers go on, and the caller reports it ([`Repair::Voided`]) naming the record and what to
//! do. An I/O error reading a bead file is a fault, not a verdict on the record.

use std::fs;

use super::journal::{self, Record, Tail};
use super::shell::Repair;
use super::{Store, atomic, ids};
use crate::error::{Error, Result};
use crate::model::Bead;

/// What recovery would do before the next write ([`Store::pending_recovery`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pending {
    /// The journal ends with a commit marker or a void line (or there is none).
    Nothing,
    /// The last line, from byte `at`, is torn: its `dropped` bytes would be cut.
    Torn { at: u64, dropped: u64 },
    /// The last line is torn and the one before it, at byte `at` (`len` bytes), is not a
    /// journal line either: the next write refuses ([`journal::garbled`]).
    Garbled { at: u64, len: u64 },
    /// The last record, at byte `at`, has no commit marker: it would be rolled forward, or, when
    /// `void` says why, voided and its change not applied.
    Uncommitted {
        id: u64,
        at: u64,
        verb: String,
        beads: Vec<String>,
        void: Option<String>,
    },
}

impl Store {
    /// Bring the store to a clean state after a crash (caller holds the lock). Returns what was
    /// repaired.
    pub(super) fn recover(&self) -> Result<Vec<Repair>> {
        let journal = self.journal_path();
        let mut repaired = Vec::new();
        loop {
            match journal::read_tail(&journal)? {
                Tail::Clean => return Ok(repaired),
                Tail::Torn { keep, dropped } => {
                    journal::truncate(&journal, keep)?;
                    repaired.push(Repair::TornRecord {
                        journal: journal.clone(),
                        dropped,
                    });
                }
                Tail::Uncommitted { record, at } => {
                    repaired.push(self.settle(&record, at)?);
                    return Ok(repaired);
                }
                Tail::Garbled { at, len } => return Err(journal::garbled(&journal, at, len)),
            }
        }
    }

    /// What recovery would do before the next write, found without the lock and without
    /// writing anything (`splice doctor`). A torn last line is reported as such, without
    /// looking at the line before it.
    pub fn pending_recovery(&self) -> Result<Pending> {
        Ok(match journal::read_tail(&self.journal_path())? {
            Tail::Clean => Pending::Nothing,
            Tail::Torn { keep, dropped } => Pending::Torn { at: keep, dropped },
            Tail::Garbled { at, len } => Pending::Garbled { at, len },
            Tail::Uncommitted { record, at } => Pending::Uncommitted {
                id: record.id,
                at,
                verb: plain(&record.verb),
                beads: record.written().map(|(id, _)| plain(id)).collect(),
                void: self.check_record(&record, at)?.err(),
            },
        })
    }

    /// Roll the uncommitted last record at byte `at` forward, or void it.
    fn settle(&self, record: &Record, at: u64) -> Result<Repair> {
        let journal = self.journal_path();
        let ids: Vec<String> = record.written().map(|(id, _)| ids::shown(id)).collect();
        // Only the beads of the last record can have temp files: the writer creates them after
        // the record is durable and renames them before its marker.
        for (id, _) in record.written().filter(|(id, _)| ids::is_valid(id)) {
            let tmp = atomic::tmp_path(&self.bead_path(id));
            let _ = fs::remove_file(tmp);
        }
        match self.check_record(record, at)? {
            Ok(pending) => {
                self.publish(&pending)?;
                journal::append_marker(&journal, record.tx, record.id)?;
                Ok(Repair::RolledForward {
                    verb: record.verb.clone(),
                    beads: record.written().map(|(id, _)| id.to_string()).collect(),
                })
            }
            Err(why) => {
                journal::append_void(&journal, at, record.id, &why)?;
                Ok(Repair::Voided {
                    at,
                    verb: ids::shown(&record.verb),
                    beads: ids,
                    why,
                })
            }
        }
    }

    /// The after-images still to write, or why the record must not be applied.
    fn check_record(&self, record: &Record, at: u64) -> Result<Result<Vec<Bead>, String>> {
        if record.tx != at {
            return Ok(Err(format!(
                "its tx says it starts at byte {}, but it starts at byte {at} (a line copied or \
                 moved within the journal)",
                record.tx
            )));
        }
        if let Err(why) = check_shape(record) {
            return Ok(Err(why));
        }
        let mut pending = Vec::new();
        for patch in &record.patches {
            let on_disk = match self.read_bead_file(&patch.id) {
                Ok(b) => b,
                Err(e @ (Error::BadFile { .. } | Error::Invalid(_))) => {
                    return Ok(Err(format!("bead {} cannot be checked: {e}", patch.id)));
                }
                Err(e) => return Err(e),
            };
            let seq = patch.seq;
            match on_disk {
                Some(file) if file.pipeline.seq == seq => {} // already renamed into place
                Some(file) if file.pipeline.seq.checked_add(1) == Some(seq) => {
                    match patch.apply(&file, &record.at) {
                        Ok(after) => pending.push(after),
                        Err(why) => return Ok(Err(why)),
                    }
                }
                Some(file) => {
                    return Ok(Err(format!(
                        "bead {} is at seq {}, and the record's seq {seq} does not follow it",
                        patch.id, file.pipeline.seq
                    )));
                }
                None => {
                    return Ok(Err(format!(
                        "bead {} has no file for the record's patch to apply to",
                        patch.id
                    )));
                }
            }
        }
        for image in &record.beads {
            let seq = image.pipeline.seq;
            let on_disk = match self.read_bead_file(&image.id) {
                Ok(b) => b.map(|b| b.pipeline.seq),
                Err(e @ (Error::BadFile { .. } | Error::Invalid(_))) => {
                    return Ok(Err(format!("bead {} cannot be checked: {e}", image.id)));
                }
                Err(e) => return Err(e),
            };
            match on_disk {
                Some(file) if file == seq => {} // already renamed into place
                Some(file) if file.checked_add(1) == Some(seq) => pending.push(image.clone()),
                None if seq == 1 => pending.push(image.clone()),
                Some(file) => {
                    return Ok(Err(format!(
                        "bead {} is at seq {file}, and the record's seq {seq} does not follow it",
                        image.id
                    )));
                }
                None => {
                    return Ok(Err(format!(
                        "bead {} has no file, and the record's seq {seq} is not a new bead's (1)",
                        image.id
                    )));
                }
            }
        }
        Ok(Ok(pending))
    }
}

/// A name read from the journal as a message shows it: as it is when it is a plain id, else
/// quoted and escaped.
fn plain(name: &str) -> String {
    match ids::is_valid(name) {
        true => name.to_string(),
        false => ids::shown(name),
    }
}

/// The record's own consistency: images with bead ids, none twice, matching its `changes`.
fn check_shape(record: &Record) -> Result<(), String> {
    if record.beads.is_empty() && record.patches.is_empty() {
        return Err("it holds no after-image".into());
    }
    let mut seen = std::collections::BTreeMap::new();
    for (id, seq) in record.written() {
        if !ids::is_valid(id) {
            return Err(format!("{} is not a bead id", ids::shown(id)));
        }
        if seen.insert(id, seq).is_some() {
            return Err(format!("it holds bead {id} twice"));
        }
    }
    // `changes` names every bead written whole, at its seq, and no bead twice; a patched bead
    // is named by its patch, and in `changes` only when its step moved (records written before
    // that named every bead there).
    let named: std::collections::BTreeSet<&str> =
        record.changes.iter().map(|c| c.bead.as_str()).collect();
    let matches = named.len() == record.changes.len()
        && record
            .changes
            .iter()
            .all(|c| seen.get(c.bead.as_str()) == Some(&c.seq))
        && record.beads.iter().all(|b| named.contains(b.id.as_str()));
    if !matches {
        return Err("its changes do not name its after-images at their seqs".into());
    }
    Ok(())
}
