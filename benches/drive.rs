//! The cockpit's model update and render (`TestBackend`, 120×40) over a 10,000-bead campaign
//! (a root delegating to compounds of 50 leaves in every state, as `benches/decide.rs` builds
//! it). Issue 14: the steady-state frame (one bead changed) under 5 ms; the first frame (full
//! load) within 1.5× of `splice snapshot` at 10,000 beads.
//!
//! | bench | what is timed |
//! |---|---|
//! | `first_frame` | a new model takes a read (snapshot + decision) and draws it |
//! | `steady_frame` | a loaded model takes a read with one bead changed and draws it |
//! | `snapshot_files` | what `splice snapshot` does: read 10,000 bead files into a snapshot and write its JSON |
//! | `first_frame_files` | the cockpit's first frame from the same files: read, `decide`, take the read, draw |
//!
//! Measured on the 2-core development machine under a load average of ~6 (other builds): first
//! frame 25 ms, steady frame 4–6 ms (about 1 ms when timed alone: 0.5 ms update, 0.5 ms draw);
//! from files the first frame took 333 ms against 298 ms for the snapshot alone (1.12×). A steady
//! frame reuses the tree; the app's own cost of a new read (`decide` again) is not in it.

use std::collections::BTreeMap;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use splice::decide::decide;
use splice::drive::model::StateRead;
use splice::drive::{Model, Msg, view};
use splice::driver::snapshot::{Identity, build};
use splice::model::bead::{Check, Gate, GateState, Lease};
use splice::model::{Bead, Kind, Limits, Manifest, Snapshot, Status, Verdict};
use splice::store::Store;

const AT: &str = "2025-01-01T00:00:00Z";
const N: usize = 10_000;
const LEAVES: usize = 50;

#[path = "common/campaign.rs"]
mod common;

fn node(id: String, parent: Option<&str>, kind: Kind, step: &str) -> Bead {
    common::node(id, parent, kind, step, 400, AT)
}

/// The leaf `l` of its compound, in one of eight states.
fn leaf(cid: &str, l: usize) -> Bead {
    let mut leaf = node(format!("{cid}.{l}"), Some(cid), Kind::Leaf, "implement");
    leaf.pipeline.files = vec![format!("src/m{}/f{}.rs", l % 7, l % 5).into()];
    let lease = |holder: &str| Lease {
        holder: holder.into(),
        since: AT.into(),
        credential_sha256: None,
        job: None,
    };
    match l % 8 {
        0 => leaf.status = Status::Closed,
        1 => leaf.pipeline.lease = Some(Box::new(lease("bench"))),
        2 => leaf.pipeline.lease = Some(Box::new(lease("other"))),
        3 => {
            leaf.pipeline.step = "review".into();
            leaf.pipeline.attempts.insert("review", 1);
            leaf.pipeline.last_check = Some(Box::new(Check {
                step: "review".into(),
                seq: 8,
                verdict: Verdict::Refuse,
                reason: "FAIL".into(),
                evidence: Default::default(),
                run: None,
                awaiting_merge: false,
                recheck: false,
                at: AT.into(),
            }));
        }
        4 => {
            leaf.pipeline.gate = Some(Box::new(Gate {
                step: "implement".into(),
                state: GateState::Pending,
                seq: 9,
                by: None,
                autonomy: None,
                supplied_by: None,
                route: None,
                land: None,
                at: AT.into(),
            }))
        }
        _ => {}
    }
    leaf
}

fn campaign(n: usize) -> Snapshot {
    let beads = common::campaign(n, LEAVES, 400, AT, leaf);
    Snapshot {
        scope: Some("sp-root".into()),
        branch: Some("main".into()),
        limits: Limits {
            jobs: 8,
            ..Limits::default()
        },
        ..Snapshot::new(
            Manifest::default_manifest(),
            beads,
            AT,
            "bench",
            "run-bench",
        )
    }
}

fn read(snapshot: Snapshot) -> Msg {
    let decision = decide(&snapshot);
    let alive = BTreeMap::from([("other".to_string(), Some(false))]);
    Msg::State(Box::new(StateRead {
        snapshot,
        decision,
        alive,
    }))
}

fn terminal() -> Terminal<TestBackend> {
    Terminal::new(TestBackend::new(120, 40)).unwrap()
}

fn frame(model: &mut Model, msg: Msg, terminal: &mut Terminal<TestBackend>) {
    model.update(msg);
    terminal.draw(|f| view::render(model, f)).unwrap();
}

/// `snap` with one leaf's step changed, decided again (outside the timing: the app decides).
fn one_changed(snap: &Snapshot, i: usize) -> Msg {
    let mut next = snap.clone();
    let at = i % next.beads.len();
    let b = &mut next.beads[at];
    b.pipeline.seq += 1;
    b.pipeline.step = if b.pipeline.step == "review" {
        "implement".into()
    } else {
        "review".into()
    };
    read(next)
}

fn in_memory(c: &mut Criterion) {
    let snap = campaign(N);
    let mut group = c.benchmark_group("drive");
    group.sample_size(20);
    let mut term = terminal();
    group.bench_function("first_frame/10000", |b| {
        b.iter_batched(
            || read(snap.clone()),
            |msg| {
                let mut model = Model::new(Some("sp-root".into()));
                frame(&mut model, msg, &mut term);
                model
            },
            BatchSize::LargeInput,
        )
    });
    let mut model = Model::new(Some("sp-root".into()));
    frame(&mut model, read(snap.clone()), &mut term);
    let mut i = 0;
    group.bench_function("steady_frame/10000", |b| {
        b.iter_batched(
            || {
                i += 7;
                one_changed(&snap, i)
            },
            |msg| frame(&mut model, msg, &mut term),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// What `splice snapshot` does against what the cockpit's first frame does, from the same
/// 10,000 bead files.
fn from_files(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let beads = dir.path().join(".splice/beads");
    std::fs::create_dir_all(&beads).unwrap();
    for b in &campaign(N).beads {
        std::fs::write(beads.join(format!("{}.json", b.id)), b.to_file_bytes()).unwrap();
    }
    let store = Store::discover(Some(dir.path())).unwrap();
    let who = || Identity {
        holder: "bench".into(),
        run: "run-bench".into(),
    };
    let mut group = c.benchmark_group("drive");
    group.sample_size(10);
    group.bench_function("snapshot_files/10000", |b| {
        b.iter(|| {
            let snap = build(&store, None, who()).unwrap();
            let mut out = Vec::with_capacity(1 << 24);
            serde_json::to_writer(&mut out, &snap).unwrap();
            out
        })
    });
    let mut term = terminal();
    group.bench_function("first_frame_files/10000", |b| {
        b.iter(|| {
            let snap = build(&store, None, who()).unwrap();
            let mut model = Model::new(None);
            frame(&mut model, read(snap), &mut term);
            model
        })
    });
    group.finish();
}

criterion_group!(benches, in_memory, from_files);
criterion_main!(benches);
