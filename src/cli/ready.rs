//! `splice ready`: what could run now, and why — the pure decision over the state (`decide`, as
//! `splice status` and `pass --dry-run` read it), not a second implementation: each action it
//! would take, with the reason `status` prints. And the plain beads (imported from bd, or made
//! by `splice create`) a person could start: open, every `blocks` dependency done (the rule
//! `decide` applies to nodes, [`crate::policy::deps`]), with the command that starts one: an
//! epic with children is started as a campaign (`splice start ID --campaign`), since `start`
//! refuses to make it a leaf.
//!
//! `--json` is an array, as bd's `ready --json`: the nodes with an action, then the startable
//! plain beads; `--envelope` gives splice's versioned object instead.

use std::collections::HashMap;

use serde::Serialize;

use super::{Global, output};
use crate::decide::decide;
use crate::driver::runner::holder_alive;
use crate::driver::{advice, snapshot};
use crate::error::Result;
use crate::model::bead::Status;
use crate::model::id::natural_cmp;
use crate::model::{Action, Bead, RunStatus};
use crate::policy::deps;
use crate::store::Store;

/// What could run now and why: the decision's actions, and the plain beads ready to start.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print JSON: an array, as bd's `ready --json`: each node with an action, then each plain
    /// bead ready to start (docs/cli.md).
    #[arg(long)]
    pub json: bool,
    /// With --json: splice's versioned envelope instead of the array, `{"schema_version",
    /// "status", "actions": […], "startable": […]}`.
    #[arg(long, requires = "json")]
    pub envelope: bool,
}

/// One entry of `ready --json`'s array: a bead, with what would happen to it.
#[derive(Serialize, Debug)]
struct Item<'a> {
    id: &'a str,
    title: &'a str,
    status: &'a str,
    priority: i64,
    issue_type: &'a str,
    /// A node's step; `null` for a plain bead.
    step: Option<&'a str>,
    /// A node's action (`dispatch`, `check`, …); `null` for a plain bead.
    action: Option<&'static str>,
    /// Why (a node: the line `splice status` prints).
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// A plain bead: the command that starts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<String>,
}

/// One action of the decision.
#[derive(Serialize, Debug)]
struct Ready<'a> {
    bead: &'a str,
    /// The node's current step.
    step: &'a str,
    /// The action's kind: `dispatch`, `check`, `park`, `skip`, `escalate`, …
    kind: &'static str,
    /// The line `splice status` prints for it.
    reason: String,
    /// The action as the decision holds it.
    action: &'a Action,
}

/// A plain bead a person could start.
#[derive(Serialize, Debug)]
struct Startable<'a> {
    id: &'a str,
    title: &'a str,
    priority: i64,
    issue_type: &'a str,
    /// The command that puts it on a route.
    command: String,
}

/// An open plain bead held by a `blocks` dependency on what is not there: a bead not in the
/// store (bd deleted it, or never exported it) or another project's capability not shipped.
#[derive(Serialize, Debug)]
struct Held<'a> {
    id: &'a str,
    /// The targets that are not there, as written.
    waits_on: Vec<String>,
    /// Why, and what to do.
    note: String,
}

#[derive(Serialize, Debug)]
struct Report<'a> {
    schema_version: u32,
    status: RunStatus,
    /// The status line ([`advice::headline`]); not in the JSON.
    #[serde(skip)]
    headline: String,
    actions: Vec<Ready<'a>>,
    startable: Vec<Startable<'a>>,
    /// Open plain beads held by what is not there (a bead or a shipped capability).
    held: Vec<Held<'a>>,
}

pub fn run(global: &Global, args: Args) -> Result<i32> {
    let store = Store::discover(global.dir.as_deref())?;
    let who = super::snapshot::identity(std::env::var("SPLICE_HOLDER").ok(), None);
    let snap = snapshot::build(&store, None, who)?;
    let decision = decide(&snap);
    let by_id: HashMap<&str, &Bead> = snap.beads.iter().map(|b| (b.id.as_str(), b)).collect();
    let actions = decision
        .actions
        .iter()
        .map(|a| Ready {
            bead: a.bead(),
            step: by_id.get(a.bead()).map_or("", |b| b.pipeline.step.as_str()),
            kind: a.name(),
            reason: advice::reason(Some(a), None),
            action: a,
        })
        .collect();
    let with_children: std::collections::HashSet<&str> = snap
        .beads
        .iter()
        .filter(|b| b.status != Status::Tombstone)
        .filter_map(|b| b.parent.as_deref())
        .collect();
    let mut startable: Vec<&Bead> = snap
        .beads
        .iter()
        .filter(|b| !b.is_node() && b.status == Status::Open)
        .filter(|b| {
            deps::blocked_by(
                b,
                |id| by_id.get(id).copied(),
                |id| snap.shipped.contains(id),
            )
            .is_empty()
        })
        .collect();
    startable.sort_by(|a, b| a.priority.cmp(&b.priority).then(natural_cmp(&a.id, &b.id)));
    let held: Vec<Held> = snap
        .beads
        .iter()
        .filter(|b| !b.is_node() && b.status == Status::Open)
        .filter_map(|b| {
            let waits_on: Vec<String> = deps::blocked_by(
                b,
                |id| by_id.get(id).copied(),
                |id| snap.shipped.contains(id),
            )
            .into_iter()
            .filter(|id| !by_id.contains_key(id.as_str()))
            .map(|id| id.to_string())
            .collect();
            if waits_on.is_empty() {
                return None;
            }
            let note = waits_on
                .iter()
                .map(|t| match crate::model::bd::external_ref(t) {
                    Some(_) => advice::not_shipped(t),
                    None => {
                        let t = match crate::model::id::is_valid(t) {
                            true => t.to_string(),
                            false => crate::model::id::shown(t),
                        };
                        format!(
                            "{t} is not in the store: import or create it, or `splice dep rm {} \
                             {t}`",
                            b.id
                        )
                    }
                })
                .collect::<Vec<_>>()
                .join("; ");
            Some(Held {
                id: &b.id,
                waits_on,
                note,
            })
        })
        .collect();
    let rests = decision
        .nodes
        .iter()
        .filter_map(|(id, n)| Some((id.as_str(), n.rest.as_ref()?)));
    let headline = advice::headline(decision.status, rests, holder_alive);
    let report = Report {
        schema_version: output::OUTPUT_SCHEMA,
        headline,
        status: decision.status,
        actions,
        startable: startable
            .into_iter()
            .map(|b| Startable {
                id: &b.id,
                title: &b.title,
                priority: b.priority,
                issue_type: &b.issue_type,
                command: match with_children.contains(b.id.as_str()) {
                    true => format!("splice start {} --campaign", b.id),
                    false => format!("splice start {}", b.id),
                },
            })
            .collect(),
        held,
    };
    if args.json && args.envelope {
        output::print_json(&report);
    } else if args.json {
        output::print_json(&items(&report, &by_id));
    } else {
        output::out(&human(&report));
    }
    Ok(0)
}

/// `ready --json`'s array: the nodes with an action, then the startable plain beads.
fn items<'a>(r: &'a Report, by_id: &HashMap<&str, &'a Bead>) -> Vec<Item<'a>> {
    let mut out = Vec::new();
    for a in &r.actions {
        let Some(b) = by_id.get(a.bead) else { continue };
        out.push(Item {
            id: a.bead,
            title: &b.title,
            status: b.status.as_str(),
            priority: b.priority,
            issue_type: &b.issue_type,
            step: Some(a.step),
            action: Some(a.kind),
            reason: Some(a.reason.clone()),
            command: None,
        });
    }
    for s in &r.startable {
        out.push(Item {
            id: s.id,
            title: s.title,
            status: "open",
            priority: s.priority,
            issue_type: s.issue_type,
            step: None,
            action: None,
            reason: None,
            command: Some(s.command.clone()),
        });
    }
    out
}

fn human(r: &Report) -> String {
    let mut out = format!(
        "status: {} — {}\n",
        r.status.as_str(),
        output::printable(&r.headline)
    );
    if r.actions.is_empty() {
        out.push_str("nothing for `splice run` to do now (`splice status` says why)\n");
    } else {
        out.push_str("`splice run` would now:\n");
        for a in &r.actions {
            out.push_str(&format!(
                "  {}  {}  {}\n",
                a.bead,
                output::printable(a.step),
                output::printable(&a.reason)
            ));
        }
    }
    if !r.startable.is_empty() {
        out.push_str("plain beads ready to start (open, nothing blocking):\n");
        for s in &r.startable {
            out.push_str(&format!(
                "  {}  P{}  {}  {}  → {}\n",
                s.id,
                s.priority,
                output::printable(s.issue_type),
                output::printable(s.title),
                s.command
            ));
        }
    }
    if !r.held.is_empty() {
        out.push_str("plain beads held by what is not there:\n");
        for h in &r.held {
            out.push_str(&format!("  {}  {}\n", h.id, output::printable(&h.note)));
        }
    }
    out
}
