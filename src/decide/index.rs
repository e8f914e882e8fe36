//! Lookups built once per decision, so no rule scans every node per node.

use std::cell::{Cell, RefCell};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::model::snapshot::Unreadable;
use crate::model::{Bead, Snapshot, Step, Text};
use crate::policy::lineage::{self, Defaults};
use crate::policy::{deps, route};

use super::cycles::Cycles;

/// A small deterministic hasher (the rustc "Fx" mix): ids are short and hashing them dominates
/// the lookups, and a fixed function keeps `decide` free of any per-process randomness.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

/// A `HashMap` with the fast, deterministic [`FxHasher`] (no random seed: `decide` stays pure).
pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// The lookups `decide` needs, built once per decision from the snapshot, so no rule scans it.
pub(crate) struct Index<'a> {
    /// The snapshot decided.
    pub snapshot: &'a Snapshot,
    /// One node per id, sorted by id; rules and outcomes use positions in this list. Plain
    /// beads (no route: [`Bead::is_node`]) are not here: they get no decision, though nodes may
    /// depend on them and [`Index::bead`] finds them.
    pub beads: Vec<&'a Bead>,
    /// Every bead, sorted by id, one per id: [`Index::bead`] searches it.
    sorted: Vec<Keyed<'a>>,
    /// Where each node of `beads` sits in `sorted`.
    positions: Vec<u32>,
    /// Where in `sorted` the node being decided sits ([`Index::visit`]): a search starts there,
    /// since a node's parent, siblings and children sit near it in id order.
    near: Cell<usize>,
    /// Rule 12's answers for every split, found once: whether each child is closed, the
    /// splits' children one after another in `beads` order ...
    child_closed: Vec<bool>,
    /// ... where each node's (as `beads`) start, and one more entry for the end.
    split_start: Vec<usize>,
    /// The scope root's ancestors outside the snapshot, for lineage walks only.
    context: FxMap<&'a str, &'a Bead>,
    /// Bead files that could not be read, one per id, sorted by id; none whose id a bead has.
    pub unreadable: Vec<&'a Unreadable>,
    unreadable_ids: FxMap<&'a str, &'a Unreadable>,
    /// What a node inherits when its lineage sets nothing.
    pub defaults: Defaults<'a>,
    steps: FxMap<&'a str, &'a Step>,
    /// Parent id → its children that have a worktree, sorted.
    worktree_children: FxMap<&'a str, Vec<&'a str>>,
    /// Whether each bead of `sorted` is one of the snapshot's `worktrees` (has a checkout).
    checkout: Vec<bool>,
    /// Answers asked once per parent and shared by its children (siblings ask the same).
    released: RefCell<FxMap<&'a str, bool>>,
    inherited_target: RefCell<FxMap<&'a str, Option<&'a str>>>,
    /// The last [`RECENT`] beads found by id, and the slot the next one takes.
    recent: RefCell<Recent<'a>>,
    /// Rule 7's cycles of `blocks` dependencies, found as blocked nodes ask.
    cycles: RefCell<Cycles<'a>>,
}

/// How many answers of [`Index::bead`] are kept: a node, its parent and grandparent.
const RECENT: usize = 4;

/// The last answers of [`Index::bead`] (id and bead), and the slot the next one takes.
type Recent<'a> = ([Option<(&'a str, &'a Bead)>; RECENT], usize);

impl<'a> Index<'a> {
    /// Build the lookups for `snapshot`.
    pub(super) fn build(snapshot: &'a Snapshot) -> Index<'a> {
        // Sorted with each id's first 16 bytes beside its bead, so most comparisons read
        // neither the ids' text nor the beads' structs (at 100,000 beads every pointer followed
        // is a cache miss). Stable: a snapshot in id order is one linear pass.
        let mut keyed: Vec<Keyed> = snapshot.beads.iter().map(Keyed::of).collect();
        keyed.sort_by(|a, b| (a.key.cmp(&b.key)).then_with(|| preference(a.bead, b.bead)));
        // A hand-made snapshot may repeat an id: keep one copy, chosen by content, not position.
        keyed.dedup_by(|later, earlier| later.key == earlier.key);

        let (positions, beads): (Vec<u32>, Vec<&Bead>) = (0u32..)
            .zip(&keyed)
            .filter_map(|(at, k)| k.node.then_some((at, k.bead)))
            .unzip();
        let (split_start, child_closed) = children_closed(&beads, &positions, &keyed);
        let steps = snapshot
            .manifest
            .steps
            .iter()
            .map(|s| (s.name.as_str(), s))
            .collect();

        let mut worktree_children: FxMap<&str, Vec<&str>> = FxMap::default();
        let mut checkout = vec![false; keyed.len()];
        let mut near = 0;
        for id in &snapshot.worktrees {
            // Listed in id order: each search starts where the last one ended.
            let Some((at, child)) = find_near(&keyed, id, near) else {
                continue;
            };
            near = at;
            checkout[at] = true;
            if let Some(parent) = child.parent.as_deref() {
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

        let context = snapshot
            .ancestors
            .iter()
            .map(|b| (b.id.as_str(), b))
            .collect();
        // Whatever their order: by id, and by content among copies of one id.
        let mut unreadable: Vec<&Unreadable> = snapshot
            .unreadable
            .iter()
            .filter(|u| find(&keyed, &u.id).is_none())
            .collect();
        unreadable.sort_by(|a, b| (&a.id, &a.file, &a.error).cmp(&(&b.id, &b.file, &b.error)));
        unreadable.dedup_by(|later, earlier| later.id == earlier.id);
        let unreadable_ids = unreadable.iter().map(|u| (u.id.as_str(), *u)).collect();
        Index {
            snapshot,
            beads,
            sorted: keyed,
            positions,
            near: Cell::new(0),
            child_closed,
            split_start,
            context,
            unreadable,
            unreadable_ids,
            defaults: Defaults::of(snapshot),
            steps,
            worktree_children,
            checkout,
            released: RefCell::default(),
            inherited_target: RefCell::default(),
            recent: RefCell::new(([None; RECENT], 0)),
            cycles: RefCell::default(),
        }
    }

    /// [`route::releases_children`] for `parent`, asked once per parent.
    pub(super) fn releases_children(&self, parent: &'a Bead) -> bool {
        *self
            .released
            .borrow_mut()
            .entry(parent.id.as_str())
            .or_insert_with(|| route::releases_children(&self.snapshot.manifest, parent))
    }

    /// [`lineage::target`] of `bead`: its own, else its parent's lineage's (asked once per
    /// parent), else the defaults.
    pub(super) fn target(&self, bead: &'a Bead) -> Option<&'a str> {
        if let Some(own) = bead.pipeline.target.as_deref() {
            return Some(own);
        }
        let Some(parent) = bead.parent.as_deref().and_then(|p| self.lineage_bead(p)) else {
            return lineage::target([bead], &self.defaults);
        };
        if let Some(known) = self.inherited_target.borrow().get(parent.id.as_str()) {
            return *known;
        }
        let found = lineage::target(self.chain(parent), &self.defaults);
        self.inherited_target
            .borrow_mut()
            .insert(parent.id.as_str(), found);
        found
    }

    /// The unreadable bead file above `bead`: where its lineage breaks off (nothing above it can
    /// be known, so neither can what it inherits).
    pub(super) fn unreadable_above(&self, bead: &'a Bead) -> Option<&'a Unreadable> {
        if self.unreadable_ids.is_empty() {
            return None;
        }
        let top = self.chain(bead).last()?;
        let parent = top.parent.as_deref()?;
        self.unreadable_ids.get(parent).copied()
    }

    /// Why `bead`, blocked by `by`, waits for ever: the cycle of `blocks` dependencies it lies
    /// on, if any ([`super::cycles`]).
    pub(super) fn blocks_cycle(&self, bead: &'a Bead, by: &[Text]) -> Option<String> {
        // Most blockers block on nothing themselves: then no cycle passes through `bead`, and
        // nothing needs exploring (but a bead that blocks itself).
        let onward = by.iter().any(|id| {
            *id == bead.id || self.bead(id).is_some_and(|b| b.blockers().next().is_some())
        });
        if !onward {
            return None;
        }
        let blockers = |b: &'a Bead| -> Vec<&'a Bead> {
            deps::blocked_by(
                b,
                |id| self.bead(id),
                |id| self.snapshot.shipped.contains(id),
            )
            .iter()
            .filter_map(|id| self.bead(id))
            .collect()
        };
        self.cycles
            .borrow_mut()
            .of(bead, blockers)
            .map(super::cycles::reason)
    }

    /// Searches for the node at `at` (a position in `beads`) start where it sits.
    pub(super) fn visit(&self, at: usize) {
        self.near.set(self.positions[at] as usize);
    }

    /// The bead `id`. Siblings sit together in id order and ask for the same parent, so the
    /// last few answers are kept: a hit searches nothing.
    pub(super) fn bead(&self, id: &str) -> Option<&'a Bead> {
        let mut recent = self.recent.borrow_mut();
        if let Some(&(_, found)) = recent.0.iter().flatten().find(|(k, _)| *k == id) {
            return Some(found);
        }
        let (_, found) = find_near(&self.sorted, id, self.near.get())?;
        let slot = recent.1;
        recent.0[slot] = Some((found.id.as_str(), found));
        recent.1 = (slot + 1) % RECENT;
        Some(found)
    }

    /// `bead` and its ancestors, nearest first, through the scope's context above the snapshot.
    pub(super) fn chain(&self, bead: &'a Bead) -> impl Iterator<Item = &'a Bead> + '_ {
        lineage::chain(bead, |id| self.lineage_bead(id))
    }

    /// A bead of the snapshot, or an ancestor of the scope above it.
    fn lineage_bead(&self, id: &str) -> Option<&'a Bead> {
        self.bead(id).or_else(|| self.context.get(id).copied())
    }

    /// The manifest's step `name`, if it declares one.
    pub(super) fn step(&self, name: &str) -> Option<&'a Step> {
        self.steps.get(name).copied()
    }

    /// Children of `id` that still have a worktree.
    pub(super) fn worktree_children(&self, id: &str) -> &[&'a str] {
        self.worktree_children
            .get(id)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Does the node at `at` (a position in `beads`) have a checkout (its worktree or its
    /// target checkout)?
    pub(super) fn has_worktree(&self, at: usize) -> bool {
        self.checkout[self.positions[at] as usize]
    }

    /// A node with no parent in the snapshot, or a plain bead for parent (an imported epic a
    /// person started one child of).
    pub(super) fn is_top_level(&self, bead: &Bead) -> bool {
        bead.parent
            .as_deref()
            .is_none_or(|p| self.bead(p).is_none_or(|b| !b.is_node()))
    }

    /// The children that the split of node `at` (a position in `beads`) sanctioned and that
    /// are open, in the split's order. A child absent from the snapshot counts as open.
    pub(super) fn open_children(&self, at: usize) -> impl Iterator<Item = &'a str> + '_ {
        let children = self.beads[at]
            .pipeline
            .split
            .as_deref()
            .map_or(&[][..], |s| &s.children[..]);
        let closed = &self.child_closed[self.split_start[at]..self.split_start[at + 1]];
        children
            .iter()
            .zip(closed)
            .filter(|(_, closed)| !**closed)
            .map(|(child, _)| child.as_str())
    }
}

/// The bead `id` in `keyed` (sorted by id, one per id).
fn find<'a>(keyed: &[Keyed<'a>], id: &str) -> Option<&'a Bead> {
    let key = Key::of(id);
    let at = keyed.binary_search_by(|k| k.key.cmp(&key)).ok()?;
    Some(keyed[at].bead)
}

/// The bead `id` in `keyed` (sorted by id, one per id) and its position there, searched outward
/// from position `near`: a few steps when it sits close by, never more than about twice a
/// binary search's.
fn find_near<'a>(keyed: &[Keyed<'a>], id: &str, near: usize) -> Option<(usize, &'a Bead)> {
    let key = Key::of(id);
    let here = near.min(keyed.len().checked_sub(1)?);
    // The range it must be in, found by doubling the step away from `here`.
    let (lo, hi) = match keyed[here].key.cmp(&key) {
        Ordering::Equal => return Some((here, keyed[here].bead)),
        Ordering::Less => {
            let (mut lo, mut step) = (here + 1, 1);
            loop {
                let probe = here.saturating_add(step);
                if probe >= keyed.len() {
                    break (lo, keyed.len());
                }
                if keyed[probe].key >= key {
                    break (lo, probe + 1);
                }
                (lo, step) = (probe + 1, step * 2);
            }
        }
        Ordering::Greater => {
            let (mut hi, mut step) = (here, 1);
            loop {
                let Some(probe) = here.checked_sub(step) else {
                    break (0, hi);
                };
                if keyed[probe].key <= key {
                    break (probe, hi);
                }
                (hi, step) = (probe, step * 2);
            }
        }
    };
    let at = lo + keyed[lo..hi].binary_search_by(|k| k.key.cmp(&key)).ok()?;
    Some((at, keyed[at].bead))
}

/// A bead with its sort key, whether it is a node, and whether it is closed (rule 12 asks that
/// of every split's children). Read here, in one pass in the beads' order, they spare a second
/// pass over the beads and a visit to each child's bead out of order (at 100,000 beads, a miss
/// to memory each).
struct Keyed<'a> {
    key: Key<'a>,
    node: bool,
    closed: bool,
    bead: &'a Bead,
}

impl<'a> Keyed<'a> {
    fn of(bead: &'a Bead) -> Keyed<'a> {
        Keyed {
            key: Key::of(&bead.id),
            node: bead.is_node(),
            closed: bead.is_closed(),
            bead,
        }
    }
}

/// An id, with its first 16 bytes as a number beside it (zero-padded): two ids whose numbers
/// differ compare as their numbers do, and ids of up to 16 bytes compare without reading their
/// text. Ordered exactly as the ids are: two prefixes differ first where one id has a byte and
/// the other either a smaller byte or none (padding).
#[derive(Clone, Copy)]
struct Key<'a> {
    prefix: u128,
    id: &'a str,
}

impl<'a> Key<'a> {
    fn of(id: &'a str) -> Key<'a> {
        let mut bytes = [0u8; 16];
        let n = id.len().min(16);
        bytes[..n].copy_from_slice(&id.as_bytes()[..n]);
        Key {
            prefix: u128::from_be_bytes(bytes),
            id,
        }
    }
}

impl Ord for Key<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.prefix.cmp(&other.prefix).then_with(|| {
            if self.id.len() <= 16 && other.id.len() <= 16 {
                // Equal prefixes hold all of both: the shorter is a prefix of the longer.
                self.id.len().cmp(&other.id.len())
            } else {
                self.id.cmp(other.id)
            }
        })
    }
}

impl PartialEq for Key<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Key<'_> {}

impl PartialOrd for Key<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Whether each child of each node's split is closed (absent: open), the splits one after
/// another in `nodes` order, and where each node's start (one more entry for the end). Each
/// child is searched for from where the last one was found, the first from its parent
/// (`positions`: each node's place in `keyed`): a split's children sit near it and each other.
fn children_closed(nodes: &[&Bead], positions: &[u32], keyed: &[Keyed]) -> (Vec<usize>, Vec<bool>) {
    let mut start = Vec::with_capacity(nodes.len() + 1);
    let mut closed = Vec::new();
    for (bead, &at) in nodes.iter().zip(positions) {
        start.push(closed.len());
        let Some(split) = &bead.pipeline.split else {
            continue;
        };
        let mut near = at as usize;
        closed.extend(split.children.iter().map(|child| {
            let found = find_near(keyed, child, near);
            if let Some((at, _)) = found {
                near = at;
            }
            found.is_some_and(|(at, _)| keyed[at].closed)
        }));
    }
    start.push(closed.len());
    (start, closed)
}

/// Among copies of one id, the one to keep sorts first: highest `seq`, then by content.
fn preference(a: &Bead, b: &Bead) -> std::cmp::Ordering {
    b.pipeline.seq.cmp(&a.pipeline.seq).then_with(|| {
        if a == b {
            return std::cmp::Ordering::Equal;
        }
        let text = |x: &Bead| serde_json::to_string(x).unwrap_or_default();
        text(a).cmp(&text(b))
    })
}

#[cfg(test)]
mod tests {
    use super::{Key, Keyed, find, find_near};
    use crate::model::Bead;

    /// A search from any position finds what a binary search finds, where it is, for ids
    /// present (first, last, near, far) and absent (before all, between, after all).
    #[test]
    fn a_search_from_anywhere_finds_what_a_binary_search_finds() {
        let mut ids: Vec<String> = (0..300).map(|i| format!("sp-{}", i * 7)).collect();
        ids.sort();
        let beads: Vec<Bead> = ids
            .iter()
            .map(|id| Bead::new(id.as_str().into(), "t".into(), String::new(), "now"))
            .collect();
        let keyed: Vec<Keyed> = beads.iter().map(Keyed::of).collect();
        let mut asked: Vec<String> = ids.clone();
        asked.extend(["", "a", "sp-", "sp-10", "sp-2099", "sp-99", "zz"].map(String::from));
        for id in &asked {
            let found = find(&keyed, id).map(|b| b.id.as_str());
            let at = ids.iter().position(|i| i == id);
            for near in [0, 1, 2, 149, 150, 298, 299, 300, usize::MAX] {
                let got = find_near(&keyed, id, near);
                assert_eq!(got.map(|(_, b)| b.id.as_str()), found, "{id:?} from {near}");
                assert_eq!(got.map(|(i, _)| i), at, "{id:?} from {near}");
            }
        }
        assert!(find_near(&[], "sp-1", 0).is_none());
    }

    /// Keys compare exactly as their ids do, whatever the lengths, NUL bytes included.
    #[test]
    fn keys_compare_as_the_ids_do() {
        let ids = [
            "sp-x",
            "sp-x.1",
            "sp-x.10",
            "sp-x.1.2",
            "sp-x.1.10",
            "a",
            "a\u{0}",
            "a\u{0}\u{0}",
            "a\u{0}b",
            "",
            "sp-root.1234567890.1",
            "sp-root.1234567890.0",
            "sp-root.123456789",
            "sp-x\u{0}",
            "zz",
            "sp-root.12345678",
            "sp-root.12345678\u{0}",
            "sp-root.12345678a",
        ];
        for a in ids {
            for b in ids {
                assert_eq!(Key::of(a).cmp(&Key::of(b)), a.cmp(b), "{a:?} vs {b:?}");
                assert_eq!(Key::of(a) == Key::of(b), a == b, "{a:?} vs {b:?}");
            }
        }
    }
}
