//! The one tree order of a scope's nodes, as `splice status` lists them and the cockpit draws
//! them: depth first, children in natural order (`sp-x.1.2` before `sp-x.1.10`), nodes caught
//! in a parent cycle last.
//!
//! Plain data in, positions out: a node is its id and the parent id its bead names (none for a
//! bead file that could not be read); each caller keeps what else it knows of a node by position.

use crate::decide::FxMap;

/// Each node's position by its id (`nodes` as [`order`] takes them).
pub(crate) fn positions<'a>(nodes: &[(&'a str, Option<&'a str>)]) -> FxMap<&'a str, usize> {
    nodes.iter().enumerate().map(|(at, n)| (n.0, at)).collect()
}

/// Each node's position with its depth, in tree order. `nodes` are (id, the parent its bead
/// names) in id order, each id once; `position` is [`positions`] of them. A node whose parent is
/// none of them is a top; nodes caught in a parent cycle come last, each not yet shown starting a
/// walk of its own (in id order).
pub(crate) fn order(
    nodes: &[(&str, Option<&str>)],
    position: &FxMap<&str, usize>,
) -> Vec<(usize, usize)> {
    // Each node's parent's position (`None`: a top).
    let parents: Vec<Option<usize>> = nodes
        .iter()
        .map(|n| n.1.and_then(|p| position.get(p).copied()))
        .collect();
    // Each parent's children, together: `kids[start[p]..start[p + 1]]`.
    let mut start = vec![0; nodes.len() + 1];
    for &p in parents.iter().flatten() {
        start[p + 1] += 1;
    }
    for p in 0..nodes.len() {
        start[p + 1] += start[p];
    }
    let mut fill = start.clone();
    let mut kids = vec![0; start[nodes.len()]];
    let mut tops = Vec::new();
    for (at, parent) in parents.iter().enumerate() {
        match *parent {
            Some(p) => {
                kids[fill[p]] = at;
                fill[p] += 1;
            }
            None => tops.push(at),
        }
    }
    // Natural order, as a person reads ids: `sp-x.1.2` before `sp-x.1.10`. A child named its
    // parent's id, a dot and a number (no leading zero) compares with such a sibling by the
    // number, which is what the natural order says, without reading either id.
    let number: Vec<Option<u64>> = nodes
        .iter()
        .zip(&parents)
        .map(|((id, _), p)| child_number(id, nodes[(*p)?].0))
        .collect();
    let natural = |a: &usize, b: &usize| match (number[*a], number[*b]) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => crate::model::id::natural_cmp(nodes[*a].0, nodes[*b].0),
    };
    tops.sort_by(natural);
    for p in 0..nodes.len() {
        kids[start[p]..start[p + 1]].sort_by(natural);
    }
    let mut order = Vec::with_capacity(nodes.len());
    let mut seen = vec![false; nodes.len()];
    let mut stack: Vec<(usize, usize)> = tops.iter().rev().map(|&at| (at, 0)).collect();
    let mut walk = |stack: &mut Vec<(usize, usize)>, order: &mut Vec<(usize, usize)>| {
        while let Some((at, depth)) = stack.pop() {
            if std::mem::replace(&mut seen[at], true) {
                continue;
            }
            order.push((at, depth));
            for &c in kids[start[at]..start[at + 1]].iter().rev() {
                stack.push((c, depth + 1));
            }
        }
    };
    walk(&mut stack, &mut order);
    for at in 0..nodes.len() {
        stack.push((at, 0));
        walk(&mut stack, &mut order);
    }
    order
}

/// `N` when `id` is `parent`, a dot and the number `N` written without a leading zero.
fn child_number(id: &str, parent: &str) -> Option<u64> {
    let digits = id.strip_prefix(parent)?.strip_prefix('.')?;
    let plain = digits.bytes().all(|c| c.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && (1..=19).contains(&digits.len());
    plain.then(|| digits.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Bead;

    #[test]
    fn children_come_in_natural_order_whether_numbered_or_not_and_cycles_last() {
        let kids = [
            "sp-p.10",
            "sp-p.2",
            "sp-p.02",
            "sp-p.2a",
            "sp-p.x",
            "sp-p.1.5",
            "sp-p.0",
            "sp-p.99999999999999999999",
            "sp-p.18446744073709551615",
            "sp-pq.3",
            "sp-p.9",
        ];
        let bead = |id: &str, parent: Option<&str>| {
            let mut b = Bead::new(
                id.into(),
                String::new(),
                String::new(),
                "2026-01-01T00:00:00Z",
            );
            b.parent = parent.map(Into::into);
            b
        };
        let mut beads: Vec<Bead> = kids.iter().map(|k| bead(k, Some("sp-p"))).collect();
        beads.push(bead("sp-p", None));
        // A cycle: each the other's parent, reached from no top.
        beads.push(bead("sp-c1", Some("sp-c2")));
        beads.push(bead("sp-c2", Some("sp-c1")));
        beads.sort_by(|a, b| a.id.cmp(&b.id));
        let nodes: Vec<(&str, Option<&str>)> = beads
            .iter()
            .map(|b| (b.id.as_str(), b.parent.as_deref()))
            .collect();
        let order: Vec<(&str, usize)> = order(&nodes, &positions(&nodes))
            .into_iter()
            .map(|(at, depth)| (nodes[at].0, depth))
            .collect();
        let mut natural = kids.to_vec();
        natural.sort_by(|a, b| crate::model::id::natural_cmp(a, b));
        let mut want = vec![("sp-p", 0)];
        want.extend(natural.iter().map(|k| (*k, 1)));
        want.extend([("sp-c1", 0), ("sp-c2", 1)]);
        assert_eq!(order, want);
        assert_eq!(child_number("sp-p.7", "sp-p"), Some(7));
        assert_eq!(child_number("sp-p.07", "sp-p"), None);
        assert_eq!(child_number("sp-pq.7", "sp-p"), None);
    }
}
