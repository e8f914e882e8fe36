//! The writer's cost per transition must not grow with the store: only the beads a verb touches
//! are read and written. Measures one claim (or release) at 10 and 10,000 beads, for one writer
//! and for four concurrent writers.

use std::path::Path;
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

criterion_group!(benches, one_writer, four_writers);
criterion_main!(benches);
