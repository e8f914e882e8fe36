//! What a node inherits. Each value is the node's own, else its nearest ancestor's, else the
//! project's default:
//!
//! | value | after the node and its ancestors | last resort |
//! |---|---|---|
//! | autonomy | `[autonomy] default` (source `config`) | `hitl` (source `default`) |
//! | target | `[delivery] target` | the branch checked out when the state was read |
//! | delivery method | `[delivery] method` | `pr` |
//!
//! The walk up is bounded, so a parent cycle in hand-edited files cannot loop; an ancestor that
//! cannot be found ends it.

use crate::model::bead::DeliveryMethod;
use crate::model::{Autonomy, Bead, Config, Snapshot};

/// The longest parent chain walked.
pub const MAX_DEPTH: usize = 1024;

/// Branch names that are never a campaign branch.
pub fn is_mainline(target: &str) -> bool {
    matches!(target, "main" | "master")
}

/// The project-wide values a node falls back to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Defaults<'a> {
    /// `[autonomy] default`.
    pub autonomy: Option<Autonomy>,
    /// `[delivery] target`.
    pub target: Option<&'a str>,
    /// `[delivery] method`.
    pub method: Option<DeliveryMethod>,
    /// The branch checked out in the repository.
    pub branch: Option<&'a str>,
}

impl<'a> Defaults<'a> {
    /// The defaults of `config`, with `branch` checked out.
    pub fn new(config: &'a Config, branch: Option<&'a str>) -> Defaults<'a> {
        Defaults {
            autonomy: config.autonomy.default,
            target: config.delivery.target.as_deref(),
            method: config.delivery.method,
            branch,
        }
    }

    /// The defaults a snapshot carries.
    pub fn of(snapshot: &'a Snapshot) -> Defaults<'a> {
        Defaults {
            autonomy: snapshot.autonomy_default,
            target: snapshot.delivery_target.as_deref(),
            method: snapshot.delivery_method,
            branch: snapshot.branch.as_deref(),
        }
    }
}

/// Where a node's autonomy level came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// This node or an ancestor set it.
    Node(String),
    /// `[autonomy] default` in the config.
    Config,
    /// Nothing set: `hitl`.
    Fallback,
}

impl Source {
    /// The node id, or `config` / `default`, for records and output.
    pub fn label(&self) -> String {
        match self {
            Source::Node(id) => id.clone(),
            Source::Config => "config".into(),
            Source::Fallback => "default".into(),
        }
    }
}

/// A node and its ancestors, nearest first, as `lookup` finds them; at most [`MAX_DEPTH`] long.
pub fn chain<'a>(
    bead: &'a Bead,
    lookup: impl Fn(&str) -> Option<&'a Bead>,
) -> impl Iterator<Item = &'a Bead> {
    std::iter::successors(Some(bead), move |b| b.parent.as_deref().and_then(&lookup))
        .take(MAX_DEPTH)
}

/// The autonomy level of the first node of `chain` (the node, then its ancestors).
pub fn autonomy<'a>(
    chain: impl IntoIterator<Item = &'a Bead>,
    defaults: &Defaults,
) -> (Autonomy, Source) {
    if let Some((level, id)) = chain
        .into_iter()
        .find_map(|b| b.pipeline.autonomy.map(|l| (l, &b.id)))
    {
        return (level, Source::Node(id.to_string()));
    }
    match defaults.autonomy {
        Some(level) => (level, Source::Config),
        None => (Autonomy::Hitl, Source::Fallback),
    }
}

/// Where the first node of `chain` delivers its work.
pub fn target<'a>(
    chain: impl IntoIterator<Item = &'a Bead>,
    defaults: &Defaults<'a>,
) -> Option<&'a str> {
    chain
        .into_iter()
        .find_map(|b| b.pipeline.target.as_deref())
        .or(defaults.target)
        .or(defaults.branch)
}

/// How the first node of `chain` delivers its work.
pub fn delivery<'a>(
    chain: impl IntoIterator<Item = &'a Bead>,
    defaults: &Defaults,
) -> DeliveryMethod {
    chain
        .into_iter()
        .find_map(|b| b.pipeline.delivery)
        .or(defaults.method)
        .unwrap_or(DeliveryMethod::Pr)
}

/// A node's ancestors (read by the caller, nearest first) and the defaults: everything the
/// lineage rules need to answer for that node.
#[derive(Clone, Copy, Debug)]
pub struct Lineage<'a> {
    /// The node's ancestors, nearest first.
    pub ancestors: &'a [Bead],
    /// The config's defaults and the checked-out branch.
    pub defaults: Defaults<'a>,
}

impl<'a> Lineage<'a> {
    /// The lineage of a node with `ancestors`, nearest first.
    pub fn new(ancestors: &'a [Bead], defaults: Defaults<'a>) -> Lineage<'a> {
        Lineage {
            ancestors,
            defaults,
        }
    }

    /// `bead`, then its ancestors.
    pub fn chain<'b>(&'b self, bead: &'b Bead) -> impl Iterator<Item = &'b Bead> {
        std::iter::once(bead).chain(self.ancestors.iter())
    }

    /// `bead`'s autonomy level and who supplied it ([`autonomy`]).
    pub fn autonomy(&self, bead: &Bead) -> (Autonomy, Source) {
        autonomy(self.chain(bead), &self.defaults)
    }

    /// `bead`'s delivery target ([`target`]).
    pub fn target<'b>(&'b self, bead: &'b Bead) -> Option<&'b str> {
        target(self.chain(bead), &self.defaults)
    }

    /// `bead`'s delivery method ([`delivery`]).
    pub fn delivery(&self, bead: &Bead) -> DeliveryMethod {
        delivery(self.chain(bead), &self.defaults)
    }

    /// The nearest ancestor.
    pub fn parent(&self) -> Option<&'a Bead> {
        self.ancestors.first()
    }

    /// Does `bead` integrate on its own branch rather than on its target (issue 33)? A campaign
    /// root at deep autonomy whose target is the main line: its pieces land on its branch
    /// (`splice/<id>`), its floors read there, and its integrate lands that branch on the main
    /// line behind a person's approval (seed 003: deep "additionally requires a campaign
    /// integration branch").
    pub fn integrates_on_own_branch(&self, bead: &Bead) -> bool {
        bead.parent.is_none()
            && bead.pipeline.kind == crate::model::Kind::Root
            && self.autonomy(bead).0 == Autonomy::Deep
            && self.target(bead).is_some_and(is_mainline)
    }

    /// The campaign root: the farthest ancestor, or `bead` itself when it has none.
    pub fn root<'b>(&'b self, bead: &'b Bead) -> &'b Bead {
        self.ancestors.last().unwrap_or(bead)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bead(id: &str, parent: Option<&str>) -> Bead {
        let mut b = Bead::new(id.into(), id.into(), String::new(), "t");
        b.parent = parent.map(Into::into);
        b
    }

    #[test]
    fn the_nearest_setting_wins_then_the_config_then_the_fallback() {
        let mut root = bead("r", None);
        let mid = bead("r.1", Some("r"));
        let leaf = bead("r.1.1", Some("r.1"));
        let config = Config::default();
        let lineage = [mid.clone(), root.clone()];
        let l = Lineage::new(&lineage, Defaults::new(&config, Some("feature")));
        assert_eq!(l.autonomy(&leaf), (Autonomy::Hitl, Source::Fallback));
        assert_eq!(l.target(&leaf), Some("feature"));
        assert_eq!(l.delivery(&leaf), DeliveryMethod::Pr);
        root.pipeline.autonomy = Some(Autonomy::Deep);
        root.pipeline.target = Some("campaign".into());
        let lineage = [mid, root];
        let l = Lineage::new(&lineage, Defaults::new(&config, Some("feature")));
        assert_eq!(
            l.autonomy(&leaf),
            (Autonomy::Deep, Source::Node("r".into()))
        );
        assert_eq!(l.target(&leaf), Some("campaign"));
        assert_eq!(l.root(&leaf).id, "r");
    }

    #[test]
    fn a_parent_cycle_ends_the_walk() {
        let a = bead("a", Some("b"));
        let b = bead("b", Some("a"));
        let find = |id: &str| [&a, &b].into_iter().find(|x| x.id == id);
        assert_eq!(chain(&a, find).count(), MAX_DEPTH);
        let d = Defaults::default();
        assert_eq!(autonomy(chain(&a, find), &d).1, Source::Fallback);
    }
}
