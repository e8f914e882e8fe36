//! Lookups built once per decision, so no rule scans every node per node.

use std::collections::HashMap;

use crate::model::{Bead, Snapshot, Step};

pub(crate) struct Index<'a> {
    pub snapshot: &'a Snapshot,
    /// One bead per id, sorted by id.
    pub beads: Vec<&'a Bead>,
    by_id: HashMap<&'a str, &'a Bead>,
    steps: HashMap<&'a str, &'a Step>,
    /// Parent id → its children that have a worktree, sorted.
    worktree_children: HashMap<&'a str, Vec<&'a str>>,
}

impl<'a> Index<'a> {
    pub fn build(snapshot: &'a Snapshot) -> Index<'a> {
        let mut beads: Vec<&Bead> = snapshot.beads.iter().collect();
        beads.sort_by(|a, b| a.id.cmp(&b.id).then_with(|| preference(a, b)));
        // A hand-made snapshot may repeat an id: keep one copy, chosen by content, not position.
        beads.dedup_by(|later, earlier| later.id == earlier.id);

        let by_id: HashMap<&str, &Bead> = beads.iter().map(|b| (b.id.as_str(), *b)).collect();
        let steps = snapshot
            .manifest
            .steps
            .iter()
            .map(|s| (s.name.as_str(), s))
            .collect();

        let mut worktree_children: HashMap<&str, Vec<&str>> = HashMap::new();
        for id in &snapshot.worktrees {
            if let Some(child) = by_id.get(id.as_str())
                && let Some(parent) = child.parent.as_deref()
            {
                worktree_children
                    .entry(parent)
                    .or_default()
                    .push(child.id.as_str());
            }
        }
        for children in worktree_children.values_mut() {
            children.sort_unstable();
            children.dedup();
        }

        Index {
            snapshot,
            beads,
            by_id,
            steps,
            worktree_children,
        }
    }

    pub fn bead(&self, id: &str) -> Option<&'a Bead> {
        self.by_id.get(id).copied()
    }

    pub fn by_id(&self) -> &HashMap<&'a str, &'a Bead> {
        &self.by_id
    }

    pub fn step(&self, name: &str) -> Option<&'a Step> {
        self.steps.get(name).copied()
    }

    /// Children of `id` that still have a worktree.
    pub fn worktree_children(&self, id: &str) -> &[&'a str] {
        self.worktree_children
            .get(id)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// A node with no parent in the snapshot.
    pub fn is_top_level(&self, bead: &Bead) -> bool {
        bead.parent
            .as_deref()
            .is_none_or(|p| !self.by_id.contains_key(p))
    }

    /// Is the bead `id` closed? A bead absent from the snapshot counts as open.
    pub fn is_closed(&self, id: &str) -> bool {
        self.bead(id).is_some_and(Bead::is_closed)
    }
}

/// Among copies of one id, the one to keep sorts first: highest `seq`, then by content.
fn preference(a: &Bead, b: &Bead) -> std::cmp::Ordering {
    b.pipeline.seq.cmp(&a.pipeline.seq).then_with(|| {
        let text = |x: &Bead| serde_json::to_string(x).unwrap_or_default();
        if a == b {
            std::cmp::Ordering::Equal
        } else {
            text(a).cmp(&text(b))
        }
    })
}
