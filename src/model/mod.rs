//! Serde types shared by every part: beads, the manifest and the config.

pub mod bead;
pub mod config;
pub mod manifest;

pub use bead::{Bead, Kind, Pipeline, Status, Verdict};
pub use config::Config;
pub use manifest::{Autonomy, Manifest, Step};
