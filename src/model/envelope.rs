//! The pass envelope: what one pass decided and did, and why every open node rests (DESIGN §5
//! step 4). The runner writes it to `.splice/runs/<run>/pass-NNNN.json` and prints it; a compact
//! [`RunRecord`] of it goes on the scope root (`record-run`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::decision::{Action, Rest, RunStatus};
use super::snapshot::{Counters, Limits};

/// One pass, reported. Closed nodes are counted, not listed, so it stays small.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Envelope {
    /// The envelope's shape: the runner's event schema (`driver::events::EVENT_SCHEMA`). Absent
    /// (0) in envelopes written before it was recorded.
    #[serde(default)]
    pub schema_version: u32,
    /// The run's id.
    pub run: String,
    /// The runner's holder identity.
    pub holder: String,
    /// The pass number in the run, from 1.
    pub pass: u64,
    /// The snapshot's now (RFC 3339 UTC).
    pub now: String,
    /// The run status after the decision.
    pub status: RunStatus,
    /// The run counters the snapshot carried.
    pub counters: Counters,
    /// The limits the snapshot carried.
    pub limits: Limits,
    /// The decision's actions in order, each with how it went.
    pub actions: Vec<ActionReport>,
    /// This runner's dispatches still running.
    pub in_flight: Vec<InFlight>,
    /// How many nodes act (`action`) or rest, by rest kind.
    pub reasons: BTreeMap<String, u64>,
    /// How many closed nodes, not listed.
    pub closed: u64,
    /// Every node that is not closed, by id.
    pub nodes: BTreeMap<String, NodeReport>,
}

/// An action and how carrying it out went.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ActionReport {
    /// The action.
    #[serde(flatten)]
    pub action: Action,
    /// How carrying it out went.
    #[serde(flatten)]
    pub result: ActResult,
}

/// How an action went.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum ActResult {
    /// Recorded by the writer (a check that refused is still recorded); `status` says how.
    Done {
        /// The verb's outcome in a word.
        status: String,
        /// The verb's output.
        detail: Value,
    },
    /// A precondition said no (e.g. the bead changed since the snapshot); nothing was written.
    Skipped {
        /// The precondition's refusal.
        reason: String,
    },
    /// A dispatch is now in flight.
    Started,
    /// `--dry-run`: decided, not carried out.
    DryRun,
}

/// A dispatch of this run still running.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct InFlight {
    /// The node.
    pub bead: String,
    /// Its step.
    pub step: String,
    /// The attempt.
    pub attempt: u32,
    /// Seconds since it started.
    pub elapsed_s: u64,
}

/// A node's step and why it rests (no rest: it has an action).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct NodeReport {
    /// Its current step.
    pub step: String,
    /// Why it rests; `None`: it has an action.
    pub rest: Option<RestReport>,
    /// At a loop step with an iteration recorded: the latest one (`docs/monitor.md`).
    #[serde(default, rename = "loop", skip_serializing_if = "Option::is_none")]
    pub looping: Option<LoopReport>,
}

/// A loop node's latest iteration, as a pass saw it: its state and score, the monitor's
/// decision after it with the rule's evidence, and what was done about it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LoopReport {
    /// Its number.
    pub iteration: u32,
    /// What it measured.
    pub state: super::trajectory::IterationState,
    /// Its score.
    pub score: Option<i64>,
    /// The monitor's decision after it, with the rule's evidence.
    pub monitor: Value,
    /// What was done about the decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<super::trajectory::Effect>,
}

/// A rest, and for a claim held elsewhere whether its holder still lives on this host.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RestReport {
    /// The rest.
    #[serde(flatten)]
    pub rest: Rest,
    /// For `running`: whether its holder lives on this host (`None`: not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_alive: Option<bool>,
}

/// The compact record of a pass kept on the scope root (`pipeline.driver_last`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RunRecord {
    /// The run's id.
    pub run: String,
    /// The pass number.
    pub pass: u64,
    /// The run status after the pass.
    pub status: RunStatus,
    /// When (RFC 3339 UTC).
    pub at: String,
    /// How many actions the pass took.
    pub actions: usize,
    /// How many nodes act or rest, by rest kind.
    pub reasons: BTreeMap<String, u64>,
    /// The pass file, relative to `.splice/`.
    pub envelope: String,
}
