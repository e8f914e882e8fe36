//! The human gate: when a step's floors pass, does the node wait for a person, or does its
//! autonomy relax the gate?
//!
//! `wave` relaxes the spec and implement gates, `deep` also fan-out and integration (the latter
//! only with a campaign branch as its target: never `main` or `master`), as each step's `relax`
//! list says. Planning gates never relax, and the spec step's gate never relaxes while the spec
//! has recorded no verdict.

use crate::model::{Autonomy, Bead, Role, Step};

use super::lineage::{Source, is_mainline};

/// What a passed check meets at the step's gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateOutcome {
    /// The step has no gate.
    Open,
    /// The node's autonomy relaxes it: `level`, supplied by `source`.
    Relaxed {
        /// The level that relaxes it.
        level: Autonomy,
        /// Who supplied the level.
        source: Source,
    },
    /// A person must approve.
    Pending,
}

/// Would `level` pass `step`'s gate for `bead`, whose target is `target`? (A step without a
/// gate passes.)
pub fn relaxes(step: &Step, bead: &Bead, level: Autonomy, target: Option<&str>) -> bool {
    if step.gate.is_none() {
        return true;
    }
    if !step.relaxed_by(level) {
        return false;
    }
    if step.has_role(Role::Spec) && bead.pipeline.verdict.is_none() {
        return false;
    }
    !(step.relax_needs_branch && target.is_none_or(is_mainline))
}

/// The gate a passed check of `step` meets, given the node's resolved autonomy and target.
pub fn at_pass(
    step: &Step,
    bead: &Bead,
    (level, source): (Autonomy, Source),
    target: Option<&str>,
) -> GateOutcome {
    if step.gate.is_none() {
        GateOutcome::Open
    } else if relaxes(step, bead, level, target) {
        GateOutcome::Relaxed { level, source }
    } else {
        GateOutcome::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Manifest, SpecVerdict};

    #[test]
    fn the_edges_of_relaxation() {
        let m = Manifest::default_manifest();
        let mut b = Bead::new("x".into(), "x".into(), String::new(), "t");
        let spec = m.step("generate-spec").unwrap();
        let prp = m.step("create-prp").unwrap();
        let integrate = m.step("integrate").unwrap();
        let review = m.step("review").unwrap();
        assert!(relaxes(review, &b, Autonomy::Hitl, None), "no gate");
        assert!(!relaxes(spec, &b, Autonomy::Deep, None), "no verdict yet");
        b.pipeline.verdict = Some(SpecVerdict::Leaf);
        assert!(relaxes(spec, &b, Autonomy::Wave, None));
        assert!(!relaxes(spec, &b, Autonomy::Hitl, None));
        assert!(!relaxes(prp, &b, Autonomy::Deep, None), "planning");
        assert!(!relaxes(integrate, &b, Autonomy::Deep, Some("main")));
        assert!(!relaxes(integrate, &b, Autonomy::Deep, None));
        assert!(relaxes(integrate, &b, Autonomy::Deep, Some("campaign")));
        assert_eq!(
            at_pass(integrate, &b, (Autonomy::Wave, Source::Config), Some("c")),
            GateOutcome::Pending
        );
        assert_eq!(
            at_pass(review, &b, (Autonomy::Wave, Source::Config), None),
            GateOutcome::Open
        );
    }
}
