//! Rule 7's cycles: a node blocked by a `blocks` dependency that leads back to it, through beads
//! whose work is not done, waits for itself. It never unblocks, and resting `blocked` would make
//! the run look `idle`, so it rests `escalated` naming the cycle: a person removes one of its
//! dependencies.
//!
//! The cycles are the strongly connected components (Tarjan's, without recursion: a chain of
//! 100,000 beads is no deeper a stack) of the graph whose edges go from a bead to each bead of
//! the snapshot that blocks it ([`crate::policy::deps::blocked_by`]). It is explored only from
//! nodes that rest `blocked`, as the rules meet them, and each bead at most once per decision.

use super::index::FxMap;
use crate::model::Bead;

/// How many of a cycle's beads a reason names.
const NAMED: usize = 5;

/// What is known so far, kept across the roots the rules ask about.
#[derive(Default)]
pub(crate) struct Cycles<'a> {
    /// Each bead met: its Tarjan index and lowlink, while its component is not known; then the
    /// component, [`ON_NONE`] or a position in `cycles`.
    met: FxMap<&'a str, Met>,
    /// The beads met whose component is not known yet, in the order met.
    stack: Vec<&'a str>,
    /// Each cycle's beads, sorted by id.
    cycles: Vec<Vec<&'a str>>,
    next: u32,
}

#[derive(Clone, Copy)]
enum Met {
    Open { index: u32, low: u32 },
    Done { cycle: u32 },
}

/// A bead's component when it lies on no cycle.
const ON_NONE: u32 = u32::MAX;

/// A bead being explored: its successors and how many were taken.
struct Frame<'a> {
    bead: &'a Bead,
    next: Vec<&'a Bead>,
    taken: usize,
}

impl<'a> Cycles<'a> {
    /// The beads of the cycle `root` lies on, sorted by id; `None` when it lies on none.
    /// `blockers` gives a bead's edges: the beads of the snapshot that block it.
    pub(super) fn of(
        &mut self,
        root: &'a Bead,
        blockers: impl Fn(&'a Bead) -> Vec<&'a Bead>,
    ) -> Option<&[&'a str]> {
        if !self.met.contains_key(root.id.as_str()) {
            self.explore(root, &blockers);
        }
        match self.met.get(root.id.as_str()) {
            Some(Met::Done { cycle }) if *cycle != ON_NONE => {
                Some(&self.cycles[*cycle as usize][..])
            }
            _ => None,
        }
    }

    /// Tarjan's algorithm from `root`, a bead not met yet.
    fn explore(&mut self, root: &'a Bead, blockers: &impl Fn(&'a Bead) -> Vec<&'a Bead>) {
        let mut calls = vec![self.enter(root, blockers)];
        // A bead that blocks itself is a cycle of one.
        let mut loops: Vec<&'a str> = Vec::new();
        while let Some(frame) = calls.last_mut() {
            let v = frame.bead.id.as_str();
            if let Some(&w) = frame.next.get(frame.taken) {
                frame.taken += 1;
                let w_id = w.id.as_str();
                if w_id == v {
                    loops.push(v);
                }
                match self.met.get(w_id).copied() {
                    None => {
                        let callee = self.enter(w, blockers);
                        calls.push(callee);
                    }
                    Some(Met::Open { index, .. }) => self.lower(v, index),
                    Some(Met::Done { .. }) => {}
                }
                continue;
            }
            calls.pop();
            let Some(Met::Open { index, low }) = self.met.get(v).copied() else {
                continue;
            };
            if let Some(caller) = calls.last() {
                self.lower(caller.bead.id.as_str(), low);
            }
            if low != index {
                continue;
            }
            let at = self.stack.iter().rposition(|s| *s == v).unwrap_or(0);
            let mut members = self.stack.split_off(at);
            let cycle = if members.len() > 1 || loops.contains(&v) {
                members.sort_unstable();
                self.cycles.push(members.clone());
                (self.cycles.len() - 1) as u32
            } else {
                ON_NONE
            };
            for m in members {
                self.met.insert(m, Met::Done { cycle });
            }
        }
    }

    /// Meet `bead`: number it, stack it, and list what blocks it.
    fn enter(
        &mut self,
        bead: &'a Bead,
        blockers: &impl Fn(&'a Bead) -> Vec<&'a Bead>,
    ) -> Frame<'a> {
        let index = self.next;
        self.next += 1;
        self.met
            .insert(bead.id.as_str(), Met::Open { index, low: index });
        self.stack.push(bead.id.as_str());
        Frame {
            bead,
            next: blockers(bead),
            taken: 0,
        }
    }

    /// Lower `v`'s lowlink to `to`.
    fn lower(&mut self, v: &'a str, to: u32) {
        if let Some(Met::Open { low, .. }) = self.met.get_mut(v) {
            *low = (*low).min(to);
        }
    }
}

/// Rule 7's reason for a node on `cycle`.
pub(crate) fn reason(cycle: &[&str]) -> String {
    let mut named = cycle[..cycle.len().min(NAMED)].join(", ");
    if cycle.len() > NAMED {
        named.push_str(&format!(" and {} more", cycle.len() - NAMED));
    }
    format!(
        "blocked in a cycle of `blocks` dependencies ({named}): each waits for another, so none \
         can start until one of these dependencies is removed"
    )
}
