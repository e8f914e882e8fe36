//! The default verification's overhead per iteration beyond the commands it runs (issue 34):
//! on a repository of 2,000 committed files,
//!
//! - `resolve`: reading the worktree's tree and choosing the stages (`verify::resolve`: the
//!   file list, the detected test command, the languages present);
//! - `measure_true_stages`: `measure` with the default stage set whose commands all do nothing
//!   (`true` as the test command, with a 50-name baseline; three `true` acceptance facts), so
//!   what it costs beyond `spawn_true_x4` is splice's own reading, comparing and recording;
//! - `spawn_true_x4`: the four commands alone, through the floors' runner.

use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

use splice::demo::git;
use splice::driver::looping::verify;
use splice::floors::iteration::{Baseline, MeasureInput, TestsStage, measure};
use splice::model::bead::Acceptance;
use splice::model::manifest::Manifest;

fn repo(dir: &Path) -> String {
    for i in 0..2000 {
        let rel = format!("src/m{}/f{i}.rs", i % 40);
        let path = dir.join(&rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("pub fn f{i}() {{}}\n")).unwrap();
    }
    std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    let base = git::init_with_commit(dir, "main", "base").unwrap();
    std::fs::write(dir.join("src/m0/f0.rs"), "pub fn f0() { let _ = 1; }\n").unwrap();
    git::commit_all(&git::open(dir).unwrap(), "change").unwrap();
    base.to_string()
}

fn input(dir: &Path, base: String) -> MeasureInput {
    let t = |a: &str| vec![a.to_string()];
    MeasureInput {
        confined: None,
        worktree: dir.to_path_buf(),
        base,
        iteration: 2,
        bead_id: "sp-bench".into(),
        tests: vec![TestsStage {
            argv: t("true"),
            junit: None,
            timeout: Duration::from_secs(60),
            baseline: Some(Baseline {
                failing: (0..50).map(|i| format!("tests::t{i:02}")).collect(),
                suite_failed: None,
            }),
        }],
        acceptance: (1..=3)
            .map(|i| Acceptance {
                id: format!("A{i}"),
                argv: t("true"),
            })
            .collect(),
        acceptance_timeout: Duration::from_secs(60),
        lint: Vec::new(),
        security: Vec::new(),
        analyzers: None,
        notes: Vec::new(),
        confidence: None,
        tokens: 0,
        cost_usd: 0.0,
    }
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let base = repo(tmp.path());
    let manifest = Manifest::default_manifest();
    let step = manifest.step("implement").unwrap().clone();
    let spec = step.loop_.clone().expect("the default implement is a loop");
    let resolved = verify::resolve(&spec, &step, tmp.path());
    assert_eq!(resolved.tests[0].0.argv, ["cargo", "test"]);
    let input = input(tmp.path(), base);
    let m = measure(&input).unwrap();
    assert_eq!(m.state.acceptance.passed, 3, "{:?}", m.context);

    let mut group = c.benchmark_group("default_verification");
    group.sample_size(30);
    group.bench_function("resolve_2000_files", |b| {
        b.iter(|| verify::resolve(&spec, &step, tmp.path()))
    });
    group.bench_function("measure_true_stages", |b| {
        b.iter(|| measure(&input).unwrap())
    });
    group.bench_function("spawn_true_x4", |b| {
        b.iter(|| {
            for _ in 0..4 {
                splice::floors::run_in(
                    &["true".to_string()],
                    tmp.path(),
                    &[],
                    Duration::from_secs(60),
                    1 << 20,
                    None,
                )
                .unwrap();
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
