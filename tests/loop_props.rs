//! Property tests of a loop step in `decide` (issue 13): over random trajectories, the decision
//! is deterministic, a successful latest iteration is always checked (unless a check after it
//! refused), an iteration whose decision was carried out never asks for another effect, and a
//! loop node never gets an action beyond its iteration limit.

use proptest::prelude::*;
use serde_json::Value;

use splice::decide::decide;
use splice::model::manifest::LoopSpec;
use splice::model::trajectory::{Effect, Iteration, IterationState, Outcomes};
use splice::model::{Action, Bead, Manifest, Snapshot};

const NOW: &str = "2025-01-01T00:00:00Z";

fn manifest(max_iterations: u32) -> Manifest {
    let mut m = Manifest::default_manifest();
    let spec: LoopSpec = serde_json::from_value(serde_json::json!({
        "max_iterations": max_iterations
    }))
    .unwrap();
    for s in &mut m.steps {
        if s.name == "implement" {
            s.loop_ = Some(spec.clone());
        }
    }
    m
}

/// One generated iteration: tests passed and failed, the change's hash, the confidence, a
/// stage failure, and whether its decision was carried out.
type Gen = (u64, u64, &'static str, Option<f64>, bool, bool);

fn iteration() -> impl Strategy<Value = Gen> {
    (
        0u64..4,
        prop_oneof![2 => Just(0u64), 3 => 1u64..3],
        prop_oneof![Just("a"), Just("b"), Just("c")],
        proptest::option::of(prop_oneof![Just(0.2), Just(0.5), Just(0.9)]),
        prop_oneof![9 => Just(false), 1 => Just(true)],
        prop_oneof![4 => Just(false), 1 => Just(true)],
    )
}

fn bead(its: &[Gen]) -> Bead {
    let mut b = Bead::new("sp-a".into(), "t".into(), String::new(), NOW);
    // A node (on a route): a bead with none is a plain bead, which decide passes by.
    b.pipeline.route = "leaf".into();
    b.pipeline.step = "implement".into();
    b.pipeline.entered = 5;
    let mut seq = 6;
    for (i, &(passed, failed, hash, confidence, stage_failed, effect)) in its.iter().enumerate() {
        let n = u32::try_from(i).unwrap() + 1;
        seq += 4;
        b.pipeline.trajectory.push(Iteration {
            step: "implement".into(),
            seq,
            attempt: n,
            started_at: NOW.into(),
            at: NOW.into(),
            state: IterationState {
                iteration: n,
                stage_failed,
                tests: Outcomes {
                    passed,
                    failed,
                    errored: 0,
                },
                confidence,
                change_hash: format!("h{hash}"),
                ..IterationState::default()
            },
            score: None,
            monitor: Value::Null,
            context: Default::default(),
            snapshot: None,
            effect: effect.then(|| Effect::Recovery {
                rule: "escalate_repeated".into(),
                why: "test".into(),
            }),
        });
    }
    b.pipeline
        .attempts
        .insert("implement", u32::try_from(its.len()).unwrap());
    b.pipeline.seq = seq + 2;
    b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_loop_decision_is_deterministic_and_success_is_always_checked(
        its in proptest::collection::vec(iteration(), 0..8),
        max in 1u32..8,
    ) {
        let its: Vec<_> = its.into_iter().take(max as usize).collect();
        let b = bead(&its);
        let snap = Snapshot::new(manifest(max), vec![b.clone()], NOW, "runner-1", "run-1");
        let d = decide(&snap);
        prop_assert_eq!(&d, &decide(&snap));
        let latest = b.pipeline.trajectory.last();
        let action = d.actions.first();
        if latest.is_some_and(|l| l.state.succeeded()) {
            let checked = matches!(action, Some(Action::Check { .. }));
            prop_assert!(checked, "{:?}", d);
        }
        if latest.is_some_and(|l| l.effect.is_some() && !l.state.succeeded()) {
            let effect = matches!(
                action,
                Some(Action::Escalate { .. } | Action::Rollback { .. } | Action::StepBack { .. })
            );
            prop_assert!(!effect, "a carried-out decision asks for another effect: {:?}", d);
        }
        if let Some(Action::Dispatch { attempt, .. }) = action {
            prop_assert!(*attempt <= max, "{:?}", d);
        }
    }
}
