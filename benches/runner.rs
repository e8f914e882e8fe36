//! The runner's own cost per pass, outside agent commands.
//!
//! * `steady_pass/10000`: a store of 10,000 beads (most closed, 100 resting at a gate); one
//!   steady-state pass = refresh from the journal (nothing changed) + decide + the envelope. The
//!   pass file and the `record-run` transition are measured apart (`record_pass`), since their
//!   cost is the writer's fsyncs, not the store's size.
//! * `campaign/200`: a root with 200 leaves whose agent proposes at once; the whole run, from the
//!   split to `done`. The run's overhead per pass (time in passes, not waiting for agents) is
//!   printed once.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use splice::decide::decide;
use splice::driver::events::{Events, Output};
use splice::driver::feed::Feed;
use splice::driver::{envelope, runner};
use splice::model::Bead;
use splice::model::bead::{Gate, GateState, Kind, Status};
use splice::store::Store;

const AT: &str = "2026-01-01T00:00:00Z";

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@example.com")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@example.com")
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(dir.path().join("README.md"), "bench\n").unwrap();
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "init"]);
    dir
}

/// 10,000 leaf beads under one root: all closed but 100 that wait at a gate.
fn big_store(dir: &Path, n: usize) -> Store {
    let beads = dir.join(".splice/beads");
    std::fs::create_dir_all(&beads).unwrap();
    let mut root = Bead::new("sp-root".into(), "root".into(), String::new(), AT);
    root.pipeline.kind = Kind::Root;
    root.pipeline.route = "root".into();
    root.pipeline.step = "delegate".into();
    root.pipeline.seq = 1;
    std::fs::write(beads.join("sp-root.json"), root.to_file_bytes()).unwrap();
    for i in 1..n {
        let id = format!("sp-root.{i}");
        let mut b = Bead::new(id.clone(), format!("leaf {i}"), "x".repeat(300), AT);
        b.parent = Some("sp-root".into());
        b.pipeline.kind = Kind::Leaf;
        b.pipeline.route = "leaf".into();
        b.pipeline.step = "implement".into();
        b.pipeline.seq = 3;
        b.pipeline.entered = 1;
        if i % 100 == 0 {
            b.pipeline.gate = Some(Box::new(Gate {
                step: "implement".into(),
                state: GateState::Pending,
                seq: 2,
                by: None,
                autonomy: None,
                supplied_by: None,
                route: None,
                land: None,
                at: AT.into(),
            }));
        } else {
            b.status = Status::Closed;
        }
        std::fs::write(beads.join(format!("{id}.json")), b.to_file_bytes()).unwrap();
    }
    Store::discover(Some(dir)).unwrap()
}

fn steady_pass(c: &mut Criterion) {
    let dir = repo();
    let store = big_store(dir.path(), 10_000);
    let who = runner::identity().unwrap();
    let mut feed = Feed::load(&store, Some("sp-root"), who).unwrap();
    let inflight = BTreeMap::new();
    let mut group = c.benchmark_group("runner");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(6));
    group.bench_function(BenchmarkId::new("steady_pass", 10_000), |b| {
        b.iter(|| {
            feed.refresh().unwrap();
            let decision = decide(&feed.snapshot);
            envelope::build(&feed.snapshot, &decision, 1, Vec::new(), &inflight)
        })
    });
    group.finish();
}

/// A root split into `n` leaves; the leaf's one step proposes at once.
fn campaign_store(dir: &Path, n: usize) -> Store {
    let manifest = serde_json::json!({
        "routes": { "root": ["plan", "delegate"], "compound": ["plan", "delegate"], "leaf": ["work"] },
        "steps": [
            { "name": "plan", "role": "split", "floors": [] },
            { "name": "delegate", "floors": [ { "kind": "children_finished" } ] },
            { "name": "work", "floors": [],
              "run": { "argv": ["sh", "-c", "splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact done"] } }
        ]
    });
    std::fs::create_dir_all(dir.join(".splice/beads")).unwrap();
    std::fs::write(dir.join(".splice/manifest.json"), manifest.to_string()).unwrap();
    std::fs::write(dir.join(".splice/config.toml"), "[limits]\njobs = 2\n").unwrap();
    let store = Store::discover(Some(dir)).unwrap();
    let person = splice::transition::Ctx::person(&store, "2026-01-01T00:00:00Z");
    let root = splice::transition::create::init(
        &person,
        splice::transition::create::NewNode {
            title: "bench".into(),
            target: Some("main".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let root = root.id;
    let children: Vec<splice::transition::split::ChildSpec> = (0..n)
        .map(|i| serde_json::from_value(serde_json::json!({ "title": format!("leaf {i}"), "files": [format!("src/f{i}.rs")] })).unwrap())
        .collect();
    splice::transition::split::split(&person, &root, &children).unwrap();
    splice::transition::propose::propose(
        &person,
        &root,
        splice::transition::propose::ProposeArgs {
            step: "plan".into(),
            artifact: "split".into(),
            ..Default::default()
        },
    )
    .unwrap();
    splice::transition::complete::complete(
        &person,
        &root,
        "plan",
        None,
        splice::transition::Verb::Complete,
    )
    .unwrap();
    store
}

fn campaign(c: &mut Criterion) {
    // The agent calls `splice`: put the built binary first on PATH.
    let bin = Path::new(env!("CARGO_BIN_EXE_splice"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // SAFETY: set once, before any thread of this benchmark starts.
    unsafe { std::env::set_var("PATH", path) };
    let mut group = c.benchmark_group("runner");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    let mut reported = false;
    group.bench_function(BenchmarkId::new("campaign", 200), |b| {
        b.iter_batched(
            || {
                let dir = repo();
                let store = campaign_store(dir.path(), 200);
                (dir, store)
            },
            |(dir, store)| {
                let sum = runner::run(&store, &runner::Options::default(), &Events::new(Output::Quiet)).unwrap();
                assert_eq!(sum.status, splice::model::RunStatus::Done);
                if !reported {
                    reported = true;
                    eprintln!(
                        "\ncampaign/200: {} passes, {} dispatches, wall {} ms, runner overhead {} ms ({:.2} ms per pass)",
                        sum.passes,
                        sum.dispatches,
                        sum.wall_ms,
                        sum.overhead_ms,
                        sum.overhead_ms as f64 / sum.passes as f64
                    );
                }
                drop(dir);
            },
            criterion::BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, steady_pass, campaign);
criterion_main!(benches);
