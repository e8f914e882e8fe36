//! The pass monitor's decision over a 100-iteration trajectory (issue 13: "a bench: the monitor
//! decision over a 100-iteration trajectory"). The trajectory has distinct hashes, a slow score
//! rise and falling-then-rising confidence, so no early rule stops the walk: every rule runs.

use criterion::{Criterion, criterion_group, criterion_main};

use splice::model::trajectory::{IterationState, LoopSettings, MonitorInput, Outcomes};
use splice::policy::monitor::{monitor, report};

fn trajectory(n: u32) -> MonitorInput {
    let trajectory = (1..=n)
        .map(|i| IterationState {
            iteration: i,
            tests: Outcomes {
                passed: u64::from(i),
                failed: 1,
                errored: 0,
            },
            confidence: Some(if i % 2 == 0 { 0.5 } else { 0.6 }),
            tokens: 1_000,
            cost_usd: 0.01,
            change_hash: format!("{i:064x}"),
            ..IterationState::default()
        })
        .collect();
    MonitorInput {
        settings: LoopSettings {
            max_iterations: n + 1,
            token_budget: Some(u64::MAX),
            cost_budget_usd: Some(1e9),
            ..LoopSettings::default()
        },
        trajectory,
        ..MonitorInput::default()
    }
}

fn bench(c: &mut Criterion) {
    let input = trajectory(100);
    assert_eq!(monitor(&input).name(), "continue");
    c.bench_function("monitor/100-iterations", |b| {
        b.iter(|| monitor(std::hint::black_box(&input)))
    });
    c.bench_function("monitor/100-iterations-report-json", |b| {
        b.iter(|| report(std::hint::black_box(&input)).to_pretty_json())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
