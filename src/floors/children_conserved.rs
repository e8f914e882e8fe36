//! `children_conserved`: the node's sanctioned children (`split.children`) are exactly the beads
//! its split created, and their scenario claims union to exactly the node's set.
//!
//! Stray children are found by reading every bead (one directory read, as the snapshot does):
//! a bead whose `provenance.split_by` or `parent` names this node but which the split did not
//! sanction is a stray (unless it was cancelled: a re-split's superseded children are), and so
//! is a listed child whose provenance names another node. A sanctioned child that was cancelled
//! refuses too: its scenarios have no owner until the node is re-split
//! (`splice transition resplit`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::{Ctx, Floor, Outcome};
use crate::model::manifest::{FloorKind, FloorSpec};
use crate::model::{Bead, Text};

pub struct ChildrenConserved;

const KIND: FloorKind = FloorKind::ChildrenConserved;

/// Compare the parent's scenario ids with the children's claims (case-insensitively).
/// Returns (missing from every child, claimed by no parent id, claimed by several children).
pub fn conservation(
    parent: &[String],
    children: &[(String, Vec<String>)],
) -> (Vec<String>, Vec<String>, BTreeMap<String, Vec<String>>) {
    let norm = |s: &String| s.to_ascii_uppercase();
    let owned: BTreeSet<String> = parent.iter().map(norm).collect();
    let mut claims: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (child, ids) in children {
        for id in ids.iter().map(norm).collect::<BTreeSet<_>>() {
            claims.entry(id).or_default().push(child.clone());
        }
    }
    let missing = owned
        .iter()
        .filter(|id| !claims.contains_key(*id))
        .cloned()
        .collect();
    let extra = claims
        .keys()
        .filter(|id| !owned.contains(*id))
        .cloned()
        .collect();
    let shared = claims.into_iter().filter(|(_, by)| by.len() > 1).collect();
    (missing, extra, shared)
}

/// Each sanctioned child exists and was made by `node`'s split: the problems, and each child's
/// scenario claims.
fn provenance(
    node: &str,
    children: &[Text],
    all: &[Bead],
) -> (Vec<String>, Vec<(String, Vec<String>)>) {
    let mut problems = Vec::new();
    let mut claims = Vec::new();
    for id in children {
        match all.iter().find(|b| b.id == *id) {
            None => problems.push(format!("sanctioned child {id} does not exist")),
            Some(child) => {
                if child.is_cancelled() {
                    problems.push(format!(
                        "child {id} was cancelled, so its scenarios have no owner: re-split \
                         {node} (`splice transition resplit {node} --children FILE`)"
                    ));
                }
                let by = child
                    .pipeline
                    .provenance
                    .as_ref()
                    .map(|p| p.split_by.as_str());
                if by != Some(node) {
                    problems.push(format!(
                        "child {id} was not created by {node}'s split (provenance: {})",
                        by.unwrap_or("none")
                    ));
                }
                claims.push((id.to_string(), child.pipeline.scenarios.to_vec()));
            }
        }
    }
    (problems, claims)
}

/// Children of `node` (by provenance or parent) that its split did not sanction. A cancelled
/// one is not a stray, nor is a bd tombstone (a deleted issue: `splice start --campaign` adopts
/// none).
fn strays<'a>(node: &str, children: &[Text], all: &'a [Bead]) -> Vec<&'a str> {
    let listed: BTreeSet<&str> = children.iter().map(Text::as_str).collect();
    all.iter()
        .filter(|b| !listed.contains(b.id.as_str()) && b.id != node && !b.is_cancelled())
        .filter(|b| b.status != crate::model::Status::Tombstone)
        .filter(|b| {
            b.pipeline
                .provenance
                .as_ref()
                .is_some_and(|p| p.split_by == node)
                || b.parent.as_deref() == Some(node)
        })
        .map(|b| b.id.as_str())
        .collect()
}

impl Floor for ChildrenConserved {
    fn check(&self, _spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        let node = &ctx.bead.id;
        let Some(split) = &ctx.bead.pipeline.split else {
            return Outcome::refuse(
                KIND,
                format!("{node} has no children: run `splice transition split`"),
                json!({ "children": [] }),
            );
        };
        let all = match ctx.store.read_all() {
            Ok(all) => all,
            Err(e) => {
                return Outcome::escalate(KIND, format!("cannot read the beads: {e}"), json!({}));
            }
        };
        let (mut problems, claims) = provenance(node, &split.children, &all);
        let strays = strays(node, &split.children, &all);
        if !strays.is_empty() {
            problems.push(format!(
                "unsanctioned children of {node}: {}",
                strays.join(", ")
            ));
        }
        let (missing, extra, shared) = conservation(&ctx.bead.pipeline.scenarios, &claims);
        if !missing.is_empty() {
            problems.push(format!(
                "scenario(s) no child claims: {}",
                missing.join(", ")
            ));
        }
        if !extra.is_empty() {
            problems.push(format!(
                "scenario(s) claimed but not owned by {node}: {}",
                extra.join(", ")
            ));
        }
        let evidence = json!({
            "children": split.children,
            "strays": strays,
            "scenarios": ctx.bead.pipeline.scenarios,
            "missing": missing,
            "extra": extra,
            "shared": shared,
        });
        if problems.is_empty() {
            Outcome::pass(
                KIND,
                format!(
                    "{} children conserve {}'s {} scenario(s)",
                    split.children.len(),
                    node,
                    ctx.bead.pipeline.scenarios.len()
                ),
                evidence,
            )
        } else {
            Outcome::refuse(KIND, problems.join("; "), evidence)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{conservation, strays};
    use crate::model::{Bead, Status, Text};

    #[test]
    fn a_deleted_bd_child_is_no_stray_but_an_open_unsanctioned_one_is() {
        let child = |id: &str, status: Status| {
            let mut b = Bead::new(id.into(), id.into(), String::new(), "t");
            b.parent = Some("bd-e".into());
            b.status = status;
            b
        };
        let all = vec![
            child("bd-e.1", Status::Open),
            child("bd-e.2", Status::Tombstone),
            child("bd-e.3", Status::Open),
        ];
        assert_eq!(strays("bd-e", &[Text::from("bd-e.1")], &all), ["bd-e.3"]);
    }

    fn v(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn exact_union_with_case_insensitive_ids() {
        let children = vec![("c1".into(), v(&["s1"])), ("c2".into(), v(&["S2", "S1"]))];
        let (missing, extra, shared) = conservation(&v(&["S1", "S2"]), &children);
        assert!(missing.is_empty() && extra.is_empty());
        assert_eq!(shared.get("S1").map(Vec::len), Some(2));
    }

    #[test]
    fn reports_missing_and_extra() {
        let children = vec![("c1".into(), v(&["S1", "S9"]))];
        let (missing, extra, _) = conservation(&v(&["S1", "S2"]), &children);
        assert_eq!(missing, v(&["S2"]));
        assert_eq!(extra, v(&["S9"]));
    }
}
