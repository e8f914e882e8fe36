//! `split`: create a node's children in one journal record, each with provenance naming the
//! split that created it. A node splits once.

use std::path::Path;

use serde::Deserialize;
use serde_json::json;

use super::{
    Ctx, Outcome, create::normalize_scenarios, require_lease_free_for, require_open, require_seq,
};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::model::bead::{Dependency, Kind, Provenance, SplitRecord};
use crate::store::ids;

/// One child in the `--children` file.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct ChildSpec {
    pub title: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub scenarios: Vec<String>,
    #[serde(default)]
    pub files: Vec<String>,
    /// Indexes (0-based) of earlier children this one waits for.
    #[serde(default)]
    pub depends_on: Vec<usize>,
    #[serde(default)]
    pub priority: Option<i64>,
}

/// Read and validate a children file. Problems name the file and the child.
pub fn read_children(path: &Path) -> Result<Vec<ChildSpec>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let children: Vec<ChildSpec> = serde_json::from_str(&text).map_err(|e| {
        Error::bad_file(
            path,
            format!(
                "expected a JSON array of {{title, description, scenarios, files, depends_on}}: {e}"
            ),
        )
    })?;
    if children.is_empty() {
        return Err(Error::bad_file(path, "the children list is empty"));
    }
    for (i, child) in children.iter().enumerate() {
        if child.title.trim().is_empty() {
            return Err(Error::bad_file(path, format!("[{i}].title: empty title")));
        }
        if let Some(bad) = child.depends_on.iter().find(|d| **d >= i) {
            return Err(Error::bad_file(
                path,
                format!("[{i}].depends_on: {bad} is not an earlier child (indexes are 0-based)"),
            ));
        }
        if let Some(bad) = child
            .files
            .iter()
            .find(|f| !crate::floors::is_relative_inside(f))
        {
            return Err(Error::bad_file(
                path,
                format!("[{i}].files: {bad:?} must be a repository-relative path without `..`"),
            ));
        }
        normalize_scenarios(&child.scenarios)
            .map_err(|e| Error::bad_file(path, format!("[{i}].scenarios: {e}")))?;
    }
    Ok(children)
}

/// Split `id` into `children`, all created in one transition.
pub fn split(ctx: &Ctx, id: &str, children: &[ChildSpec]) -> Result<Outcome> {
    let manifest = ctx.store.manifest()?;
    let entry = manifest
        .entry_step(Kind::Leaf.route())
        .ok_or_else(|| Error::Invalid("the manifest has no leaf route".into()))?
        .to_string();
    ctx.store.transact("split", &ctx.actor(), |tx| {
        let mut parent = tx.read(id)?;
        require_open(&parent)?;
        require_seq(&parent, ctx.expect_seq)?;
        require_lease_free_for(&parent, ctx.holder.as_deref())?;
        if parent.pipeline.kind == Kind::Leaf {
            return Err(Error::refused(format!(
                "bead {id} is a leaf; only a root or compound node splits (a spec with \
                 `verdict: compound` makes a leaf compound)"
            )));
        }
        if let Some(split) = &parent.pipeline.split {
            return Err(Error::refused(format!(
                "bead {id} was already split into {} (at seq {}); a node splits once",
                split.children.join(", "),
                split.seq
            )));
        }
        let now = tx.now.clone();
        let seq = parent.bump(&now);
        let mut ids_made = Vec::with_capacity(children.len());
        for (i, spec) in children.iter().enumerate() {
            let child_id = ids::child_id(id, i + 1);
            if tx.exists(&child_id) {
                return Err(Error::refused(format!("bead {child_id} already exists")));
            }
            let mut child = Bead::new(
                child_id.clone(),
                spec.title.clone(),
                spec.description.clone(),
                &now,
            );
            child.parent = Some(id.to_string());
            child.priority = spec.priority.unwrap_or(parent.priority);
            child.dependencies = spec
                .depends_on
                .iter()
                .map(|d| Dependency {
                    depends_on_id: ids::child_id(id, d + 1),
                    dep_type: "blocks".into(),
                    extra: Default::default(),
                })
                .collect();
            let child_seq = child.bump(&now);
            let p = &mut child.pipeline;
            p.kind = Kind::Leaf;
            p.route = Kind::Leaf.route().into();
            p.scenarios = normalize_scenarios(&spec.scenarios)?;
            p.files = spec.files.clone();
            p.provenance = Some(Provenance {
                split_by: id.to_string(),
                seq,
                index: i + 1,
            });
            child.enter_step(&entry, child_seq, &now);
            ids_made.push(child_id);
            tx.put(child);
        }
        parent.pipeline.split = Some(SplitRecord {
            children: ids_made.clone(),
            seq,
        });
        tx.set_reason(format!("split into {} children", ids_made.len()));
        tx.put(parent);
        Ok(Outcome::ok(json!({ "bead": id, "children": ids_made })))
    })
}
