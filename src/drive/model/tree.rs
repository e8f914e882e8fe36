//! The tree of the scope: every node in depth-first order (children by id, nodes caught in a
//! parent cycle last, a bead file that could not be read a node too), as `splice status` lists
//! them; which rows a collapsed set leaves shown; and one row put in words for the view.

use std::collections::{BTreeMap, BTreeSet, HashSet};

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

/// Every node of `snap` in tree order.
pub(crate) fn rows(snap: &Snapshot) -> Vec<Row> {
    // (bead index or None for unreadable, parent named)
    let mut by_id: BTreeMap<&str, (Option<usize>, Option<&str>)> = snap
        .unreadable
        .iter()
        .map(|u| (u.id.as_str(), (None, None)))
        .collect();
    // Plain beads (imported, or made by `splice create`) are no nodes: `splice list` shows them.
    for (i, b) in snap.beads.iter().enumerate().filter(|(_, b)| b.is_node()) {
        by_id.insert(b.id.as_str(), (Some(i), b.parent.as_deref()));
    }
    let mut children: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut tops = Vec::new();
    for (&id, &(_, parent)) in &by_id {
        match parent.filter(|p| by_id.contains_key(p)) {
            Some(p) => children.entry(p).or_default().push(id),
            None => tops.push(id),
        }
    }
    // Natural order, as a person reads ids: `sp-x.1.2` before `sp-x.1.10`.
    let natural = |a: &&str, b: &&str| crate::model::id::natural_cmp(a, b);
    tops.sort_by(natural);
    for kids in children.values_mut() {
        kids.sort_by(natural);
    }
    let mut rows: Vec<Row> = Vec::with_capacity(by_id.len());
    let mut row_of: BTreeMap<&str, usize> = BTreeMap::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<(&str, usize, Option<usize>)> =
        tops.iter().rev().map(|&id| (id, 0, None)).collect();
    let starts: Vec<&str> = by_id.keys().copied().collect();
    let mut next_start = starts.iter();
    loop {
        let Some((id, depth, parent)) = stack.pop() else {
            // Nodes caught in a parent cycle: each not yet shown starts a walk of its own.
            match next_start.next() {
                Some(&id) => {
                    stack.push((id, 0, None));
                    continue;
                }
                None => break,
            }
        };
        if !seen.insert(id) {
            continue;
        }
        let (bead, parent_id) = by_id[id];
        let kids = children.get(id).map_or(&[][..], Vec::as_slice);
        let row = rows.len();
        row_of.insert(id, row);
        rows.push(Row {
            id: id.to_string(),
            bead,
            parent_id: parent_id.map(str::to_string),
            parent,
            depth,
            has_children: kids.iter().any(|k| !seen.contains(k)),
        });
        for &c in kids.iter().rev() {
            stack.push((c, depth + 1, Some(row)));
        }
    }
    rows
}

/// Whether `rows` still fit `snap`: the same ids at the same places with the same parents (a
/// change of step, status or claim keeps the tree; only a new, gone or moved node rebuilds it).
pub(crate) fn same_shape(rows: &[Row], snap: &Snapshot) -> bool {
    rows.len() == snap.beads.len() + snap.unreadable.len()
        && rows.iter().all(|r| match r.bead {
            Some(i) => snap
                .beads
                .get(i)
                .is_some_and(|b| b.id == r.id && b.parent.as_deref() == r.parent_id.as_deref()),
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
