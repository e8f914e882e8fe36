//! Serde types shared by every part: beads, the manifest, the config, snapshots and decisions.

pub mod agent;
pub mod bead;
pub mod check;
pub mod config;
pub mod decision;
pub mod envelope;
pub mod manifest;
pub mod plan;
pub mod snapshot;
pub mod tier;
pub mod trajectory;
pub mod usage;

pub use bead::{Bead, Kind, Pipeline, SpecVerdict, Status, Verdict};
pub use config::Config;
pub use decision::{Action, Decision, NodeDecision, Rest, RunStatus};
pub use envelope::Envelope;
pub use manifest::{Autonomy, FloorKind, Manifest, Role, Step};
pub use snapshot::{Counters, Limits, Snapshot};
pub use tier::{Tier, TierChoice};
pub use usage::{CostSource, Usage};
