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
    pub run: String,
    pub holder: String,
    pub pass: u64,
    pub now: String,
    pub status: RunStatus,
    pub counters: Counters,
    pub limits: Limits,
    /// The decision's actions in order, each with how it went.
    pub actions: Vec<ActionReport>,
    pub in_flight: Vec<InFlight>,
    /// How many nodes act (`action`) or rest, by rest kind.
    pub reasons: BTreeMap<String, u64>,
    pub closed: u64,
    /// Every node that is not closed, by id.
    pub nodes: BTreeMap<String, NodeReport>,
}

/// An action and how carrying it out went.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ActionReport {
    #[serde(flatten)]
    pub action: Action,
    #[serde(flatten)]
    pub result: ActResult,
}

/// How an action went.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum ActResult {
    /// Recorded by the writer (a check that refused is still recorded); `status` says how.
    Done { status: String, detail: Value },
    /// A precondition said no (e.g. the bead changed since the snapshot); nothing was written.
    Skipped { reason: String },
    /// A dispatch is now in flight.
    Started,
    /// `--dry-run`: decided, not carried out.
    DryRun,
}

/// A dispatch of this run still running.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct InFlight {
    pub bead: String,
    pub step: String,
    pub attempt: u32,
    pub elapsed_s: u64,
}

/// A node's step and why it rests (no rest: it has an action).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct NodeReport {
    pub step: String,
    pub rest: Option<RestReport>,
    /// At a loop step with an iteration recorded: the latest one (`docs/monitor.md`).
    #[serde(default, rename = "loop", skip_serializing_if = "Option::is_none")]
    pub looping: Option<LoopReport>,
}

/// A loop node's latest iteration, as a pass saw it: its state and score, the monitor's
/// decision after it with the rule's evidence, and what was done about it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LoopReport {
    pub iteration: u32,
    pub state: super::trajectory::IterationState,
    pub score: Option<i64>,
    pub monitor: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<super::trajectory::Effect>,
}

/// A rest, and for a claim held elsewhere whether its holder still lives on this host.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RestReport {
    #[serde(flatten)]
    pub rest: Rest,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_alive: Option<bool>,
}

/// The compact record of a pass kept on the scope root (`pipeline.driver_last`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RunRecord {
    pub run: String,
    pub pass: u64,
    pub status: RunStatus,
    pub at: String,
    pub actions: usize,
    pub reasons: BTreeMap<String, u64>,
    /// The pass file, relative to `.splice/`.
    pub envelope: String,
}
