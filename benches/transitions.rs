//! The writer's cost per transition must not grow with the store: only the beads a verb touches
//! are read and written. Measures one claim (or release) at 10 and 10,000 beads, for one writer
//! and for four concurrent writers; and a whole `splice transition split` of 10,000 children (one
//! journal record, its temp files made durable in one flush; the scale issue's goal: < 1 s), the
//! store set up through the CLI.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use splice::model::Bead;
use splice::store::Store;
use splice::transition::{Ctx, claim};

/// A store with `n` leaf beads written straight to disk (setup only; not via the writer).
fn store_with(dir: &Path, n: usize) -> (Store, Vec<String>) {
    let beads = dir.join(".splice/beads");
    std::fs::create_dir_all(&beads).unwrap();
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let id = format!("sp-b{i:06}");
        let mut bead = Bead::new(
            id.clone(),
            format!("bead {i}"),
            "x".repeat(400),
            "2026-01-01T00:00:00Z",
        );
        bead.pipeline.route = "leaf".into();
        bead.pipeline.step = "generate-spec".into();
        bead.pipeline.seq = 1;
        std::fs::write(beads.join(format!("{id}.json")), bead.to_file_bytes()).unwrap();
        ids.push(id);
    }
    (Store::discover(Some(dir)).unwrap(), ids)
}

/// One transition: claim if free, else release.
fn toggle(store: &Store, id: &str, holder: &str, claimed: &mut bool) {
    let ctx = Ctx::person(store, "2026-01-01T00:00:00Z");
    if *claimed {
        claim::release(&ctx, id, holder).unwrap();
    } else {
        claim::claim(&ctx, id, holder, false, None).unwrap();
    }
    *claimed = !*claimed;
}

fn one_writer(c: &mut Criterion) {
    let mut group = c.benchmark_group("transition");
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(5));
    for n in [10usize, 10_000] {
        let dir = tempfile::tempdir().unwrap();
        let (store, ids) = store_with(dir.path(), n);
        let mut claimed = false;
        group.bench_with_input(BenchmarkId::new("one_writer", n), &n, |b, _| {
            b.iter(|| toggle(&store, &ids[n / 2], "bench", &mut claimed))
        });
    }
    group.finish();
}

fn four_writers(c: &mut Criterion) {
    let mut group = c.benchmark_group("transition");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    for n in [10usize, 10_000] {
        let dir = tempfile::tempdir().unwrap();
        let (store, ids) = store_with(dir.path(), n);
        // Each iteration: four threads each make 26 transitions on their own bead (104 total).
        group.bench_with_input(BenchmarkId::new("four_writers_x104", n), &n, |b, _| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    std::thread::scope(|s| {
                        for (w, id) in ids.iter().take(4).enumerate() {
                            let store = &store;
                            s.spawn(move || {
                                let mut claimed = false;
                                for _ in 0..26 {
                                    toggle(store, id, &format!("w{w}"), &mut claimed);
                                }
                            });
                        }
                    });
                }
                start.elapsed()
            })
        });
    }
    group.finish();
}

/// Run the built binary in `dir` at the fixed clock; its stdout.
fn splice(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_splice"))
        .args(args)
        .current_dir(dir)
        .env("SPLICE_NOW", "2026-01-01T00:00:00Z")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A git repository with a campaign root at its split step, and a children file of `n`.
fn ready_to_split(n: usize) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .env("GIT_AUTHOR_NAME", "b")
            .env("GIT_AUTHOR_EMAIL", "b@b")
            .env("GIT_COMMITTER_NAME", "b")
            .env("GIT_COMMITTER_EMAIL", "b@b")
            .status()
            .unwrap();
        assert!(ok.success());
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["commit", "-q", "--allow-empty", "-m", "start"]);
    let init = splice(
        dir.path(),
        &["init", "--title", "C", "--scenarios", "S1", "--json"],
    );
    let init: serde_json::Value = serde_json::from_slice(&init).unwrap();
    let root = init["id"].as_str().unwrap().to_string();
    let route = [
        "transition",
        "route",
        "--bead",
        &root,
        "--to",
        "root",
        "--at",
        "to-issues",
    ];
    splice(dir.path(), &route);
    let children: Vec<serde_json::Value> = (0..n)
        .map(|i| serde_json::json!({"title": format!("child {i}"), "description": "x".repeat(300), "scenarios": ["S1"]}))
        .collect();
    let children = serde_json::to_vec(&children).unwrap();
    std::fs::write(dir.path().join("children.json"), children).unwrap();
    (dir, root)
}

fn large_split(c: &mut Criterion) {
    let mut group = c.benchmark_group("split");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    // Every store is kept until the group ends: deleting 10,000 files just before the next
    // split creates 10,000 makes ext4 skip the recently freed inodes one by one
    // (`recently_deleted`), which would measure the file system's allocator, not the split.
    let mut kept = Vec::new();
    group.bench_function("whole_process_10k_children", |b| {
        b.iter_batched(
            || ready_to_split(10_000),
            |(dir, root)| {
                let split = [
                    "transition",
                    "split",
                    "--bead",
                    &root,
                    "--children",
                    "children.json",
                ];
                splice(dir.path(), &split);
                kept.push(dir);
            },
            criterion::BatchSize::PerIteration,
        );
    });
    group.finish();
    drop(kept);
}

criterion_group!(benches, one_writer, four_writers, large_split);
criterion_main!(benches);
