//! Serialization among siblings, then the jobs limit (the module table's second part).
//!
//! Each sibling group keeps a map of claimed paths (normalized, component-wise) to the node that
//! claimed them: first the leased siblings, then each dispatch that stands, in (priority, id)
//! order. A path overlaps a claim when one is a directory prefix of (or equal to) the other, which
//! a sorted map answers in O(depth + log n) per path.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::model::{Action, Rest};

use super::index::{FxMap, Index};
use super::rules::Outcome;

/// Claimed paths of one sibling group: normalized path → claiming node.
type Claims<'a> = BTreeMap<String, &'a str>;

/// `outcomes` is indexed like `ix.beads`.
pub(crate) fn serialize_dispatches(ix: &Index<'_>, outcomes: &mut [Outcome]) {
    let mut groups: FxMap<Option<&str>, Claims<'_>> = FxMap::default();
    let mut in_flight: usize = 0;
    let mut dispatches: Vec<(i64, &str, usize)> = Vec::new();

    // Leased siblings claim their files first, in id order.
    for (at, (bead, outcome)) in ix.beads.iter().zip(outcomes.iter()).enumerate() {
        match outcome {
            Outcome::Rest(rest @ (Rest::InFlight { .. } | Rest::Running { .. })) => {
                if matches!(rest, Rest::InFlight { .. }) {
                    in_flight += 1;
                }
                if !bead.pipeline.files.is_empty() {
                    let claims = groups.entry(bead.parent.as_deref()).or_default();
                    for path in &bead.pipeline.files {
                        claims
                            .entry(normalize(path).into_owned())
                            .or_insert(bead.id.as_str());
                    }
                }
            }
            Outcome::Act(Action::Dispatch { .. }) => {
                dispatches.push((bead.priority, bead.id.as_str(), at));
            }
            _ => {}
        }
    }
    // Collected in id order: a stable sort on priority alone gives (priority, id) order.
    dispatches.sort_by_key(|d| d.0);

    // Dispatches in (priority, id) order: an overlap rests `serialized`, else it claims its files.
    let mut standing: Vec<usize> = Vec::new();
    for &(_, id, at) in &dispatches {
        let bead = ix.beads[at];
        if bead.pipeline.files.is_empty() {
            standing.push(at);
            continue;
        }
        let paths: Vec<Cow<str>> = bead.pipeline.files.iter().map(|p| normalize(p)).collect();
        let claims = groups.entry(bead.parent.as_deref()).or_default();
        if let Some(behind) = paths.iter().find_map(|p| overlapping(claims, p)) {
            outcomes[at] = Outcome::Rest(Rest::Serialized {
                behind: behind.to_string(),
            });
            continue;
        }
        for path in paths {
            claims.entry(path.into_owned()).or_insert(id);
        }
        standing.push(at);
    }

    // The jobs limit: in-flight dispatches take their slots first.
    let slots = (ix.snapshot.limits.jobs as usize).saturating_sub(in_flight);
    for &at in standing.iter().skip(slots) {
        outcomes[at] = Outcome::Rest(Rest::Queued);
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
pub fn scopes_overlap(a: &[String], b: &[String]) -> bool {
    a.iter().any(|x| {
        let x = normalize(x);
        b.iter().any(|y| {
            let y = normalize(y);
            covers(&x, &y) || covers(&y, &x)
        })
    })
}

/// The node whose claim overlaps `path`, if any.
fn overlapping<'a>(claims: &Claims<'a>, path: &str) -> Option<&'a str> {
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
    let lower = format!("{path}/");
    let upper = format!("{path}0"); // '0' is the byte after '/'
    claims.range(lower..upper).next().map(|(_, owner)| *owner)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        claims.insert("src/a".into(), "x");
        assert_eq!(overlapping(&claims, "src/a/b.rs"), Some("x"));
        assert_eq!(overlapping(&claims, "src"), Some("x"));
        assert_eq!(overlapping(&claims, "src/ab.rs"), None);
        assert_eq!(overlapping(&claims, "src/a"), Some("x"));
        assert_eq!(overlapping(&claims, ""), Some("x"));
        // `src/a-b` sorts between `src/a` and `src/a/`: it must not hide `src/a/…`.
        claims.insert("src/a-b".into(), "y");
        claims.insert("src/c/d".into(), "z");
        assert_eq!(overlapping(&claims, "src/c"), Some("z"));
    }
}
