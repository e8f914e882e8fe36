//! The decision: what one pass should do and why every other node rests (DESIGN §5 step 2).
//!
//! Plain data. `decide` produces it; the runner carries out `actions` as given, in order, and
//! nothing else (the decision is the whole plan); `status` and `nodes` go into the pass envelope
//! and `splice status`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Text;
use super::manifest::Autonomy;
use super::snapshot::Died;

/// How the run stands after this decision, the first that applies in this order.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// The scope root is closed (without a scope: every top-level bead).
    Done,
    /// A pass cap, the token budget or the wall time is used up.
    Budget,
    /// The last passes acted and nothing came of it (every action refused or skipped, nothing in
    /// flight): looking again would only repeat them.
    Stalled,
    /// Actions to take, dispatches of this runner in flight, or a node backing off before its
    /// next attempt (the runner waits until `wake_at`).
    Ready,
    /// A node is parked or escalated.
    Escalated,
    /// A person must approve, propose or merge.
    SuspendedHuman,
    /// Only another holder's work is in progress.
    SuspendedRunning,
    /// Nothing to do and nothing waiting.
    Idle,
}

impl RunStatus {
    /// Its name in JSON and text.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Done => "done",
            RunStatus::Budget => "budget",
            RunStatus::Stalled => "stalled",
            RunStatus::Ready => "ready",
            RunStatus::Escalated => "escalated",
            RunStatus::SuspendedHuman => "suspended-human",
            RunStatus::SuspendedRunning => "suspended-running",
            RunStatus::Idle => "idle",
        }
    }
}

/// One effect the runner carries out through the writer or the executor.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Action {
    /// Run the step's floors (`transition complete`).
    Check {
        /// The node.
        bead: String,
        /// The step whose floors run.
        step: String,
    },
    /// Start the step's command in the node's worktree, branched from `target` when it is new;
    /// `attempt` is the attempt this dispatch will be.
    Dispatch {
        /// The node.
        bead: String,
        /// The step whose command runs.
        step: String,
        /// The attempt on `step` this dispatch is, from 1.
        attempt: u32,
        /// The branch a new worktree is branched from.
        target: String,
    },
    /// Dead-letter the node: its attempts on the step are used up.
    Park {
        /// The node.
        bead: String,
        /// The step it is parked on.
        step: String,
        /// Why, for the dead letter.
        reason: String,
    },
    /// Move the node past `step`, an `optional: true` step whose command this run cannot find,
    /// recording it as not applicable with `reason` (`transition skip`).
    Skip {
        /// The node.
        bead: String,
        /// The optional step skipped.
        step: String,
        /// Why its command is unavailable.
        reason: String,
    },
    /// A loop step's monitor found a cycle or an oscillation after `iteration` (`rule`): switch
    /// the node to `[agent] escalation_command` (once per node), or, with none left, keep its
    /// command and give the next prompt recovery context.
    Escalate {
        /// The node.
        bead: String,
        /// The loop step.
        step: String,
        /// The iteration after which the monitor decided.
        iteration: u32,
        /// The monitor's rule (`escalate_oscillation`, `escalate_repeated`).
        rule: String,
    },
    /// A loop step's latest score fell below its first: restore the node's worktree to the
    /// snapshot of iteration `restore` (the best before the latest).
    Rollback {
        /// The node.
        bead: String,
        /// The loop step.
        step: String,
        /// The iteration after which the monitor decided.
        iteration: u32,
        /// The iteration whose snapshot is restored.
        restore: u32,
    },
    /// A loop step's scores stopped rising: run one step-back analysis of the plateau (costs no
    /// iteration); its root cause goes into the next prompt.
    StepBack {
        /// The node.
        bead: String,
        /// The loop step.
        step: String,
        /// The iteration after which the monitor decided.
        iteration: u32,
        /// Why: the scores that did not rise.
        reason: String,
    },
    /// Remove the checkouts of a closed node's children, and with `own` the node's own (its
    /// route finished, so its work is on its target); delete the branches splice made for them
    /// whose commits are all on their target.
    CleanupFanout {
        /// The closed node.
        bead: String,
        /// Its children that have a checkout.
        children: Vec<String>,
        /// Remove the node's own checkouts too.
        #[serde(default, skip_serializing_if = "is_false")]
        own: bool,
    },
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Action {
    /// The node it acts on.
    pub fn bead(&self) -> &str {
        match self {
            Action::Check { bead, .. }
            | Action::Dispatch { bead, .. }
            | Action::Park { bead, .. }
            | Action::Skip { bead, .. }
            | Action::Escalate { bead, .. }
            | Action::Rollback { bead, .. }
            | Action::StepBack { bead, .. }
            | Action::CleanupFanout { bead, .. } => bead,
        }
    }

    /// Its `action` tag.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Check { .. } => "check",
            Action::Dispatch { .. } => "dispatch",
            Action::Park { .. } => "park",
            Action::Skip { .. } => "skip",
            Action::Escalate { .. } => "escalate",
            Action::Rollback { .. } => "rollback",
            Action::StepBack { .. } => "step-back",
            Action::CleanupFanout { .. } => "cleanup-fanout",
        }
    }
}

/// Why a node gets no action this pass.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Rest {
    /// Another holder has a claim; it never expires, so a person may wait or clear it. When
    /// the snapshot found its holder dead (`dead_holders`), `died` says how, and the options
    /// are `reclaim-dead` (`splice run --reclaim-dead`) and `clear-claim`.
    Running {
        /// The claim's holder.
        holder: Text,
        /// When the claim was taken (RFC 3339).
        since: Text,
        /// What a person may do, first the suggested one.
        options: Vec<Text>,
        /// How the holder died, when the snapshot found it dead.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        died: Option<Died>,
    },
    /// This runner's own dispatch is in flight.
    InFlight {
        /// This runner's holder identity.
        holder: Text,
        /// When the claim was taken (RFC 3339).
        since: Text,
    },
    /// Dead-lettered on `step`.
    Parked {
        /// The step it was parked on.
        step: Text,
        /// The dead letter's reason.
        reason: String,
    },
    /// Open `blocks` dependencies.
    Blocked {
        /// The blockers not done, sorted.
        by: Vec<Text>,
    },
    /// The parent has not reached its delegate step.
    WaitingParent {
        /// The parent's id.
        parent: Text,
        /// The parent's current step.
        parent_step: Text,
    },
    /// A person must act: approve a pending gate, or do a step that has no command.
    AwaitingHuman {
        /// The step whose gate is pending (absent when the step simply has no command).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gate: Option<Text>,
        /// The node's current step.
        step: Text,
        /// The node's resolved autonomy level.
        autonomy: Autonomy,
        /// The node that supplied the level, `config`, or `default`.
        autonomy_source: Text,
        /// Would the resolved level relax this gate (planning gates and verdict-less specs never)?
        #[serde(default, skip_serializing_if = "Option::is_none")]
        relaxes: Option<bool>,
        /// A loop step's monitor asks (its agent's confidence fell three times): why, with the
        /// options `guide` (`transition guide --bead ID --text T`) and `cancel`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        question: Option<String>,
        /// A landing gate: the commit that would land, and on what (issue 33). No level
        /// relaxes it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        land: Option<crate::model::bead::GateLand>,
    },
    /// Delegating: sanctioned children still open.
    WaitingChildren {
        /// The open children, in the split's order.
        children: Vec<Text>,
    },
    /// It cannot go on without a person: a check that could not check, an unreadable file, a
    /// dependency cycle, an undeclared step, no target.
    Escalated {
        /// What is wrong, and what to do.
        reason: String,
    },
    /// Waiting before the step's next attempt: `attempt` is dispatched at `until` (RFC 3339).
    Backoff {
        /// When the next attempt may start (RFC 3339 UTC).
        until: Text,
        /// The attempt that will be.
        attempt: u32,
    },
    /// A PR is open and this run already checked it.
    AwaitingMerge {
        /// The recorded PR.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pr_url: Option<String>,
    },
    /// Its declared files overlap a sibling's dispatch or claim.
    Serialized {
        /// The sibling it waits for.
        behind: Text,
    },
    /// Past the jobs limit.
    Queued,
    /// Closed, nothing to do.
    Closed,
    /// It had an action, withheld because the run is `done`, over `budget` or `stalled`.
    Held {
        /// The run status that withholds it.
        by: RunStatus,
    },
}

impl Rest {
    /// Its `kind` tag.
    pub fn name(&self) -> &'static str {
        match self {
            Rest::Running { .. } => "running",
            Rest::InFlight { .. } => "in-flight",
            Rest::Parked { .. } => "parked",
            Rest::Blocked { .. } => "blocked",
            Rest::WaitingParent { .. } => "waiting-parent",
            Rest::AwaitingHuman { .. } => "awaiting-human",
            Rest::WaitingChildren { .. } => "waiting-children",
            Rest::Escalated { .. } => "escalated",
            Rest::Backoff { .. } => "backoff",
            Rest::AwaitingMerge { .. } => "awaiting-merge",
            Rest::Serialized { .. } => "serialized",
            Rest::Queued => "queued",
            Rest::Closed => "closed",
            Rest::Held { .. } => "held",
        }
    }
}

/// The rule of `decide`'s table (the module doc of [`crate::decide`]) that produced a node's
/// outcome. It serializes as its number, so a replay diff names the rule that changed.
///
/// A dispatch that serialization or the jobs limit holds back (`serialized`, `queued`), or that
/// the run status withholds (`held`), keeps the rule that asked for it ([`Rule::Dispatch`], or
/// the rule of the withheld action).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(into = "u8", try_from = "u8")]
#[repr(u8)]
pub enum Rule {
    /// The bead's file could not be read: `escalated` with its file and error.
    Unreadable = 1,
    /// Closed, with checkouts to remove: `cleanup-fanout`.
    Cleanup = 2,
    /// Closed: `closed`.
    Closed = 3,
    /// Leased by another holder: `running`.
    Running = 4,
    /// Leased by this runner: `in-flight`.
    InFlight = 5,
    /// Dead-lettered: `parked`.
    Parked = 6,
    /// Blocked by a dependency cycle through beads not done: `escalated`.
    BlockedCycle = 7,
    /// A `blocks` dependency not done: `blocked`.
    Blocked = 8,
    /// An ancestor's file could not be read: `escalated`.
    LineageUnreadable = 9,
    /// The parent has not released its children: `waiting-parent`.
    WaitingParent = 10,
    /// A gate pending on the step: `awaiting-human`.
    Gate = 11,
    /// Delegating while a sanctioned child is open: `waiting-children`.
    WaitingChildren = 12,
    /// The step is not declared in the manifest: `escalated`.
    UndeclaredStep = 13,
    /// A loop step's check since entry escalated: `escalated`.
    LoopEscalated = 14,
    /// A loop step's monitor found success: `check`.
    LoopSuccess = 15,
    /// A loop step's monitor stopped it (iteration limit, budget): `park`.
    LoopStop = 16,
    /// A loop step's monitor found a cycle or an oscillation: `escalate`.
    LoopEscalate = 17,
    /// A loop step's score fell below its first: `rollback`.
    LoopRollback = 18,
    /// A loop step's scores stopped rising: `step-back`.
    LoopStepBack = 19,
    /// A loop step's confidence fell: `awaiting-human` with the question, or `park` without a
    /// person.
    LoopAsk = 20,
    /// A loop step's wall time is used up: `park`.
    LoopWallTime = 21,
    /// Evidence to check: `check`.
    Check = 22,
    /// The check since entry escalated: `escalated`.
    CheckEscalated = 23,
    /// A refusal only a later check answers: `check`, `awaiting-merge` or `escalated`.
    Recheck = 24,
    /// An optional step whose command this run cannot find: `skip`.
    Skip = 25,
    /// Attempts (or iterations) on the step used up: `park`.
    Exhausted = 26,
    /// Too soon after the last attempt: `backoff`.
    Backoff = 27,
    /// No delivery target to branch from, or one that names no commit: `escalated`.
    NoTarget = 28,
    /// The step's command should run: `dispatch`.
    Dispatch = 29,
    /// A person does the step: `awaiting-human`.
    Person = 30,
}

impl Rule {
    /// Every rule, in the table's order.
    pub const ALL: [Rule; 30] = [
        Rule::Unreadable,
        Rule::Cleanup,
        Rule::Closed,
        Rule::Running,
        Rule::InFlight,
        Rule::Parked,
        Rule::BlockedCycle,
        Rule::Blocked,
        Rule::LineageUnreadable,
        Rule::WaitingParent,
        Rule::Gate,
        Rule::WaitingChildren,
        Rule::UndeclaredStep,
        Rule::LoopEscalated,
        Rule::LoopSuccess,
        Rule::LoopStop,
        Rule::LoopEscalate,
        Rule::LoopRollback,
        Rule::LoopStepBack,
        Rule::LoopAsk,
        Rule::LoopWallTime,
        Rule::Check,
        Rule::CheckEscalated,
        Rule::Recheck,
        Rule::Skip,
        Rule::Exhausted,
        Rule::Backoff,
        Rule::NoTarget,
        Rule::Dispatch,
        Rule::Person,
    ];

    /// Its number in the table, from 1.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// Its name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Unreadable => "unreadable",
            Rule::Cleanup => "cleanup",
            Rule::Closed => "closed",
            Rule::Running => "running",
            Rule::InFlight => "in-flight",
            Rule::Parked => "parked",
            Rule::BlockedCycle => "blocked-cycle",
            Rule::Blocked => "blocked",
            Rule::LineageUnreadable => "lineage-unreadable",
            Rule::WaitingParent => "waiting-parent",
            Rule::Gate => "gate",
            Rule::WaitingChildren => "waiting-children",
            Rule::UndeclaredStep => "undeclared-step",
            Rule::LoopEscalated => "loop-escalated",
            Rule::LoopSuccess => "loop-success",
            Rule::LoopStop => "loop-stop",
            Rule::LoopEscalate => "loop-escalate",
            Rule::LoopRollback => "loop-rollback",
            Rule::LoopStepBack => "loop-step-back",
            Rule::LoopAsk => "loop-ask",
            Rule::LoopWallTime => "loop-wall-time",
            Rule::Check => "check",
            Rule::CheckEscalated => "check-escalated",
            Rule::Recheck => "recheck",
            Rule::Skip => "skip",
            Rule::Exhausted => "exhausted",
            Rule::Backoff => "backoff",
            Rule::NoTarget => "no-target",
            Rule::Dispatch => "dispatch",
            Rule::Person => "person",
        }
    }
}

impl From<Rule> for u8 {
    fn from(rule: Rule) -> u8 {
        rule.number()
    }
}

impl TryFrom<u8> for Rule {
    type Error = String;

    fn try_from(n: u8) -> Result<Rule, String> {
        n.checked_sub(1)
            .and_then(|i| Rule::ALL.get(usize::from(i)))
            .copied()
            .ok_or_else(|| format!("no rule {n} in decide's table (1–{})", Rule::ALL.len()))
    }
}

/// One node's outcome: an action (listed in `Decision::actions`, `rest` null) or a rest.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct NodeDecision {
    /// The node's current step (empty when its file could not be read).
    pub step: Text,
    /// The rule of the table that decided it.
    pub rule: Rule,
    /// Why it rests, or `None` when it has an action.
    pub rest: Option<Rest>,
}

/// The shape of [`Decision`] this build writes: it rises when a field changes meaning or goes
/// away, not when one is added.
pub const DECISION_SCHEMA: u32 = 1;

fn decision_schema() -> u32 {
    DECISION_SCHEMA
}

/// The whole output of `decide`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The decision's shape ([`DECISION_SCHEMA`]).
    #[serde(default = "decision_schema")]
    pub schema_version: u32,
    /// How the run stands.
    pub status: RunStatus,
    /// In (priority, id) order.
    pub actions: Vec<Action>,
    /// Every node in the snapshot, by id.
    pub nodes: BTreeMap<Text, NodeDecision>,
    /// The earliest `until` of the nodes resting `backoff`: a run with nothing else to do waits
    /// until then, and decides again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_at: Option<String>,
}

impl Decision {
    /// Pretty JSON with a trailing newline: the replay format.
    pub fn to_pretty_json(&self) -> String {
        let mut out = serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".into());
        out.push('\n');
        out
    }
}
