//! `file_exists`: the artifact at `path` exists and is a non-empty regular file, with no link on
//! its path (as every floor reads evidence: [`super::read_inside`]).

use serde_json::json;

use super::{Ctx, Floor, Outcome, unread};
use crate::model::manifest::{FloorKind, FloorSpec};
use crate::safe_read;

pub struct FileExists;

impl Floor for FileExists {
    fn check(&self, spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        const KIND: FloorKind = FloorKind::FileExists;
        let Some((rel, _)) = ctx.path_param(spec) else {
            return Outcome::escalate(KIND, "the floor declares no `path`", json!({}));
        };
        let evidence = json!({ "path": rel, "read_in": ctx.workdir });
        match safe_read::open_beneath(&ctx.workdir, &rel).map(|f| f.metadata()) {
            Ok(Ok(m)) if m.len() > 0 => Outcome::pass(KIND, format!("{rel} exists"), evidence),
            Ok(Ok(_)) => Outcome::refuse(KIND, format!("{rel} is empty"), evidence),
            Ok(Err(e)) => Outcome::refuse(KIND, format!("{rel}: {e}"), evidence),
            Err(why) => Outcome::refuse(KIND, unread(&rel, &why), evidence),
        }
    }
}
