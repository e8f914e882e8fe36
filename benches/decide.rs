//! decide() over synthetic campaign-shaped snapshots: a root delegating to compounds of ~50
//! leaves each, leaves in every state (closed, in flight, claimed elsewhere, fresh, refused,
//! gated), with declared files that overlap among siblings. Goal: 100k nodes under 200 ms,
//! linear in the node count.
//!
//! Issue 16, fourth session (medians of 6 runs of this binary's per-node line, the two builds
//! alternated; one run alone is noisy on a shared machine): per node at 1k / 10k / 100k,
//! 0.671 / 1.148 / 1.871 µs (2.79×) before, 0.534 / 0.907 / 1.283 µs (2.40×) after; the
//! criterion group at 100k 191 → 133 ms. The changes: rule 9's children answered by one merge
//! with the sorted beads, a bead found by binary search instead of a hash table built per
//! decision, serialization one sibling group at a time, and the decision's short texts inline.
//!
//! Sixth session: why it still grows. Criterion decides one snapshot again and again, so a 1k
//! snapshot (~1.5 MB with its strings) stays in the caches between decisions, a 10k one in the
//! 32 MiB last level, and a 100k one (~150 MB) in none. `perf annotate` at 100k puts most of the
//! rules' time on the first load of each bead's lines (its status, lease, dead letter, parent):
//! misses to memory, not work that grows. So the per-node line is now given twice, the second
//! with the caches emptied before each decision (a 64 MiB write), as a runner's one decision a
//! pass meets them. A part that did grow with n was looking a bead up (a dependency, a
//! worktree, a split's child) by binary search over all 100k (or, for the children, one sort
//! of every child id); a search now starts where the node being decided (or the last child
//! found) sits in id order and widens from there (`index::find_near`). Per node at 1k / 100k,
//! medians of 7 alternated runs of the two builds (`504d67f` and this one, which also has the
//! session's smaller `Bead`): warm 0.415 / 1.080 µs (2.60×) before, 0.387 / 0.955 µs (2.47×)
//! after; cold 0.650 / 1.066 µs (1.64×) before, 0.555 / 0.945 µs (1.70×) after. Then the
//! contenders sorted by a number per sibling group, not by their parent's text (5 alternated
//! runs on a busier machine): warm 1k 0.405 → 0.359 µs, 100k 1.079 → 1.073 µs, so faster for
//! small campaigns and a larger ratio (2.66× → 2.99×), which measures the caches. What is left
//! is the beads' own memory: a compact per-node view, made while each bead is hot (at parse),
//! would let the rules read one dense line per node instead of a 664-byte bead.
//!
//! Seventh session: that last guess was wrong. A third line now times [`touch`], one pass
//! reading every field the first rules read of each bead and building nothing: 0.011 µs per
//! node at 1k, ~0.06 at 100k, so the beads' own layout costs at most ~0.05 of the ~0.5 µs a
//! node gains from 1k to 100k. Timing decide's parts (by hand, not committed), per node at 1k /
//! 100k: the index 0.05 / 0.20, the rules 0.13 / 0.30, serialization 0.09 / 0.22, the actions
//! 0.02 / 0.03, the output map 0.04 / 0.05. What grows is each part's own walk over data that
//! no longer fits in the caches, one pass after another. The snapshot here was also not one a
//! read gives: its beads and `worktrees` are now in id order, as `Store::scan` and the
//! snapshot's contract give them (the criterion group `unsorted` keeps the other case). Then:
//! a split's children are ids kept inline (`Vec<Text>`, they were `String`s, each a pointer to
//! follow, the index's pass over every child 0.082 → 0.038 µs per node at 100k); whether a bead
//! is closed or a node is read in the index's first pass, and a checkout is a flag per position
//! instead of a set of copied ids; sibling groups are numbered while each bead is at hand.
//! Medians of 5 alternated runs (on a busy machine): warm 1k 0.386 → 0.344 µs, 100k 0.988 →
//! 0.785 µs (ratio 2.49 → 2.28); cold 1k 0.533 → 0.568, 100k 0.918 → 0.764 (1.72 → 1.36).
//!
//! Eighth session: serialization, which runs after every node is decided, went back to each
//! contender's list of declared paths, a miss per contender at 100,000 (the claims loop was
//! 0.071 µs per node at 1k and 0.154 at 100k). A contender now keeps a copy of its first path
//! when it is short enough to be kept inline (24 bytes; a copy never allocates), taken in the
//! rules loop, where the miss overlaps the rules' own. Medians of 7 alternated runs of the two
//! bench binaries: warm 1k 0.322 → 0.335 µs, 100k 0.737 → 0.694 (ratio 2.29 → 2.07); cold 1k
//! 0.476 → 0.499, 100k 0.738 → 0.694 (1.55 → 1.39). The 100k figures moved together (warm
//! 0.700–0.760 before, 0.676–0.802 after, one outlier; cold 0.700–0.757 and 0.671–0.725); the 1k
//! ones are this machine's noise (0.30–0.50 µs for one binary from one run to the next). Tried
//! with it and not kept: writing each rest into the output as the rules give it, so no list of
//! outcomes (104 bytes a node) and no later pass over every node: 0.701 / 0.692 µs at 100k,
//! no better.
//!
//! Ninth session, two causes ruled out, by counting (a throwaway program around this file's
//! `campaign`, not committed): allocation does not grow per node (0.85 allocations and 1,072
//! bytes a node at 1k, 0.78 and 938 at 100k), and neither do page faults (`getrusage` around 20
//! decisions: 2.4 minor faults a decision at 1k, 8 at 100k; glibc's tunables for a larger mmap
//! threshold and no trimming changed nothing). Tried and not kept: the sizes taking turns round
//! after round, to steady the 1k figure. It steadied it (cold 0.56–0.67 µs over 11 runs, against
//! 0.41–0.55 one size after another), but by raising it: the 1k decisions then allocate from a
//! heap the 100k one has just freed, scattered, so the ratio fell (cold 1.13–1.47x, mostly about
//! 1.2) for a reason that is not decide's.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

use splice::decide::decide;
use splice::model::bead::{Check, Gate, GateState, Lease, SplitRecord};
use splice::model::{Bead, Kind, Limits, Manifest, Snapshot, Status, Verdict};

const AT: &str = "2025-01-01T00:00:00Z";
const LEAVES_PER_COMPOUND: usize = 50;

fn node(id: String, parent: Option<&str>, kind: Kind, route: &str, step: &str) -> Bead {
    let mut b = Bead::new(id, "synthetic".into(), String::new(), AT);
    b.parent = parent.map(Into::into);
    b.pipeline.kind = kind;
    b.pipeline.route = route.into();
    b.pipeline.step = step.into();
    b.pipeline.seq = 10;
    b.pipeline.entered = 5;
    b
}

fn campaign(n: usize) -> Snapshot {
    let compounds = (n / (LEAVES_PER_COMPOUND + 1)).max(1);
    let mut beads = Vec::with_capacity(n);
    let mut root = node("sp-root".into(), None, Kind::Root, "root", "delegate");
    root.pipeline.autonomy = Some(splice::model::Autonomy::Wave);
    let mut root_children = Vec::new();
    let mut worktrees = Vec::new();
    let mut made = 1;
    'outer: for c in 0..compounds {
        let cid = format!("sp-root.{c}");
        let mut compound = node(
            cid.clone(),
            Some("sp-root"),
            Kind::Compound,
            "compound",
            "delegate",
        );
        let mut children = Vec::new();
        for l in 0..LEAVES_PER_COMPOUND {
            if made + 1 >= n {
                break;
            }
            let lid = format!("{cid}.{l}");
            let mut leaf = node(lid.clone(), Some(&cid), Kind::Leaf, "leaf", "implement");
            leaf.priority = (l % 3) as i64;
            leaf.pipeline.files = vec![format!("src/m{}/f{}.rs", l % 7, l % 5).into()];
            if l % 11 == 0 {
                leaf.pipeline.files = vec![format!("src/m{}", l % 7).into()];
            }
            match l % 8 {
                0 => leaf.status = Status::Closed,
                1 => {
                    leaf.pipeline.lease = Some(Box::new(Lease {
                        holder: "bench".into(),
                        since: AT.into(),
                        credential_sha256: None,
                        job: None,
                    }));
                    worktrees.push(lid.clone());
                }
                2 => {
                    leaf.pipeline.lease = Some(Box::new(Lease {
                        holder: "other".into(),
                        since: AT.into(),
                        credential_sha256: None,
                        job: None,
                    }))
                }
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
                    }));
                }
                5 => leaf.dependencies.push(splice::model::bead::Dependency {
                    depends_on_id: format!("{cid}.{}", l - 1).into(),
                    dep_type: "blocks".into(),
                    extra: Default::default(),
                }),
                _ => {}
            }
            children.push(lid.into());
            beads.push(leaf);
            made += 1;
        }
        compound.pipeline.split = Some(Box::new(SplitRecord { children, seq: 4 }));
        root_children.push(cid.into());
        beads.push(compound);
        made += 1;
        if made >= n {
            break 'outer;
        }
    }
    root.pipeline.split = Some(Box::new(SplitRecord {
        children: root_children,
        seq: 4,
    }));
    beads.push(root);
    // In id order, as every read of the store gives them (`Store::scan`), and the worktrees
    // sorted, as `Snapshot::worktrees` promises.
    beads.sort_by(|a, b| a.id.cmp(&b.id));
    worktrees.sort();
    Snapshot {
        scope: Some("sp-root".into()),
        // As read in a repository with `main` checked out: every dispatch has a target.
        branch: Some("main".into()),
        limits: Limits {
            jobs: 8,
            ..Limits::default()
        },
        worktrees,
        ..Snapshot::new(
            Manifest::default_manifest(),
            beads,
            AT,
            "bench",
            "run-bench",
        )
    }
}

/// Decide's cost per node at each size, printed first so growth is plain to see (the goal: 100k
/// within 1.3x of 1k per node): the median of several decisions, each dropped inside the timing
/// as criterion's loop does. Twice: as criterion measures (the same snapshot decided again and
/// again, so a small one stays in the processor's caches between decisions), and with the
/// caches emptied before each decision, as a runner's one decision per pass meets them.
fn per_node() {
    // Twice the last-level cache of the machines we measure on (32 MiB).
    let mut evictor = vec![0u8; 64 << 20];
    let mut lines = [
        String::from("decide per node, caches warm (median):"),
        String::from("decide per node, caches cold (median):"),
        String::from("touch per node, caches warm (median): "),
    ];
    let mut first = [None, None, None];
    for n in [1_000usize, 10_000, 100_000] {
        let snap = campaign(n);
        for (kind, line) in lines.iter_mut().enumerate() {
            let (cold, touch_only) = (kind == 1, kind == 2);
            let runs = if cold {
                (200_000 / n).clamp(9, 41)
            } else {
                (2_000_000 / n).clamp(5, 200)
            };
            let mut times: Vec<f64> = (0..runs)
                .map(|_| {
                    if cold {
                        evict(&mut evictor);
                    }
                    let start = std::time::Instant::now();
                    if touch_only {
                        std::hint::black_box(touch(std::hint::black_box(&snap)));
                    } else {
                        drop(std::hint::black_box(decide(std::hint::black_box(&snap))));
                    }
                    start.elapsed().as_secs_f64() * 1e6 / snap.beads.len() as f64
                })
                .collect();
            times.sort_by(f64::total_cmp);
            let median = times[times.len() / 2];
            let base = *first[kind].get_or_insert(median);
            line.push_str(&format!("  {n}: {median:.3} µs ({:.2}x)", median / base));
        }
    }
    println!("{}\n{}\n{}", lines[0], lines[1], lines[2]);
}

/// The least any decision reads: one pass over the beads in id order, reading the fields the
/// first rules read of every node (its id, status, step, lease, dead letter, dependencies,
/// parent, gate, split, check and attempts) and building nothing. Its growth from 1k to 100k is
/// what the beads' layout costs whatever `decide` does with them.
fn touch(snap: &Snapshot) -> usize {
    let mut sum = 0usize;
    for b in &snap.beads {
        let p = &b.pipeline;
        sum += b.id.len() + p.step.len() + usize::from(b.is_closed());
        sum += p.lease.as_ref().map_or(0, |l| l.holder.len());
        sum += p.dead_letter.as_ref().map_or(0, |d| d.reason.len());
        sum += b
            .dependencies
            .iter()
            .map(|d| d.depends_on_id.len())
            .sum::<usize>();
        sum += b.parent.as_deref().map_or(0, str::len);
        sum += b.gate_on_step().map_or(0, |g| g.seq as usize);
        sum += p.split.as_ref().map_or(0, |s| s.children.len());
        sum += b.check_since_entry().map_or(0, |c| c.reason.len());
        sum += b.attempts_on(&p.step) as usize + p.files.len();
    }
    sum
}

/// Write one byte in every cache line of `buf`, so what was cached before is gone.
fn evict(buf: &mut [u8]) {
    for line in buf.chunks_mut(64) {
        line[0] = line[0].wrapping_add(1);
    }
    std::hint::black_box(buf);
}

fn bench(c: &mut Criterion) {
    per_node();
    let mut group = c.benchmark_group("decide");
    group.sample_size(10);
    for n in [1_000usize, 10_000, 100_000] {
        let snap = campaign(n);
        group.throughput(Throughput::Elements(snap.beads.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &snap, |b, snap| {
            b.iter(|| decide(std::hint::black_box(snap)))
        });
    }
    // Beads out of id order (sorted by reversed id): decide sorts them, O(n log n).
    let mut snap = campaign(100_000);
    snap.beads
        .sort_by_cached_key(|b| b.id.chars().rev().collect::<String>());
    group.bench_with_input(BenchmarkId::new("unsorted", 100_000), &snap, |b, snap| {
        b.iter(|| decide(std::hint::black_box(snap)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
