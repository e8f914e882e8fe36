//! Property tests of the pass monitor (`policy::monitor`) over random trajectories.

use proptest::prelude::*;

use splice::model::trajectory::{
    Findings, IterationState, LoopSettings, MonitorInput, Outcomes, Spent, TrajectoryFile,
};
use splice::policy::monitor::{MonitorDecision, monitor, report, score};

fn state(n: u32) -> impl Strategy<Value = IterationState> {
    (
        (0u64..5, prop_oneof![3 => Just(0u64), 1 => 1u64..3], 0u64..2),
        (
            0u64..3,
            prop_oneof![3 => Just(0u64), 1 => Just(1u64)],
            0u64..2,
        ),
        (
            0u64..2,
            0u64..3,
            prop_oneof![4 => Just(0u64), 1 => Just(1u64)],
        ),
        proptest::option::of(prop_oneof![
            Just(0.1),
            Just(0.5),
            Just(0.7),
            Just(0.9),
            Just(1.0)
        ]),
        prop_oneof![Just("a"), Just("b"), Just("c"), Just("d")],
        prop_oneof![9 => Just(false), 1 => Just(true)],
        (0u64..200, 0u64..5),
    )
        .prop_map(
            move |(t, a, (lint_high, lint_medium, crit), conf, hash, failed, (tokens, cents))| {
                IterationState {
                    iteration: n,
                    stage_failed: failed,
                    tests: Outcomes {
                        passed: t.0,
                        failed: t.1,
                        errored: t.2,
                    },
                    acceptance: Outcomes {
                        passed: a.0,
                        failed: a.1,
                        errored: a.2,
                    },
                    lint: Findings {
                        critical: 0,
                        high: lint_high,
                        medium: lint_medium,
                        low: 0,
                    },
                    security: Findings {
                        critical: crit,
                        high: 0,
                        medium: 0,
                        low: 0,
                    },
                    confidence: conf,
                    tokens,
                    cost_usd: cents as f64 / 100.0,
                    change_hash: hash.to_string(),
                    ..IterationState::default()
                }
            },
        )
}

fn trajectory() -> impl Strategy<Value = Vec<IterationState>> {
    (1usize..10).prop_flat_map(|len| (1..=len as u32).map(state).collect::<Vec<_>>())
}

fn input() -> impl Strategy<Value = MonitorInput> {
    (
        trajectory(),
        1u32..9,
        proptest::option::of(0u64..2000),
        proptest::option::of(prop_oneof![Just(0.05), Just(0.2), Just(1.0)]),
        0u64..300,
    )
        .prop_map(
            |(trajectory, max_iterations, token_budget, cost_budget_usd, spent)| MonitorInput {
                settings: LoopSettings {
                    max_iterations,
                    token_budget,
                    cost_budget_usd,
                    ..LoopSettings::default()
                },
                spent: Spent {
                    tokens: spent,
                    cost_usd: 0.0,
                },
                trajectory,
            },
        )
}

/// Every iteration the decision names as evidence.
fn cited(d: &MonitorDecision) -> Vec<u32> {
    match d {
        MonitorDecision::EscalateOscillation { iterations, .. } => iterations.to_vec(),
        MonitorDecision::EscalateRepeated { iterations, .. } => iterations.clone(),
        MonitorDecision::Rollback {
            first,
            latest,
            restore,
        } => {
            vec![first.iteration, latest.iteration, restore.iteration]
        }
        MonitorDecision::StepBack { last_three } => {
            last_three.iter().map(|s| s.iteration).collect()
        }
        MonitorDecision::AskUser { last_three } => last_three.iter().map(|s| s.iteration).collect(),
        _ => Vec::new(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn deterministic(i in input()) {
        prop_assert_eq!(monitor(&i), monitor(&i.clone()));
        prop_assert_eq!(report(&i).to_pretty_json(), report(&i).to_pretty_json());
    }

    /// A successful latest iteration wins over every limit, budget and pattern.
    #[test]
    fn success_is_never_overridden(mut i in input()) {
        let last = i.trajectory.last_mut().unwrap();
        last.stage_failed = false;
        last.tests.failed = 0;
        last.tests.errored = 0;
        last.acceptance.failed = 0;
        last.acceptance.errored = 0;
        last.lint.high = 0;
        last.security.critical = 0;
        let iteration = last.iteration;
        i.settings.max_iterations = 1;
        i.settings.token_budget = Some(0);
        prop_assert_eq!(monitor(&i), MonitorDecision::Success { iteration });
    }

    /// Only a successful latest iteration decides `success`.
    #[test]
    fn success_means_the_latest_succeeded(i in input()) {
        let succeeded = i.trajectory.last().unwrap().succeeded();
        prop_assert_eq!(matches!(monitor(&i), MonitorDecision::Success { .. }), succeeded);
    }

    /// An unsuccessful trajectory at its limit stops there, before any other rule.
    #[test]
    fn the_limit_comes_first_after_success(mut i in input()) {
        i.settings.max_iterations = i.trajectory.len() as u32;
        let d = monitor(&i);
        if !i.trajectory.last().unwrap().succeeded() {
            prop_assert_eq!(d.name(), "stop_iteration_limit");
        }
    }

    /// The decision looks at the trajectory up to its latest iteration only: it names no
    /// iteration after the latest, and the hash and score rules name measured iterations only.
    #[test]
    fn evidence_names_measured_iterations_up_to_the_latest(i in input()) {
        let d = monitor(&i);
        let latest = i.trajectory.last().unwrap().iteration;
        for n in cited(&d) {
            prop_assert!(n >= 1 && n <= latest);
            prop_assert!(!i.trajectory[n as usize - 1].stage_failed);
        }
    }

    /// A trajectory cut at any iteration, written to a file and read back, decides as the cut
    /// trajectory does: the file carries everything the monitor reads, and nothing after the
    /// cut (the latest) leaks in.
    #[test]
    fn a_cut_trajectory_decides_the_same_from_its_file(i in input(), cut in 1usize..10) {
        let cut = cut.min(i.trajectory.len());
        let mut prefix = i.clone();
        prefix.trajectory.truncate(cut);
        let mut noisy = prefix.clone();
        let file = TrajectoryFile {
            schema_version: 1,
            settings: noisy.settings.clone(),
            budget: noisy.spent,
            trajectory: std::mem::take(&mut noisy.trajectory),
        };
        let text = serde_json::to_string(&file).unwrap();
        let parsed = TrajectoryFile::parse(&text).unwrap();
        prop_assert_eq!(monitor(&parsed), monitor(&prefix));
    }

    /// Rollback restores the best earlier measured iteration, the later of equal scores.
    #[test]
    fn rollback_restores_the_best_earlier_state(i in input()) {
        if let MonitorDecision::Rollback { first, latest, restore } = monitor(&i) {
            prop_assert!(latest.score < first.score);
            prop_assert!(restore.iteration < latest.iteration);
            let w = &i.settings.weights;
            for s in i.trajectory.iter().filter(|s| !s.stage_failed && s.iteration < latest.iteration) {
                let sc = score(s, w);
                prop_assert!(sc <= restore.score);
                if sc == restore.score {
                    prop_assert!(s.iteration <= restore.iteration);
                }
            }
        }
    }
}

#[test]
fn extreme_counts_do_not_panic() {
    let s = IterationState {
        iteration: 1,
        tests: Outcomes {
            passed: u64::MAX,
            failed: u64::MAX,
            errored: u64::MAX,
        },
        tokens: u64::MAX,
        change_hash: "a".into(),
        ..IterationState::default()
    };
    let i = MonitorInput {
        settings: LoopSettings {
            token_budget: Some(u64::MAX),
            ..LoopSettings::default()
        },
        spent: Spent {
            tokens: u64::MAX,
            cost_usd: 0.0,
        },
        trajectory: vec![s],
    };
    assert_eq!(monitor(&i).name(), "stop_budget");
}
