//! The writer: the only code that changes pipeline state. One file per verb (or pair of verbs).
//!
//! Every verb is a *pure plan* plus the one shell that does the I/O ([`Store::apply`]; for
//! `init` and `init-task`, which have no subject, [`Store::create`]):
//!
//! - the plan, `plan(&input, &bead, …, now) -> Result<Change<Output>, Refusal>`, takes what the
//!   verb needs as arguments (the subject and, when it needs them, its ancestors as a
//!   [`Lineage`](crate::policy::Lineage), the manifest, other beads the verb declared, the results
//!   of slow floor work done before the lock) and returns the after-images of the beads it
//!   changes, the journal's reason and a typed output, or a typed [`Refusal`]. It reads no file,
//!   clock or environment and never bumps `seq`: it records the transition's seq with
//!   [`next_seq`] where a record needs it. Plans are unit-tested without a file system
//!   (`tests.rs`). Checks that only look at the caller or the arguments (the authority rule, a
//!   route the manifest lacks) also run before the shell, so they refuse before anything is
//!   read; a plan applies the authority rule to its [`Caller`] again ([`Caller::admit`]).
//! - the shell owns DESIGN §3's protocol for every verb: slow evidence work happens first
//!   without the lock (only `complete` has any: its floors, and for a direct delivery the
//!   landing of the node's branch on its target, [`land`]), then lock → recover → read fresh →
//!   compare-and-swap on `--expect-seq` → plan → bump `seq`/`updated_at`/`schema_version` of
//!   every changed bead → one journal record holding every after-image, `fsync` → publish →
//!   commit marker. A refusal writes nothing; the one refusal that follows a write is a
//!   `complete` whose floors said no, which commits its check and then refuses
//!   ([`Refusal::FloorRefused`], [`Refusal::FloorEscalated`]).
//!
//! Who may run which verb is one rule, [`authority`]: every writing verb goes through
//! [`Ctx::apply`] (or, with no subject, [`Ctx::admit`] before [`Store::create`]), which admits
//! the caller before anything is read and, for a dispatched session, checks its credential
//! against the subject's claim under the lock; the plan gets the caller as recognized.
//!
//! `now` is the caller's ([`Ctx::now`]): the CLI and the runner read the clock once per verb.
//! Outputs are typed (`Serialize`); only `src/cli/` turns them into JSON. What recovery repaired
//! is data ([`crate::store::Repair`]) the CLI reports.

pub mod acceptance;
pub mod authority;
pub mod branch;
pub mod claim;
pub mod close;
pub mod complete;
pub mod create;
pub mod dep;
pub mod edit;
pub mod gate;
pub mod import;
pub mod inbox;
pub mod job;
pub mod land;
pub mod loops;
pub mod park;
pub mod plain;
pub mod plan;
pub mod pr;
pub mod proposals;
pub mod propose;
pub mod read;
pub mod record;
pub mod resplit;
pub mod settings;
pub mod skip;
pub mod split;
pub mod start;
pub mod sync;
pub mod target;

#[cfg(test)]
mod tests;

pub use crate::refusal::Refusal;

pub use authority::{Verb, Who};

use crate::error::{Error, Result};
use crate::model::bead::RoutingEffect;
use crate::model::{Bead, Config, Manifest};
use crate::policy::branch::Firing;
use crate::policy::lineage::Defaults;
use crate::policy::route::{self, Advance};
use crate::store::{Change, Fresh, Reads, Store, Transition};
use branch::Applied;

/// Who is calling, from where, and when.
#[derive(Clone, Debug)]
pub struct Ctx<'a> {
    pub store: &'a Store,
    /// `--holder`, else `SPLICE_HOLDER`: the holder the caller names (a dispatched session's is
    /// checked against its claim).
    pub holder: Option<String>,
    /// Who the caller is, as recognized ([`Who::command_line`] for the CLI).
    pub who: Who,
    /// The run id of a runner making the call (recorded on checks).
    pub run: Option<String>,
    /// Compare-and-swap: refuse unless the bead's `seq` is this.
    pub expect_seq: Option<u64>,
    /// The transition's time (RFC 3339), read once by the caller.
    pub now: String,
}

impl<'a> Ctx<'a> {
    /// A person's context with no holder, at `now`.
    pub fn person(store: &'a Store, now: impl Into<String>) -> Ctx<'a> {
        Ctx {
            store,
            holder: None,
            who: Who::Person,
            run: None,
            expect_seq: None,
            now: now.into(),
        }
    }

    /// A command-line caller's context with no holder, at `now`: a person unless
    /// [`Who::command_line`] finds a dispatched session.
    pub fn command_line(store: &'a Store, now: impl Into<String>) -> Ctx<'a> {
        Ctx {
            who: Who::command_line(store.dir()),
            ..Ctx::person(store, now)
        }
    }

    /// The caller as plans see it, before its claim is read.
    pub fn caller(&self) -> Caller<'_> {
        Caller {
            holder: self.holder.as_deref(),
            dispatched: self.who.is_dispatched(),
            run: self.run.as_deref(),
        }
    }

    /// The actor named in journal records: the holder named, else (a dispatched session) the
    /// holder of the runner it descends from.
    pub fn actor(&self) -> String {
        match (&self.holder, &self.who) {
            (None, Who::Dispatched { runner_holder, .. }) => runner_holder
                .clone()
                .unwrap_or_else(|| self.caller().actor()),
            _ => self.caller().actor(),
        }
    }

    /// May this caller run `verb` at all ([`authority::admit`])? Checked before anything is read.
    pub fn admit(&self, verb: Verb) -> Result<(), Refusal> {
        authority::admit(verb, &self.who)
    }

    /// Run `verb` through the store's shell (journaled by [`Verb::journal_name`]) under the authority
    /// rule: the caller admitted first; under the lock, a dispatched session's credential checked
    /// against the fresh subject's claim; then `plan`, given the caller as recognized (an agent
    /// acts as its claim's holder unless it named one).
    pub fn apply<T>(
        &self,
        verb: Verb,
        reads: &Reads,
        plan: impl FnOnce(&Fresh, Caller<'_>) -> Result<Change<T>>,
    ) -> Result<T> {
        self.admit(verb)?;
        let actor = self.actor();
        self.store
            .apply(&self.transition(verb, &actor), reads, |fresh| {
                let claim_holder = authority::admit_on(verb, &self.who, &fresh.subject)?;
                let who = Caller {
                    holder: self.holder.as_deref().or(claim_holder.as_deref()),
                    ..self.caller()
                };
                plan(fresh, who)
            })
    }

    /// The shell's view of one run of `verb` by `actor`.
    fn transition<'t>(&'t self, verb: Verb, actor: &'t str) -> Transition<'t> {
        Transition {
            verb: verb.journal_name(),
            actor,
            now: &self.now,
            expect_seq: self.expect_seq,
        }
    }
}

/// Who is calling, as a plan sees it: plain data, no store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caller<'a> {
    /// The runner or dispatched session acting; `None` for a person.
    pub holder: Option<&'a str>,
    /// A dispatched agent session ([`Who::Dispatched`]).
    pub dispatched: bool,
    /// The run id of a runner.
    pub run: Option<&'a str>,
}

impl Caller<'_> {
    /// The actor named in journal records: the runner's holder, `agent` for a dispatched
    /// session (its verbs arrive by the command line, its inbox or a job's proposal file), or
    /// `person`.
    pub fn actor(&self) -> String {
        match (self.holder, self.dispatched) {
            (Some(h), _) => h.to_string(),
            (None, true) => "agent".into(),
            (None, false) => "person".into(),
        }
    }

    /// The authority rule for this caller and `verb` ([`authority::admit_caller`]): plans apply
    /// it again, so a plan called on its own refuses what the shell would.
    pub fn admit(&self, verb: Verb) -> Result<(), Refusal> {
        authority::admit_caller(verb, self.dispatched)
    }
}

/// The seq the current transition gives `bead`: the shell bumps it to this when it commits, and
/// records made by the transition carry it.
pub fn next_seq(bead: &Bead) -> u64 {
    bead.pipeline.seq.saturating_add(1)
}

/// Refuse unless the bead is open.
pub fn require_open(bead: &Bead) -> Result<(), Refusal> {
    if bead.is_closed() {
        return Err(Refusal::Closed {
            bead: bead.id.to_string(),
        });
    }
    Ok(())
}

/// Refuse unless the bead is at `step`.
pub fn require_step(bead: &Bead, step: &str) -> Result<(), Refusal> {
    if bead.pipeline.step != step {
        return Err(Refusal::WrongStep {
            bead: bead.id.to_string(),
            at: bead.pipeline.step.to_string(),
            asked: step.to_string(),
        });
    }
    Ok(())
}

/// Refuse when the bead is leased by a holder other than `holder` (`None`: a person, who may
/// act only on an unleased bead).
pub fn require_lease_free_for(bead: &Bead, holder: Option<&str>) -> Result<(), Refusal> {
    match (&bead.pipeline.lease, holder) {
        (None, None) => Ok(()),
        (None, Some(h)) => Err(Refusal::ClaimLost {
            bead: bead.id.to_string(),
            holder: h.to_string(),
        }),
        (Some(lease), Some(h)) if lease.holder == h => Ok(()),
        (Some(lease), _) => Err(Refusal::ForeignLease {
            bead: bead.id.to_string(),
            holder: lease.holder.clone(),
            since: lease.since.clone(),
        }),
    }
}

/// Refuse when another holder has the bead; anyone may act on an unleased bead.
pub fn require_not_foreign(bead: &Bead, holder: Option<&str>) -> Result<(), Refusal> {
    match &bead.pipeline.lease {
        Some(lease) if Some(lease.holder.as_str()) != holder => require_lease_free_for(bead, None),
        _ => Ok(()),
    }
}

/// The compare-and-swap on `seq` checked before slow work (the shell checks it again under the
/// lock).
pub fn require_seq(bead: &Bead, expect: Option<u64>) -> Result<(), Refusal> {
    match expect {
        Some(expected) if bead.pipeline.seq != expected => Err(Refusal::StaleSeq {
            bead: bead.id.to_string(),
            seq: bead.pipeline.seq,
            expected,
            while_checking: false,
        }),
        _ => Ok(()),
    }
}

/// The node's ancestors read without the lock (for work done before it, and for readers).
pub fn ancestors_unlocked(store: &Store, bead: &Bead) -> Result<Vec<Bead>> {
    store.read_ancestors(bead)
}

/// The defaults a node of this store falls back to: the config's, then `branch` (the branch
/// checked out in the repository, [`crate::worktree::current_branch`]).
pub fn defaults<'a>(config: &'a Config, branch: &'a Option<String>) -> Defaults<'a> {
    Defaults::new(config, branch.as_deref())
}

/// Move a node past its accepted step: where the step's first `accepted` result branch that
/// fires takes it (another step or route, parked, or a route gate), else to the next step of
/// its route, or closed when the step was the route's last. `seq` is the transition's
/// ([`next_seq`]). Returns the step entered, or `None` when the node closed or stays.
pub fn advance(bead: &mut Bead, manifest: &Manifest, seq: u64, now: &str) -> Option<String> {
    bead.pipeline.guidance = None;
    match branch::try_branches(bead, manifest, Firing::Accepted, (seq, now)) {
        Applied::Declared => declared(bead, manifest, "accepted", seq, now),
        Applied::Decided(next) => next,
        Applied::Goto { step, guidance } => {
            bead.pipeline.guidance = guidance.map(Into::into);
            bead.enter_step(&step, seq, now);
            Some(step)
        }
    }
}

/// The node's declared next step after its current one passed (`when`: `accepted` or
/// `skipped`): enter it, or at its route's last step close the node — or, inside a call,
/// return to the caller's step with the callee's summary as guidance (parking when the call's
/// frame cannot be returned to). A return and such a park are journaled in `pipeline.routing`.
pub fn declared(
    bead: &mut Bead,
    manifest: &Manifest,
    when: &str,
    seq: u64,
    now: &str,
) -> Option<String> {
    match route::advance(manifest, bead) {
        Advance::Next(step) => {
            bead.enter_step(step, seq, now);
            Some(step.to_string())
        }
        Advance::Return(back) => {
            let mut record = branch::ended(bead, when, RoutingEffect::Return, (seq, now));
            record.to_route = Some(back.route.clone());
            record.to_step = Some(back.step.clone());
            record.depth = Some(back.depth);
            bead.pipeline.routing.push(record);
            bead.pipeline.calls.pop();
            branch::switch(bead, &back.route, back.kind, &back.step, (seq, now));
            bead.pipeline.guidance = Some(back.guidance.into());
            Some(back.step)
        }
        Advance::Park(why) => {
            let mut record = branch::ended(bead, when, RoutingEffect::Park, (seq, now));
            let step = bead.pipeline.step.to_string();
            record.reason = Some(bead.park(&step, &why, seq, now));
            bead.pipeline.routing.push(record);
            None
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
