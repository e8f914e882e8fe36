//! The per-node rules of the module table, in its order.

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};

use crate::model::bead::{ExitKind, GateState, Verdict};
use crate::model::{Action, Autonomy, Bead, Rest, Role, Step, Text};
use crate::policy::lineage::{self, Source};
use crate::policy::{deps, gate, route};

use super::index::Index;

/// One node's result before serialization.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome<'a> {
    Act(Action),
    /// Rule 14's dispatch, kept borrowed until it is known to stand (most dispatches of a large
    /// campaign end `queued`, and need no owned copy).
    Dispatch {
        attempt: u32,
        target: &'a str,
    },
    Rest(Rest),
}

/// The first rule of the table that applies to `bead`, in four groups in the table's order.
/// `at` is its position in `ix.beads`.
pub(crate) fn node_outcome<'a>(ix: &Index<'a>, at: usize) -> Outcome<'a> {
    let bead = ix.beads[at];
    if let Some(settled) = settled(ix, at, bead) {
        return settled;
    }
    let step = ix.step(&bead.pipeline.step);
    if let Some(waiting) = waiting(ix, at, step) {
        return waiting;
    }
    let Some(step) = step else {
        return Outcome::Rest(Rest::Escalated {
            reason: format!(
                "step {:?} is not declared in the manifest; fix the manifest or move the node",
                bead.pipeline.step
            ),
        });
    };
    if let Some(spec) = &step.loop_ {
        return super::looping::outcome(ix, bead, step, spec);
    }
    checked(ix, bead, step).unwrap_or_else(|| work(ix, bead, step))
}

/// Rules 1–7 (and, between 6 and 7, a lineage that breaks off at an unreadable file): what
/// settles the node whatever its step. `at` is its position in `ix.beads`.
fn settled<'a>(ix: &Index<'a>, at: usize, bead: &'a Bead) -> Option<Outcome<'a>> {
    let p = &bead.pipeline;
    // 1, 2: closed.
    if bead.is_closed() {
        let children = ix.worktree_children(&bead.id);
        // Its own go once its route finished (its work is on its target) or a person cancelled
        // it (the work will not be done; a branch with commits is kept by the cleanup).
        let own = ix.has_worktree(at)
            && (route::finished(&ix.snapshot.manifest, bead) || bead.is_cancelled());
        if !children.is_empty() || own {
            let children = children.iter().map(|c| c.to_string()).collect();
            return Some(Outcome::Act(Action::CleanupFanout {
                bead: bead.id.to_string(),
                children,
                own,
            }));
        }
        return Some(Outcome::Rest(Rest::Closed));
    }

    // 3, 4: leased.
    if let Some(lease) = &p.lease {
        if lease.holder != ix.snapshot.holder {
            let died = ix.snapshot.dead_holders.get(&lease.holder).cloned();
            let first = match died {
                Some(_) => "reclaim-dead",
                None => "wait",
            };
            return Some(Outcome::Rest(Rest::Running {
                holder: lease.holder.as_str().into(),
                since: lease.since.as_str().into(),
                options: vec![first.into(), "clear-claim".into()],
                died,
            }));
        }
        return Some(Outcome::Rest(Rest::InFlight {
            holder: lease.holder.as_str().into(),
            since: lease.since.as_str().into(),
        }));
    }

    // 5: dead-lettered.
    if let Some(dl) = &p.dead_letter {
        return Some(Outcome::Rest(Rest::Parked {
            step: dl.step.as_str().into(),
            reason: dl.reason.clone(),
        }));
    }

    // 6: blocking dependencies not done (open, absent, or cancelled).
    let by = deps::blocked_by(
        bead,
        |id| ix.bead(id),
        |id| ix.snapshot.shipped.contains(id),
    );
    if !by.is_empty() {
        // Between 6 and 7: blocked by itself, through a cycle, it never unblocks.
        if let Some(reason) = ix.blocks_cycle(bead, &by) {
            return Some(Outcome::Rest(Rest::Escalated { reason }));
        }
        return Some(Outcome::Rest(Rest::Blocked { by }));
    }

    // Between 6 and 7: an ancestor's file could not be read, so the lineage is unknown.
    if let Some(u) = ix.unreadable_above(bead) {
        return Some(Outcome::Rest(Rest::Escalated {
            reason: format!(
                "its ancestor {} could not be read ({}), so what it inherits (autonomy, target, \
                 whether its parent released it) is unknown until that file is repaired",
                u.id, u.file
            ),
        }));
    }

    // 7: the parent has not reached delegate.
    if let Some(parent) = bead.parent.as_deref().and_then(|p| ix.bead(p))
        && !parent.is_closed()
        && !ix.releases_children(parent)
    {
        return Some(Outcome::Rest(Rest::WaitingParent {
            parent: parent.id.clone(),
            parent_step: parent.pipeline.step.clone(),
        }));
    }
    None
}

/// Rules 8 and 9: a person's gate, or children still at work.
fn waiting<'a>(ix: &Index<'a>, at: usize, step: Option<&'a Step>) -> Option<Outcome<'a>> {
    let bead = ix.beads[at];
    let p = &bead.pipeline;
    // 8: gate pending on S.
    if let Some(gate) = bead.gate_on_step()
        && gate.state == GateState::Pending
    {
        let (level, source) = resolve_autonomy(ix, bead);
        let target = ix.target(bead);
        // A route gate (a branch's `suggest_route`) is a person's choice, and a landing gate a
        // person's approval: no level relaxes them.
        let relaxes = if gate.route.is_some() || gate.land.is_some() {
            Some(false)
        } else {
            step.map(|s| gate::relaxes(s, bead, level, target))
        };
        return Some(Outcome::Rest(Rest::AwaitingHuman {
            gate: Some(p.step.clone()),
            step: p.step.clone(),
            autonomy: level,
            autonomy_source: source.label().into(),
            relaxes,
            question: None,
            land: gate.land.clone(),
        }));
    }

    // 9: delegating while sanctioned children are open.
    if step.is_some_and(|s| s.has_role(Role::Delegate)) {
        let open: Vec<Text> = ix.open_children(at).map(Text::from).collect();
        if !open.is_empty() {
            return Some(Outcome::Rest(Rest::WaitingChildren { children: open }));
        }
    }
    None
}

/// Rules 10–12: evidence to check, a check that could not check, a refusal the next check
/// answers (a PR awaiting its merge, a transient landing fault).
fn checked<'a>(ix: &Index<'a>, bead: &'a Bead, step: &'a Step) -> Option<Outcome<'a>> {
    let p = &bead.pipeline;
    let here = || p.step.to_string();
    let proposal = bead.proposal_since_entry();
    let check = bead.check_since_entry();

    // 10: evidence to check (a proposal newer than the last check; a landing a person approved
    // since it; or floors never checked here).
    let newer_proposal = proposal.is_some_and(|pr| check.is_none_or(|c| pr.seq > c.seq));
    let approved_landing = bead.gate_on_step().is_some_and(|g| {
        g.state == GateState::Approved && g.land.is_some() && check.is_none_or(|c| g.seq > c.seq)
    });
    if newer_proposal || approved_landing || (!step.floors.is_empty() && check.is_none()) {
        return Some(Outcome::Act(Action::Check {
            bead: bead.id.to_string(),
            step: here(),
        }));
    }

    // 11: the check could not check.
    if let Some(c) = check
        && c.verdict == Verdict::Escalate
    {
        return Some(Outcome::Rest(Rest::Escalated {
            reason: c.reason.clone(),
        }));
    }

    // 12: a refusal the next check answers, not the agent: a PR waits for its merge, or the
    // landing met a transient fault. Checked again once per run, so neither spins a run.
    let pr_url = p
        .pr_url
        .as_deref()
        .or_else(|| proposal.and_then(|pr| pr.pr_url.as_deref()));
    let c = check.filter(|c| c.verdict == Verdict::Refuse)?;
    let awaiting_merge = pr_url.is_some() && c.awaiting_merge;
    if !awaiting_merge && !c.recheck {
        return None;
    }
    if c.run.as_deref() != Some(ix.snapshot.run.as_str()) {
        return Some(Outcome::Act(Action::Check {
            bead: bead.id.to_string(),
            step: here(),
        }));
    }
    Some(Outcome::Rest(if awaiting_merge {
        Rest::AwaitingMerge {
            pr_url: pr_url.map(str::to_string),
        }
    } else {
        Rest::Escalated {
            reason: c.reason.clone(),
        }
    }))
}

/// Rules 12a–16: skip an optional step that cannot run, wait before a retry, dispatch, park
/// when the attempts are used up, or wait for a person.
fn work<'a>(ix: &Index<'a>, bead: &'a Bead, step: &'a Step) -> Outcome<'a> {
    let p = &bead.pipeline;
    // 13, 14, 15: back off, dispatch, or park when the attempts are used up.
    if step.run.is_some() && needs_dispatch(bead) {
        return dispatch_or_park(ix, bead, step, 0);
    }

    // 16: a person does S.
    let (level, source) = resolve_autonomy(ix, bead);
    Outcome::Rest(Rest::AwaitingHuman {
        gate: None,
        step: p.step.clone(),
        autonomy: level,
        autonomy_source: source.label().into(),
        relaxes: None,
        question: None,
        land: None,
    })
}

/// Rules 12a, 13, 14 and 15 for a node whose step's command should run again: skip it when
/// optional and unavailable, back off, dispatch, or park when the step's dispatch limit is used
/// up. Only an exit after attempt `measured` starts a backoff (a loop step's measured
/// iteration is not a failure to wait after; 0 elsewhere).
pub(crate) fn dispatch_or_park<'a>(
    ix: &Index<'a>,
    bead: &'a Bead,
    step: &'a Step,
    measured: u32,
) -> Outcome<'a> {
    let p = &bead.pipeline;
    let here = || p.step.to_string();
    // 12a: an optional step whose command this run cannot find is not applicable.
    if step.optional
        && let Some(reason) = ix.snapshot.unavailable.get(p.step.as_str())
    {
        return Outcome::Act(Action::Skip {
            bead: bead.id.to_string(),
            step: here(),
            reason: reason.clone(),
        });
    }
    let attempts = bead.attempts_on(&p.step);
    let limit = step.dispatch_limit(ix.snapshot.limits.max_turns);
    // A loop step's iterations count from the node's entry (a review may send it back).
    let used = match step.loop_ {
        Some(_) => bead.attempts_since_entry(),
        None => attempts,
    };
    if used >= limit {
        let what = match step.loop_ {
            Some(_) => "iterations",
            None => "attempts",
        };
        return Outcome::Act(Action::Park {
            bead: bead.id.to_string(),
            step: here(),
            reason: format!(
                "{what} exhausted on {}: {used} of {limit}{}",
                p.step,
                last_failure(bead)
            ),
        });
    }
    if let Some(until) = backoff_until(ix, bead, attempts, measured) {
        return Outcome::Rest(Rest::Backoff {
            until: until.into(),
            attempt: attempts.saturating_add(1),
        });
    }
    let Some(target) = ix.target(bead) else {
        return Outcome::Rest(Rest::Escalated {
            reason: format!(
                "no delivery target to branch the worktree from: set one with `splice \
                 transition set-target --bead {} --target BRANCH`, or `[delivery] target` \
                 in config.toml",
                bead.id
            ),
        });
    };
    if ix.snapshot.missing_targets.iter().any(|t| t == target) {
        return Outcome::Rest(Rest::Escalated {
            reason: format!(
                "its delivery target `{target}` names no commit in the repository (was \
                 it deleted or renamed?): create it (`git branch {target} COMMIT`), or \
                 point the node at a branch that exists with `splice transition \
                 set-target {} --target BRANCH`",
                bead.id
            ),
        });
    }
    Outcome::Dispatch {
        attempt: attempts.saturating_add(1),
        target,
    }
}

/// Rule 13: when the next attempt may start, if that is after `now`. The wait runs from the end
/// of the last dispatch since entry that used an attempt; `attempts` is the attempts used so far
/// (none: a first attempt, or one after `unpark`, never waits). A transient end waits at least
/// its `retry_after_s`, at most [`super::MAX_BACKOFF_S`]. A time that does not parse (a
/// hand-edited file) waits none.
fn backoff_until(ix: &Index, bead: &Bead, attempts: u32, measured: u32) -> Option<String> {
    let exit = bead.exit_since_entry()?;
    // A transient API failure counted no attempt, but waits all the same: the more of them
    // since entry, the longer.
    let n = match exit.exit {
        ExitKind::Transient => u32::try_from(bead.transient_since_entry()).unwrap_or(u32::MAX),
        kind if kind.counts_attempt() && exit.attempt > measured => attempts,
        _ => return None,
    };
    let mut wait = super::backoff_s(ix.snapshot.limits.backoff_s, n);
    // A transient end waits at least what its API asked for, within the cap.
    if exit.exit == ExitKind::Transient
        && let Some(asked) = exit.retry_after_s
    {
        wait = wait.max(asked.min(super::MAX_BACKOFF_S));
    }
    if wait == 0 || n == 0 {
        return None;
    }
    let ended = DateTime::parse_from_rfc3339(&exit.at).ok()?;
    let now = DateTime::parse_from_rfc3339(&ix.snapshot.now).ok()?;
    let until = ended.checked_add_signed(TimeDelta::try_seconds(i64::try_from(wait).ok()?)?)?;
    (now < until).then(|| {
        until
            .with_timezone(&Utc)
            .to_rfc3339_opts(SecondsFormat::Secs, true)
    })
}

/// Rule 14's condition on the evidence: nothing tried yet, or the last try came to nothing.
fn needs_dispatch(bead: &Bead) -> bool {
    let untried = bead.proposal_since_entry().is_none() && bead.dispatch_since_entry().is_none();
    let refused = bead
        .check_since_entry()
        .is_some_and(|c| c.verdict == Verdict::Refuse);
    let exited_empty = bead.exit_since_entry().is_some_and(|e| !e.proposed);
    untried || refused || exited_empty
}

pub(crate) fn resolve_autonomy<'a>(ix: &Index<'a>, bead: &'a Bead) -> (Autonomy, Source) {
    lineage::autonomy(ix.chain(bead), &ix.defaults)
}

/// Why the last attempt did not pass, for a park reason a person can act on: the later of the
/// last refusal and the last dispatch exit on the step.
pub(crate) fn last_failure(bead: &Bead) -> String {
    let refusal = bead
        .check_since_entry()
        .filter(|c| c.verdict == Verdict::Refuse);
    let exit = bead.exit_since_entry();
    match (refusal, exit) {
        (Some(c), None) => format!("; last refusal: {}", c.reason),
        (Some(c), Some(e)) if c.seq > e.seq => format!("; last refusal: {}", c.reason),
        (_, Some(e)) => {
            // `exited 0` says its code already.
            let code = e
                .code
                .filter(|_| e.exit != ExitKind::Ok)
                .map_or(String::new(), |c| format!(" with code {c}"));
            let log = e
                .log
                .as_ref()
                .map_or(String::new(), |l| format!(" (log: {l})"));
            let exit = match e.exit {
                ExitKind::Ok => "exited 0 without proposing",
                ExitKind::Failed => "failed",
                ExitKind::Timeout => "timed out",
                ExitKind::Error => "could not run to its end",
                ExitKind::NotStarted => "could not start",
                ExitKind::Cancelled => "was cancelled by the runner",
                ExitKind::Transient => "met a transient API failure",
                ExitKind::Unauthorized => "could not authenticate",
                ExitKind::Stalled => "stalled and was stopped",
            };
            let cause = e.cause.as_ref().map_or(String::new(), |c| format!(": {c}"));
            format!("; last dispatch {exit}{code}{log}{cause}")
        }
        (None, None) => String::new(),
    }
}
