//! The fifteen per-node rules of the module table, in its order.

use crate::model::bead::{GateState, Verdict};
use crate::model::{Action, Autonomy, Bead, Rest, Role};
use crate::policy::gate;
use crate::policy::lineage::{self, Source};

use super::index::Index;

/// One node's result before serialization.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome<'a> {
    Act(Action),
    /// Rule 13's dispatch, kept borrowed until it is known to stand (most dispatches of a large
    /// campaign end `queued`, and need no owned copy).
    Dispatch {
        attempt: u32,
        target: &'a str,
    },
    Rest(Rest),
}

pub(crate) fn node_outcome<'a>(ix: &Index<'a>, bead: &'a Bead) -> Outcome<'a> {
    let p = &bead.pipeline;
    // Owned copies only for the outcome that needs them (a rest like `closed` needs none).
    let id = || bead.id.clone();
    let here = || p.step.clone();

    // 1, 2: closed.
    if bead.is_closed() {
        let children = ix.worktree_children(&bead.id);
        if !children.is_empty() {
            let children = children.iter().map(|c| c.to_string()).collect();
            return Outcome::Act(Action::CleanupFanout {
                bead: id(),
                children,
            });
        }
        return Outcome::Rest(Rest::Closed);
    }

    // 3, 4: leased.
    if let Some(lease) = &p.lease {
        if lease.holder != ix.snapshot.holder {
            return Outcome::Rest(Rest::Running {
                holder: lease.holder.clone(),
                since: lease.since.clone(),
                options: vec!["wait".into(), "clear-claim".into()],
            });
        }
        return Outcome::Rest(Rest::InFlight {
            holder: lease.holder.clone(),
            since: lease.since.clone(),
        });
    }

    // 5: dead-lettered.
    if let Some(dl) = &p.dead_letter {
        return Outcome::Rest(Rest::Parked {
            step: dl.step.clone(),
            reason: dl.reason.clone(),
        });
    }

    // 6: open blocking dependencies.
    let mut by: Vec<String> = bead
        .blockers()
        .filter(|b| !ix.is_closed(b))
        .map(str::to_string)
        .collect();
    if !by.is_empty() {
        by.sort_unstable();
        by.dedup();
        return Outcome::Rest(Rest::Blocked { by });
    }

    // 7: the parent has not reached delegate.
    if let Some(parent) = bead.parent.as_deref().and_then(|p| ix.bead(p))
        && !parent.is_closed()
        && !ix.releases_children(parent)
    {
        return Outcome::Rest(Rest::WaitingParent {
            parent: parent.id.clone(),
            parent_step: parent.pipeline.step.clone(),
        });
    }

    let step = ix.step(&p.step);

    // 8: gate pending on S.
    if let Some(gate) = bead.gate_on_step()
        && gate.state == GateState::Pending
    {
        let (level, source) = resolve_autonomy(ix, bead);
        let target = ix.target(bead);
        let relaxes = step.map(|s| gate::relaxes(s, bead, level, target));
        return Outcome::Rest(Rest::AwaitingHuman {
            gate: Some(here()),
            step: here(),
            autonomy: level,
            autonomy_source: source.label(),
            relaxes,
        });
    }

    // 9: delegating while sanctioned children are open.
    if step.is_some_and(|s| s.has_role(Role::Delegate))
        && let Some(split) = &p.split
    {
        let open: Vec<String> = split
            .children
            .iter()
            .filter(|c| !ix.is_closed(c))
            .cloned()
            .collect();
        if !open.is_empty() {
            return Outcome::Rest(Rest::WaitingChildren { children: open });
        }
    }

    let Some(step) = step else {
        return Outcome::Rest(Rest::Escalated {
            reason: format!(
                "step {:?} is not declared in the manifest; fix the manifest or move the node",
                p.step
            ),
        });
    };

    let proposal = bead.proposal_since_entry();
    let check = bead.check_since_entry();

    // 10: evidence to check (a proposal newer than the last check; or floors never checked here).
    let newer_proposal = proposal.is_some_and(|pr| check.is_none_or(|c| pr.seq > c.seq));
    if newer_proposal || (!step.floors.is_empty() && check.is_none()) {
        return Outcome::Act(Action::Check {
            bead: id(),
            step: here(),
        });
    }

    // 11: the check could not check.
    if let Some(c) = check
        && c.verdict == Verdict::Escalate
    {
        return Outcome::Rest(Rest::Escalated {
            reason: c.reason.clone(),
        });
    }

    // 12: a PR waits for its merge.
    let pr_url = p
        .pr_url
        .as_ref()
        .or_else(|| proposal.and_then(|pr| pr.pr_url.as_ref()));
    if pr_url.is_some()
        && let Some(c) = check
        && c.verdict == Verdict::Refuse
        && c.awaiting_merge
    {
        if c.run.as_deref() != Some(ix.snapshot.run.as_str()) {
            return Outcome::Act(Action::Check {
                bead: id(),
                step: here(),
            });
        }
        return Outcome::Rest(Rest::AwaitingMerge {
            pr_url: pr_url.cloned(),
        });
    }

    // 13, 14: dispatch, or park when the attempts are used up.
    if step.run.is_some() && needs_dispatch(bead) {
        let attempts = bead.attempts_on(&p.step);
        if attempts < step.max_attempts {
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
            return Outcome::Dispatch {
                attempt: attempts.saturating_add(1),
                target,
            };
        }
        return Outcome::Act(Action::Park {
            bead: id(),
            step: here(),
            reason: format!(
                "attempts exhausted on {}: {attempts} of {}{}",
                p.step,
                step.max_attempts,
                last_failure(bead)
            ),
        });
    }

    // 15: a person does S.
    let (level, source) = resolve_autonomy(ix, bead);
    Outcome::Rest(Rest::AwaitingHuman {
        gate: None,
        step: here(),
        autonomy: level,
        autonomy_source: source.label(),
        relaxes: None,
    })
}

/// Rule 13's condition on the evidence: nothing tried yet, or the last try came to nothing.
fn needs_dispatch(bead: &Bead) -> bool {
    let untried = bead.proposal_since_entry().is_none() && bead.dispatch_since_entry().is_none();
    let refused = bead
        .check_since_entry()
        .is_some_and(|c| c.verdict == Verdict::Refuse);
    let exited_empty = bead.exit_since_entry().is_some_and(|e| !e.proposed);
    untried || refused || exited_empty
}

fn resolve_autonomy<'a>(ix: &Index<'a>, bead: &'a Bead) -> (Autonomy, Source) {
    lineage::autonomy(ix.chain(bead), &ix.defaults)
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
            let code = e.code.map_or(String::new(), |c| format!(" with code {c}"));
            let log = e
                .log
                .as_ref()
                .map_or(String::new(), |l| format!(" (log: {l})"));
            let exit = match e.exit {
                crate::model::bead::ExitKind::Ok => "exited 0 without proposing",
                crate::model::bead::ExitKind::Failed => "failed",
                crate::model::bead::ExitKind::Timeout => "timed out",
                crate::model::bead::ExitKind::Error => "could not run",
            };
            format!("; last dispatch {exit}{code}{log}")
        }
        (None, None) => String::new(),
    }
}
