//! `close` and `cancel`: a person ends a bead (DESIGN §9). `close` says the work was done another
//! way; `cancel` says it will not be done, and leaves a [`Cancelled`] marker: a cancelled bead
//! counts for no run status and satisfies no `blocks` dependency (`decide`). Both set status
//! `closed` with the reason, in one journal record.
//!
//! - **Children.** A bead with open descendants is refused unless `--recursive`, which ends them
//!   too, in the same record, the same way.
//! - **Claims.** Closing releases the claim of every bead it closes, when that holder is known
//!   not to be working elsewhere: a runner of this host whose process is gone (released), or a
//!   live runner of this host (released: that runner, polling the journal while it waits for its
//!   dispatches, sees the bead closed and kills the dispatch, whose credential already stopped
//!   working with the claim). A holder whose life cannot be told — a person's name, a runner on
//!   another host — may still be working: refused, as any foreign claim is, naming how to clear
//!   it. Who lives is asked by the caller (`driver::runner::holder_alive`) and handed to the plan.
//! - **Checkouts.** Once the record is committed, `cancel` cleans up after every bead it
//!   cancelled as the runner does after a finished node ([`crate::worktree::Tidied`]): the
//!   worktree and target checkout go, and the branch `splice/<id>` when all its commits are on
//!   the node's target — else it is kept and named in the output. A bead whose claim a live
//!   runner held is left to that runner (its dispatch is still ending in the worktree): `decide`
//!   asks for a cancelled node's checkouts to go (its rule 2) on its next pass. What fails to be
//!   cleaned up is reported, not an error: the cancel stands, and the next run tries again.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::{Caller, Ctx, Refusal, Verb, ancestors_unlocked, defaults, next_seq, require_open};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::model::bead::Cancelled;
use crate::policy::Lineage;
use crate::store::{Change, Fresh, Reads, Store};
use crate::worktree::{self, Tidied};

/// What a person asked.
#[derive(Clone, Copy, Debug)]
pub struct CloseArgs<'a> {
    pub reason: &'a str,
    /// `cancel` (the work will not be done), else `close` (done another way).
    pub cancel: bool,
    /// End the bead's open descendants too.
    pub recursive: bool,
}

impl CloseArgs<'_> {
    pub fn verb(&self) -> Verb {
        if self.cancel {
            Verb::Cancel
        } else {
            Verb::Close
        }
    }
}

/// Beads a person ended.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Closed {
    pub bead: String,
    /// `cancel`: the work will not be done.
    pub cancelled: bool,
    pub reason: String,
    /// Every bead ended: the bead, then its open descendants (`--recursive`), by id.
    pub closed: Vec<String>,
    /// The claims released.
    pub released: Vec<ReleasedClaim>,
    /// `cancel`: what cleaning up after the cancelled beads did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<Cleanup>,
}

/// What `cancel` did to the cancelled beads' checkouts and branches.
#[derive(Serialize, Clone, Debug, PartialEq, Default)]
pub struct Cleanup {
    #[serde(flatten)]
    pub tidied: Tidied,
    /// Beads whose checkouts a live runner's dispatch still works in: that runner's next pass
    /// removes them.
    pub left: Vec<String>,
    /// What could not be cleaned up, and why; the next run tries again.
    pub failed: Vec<String>,
}

/// A claim released by `close` or `cancel`.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct ReleasedClaim {
    pub bead: String,
    pub holder: String,
    /// The holder was a live runner of this host: it kills its dispatch when it sees the bead
    /// closed. `false`: a runner whose process is gone.
    pub alive: bool,
}

/// End `id` (and with `recursive` its open descendants). `alive` tells whether a claim's holder
/// lives: `Some(true)` a live runner of this host, `Some(false)` one whose process is gone,
/// `None` cannot be told.
pub fn close(
    ctx: &Ctx,
    id: &str,
    args: CloseArgs,
    alive: &dyn Fn(&str) -> Option<bool>,
) -> Result<Closed> {
    let verb = args.verb();
    ctx.admit(verb)?;
    if args.reason.trim().is_empty() {
        return Err(Error::Invalid(format!(
            "--reason must say why the bead is {}",
            if args.cancel { "cancelled" } else { "closed" }
        )));
    }
    // The descendants, found without the lock and read again under it (a child split off in
    // between is refused by the plan, which never leaves one open unknowingly).
    let below = descendants(&ctx.store.scan()?.beads, id);
    let reads = Reads::subject(id).with_others(below);
    let mut closed = ctx.apply(verb, &reads, |fresh, who| {
        let liveness = std::iter::once(&fresh.subject)
            .chain(&fresh.others)
            .filter_map(|b| b.pipeline.lease.as_ref())
            .map(|l| (l.holder.clone(), alive(&l.holder)))
            .collect();
        Ok(plan(args, who, fresh, &liveness, &ctx.now)?)
    })?;
    if args.cancel {
        closed.cleanup = Some(clean_up(ctx.store, &closed));
    }
    Ok(closed)
}

/// Clean up after every bead `closed` cancelled, but those a live runner held
/// ([`Cleanup::left`]).
fn clean_up(store: &Store, closed: &Closed) -> Cleanup {
    let mut out = Cleanup::default();
    let (repo, wts) = (store.repo(), store.worktrees_dir());
    let config = store.config();
    let branch = worktree::current_branch(repo);
    for id in &closed.closed {
        if !worktree::has_leftovers(repo, &wts, id) {
            continue;
        }
        if closed.released.iter().any(|r| r.bead == *id && r.alive) {
            out.left.push(id.clone());
            continue;
        }
        let target = store.read_bead(id).and_then(|bead| {
            let config = config.as_ref().map_err(|e| Error::Invalid(e.to_string()))?;
            let ancestors = ancestors_unlocked(store, &bead)?;
            let lineage = Lineage::new(&ancestors, defaults(config, &branch));
            Ok(lineage.target(&bead).map(str::to_string))
        });
        let tidied = target.and_then(|t| out.tidied.node(repo, &wts, id, t.as_deref(), false));
        if let Err(e) = tidied {
            out.failed.push(format!("{id}: {e}"));
        }
    }
    out
}

/// The beads below `id` (through `parent`), by id.
pub fn descendants(beads: &[Bead], id: &str) -> Vec<String> {
    let mut children: HashMap<&str, Vec<&Bead>> = HashMap::new();
    for b in beads {
        if let Some(parent) = b.parent.as_deref() {
            children.entry(parent).or_default().push(b);
        }
    }
    let mut seen = BTreeSet::new();
    let mut stack = vec![id];
    while let Some(at) = stack.pop() {
        for child in children.get(at).into_iter().flatten() {
            // A parent cycle in hand-edited files must not loop.
            if child.id != id && seen.insert(child.id.as_str()) {
                stack.push(child.id.as_str());
            }
        }
    }
    seen.into_iter().map(str::to_string).collect()
}

/// End `fresh.subject`, and its open descendants (`fresh.others` are all of them) when asked;
/// `liveness`
/// says, per claim holder, whether it lives ([`close`]).
pub fn plan(
    args: CloseArgs,
    who: Caller,
    fresh: &Fresh,
    liveness: &BTreeMap<String, Option<bool>>,
    now: &str,
) -> Result<Change<Closed>, Refusal> {
    let verb = args.verb();
    who.admit(verb)?;
    let subject = &fresh.subject;
    require_open(subject)?;
    require_children_read(fresh)?;
    let open: Vec<&Bead> = fresh
        .others
        .iter()
        .filter(|b| !b.is_closed() && b.id != subject.id)
        .collect();
    if !open.is_empty() && !args.recursive {
        return Err(Refusal::OpenChildren {
            bead: subject.id.to_string(),
            verb: verb.name().to_string(),
            children: open.iter().map(|b| b.id.to_string()).collect(),
        });
    }
    let mut beads = Vec::with_capacity(open.len() + 1);
    let mut released = Vec::new();
    for bead in std::iter::once(subject).chain(open) {
        if let Some(lease) = &bead.pipeline.lease {
            let Some(alive) = liveness.get(&lease.holder).copied().flatten() else {
                return Err(Refusal::ForeignLease {
                    bead: bead.id.to_string(),
                    holder: lease.holder.clone(),
                    since: lease.since.clone(),
                });
            };
            released.push(ReleasedClaim {
                bead: bead.id.to_string(),
                holder: lease.holder.clone(),
                alive,
            });
        }
        let reason = match bead.id == subject.id {
            true => args.reason.to_string(),
            false => format!("{} (with {})", args.reason, subject.id),
        };
        beads.push(ended(bead, &reason, args.cancel, now));
    }
    let output = Closed {
        bead: subject.id.to_string(),
        cancelled: args.cancel,
        reason: args.reason.to_string(),
        closed: beads.iter().map(|b| b.id.to_string()).collect(),
        released,
        cleanup: None,
    };
    let mut why = format!(
        "{}: {}",
        if args.cancel { "cancelled" } else { "closed" },
        args.reason
    );
    for r in &output.released {
        why.push_str(&format!("; released {}'s claim of {}", r.holder, r.bead));
    }
    Ok(Change {
        beads,
        reason: Some(why),
        output,
    })
}

/// Refuse when a split of the subject or a descendant names a child not read with them (split
/// off after the descendants were looked for): ending them would leave it open unknowingly.
fn require_children_read(fresh: &Fresh) -> Result<(), Refusal> {
    let read = |id: &str| fresh.others.iter().any(|o| o.id == id);
    for bead in std::iter::once(&fresh.subject).chain(&fresh.others) {
        let children = bead.pipeline.split.iter().flat_map(|s| &s.children);
        if let Some(child) = children.into_iter().find(|c| !read(c)) {
            return Err(Refusal::SplitMeanwhile {
                bead: bead.id.to_string(),
                child: child.to_string(),
            });
        }
    }
    Ok(())
}

/// `bead` closed with `reason`, its claim gone, and with `cancel` its [`Cancelled`] marker.
pub fn ended(bead: &Bead, reason: &str, cancel: bool, now: &str) -> Bead {
    let mut after = bead.clone();
    after.close(reason, now);
    if cancel {
        after.pipeline.cancelled = Some(Box::new(Cancelled {
            reason: reason.to_string(),
            seq: next_seq(bead),
            at: now.to_string(),
        }));
    }
    after
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::bead::Lease;

    const NOW: &str = "2026-02-03T04:05:06Z";

    fn bead(id: &str, parent: Option<&str>) -> Bead {
        let mut b = Bead::new(id.into(), id.into(), String::new(), "then");
        b.parent = parent.map(Into::into);
        b.pipeline.seq = 3;
        b
    }

    fn fresh(subject: Bead, others: Vec<Bead>) -> Fresh {
        Fresh {
            subject,
            ancestors: Vec::new(),
            others,
            taken: Default::default(),
        }
    }

    fn args(cancel: bool, recursive: bool) -> CloseArgs<'static> {
        CloseArgs {
            reason: "a mistake",
            cancel,
            recursive,
        }
    }

    #[test]
    fn open_children_need_recursive_and_are_then_ended_the_same_way() {
        let f = fresh(bead("sp-a", None), vec![bead("sp-a.1", Some("sp-a"))]);
        let none = BTreeMap::new();
        let r = plan(args(true, false), Caller::default(), &f, &none, NOW).unwrap_err();
        assert_eq!(r.kind(), "open-children");
        let change = plan(args(true, true), Caller::default(), &f, &none, NOW).unwrap();
        assert_eq!(change.output.closed, ["sp-a", "sp-a.1"]);
        for b in &change.beads {
            assert!(b.is_cancelled(), "{}", b.id);
        }
        assert_eq!(
            change.beads[1].close_reason.as_deref(),
            Some("a mistake (with sp-a)")
        );
        let closed = plan(args(false, true), Caller::default(), &f, &none, NOW).unwrap();
        assert!(closed.beads.iter().all(|b| b.is_done()));
    }

    #[test]
    fn a_claim_is_released_only_when_its_holder_is_known_to_be_a_runner_here() {
        let mut b = bead("sp-a", None);
        b.pipeline.lease = Some(Box::new(Lease {
            holder: "h".into(),
            since: "then".into(),
            credential_sha256: None,
            job: None,
        }));
        let f = fresh(b, Vec::new());
        for (alive, released) in [(Some(true), true), (Some(false), false)] {
            let liveness = BTreeMap::from([("h".to_string(), alive)]);
            let change = plan(args(false, false), Caller::default(), &f, &liveness, NOW).unwrap();
            assert_eq!(change.output.released[0].alive, released);
            assert_eq!(change.beads[0].pipeline.lease, None);
        }
        let unknown = BTreeMap::from([("h".to_string(), None)]);
        let r = plan(args(false, false), Caller::default(), &f, &unknown, NOW).unwrap_err();
        assert_eq!(r.kind(), "foreign-lease");
        let dispatched = Caller {
            dispatched: true,
            ..Caller::default()
        };
        let r = plan(args(true, false), dispatched, &f, &unknown, NOW).unwrap_err();
        assert_eq!(r.kind(), "not-a-person");
    }

    #[test]
    fn descendants_are_found_through_closed_ones_and_never_loop() {
        // (`plan` ends only the open ones.)
        let mut closed = bead("sp-a.1", Some("sp-a"));
        closed.close("done", NOW);
        let beads = [
            bead("sp-a", Some("sp-a.1.1")),
            closed,
            bead("sp-a.1.1", Some("sp-a.1")),
            bead("sp-b", None),
        ];
        assert_eq!(descendants(&beads, "sp-a"), ["sp-a.1", "sp-a.1.1"]);
    }
}
