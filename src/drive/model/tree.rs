//! The tree of the scope: every node in the order `splice status` lists them
//! (`driver::tree`: depth first, children in natural order, nodes caught in a parent cycle last,
//! a bead file that could not be read a node too); which rows a collapsed set leaves shown; and
//! one row put in words for the view.

use std::collections::BTreeSet;

use crate::driver::tree;
use crate::model::{Rest, Snapshot};

use super::Model;

/// One node of the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    pub id: String,
    /// Its index in `snapshot.beads` (`None`: in `snapshot.unreadable`).
    pub bead: Option<usize>,
    /// The parent its bead names, whether or not it is in the snapshot.
    pub parent_id: Option<String>,
    /// The parent's row, when it is in the snapshot.
    pub parent: Option<usize>,
    pub depth: usize,
    pub has_children: bool,
}

/// How a row is coloured: what its status means for a person.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Closed.
    Done,
    /// Work under way or next (a check, a dispatch, in flight, a live claim).
    Active,
    /// A person is needed (a gate, a question, a merge).
    Human,
    /// Stopped: parked, escalated, a dead holder's claim.
    Stopped,
    /// Waiting on something else (blocked, queued, backing off…).
    Waiting,
}

/// One row of the tree in words, for the view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeLine {
    pub depth: usize,
    pub id: String,
    pub title: String,
    pub kind: &'static str,
    pub step: String,
    /// The action's name, or the rest's (`awaiting-human`, `parked`…), as `splice status` says.
    pub status: &'static str,
    /// What happens next, or why it rests (`driver::advice`).
    pub reason: String,
    /// `Some(collapsed)` when the node has children.
    pub fold: Option<bool>,
    pub selected: bool,
    pub tone: Tone,
}

/// Every node of `snap` in the tree order `splice status` lists them in
/// (`driver::tree::order`).
pub(crate) fn rows(snap: &Snapshot) -> Vec<Row> {
    // (id, bead index or None for unreadable, parent named), in id order, each id once (a bead
    // wins over an unreadable file of the same id), as `splice status` takes them.
    let mut by_id: Vec<(&str, Option<usize>, Option<&str>)> = snap
        .unreadable
        .iter()
        .map(|u| (u.id.as_str(), None, None))
        .collect();
    // Plain beads (imported, or made by `splice create`) are no nodes: `splice list` shows them.
    by_id.extend(
        snap.beads
            .iter()
            .enumerate()
            .filter(|(_, b)| b.is_node())
            .map(|(i, b)| (b.id.as_str(), Some(i), b.parent.as_deref())),
    );
    by_id.sort_by(|a, b| a.0.cmp(b.0).then_with(|| b.1.is_some().cmp(&a.1.is_some())));
    by_id.dedup_by(|later, earlier| later.0 == earlier.0);
    let nodes: Vec<(&str, Option<&str>)> = by_id.iter().map(|n| (n.0, n.2)).collect();
    let order = tree::order(&nodes, &tree::positions(&nodes));
    let mut rows: Vec<Row> = Vec::with_capacity(order.len());
    // The last row at each depth: a row's parent row is the last one a level up (a walk shows a
    // node right after its parent's subtree so far), and a row has children shown when the next
    // row is a level down.
    let mut last_at: Vec<usize> = Vec::new();
    for (i, &(at, depth)) in order.iter().enumerate() {
        let (id, bead, parent_id) = by_id[at];
        last_at.truncate(depth);
        let parent = depth.checked_sub(1).and_then(|d| last_at.get(d).copied());
        last_at.push(rows.len());
        rows.push(Row {
            id: id.to_string(),
            bead,
            parent_id: parent_id.map(str::to_string),
            parent,
            depth,
            has_children: order.get(i + 1).is_some_and(|&(_, d)| d == depth + 1),
        });
    }
    rows
}

/// Whether `rows` still fit `snap`: the same ids at the same places with the same parents (a
/// change of step, status or claim keeps the tree; only a new, gone or moved node rebuilds it).
pub(crate) fn same_shape(rows: &[Row], snap: &Snapshot) -> bool {
    // A plain bead is no row ([`rows`]): the rows are the nodes and the unreadable files.
    let nodes = snap.beads.iter().filter(|b| b.is_node()).count();
    rows.len() == nodes + snap.unreadable.len()
        && rows.iter().all(|r| match r.bead {
            Some(i) => snap.beads.get(i).is_some_and(|b| {
                b.is_node() && b.id == r.id && b.parent.as_deref() == r.parent_id.as_deref()
            }),
            None => snap.unreadable.iter().any(|u| u.id == r.id),
        })
}

/// The rows shown: every row but those under a collapsed one.
pub(crate) fn visible(rows: &[Row], collapsed: &BTreeSet<String>) -> Vec<usize> {
    let mut out = Vec::with_capacity(rows.len());
    // Depth under which rows are hidden, while inside a collapsed subtree.
    let mut hide_below: Option<usize> = None;
    for (i, r) in rows.iter().enumerate() {
        if let Some(d) = hide_below {
            if r.depth > d {
                continue;
            }
            hide_below = None;
        }
        out.push(i);
        if r.has_children && collapsed.contains(&r.id) {
            hide_below = Some(r.depth);
        }
    }
    out
}

impl Model {
    /// The rows shown from `start`, at most `count`, in words.
    pub fn tree_lines(&self, start: usize, count: usize) -> Vec<TreeLine> {
        let end = self.visible.len().min(start.saturating_add(count));
        self.visible
            .get(start..end)
            .unwrap_or_default()
            .iter()
            .map(|&r| self.tree_line(&self.rows[r]))
            .collect()
    }

    fn tree_line(&self, row: &Row) -> TreeLine {
        let id = row.id.as_str();
        let bead = self.bead(id);
        let (status, tone) = self.status_of(id);
        TreeLine {
            depth: row.depth,
            id: row.id.clone(),
            title: bead
                .map_or_else(|| "(unreadable)".into(), |b| b.title.clone())
                .to_string(),
            kind: bead.map_or("unknown", |b| b.pipeline.kind.as_str()),
            step: bead.map_or_else(String::new, |b| b.pipeline.step.to_string()),
            status,
            reason: self.next_of(id).text,
            fold: row.has_children.then(|| self.collapsed.contains(&row.id)),
            selected: self.selected.as_deref() == Some(id),
            tone,
        }
    }

    /// The node's status word and tone: its action's name, else its rest's.
    pub(crate) fn status_of(&self, id: &str) -> (&'static str, Tone) {
        if let Some(a) = self.action(id) {
            let tone = match a.name() {
                "park" | "escalate" => Tone::Stopped,
                _ => Tone::Active,
            };
            return (a.name(), tone);
        }
        let Some(rest) = self.rest(id) else {
            return ("", Tone::Waiting);
        };
        let tone = match rest {
            Rest::Closed => Tone::Done,
            Rest::InFlight { .. } => Tone::Active,
            Rest::Running { holder, .. } => match self.holder_alive(holder) {
                Some(false) => Tone::Stopped,
                _ => Tone::Active,
            },
            Rest::AwaitingHuman { .. } | Rest::AwaitingMerge { .. } => Tone::Human,
            Rest::Parked { .. } | Rest::Escalated { .. } => Tone::Stopped,
            _ => Tone::Waiting,
        };
        (rest.name(), tone)
    }

    /// Whether `holder` lives, as the app found (`None`: cannot tell).
    pub(crate) fn holder_alive(&self, holder: &str) -> Option<bool> {
        self.state.as_ref()?.alive.get(holder).copied().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::snapshot::Unreadable;
    use crate::model::{Bead, Manifest};

    #[test]
    fn the_rows_are_the_status_order_with_their_parents_rows_and_children_shown() {
        const AT: &str = "2026-01-01T00:00:00Z";
        let bead = |id: &str, parent: Option<&str>, node: bool| {
            let mut b = Bead::new(id.into(), id.into(), String::new(), AT);
            b.parent = parent.map(Into::into);
            if node {
                b.pipeline.route = "leaf".into();
            }
            b
        };
        let beads = vec![
            bead("sp-p.10", Some("sp-p"), true),
            bead("sp-p", None, true),
            bead("sp-p.2", Some("sp-p"), true),
            bead("sp-p.2.1", Some("sp-p.2"), true),
            // A plain bead is no row; its child is a top.
            bead("sp-plain", None, false),
            bead("sp-plain.1", Some("sp-plain"), true),
            // A cycle, reached from no top.
            bead("sp-c1", Some("sp-c2"), true),
            bead("sp-c2", Some("sp-c1"), true),
        ];
        let mut snap = Snapshot::new(Manifest::default_manifest(), beads, AT, "me", "run");
        snap.unreadable = vec![Unreadable {
            id: "sp-p.3".into(),
            file: ".splice/beads/sp-p.3.json".into(),
            error: "not JSON".into(),
        }];
        let rows = rows(&snap);
        let got: Vec<(&str, usize, Option<&str>, bool)> = rows
            .iter()
            .map(|r| {
                let parent = r.parent.map(|p| rows[p].id.as_str());
                (r.id.as_str(), r.depth, parent, r.has_children)
            })
            .collect();
        assert_eq!(
            got,
            [
                ("sp-p", 0, None, true),
                ("sp-p.2", 1, Some("sp-p"), true),
                ("sp-p.2.1", 2, Some("sp-p.2"), false),
                ("sp-p.10", 1, Some("sp-p"), false),
                // An unreadable file names no parent: a top.
                ("sp-p.3", 0, None, false),
                ("sp-plain.1", 0, None, false),
                ("sp-c1", 0, None, true),
                ("sp-c2", 1, Some("sp-c1"), false),
            ]
        );
        // A store with plain beads in it keeps its shape from one read to the next (the tree is
        // not rebuilt), and a plain bead put on a route changes it.
        assert!(same_shape(&rows, &snap));
        let at = snap.beads.iter().position(|b| b.id == "sp-plain").unwrap();
        snap.beads[at].pipeline.route = "leaf".into();
        assert!(!same_shape(&rows, &snap));
    }
}
