//! Verification overhead per iteration in the demo (issue 13: "a bench: … verification
//! overhead per iteration in the demo"): `floors::iteration::measure` — the change against the
//! step's base (git2) and the demo loop step's one stage, `sh checks/parse.sh` — on a repository
//! like the demo's: the calc project with the check script on `main`, and on top one commit with
//! the parsing leaf's files at each of the demo's four iterations. This is exactly what the loop
//! runtime runs between an iteration's dispatch and its `iteration` event in `splice demo`.
//! `iteration_4_change_only` is the git2 part alone (no stage), to split the figure.

use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

use splice::demo::{files, git, looping};
use splice::floors::iteration::{MeasureInput, TestsStage, measure};

/// A scratch repository as the demo's at the start of `implement-loop`, then the agent's
/// commit of iteration `n`. Returns the base commit.
fn repo_at(dir: &Path, n: u32) -> String {
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    for (rel, text) in files::PROJECT {
        write(rel, text);
    }
    write(looping::CHECK_PATH, looping::CHECK_SCRIPT);
    let base = git::init_with_commit(dir, "main", "the project").unwrap();
    for (rel, text) in looping::iteration_files(n) {
        write(rel, text);
    }
    git::commit_all(&git::open(dir).unwrap(), &format!("iteration {n}")).unwrap();
    base.to_string()
}

fn input(dir: &Path, base: String, n: u32) -> MeasureInput {
    MeasureInput {
        confined: None,
        worktree: dir.to_path_buf(),
        base,
        iteration: n,
        bead_id: "sp-bench.2".into(),
        tests: vec![TestsStage {
            argv: vec!["sh".into(), looping::CHECK_PATH.into()],
            junit: None,
            timeout: Duration::from_secs(60),
            baseline: None,
        }],
        acceptance: Vec::new(),
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
    let mut group = c.benchmark_group("demo_iteration_measure");
    group.sample_size(50);
    let mut dirs = Vec::new();
    for (n, passed) in [(1u32, 2u64), (2, 4), (3, 1), (4, 6)] {
        let tmp = tempfile::tempdir().unwrap();
        let base = repo_at(tmp.path(), n);
        let input = input(tmp.path(), base, n);
        let m = measure(&input).unwrap();
        assert!(!m.state.stage_failed, "{:?}", m.context);
        assert_eq!(m.state.tests.passed, passed, "iteration {n}");
        assert_eq!(m.state.tests.passed + m.state.tests.failed, 6);
        group.bench_function(format!("iteration_{n}"), |b| {
            b.iter(|| measure(&input).unwrap())
        });
        if n == 4 {
            // The git2 part alone (the diff facts and the change hash), without the stage.
            let change_only = MeasureInput {
                tests: Vec::new(),
                ..input.clone()
            };
            group.bench_function("iteration_4_change_only", |b| {
                b.iter(|| measure(&change_only).unwrap())
            });
        }
        dirs.push(tmp);
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
