//! Rules 25–29 of the module table: a node whose step's command should run again (a loop
//! step's iterations too) skips an optional step it cannot run, parks when the attempts are used
//! up, backs off, escalates without a target, or dispatches.

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};

use crate::model::bead::{ExitKind, Verdict};
use crate::model::{Action, Bead, Rest, Rule, Step};

use super::index::Index;
use super::rules::Outcome;

/// Rules 25–29 for a node whose step's command should run again: skip it when optional and
/// unavailable, park when the step's dispatch limit is used up, back off, or dispatch (a loop
/// step's iterations too). Only an exit after attempt `measured` starts a backoff (a loop step's measured
/// iteration is not a failure to wait after; 0 elsewhere).
pub(crate) fn dispatch_or_park<'a>(
    ix: &Index<'a>,
    bead: &'a Bead,
    step: &'a Step,
    measured: u32,
) -> Outcome<'a> {
    let p = &bead.pipeline;
    let here = || p.step.to_string();
    // 25: an optional step whose command this run cannot find is not applicable.
    if step.optional
        && let Some(reason) = ix.snapshot.unavailable.get(p.step.as_str())
    {
        return Outcome::Act(
            Rule::Skip,
            Action::Skip {
                bead: bead.id.to_string(),
                step: here(),
                reason: reason.clone(),
            },
        );
    }
    let attempts = bead.attempts_on(&p.step);
    let limit = step.dispatch_limit(ix.snapshot.limits.max_turns);
    // A loop step's iterations count from the node's entry (a review may send it back).
    let used = match step.loop_ {
        Some(_) => bead.attempts_since_entry(),
        None => attempts,
    };
    // 26: the attempts (a loop step's iterations) are used up.
    if used >= limit {
        let what = match step.loop_ {
            Some(_) => "iterations",
            None => "attempts",
        };
        return Outcome::Act(
            Rule::Exhausted,
            Action::Park {
                bead: bead.id.to_string(),
                step: here(),
                reason: format!(
                    "{what} exhausted on {}: {used} of {limit}{}",
                    p.step,
                    last_failure(bead)
                ),
            },
        );
    }
    // 27: too soon after the last attempt.
    if let Some(until) = backoff_until(ix, bead, attempts, measured) {
        return Outcome::Rest(
            Rule::Backoff,
            Rest::Backoff {
                until: until.into(),
                attempt: attempts.saturating_add(1),
            },
        );
    }
    // 28: nothing to branch the worktree from.
    let Some(target) = ix.target(bead) else {
        return Outcome::Rest(
            Rule::NoTarget,
            Rest::Escalated {
                reason: format!(
                    "no delivery target to branch the worktree from: set one with `splice \
                 transition set-target --bead {} --target BRANCH`, or `[delivery] target` \
                 in config.toml",
                    bead.id
                ),
            },
        );
    };
    if ix.snapshot.missing_targets.iter().any(|t| t == target) {
        return Outcome::Rest(
            Rule::NoTarget,
            Rest::Escalated {
                reason: format!(
                    "its delivery target `{target}` names no commit in the repository (was \
                 it deleted or renamed?): create it (`git branch {target} COMMIT`), or \
                 point the node at a branch that exists with `splice transition \
                 set-target {} --target BRANCH`",
                    bead.id
                ),
            },
        );
    }
    // 29: dispatch.
    Outcome::Dispatch {
        attempt: attempts.saturating_add(1),
        target,
    }
}

/// Rule 27: when the next attempt may start, if that is after `now`. The wait runs from the end
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

/// Rule 29's condition on the evidence: nothing tried yet, or the last try came to nothing.
pub(crate) fn needs_dispatch(bead: &Bead) -> bool {
    let untried = bead.proposal_since_entry().is_none() && bead.dispatch_since_entry().is_none();
    let refused = bead
        .check_since_entry()
        .is_some_and(|c| c.verdict == Verdict::Refuse);
    let exited_empty = bead.exit_since_entry().is_some_and(|e| !e.proposed);
    untried || refused || exited_empty
}

/// Why the last attempt did not pass, for a park reason a person can act on: the later of the
/// last refusal and the last dispatch exit on the step.
fn last_failure(bead: &Bead) -> String {
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
