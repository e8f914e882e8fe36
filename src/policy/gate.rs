//! The human gate: when a step's floors pass, does the node wait for a person, or does its
//! autonomy relax the gate? Every rule of it is here.
//!
//! - **A step's gate** ([`relaxes`], [`at_pass`]): `wave` relaxes the spec and implement gates,
//!   `deep` also fan-out and integration (the latter only with a campaign branch as its target:
//!   never `main` or `master`), as each step's `relax` list says. Planning gates never relax,
//!   and the spec step's gate never relaxes while the spec has recorded no verdict.
//! - **A route gate** (a result branch's `suggest_route`) is a person's choice, and **a landing
//!   gate** a person's approval: no level relaxes either ([`pending_relaxes`]).
//! - **When a landing needs a gate at all** ([`landing_needs_approval`]): its target is the main
//!   line, in `[delivery] protected`, or a remote's default branch, at any autonomy; or the
//!   step's own gate would wait for a person at the node's autonomy.

use crate::model::bead::Gate;
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

/// Would the node's autonomy relax the `gate` pending on its step (`step`, when declared)? A
/// route or landing gate: never. `None`: the step is not declared, so nothing is known.
pub fn pending_relaxes(
    gate: &Gate,
    step: Option<&Step>,
    bead: &Bead,
    level: Autonomy,
    target: Option<&str>,
) -> Option<bool> {
    if gate.route.is_some() || gate.land.is_some() {
        return Some(false);
    }
    step.map(|s| relaxes(s, bead, level, target))
}

/// Why landing `bead`'s work on `target` at `step` needs a person's approval first, or `None`
/// when it does not. `protected` is `[delivery] protected`; `remote_mains` the remotes' default
/// branches (the caller reads them from git).
pub fn landing_needs_approval(
    target: &str,
    (protected, remote_mains): (&[String], &[String]),
    step: &Step,
    bead: &Bead,
    (level, source): (Autonomy, Source),
) -> Option<String> {
    if is_mainline(target) {
        return Some(format!("`{target}` is the main line"));
    }
    if protected.iter().any(|p| p == target) {
        return Some(format!("`{target}` is protected (`[delivery] protected`)"));
    }
    if remote_mains.iter().any(|m| m == target) {
        return Some(format!("`{target}` is a remote's default branch"));
    }
    let at_gate = at_pass(step, bead, (level, source), Some(target));
    (at_gate == GateOutcome::Pending).then(|| {
        format!(
            "the {} gate waits for a person at {} autonomy",
            step.name,
            level.as_str()
        )
    })
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

    #[test]
    fn no_level_relaxes_a_route_or_landing_gate_and_protected_targets_always_ask() {
        use crate::model::bead::{GateLand, GateState};
        let m = Manifest::default_manifest();
        let b = Bead::new("x".into(), "x".into(), String::new(), "t");
        let integrate = m.step("integrate").unwrap();
        let mut g = Gate {
            step: "integrate".into(),
            state: GateState::Pending,
            seq: 1,
            by: None,
            autonomy: None,
            supplied_by: None,
            route: None,
            land: None,
            at: "t".into(),
        };
        let deep = Autonomy::Deep;
        assert_eq!(
            pending_relaxes(&g, Some(integrate), &b, deep, Some("c")),
            Some(true)
        );
        assert_eq!(pending_relaxes(&g, None, &b, deep, Some("c")), None);
        g.land = Some(GateLand {
            sha: "abc".into(),
            target: "c".into(),
        });
        assert_eq!(
            pending_relaxes(&g, Some(integrate), &b, deep, Some("c")),
            Some(false)
        );
        g.land = None;
        g.route = Some("planning".into());
        assert_eq!(
            pending_relaxes(&g, Some(integrate), &b, deep, Some("c")),
            Some(false)
        );

        let at = (deep, Source::Config);
        let none: &[String] = &[];
        let ask = |target, protected: &[String], mains: &[String]| {
            landing_needs_approval(target, (protected, mains), integrate, &b, at.clone())
        };
        assert!(ask("main", none, none).unwrap().contains("main line"));
        let listed = ["release".to_string()];
        assert!(ask("release", &listed, none).unwrap().contains("protected"));
        let mains = ["trunk".to_string()];
        assert!(
            ask("trunk", none, &mains)
                .unwrap()
                .contains("default branch")
        );
        assert_eq!(
            ask("campaign/x", none, none),
            None,
            "deep relaxes integrate there"
        );
        let wave = landing_needs_approval(
            "campaign/x",
            (none, none),
            integrate,
            &b,
            (Autonomy::Wave, Source::Config),
        );
        assert!(wave.unwrap().contains("waits for a person at wave"));
    }
}
