//! Serialization among siblings, then the jobs limit (the module table's second part).
//!
//! Each sibling group keeps a map of claimed paths (normalized, component-wise) to the node that
//! claimed them: first the leased siblings, then each dispatch that stands, in (priority, id)
//! order. A path overlaps a claim when one is a directory prefix of (or equal to) the other, which
//! a sorted map answers in O(depth + log n) per path.
//!
//! Groups never see each other's claims, so they are taken one at a time, each map built and
//! dropped while it is in the cache; the jobs limit then orders what stands across groups.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Bound;

use crate::model::{Bead, Rest, Rule, Text};

use super::index::{FxMap, Index};
use super::rules::Outcome;

/// Claimed paths of one sibling group: normalized path → claiming node.
type Claims<'a> = BTreeMap<Cow<'a, str>, &'a str>;

/// A node that holds or wants files: leased (running here or elsewhere) or dispatching.
pub(crate) struct Contender<'a> {
    at: usize,
    priority: i64,
    id: &'a str,
    /// Its sibling group's number ([`Groups`]): contenders are sorted by it.
    group: usize,
    files: &'a [Text],
    /// A copy of the first declared path when it is short enough to be kept inline (a
    /// [`Text`] of up to 24 bytes), taken while the rules have the bead at hand. Serialization
    /// comes after every node is decided; going back to each contender's list then was a
    /// cache miss per contender at 100,000 nodes, where taken here it overlaps the rules' own.
    first: Option<Text>,
    role: Role,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    InFlight,
    RunningElsewhere,
    Dispatch,
}

impl<'a> Contender<'a> {
    /// `bead` (at position `at` in id order) as a contender, given its rule outcome; its
    /// group numbered by `groups` while the bead is at hand.
    pub(super) fn of(
        at: usize,
        bead: &'a Bead,
        outcome: &Outcome<'a>,
        groups: &mut Groups<'a>,
    ) -> Option<Contender<'a>> {
        let role = match outcome {
            Outcome::Rest(_, Rest::InFlight { .. }) => Role::InFlight,
            Outcome::Rest(_, Rest::Running { .. }) => Role::RunningElsewhere,
            Outcome::Dispatch { .. } => Role::Dispatch,
            _ => return None,
        };
        Some(Contender {
            at,
            priority: bead.priority,
            id: &bead.id,
            group: groups.number(bead.parent.as_deref()),
            files: &bead.pipeline.files,
            first: bead
                .pipeline
                .files
                .first()
                .filter(|f| !f.is_heap_allocated())
                .cloned(),
            role,
        })
    }

    /// Its declared paths, in order.
    fn paths(&self) -> impl Iterator<Item = &Text> {
        let rest = usize::from(self.first.is_some());
        self.first.iter().chain(&self.files[rest..])
    }
}

/// `contenders` come in id order; `outcomes` is indexed like `ix.beads`.
pub(crate) fn serialize_dispatches<'a>(
    ix: &Index<'a>,
    mut contenders: Vec<Contender<'a>>,
    outcomes: &mut [Outcome<'a>],
) {
    let in_flight = contenders
        .iter()
        .filter(|c| c.role == Role::InFlight)
        .count();

    // By sibling group; in each, the leased first in id order, then the dispatches in
    // (priority, id) order. Stable, from id order: siblings' ids mostly sit together already.
    contenders.sort_by_key(|c| match c.role {
        Role::Dispatch => (c.group, true, c.priority),
        _ => (c.group, false, 0),
    });

    // Leased siblings claim their files; then a dispatch that overlaps a claim rests
    // `serialized`, and one that stands claims its files.
    let mut standing: Vec<(i64, usize)> = Vec::new();
    let mut claims = Claims::new();
    let mut scratch = String::new();
    for (i, c) in contenders.iter().enumerate() {
        if i > 0 && contenders[i - 1].group != c.group {
            claims.clear();
        }
        if c.role == Role::Dispatch {
            let behind = c
                .paths()
                .find_map(|p| overlapping(&claims, &normalize(p), &mut scratch));
            if let Some(behind) = behind {
                outcomes[c.at] = Outcome::Rest(
                    Rule::Dispatch,
                    Rest::Serialized {
                        behind: Text::from(behind),
                    },
                );
                continue;
            }
            standing.push((c.priority, c.at));
        }
        for path in c.paths() {
            claims.entry(normalize(path)).or_insert(c.id);
        }
    }

    // The jobs limit, over the standing dispatches in (priority, id) order (positions are id
    // order): in-flight dispatches take their slots first.
    standing.sort_unstable();
    let slots = (ix.snapshot.limits.jobs as usize).saturating_sub(in_flight);
    for &(_, at) in standing.iter().skip(slots) {
        outcomes[at] = Outcome::Rest(Rule::Dispatch, Rest::Queued);
    }
}

/// The contenders' sibling groups (the same parent, or none), numbered in the order they first
/// come. Groups never see each other's claims, and what stands is ordered afterwards by
/// (priority, id), so the groups' own order does not matter: a number sorts faster than the
/// parent's text. Siblings mostly come one after another, so most take the last one's number.
#[derive(Default)]
pub(crate) struct Groups<'a> {
    numbers: FxMap<Option<&'a str>, usize>,
    last: Option<(Option<&'a str>, usize)>,
}

impl<'a> Groups<'a> {
    fn number(&mut self, parent: Option<&'a str>) -> usize {
        match self.last {
            Some((last, group)) if last == parent => group,
            _ => {
                let next = self.numbers.len();
                let group = *self.numbers.entry(parent).or_insert(next);
                self.last = Some((parent, group));
                group
            }
        }
    }
}

/// `src//a/./b/` → `src/a/b`; `.` or `/` → `` (the whole tree).
pub(crate) fn normalize(path: &str) -> Cow<'_, str> {
    let trimmed = path.trim();
    let clean = |c: &str| !c.is_empty() && c != ".";
    if trimmed.split('/').all(clean) {
        return Cow::Borrowed(trimmed);
    }
    Cow::Owned(
        trimmed
            .split('/')
            .filter(|c| clean(c))
            .collect::<Vec<_>>()
            .join("/"),
    )
}

/// Does `a` cover `b` (equal, or a directory prefix of it, component-wise)? Both normalized.
pub(crate) fn covers(a: &str, b: &str) -> bool {
    a.is_empty() || a == b || (b.starts_with(a) && b.as_bytes().get(a.len()) == Some(&b'/'))
}

/// Do two declared scopes overlap?
pub fn scopes_overlap(a: &[impl AsRef<str>], b: &[impl AsRef<str>]) -> bool {
    a.iter().any(|x| {
        let x = normalize(x.as_ref());
        b.iter().any(|y| {
            let y = normalize(y.as_ref());
            covers(&x, &y) || covers(&y, &x)
        })
    })
}

/// The node whose claim overlaps `path`, if any. `scratch` is a reusable buffer.
fn overlapping<'a>(claims: &Claims<'a>, path: &str, scratch: &mut String) -> Option<&'a str> {
    if claims.is_empty() {
        return None;
    }
    // A claim covering `path`: the whole tree, `path` itself, or one of its directories.
    if let Some(owner) = claims.get("") {
        return Some(owner);
    }
    for (i, byte) in path.bytes().enumerate() {
        if byte == b'/'
            && let Some(owner) = claims.get(&path[..i])
        {
            return Some(owner);
        }
    }
    if let Some(owner) = claims.get(path) {
        return Some(owner);
    }
    // A claim under `path` (or anything at all when `path` is the whole tree).
    if path.is_empty() {
        return claims.values().next().copied();
    }
    // Keys in [`path/`, `path0`): '0' is the byte after '/'.
    scratch.clear();
    scratch.push_str(path);
    scratch.push('/');
    scratch.push_str(path);
    scratch.push('0');
    let (lower, upper) = scratch.split_at(path.len() + 1);
    claims
        .range::<str, _>((Bound::Included(lower), Bound::Excluded(upper)))
        .next()
        .map(|(_, owner)| *owner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contender_s_paths_are_its_declared_files_whether_copied_or_not() {
        let long = "src/a/path/longer/than/twenty-four/bytes.rs";
        for files in [
            vec![],
            vec!["src/a.rs"],
            vec![long],
            vec!["src/a.rs", long, "b"],
            vec![long, "src/a.rs"],
        ] {
            let mut bead = Bead::new("sp-1".into(), String::new(), String::new(), "t");
            bead.pipeline.files = files.iter().map(|f| Text::from(*f)).collect();
            let outcome = Outcome::Dispatch {
                attempt: 1,
                target: "main",
            };
            let c = Contender::of(0, &bead, &outcome, &mut Groups::default()).unwrap();
            let paths: Vec<&str> = c.paths().map(Text::as_str).collect();
            assert_eq!(paths, files);
            // Copied only when it is kept inline: a copy never allocates.
            assert_eq!(
                c.first.is_some(),
                files.first().is_some_and(|f| f.len() <= 24)
            );
        }
    }

    #[test]
    fn covers_is_component_wise() {
        assert!(covers("src", "src/a.rs"));
        assert!(covers("src", "src"));
        assert!(!covers("src/a", "src/ab.rs"));
        assert!(covers("", "anything"));
        assert!(!covers("src/a.rs", "src"));
    }

    #[test]
    fn normalize_drops_empty_and_dot_components() {
        assert_eq!(normalize("./src//a/"), "src/a");
        assert_eq!(normalize("/"), "");
    }

    #[test]
    fn overlapping_finds_prefixes_both_ways() {
        let mut claims = Claims::new();
        claims.insert(Cow::Borrowed("src/a"), "x");
        assert_eq!(
            overlapping(&claims, "src/a/b.rs", &mut String::new()),
            Some("x")
        );
        assert_eq!(overlapping(&claims, "src", &mut String::new()), Some("x"));
        assert_eq!(overlapping(&claims, "src/ab.rs", &mut String::new()), None);
        assert_eq!(overlapping(&claims, "src/a", &mut String::new()), Some("x"));
        assert_eq!(overlapping(&claims, "", &mut String::new()), Some("x"));
        // `src/a-b` sorts between `src/a` and `src/a/`: it must not hide `src/a/…`.
        claims.insert(Cow::Borrowed("src/a-b"), "y");
        claims.insert(Cow::Borrowed("src/c/d"), "z");
        assert_eq!(overlapping(&claims, "src/c", &mut String::new()), Some("z"));
    }
}
