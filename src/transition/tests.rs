//! Unit tests of the verbs' plans: pure functions, so no file system, clock or process. Each test
//! builds a bead in memory, runs a plan, and checks the typed change or the typed refusal.

use serde_json::json;

use super::claim::{ClaimArgs, plan_claim};
use super::complete::{Evidence, GateMet, plan};
use super::gate::{plan_approve, plan_reject};
use super::park::plan_park;
use super::propose::{ProposeArgs, plan as plan_propose};
use super::settings::{TargetSet, plan_route, plan_target};
use super::split::{ChildSpec, SplitInput, plan as plan_split};
use super::*;
use crate::floors::{self, Effect};
use crate::model::bead::{
    DeadLetter, Gate, GateState, Lease, SpecVerdict, SplitRecord, Status, Verdict,
};
use crate::model::manifest::FloorKind;
use crate::model::{Autonomy, Kind};
use crate::policy::{Lineage, Source};
use crate::store::Change;

const NOW: &str = "2026-02-03T04:05:06Z";

fn manifest() -> Manifest {
    Manifest::default_manifest()
}

/// A node on `route` at `step`, at seq 3 (entered at 1).
fn node(route: &str, step: &str) -> Bead {
    let mut b = Bead::new("sp-t".into(), "t".into(), String::new(), "then");
    b.pipeline.kind = Kind::for_route(route).unwrap();
    b.pipeline.route = route.into();
    b.pipeline.step = step.into();
    b.pipeline.seq = 3;
    b.pipeline.entered = 1;
    b
}

fn leased(mut b: Bead, holder: &str) -> Bead {
    b.pipeline.lease = Some(Box::new(Lease {
        holder: holder.into(),
        since: "then".into(),
        credential_sha256: None,
        job: None,
    }));
    b
}

fn person() -> Caller<'static> {
    Caller::default()
}

/// Evidence for `bead`'s current step: every floor passed, with `effects`.
fn passed(bead: &Bead, effects: Vec<Effect>) -> Evidence {
    let mut outcome = floors::Outcome::pass(FloorKind::FileExists, "there", json!({}));
    outcome.effects = effects;
    evidence(bead, vec![outcome])
}

fn evidence(bead: &Bead, outcomes: Vec<floors::Outcome>) -> Evidence {
    Evidence {
        step: manifest().step(&bead.pipeline.step).unwrap().clone(),
        pr_url: None,
        opened_pr: false,
        seen_seq: bead.pipeline.seq,
        outcomes,
        read_in: "/repo".into(),
    }
}

fn check(
    bead: &Bead,
    ev: &Evidence,
    ancestors: &[Bead],
    autonomy: Option<Autonomy>,
) -> Result<Change<complete::Checked>, Refusal> {
    let defaults = Defaults {
        autonomy,
        ..Defaults::default()
    };
    plan(
        ev,
        person(),
        bead,
        &Lineage::new(ancestors, defaults),
        &manifest(),
        NOW,
    )
}

/// The only after-image of a one-bead change, which must keep the seq it was read with.
fn only(change: &Change<impl Sized>, read: &Bead) -> Bead {
    assert_eq!(change.beads.len(), 1);
    let after = change.beads[0].clone();
    assert_eq!(after.pipeline.seq, read.pipeline.seq, "a plan never bumps");
    after
}

#[test]
fn a_closed_bead_refuses_every_moving_verb() {
    let mut b = node("leaf", "implement");
    b.status = Status::Closed;
    let args = ProposeArgs {
        step: "implement".into(),
        artifact: "a".into(),
        ..ProposeArgs::default()
    };
    let refusals = [
        plan_propose(&args, person(), &b, NOW).unwrap_err(),
        check(&b, &passed(&b, vec![]), &[], None).unwrap_err(),
        plan_park("stuck", person(), &b, NOW).unwrap_err(),
        plan_approve(Some("implement"), person(), &b, &manifest(), NOW).unwrap_err(),
    ];
    for r in refusals {
        assert_eq!(r.kind(), "closed");
        assert_eq!(r.to_string(), "bead sp-t is closed");
    }
}

#[test]
fn the_wrong_step_is_refused_naming_both() {
    let b = node("leaf", "implement");
    let args = ProposeArgs {
        step: "review".into(),
        artifact: "a".into(),
        ..ProposeArgs::default()
    };
    let r = plan_propose(&args, person(), &b, NOW).unwrap_err();
    assert_eq!(r.kind(), "wrong-step");
    assert_eq!(r.to_string(), "bead sp-t is at step implement, not review");
}

#[test]
fn a_foreign_lease_refuses_a_person_and_another_holder_but_not_its_own() {
    let b = leased(node("leaf", "implement"), "runner-1");
    let args = ProposeArgs {
        step: "implement".into(),
        artifact: "a".into(),
        ..ProposeArgs::default()
    };
    let other = Caller {
        holder: Some("runner-2"),
        ..Caller::default()
    };
    for who in [person(), other] {
        let r = plan_propose(&args, who, &b, NOW).unwrap_err();
        assert_eq!(r.kind(), "foreign-lease", "{who:?}");
        assert!(r.to_string().contains("claimed by runner-1 since then"));
    }
    let own = Caller {
        holder: Some("runner-1"),
        ..Caller::default()
    };
    let change = plan_propose(&args, own, &b, NOW).unwrap();
    let after = only(&change, &b);
    let proposal = after.pipeline.proposal.unwrap();
    assert_eq!((proposal.seq, proposal.at.as_str()), (4, NOW));
    assert_eq!(change.output.seq, 4);
    // A holder whose claim is gone is told so.
    let lost = plan_propose(&args, own, &node("leaf", "implement"), NOW).unwrap_err();
    assert_eq!(lost.kind(), "claim-lost");
}

#[test]
fn a_check_refuses_when_the_bead_moved_while_its_floors_ran() {
    let b = node("leaf", "implement");
    let mut ev = passed(&b, vec![]);
    ev.seen_seq = 2;
    let r = check(&b, &ev, &[], None).unwrap_err();
    assert_eq!(r.kind(), "stale-seq");
    assert_eq!(
        r.to_string(),
        "bead sp-t changed while its floors ran (seq 2 → 3); run the check again"
    );
    let cas = require_seq(&b, Some(2)).unwrap_err();
    assert_eq!(
        cas.to_string(),
        "bead sp-t changed: its seq is 3, expected 2"
    );
    assert!(require_seq(&b, Some(3)).is_ok() && require_seq(&b, None).is_ok());
}

#[test]
fn a_person_only_verb_refuses_a_dispatched_session() {
    let mut b = node("leaf", "implement");
    b.pipeline.gate = Some(Box::new(pending("implement", 2)));
    let dispatched = Caller {
        dispatched: true,
        ..Caller::default()
    };
    let r = plan_approve(Some("implement"), dispatched, &b, &manifest(), NOW).unwrap_err();
    assert_eq!(r.kind(), "not-a-person");
    assert!(r.to_string().starts_with("`approve` is a person's verb"));
    assert!(plan_approve(Some("implement"), person(), &b, &manifest(), NOW).is_ok());
}

fn pending(step: &str, seq: u64) -> Gate {
    Gate {
        step: step.into(),
        state: GateState::Pending,
        seq,
        by: None,
        autonomy: None,
        supplied_by: None,
        route: None,
        land: None,
        at: "then".into(),
    }
}

#[test]
fn approve_needs_a_gate_pending_since_entry_and_then_advances() {
    let mut b = node("leaf", "implement");
    let r = plan_approve(Some("implement"), person(), &b, &manifest(), NOW).unwrap_err();
    assert_eq!(r.kind(), "nothing-pending");
    // A gate from before the node entered the step does not count.
    b.pipeline.gate = Some(Box::new(pending("implement", 1)));
    assert!(plan_approve(Some("implement"), person(), &b, &manifest(), NOW).is_err());
    b.pipeline.gate = Some(Box::new(pending("implement", 2)));
    let change = plan_approve(Some("implement"), person(), &b, &manifest(), NOW).unwrap();
    let after = only(&change, &b);
    assert_eq!(after.pipeline.step, "generate-tests");
    assert_eq!(after.pipeline.entered, 4);
    let gate = after.pipeline.gate.unwrap();
    assert_eq!(
        (gate.state, gate.by.as_deref()),
        (GateState::Approved, Some("person"))
    );
    assert_eq!(change.output.next.as_deref(), Some("generate-tests"));
}

/// Without `--step`, a gate verb acts on the gate pending on the bead; with none pending it is
/// refused, naming the step the bead is at.
#[test]
fn approve_without_a_step_takes_the_pending_gate_and_refuses_when_none_is() {
    let mut b = node("leaf", "implement");
    let r = plan_approve(None, person(), &b, &manifest(), NOW).unwrap_err();
    assert_eq!(r.kind(), "nothing-pending");
    assert!(
        r.to_string().contains("at step implement") && r.to_string().contains("--step"),
        "{r}"
    );
    // A gate from before the node entered the step is not pending on it.
    b.pipeline.gate = Some(Box::new(pending("implement", 1)));
    assert_eq!(
        plan_approve(None, person(), &b, &manifest(), NOW)
            .unwrap_err()
            .kind(),
        "nothing-pending"
    );
    b.pipeline.gate = Some(Box::new(pending("implement", 2)));
    let change = plan_approve(None, person(), &b, &manifest(), NOW).unwrap();
    assert_eq!(change.output.step, "implement");
    assert_eq!(only(&change, &b).pipeline.step, "generate-tests");
    let r = plan_reject(
        None,
        "not yet",
        person(),
        &node("leaf", "implement"),
        &manifest(),
        NOW,
    )
    .unwrap_err();
    assert_eq!(r.kind(), "nothing-pending");
    let change = plan_reject(None, "not yet", person(), &b, &manifest(), NOW).unwrap();
    assert_eq!(change.output.step, "implement");
}

#[test]
fn a_passing_check_at_a_gate_waits_for_a_person_unless_autonomy_relaxes_it() {
    let mut b = node("leaf", "implement");
    b.pipeline.verdict = Some(SpecVerdict::Leaf);
    let ev = passed(&b, vec![]);

    let change = check(&b, &ev, &[], None).unwrap();
    let after = only(&change, &b);
    assert_eq!(change.output.gate, Some(GateMet::Pending));
    assert_eq!(
        (after.pipeline.step.as_str(), change.output.next.clone()),
        ("implement", None)
    );
    assert_eq!(after.pipeline.gate.unwrap().state, GateState::Pending);
    assert_eq!(after.pipeline.last_check.unwrap().verdict, Verdict::Pass);

    let mut root = node("root", "delegate");
    root.id = "sp-r".into();
    root.pipeline.autonomy = Some(Autonomy::Wave);
    let change = check(&b, &ev, &[root], None).unwrap();
    let after = only(&change, &b);
    let relaxed = GateMet::Relaxed {
        autonomy: Autonomy::Wave,
        supplied_by: "sp-r".into(),
    };
    assert_eq!(change.output.gate, Some(relaxed));
    assert_eq!(after.pipeline.step, "generate-tests");
    let gate = after.pipeline.gate.unwrap();
    assert_eq!(gate.supplied_by.as_deref(), Some("sp-r"));
    assert_eq!(
        serde_json::to_value(&change.output.gate).unwrap(),
        json!({ "state": "relaxed", "autonomy": "wave", "supplied_by": "sp-r" })
    );
}

#[test]
fn a_compound_spec_reroutes_a_leaf_onto_the_compound_route() {
    let b = node("leaf", "generate-spec");
    let mut spec = floors::Outcome::pass(FloorKind::Spec, "spec", json!({"verdict": "compound"}));
    spec.effects = vec![Effect::SetVerdict(SpecVerdict::Compound)];
    let ev = evidence(&b, vec![spec]);
    let change = check(&b, &ev, &[], Some(Autonomy::Wave)).unwrap();
    let after = only(&change, &b);
    assert_eq!(after.pipeline.kind, Kind::Compound);
    assert_eq!(after.pipeline.route, "compound");
    assert_eq!(after.pipeline.step, "to-issues");
    let gate = after.pipeline.gate.unwrap();
    assert_eq!(
        gate.supplied_by.as_deref(),
        Some(Source::Config.label().as_str())
    );
    // Without a verdict the spec gate never relaxes, whatever the level.
    let change = check(&b, &passed(&b, vec![]), &[], Some(Autonomy::Deep)).unwrap();
    assert_eq!(change.output.gate, Some(GateMet::Pending));
}

#[test]
fn passing_the_last_step_closes_the_node_in_the_same_change() {
    let b = leased(node("leaf", "deliver"), "runner-1");
    let ev = passed(&b, vec![]);
    let own = Caller {
        holder: Some("runner-1"),
        run: Some("run-7"),
        ..Caller::default()
    };
    let lineage = Lineage::new(&[], Defaults::default());
    let change = plan(&ev, own, &b, &lineage, &manifest(), NOW).unwrap();
    let after = only(&change, &b);
    assert!(after.is_closed() && change.output.closed);
    assert_eq!(change.output.next, None);
    assert_eq!(after.closed_at.as_deref(), Some(NOW));
    assert_eq!(after.pipeline.lease, None, "closing drops the lease");
    assert_eq!(
        after.pipeline.last_check.unwrap().run.as_deref(),
        Some("run-7")
    );
    assert_eq!(
        change.reason.as_deref(),
        Some("deliver: deliver: every floor passed")
    );
}

#[test]
fn a_refused_check_is_recorded_and_may_send_the_node_back() {
    let b = node("leaf", "review");
    let mut refused = floors::Outcome::refuse(FloorKind::Review, "FAIL", json!({}));
    refused.effects = vec![Effect::SendBack {
        step: "implement".into(),
        guidance: "add tests".into(),
    }];
    let change = check(&b, &evidence(&b, vec![refused]), &[], None).unwrap();
    let after = only(&change, &b);
    assert_eq!(change.output.verdict, Verdict::Refuse);
    assert_eq!(change.output.reason, "review: FAIL");
    assert_eq!(change.output.next.as_deref(), Some("implement"));
    assert_eq!(after.pipeline.guidance.as_deref(), Some("add tests"));
    assert_eq!(after.pipeline.step, "implement");

    let escalated = floors::Outcome::escalate(FloorKind::Suite, "no suite_cmd", json!({}));
    let b = node("root", "integrate");
    let change = check(&b, &evidence(&b, vec![escalated]), &[], None).unwrap();
    let after = only(&change, &b);
    assert_eq!(change.output.verdict, Verdict::Escalate);
    assert_eq!(
        (after.pipeline.step.as_str(), change.output.gate.clone()),
        ("integrate", None)
    );
}

#[test]
fn declared_scenarios_of_a_node_under_a_campaign_land_on_its_root_first() {
    let mut root = node("root", "delegate");
    root.id = "sp-r".into();
    let mut b = node("compound", "generate-spec");
    b.parent = Some("sp-r".into());
    let ev = passed(&b, vec![Effect::SetScenarios(vec!["S1".into()])]);
    let change = check(&b, &ev, std::slice::from_ref(&root), None).unwrap();
    let ids: Vec<&str> = change.beads.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(ids, ["sp-r", "sp-t"]);
    assert_eq!(change.beads[0].pipeline.scenarios, ["S1"]);
    assert_eq!(change.beads[0].pipeline.seq, root.pipeline.seq);
}

#[test]
fn a_loop_steps_claim_counts_this_visits_iterations_under_max_turns() {
    let m = manifest();
    let mut step = m.step("implement").unwrap().clone();
    step.loop_ = Some(serde_json::from_str(r#"{"max_iterations": 2}"#).unwrap());
    let mut b = node("leaf", "implement");
    let args = |max_turns| ClaimArgs {
        holder: "h",
        dispatch: Some(&step),
        base: Some("abc"),
        credential_sha256: None,
        max_turns,
    };
    // Two iterations used on an earlier visit, then the node entered the step again.
    b.pipeline.attempts.insert("implement", 2);
    b.enter_step("implement", 3, NOW);
    let change = plan_claim(&args(None), &b, NOW).unwrap();
    assert_eq!(
        change.output.wrote.unwrap().attempt,
        Some(3),
        "numbered over the node's life"
    );
    b.pipeline.attempts.insert("implement", 4);
    assert_eq!(
        plan_claim(&args(None), &b, NOW).unwrap_err().kind(),
        "attempts-exhausted"
    );
    // `--max-turns 3` in place of max_iterations 2.
    assert!(plan_claim(&args(Some(3)), &b, NOW).is_ok());
}

#[test]
fn claims_count_attempts_and_refuse_parked_or_exhausted_steps() {
    let m = manifest();
    let step = m.step("implement").unwrap();
    let mut b = node("leaf", "implement");
    let dispatch = ClaimArgs {
        holder: "h",
        dispatch: Some(step),
        base: Some("abc"),
        credential_sha256: None,
        max_turns: None,
    };
    let change = plan_claim(&dispatch, &b, NOW).unwrap();
    let after = only(&change, &b);
    assert_eq!(after.attempts_on("implement"), 1);
    assert_eq!(after.pipeline.last_dispatch.unwrap().seq, 4);
    assert_eq!(change.output.wrote.unwrap().attempt, Some(1));

    // A loop step's limit is its iterations (the default implement's 5), not `max_attempts`.
    b.pipeline
        .attempts
        .insert("implement", step.dispatch_limit(None));
    let r = plan_claim(&dispatch, &b, NOW).unwrap_err();
    assert_eq!(r.kind(), "attempts-exhausted");
    b.pipeline.dead_letter = Some(Box::new(DeadLetter {
        step: "implement".into(),
        reason: "stuck".into(),
        seq: 2,
        at: "then".into(),
    }));
    let r = plan_claim(&dispatch, &b, NOW).unwrap_err();
    assert_eq!(
        r.to_string(),
        "bead sp-t is parked (stuck); unpark it first"
    );
    assert_eq!(
        plan_park("again", person(), &b, NOW).unwrap_err().kind(),
        "already-parked"
    );
}

#[test]
fn a_split_creates_new_children_first_and_splits_once() {
    let parent = node("root", "to-issues");
    let children = vec![
        ChildSpec {
            title: "A".into(),
            description: String::new(),
            scenarios: vec!["S1".into()],
            files: vec![],
            depends_on: vec![],
            priority: None,
        };
        2
    ];
    let taken = Default::default();
    let input = SplitInput {
        children: &children,
        entry: "generate-spec",
        taken: &taken,
        split_step: Some("to-issues"),
    };
    let change = plan_split(&input, person(), &parent, NOW).unwrap();
    let ids: Vec<&str> = change.beads.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(ids, ["sp-t.1", "sp-t.2", "sp-t"]);
    assert!(change.beads[..2].iter().all(|c| c.pipeline.seq == 0));
    assert_eq!(change.beads[0].pipeline.provenance.as_ref().unwrap().seq, 4);

    let taken = ["sp-t.2".to_string()].into();
    let clash = SplitInput {
        taken: &taken,
        ..input
    };
    let r = plan_split(&clash, person(), &parent, NOW).unwrap_err();
    assert_eq!(r.to_string(), "bead sp-t.2 already exists");
    let mut split = parent.clone();
    split.pipeline.split = Some(Box::new(SplitRecord {
        children: vec!["sp-t.1".into()],
        seq: 2,
    }));
    let r = plan_split(&input, person(), &split, NOW).unwrap_err();
    assert_eq!(r.kind(), "already-split");
    let r = plan_split(&input, person(), &node("leaf", "generate-spec"), NOW).unwrap_err();
    assert_eq!(r.kind(), "leaf-split");
    // Only at the step that splits: not at create-prp, and nowhere without a split step.
    let r = plan_split(&input, person(), &node("root", "create-prp"), NOW).unwrap_err();
    assert_eq!(r.kind(), "not-a-split-step");
    assert_eq!(
        r.to_string(),
        "bead sp-t is at create-prp, which does not split; a node splits at to-issues"
    );
    let nowhere = SplitInput {
        split_step: None,
        ..input
    };
    let r = plan_split(&nowhere, person(), &parent, NOW).unwrap_err();
    assert!(r.to_string().contains("`\"role\": \"split\"`"), "{r}");
}

#[test]
fn deep_work_never_targets_main_and_routes_must_exist() {
    let mut b = node("leaf", "implement");
    b.pipeline.autonomy = Some(Autonomy::Deep);
    let lineage = Lineage::new(&[], Defaults::default());
    let to = |target: &str| TargetSet {
        bead: "sp-t".into(),
        target: target.into(),
        delivery: None,
    };
    let r = plan_target(to("main"), person(), &b, &lineage).unwrap_err();
    assert_eq!(r.kind(), "deep-on-mainline");
    assert!(plan_target(to("campaign"), person(), &b, &lineage).is_ok());

    let m = manifest();
    let r = plan_route("nowhere", None, person(), &b, &m, NOW).unwrap_err();
    assert_eq!(r.kind(), "unknown-route");
    let r = plan_route("compound", Some("implement"), person(), &b, &m, NOW).unwrap_err();
    assert_eq!(r.to_string(), "step \"implement\" is not on route compound");
    let change = plan_route("compound", None, person(), &b, &m, NOW).unwrap();
    assert_eq!(only(&change, &b).pipeline.kind, Kind::Compound);
}

#[test]
fn refusal_kinds_are_kebab_case_and_escalation_reads_as_such() {
    let r = Refusal::NotParked { bead: "x".into() };
    assert!(
        r.kind()
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c == b'-')
    );
    assert_eq!(r.headline(), "refused");
    assert!(!r.recorded());
    let b = node("root", "integrate");
    let escalated = floors::Outcome::escalate(FloorKind::Suite, "no suite_cmd", json!({}));
    let checked = check(&b, &evidence(&b, vec![escalated]), &[], None)
        .unwrap()
        .output;
    let r = Refusal::FloorEscalated(Box::new(checked));
    assert_eq!((r.kind(), r.headline()), ("floor-escalated", "escalated"));
    assert_eq!(
        crate::Error::Refused(r).to_string(),
        "escalated: suite: no suite_cmd"
    );
}

fn in_call(mut b: Bead) -> Bead {
    b.pipeline.calls.push(crate::model::bead::CallFrame {
        callee: "leaf".into(),
        route: "compound".into(),
        kind: Kind::Compound,
        step: "generate-spec".into(),
        return_to: "to-issues".into(),
        seq: 1,
        at: "then".into(),
    });
    b
}

#[test]
fn passing_the_last_step_inside_a_call_returns_to_the_caller_instead_of_closing() {
    let b = in_call(node("leaf", "deliver"));
    let change = check(&b, &passed(&b, vec![]), &[], None).unwrap();
    let after = only(&change, &b);
    assert!(!after.is_closed() && !change.output.closed);
    assert_eq!(change.output.next.as_deref(), Some("to-issues"));
    let p = &after.pipeline;
    assert_eq!(
        (p.route.as_str(), p.step.as_str(), p.kind),
        ("compound", "to-issues", Kind::Compound)
    );
    assert!(p.calls.is_empty(), "the frame popped");
    assert_eq!(
        p.entered,
        b.pipeline.seq + 1,
        "a new entry, at the transition's seq"
    );
    let record = p.routing.last().unwrap();
    assert_eq!(
        (record.effect.as_str(), record.when.as_str(), record.depth),
        ("return", "accepted", Some(0))
    );
    assert_eq!(
        (record.from_route.as_str(), record.to_step.as_deref()),
        ("leaf", Some("to-issues"))
    );
    let guidance = p.guidance.as_deref().unwrap();
    assert!(
        guidance.starts_with("Route leaf (called from generate-spec) returned after deliver"),
        "{guidance}"
    );
}

#[test]
fn a_frame_that_cannot_return_parks_and_every_park_inside_a_call_names_it() {
    let mut b = in_call(node("leaf", "deliver"));
    b.pipeline.calls[0].return_to = "nowhere".into();
    let change = check(&b, &passed(&b, vec![]), &[], None).unwrap();
    let after = only(&change, &b);
    assert!(!after.is_closed());
    let parked = after.pipeline.dead_letter.as_ref().unwrap();
    assert!(
        parked.reason.contains("pipeline.calls[0].return_to")
            && parked
                .reason
                .contains("inside a call: route leaf was called from generate-spec"),
        "{}",
        parked.reason
    );
    assert_eq!(
        after.pipeline.routing.last().unwrap().effect,
        RoutingEffect::Park
    );

    let b = in_call(node("leaf", "implement"));
    let change = plan_park("attempts exhausted", person(), &b, NOW).unwrap();
    let after = only(&change, &b);
    let want = "attempts exhausted (inside a call: route leaf was called from generate-spec \
                (route compound) and returns to to-issues)";
    assert_eq!(after.pipeline.dead_letter.as_ref().unwrap().reason, want);
    assert_eq!(change.output.reason, want);
    assert_eq!(change.reason.as_deref(), Some(want), "the journal's too");
    assert_eq!(after.pipeline.calls.len(), 1, "parking keeps the frame");
}

#[test]
fn a_persons_route_leaves_open_calls_and_guidance_behind() {
    let mut b = in_call(node("leaf", "implement"));
    b.pipeline.guidance = Some("from a branch".into());
    let change = plan_route("compound", None, person(), &b, &manifest(), NOW).unwrap();
    let after = only(&change, &b);
    assert!(after.pipeline.calls.is_empty() && after.pipeline.guidance.is_none());
    assert_eq!(
        change.reason.as_deref(),
        Some("routed to compound at generate-spec, leaving 1 open call(s)")
    );
}
