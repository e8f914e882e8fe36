//! The per-node rules of the module table, in its order; rules 25–29, which loop steps share,
//! are in [`super::dispatch`], rules 14–21 in [`super::looping`].

use crate::model::bead::{Gate, GateState, NodeState, Verdict};
use crate::model::{Action, Autonomy, Bead, Rest, Role, Rule, Step, Text};
use crate::policy::lineage::{self, Source};
use crate::policy::{deps, gate, route};

use super::dispatch::{dispatch_or_park, needs_dispatch};
use super::index::Index;

/// One node's result before serialization, with the rule of the table that produced it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome<'a> {
    /// An action, asked for by the rule.
    Act(Rule, Action),
    /// [`Rule::Dispatch`]'s dispatch, kept borrowed until it is known to stand (most dispatches
    /// of a large campaign end `queued`, and need no owned copy).
    Dispatch {
        /// The attempt it will be, from 1.
        attempt: u32,
        /// The branch a new worktree is branched from.
        target: &'a str,
    },
    /// A rest, given by the rule.
    Rest(Rule, Rest),
}

impl Outcome<'_> {
    /// The rule that produced it.
    pub(crate) fn rule(&self) -> Rule {
        match self {
            Outcome::Act(rule, _) | Outcome::Rest(rule, _) => *rule,
            Outcome::Dispatch { .. } => Rule::Dispatch,
        }
    }
}

/// The first rule of the table that applies to `bead`, in four groups in the table's order.
/// `at` is its position in `ix.beads`.
pub(crate) fn node_outcome<'a>(ix: &Index<'a>, at: usize) -> Outcome<'a> {
    let bead = ix.beads[at];
    let state = bead.state();
    if let Some(settled) = settled(ix, at, bead, state) {
        return settled;
    }
    let step = ix.step(&bead.pipeline.step);
    if let Some(waiting) = waiting(ix, at, state, step) {
        return waiting;
    }
    // 13: a step the manifest does not declare cannot be checked or run.
    let Some(step) = step else {
        return Outcome::Rest(
            Rule::UndeclaredStep,
            Rest::Escalated {
                reason: format!(
                    "step {:?} is not declared in the manifest; fix the manifest or move the node",
                    bead.pipeline.step
                ),
            },
        );
    };
    if let Some(spec) = &step.loop_ {
        return super::looping::outcome(ix, bead, step, spec);
    }
    checked(ix, bead, step).unwrap_or_else(|| work(ix, bead, step))
}

/// Rules 2–10: what settles the node whatever its step, first by its own [`NodeState`]
/// (closed, leased, dead-lettered), then by other beads (dependencies, an unreadable ancestor,
/// the parent). `at` is its position in `ix.beads`.
fn settled<'a>(
    ix: &Index<'a>,
    at: usize,
    bead: &'a Bead,
    state: NodeState<'a>,
) -> Option<Outcome<'a>> {
    match state {
        NodeState::Closed => return Some(closed(ix, at, bead)),
        NodeState::Leased(lease) => return Some(leased(ix, lease)),
        // 6: dead-lettered.
        NodeState::DeadLettered(dl) => {
            return Some(Outcome::Rest(
                Rule::Parked,
                Rest::Parked {
                    step: dl.step.as_str().into(),
                    reason: dl.reason.clone(),
                },
            ));
        }
        NodeState::Gated(_) | NodeState::Active => {}
    }

    // 7, 8: blocking dependencies not done (open, absent, or cancelled).
    let by = deps::blocked_by(
        bead,
        |id| ix.bead(id),
        |id| ix.snapshot.shipped.contains(id),
    );
    if !by.is_empty() {
        // 7: blocked by itself, through a cycle, it never unblocks.
        if let Some(reason) = ix.blocks_cycle(bead, &by) {
            return Some(Outcome::Rest(
                Rule::BlockedCycle,
                Rest::Escalated { reason },
            ));
        }
        return Some(Outcome::Rest(Rule::Blocked, Rest::Blocked { by }));
    }

    // 9: an ancestor's file could not be read, so the lineage is unknown.
    if let Some(u) = ix.unreadable_above(bead) {
        return Some(Outcome::Rest(
            Rule::LineageUnreadable,
            Rest::Escalated {
                reason: format!(
                    "its ancestor {} could not be read ({}), so what it inherits (autonomy, \
                     target, whether its parent released it) is unknown until that file is \
                     repaired",
                    u.id, u.file
                ),
            },
        ));
    }

    // 10: the parent has not reached delegate.
    if let Some(parent) = bead.parent.as_deref().and_then(|p| ix.bead(p))
        && !parent.is_closed()
        && !ix.releases_children(parent)
    {
        return Some(Outcome::Rest(
            Rule::WaitingParent,
            Rest::WaitingParent {
                parent: parent.id.clone(),
                parent_step: parent.pipeline.step.clone(),
            },
        ));
    }
    None
}

/// Rules 2 and 3: a closed node cleans up its checkouts, or rests.
fn closed<'a>(ix: &Index<'a>, at: usize, bead: &'a Bead) -> Outcome<'a> {
    let children = ix.worktree_children(&bead.id);
    // Its own go once its route finished (its work is on its target) or a person cancelled
    // it (the work will not be done; a branch with commits is kept by the cleanup).
    let own = ix.has_worktree(at)
        && (route::finished(&ix.snapshot.manifest, bead) || bead.is_cancelled());
    if !children.is_empty() || own {
        let children = children.iter().map(|c| c.to_string()).collect();
        return Outcome::Act(
            Rule::Cleanup,
            Action::CleanupFanout {
                bead: bead.id.to_string(),
                children,
                own,
            },
        );
    }
    Outcome::Rest(Rule::Closed, Rest::Closed)
}

/// Rules 4 and 5: leased by another holder (running), or by this runner (in flight).
fn leased<'a>(ix: &Index<'a>, lease: &crate::model::bead::Lease) -> Outcome<'a> {
    if lease.holder != ix.snapshot.holder {
        let died = ix.snapshot.dead_holders.get(&lease.holder).cloned();
        let first = match died {
            Some(_) => "reclaim-dead",
            None => "wait",
        };
        return Outcome::Rest(
            Rule::Running,
            Rest::Running {
                holder: lease.holder.as_str().into(),
                since: lease.since.as_str().into(),
                options: vec![first.into(), "clear-claim".into()],
                died,
            },
        );
    }
    Outcome::Rest(
        Rule::InFlight,
        Rest::InFlight {
            holder: lease.holder.as_str().into(),
            since: lease.since.as_str().into(),
        },
    )
}

/// Rules 11 and 12: a person's gate, or children still at work.
fn waiting<'a>(
    ix: &Index<'a>,
    at: usize,
    state: NodeState<'a>,
    step: Option<&'a Step>,
) -> Option<Outcome<'a>> {
    let bead = ix.beads[at];
    // 11: gate pending on S.
    if let NodeState::Gated(gate) = state {
        return Some(gated(ix, bead, gate, step));
    }

    // 12: delegating while sanctioned children are open.
    if step.is_some_and(|s| s.has_role(Role::Delegate)) {
        let open: Vec<Text> = ix.open_children(at).map(Text::from).collect();
        if !open.is_empty() {
            return Some(Outcome::Rest(
                Rule::WaitingChildren,
                Rest::WaitingChildren { children: open },
            ));
        }
    }
    None
}

/// Rule 11: the node waits for a person at the gate pending on its step.
fn gated<'a>(ix: &Index<'a>, bead: &'a Bead, gate: &Gate, step: Option<&'a Step>) -> Outcome<'a> {
    let p = &bead.pipeline;
    let (level, source) = resolve_autonomy(ix, bead);
    let target = ix.target(bead);
    let relaxes = gate::pending_relaxes(gate, step, bead, level, target);
    Outcome::Rest(
        Rule::Gate,
        Rest::AwaitingHuman {
            gate: Some(p.step.clone()),
            step: p.step.clone(),
            autonomy: level,
            autonomy_source: source.label().into(),
            relaxes,
            question: None,
            land: gate.land.clone(),
        },
    )
}

/// Rules 22–24: evidence to check, a check that could not check, a refusal the next check
/// answers (a PR awaiting its merge, a transient landing fault).
fn checked<'a>(ix: &Index<'a>, bead: &'a Bead, step: &'a Step) -> Option<Outcome<'a>> {
    let p = &bead.pipeline;
    let here = || p.step.to_string();
    let proposal = bead.proposal_since_entry();
    let check = bead.check_since_entry();

    // 22: evidence to check (a proposal newer than the last check; a landing a person approved
    // since it; or floors never checked here).
    let newer_proposal = proposal.is_some_and(|pr| check.is_none_or(|c| pr.seq > c.seq));
    let approved_landing = bead.gate_on_step().is_some_and(|g| {
        g.state == GateState::Approved && g.land.is_some() && check.is_none_or(|c| g.seq > c.seq)
    });
    if newer_proposal || approved_landing || (!step.floors.is_empty() && check.is_none()) {
        return Some(Outcome::Act(
            Rule::Check,
            Action::Check {
                bead: bead.id.to_string(),
                step: here(),
            },
        ));
    }

    // 23: the check could not check.
    if let Some(c) = check
        && c.verdict == Verdict::Escalate
    {
        return Some(Outcome::Rest(
            Rule::CheckEscalated,
            Rest::Escalated {
                reason: c.reason.clone(),
            },
        ));
    }

    // 24: a refusal the next check answers, not the agent: a PR waits for its merge, or the
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
        return Some(Outcome::Act(
            Rule::Recheck,
            Action::Check {
                bead: bead.id.to_string(),
                step: here(),
            },
        ));
    }
    Some(Outcome::Rest(
        Rule::Recheck,
        if awaiting_merge {
            Rest::AwaitingMerge {
                pr_url: pr_url.map(str::to_string),
            }
        } else {
            Rest::Escalated {
                reason: c.reason.clone(),
            }
        },
    ))
}

/// Rules 25–30: skip an optional step that cannot run, park when the attempts are used up, wait
/// before a retry, dispatch, or wait for a person.
fn work<'a>(ix: &Index<'a>, bead: &'a Bead, step: &'a Step) -> Outcome<'a> {
    let p = &bead.pipeline;
    // 25–29: skip, park when the attempts are used up, back off, or dispatch.
    if step.run.is_some() && needs_dispatch(bead) {
        return dispatch_or_park(ix, bead, step, 0);
    }

    // 30: a person does S.
    let (level, source) = resolve_autonomy(ix, bead);
    Outcome::Rest(
        Rule::Person,
        Rest::AwaitingHuman {
            gate: None,
            step: p.step.clone(),
            autonomy: level,
            autonomy_source: source.label().into(),
            relaxes: None,
            question: None,
            land: None,
        },
    )
}

/// `bead`'s autonomy level and who supplied it, through its lineage and the defaults.
pub(crate) fn resolve_autonomy<'a>(ix: &Index<'a>, bead: &'a Bead) -> (Autonomy, Source) {
    lineage::autonomy(ix.chain(bead), &ix.defaults)
}
