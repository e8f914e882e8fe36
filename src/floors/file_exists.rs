//! `file_exists`: the artifact at `path` exists and is a non-empty file.

use serde_json::json;

use super::{Ctx, Floor, Outcome};
use crate::model::manifest::{FloorKind, FloorSpec};

pub struct FileExists;

impl Floor for FileExists {
    fn check(&self, spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        const KIND: FloorKind = FloorKind::FileExists;
        let Some((rel, _)) = ctx.path_param(spec) else {
            return Outcome::escalate(KIND, "the floor declares no `path`", json!({}));
        };
        let evidence = json!({ "path": rel, "read_in": ctx.workdir });
        let abs = match ctx.inside(&rel) {
            Ok(abs) => abs,
            Err(why) => return Outcome::refuse(KIND, why, evidence),
        };
        match std::fs::metadata(&abs) {
            Ok(m) if m.is_file() && m.len() > 0 => {
                Outcome::pass(KIND, format!("{rel} exists"), evidence)
            }
            Ok(m) if m.is_file() => Outcome::refuse(KIND, format!("{rel} is empty"), evidence),
            Ok(_) => Outcome::refuse(KIND, format!("{rel} is not a file"), evidence),
            Err(_) => Outcome::refuse(KIND, format!("{rel} does not exist"), evidence),
        }
    }
}
