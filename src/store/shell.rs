//! The one shell every writing verb runs in: the write protocol of DESIGN §3, in one place.
//!
//! A verb brings a *plan*: a pure function from the beads it needs, as they are under the lock,
//! to a [`Change`] (after-images, the journal's reason, the verb's typed output) or a refusal.
//! Plans touch no file, clock or environment, and never bump `seq`. The shell does the rest, the
//! same way for every verb, so no verb can forget a step:
//!
//! 1. take the lock (`.splice/lock`) and recover (truncate a torn tail; roll an uncommitted last
//!    record forward if it passes recovery's checks, else void it — `recover.rs`);
//! 2. read the subject, and whatever the verb declared in its [`Reads`], fresh;
//! 3. compare-and-swap: refuse unless the subject's `seq` is the caller's `--expect-seq`;
//! 4. run the plan — a refusal writes nothing;
//! 5. drop every after-image equal to the image it was read with (a no-op write is no write:
//!    it is not bumped, and when nothing is left the verb answers as it would and writes
//!    nothing — no record, no sync);
//! 6. for every changed bead: check the plan left its `seq` alone and its id is a bead id, then
//!    bump `seq` (a seq at `u64::MAX` is a fault: it never wraps or repeats), stamp `updated_at`
//!    with the transition's `now` and write this build's `schema_version`;
//! 7. redact secrets in every after-image and the reason ([`super::redact`]), then append one
//!    journal record holding every after-image, `fsync`;
//! 8. publish: a temp file per bead, made durable; rename each; `fsync` the directory;
//! 9. append the record's commit marker; release the lock.
//!
//! A transition of up to [`EACH_FILE_UP_TO`] (64) beads (nearly every verb) syncs each temp file
//! with its own `fdatasync`. A larger one (a large split or re-split, an import, a campaign's
//! start) writes its temp files unsynced and makes them all durable with one `syncfs(2)` of the beads' file system (one
//! flush instead of one journal commit per file; platforms without it sync each file). The crash
//! guarantees are the same either way, because the order is:
//!
//! * the record, holding every after-image, is durable before any bead file is touched: a crash
//!   before it leaves the old state, whole (failpoint `after-journal` onward is recoverable);
//! * until the marker, recovery ignores every temp file (it removes the record's and rewrites
//!   them from the record), and rolls the record forward: each bead is at the record's seq
//!   (renamed already) or one before it (not yet), so a crash while temp files are unsynced,
//!   half-written or lost (`after-tmp`) or while some are renamed and others not
//!   (`after-rename`) ends in the record's state, whole;
//! * no temp file is renamed before the flush (or every per-file sync) has returned, so a
//!   renamed bead file is never a name over data that a power cut could lose; and the marker is
//!   written only after the renames and the directory sync, so a marked record is on disk.
//!
//! `tests/store_crash.rs` aborts at each failpoint, in a split of two children (per-file syncs)
//! and of 1,000 (one flush), and checks the next writer's recovery leaves the whole split.
//!
//! `now` is the caller's: the shell reads no clock. What recovery repaired is kept as
//! [`Repair`]s for the caller to report ([`Store::take_repairs`]).

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::path::PathBuf;

use super::atomic::{self, Failpoint};
use super::journal::{self, Record, StepChange};
use super::lock::{Holder, LockGuard};
use super::redact::Redactor;
use super::{Store, ids};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::refusal::Refusal;

/// What a transition holds while it writes: the lock (released when dropped), and what
/// `config.toml` asks of every write.
struct Session {
    _lock: LockGuard,
    redactor: Redactor,
    /// `[journal] segment_bytes`: the live journal is closed into a segment past this.
    segment_bytes: u64,
}

/// Who runs which verb, when, and with what compare-and-swap.
#[derive(Clone, Copy, Debug)]
pub struct Transition<'a> {
    /// The verb, as the journal names it.
    pub verb: &'a str,
    /// Who acts, as the journal names them.
    pub actor: &'a str,
    /// The transition's time, RFC 3339: stamped on every bead it changes and on its record.
    pub now: &'a str,
    /// Refuse unless the subject's `seq` is this.
    pub expect_seq: Option<u64>,
}

/// What a verb needs read, fresh, under the lock: its subject, and what else it declares.
#[derive(Clone, Debug)]
pub struct Reads {
    subject: String,
    ancestors: bool,
    others: Vec<String>,
    probe: Vec<String>,
}

impl Reads {
    /// The bead the verb acts on (a missing one is a fault naming its file).
    pub fn subject(id: &str) -> Reads {
        Reads {
            subject: id.to_string(),
            ancestors: false,
            others: Vec::new(),
            probe: Vec::new(),
        }
    }

    /// Also the subject's ancestors, nearest first.
    pub fn with_ancestors(mut self) -> Reads {
        self.ancestors = true;
        self
    }

    /// Also these beads (each must exist).
    pub fn with_others(mut self, ids: Vec<String>) -> Reads {
        self.others = ids;
        self
    }

    /// Also whether these ids are taken (for beads the plan creates).
    pub fn probing(mut self, ids: Vec<String>) -> Reads {
        self.probe = ids;
        self
    }
}

/// The beads a plan gets, as they are under the lock.
#[derive(Clone, Debug)]
pub struct Fresh {
    pub subject: Bead,
    /// Nearest first; empty unless declared.
    pub ancestors: Vec<Bead>,
    /// The declared other beads, in the order declared (one may also be the subject or an
    /// ancestor: it is the same image).
    pub others: Vec<Bead>,
    /// The probed ids that exist.
    pub taken: BTreeSet<String>,
}

impl Fresh {
    /// A bead this read holds, by id.
    pub fn get(&self, id: &str) -> Option<&Bead> {
        std::iter::once(&self.subject)
            .chain(&self.ancestors)
            .chain(&self.others)
            .find(|b| b.id == id)
    }

    /// Every bead this read holds, by id (the first image of an id, as [`Fresh::get`] finds).
    fn index(&self) -> HashMap<&str, &Bead> {
        let mut by_id = HashMap::with_capacity(1 + self.ancestors.len() + self.others.len());
        for bead in std::iter::once(&self.subject)
            .chain(&self.ancestors)
            .chain(&self.others)
        {
            by_id.entry(bead.id.as_str()).or_insert(bead);
        }
        by_id
    }
}

/// What a plan decided: the after-image of every bead it changes (in the journal's order), the
/// journal's reason, and the verb's output. Existing beads keep the `seq` they were read with;
/// new ones have `seq` 0. No beads, or none that differs from the image it was read with:
/// nothing is written (no record, no sync).
#[derive(Clone, Debug, PartialEq)]
pub struct Change<O> {
    pub beads: Vec<Bead>,
    pub reason: Option<String>,
    pub output: O,
}

impl<O> Change<O> {
    /// A verb that changes nothing (e.g. claiming a bead one already holds).
    pub fn nothing(output: O) -> Change<O> {
        Change {
            beads: Vec::new(),
            reason: None,
            output,
        }
    }

    /// A verb that changes one bead, with the journal's reason.
    pub fn one(bead: Bead, reason: Option<String>, output: O) -> Change<O> {
        Change {
            beads: vec![bead],
            reason,
            output,
        }
    }
}

/// What recovery repaired before a transition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repair {
    /// The journal's last line was torn; it was cut off.
    TornRecord { journal: PathBuf, dropped: u64 },
    /// The last record had no commit marker; its after-images were written and it was marked.
    RolledForward { verb: String, beads: Vec<String> },
    /// The last record, at byte `at`, had no commit marker and failed recovery's checks (it was
    /// not written by this transition protocol: copied, edited or forged); it was not applied, and
    /// a void line now says so.
    Voided {
        at: u64,
        verb: String,
        beads: Vec<String>,
        why: String,
    },
}

impl fmt::Display for Repair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Repair::TornRecord { journal, dropped } => write!(
                f,
                "recovered: truncated a torn last journal record ({dropped} bytes) in {}",
                journal.display()
            ),
            Repair::RolledForward { verb, beads } => write!(
                f,
                "recovered: rolled forward the interrupted `{verb}` transition on {}",
                beads.join(", ")
            ),
            Repair::Voided {
                at,
                verb,
                beads,
                why,
            } => write!(
                f,
                "recovered: the journal's last record (byte {at}: {verb} on {}) was not applied: \
                 {why}. It is marked void in the journal and nothing was written from it; if it \
                 was a transition you meant to make, run that verb again",
                beads.join(", ")
            ),
        }
    }
}

impl Store {
    /// Run one transition on `reads`' subject: lock, recover, read fresh, compare-and-swap on
    /// `seq`, plan, and commit what the plan changed. A refusal, from the compare-and-swap or the
    /// plan, writes nothing. Returns the plan's output.
    pub fn apply<O>(
        &self,
        t: &Transition,
        reads: &Reads,
        plan: impl FnOnce(&Fresh) -> Result<Change<O>>,
    ) -> Result<O> {
        let session = self.lock_and_recover(t)?;
        let fresh = self.read_fresh(reads)?;
        let seq = fresh.subject.pipeline.seq;
        if let Some(expected) = t.expect_seq.filter(|e| *e != seq) {
            return Err(Refusal::StaleSeq {
                bead: fresh.subject.id.to_string(),
                seq,
                expected,
                while_checking: false,
            }
            .into());
        }
        let change = plan(&fresh)?;
        // Indexed, so a plan over many beads (a cascading close, a re-split) looks each up once.
        let by_id = fresh.index();
        self.commit(t, &session, |id| by_id.get(id).copied(), change)
    }

    /// Run one transition that has no subject (it creates beads): lock, recover, probe which of
    /// `probe` are taken, plan, commit.
    pub fn create<O>(
        &self,
        t: &Transition,
        probe: &[String],
        plan: impl FnOnce(&BTreeSet<String>) -> Result<Change<O>>,
    ) -> Result<O> {
        let session = self.lock_and_recover(t)?;
        let taken = self.taken(probe);
        let change = plan(&taken)?;
        self.commit(t, &session, |_| None, change)
    }

    /// Run one transition over many beads and no one subject (an import): lock, recover, read
    /// every bead fresh, plan, and commit what the plan changed — all of it in one journal
    /// record, so a crash leaves all or none.
    pub fn batch<O>(
        &self,
        t: &Transition,
        plan: impl FnOnce(&super::Scan) -> Result<Change<O>>,
    ) -> Result<O> {
        self.batch_then(t, plan, |_| Ok(()))
    }

    /// [`Store::batch`], then `after` with its output while the lock is still held: for a verb
    /// whose own files must change with the store and no other writer between (`sync bd`'s bd
    /// file and base). The store's change is committed when `after` runs; an error from it is
    /// returned as the verb's.
    pub fn batch_then<O>(
        &self,
        t: &Transition,
        plan: impl FnOnce(&super::Scan) -> Result<Change<O>>,
        after: impl FnOnce(&O) -> Result<()>,
    ) -> Result<O> {
        let session = self.lock_and_recover(t)?;
        let scan = self.scan()?;
        let change = plan(&scan)?;
        let by_id: HashMap<&str, &Bead> = scan.beads.iter().map(|b| (b.id.as_str(), b)).collect();
        let output = self.commit(t, &session, |id| by_id.get(id).copied(), change)?;
        after(&output)?;
        drop(session);
        Ok(output)
    }

    /// What recovery repaired since the last call, oldest first.
    pub fn take_repairs(&self) -> Vec<Repair> {
        let mut repairs = self.repairs.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *repairs)
    }

    /// Take the lock (waiting at most `[lock] timeout_s`, recording `t`'s verb as its holder),
    /// then recover. Returns the session: the lock, and what `config.toml` asks of every write.
    fn lock_and_recover(&self, t: &Transition) -> Result<Session> {
        let config = self.config()?;
        let redactor = Redactor::from_env(Some(&config.security.redact_env()));
        let timeout = config.lock.timeout();
        let holder = Holder {
            pid: std::process::id(),
            verb: t.verb.to_string(),
            since: t.now.to_string(),
        };
        let lock = LockGuard::acquire(&self.dir().join("lock"), timeout, &holder)?;
        let repaired = self.recover()?;
        if !repaired.is_empty() {
            let mut repairs = self.repairs.lock().unwrap_or_else(|p| p.into_inner());
            repairs.extend(repaired);
        }
        Ok(Session {
            _lock: lock,
            redactor,
            segment_bytes: config.journal.segment_bytes(),
        })
    }

    fn read_fresh(&self, reads: &Reads) -> Result<Fresh> {
        let subject = self.read_bead(&reads.subject)?;
        let ancestors = if reads.ancestors {
            self.read_ancestors(&subject)?
        } else {
            Vec::new()
        };
        let mut fresh = Fresh {
            subject,
            ancestors,
            others: Vec::new(),
            taken: self.taken(&reads.probe),
        };
        let mut read: HashMap<String, usize> = HashMap::with_capacity(reads.others.len());
        for id in &reads.others {
            let bead = match read.get(id) {
                Some(at) => fresh.others[*at].clone(),
                None => match std::iter::once(&fresh.subject)
                    .chain(&fresh.ancestors)
                    .find(|b| b.id == id)
                {
                    Some(b) => b.clone(),
                    None => self.read_bead(id)?,
                },
            };
            read.entry(id.clone()).or_insert(fresh.others.len());
            fresh.others.push(bead);
        }
        Ok(fresh)
    }

    fn taken(&self, probe: &[String]) -> BTreeSet<String> {
        probe.iter().filter(|id| self.exists(id)).cloned().collect()
    }

    /// Bump and redact every after-image, then journal, publish and mark them. `read` gives the
    /// image a bead was read with (none for a bead the plan creates).
    fn commit<'f, O>(
        &self,
        t: &Transition,
        session: &Session,
        read: impl Fn(&str) -> Option<&'f Bead>,
        change: Change<O>,
    ) -> Result<O> {
        let Change {
            mut beads,
            reason,
            output,
        } = change;
        // A no-op write is no write: an after-image equal to the image it was read with changes
        // nothing, so it is neither bumped nor journaled; when none is left, nothing is written.
        beads.retain(|bead| read(&bead.id) != Some(bead));
        if beads.is_empty() {
            return Ok(output);
        }
        let mut changes = Vec::with_capacity(beads.len());
        let mut images = Vec::with_capacity(beads.len());
        let at = t.now;
        let mut done = std::collections::HashSet::with_capacity(beads.len());
        for mut bead in beads {
            let from = self.check_image(t.verb, &bead, read(&bead.id), &done)?;
            done.insert(bead.id.to_string());
            if bead.pipeline.seq.checked_add(1).is_none() {
                return Err(Error::bad_file(
                    self.bead_path(&bead.id),
                    format!(
                        "bead {}: pipeline.seq is {}, the largest a seq can be, so this bead can \
                         take no further transition (a seq never wraps or repeats); a seq this \
                         high was set by hand: restore the file from git or the journal",
                        bead.id,
                        u64::MAX
                    ),
                ));
            }
            bead.bump(t.now);
            let bead = session.redactor.bead(bead)?;
            changes.push(StepChange {
                bead: bead.id.to_string(),
                from,
                to: bead.pipeline.step.to_string(),
                seq: bead.pipeline.seq,
            });
            images.push(bead);
        }
        // A bead that had a file is journaled as the patch from the image read, when that is
        // smaller than the image: the record costs what it changes (issue 38).
        // A patch names its bead and seq; `changes` names the beads written whole, and the
        // patched ones whose step moved (the journal says where each node went).
        let mut whole = Vec::new();
        let mut patches = Vec::new();
        for (image, change) in images.iter().zip(std::mem::take(&mut changes)) {
            match read(&image.id).and_then(|before| patch(before, image, at)) {
                Some(p) => {
                    patches.push(p);
                    if change.from.as_deref() != Some(change.to.as_str()) {
                        changes.push(change);
                    }
                }
                None => {
                    whole.push(image.clone());
                    changes.push(change);
                }
            }
        }
        let mut record = Record {
            tx: 0,
            id: self.next_record_id()?,
            verb: t.verb.to_string(),
            actor: t.actor.to_string(),
            reason: reason.map(|r| session.redactor.text(&r).unwrap_or(r)),
            at: t.now.to_string(),
            changes,
            beads: whole,
            patches,
        };
        let journal = self.journal_path();
        let tx = journal::append_record(&journal, &mut record)?;
        Failpoint::AfterJournal.hit();
        self.publish(&images)?;
        journal::append_marker(&journal, tx, record.id)?;
        // The record is committed and the segment ends clean: close it if it is full.
        self.close_segment_past(session.segment_bytes)?;
        Ok(output)
    }

    /// The shell's guard on a plan: an existing bead keeps the `seq` it was read with; a new one
    /// has seq 0, a valid id that is free on disk; no bead twice. Returns the step it was read at.
    fn check_image(
        &self,
        verb: &str,
        bead: &Bead,
        before: Option<&Bead>,
        done: &std::collections::HashSet<String>,
    ) -> Result<Option<String>> {
        let broken = |what: &str| {
            Err(Error::Invalid(format!(
                "internal: the `{verb}` plan {what} bead {}; the plan is wrong, nothing was written",
                bead.id
            )))
        };
        if !ids::is_valid(&bead.id) {
            return Err(Error::Invalid(format!(
                "internal: the `{verb}` plan names {}, which is not a bead id; nothing was written",
                ids::shown(&bead.id)
            )));
        }
        if done.contains(bead.id.as_str()) {
            return broken("changed twice");
        }
        match before {
            Some(b) if b.pipeline.seq != bead.pipeline.seq => broken("bumped the seq of"),
            Some(b) => Ok(Some(b.pipeline.step.to_string())),
            None if bead.pipeline.seq != 0 => broken("gave a seq to new"),
            None if self.exists(&bead.id) => broken("changed, without reading it,"),
            None => Ok(None),
        }
    }

    /// Write after-images into place: temp files made durable, then renames, then the directory
    /// sync. Up to [`EACH_FILE_UP_TO`] beads, each temp file gets its own `fdatasync`; more, and
    /// they are written unsynced and made durable by one flush of their file system
    /// ([`atomic::sync_fs`], where the platform has one). Either way no file is renamed before
    /// every temp file is durable.
    pub(super) fn publish(&self, beads: &[Bead]) -> Result<()> {
        let one_flush = atomic::ONE_FLUSH && beads.len() > EACH_FILE_UP_TO;
        for bead in beads {
            let path = self.bead_file(&bead.id)?;
            match one_flush {
                true => drop(atomic::write_tmp_unsynced(&path, &bead.to_file_bytes())?),
                false => drop(atomic::write_tmp(&path, &bead.to_file_bytes())?),
            }
        }
        if one_flush {
            atomic::sync_fs(&self.beads_dir())?;
        }
        Failpoint::AfterTmp.hit();
        for bead in beads {
            atomic::publish(&self.bead_file(&bead.id)?)?;
        }
        atomic::sync_dir(&self.beads_dir())?;
        Failpoint::AfterRename.hit();
        Ok(())
    }
}

/// The patch from `before` to `after`, when it is smaller than `after` whole.
fn patch(before: &Bead, after: &Bead, at: &str) -> Option<journal::Patch> {
    use super::delta;
    let a = serde_json::to_value(after).ok()?;
    // The new seq is the patch's own, and the new `updated_at` the record's `at` (applying it
    // sets both), not operations.
    let mut b = serde_json::to_value(before).ok()?;
    b["pipeline"]["seq"] = after.pipeline.seq.into();
    b["updated_at"] = at.into();
    let ops = delta::diff(&b, &a);
    let whole = serde_json::to_vec(after).map_or(0, |v| v.len());
    (delta::size(&ops) + 80 < whole).then(|| journal::Patch {
        id: after.id.to_string(),
        seq: after.pipeline.seq,
        sha: delta::value_sha(&a),
        ops,
    })
}

/// A transition writing at most this many beads syncs each temp file; more, and one flush of
/// the file system makes them all durable. The threshold is high on purpose: a flush
/// (`syncfs(2)`) writes back every dirty page of the file system, another process's too (a build
/// writing into the same repository), so its cost is not bounded by the transition's size, while
/// up to 64 per-file syncs are (the one or two beads of nearly every verb, a split into a
/// handful of children). Past it, one flush replaces thousands of journal commits: a split into
/// 10,000 children, an import of a large bd export.
pub const EACH_FILE_UP_TO: usize = 64;
