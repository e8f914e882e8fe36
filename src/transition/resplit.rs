//! `resplit`: redo a node's split while it is still at its split step, i.e. before that step's
//! gate has passed (once it passes, the node moves on and the split stands). Without it a split
//! that `children_conserved` refuses could only burn the step's attempts until the node parked,
//! since a node splits once.
//!
//! The new children are numbered after the ones they replace (`<parent>.N+1`, …). Of the
//! children of the split it replaces, those still open are cancelled in the same record
//! (superseded), those already cancelled are dropped, and those closed as done stay in the split
//! (their scenarios stay claimed). A child claimed by a holder is refused: its work may be under
//! way. The node's check and gate on the step are cleared, so the new split is checked again.

use serde::Serialize;

use super::split::{ChildSpec, Prepared, child};
use super::{
    Caller, Ctx, Refusal, Verb, close::ended, next_seq, require_lease_free_for, require_open,
};
use crate::error::Result;
use crate::model::bead::SplitRecord;
use crate::model::{Bead, Text};
use crate::store::{Change, Fresh, Reads, ids};

/// A re-split: the children it created and what became of the ones before.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Resplit {
    pub bead: String,
    /// The new children, in order.
    pub children: Vec<String>,
    /// Children of the replaced split that were open, now cancelled.
    pub superseded: Vec<String>,
    /// Children of the replaced split closed as done, kept in the split.
    pub kept: Vec<String>,
}

/// Re-split `id` into `children`, in one transition.
pub fn resplit(ctx: &Ctx, id: &str, children: &[ChildSpec]) -> Result<Resplit> {
    ctx.admit(Verb::Resplit)?;
    let prepared = Prepared::new(ctx, children)?;
    let (children, entry, split_step) =
        (&prepared.children, prepared.entry(), prepared.split_step());
    // The split it replaces, read without the lock; the plan refuses if the split under the lock
    // is another, so the children read and the ids probed are the ones it sees.
    let parent = ctx.store.read_bead(id)?;
    let before = parent
        .pipeline
        .split
        .as_ref()
        .map(|s| s.children.clone())
        .unwrap_or_default();
    let offset = numbered_after(id, &before);
    let new_ids = (1..=children.len())
        .map(|i| ids::child_id(id, offset + i))
        .collect();
    let reads = Reads::subject(id)
        .with_others(before.iter().map(|c| c.to_string()).collect())
        .probing(new_ids);
    ctx.apply(Verb::Resplit, &reads, |fresh, who| {
        let input = ResplitInput {
            children,
            entry,
            split_step,
            read: &before,
        };
        Ok(plan(&input, who, fresh, &ctx.now)?)
    })
}

/// The highest child number among `children` of `parent` (`<parent>.N`), else their count.
pub fn numbered_after(parent: &str, children: &[impl AsRef<str>]) -> usize {
    let prefix = format!("{parent}.");
    children
        .iter()
        .filter_map(|c| c.as_ref().strip_prefix(&prefix)?.parse::<usize>().ok())
        .chain(std::iter::once(children.len()))
        .max()
        .unwrap_or(0)
}

/// What a re-split plan needs besides the beads.
#[derive(Clone, Copy, Debug)]
pub struct ResplitInput<'a> {
    /// The new children, their scenario ids normalized.
    pub children: &'a [ChildSpec],
    /// The leaf route's entry step, where every child starts.
    pub entry: &'a str,
    /// The manifest's step with role `split`.
    pub split_step: Option<&'a str>,
    /// The children of the split it replaces, as read before the lock (`fresh.others`).
    pub read: &'a [Text],
}

/// Re-split `fresh.subject`; `fresh.others` are the children of the split it replaces and
/// `fresh.taken` the new ids already taken. After-images: the superseded children, the new
/// children, the parent.
pub fn plan(
    input: &ResplitInput,
    who: Caller,
    fresh: &Fresh,
    now: &str,
) -> Result<Change<Resplit>, Refusal> {
    let parent = &fresh.subject;
    let id = &parent.id;
    who.admit(Verb::Resplit)?;
    require_open(parent)?;
    require_lease_free_for(parent, who.holder)?;
    let Some(split) = &parent.pipeline.split else {
        return Err(Refusal::NotSplit {
            bead: id.to_string(),
        });
    };
    if input.split_step != Some(parent.pipeline.step.as_str()) {
        return Err(Refusal::NotASplitStep {
            bead: id.to_string(),
            step: parent.pipeline.step.to_string(),
            split_step: input.split_step.map(str::to_string),
        });
    }
    if split.children != input.read {
        return Err(Refusal::SplitMeanwhile {
            bead: id.to_string(),
            child: split
                .children
                .last()
                .map(|c| c.to_string())
                .unwrap_or_default(),
        });
    }
    let seq = next_seq(parent);
    let Replaced {
        mut beads,
        superseded,
        kept,
    } = replaced(parent, &split.children, fresh, seq, now)?;
    let offset = numbered_after(id, &split.children);
    let mut children = Vec::with_capacity(input.children.len());
    for (i, spec) in input.children.iter().enumerate() {
        let child_id = ids::child_id(id, offset + i + 1);
        if fresh.taken.contains(&child_id) {
            return Err(Refusal::ChildExists { child: child_id });
        }
        children.push(child_id.clone());
        let made = child(
            parent,
            spec,
            child_id,
            (seq, i + 1, offset),
            input.entry,
            now,
        );
        beads.push(made);
    }
    let mut after = parent.clone();
    after.pipeline.split = Some(Box::new(SplitRecord {
        children: kept.iter().chain(&children).map(Text::from).collect(),
        seq,
    }));
    after.pipeline.last_check = None;
    after.pipeline.gate = None;
    beads.push(after);
    let reason = format!(
        "re-split into {} children{}",
        children.len(),
        match superseded.is_empty() {
            true => String::new(),
            false => format!(", superseding {}", superseded.join(", ")),
        }
    );
    Ok(Change {
        beads,
        reason: Some(reason),
        output: Resplit {
            bead: id.to_string(),
            children,
            superseded,
            kept,
        },
    })
}

/// What becomes of a replaced split's children.
#[derive(Default)]
struct Replaced {
    /// The after-images of the open ones, cancelled.
    beads: Vec<Bead>,
    superseded: Vec<String>,
    /// The ones closed as done.
    kept: Vec<String>,
}

/// What becomes of the replaced split's children: the open ones cancelled, the ones closed as
/// done kept. A claimed child is refused.
fn replaced(
    parent: &Bead,
    before: &[Text],
    fresh: &Fresh,
    seq: u64,
    now: &str,
) -> Result<Replaced, Refusal> {
    let mut out = Replaced::default();
    let Replaced {
        beads,
        superseded,
        kept,
    } = &mut out;
    for child in before.iter().filter_map(|c| fresh.get(c)) {
        if child.is_done() {
            kept.push(child.id.to_string());
            continue;
        }
        if child.is_closed() {
            continue;
        }
        if let Some(lease) = &child.pipeline.lease {
            return Err(Refusal::ForeignLease {
                bead: child.id.to_string(),
                holder: lease.holder.clone(),
                since: lease.since.clone(),
            });
        }
        let reason = format!("superseded by the re-split of {} at seq {seq}", parent.id);
        beads.push(ended(child, &reason, true, now));
        superseded.push(child.id.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::numbered_after;

    #[test]
    fn a_resplit_numbers_its_children_after_the_ones_it_replaces() {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(numbered_after("sp-a", &ids(&["sp-a.1", "sp-a.2"])), 2);
        assert_eq!(numbered_after("sp-a", &ids(&["sp-a.3", "sp-a.7"])), 7);
        assert_eq!(numbered_after("sp-a", &ids(&["odd", "other"])), 2);
        assert_eq!(numbered_after("sp-a", &[] as &[String]), 0);
    }
}
