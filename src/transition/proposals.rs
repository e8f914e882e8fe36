//! STUB replaced by the proposal-file protocol branch.
use std::path::Path;

use serde::Serialize;

use super::Ctx;
use crate::error::Result;

pub struct Expected {
    pub bead: String,
    pub step: String,
    pub attempt: u32,
    pub seq: u64,
    pub credential_sha256: String,
}

#[derive(Serialize, Clone, Debug)]
pub struct Outcome {
    pub line: usize,
    pub verb: String,
    pub applied: bool,
    pub kind: Option<String>,
    pub message: Option<String>,
}

pub fn apply_file(_base: &Ctx, _path: &Path, _expected: &Expected) -> Result<Vec<Outcome>> {
    Ok(Vec::new())
}
