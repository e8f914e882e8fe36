//! `skip`: move a node past an `optional: true` step that cannot run (its command is not
//! available), recording the step as not applicable and why. A required step is never skipped.
//!
//! The step is recorded as the node's last check, verdict `pass` with the evidence
//! `{"status": "not-applicable", "reason": …}` (as an optional SARIF floor whose tool is absent
//! passes), and the node goes on as its route declares ([`declared`]): to the next step, or
//! closed on the route's last. The step's result branches (`on_result`) do not fire: a skipped
//! step has no result to read.

use serde::Serialize;
use serde_json::json;

use super::{
    Caller, Ctx, Refusal, Verb, declared, next_seq, require_not_foreign, require_open, require_step,
};
use crate::error::{Error, Result};
use crate::model::bead::{Check, GateState, Verdict};
use crate::model::{Bead, Manifest};
use crate::store::{Change, Reads};

/// A skipped step.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Skipped {
    pub bead: String,
    pub step: String,
    /// Always `true`.
    pub skipped: bool,
    /// Always `not-applicable`.
    pub status: &'static str,
    pub reason: String,
    /// The step entered, or `None` when the node closed.
    pub next: Option<String>,
    pub closed: bool,
}

/// Skip `step` of `id`, which must be the node's step and `optional: true`, because `reason`.
pub fn skip(ctx: &Ctx, id: &str, step: &str, reason: &str) -> Result<Skipped> {
    ctx.admit(Verb::Skip)?;
    if reason.trim().is_empty() {
        return Err(Error::Invalid(
            "--reason must say why the step is not applicable".into(),
        ));
    }
    let manifest = ctx.store.manifest()?;
    let input = SkipInput { step, reason };
    ctx.apply(Verb::Skip, &Reads::subject(id), |fresh, who| {
        Ok(plan_skip(&input, who, &fresh.subject, &manifest, &ctx.now)?)
    })
}

/// What `skip` was asked.
pub struct SkipInput<'a> {
    pub step: &'a str,
    pub reason: &'a str,
}

/// Record `input.step` of `bead` as not applicable and advance as the route declares.
pub fn plan_skip(
    input: &SkipInput,
    who: Caller,
    bead: &Bead,
    manifest: &Manifest,
    now: &str,
) -> Result<Change<Skipped>, Refusal> {
    who.admit(Verb::Skip)?;
    require_open(bead)?;
    require_step(bead, input.step)?;
    require_not_foreign(bead, who.holder)?;
    if let Some(dl) = &bead.pipeline.dead_letter {
        return Err(Refusal::Parked {
            bead: bead.id.to_string(),
            reason: dl.reason.clone(),
        });
    }
    let refuse_required = || Refusal::RequiredStep {
        bead: bead.id.to_string(),
        step: input.step.to_string(),
    };
    if !manifest
        .step(input.step)
        .ok_or_else(refuse_required)?
        .optional
    {
        return Err(refuse_required());
    }
    if bead
        .gate_on_step()
        .is_some_and(|g| g.state == GateState::Pending)
    {
        return Err(Refusal::GatePending {
            bead: bead.id.to_string(),
            step: input.step.to_string(),
        });
    }
    let seq = next_seq(bead);
    let mut after = bead.clone();
    after.pipeline.last_check = Some(Box::new(Check {
        step: input.step.to_string(),
        seq,
        verdict: Verdict::Pass,
        reason: format!("not applicable: {}", input.reason),
        evidence: json!({"status": "not-applicable", "reason": input.reason}),
        run: Some(who.run.map_or_else(|| who.actor(), str::to_string)),
        awaiting_merge: false,
        recheck: false,
        at: now.to_string(),
    }));
    after.pipeline.guidance = None;
    let next = declared(&mut after, manifest, "skipped", seq, now);
    let output = Skipped {
        bead: bead.id.to_string(),
        step: input.step.to_string(),
        skipped: true,
        status: "not-applicable",
        reason: input.reason.to_string(),
        next,
        closed: after.is_closed(),
    };
    let journal = format!("not applicable: {} ({})", input.step, input.reason);
    Ok(Change::one(after, Some(journal), output))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Kind;
    use crate::model::bead::RoutingEffect;

    const NOW: &str = "2026-02-03T04:05:06Z";

    fn node(step: &str) -> Bead {
        let mut b = Bead::new("sp-t".into(), "t".into(), String::new(), "then");
        b.pipeline.kind = Kind::Leaf;
        b.pipeline.route = "leaf".into();
        b.pipeline.step = step.into();
        b.pipeline.seq = 3;
        b.pipeline.entered = 1;
        b
    }

    fn skip(bead: &Bead, step: &str) -> Result<Change<Skipped>, Refusal> {
        let input = SkipInput {
            step,
            reason: "`spec-tool` is not on PATH",
        };
        let manifest = Manifest::default_manifest();
        plan_skip(&input, Caller::default(), bead, &manifest, NOW)
    }

    #[test]
    fn an_optional_step_is_recorded_not_applicable_and_the_route_goes_on() {
        let bead = node("generate-spec");
        let change = skip(&bead, "generate-spec").unwrap();
        let after = &change.beads[0];
        assert_eq!(after.pipeline.step, "implement");
        assert_eq!(after.pipeline.entered, 4);
        let check = after.pipeline.last_check.as_ref().unwrap();
        assert_eq!(check.step, "generate-spec");
        assert_eq!(check.verdict, Verdict::Pass);
        assert_eq!(check.evidence["status"], "not-applicable");
        assert_eq!(check.reason, "not applicable: `spec-tool` is not on PATH");
        assert_eq!(change.output.next.as_deref(), Some("implement"));
        assert!(!change.output.closed);
        assert_eq!(
            change.reason.as_deref(),
            Some("not applicable: generate-spec (`spec-tool` is not on PATH)")
        );
    }

    #[test]
    fn a_required_step_a_wrong_step_and_a_pending_gate_are_refused() {
        let bead = node("implement");
        assert_eq!(
            skip(&bead, "implement").unwrap_err().kind(),
            "required-step"
        );
        assert_eq!(
            skip(&bead, "generate-spec").unwrap_err().kind(),
            "wrong-step"
        );
        let mut gated = node("generate-spec");
        gated.pipeline.gate = Some(Box::new(crate::model::bead::Gate {
            step: "generate-spec".into(),
            state: GateState::Pending,
            seq: 2,
            by: None,
            autonomy: None,
            supplied_by: None,
            route: None,
            land: None,
            at: "then".into(),
        }));
        assert_eq!(
            skip(&gated, "generate-spec").unwrap_err().kind(),
            "gate-pending"
        );
    }

    #[test]
    fn skipping_a_called_routes_last_step_returns_from_the_call() {
        let mut v: serde_json::Value =
            serde_json::from_str(crate::model::manifest::DEFAULT_MANIFEST).unwrap();
        v["routes"]["spec-only"] = json!(["generate-spec"]);
        v["route_kinds"]["spec-only"] = json!("leaf");
        let manifest = Manifest::parse(&v.to_string()).unwrap();
        let mut bead = node("generate-spec");
        bead.pipeline.route = "spec-only".into();
        bead.pipeline.calls.push(crate::model::bead::CallFrame {
            callee: "spec-only".into(),
            route: "leaf".into(),
            kind: Kind::Leaf,
            step: "review".into(),
            return_to: "implement".into(),
            seq: 2,
            at: "then".into(),
        });
        let input = SkipInput {
            step: "generate-spec",
            reason: "no spec tool",
        };
        let change = plan_skip(&input, Caller::default(), &bead, &manifest, NOW).unwrap();
        let after = &change.beads[0];
        assert_eq!(
            (after.pipeline.route.as_str(), after.pipeline.step.as_str()),
            ("leaf", "implement")
        );
        assert!(after.pipeline.calls.is_empty() && !change.output.closed);
        let back = after.pipeline.routing.last().unwrap();
        assert_eq!(
            (back.effect, back.when.as_str()),
            (RoutingEffect::Return, "skipped")
        );
        let guidance = after.pipeline.guidance.as_deref().unwrap();
        assert!(
            guidance.ends_with("(no response recorded; its check: not applicable: no spec tool)"),
            "{guidance}"
        );
    }
}
