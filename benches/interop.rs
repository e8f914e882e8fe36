//! bd interop at 10,000 records (issue 15; the scale issue's goals: import < 2 s, export < 1 s):
//! a whole `splice import bd` into an empty store and a re-import of the same file (no change,
//! no write), and a whole `splice export bd`, each a process of the built binary; and the pure
//! parts in process (the import's plan, the export's records).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use splice::model::bd;
use splice::store::Scan;
use splice::transition::import;

const N: usize = 10_000;
const NOW: &str = "2026-01-01T00:00:00Z";
const STATUSES: [&str; 4] = ["open", "closed", "in_progress", "deferred"];

/// A bd export of `n` records in epics of ten, with the fields bd writes.
fn export_text(n: usize) -> String {
    let mut out = String::new();
    for i in 0..n {
        let epic = i / 10 * 10;
        let id = if i % 10 == 0 {
            format!("bd-e{epic}")
        } else {
            format!("bd-e{epic}.{}", i % 10)
        };
        let mut r = json!({
            "id": id, "title": format!("Issue {i}"),
            "description": "x".repeat(300), "design": "d", "acceptance_criteria": "- a",
            "status": STATUSES[i % 4],
            "priority": i % 5, "issue_type": "task", "assignee": "alice",
            "labels": ["area:core"], "created_at": NOW, "updated_at": NOW,
            "ephemeral": false, "agent_state": {"phase": "x"},
        });
        if i % 10 != 0 {
            r["dependencies"] = json!([
                {"issue_id": id, "depends_on_id": format!("bd-e{epic}"), "type": "parent-child"}
            ]);
        }
        out.push_str(&r.to_string());
        out.push('\n');
    }
    out
}

fn splice(dir: &Path, args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_splice"))
        .args(args)
        .current_dir(dir)
        .env("SPLICE_NOW", NOW)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn whole_process(c: &mut Criterion) {
    let text = export_text(N);
    let mut group = c.benchmark_group("bd-10k");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    // Every store is kept until the group ends: deleting 10,000 files just before the next
    // import creates 10,000 makes ext4 skip the recently freed inodes one by one
    // (`recently_deleted`), which would measure the file system's allocator, not the import.
    let mut kept = Vec::new();
    group.bench_function("import-into-empty-store", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().unwrap();
                std::fs::write(dir.path().join("issues.jsonl"), &text).unwrap();
                dir
            },
            |dir| {
                splice(dir.path(), &["import", "bd", "issues.jsonl"]);
                kept.push(dir);
            },
            criterion::BatchSize::PerIteration,
        );
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("issues.jsonl"), &text).unwrap();
    splice(dir.path(), &["import", "bd", "issues.jsonl"]);
    group.bench_function("reimport-unchanged", |b| {
        b.iter(|| splice(dir.path(), &["import", "bd", "issues.jsonl"]));
    });
    group.bench_function("export", |b| {
        b.iter(|| splice(dir.path(), &["export", "bd", "-o", "out.jsonl"]));
    });
    group.finish();
    drop(kept);
}

fn in_process(c: &mut Criterion) {
    let text = export_text(N);
    let empty = Scan::default();
    let mut group = c.benchmark_group("bd-10k-pure");
    group.sample_size(10);
    group.bench_function("import-plan", |b| {
        b.iter(|| import::plan("issues.jsonl", &text, &empty, false).unwrap());
    });
    let beads = import::plan("issues.jsonl", &text, &empty, false)
        .unwrap()
        .beads;
    group.bench_function("export-records", |b| {
        b.iter(|| {
            beads
                .iter()
                .map(|bead| bd::to_line(bead, false).len())
                .sum::<usize>()
        });
    });
    group.finish();
}

criterion_group!(benches, in_process, whole_process);
criterion_main!(benches);
