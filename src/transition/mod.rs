//! The writer: the only code that changes pipeline state. One function per verb.
//!
//! Every verb follows DESIGN §3: slow evidence work first without the lock, then under the lock
//! (via [`Store::transact`]) recover, re-read the beads it touches, check its preconditions as a
//! compare-and-swap on (step, `seq`, lease, status), and commit one journal record holding the
//! after-image of every bead it changes. A refused precondition writes nothing.

pub mod claim;
pub mod complete;
pub mod create;
pub mod gate;
pub mod park;
pub mod propose;
pub mod read;
pub mod record;
pub mod settings;
pub mod split;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::{Bead, Config, Manifest};
use crate::policy::lineage::Defaults;
use crate::policy::route::{self, Advance};
use crate::store::{Store, Tx};

/// Who is calling and from where.
#[derive(Clone, Debug)]
pub struct Ctx<'a> {
    pub store: &'a Store,
    /// `--holder`, else `SPLICE_HOLDER`: the runner or dispatched session acting.
    pub holder: Option<String>,
    /// `SPLICE_DISPATCHED=1`: the caller is a dispatched agent session, not a person.
    pub dispatched: bool,
    /// The run id of a runner making the call (recorded on checks).
    pub run: Option<String>,
    /// Compare-and-swap: refuse unless the bead's `seq` is this.
    pub expect_seq: Option<u64>,
}

impl<'a> Ctx<'a> {
    /// A person's context with no holder.
    pub fn person(store: &'a Store) -> Ctx<'a> {
        Ctx {
            store,
            holder: None,
            dispatched: false,
            run: None,
            expect_seq: None,
        }
    }

    /// The actor named in journal records.
    pub fn actor(&self) -> String {
        match (&self.holder, self.dispatched) {
            (Some(h), _) => h.clone(),
            (None, true) => "dispatched".into(),
            (None, false) => "person".into(),
        }
    }

    /// Refuse a person-only verb from a dispatched session.
    pub fn person_only(&self, verb: &str) -> Result<()> {
        if self.dispatched {
            return Err(Error::refused(format!(
                "`{verb}` is a person's verb; a dispatched session (SPLICE_DISPATCHED=1) cannot run it"
            )));
        }
        Ok(())
    }
}

/// How a verb ended: it ran (exit 0), or it recorded a refusal or escalation (exit 1).
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Ok,
    Refused(String),
    Escalated(String),
}

/// A verb's JSON output and status.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub json: Value,
    pub status: Status,
}

impl Outcome {
    pub fn ok(json: Value) -> Outcome {
        Outcome {
            json,
            status: Status::Ok,
        }
    }
}

/// Refuse unless the bead is open.
pub fn require_open(bead: &Bead) -> Result<()> {
    if bead.is_closed() {
        return Err(Error::refused(format!("bead {} is closed", bead.id)));
    }
    Ok(())
}

/// Refuse unless the bead is at `step`.
pub fn require_step(bead: &Bead, step: &str) -> Result<()> {
    if bead.pipeline.step != step {
        return Err(Error::refused(format!(
            "bead {} is at step {}, not {step}",
            bead.id, bead.pipeline.step
        )));
    }
    Ok(())
}

/// Refuse when the bead is leased by a holder other than `holder` (`None`: a person, who may
/// act only on an unleased bead).
pub fn require_lease_free_for(bead: &Bead, holder: Option<&str>) -> Result<()> {
    match (&bead.pipeline.lease, holder) {
        (None, None) => Ok(()),
        (None, Some(h)) => Err(Error::refused(format!(
            "bead {} is not claimed by {h} (its claim was released or cleared)",
            bead.id
        ))),
        (Some(lease), Some(h)) if lease.holder == h => Ok(()),
        (Some(lease), _) => Err(Error::refused(format!(
            "bead {} is claimed by {} since {}; wait for it, or clear it with \
             `splice transition release --bead {} --clear --reason R`",
            bead.id, lease.holder, lease.since, bead.id
        ))),
    }
}

/// Refuse when another holder has the bead; anyone may act on an unleased bead.
pub fn require_not_foreign(bead: &Bead, holder: Option<&str>) -> Result<()> {
    match &bead.pipeline.lease {
        Some(lease) if Some(lease.holder.as_str()) != holder => require_lease_free_for(bead, None),
        _ => Ok(()),
    }
}

/// The compare-and-swap on `seq`, when the caller asked for one.
pub fn require_seq(bead: &Bead, expect: Option<u64>) -> Result<()> {
    match expect {
        Some(seq) if bead.pipeline.seq != seq => Err(Error::refused(format!(
            "bead {} changed: its seq is {}, expected {seq}",
            bead.id, bead.pipeline.seq
        ))),
        _ => Ok(()),
    }
}

/// The node's ancestors, nearest first, each read by `read`. A parent cycle (possible only in
/// hand-edited files) is a fault naming the bead.
fn walk_ancestors(bead: &Bead, mut read: impl FnMut(&str) -> Result<Bead>) -> Result<Vec<Bead>> {
    let mut out: Vec<Bead> = Vec::new();
    let mut next = bead.parent.clone();
    while let Some(id) = next {
        if out.len() > 1024 || id == bead.id || out.iter().any(|b| b.id == id) {
            return Err(Error::Invalid(format!(
                "bead {}: its parent chain loops at {id}",
                bead.id
            )));
        }
        let parent = read(&id)?;
        next = parent.parent.clone();
        out.push(parent);
    }
    Ok(out)
}

/// The node's ancestors, nearest first, read through the transaction.
pub fn ancestors(tx: &mut Tx, bead: &Bead) -> Result<Vec<Bead>> {
    walk_ancestors(bead, |id| tx.read(id))
}

/// The node's ancestors read without a transaction (for work done before the lock).
pub fn ancestors_unlocked(store: &Store, bead: &Bead) -> Result<Vec<Bead>> {
    walk_ancestors(bead, |id| store.read_bead(id))
}

/// The defaults a node of this store falls back to: the config's, then `branch` (the branch
/// checked out in the repository, [`create::current_branch`]).
pub fn defaults<'a>(config: &'a Config, branch: &'a Option<String>) -> Defaults<'a> {
    Defaults::new(config, branch.as_deref())
}

/// Move a node past its current step: to the next step of its route, onto the compound route
/// when its spec said `compound`, or closed when the step was the route's last.
pub fn advance(bead: &mut Bead, manifest: &Manifest, seq: u64, now: &str) -> Option<String> {
    bead.pipeline.guidance = None;
    match route::advance(manifest, bead) {
        Advance::Reroute { kind, step } => {
            bead.pipeline.kind = kind;
            bead.pipeline.route = kind.route().to_string();
            bead.enter_step(step, seq, now);
            Some(step.to_string())
        }
        Advance::Next(step) => {
            bead.enter_step(step, seq, now);
            Some(step.to_string())
        }
        Advance::Close => {
            let reason = format!(
                "{} passed: route {} complete",
                bead.pipeline.step, bead.pipeline.route
            );
            bead.close(&reason, now);
            None
        }
    }
}

/// The manifest step a bead is at, or a fault naming the manifest.
pub fn current_step<'m>(manifest: &'m Manifest, bead: &Bead) -> Result<&'m crate::model::Step> {
    manifest.step(&bead.pipeline.step).ok_or_else(|| {
        Error::Invalid(format!(
            "bead {} is at step {:?}, which the manifest does not declare",
            bead.id, bead.pipeline.step
        ))
    })
}
