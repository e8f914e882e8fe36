//! Property tests of `decide` over random campaign-shaped snapshots.

use std::collections::HashMap;

use proptest::prelude::*;

use splice::decide::{decide, scopes_overlap};
use splice::model::bead::{
    Check, DeadLetter, Dependency, Dispatch, ExitKind, ExitRecord, Gate, GateState, Lease,
    Proposal, SplitRecord,
};
use splice::model::{
    Action, Autonomy, Bead, Counters, Kind, Limits, Manifest, Rest, RunStatus, Snapshot, Status,
    Verdict,
};

const HOLDER: &str = "runner-1";
const RUN: &str = "run-1";
const AT: &str = "2025-01-01T00:00:00Z";
const FILES: &[&str] = &[
    "src",
    "src/a.rs",
    "src/a",
    "src/ab.rs",
    "docs",
    "lib/x.rs",
    "./src/a/",
];
/// (route, step) pairs a node may be at, plus one the manifest does not declare.
const PLACES: &[(&str, &str)] = &[
    ("root", "create-prp"),
    ("root", "to-issues"),
    ("root", "delegate"),
    ("root", "integrate"),
    ("compound", "generate-spec"),
    ("compound", "to-issues"),
    ("compound", "delegate"),
    ("leaf", "generate-spec"),
    ("leaf", "implement"),
    ("leaf", "review"),
    ("leaf", "deliver"),
    ("leaf", "polish"),
];

#[derive(Debug, Clone)]
struct NodeSpec {
    parent: Option<usize>,
    closed: bool,
    place: usize,
    lease: u8,
    dead: bool,
    deps: Vec<usize>,
    files: Vec<usize>,
    attempts: u32,
    evidence: u8,
    verdict: u8,
    gate: bool,
    priority: i64,
    autonomy: u8,
    worktree: bool,
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        (
            prop::option::weighted(0.5, 0usize..64),
            prop::bool::weighted(0.25),
            // Mostly `implement`, so many siblings compete for dispatch.
            prop_oneof![3 => Just(8usize), 2 => 0..PLACES.len()],
            prop::sample::select(vec![0u8, 0, 0, 0, 1, 2]),
            prop::bool::weighted(0.1),
            prop::collection::vec(0usize..64, 0..2),
            prop::collection::vec(0..FILES.len(), 0..3),
        ),
        (
            0u32..4,
            prop_oneof![Just(0u8), any::<u8>()],
            0u8..4,
            prop::bool::weighted(0.15),
            0i64..3,
            0u8..4,
            prop::bool::weighted(0.3),
        ),
    )
        .prop_map(
            |(
                (parent, closed, place, lease, dead, deps, files),
                (attempts, evidence, verdict, gate, priority, autonomy, worktree),
            )| NodeSpec {
                parent,
                closed,
                place,
                lease,
                dead,
                deps,
                files,
                attempts,
                evidence,
                verdict,
                gate,
                priority,
                autonomy,
                worktree,
            },
        )
}

fn build_bead(i: usize, spec: &NodeSpec, n: usize) -> Bead {
    let mut b = Bead::new(format!("sp-{i}"), format!("node {i}"), String::new(), AT);
    // Parents come earlier, so the tree has no cycles.
    b.parent = spec
        .parent
        .filter(|_| i > 0)
        .map(|p| format!("sp-{}", p % i).into());
    if spec.closed {
        b.status = Status::Closed;
    }
    b.priority = spec.priority;
    b.dependencies = spec
        .deps
        .iter()
        .map(|d| Dependency {
            // Some dependencies point outside the snapshot.
            depends_on_id: format!("sp-{}", d % (n + 2)).into(),
            dep_type: "blocks".into(),
            extra: Default::default(),
        })
        .collect();
    let (route, step) = PLACES[spec.place];
    let p = &mut b.pipeline;
    p.seq = 10;
    p.entered = 5;
    p.route = route.into();
    p.step = step.into();
    p.kind = match route {
        "root" => Kind::Root,
        "compound" => Kind::Compound,
        _ => Kind::Leaf,
    };
    p.files = spec.files.iter().map(|f| FILES[*f].into()).collect();
    p.lease = match spec.lease {
        1 => Some(Box::new(Lease {
            holder: HOLDER.into(),
            since: AT.into(),
            credential_sha256: None,
            job: None,
        })),
        2 => Some(Box::new(Lease {
            holder: "other".into(),
            since: AT.into(),
            credential_sha256: None,
            job: None,
        })),
        _ => None,
    };
    if spec.dead {
        p.dead_letter = Some(Box::new(DeadLetter {
            step: step.into(),
            reason: "parked".into(),
            seq: 9,
            at: AT.into(),
        }));
    }
    if spec.attempts > 0 {
        p.attempts.insert(step, spec.attempts);
    }
    let e = spec.evidence;
    if e & 1 != 0 {
        p.proposal = Some(Box::new(Proposal {
            step: step.into(),
            seq: if e & 32 != 0 { 4 } else { 7 },
            artifact: "a".into(),
            pr_url: (e & 64 != 0).then(|| "https://forge/pr/1".to_string()),
            at: AT.into(),
            ..Default::default()
        }));
    }
    if e & 2 != 0 {
        p.last_check = Some(Box::new(Check {
            step: step.into(),
            seq: if e & 16 != 0 { 6 } else { 8 },
            // 3: a refusal for a transient landing fault only (`recheck`).
            verdict: [
                Verdict::Pass,
                Verdict::Refuse,
                Verdict::Escalate,
                Verdict::Refuse,
            ][spec.verdict as usize],
            reason: "r".into(),
            evidence: Default::default(),
            run: Some(if e & 128 != 0 { RUN } else { "run-0" }.into()),
            awaiting_merge: e & 64 != 0,
            recheck: spec.verdict == 3,
            at: AT.into(),
        }));
    }
    if e & 4 != 0 {
        p.last_dispatch = Some(Box::new(Dispatch {
            step: step.into(),
            attempt: spec.attempts.max(1),
            seq: 6,
            holder: HOLDER.into(),
            at: AT.into(),
        }));
    }
    if e & 8 != 0 {
        p.exits.push(ExitRecord {
            step: step.into(),
            attempt: spec.attempts.max(1),
            seq: 7,
            exit: ExitKind::Ok,
            code: Some(0),
            cause: None,
            proposed: e & 1 != 0,
            log: None,
            usage: None,
            retry_after_s: None,
            at: AT.into(),
        });
    }
    if spec.gate {
        p.gate = Some(Box::new(Gate {
            step: step.into(),
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
    p.autonomy = [
        None,
        Some(Autonomy::Hitl),
        Some(Autonomy::Wave),
        Some(Autonomy::Deep),
    ][spec.autonomy as usize];
    b
}

fn snapshot() -> impl Strategy<Value = Snapshot> {
    (
        prop::collection::vec(node_spec(), 0..24),
        0u32..6,
        prop::option::of(0u64..4),
        prop::option::of(0u64..4),
        0u64..4,
        0u64..4,
        prop::bool::ANY,
    )
        .prop_map(
            |(specs, jobs, max_passes, token_budget, passes, tokens, scoped)| {
                let n = specs.len();
                let mut beads: Vec<Bead> = specs
                    .iter()
                    .enumerate()
                    .map(|(i, s)| build_bead(i, s, n))
                    .collect();
                // Delegating nodes sanction their children.
                let mut children: HashMap<String, Vec<splice::model::Text>> = HashMap::new();
                for b in &beads {
                    if let Some(p) = &b.parent {
                        children
                            .entry(p.to_string())
                            .or_default()
                            .push(b.id.clone());
                    }
                }
                for b in &mut beads {
                    if b.pipeline.step == "delegate" {
                        b.pipeline.split = Some(Box::new(SplitRecord {
                            children: children.remove(b.id.as_str()).unwrap_or_default(),
                            seq: 4,
                        }));
                    }
                }
                let worktrees = specs
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.worktree)
                    .map(|(i, _)| format!("sp-{i}"))
                    .collect();
                Snapshot {
                    scope: (scoped && n > 0).then(|| "sp-0".to_string()),
                    limits: Limits {
                        max_passes,
                        token_budget,
                        wall_time_s: None,
                        jobs,
                        // Exits are at `now`: a retry after one backs off.
                        backoff_s: 10,
                        ..Limits::default()
                    },
                    counters: Counters {
                        passes,
                        tokens,
                        ..Counters::default()
                    },
                    worktrees,
                    ..Snapshot::new(Manifest::default_manifest(), beads, AT, HOLDER, RUN)
                }
            },
        )
}

fn shuffled(snap: &Snapshot, keys: &[u64]) -> Snapshot {
    let mut out = snap.clone();
    let mut keyed: Vec<(u64, usize, Bead)> = out
        .beads
        .drain(..)
        .enumerate()
        .map(|(i, b)| (keys.get(i).copied().unwrap_or(0), i, b))
        .collect();
    keyed.sort_by_key(|(k, i, _)| (*k, std::cmp::Reverse(*i)));
    out.beads = keyed.into_iter().map(|(_, _, b)| b).collect();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn bead_order_does_not_matter(snap in snapshot(), keys in prop::collection::vec(any::<u64>(), 24)) {
        let a = decide(&snap).to_pretty_json();
        let b = decide(&shuffled(&snap, &keys)).to_pretty_json();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn a_serde_round_trip_does_not_matter(snap in snapshot()) {
        let text = serde_json::to_string(&snap).unwrap();
        let back: Snapshot = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(decide(&snap), decide(&back));
    }

    #[test]
    fn no_action_on_closed_parked_or_leased_nodes(snap in snapshot()) {
        let d = decide(&snap);
        let by_id: HashMap<&str, &Bead> = snap.beads.iter().map(|b| (b.id.as_str(), b)).collect();
        for action in &d.actions {
            let bead = by_id[action.bead()];
            if bead.is_closed() {
                prop_assert!(matches!(action, Action::CleanupFanout { .. }), "{action:?} on closed {}", bead.id);
                continue;
            }
            prop_assert!(bead.pipeline.lease.is_none(), "{action:?} on leased {}", bead.id);
            prop_assert!(bead.pipeline.dead_letter.is_none(), "{action:?} on parked {}", bead.id);
        }
    }

    #[test]
    fn dispatches_stay_within_jobs(snap in snapshot()) {
        let d = decide(&snap);
        let in_flight = d.nodes.values().filter(|n| matches!(n.rest, Some(Rest::InFlight { .. }))).count();
        let dispatches = d.actions.iter().filter(|a| matches!(a, Action::Dispatch { .. })).count();
        prop_assert!(dispatches <= (snap.limits.jobs as usize).saturating_sub(in_flight));
    }

    #[test]
    fn no_overlapping_sibling_dispatches(snap in snapshot()) {
        let d = decide(&snap);
        let by_id: HashMap<&str, &Bead> = snap.beads.iter().map(|b| (b.id.as_str(), b)).collect();
        let busy: Vec<&Bead> = d
            .actions
            .iter()
            .filter(|a| matches!(a, Action::Dispatch { .. }))
            .map(|a| by_id[a.bead()])
            .collect();
        let in_flight: Vec<&Bead> = d
            .nodes
            .iter()
            .filter(|(_, n)| matches!(n.rest, Some(Rest::InFlight { .. })))
            .map(|(id, _)| by_id[id.as_str()])
            .collect();
        for (i, a) in busy.iter().enumerate() {
            for b in busy.iter().skip(i + 1).chain(in_flight.iter()) {
                if a.parent == b.parent {
                    prop_assert!(
                        !scopes_overlap(&a.pipeline.files, &b.pipeline.files),
                        "{} and {} overlap", a.id, b.id
                    );
                }
            }
        }
    }

    #[test]
    fn ready_exactly_when_there_is_work(snap in snapshot()) {
        let d = decide(&snap);
        let in_flight = d.nodes.values().any(|n| matches!(n.rest, Some(Rest::InFlight { .. })));
        // A node backing off is work the run does itself, once its time comes (issue 10).
        let backoff: Vec<&str> = d
            .nodes
            .values()
            .filter_map(|n| match &n.rest {
                Some(Rest::Backoff { until, .. }) => Some(until.as_str()),
                _ => None,
            })
            .collect();
        let work = !d.actions.is_empty() || in_flight || !backoff.is_empty();
        if !matches!(d.status, RunStatus::Done | RunStatus::Budget) {
            prop_assert_eq!(d.status == RunStatus::Ready, work, "{:?}", d.status);
        }
        // A ready run that may take another pass wakes for the earliest backoff; no other run
        // waits for one.
        let another = snap.limits.max_passes.is_none_or(|m| snap.counters.passes + 1 < m);
        let wake = match d.status {
            RunStatus::Ready if another => backoff.iter().min().copied(),
            _ => None,
        };
        prop_assert_eq!(d.wake_at.as_deref(), wake);
    }

    #[test]
    fn every_node_has_an_action_or_a_rest(snap in snapshot()) {
        let d = decide(&snap);
        prop_assert_eq!(d.nodes.len(), snap.beads.len());
        for (id, node) in &d.nodes {
            let acted = d.actions.iter().filter(|a| a.bead() == id).count();
            prop_assert_eq!(acted + usize::from(node.rest.is_some()), 1, "{}", id);
        }
    }
}
