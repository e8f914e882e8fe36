//! The typed model: the manifest, the config and the snapshot `decide` reads.

use std::collections::BTreeSet;

use serde_json::Value;
use splice::decide::decide;
use splice::driver::prompts::artifact_for;
use splice::model::bead::{Gate, GateState, Lease, Proposal};
use splice::model::{Action, Bead, Config, Kind, Manifest, Rest, Snapshot, Usage};

use super::{Format, Target, files_in, repo_root};

const NOW: &str = "2026-01-01T00:00:00Z";

fn manifest_seeds() -> Vec<(String, Vec<u8>)> {
    let path = repo_root().join("manifest/coding-pipeline.json");
    vec![(
        path.display().to_string(),
        std::fs::read(&path).expect("the default manifest"),
    )]
}

/// `manifest`: parsing is deterministic; text that is not JSON is refused with problems, never
/// a default; a manifest splice accepts, written back, is accepted unchanged; every artifact
/// template it accepted renders; `decide` runs on a node at each of its steps.
pub const MANIFEST: Target = Target {
    name: "manifest",
    run: manifest,
    corpus: "manifest",
    cases: 3000,
    format: Format::Json,
    dict: &[
        "{{bead.id}}",
        "{{ step }}",
        "\"role\": \"spec\"",
        "\"schema_version\": 1",
        "\"optional\": true",
    ],
    seeds: manifest_seeds,
};

fn manifest(data: &[u8]) -> bool {
    let Some(text) = super::utf8(data) else {
        return false;
    };
    let first = Manifest::parse(text);
    assert_eq!(first, Manifest::parse(text), "parsing twice differs");
    if serde_json::from_str::<Value>(text).is_err() {
        assert!(first.is_err(), "text that is not JSON was accepted");
    }
    let m = match first {
        Ok(m) => m,
        Err(problems) => {
            assert!(!problems.0.is_empty(), "refused without naming a problem");
            return false;
        }
    };
    let written = serde_json::to_string(&m).expect("a manifest serializes");
    let back = Manifest::parse(&written)
        .unwrap_or_else(|p| panic!("splice refuses the manifest it wrote: {p}\n{written}"));
    assert_eq!(back, m, "a manifest changed when written and read back");
    for step in &m.steps {
        if let Err(e) = artifact_for(step, "sp-1.2", "sp-1") {
            panic!(
                "the manifest was accepted, yet step {} cannot render: {e}",
                step.name
            );
        }
    }
    for (route, steps) in &m.routes {
        let _ = m.entry_step(route);
        for s in steps {
            let _ = m.next_step(route, s);
        }
    }
    let snap = a_node_at_every_step(m);
    assert_eq!(
        decide(&snap),
        decide(&snap),
        "decide differs on one snapshot"
    );
    true
}

/// A snapshot with, for every step of every route, a fresh node, one with a proposal, one
/// with a pending gate and one under another holder's lease; and one at an unknown step.
fn a_node_at_every_step(m: Manifest) -> Snapshot {
    let mut beads = Vec::new();
    let places: Vec<(String, String)> = m
        .routes
        .iter()
        .flat_map(|(r, steps)| steps.iter().map(move |s| (r.clone(), s.clone())))
        .chain([("leaf".to_string(), "nowhere".to_string())])
        .collect();
    for (i, (route, step)) in places.iter().take(200).enumerate() {
        for variant in 0..4 {
            let mut b = Bead::new(format!("sp-{i}-{variant}"), "t".into(), String::new(), NOW);
            b.pipeline.kind = Kind::for_route(route).unwrap_or(Kind::Leaf);
            b.pipeline.route = route.clone().into();
            b.pipeline.step = step.clone().into();
            b.pipeline.seq = 3;
            b.pipeline.entered = 1;
            match variant {
                1 => {
                    b.pipeline.proposal = Some(Box::new(Proposal {
                        step: step.clone(),
                        seq: 2,
                        artifact: "x".into(),
                        at: NOW.into(),
                        ..Proposal::default()
                    }))
                }
                2 => {
                    b.pipeline.gate = Some(Box::new(Gate {
                        step: step.clone(),
                        state: GateState::Pending,
                        seq: 2,
                        by: None,
                        autonomy: None,
                        supplied_by: None,
                        route: None,
                        land: None,
                        at: NOW.into(),
                    }))
                }
                3 => {
                    b.pipeline.lease = Some(Box::new(Lease {
                        holder: "other".into(),
                        since: NOW.into(),
                        credential_sha256: None,
                        job: None,
                    }))
                }
                _ => {}
            }
            beads.push(b);
        }
    }
    Snapshot::new(m, beads, NOW, "fuzz", "run-1")
}

/// `config`: parsing is deterministic; text that is not TOML is refused; a config splice read
/// serializes, and reads back the same; what a pass asks of it (commands, prices) answers.
pub const CONFIG: Target = Target {
    name: "config",
    run: config,
    corpus: "config",
    cases: 20_000,
    format: Format::Text,
    dict: &[
        "[agent]\n",
        "[limits]\n",
        "[prices.m]\n",
        "[agent.steps.review]\n",
        "[delivery]\n",
        "[autonomy]\n",
        "jobs = ",
        "input = ",
        "nan",
        "inf",
        "-inf",
        "1e999",
        "schema_version = ",
        "command = [\"a\"]\n",
        "'''",
        "\"\"\"",
    ],
    seeds: super::no_seeds,
};

fn config(data: &[u8]) -> bool {
    let Some(text) = super::utf8(data) else {
        return false;
    };
    let first = Config::parse(text);
    // Debug, not PartialEq: a price may be NaN.
    assert_eq!(
        format!("{first:?}"),
        format!("{:?}", Config::parse(text)),
        "parsing twice differs"
    );
    if text.parse::<toml::Table>().is_err() {
        assert!(first.is_err(), "text that is not TOML was accepted");
    }
    let Ok(c) = first else { return false };
    let written = toml::to_string(&c)
        .unwrap_or_else(|e| panic!("a config splice read does not serialize: {e}"));
    let back = Config::parse(&written)
        .unwrap_or_else(|e| panic!("splice refuses the config it wrote: {e}\n{written}"));
    assert_eq!(format!("{back:?}"), format!("{c:?}"), "written: {written}");
    for step in ["implement", "review", ""] {
        assert!(!c.agent.command_for(step, true).is_empty() || c.agent.command.is_some());
    }
    for model in c.prices.keys().map(String::as_str).chain(["claude-x"]) {
        let mut usage = Usage {
            input_tokens: 1_000,
            output_tokens: u64::MAX,
            reasoning_tokens: 7,
            model: Some(format!("{model}-2025")),
            ..Usage::default()
        };
        splice::exec::usage::price(&mut usage, &c.prices);
    }
    true
}

fn snapshot_seeds() -> Vec<(String, Vec<u8>)> {
    files_in(&repo_root().join("snapshots"), |n| {
        n.ends_with(".json") && !n.contains(".expected")
    })
}

/// `decide`: on any snapshot splice reads, the decision is the same twice, the same after the
/// snapshot is written and read back, and (ids unique) the same whatever the bead order, with
/// one action or one rest per node, no dispatch past the jobs limit and no action on a parked
/// or leased open node.
pub const DECIDE: Target = Target {
    name: "decide",
    run: decide_target,
    corpus: "decide",
    cases: 3000,
    format: Format::Json,
    dict: &[],
    seeds: snapshot_seeds,
};

fn decide_target(data: &[u8]) -> bool {
    let Some(text) = super::utf8(data) else {
        return false;
    };
    let Ok(snap) = serde_json::from_str::<Snapshot>(text) else {
        return false;
    };
    let d = decide(&snap);
    let once = d.to_pretty_json();
    assert_eq!(once, decide(&snap).to_pretty_json(), "decide differs twice");
    let back: Snapshot = serde_json::from_str(&snap.to_pretty_json())
        .unwrap_or_else(|e| panic!("splice cannot read the snapshot it wrote: {e}"));
    assert_eq!(
        decide(&back).to_pretty_json(),
        once,
        "a written and read snapshot decides differently"
    );
    let ids: BTreeSet<&str> = snap.beads.iter().map(|b| b.id.as_str()).collect();
    if ids.len() != snap.beads.len() {
        return true;
    }
    let mut reversed = snap.clone();
    reversed.beads.reverse();
    assert_eq!(
        decide(&reversed).to_pretty_json(),
        once,
        "the bead order changed the decision"
    );
    let unreadable: BTreeSet<&str> = snap.unreadable.iter().map(|u| u.id.as_str()).collect();
    // Every node has a decision; a plain bead (no route: imported, or made by `splice
    // create`) is no node and has none.
    for b in snap.beads.iter().filter(|b| b.is_node()) {
        assert!(
            d.nodes.contains_key(b.id.as_str()),
            "{} has no decision",
            b.id
        );
    }
    for id in d.nodes.keys() {
        assert!(
            ids.contains(id.as_str()) || unreadable.contains(id.as_str()),
            "a decision for {id}, which is not in the snapshot"
        );
    }
    for (id, node) in &d.nodes {
        let acted = d.actions.iter().filter(|a| a.bead() == id).count();
        assert_eq!(acted + usize::from(node.rest.is_some()), 1, "{id}");
    }
    let in_flight = d
        .nodes
        .values()
        .filter(|n| matches!(n.rest, Some(Rest::InFlight { .. })))
        .count();
    let dispatches = d
        .actions
        .iter()
        .filter(|a| matches!(a, Action::Dispatch { .. }))
        .count();
    assert!(
        dispatches <= (snap.limits.jobs as usize).saturating_sub(in_flight),
        "{dispatches} dispatches, {in_flight} in flight, jobs {}",
        snap.limits.jobs
    );
    for action in &d.actions {
        let bead = snap.beads.iter().find(|b| b.id == action.bead());
        let bead = bead.expect("an action names a bead of the snapshot");
        if !bead.is_closed() {
            assert!(bead.pipeline.lease.is_none(), "{action:?} on a leased node");
            assert!(
                bead.pipeline.dead_letter.is_none(),
                "{action:?} on a parked node"
            );
        }
    }
    true
}
