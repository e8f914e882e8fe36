//! Serde types shared by every part: beads, the manifest, the config, snapshots and decisions.

#![warn(missing_docs)]

pub mod agent;
pub mod bd;
pub mod bead;
pub mod check;
pub mod config;
pub mod critique;
pub mod decision;
pub mod envelope;
pub mod executor;
pub mod id;
pub mod intent;
pub mod manifest;
pub mod plan;
pub mod printable;
pub mod snapshot;
pub mod tier;
pub mod trajectory;
pub mod usage;

pub use bead::{Bead, Kind, Pipeline, SpecVerdict, Status, Verdict};
pub use config::Config;
pub use decision::{Action, Decision, NodeDecision, Rest, Rule, RunStatus};
pub use envelope::Envelope;
pub use manifest::{Autonomy, FloorKind, Manifest, Role, Step};
pub use snapshot::{Counters, Limits, Snapshot};
pub use tier::{Tier, TierChoice};
pub use usage::{CostSource, Usage};

/// A bead's short strings (ids, step and route names, timestamps, labels, paths): up to 24 bytes
/// are kept inline, with no allocation of their own. At 100,000 beads a heap string per field
/// was a fifth of a snapshot's memory (issue 16). It reads, writes and compares as a `String`.
pub type Text = compact_str::CompactString;

/// Deserialize `T` from `de`; an error names the JSON path it happened at (`tasks[2].tier: …`),
/// or is the bare message at the top level. For the strictly typed files a person writes (plans,
/// trajectories).
pub(crate) fn deserialize_at<'de, T: serde::Deserialize<'de>>(
    de: &mut serde_json::Deserializer<serde_json::de::StrRead<'de>>,
) -> Result<T, String> {
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            inner.to_string()
        } else {
            format!("{path}: {inner}")
        }
    })
}
