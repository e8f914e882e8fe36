//! When a bead is blocked: one rule, used by `decide` (rule 8: a node rests `blocked`) and by
//! `splice ready` (a plain bead that could be started).
//!
//! A bead is blocked by each of its `blocks` dependencies whose work is not done: open (any
//! status but `closed` and `tombstone`), absent from the beads the caller can see, or closed by
//! `splice cancel` (cancelled work does not unblock what waits on it). Other dependency types
//! (`parent-child`, `related`, `discovered-from`, …) never block.

use crate::model::{Bead, Text};

/// The ids blocking `bead`, sorted and without repeats; empty when it may go. `find` looks a
/// bead up by id among those the caller can see; `shipped` says whether another project's
/// capability (`external:<project>:<capability>`) is done ([`Snapshot::shipped`]).
///
/// [`Snapshot::shipped`]: crate::model::Snapshot::shipped
pub fn blocked_by<'a>(
    bead: &Bead,
    find: impl Fn(&str) -> Option<&'a Bead>,
    shipped: impl Fn(&str) -> bool,
) -> Vec<Text> {
    let mut by: Vec<Text> = bead
        .blockers()
        .filter(|id| !find(id).is_some_and(Bead::is_done) && !shipped(id))
        .map(Text::from)
        .collect();
    by.sort_unstable();
    by.dedup();
    by
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::bead::{Cancelled, Dependency, Status};

    fn bead(id: &str, status: Status, deps: &[(&str, &str)]) -> Bead {
        let mut b = Bead::new(id.into(), id.into(), String::new(), "t");
        b.status = status;
        b.dependencies = deps
            .iter()
            .map(|(on, ty)| Dependency {
                depends_on_id: (*on).into(),
                dep_type: (*ty).into(),
                extra: Default::default(),
            })
            .collect();
        b
    }

    #[test]
    fn only_blocks_dependencies_whose_work_is_not_done_block() {
        let done = bead("d", Status::Closed, &[]);
        let gone = bead("t", Status::Tombstone, &[]);
        let open = bead("o", Status::InProgress, &[]);
        let mut cancelled = bead("c", Status::Closed, &[]);
        cancelled.pipeline.cancelled = Some(Box::new(Cancelled {
            reason: "no".into(),
            seq: 1,
            at: "t".into(),
        }));
        let all = [&done, &gone, &open, &cancelled];
        let find = |id: &str| all.iter().copied().find(|b| b.id == id);
        let b = bead(
            "b",
            Status::Open,
            &[
                ("d", "blocks"),
                ("t", "blocks"),
                ("o", "blocks"),
                ("o", "blocks"),
                ("c", "blocks"),
                ("missing", "blocks"),
                ("o", "related"),
            ],
        );
        assert_eq!(blocked_by(&b, find, |_| false), ["c", "missing", "o"]);
        let free = bead("f", Status::Open, &[("d", "blocks"), ("o", "parent-child")]);
        assert!(blocked_by(&free, find, |_| false).is_empty());
        // Another project's capability, done when shipped.
        let ext = bead("e", Status::Open, &[("external:p:cap", "blocks")]);
        assert_eq!(blocked_by(&ext, find, |_| false), ["external:p:cap"]);
        assert!(blocked_by(&ext, find, |id| id == "external:p:cap").is_empty());
    }
}
