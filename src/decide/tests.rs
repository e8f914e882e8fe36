//! Edges of the table, beside it: rule order, terminal states, odd snapshots.

use crate::model::bead::{DeadLetter, Lease};
use crate::model::{Action, Bead, Manifest, Rest, Rule, RunStatus, Snapshot, Status, Text};

use super::decide;

const AT: &str = "2025-01-01T00:00:00Z";

fn bead(id: &str, step: &str) -> Bead {
    let mut b = Bead::new(id.into(), id.into(), String::new(), AT);
    b.pipeline.route = "leaf".into();
    b.pipeline.step = step.into();
    b.pipeline.seq = 10;
    b.pipeline.entered = 5;
    b
}

/// A snapshot read in a repository with `main` checked out (every node has a target).
fn snap(beads: Vec<Bead>) -> Snapshot {
    Snapshot {
        branch: Some("main".into()),
        ..Snapshot::new(Manifest::default_manifest(), beads, AT, "me", "run")
    }
}

fn rest_of<'a>(d: &'a crate::model::Decision, id: &str) -> Option<&'a Rest> {
    d.nodes.get(id).and_then(|n| n.rest.as_ref())
}

#[test]
fn a_closed_node_ignores_every_other_rule() {
    let mut b = bead("sp-a", "implement");
    b.status = Status::Closed;
    b.pipeline.lease = Some(Box::new(Lease {
        holder: "other".into(),
        since: AT.into(),
        credential_sha256: None,
        job: None,
    }));
    b.pipeline.dead_letter = Some(Box::new(DeadLetter {
        step: "implement".into(),
        reason: "x".into(),
        seq: 9,
        at: AT.into(),
    }));
    let d = decide(&snap(vec![b]));
    assert!(d.actions.is_empty());
    assert_eq!(rest_of(&d, "sp-a"), Some(&Rest::Closed));
    assert_eq!(d.nodes["sp-a"].rule, Rule::Closed);
    assert_eq!(d.status, RunStatus::Done);
}

/// The module doc's table is the code's: one row per [`Rule`], numbered from 1 in order, named
/// as the rule is.
#[test]
fn the_module_table_lists_every_rule_in_order() {
    let doc = include_str!("mod.rs");
    let rows: Vec<(u8, &str)> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("//! | "))
        .filter_map(|row| {
            let mut cells = row.split(" | ");
            let n = cells.next()?.trim().parse().ok()?;
            Some((n, cells.next()?.trim()))
        })
        .collect();
    let rules: Vec<(u8, &str)> = Rule::ALL.iter().map(|r| (r.number(), r.name())).collect();
    assert_eq!(rows, rules);
    for (i, rule) in Rule::ALL.iter().enumerate() {
        assert_eq!(usize::from(rule.number()), i + 1);
        assert_eq!(Rule::try_from(rule.number()), Ok(*rule));
    }
    assert!(Rule::try_from(0).is_err() && Rule::try_from(31).is_err());
}

/// A dispatch held back by the jobs limit keeps the rule that asked for it.
#[test]
fn a_queued_dispatch_keeps_its_rule() {
    let mut s = snap(vec![bead("sp-a", "implement")]);
    s.limits.jobs = 0;
    let d = decide(&s);
    assert_eq!(rest_of(&d, "sp-a"), Some(&Rest::Queued));
    assert_eq!(d.nodes["sp-a"].rule, Rule::Dispatch);
    let json = d.to_pretty_json();
    assert!(json.contains("\"rule\": 29,"), "{json}");
}

#[test]
fn own_lease_is_in_flight_and_counts_against_jobs() {
    let mut a = bead("sp-a", "implement");
    a.pipeline.lease = Some(Box::new(Lease {
        holder: "me".into(),
        since: AT.into(),
        credential_sha256: None,
        job: None,
    }));
    let b = bead("sp-b", "implement");
    let d = decide(&snap(vec![a, b]));
    assert!(matches!(rest_of(&d, "sp-a"), Some(Rest::InFlight { .. })));
    assert_eq!(rest_of(&d, "sp-b"), Some(&Rest::Queued));
    assert_eq!(d.status, RunStatus::Ready);
}

#[test]
fn zero_jobs_queues_every_dispatch_but_not_checks() {
    let mut s = snap(vec![bead("sp-a", "implement"), bead("sp-b", "review")]);
    s.limits.jobs = 0;
    let d = decide(&s);
    assert_eq!(rest_of(&d, "sp-a"), Some(&Rest::Queued));
    assert!(matches!(d.actions.as_slice(), [Action::Check { .. }]));
}

#[test]
fn duplicate_ids_keep_the_highest_seq_whatever_the_order() {
    let old = bead("sp-a", "implement");
    let mut new = bead("sp-a", "review");
    new.pipeline.seq = 11;
    let a = decide(&snap(vec![old.clone(), new.clone()]));
    let b = decide(&snap(vec![new, old]));
    assert_eq!(a, b);
    assert_eq!(a.nodes["sp-a"].step, "review");
}

#[test]
fn a_missing_scope_root_is_not_done() {
    let mut s = snap(vec![]);
    s.scope = Some("sp-gone".into());
    assert_eq!(decide(&s).status, RunStatus::Idle);
}

#[test]
fn a_parent_cycle_does_not_hang() {
    let mut a = bead("sp-a", "implement");
    a.parent = Some("sp-b".into());
    a.pipeline.gate = Some(Box::new(crate::model::bead::Gate {
        step: "implement".into(),
        state: crate::model::bead::GateState::Pending,
        seq: 9,
        by: None,
        autonomy: None,
        supplied_by: None,
        route: None,
        land: None,
        at: AT.into(),
    }));
    let mut b = bead("sp-b", "implement");
    b.parent = Some("sp-a".into());
    let d = decide(&snap(vec![a, b]));
    assert!(matches!(
        rest_of(&d, "sp-a"),
        Some(Rest::AwaitingHuman { .. })
    ));
    // Neither is top-level, so "done" cannot hold; the run is not stuck.
    assert_ne!(d.status, RunStatus::Done);
}

#[test]
fn budget_wins_over_ready_but_not_over_done() {
    let mut s = snap(vec![bead("sp-a", "implement")]);
    s.limits.max_passes = Some(1);
    s.counters.passes = 1;
    assert_eq!(decide(&s).status, RunStatus::Budget);
    s.beads[0].status = Status::Closed;
    assert_eq!(decide(&s).status, RunStatus::Done);
}

fn unreadable(id: &str) -> crate::model::snapshot::Unreadable {
    crate::model::snapshot::Unreadable {
        id: id.into(),
        file: format!(".splice/beads/{id}.json"),
        error: "not a valid bead: EOF while parsing".into(),
    }
}

#[test]
fn an_unreadable_bead_file_rests_escalated_and_the_others_go_on() {
    let mut s = snap(vec![bead("sp-a", "implement")]);
    s.unreadable = vec![unreadable("sp-b")];
    let d = decide(&s);
    match rest_of(&d, "sp-b") {
        Some(Rest::Escalated { reason }) => {
            assert!(reason.contains(".splice/beads/sp-b.json") && reason.contains("EOF"))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(d.nodes["sp-b"].step, "");
    assert!(matches!(d.actions.as_slice(), [Action::Dispatch { bead, .. }] if bead == "sp-a"));
}

#[test]
fn below_an_unreadable_bead_the_lineage_is_unknown_so_the_node_escalates() {
    let mut child = bead("sp-root.1", "implement");
    child.parent = Some("sp-root".into());
    let mut grandchild = bead("sp-root.1.1", "implement");
    grandchild.parent = Some("sp-root.1".into());
    let mut s = snap(vec![child, grandchild, bead("sp-other", "implement")]);
    s.unreadable = vec![unreadable("sp-root")];
    let d = decide(&s);
    for id in ["sp-root.1", "sp-root.1.1"] {
        assert!(
            matches!(rest_of(&d, id), Some(Rest::Escalated { reason }) if reason.contains("sp-root")),
            "{id}: {:?}",
            rest_of(&d, id)
        );
    }
    assert!(matches!(d.actions.as_slice(), [Action::Dispatch { bead, .. }] if bead == "sp-other"));
}

#[test]
fn unreadable_files_decide_the_same_whatever_their_order_and_a_bead_wins_its_id() {
    let mut closed = bead("sp-a", "deliver");
    closed.status = Status::Closed;
    let mut s = snap(vec![closed]);
    s.unreadable = vec![unreadable("sp-z"), unreadable("sp-a"), unreadable("sp-m")];
    let d = decide(&s);
    assert_eq!(rest_of(&d, "sp-a"), Some(&Rest::Closed));
    assert_eq!(
        d.status,
        RunStatus::Escalated,
        "not done: sp-m and sp-z may be open"
    );
    s.unreadable.reverse();
    assert_eq!(decide(&s), d);
}

#[test]
fn the_backoff_doubles_from_its_base_up_to_an_hour() {
    use super::{MAX_BACKOFF_S, backoff_s};
    assert_eq!(
        [1, 2, 3].map(|n| backoff_s(10, n)),
        [10, 20, 40],
        "after attempts 1, 2, 3"
    );
    assert_eq!(backoff_s(10, 30), MAX_BACKOFF_S);
    assert_eq!(backoff_s(10, u32::MAX), MAX_BACKOFF_S);
    assert_eq!(backoff_s(0, 3), 0, "0 waits none");
    assert_eq!(backoff_s(7200, 2), 7200, "a base above the cap is kept");
}

#[test]
fn an_exit_time_that_does_not_parse_waits_none() {
    use crate::model::bead::{ExitKind, ExitRecord};
    let mut b = bead("sp-a", "implement");
    b.pipeline.attempts.insert("implement", 1);
    b.push_exit(ExitRecord {
        step: "implement".into(),
        attempt: 1,
        seq: 9,
        exit: ExitKind::Failed,
        code: Some(1),
        cause: None,
        proposed: false,
        log: None,
        usage: None,
        retry_after_s: None,
        at: "yesterday".into(),
    });
    let mut s = snap(vec![b]);
    s.limits.backoff_s = 10;
    let d = decide(&s);
    assert!(
        matches!(d.actions[..], [Action::Dispatch { attempt: 2, .. }]),
        "{d:?}"
    );
    assert_eq!(d.wake_at, None);
}

#[test]
fn a_transient_end_waits_at_least_the_retry_after_its_api_asked_for() {
    use crate::model::bead::{ExitKind, ExitRecord};
    let transient = |retry_after_s| {
        // The transient end gave its attempt back.
        let mut b = bead("sp-a", "implement");
        b.push_exit(ExitRecord {
            step: "implement".into(),
            attempt: 1,
            seq: 9,
            exit: ExitKind::Transient,
            code: Some(1),
            cause: Some("429 Too Many Requests; retry after 120s".into()),
            proposed: false,
            log: None,
            usage: None,
            retry_after_s,
            at: AT.into(),
        });
        b
    };
    let at = |now: &str, retry_after_s| {
        let mut s = snap(vec![transient(retry_after_s)]);
        s.limits.backoff_s = 10;
        s.now = now.into();
        decide(&s)
    };
    // Without a retry-after, splice's own backoff (10 s for one transient end).
    let d = at("2025-01-01T00:01:00Z", None);
    assert!(
        matches!(d.actions[..], [Action::Dispatch { attempt: 1, .. }]),
        "{d:?}"
    );
    // With one, at least that long: 120 s, not 10.
    let d = at("2025-01-01T00:01:00Z", Some(120));
    assert!(d.actions.is_empty(), "{d:?}");
    assert_eq!(d.wake_at.as_deref(), Some("2025-01-01T00:02:00Z"));
    let d = at("2025-01-01T00:02:00Z", Some(120));
    assert!(
        matches!(d.actions[..], [Action::Dispatch { attempt: 1, .. }]),
        "{d:?}"
    );
    // A hostile wait is capped at the backoff's cap.
    let d = at("2025-01-01T00:01:00Z", Some(u64::MAX));
    assert_eq!(d.wake_at.as_deref(), Some("2025-01-01T01:00:00Z"));
}

/// An imported issue (no route) with the given status.
fn plain(id: &str, status: Status) -> Bead {
    let mut b = Bead::new(id.into(), id.into(), String::new(), AT);
    b.status = status;
    b
}

#[test]
fn plain_beads_get_no_decision_but_block_and_parent_nodes() {
    // 700 imported issues and one task: the run is about the task.
    let mut beads: Vec<Bead> = (0..700)
        .map(|i| plain(&format!("bd-{i}"), Status::Open))
        .collect();
    let mut task = bead("bd-7.1", "implement");
    task.parent = Some("bd-7".into());
    beads.push(task.clone());
    let d = decide(&snap(beads.clone()));
    assert_eq!(d.nodes.keys().collect::<Vec<_>>(), ["bd-7.1"]);
    assert!(matches!(d.actions.as_slice(), [Action::Dispatch { bead, .. }] if bead == "bd-7.1"));

    // A node under a plain (open) epic is top-level: closing it is done.
    let last = beads.len() - 1;
    beads[last].status = Status::Closed;
    assert_eq!(decide(&snap(beads.clone())).status, RunStatus::Done);

    // A plain bead it depends on blocks it until bd closes it (or tombstones it).
    task.dependencies.push(crate::model::bead::Dependency {
        depends_on_id: "bd-3".into(),
        dep_type: "blocks".into(),
        extra: Default::default(),
    });
    beads[last] = task;
    assert!(matches!(
        rest_of(&decide(&snap(beads.clone())), "bd-7.1"),
        Some(Rest::Blocked { .. })
    ));
    beads[3].status = Status::Tombstone;
    assert!(decide(&snap(beads)).actions.len() == 1);
}

#[test]
fn a_store_of_only_plain_beads_is_idle_not_done() {
    let d = decide(&snap(vec![
        plain("bd-1", Status::Closed),
        plain("bd-2", Status::Deferred),
    ]));
    assert!(d.nodes.is_empty() && d.actions.is_empty());
    assert_eq!(d.status, RunStatus::Idle);
}

/// Rule 12 lists the open children its split sanctioned in the split's order, repeats
/// included: absent ones count as open, a closed plain bead as closed, and ids that share
/// their first 16 bytes are told apart.
#[test]
fn waiting_children_are_the_split_s_open_ones_in_its_order() {
    let mut parent = bead("sp-c", "delegate");
    parent.pipeline.route = "compound".into();
    let children = [
        "sp-c.9",
        "sp-c.10",
        "sp-c.absent",
        "sp-c.9",
        "sp-c.plain",
        "sp-c.123456789abc.closed",
        "sp-c.123456789abc.open",
    ];
    parent.pipeline.split = Some(Box::new(crate::model::bead::SplitRecord {
        children: children.iter().map(|c| Text::from(*c)).collect(),
        seq: 4,
    }));
    let child = |id: &str, closed: bool| {
        let mut b = bead(id, "implement");
        b.parent = Some("sp-c".into());
        if closed {
            b.status = Status::Closed;
        }
        b
    };
    let mut plain = Bead::new("sp-c.plain".into(), "p".into(), String::new(), AT);
    plain.status = Status::Closed;
    let beads = vec![
        child("sp-c.123456789abc.open", false),
        child("sp-c.10", true),
        plain,
        child("sp-c.9", false),
        child("sp-c.123456789abc.closed", true),
        parent,
    ];
    let d = decide(&snap(beads));
    let Some(Rest::WaitingChildren { children }) = rest_of(&d, "sp-c") else {
        panic!("{:?}", rest_of(&d, "sp-c"));
    };
    assert_eq!(
        children,
        &["sp-c.9", "sp-c.absent", "sp-c.9", "sp-c.123456789abc.open"]
    );
}

/// Siblings serialize whatever sits between them in id order: `sp-p.2`, a child of another
/// parent, comes between `sp-p.1` and `sp-p.3`, and all three declare the same file.
#[test]
fn siblings_apart_in_id_order_still_serialize_and_only_with_each_other() {
    let node = |id: &str, parent: &str| {
        let mut b = bead(id, "implement");
        b.parent = Some(parent.into());
        b.pipeline.files = vec!["src/x.rs".into()];
        b
    };
    let mut s = snap(vec![
        node("sp-p.3", "sp-p"),
        node("sp-p.2", "sp-q"),
        node("sp-p.1", "sp-p"),
    ]);
    s.limits.jobs = 8;
    let d = decide(&s);
    let dispatched: Vec<&str> = d
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Dispatch { bead, .. } => Some(bead.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(dispatched, ["sp-p.1", "sp-p.2"]);
    assert_eq!(
        rest_of(&d, "sp-p.3"),
        Some(&Rest::Serialized {
            behind: "sp-p.1".into()
        })
    );
}

fn blocked_by(mut b: Bead, on: &[&str]) -> Bead {
    b.dependencies = on
        .iter()
        .map(|d| crate::model::bead::Dependency {
            depends_on_id: (*d).into(),
            dep_type: "blocks".into(),
            extra: Default::default(),
        })
        .collect();
    b
}

fn escalated_reason<'a>(d: &'a crate::model::Decision, id: &str) -> Option<&'a str> {
    match rest_of(d, id) {
        Some(Rest::Escalated { reason }) => Some(reason),
        _ => None,
    }
}

/// Rule 7: nodes whose `blocks` dependencies lead back to them wait for each
/// other for ever. Each rests `escalated` naming the cycle (so the run is `escalated`, not
/// `idle`); a node that waits on the cycle from outside it stays `blocked`, and a bead whose
/// work is done breaks the cycle.
#[test]
fn a_cycle_of_blocks_dependencies_is_escalated_not_idle() {
    let beads = vec![
        blocked_by(bead("sp-a", "implement"), &["sp-b"]),
        blocked_by(bead("sp-b", "implement"), &["sp-c"]),
        blocked_by(bead("sp-c", "implement"), &["sp-a"]),
        blocked_by(bead("sp-d", "implement"), &["sp-a"]),
        blocked_by(bead("sp-e", "implement"), &["sp-e"]),
    ];
    let d = decide(&snap(beads.clone()));
    for id in ["sp-a", "sp-b", "sp-c"] {
        let reason = escalated_reason(&d, id).unwrap_or_else(|| panic!("{id}: {d:?}"));
        assert!(reason.contains("(sp-a, sp-b, sp-c)"), "{reason}");
        assert_eq!(d.nodes[id].rule, Rule::BlockedCycle);
    }
    assert!(escalated_reason(&d, "sp-e").is_some_and(|r| r.contains("(sp-e)")));
    assert!(matches!(rest_of(&d, "sp-d"), Some(Rest::Blocked { by }) if by == &["sp-a"]));
    assert_eq!(d.nodes["sp-d"].rule, Rule::Blocked);
    assert_eq!(d.status, RunStatus::Escalated);

    // The same decision whatever order the beads come in.
    let mut reversed = beads.clone();
    reversed.reverse();
    assert_eq!(decide(&snap(reversed)), d);

    // A closed bead on the way is no cycle: it blocks nothing.
    let mut broken = beads.clone();
    broken[1].status = Status::Closed;
    let d = decide(&snap(broken));
    assert!(matches!(d.actions.as_slice(), [Action::Dispatch { bead, .. }, ..] if bead == "sp-a"));
    assert!(matches!(rest_of(&d, "sp-c"), Some(Rest::Blocked { by }) if by == &["sp-a"]));

    // A plain bead on the way keeps it a cycle: it waits on the node as the node waits on it.
    let mut via_plain = beads[..1].to_vec();
    via_plain.push(blocked_by(plain("sp-b", Status::Open), &["sp-a"]));
    let d = decide(&snap(via_plain));
    assert!(escalated_reason(&d, "sp-a").is_some_and(|r| r.contains("(sp-a, sp-b)")));
}

/// A cycle as long as a campaign is found without recursion, and a reason names five of its
/// beads and how many more.
#[test]
fn a_long_cycle_is_found_and_named_in_part() {
    const N: usize = 20_000;
    let id = |k: usize| format!("sp-x.{k}");
    let beads: Vec<Bead> = (0..N)
        .map(|k| blocked_by(bead(&id(k), "implement"), &[&id((k + 1) % N)]))
        .collect();
    let d = decide(&snap(beads));
    let reason = escalated_reason(&d, &id(7)).unwrap();
    assert!(reason.contains(&format!("and {} more", N - 5)), "{reason}");
    assert!(
        (0..N).all(|k| escalated_reason(&d, &id(k)) == Some(reason)),
        "every bead of the cycle rests on it"
    );
}
