//! `children_finished`: every child the node's split sanctioned is closed.

use serde_json::json;

use super::{Ctx, Floor, Outcome};
use crate::model::manifest::{FloorKind, FloorSpec};

pub struct ChildrenFinished;

const KIND: FloorKind = FloorKind::ChildrenFinished;

impl Floor for ChildrenFinished {
    fn check(&self, _spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        let node = &ctx.bead.id;
        let Some(split) = &ctx.bead.pipeline.split else {
            return Outcome::refuse(
                KIND,
                format!("{node} has no children: run `splice transition split`"),
                json!({ "children": [] }),
            );
        };
        let mut open = Vec::new();
        let mut unreadable = Vec::new();
        for id in &split.children {
            match ctx.store.read_bead(id) {
                Ok(child) if child.is_closed() => {}
                Ok(child) => open.push(json!({ "id": id, "step": child.pipeline.step })),
                Err(e) => unreadable.push(json!({ "id": id, "error": e.to_string() })),
            }
        }
        let evidence =
            json!({ "children": split.children, "open": open, "unreadable": unreadable });
        if open.is_empty() && unreadable.is_empty() {
            return Outcome::pass(
                KIND,
                format!("all {} children are closed", split.children.len()),
                evidence,
            );
        }
        let mut parts = Vec::new();
        if !open.is_empty() {
            let names: Vec<String> = open
                .iter()
                .map(|o| {
                    format!(
                        "{} (at {})",
                        o["id"].as_str().unwrap_or("?"),
                        o["step"].as_str().unwrap_or("?")
                    )
                })
                .collect();
            parts.push(format!("open children: {}", names.join(", ")));
        }
        if !unreadable.is_empty() {
            let names: Vec<&str> = unreadable.iter().filter_map(|u| u["id"].as_str()).collect();
            parts.push(format!("unreadable children: {}", names.join(", ")));
        }
        Outcome::refuse(KIND, parts.join("; "), evidence)
    }
}
