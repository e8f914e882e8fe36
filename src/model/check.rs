//! A recorded check, as `transition complete` (and `integrate`, `deliver`) reports it: the
//! verdict, every floor's answer, and where the node went. A refused or escalated check is
//! recorded too, and travels back inside its refusal.

use std::path::PathBuf;

use serde::{Serialize, Serializer};
use serde_json::Value;

use super::bead::Verdict;
use super::manifest::Autonomy;

/// A recorded check: what `complete` prints.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Checked {
    /// The node checked.
    pub bead: String,
    /// The step checked.
    pub step: String,
    /// How it came out.
    pub verdict: Verdict,
    /// The pass, or every refusing (escalating) floor's reason.
    pub reason: String,
    /// Each floor's answer, in the step's order.
    pub floors: Vec<FloorReport>,
    /// Where the floors read: the node's worktree, else the repository root.
    pub read_in: PathBuf,
    /// What a passing check met at the step's gate (`None`: no gate, or the check did not pass).
    pub gate: Option<GateMet>,
    /// The step entered, if the node moved (on, or back); `None` when it stayed or closed.
    pub next: Option<String>,
    /// The check closed the bead (it passed the route's last step).
    pub closed: bool,
    /// The seq the check was recorded at.
    pub seq: u64,
}

/// One floor's answer, as recorded and printed.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct FloorReport {
    /// The floor's kind.
    pub kind: String,
    /// Its answer.
    pub verdict: Verdict,
    /// Why, in a line.
    pub reason: String,
    /// What it found.
    pub evidence: Value,
}

/// What a passing check met at a human gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateMet {
    /// A person must approve. Printed as `"pending"`.
    Pending,
    /// The node's autonomy relaxed it: `autonomy`, supplied by `supplied_by` (a node id,
    /// `config` or `default`). Printed as `{"state": "relaxed", …}`.
    Relaxed {
        /// The level that relaxed it.
        autonomy: Autonomy,
        /// The node that supplied the level, `config` or `default`.
        supplied_by: String,
    },
}

impl Serialize for GateMet {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Relaxed<'a> {
            state: &'static str,
            autonomy: Autonomy,
            supplied_by: &'a str,
        }
        match self {
            GateMet::Pending => s.serialize_str("pending"),
            GateMet::Relaxed {
                autonomy,
                supplied_by,
            } => Relaxed {
                state: "relaxed",
                autonomy: *autonomy,
                supplied_by,
            }
            .serialize(s),
        }
    }
}
