//! The writer and `decide` agree on the human gate. For random nodes and lineages, the gate the
//! writer's pure `complete` plan meets on a passing check (relaxed, or pending for a person) is
//! the `relaxes` hint `decide` reports (rule 11) for the same node waiting at a pending gate on
//! that step; and when the gate relaxes, both name the same level and the same supplier.

use proptest::prelude::*;
use serde_json::json;

use splice::decide::decide;
use splice::floors::Outcome;
use splice::model::bead::{Gate, GateState, SpecVerdict};
use splice::model::manifest::FloorKind;
use splice::model::{Autonomy, Bead, Kind, Manifest, Rest, Snapshot};
use splice::policy::{Defaults, Lineage};
use splice::transition::Caller;
use splice::transition::complete::{Evidence, GateMet, plan};

const NOW: &str = "2026-01-01T00:00:00Z";

/// One node's own settings: autonomy level and target.
type Own = (Option<Autonomy>, Option<String>);

#[derive(Clone, Debug)]
struct Case {
    /// Which gated (route, step) of the default manifest, modulo their number.
    place: usize,
    node: Own,
    /// Nearest first.
    ancestors: Vec<Own>,
    autonomy_default: Option<Autonomy>,
    delivery_target: Option<String>,
    branch: Option<String>,
    verdict: Option<SpecVerdict>,
}

fn level() -> impl Strategy<Value = Option<Autonomy>> {
    proptest::option::of(prop_oneof![
        Just(Autonomy::Hitl),
        Just(Autonomy::Wave),
        Just(Autonomy::Deep),
    ])
}

/// `main`, `master`, a campaign branch, or none.
fn branch() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(prop_oneof![
        Just("main".to_string()),
        Just("master".to_string()),
        Just("campaign/calc".to_string()),
    ])
}

fn case() -> impl Strategy<Value = Case> {
    (
        0..64usize,
        (level(), branch()),
        proptest::collection::vec((level(), branch()), 0..4),
        (level(), branch(), branch()),
        proptest::option::of(prop_oneof![
            Just(SpecVerdict::Leaf),
            Just(SpecVerdict::Compound)
        ]),
    )
        .prop_map(
            |(place, node, ancestors, (default, target, branch), verdict)| Case {
                place,
                node,
                ancestors,
                autonomy_default: default,
                delivery_target: target,
                branch,
                verdict,
            },
        )
}

/// Every (route, step) of the default manifest whose step has a human gate.
fn gated_places(m: &Manifest) -> Vec<(String, String)> {
    let mut places = Vec::new();
    for (route, steps) in &m.routes {
        for step in steps {
            if m.step(step).is_some_and(|s| s.gate.is_some()) {
                places.push((route.clone(), step.clone()));
            }
        }
    }
    places
}

fn bead(id: &str, (autonomy, target): &Own) -> Bead {
    let mut b = Bead::new(id.into(), id.into(), String::new(), NOW);
    b.pipeline.autonomy = *autonomy;
    b.pipeline.target = target.as_deref().map(Into::into);
    b
}

/// The node at `route`/`step` and its ancestors (nearest first), chained by `parent`.
fn lineage_of(case: &Case, route: &str, step: &str) -> (Bead, Vec<Bead>) {
    let ids: Vec<String> = (0..case.ancestors.len())
        .map(|i| format!("sp-a{i}"))
        .collect();
    let mut ancestors: Vec<Bead> = case
        .ancestors
        .iter()
        .zip(&ids)
        .map(|(own, id)| bead(id, own))
        .collect();
    for (i, a) in ancestors.iter_mut().enumerate() {
        a.parent = ids.get(i + 1).map(|p| p.as_str().into());
        a.pipeline.kind = if i + 1 == ids.len() {
            Kind::Root
        } else {
            Kind::Compound
        };
    }
    let mut node = bead("sp-n", &case.node);
    node.parent = ids.first().map(|p| p.as_str().into());
    node.pipeline.kind = Kind::for_route(route).unwrap_or_default();
    node.pipeline.route = route.into();
    node.pipeline.step = step.into();
    node.pipeline.seq = 3;
    node.pipeline.entered = 1;
    node.pipeline.verdict = case.verdict;
    (node, ancestors)
}

/// What the writer's plan meets at the gate on a passing check.
fn writer_gate(case: &Case, m: &Manifest, node: &Bead, ancestors: &[Bead]) -> GateMet {
    let defaults = Defaults {
        autonomy: case.autonomy_default,
        target: case.delivery_target.as_deref(),
        method: None,
        branch: case.branch.as_deref(),
    };
    let evidence = Evidence {
        step: m.step(&node.pipeline.step).unwrap().clone(),
        pr_url: None,
        opened_pr: false,
        seen_seq: node.pipeline.seq,
        outcomes: vec![Outcome::pass(FloorKind::FileExists, "there", json!({}))],
        read_in: "/repo".into(),
    };
    let lineage = Lineage::new(ancestors, defaults);
    let change = plan(&evidence, Caller::default(), node, &lineage, m, NOW).unwrap();
    change.output.gate.expect("a gated step meets its gate")
}

/// What `decide` reports for the node waiting at a pending gate on its step.
fn decide_rest(case: &Case, m: &Manifest, node: &Bead, ancestors: &[Bead]) -> Rest {
    let mut waiting = node.clone();
    waiting.pipeline.gate = Some(Box::new(Gate {
        step: node.pipeline.step.to_string(),
        state: GateState::Pending,
        seq: 2,
        by: None,
        autonomy: None,
        supplied_by: None,
        route: None,
        land: None,
        at: NOW.into(),
    }));
    let mut snapshot = Snapshot::new(m.clone(), vec![waiting], NOW, "runner-1", "run-1");
    snapshot.autonomy_default = case.autonomy_default;
    snapshot.delivery_target = case.delivery_target.clone();
    snapshot.branch = case.branch.clone();
    snapshot.ancestors = ancestors.to_vec();
    let decision = decide(&snapshot);
    decision.nodes["sp-n"].rest.clone().expect("a rest")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn the_writer_and_decide_agree_on_the_gate(case in case()) {
        let m = Manifest::default_manifest();
        let places = gated_places(&m);
        prop_assert!(!places.is_empty());
        let (route, step) = &places[case.place % places.len()];
        let (node, ancestors) = lineage_of(&case, route, step);
        let met = writer_gate(&case, &m, &node, &ancestors);
        let rest = decide_rest(&case, &m, &node, &ancestors);
        let Rest::AwaitingHuman { gate: Some(gate), relaxes: Some(relaxes), autonomy, autonomy_source, .. } = rest else {
            return Err(TestCaseError::fail(format!("rule 11 should hold the node: {rest:?}")));
        };
        prop_assert_eq!(&gate, step);
        match met {
            GateMet::Pending => prop_assert!(!relaxes, "the writer waits, decide says it relaxes"),
            GateMet::Relaxed { autonomy: level, supplied_by } => {
                prop_assert!(relaxes, "the writer relaxes, decide says it waits");
                prop_assert_eq!(level, autonomy);
                prop_assert_eq!(supplied_by, autonomy_source);
            }
        }
    }
}
