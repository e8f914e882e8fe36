//! The pure core: [`decide`] turns a [`Snapshot`] into a [`Decision`].
//!
//! `decide` is pure. It touches no file, process, environment variable, clock or random source;
//! time ("now"), the run counters, the limits and this runner's holder identity arrive inside the
//! snapshot. The same snapshot gives the same decision, byte for byte, whatever the order of its
//! beads (`tests/decide_purity.rs` scans this module's sources; `snapshots/` replays a corpus).
//!
//! # The table (DESIGN §5)
//!
//! Per node, the first rule that applies. S is the node's current step; "since entry" means at a
//! `seq` above `pipeline.entered`. Each node's entry of the decision names its rule by number
//! (`"rule": 29`; [`Rule`](crate::model::Rule)), and the code reads in this order.
//!
//! A *plain* bead (no route: imported from bd, or made by `splice create`; `splice start` puts it
//! on one) is not a node and gets no entry: a node may depend on it, or be its child (a node under
//! a plain parent is top-level).
//!
//! Rules 2–6 read the node's own [`NodeState`](crate::model::bead::NodeState), derived from its
//! bead once (closed, then leased, then dead-lettered, then gated), so a bead recording several
//! of these is settled by the first; rule 11 reads its `Gated`.
//!
//! | #  | rule | condition | result |
//! |----|------|-----------|--------|
//! | 1  | unreadable | the bead file could not be read (the snapshot's `unreadable`) | rest `escalated` {its file and error}; its step is unknown (empty) |
//! | 2  | cleanup | closed, and a child has a checkout, or it finished its route or was cancelled and has one of its own | action `cleanup-fanout` {children, own} |
//! | 3  | closed | closed | rest `closed` |
//! | 4  | running | leased by another holder | rest `running` {holder, since, options: wait, clear-claim}; with `died` {pid, cause} and options reclaim-dead, clear-claim when the snapshot's `dead_holders` names the holder (found dead on this host when the snapshot was read) |
//! | 5  | in-flight | leased by this runner (dispatch in flight) | rest `in-flight` |
//! | 6  | parked | dead-lettered | rest `parked` {step, reason} |
//! | 7  | blocked-cycle | as 8, and the dependencies lead back to the node through beads not done (it would wait for itself: [`cycles`]) | rest `escalated` {reason: the cycle} |
//! | 8  | blocked | a `blocks` dependency not done: open, cancelled, or absent from the snapshot (= open; [`crate::policy::deps`], which `splice ready` applies to plain beads too) | rest `blocked` {by} |
//! | 9  | lineage-unreadable | an ancestor's file could not be read (what the node inherits cannot be known) | rest `escalated` {reason} |
//! | 10 | waiting-parent | the parent (not closed) is on a step before its route's delegate step | rest `waiting-parent` |
//! | 11 | gate | gate pending on S | rest `awaiting-human` {gate, autonomy, source} |
//! | 12 | waiting-children | S is the delegate step and a child its split sanctioned is open | rest `waiting-children` |
//! | 13 | undeclared-step | the manifest does not declare S (it cannot be checked or run) | rest `escalated` {reason} |
//! | 14 | loop-escalated | S declares `loop` (rules 14–21 replace 22–24 and 30 for it), and the check since entry escalated | rest `escalated` {reason} |
//! | 15 | loop-success | a loop step whose monitor says `success`, and no check since that iteration refused | action `check` |
//! | 16 | loop-stop | a loop step whose monitor says `stop_iteration_limit` or `stop_budget` | action `park` {the limit} |
//! | 17 | loop-escalate | a loop step whose monitor says `escalate_oscillation` or `escalate_repeated`, not yet carried out | action `escalate` |
//! | 18 | loop-rollback | a loop step whose monitor says `rollback`, not yet carried out | action `rollback` {restore} |
//! | 19 | loop-step-back | a loop step whose monitor says `step_back`, not yet carried out | action `step-back` |
//! | 20 | loop-ask | a loop step whose monitor says `ask_user`, not yet carried out | rest `awaiting-human` {question}; action `park` in a run with no person |
//! | 21 | loop-wall-time | a loop step with iterations, and its wall time is used up | action `park` |
//! | 22 | check | a proposal since entry newer than the check since entry, a landing approved since it, or S has floors and no check since entry | action `check` |
//! | 23 | check-escalated | the check since entry escalated | rest `escalated` {reason} |
//! | 24 | recheck | the check since entry refused awaiting the merge of a recorded PR, or with `recheck` (only transient landing faults) | action `check` if an earlier run (or a person) made that check, else rest `awaiting-merge` (a PR), or `escalated` {the check's reason} |
//! | 25 | skip | S has a command and needs a dispatch (as 29, attempts left or not), and S is `optional: true` and one of the snapshot's `unavailable` steps (its command cannot be found in this run) | action `skip` {the program and where it is set} |
//! | 26 | exhausted | as 29, attempts exhausted (a loop step: its iterations since entry) | action `park` {the last refusal, or how the last dispatch ended and its cause} |
//! | 27 | backoff | as 29, and the last exit since entry used an attempt and ended less than [`backoff_s`] ago, or was `transient` and ended less than the larger of [`backoff_s`] of the transient exits since entry and its `retry_after_s` (capped) ago | rest `backoff` {until, attempt} |
//! | 28 | no-target | as 29, and no delivery target resolves (nothing to branch the worktree from), or the target is one of the snapshot's `missing_targets` (it names no commit) | rest `escalated` {reason} |
//! | 29 | dispatch | S has a command, and (no proposal and no dispatch since entry, or the check since entry refused, or the last exit since entry did not propose), and attempts on S < max; a loop step: no iteration yet, or the monitor says `continue` (or its decision was carried out) | action `dispatch` {attempt, target} |
//! | 30 | person | otherwise (no command: a person does S and proposes) | rest `awaiting-human` |
//!
//! Rules 14–21 are a loop step's ([`looping`], `docs/monitor.md`): the pure monitor judges the
//! iterations since entry, and its decision becomes an action or a rest; with no iteration yet,
//! or to go on with the next, it dispatches through rules 25–29 as any step does.
//!
//! Rule 24 is for refusals that nothing on the node's branch can answer, only a later check: a
//! pull request not merged yet, and a landing that met a transient fault (`Check::recheck`: the
//! target kept moving, or its checkout's index lock stayed held, and no other answer refused).
//! Such a node spends no attempt and is never dispatched for it. Once per run bounds it: a run
//! checks a refusal an earlier run (or a person) recorded, and one this run recorded rests until
//! the next run (`awaiting-merge`; `escalated` with the check's reason for a landing, which says
//! what a person may need to do, such as remove a crashed git's `.git/index.lock`).
//!
//! Rule 25 reads the snapshot's `unavailable`: the `optional: true` steps whose command the run
//! could not find when it started (`driver::commands`), each with why. A node there is moved past
//! the step (action `skip`, the writer's `transition skip`: recorded not applicable) instead of
//! dispatched or parked; a step that is not `optional` is never skipped, whatever the snapshot
//! says.
//!
//! An exit that used no attempt (`not-started`, `cancelled`, `unauthorized`: the writer gave the
//! attempt back when it recorded it) starts no backoff; a `not-started` or `unauthorized` one
//! parked the node when recorded, so rule 6 rests it. A `transient` one used no attempt either
//! but waits (rule 27), so an overloaded API is not called again at once; past
//! `MAX_TRANSIENT` such ends on a step the writer records the next as `failed`.
//!
//! A *checkout* is a node's worktree or its target checkout (the snapshot's `worktrees` lists
//! the ids that have either). A node *finished its route* when it is closed at its route's last
//! step, whose check since entry passed, with no gate pending there
//! ([`route::finished`](crate::policy::route::finished)): its work is on its target, so what
//! splice made for it can go (`own`); the runner also deletes each cleaned node's branch whose
//! commits are all on its target, and keeps (and names) one that holds others.
//!
//! Without a scope, an unreadable file (rule 1) also keeps the run from being `done` (it may be
//! an open top-level bead).
//!
//! Then, over the dispatches in (priority, id) order:
//!
//! * **Serialization.** Siblings share a parent (top-level nodes are siblings of each other). Two
//!   siblings overlap when a declared path (`pipeline.files`) of one equals, or is a directory
//!   prefix of, a path of the other (component-wise: `src` covers `src/a.rs`, `src/a` does not
//!   cover `src/ab.rs`); an empty scope gives no protection. A dispatch overlapping a leased
//!   sibling (in flight here, or running elsewhere) or an earlier sibling whose dispatch stands
//!   rests `serialized` {behind}.
//! * **Jobs.** Past `limits.jobs` dispatches (this runner's in-flight leases counted), the rest
//!   rest `queued`.
//!
//! Then the run status, the first that applies: `done` (scope root closed and not cancelled;
//! without a scope, at least one top-level bead not cancelled, and all of them closed: a
//! cancelled bead counts for nothing) · `budget` (a limit reached) · `stalled`
//! (actions, nothing in flight, and the runner reports that the last [`STALL_PASSES`] passes'
//! actions all came to nothing: `counters.idle_passes`) · `ready` (actions, dispatches in
//! flight, or a node resting `backoff`: the decision's `wake_at` is the earliest `until`, unless
//! the pass cap leaves no pass after this one, and a runner with nothing else to do waits until
//! then) · `escalated` (parked or escalated nodes) · `suspended-human` (awaiting-human or
//! awaiting-merge) · `suspended-running` · `idle`.
//!
//! Finally, the decision is the whole plan: the runner carries out `actions` as given and adds
//! nothing. Under `budget` and `stalled` no action stands, and under `done` only the cleanup of
//! rule 2: every other node that had an action rests `held` {by: the status}.
//!
//! A node that serialization, the jobs limit or the status holds back (`serialized`, `queued`,
//! `held`) keeps the rule that asked for its action (29 for a dispatch).

#![warn(missing_docs)]

mod cycles;
mod dispatch;
mod index;
/// The short-key maps `decide` uses, for the readers that look up as many ids (`status`).
pub(crate) use index::FxMap;
mod looping;
mod rules;
mod serialize;

use std::collections::BTreeMap;

use crate::model::{Action, Decision, NodeDecision, Rest, Rule, RunStatus, Snapshot, Text};

pub use serialize::scopes_overlap;

use index::Index;
use rules::Outcome;
use serialize::{Contender, Groups};

/// Passes in a row whose actions all came to nothing before the run is `stalled`.
pub const STALL_PASSES: u64 = 3;

/// The longest wait between two attempts of a step, in seconds.
pub const MAX_BACKOFF_S: u64 = 3600;

/// Rule 27's wait after the `attempts`-th attempt of a step, before the next: `base` seconds
/// after the first, doubling with each attempt, at most [`MAX_BACKOFF_S`]; 0 when `base` is 0.
#[must_use]
pub fn backoff_s(base: u64, attempts: u32) -> u64 {
    let doublings = attempts.saturating_sub(1).min(32);
    base.saturating_mul(1u64 << doublings)
        .min(MAX_BACKOFF_S.max(base))
}

/// Decide what this pass does. Pure: see the module doc.
#[must_use]
pub fn decide(snapshot: &Snapshot) -> Decision {
    let ix = Index::build(snapshot);

    // The per-node rules, in id order; outcomes are indexed like `ix.beads`. Each
    // node's entry of the output (its id and step) is made here, while the bead is in
    // cache, and leases and dispatches are noted for serialization so it need not scan every
    // node again.
    let n = ix.beads.len();
    let mut outcomes: Vec<Outcome> = Vec::with_capacity(n);
    let mut nodes: Vec<(Text, NodeDecision)> = Vec::with_capacity(n + ix.unreadable.len());
    let mut contenders = Vec::new();
    let mut groups = Groups::default();
    for (at, bead) in ix.beads.iter().enumerate() {
        ix.visit(at);
        let outcome = rules::node_outcome(&ix, at);
        if let Some(c) = Contender::of(at, bead, &outcome, &mut groups) {
            contenders.push(c);
        }
        // Serialization and the status may turn the outcome into a rest; its rule stays.
        let node = NodeDecision {
            step: bead.pipeline.step.clone(),
            rule: outcome.rule(),
            rest: None,
        };
        outcomes.push(outcome);
        nodes.push((bead.id.clone(), node));
    }

    // Serialization among siblings, then the jobs limit.
    serialize::serialize_dispatches(&ix, contenders, &mut outcomes);

    let mut seen = Seen {
        escalated: !ix.unreadable.is_empty(),
        ..Seen::default()
    };
    let mut wake_at: Option<&str> = None;
    for outcome in &outcomes {
        match outcome {
            Outcome::Act(..) | Outcome::Dispatch { .. } => seen.action = true,
            Outcome::Rest(_, rest) => seen.note(rest),
        }
        // RFC 3339 UTC of one format: the text's order is the time's.
        if let Outcome::Rest(_, Rest::Backoff { until, .. }) = outcome
            && wake_at.is_none_or(|w| until.as_str() < w)
        {
            wake_at = Some(until);
        }
    }
    let wake_at = wake_at.map(str::to_string);
    let status = run_status(&ix, &seen);

    let mut actions: Vec<(i64, Action)> = Vec::new();
    for ((bead, outcome), (id, node)) in ix.beads.iter().zip(outcomes).zip(&mut nodes) {
        node.rest = match outcome {
            Outcome::Act(_, action) if stands(status, cleans_up(&action)) => {
                actions.push((bead.priority, action));
                None
            }
            Outcome::Dispatch { attempt, target } if stands(status, false) => {
                let action = Action::Dispatch {
                    bead: id.to_string(),
                    step: node.step.to_string(),
                    attempt,
                    target: target.to_string(),
                };
                actions.push((bead.priority, action));
                None
            }
            Outcome::Act(..) | Outcome::Dispatch { .. } => Some(Rest::Held { by: status }),
            Outcome::Rest(_, rest) => Some(rest),
        };
    }
    nodes.extend(unreadable_nodes(&ix));
    // Already in id order (bar unreadable ones), so this builds the map in one pass.
    let nodes: BTreeMap<Text, NodeDecision> = nodes.into_iter().collect();
    // Pushed in id order: a stable sort on priority alone gives (priority, id) order.
    actions.sort_by_key(|a| a.0);
    let actions: Vec<Action> = actions.into_iter().map(|(_, a)| a).collect();
    Decision {
        schema_version: crate::model::decision::DECISION_SCHEMA,
        status,
        actions,
        nodes,
        wake_at: wake_at.filter(|_| status == RunStatus::Ready && another_pass(snapshot)),
    }
}

/// May the run take a pass after this one (the pass cap)? A run that may not has nothing to wake
/// for: its next pass is `budget`.
fn another_pass(snapshot: &Snapshot) -> bool {
    let (cap, used) = (snapshot.limits.max_passes, snapshot.counters.passes);
    cap.is_none_or(|cap| used.saturating_add(1) < cap)
}

/// Bead files that could not be read: a node each (step unknown), escalated with the reason.
fn unreadable_nodes<'a>(ix: &'a Index) -> impl Iterator<Item = (Text, NodeDecision)> + 'a {
    ix.unreadable.iter().map(|u| {
        let rest = Rest::Escalated { reason: u.reason() };
        let node = NodeDecision {
            step: Text::default(),
            rule: Rule::Unreadable,
            rest: Some(rest),
        };
        (Text::from(u.id.as_str()), node)
    })
}

/// Does an action stand under `status`? Only a `ready` run acts; a `done` one only cleans up.
fn stands(status: RunStatus, cleanup: bool) -> bool {
    match status {
        RunStatus::Done => cleanup,
        RunStatus::Budget | RunStatus::Stalled => false,
        _ => true,
    }
}

fn cleans_up(action: &Action) -> bool {
    matches!(action, Action::CleanupFanout { .. })
}

/// Which outcomes occur, for the run status.
#[derive(Default)]
struct Seen {
    action: bool,
    in_flight: bool,
    escalated: bool,
    human: bool,
    running: bool,
    backoff: bool,
}

impl Seen {
    fn note(&mut self, rest: &Rest) {
        match rest {
            Rest::InFlight { .. } => self.in_flight = true,
            Rest::Parked { .. } | Rest::Escalated { .. } => self.escalated = true,
            Rest::AwaitingHuman { .. } | Rest::AwaitingMerge { .. } => self.human = true,
            Rest::Running { .. } => self.running = true,
            Rest::Backoff { .. } => self.backoff = true,
            _ => {}
        }
    }
}

/// The run status: the first of the DESIGN §5 list that applies.
fn run_status(ix: &Index, seen: &Seen) -> RunStatus {
    let snap = ix.snapshot;
    let done = match &snap.scope {
        Some(root) => ix.bead(root).is_some_and(|b| b.is_done()),
        None => {
            // At least one top-level bead that is not cancelled (a parent cycle has none), and
            // all of them closed. An unreadable file may be an open top-level bead.
            let mut tops = ix
                .beads
                .iter()
                .filter(|b| ix.is_top_level(b) && !b.is_cancelled())
                .peekable();
            ix.unreadable.is_empty() && tops.peek().is_some() && tops.all(|b| b.is_closed())
        }
    };
    if done {
        return RunStatus::Done;
    }
    let (limits, used) = (&snap.limits, &snap.counters);
    let reached = |cap: Option<u64>, used: u64| cap.is_some_and(|cap| used >= cap);
    if reached(limits.max_passes, used.passes)
        || reached(limits.token_budget, used.tokens)
        || reached(limits.wall_time_s, used.wall_s)
    {
        return RunStatus::Budget;
    }
    if seen.action && !seen.in_flight && used.idle_passes >= STALL_PASSES {
        RunStatus::Stalled
    } else if seen.action || seen.in_flight || seen.backoff {
        RunStatus::Ready
    } else if seen.escalated {
        RunStatus::Escalated
    } else if seen.human {
        RunStatus::SuspendedHuman
    } else if seen.running {
        RunStatus::SuspendedRunning
    } else {
        RunStatus::Idle
    }
}

#[cfg(test)]
mod tests;
