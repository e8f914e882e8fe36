//! `splice status`: the campaign tree, each node's step, lease, attempts, where its evidence is
//! read, its reason from `decide`, and what a person can do next, with the exact command.
//!
//! Text for a person by default (coloured on a terminal unless `NO_COLOR` is set), one JSON
//! object with `--json`; either is written row by row as the rows are made (JSON rows on a few
//! threads, written in order).

use std::collections::HashSet;
use std::io::{IsTerminal, Write};

use serde::Serialize;

use crate::decide::{FxMap, decide};
use crate::driver::{prompts, snapshot, tree};
use crate::error::{Error, Result};
use crate::model::bead::Lease;
use crate::model::{Action, Bead, Decision, Rest, RunStatus, Snapshot};
use crate::policy::lineage;
use crate::store::Store;

use super::Global;
use crate::driver::advice::{self, Next, Node};
use crate::driver::runner::holder_alive;

mod human;

/// Show the tree with each node's step and the reason it acts or rests.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only this bead and its descendants.
    #[arg(long, value_name = "ID")]
    pub scope: Option<String>,
    /// Machine output: one JSON object (each node with its `next` step and command).
    #[arg(long)]
    pub json: bool,
    /// Colour the text: auto (on a terminal, unless NO_COLOR is set), always or never.
    #[arg(long, value_enum, default_value = "auto")]
    pub color: Color,
}

/// When to colour the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

/// A loop node's iterations: how many of its limit, each score and the monitor's last word.
#[derive(Serialize, Debug)]
struct LoopRow {
    iterations: usize,
    max_iterations: u32,
    /// Each iteration's score, in order (`null`: a stage failed).
    scores: Vec<Option<i64>>,
    /// The monitor's decision after the latest iteration, as recorded.
    decision: Option<String>,
    /// What was done about it (`escalated`, `rolled_back`…).
    effect: Option<&'static str>,
    /// The node escalated to this command (once per node).
    #[serde(skip_serializing_if = "Option::is_none")]
    escalated_to: Option<Vec<String>>,
    /// The latest iteration's verification stages: which ran and what each found.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stages: Vec<crate::model::trajectory::StageReport>,
}

/// The loop row of `b` at its step `step`, when it is a loop step.
fn loop_row(b: &crate::model::Bead, step: Option<&crate::model::Step>) -> Option<LoopRow> {
    let spec = step?.loop_.as_ref()?;
    let p = &b.pipeline;
    let its: Vec<_> = b.iterations_since_entry().collect();
    let latest = its.last();
    Some(LoopRow {
        iterations: its.len(),
        max_iterations: spec.max_iterations,
        scores: its.iter().map(|i| i.score).collect(),
        decision: latest.and_then(|i| i.monitor.get("decision")?.as_str().map(str::to_string)),
        effect: latest.and_then(|i| i.effect.as_ref().map(|e| e.name())),
        escalated_to: p.escalation.as_ref().map(|e| e.command.clone()),
        stages: latest.map(|i| i.context.stages.clone()).unwrap_or_default(),
    })
}

/// One row of the tree.
#[derive(Serialize, Debug)]
struct Row<'a> {
    id: &'a str,
    parent: Option<&'a str>,
    depth: usize,
    title: &'a str,
    kind: &'static str,
    status: &'a str,
    /// Closed by `splice cancel`: the work will not be done.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    cancelled: bool,
    step: &'a str,
    lease: Option<&'a Lease>,
    attempts: u32,
    max_attempts: Option<u32>,
    /// A loop step's iterations since the node entered it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(rename = "loop")]
    looping: Option<LoopRow>,
    /// What its dispatches used: tokens and cost (`known_cost_usd` when part is unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<&'a crate::model::Usage>,
    /// Its open calls (`pipeline.calls`, outermost first): where it returns when its route
    /// ends. Absent when none is open.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    calls: &'a [crate::model::bead::CallFrame],
    /// Where this node's floors read: its worktree, or the repository root (`.`).
    floors_dir: String,
    action: Option<&'a Action>,
    rest: Option<RowRest<'a>>,
    reason: String,
    /// What happens next, or what a person can do, with the command.
    next: Next,
}

/// The shape of `status --json` ([`super::output::OUTPUT_SCHEMA`] until a row's
/// `waiting-children` rest gave its open children's count, `open`, in place of their list).
pub const STATUS_SCHEMA: u32 = 2;

/// The report's fields before its rows (`nodes`, written after them by [`write_json`]).
#[derive(Serialize)]
struct Head<'a> {
    schema_version: u32,
    status: RunStatus,
    scope: Option<&'a str>,
    /// What every node shown used, summed: tokens and cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<crate::model::Usage>,
}

/// `status --json`: one JSON object, indented as serde_json indents, its rows made and
/// serialized on a few threads (at 100,000 nodes they were a third of the command) and written
/// in order as they come.
fn write_json(
    out: &mut impl Write,
    status: RunStatus,
    scope: Option<&str>,
    rows: &Rows<'_, impl Fn(&str) -> String + Sync>,
) -> std::io::Result<()> {
    let head = Head {
        schema_version: STATUS_SCHEMA,
        status,
        scope,
        usage: rows.usage(),
    };
    let mut text = Vec::new();
    head.serialize(&mut serde_json::Serializer::with_formatter(
        &mut text,
        super::output::Pretty::default(),
    ))?;
    // `{…\n}`: the rows go before the closing brace.
    let head = text
        .strip_suffix(b"\n}")
        .ok_or_else(|| std::io::Error::other("the report's head is an object"))?;
    out.write_all(head)?;
    out.write_all(b",\n  \"nodes\": [")?;
    let row = |&at: &(usize, usize)| -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(1024);
        // A row is an element of `nodes`, two levels in.
        let pretty = super::output::Pretty::at_level(2);
        let mut json = serde_json::Serializer::with_formatter(&mut bytes, pretty);
        rows.row(at).serialize(&mut json)?;
        Ok(bytes)
    };
    let mut written: std::io::Result<usize> = Ok(0);
    // Rows are CPU work: a thread a core.
    let cpu = crate::store::Bound::Cpu;
    crate::store::par_each(&rows.order, cpu, row, |_, bytes| {
        if let Ok(n) = &mut written {
            let put = bytes.and_then(|bytes| {
                out.write_all(if *n == 0 { b"\n    " } else { b",\n    " })?;
                out.write_all(&bytes)
            });
            match put {
                Ok(()) => *n += 1,
                Err(e) => written = Err(e),
            }
        }
    });
    let end: &[u8] = if written? == 0 { b"]" } else { b"\n  ]" };
    out.write_all(end)?;
    out.write_all(b"\n}\n")
}

/// A node's rest as a row shows it: as decided, but a `waiting-children` rest counts its open
/// children (`open`) instead of listing them (a root of 10,000 children is one row).
#[derive(Debug)]
struct RowRest<'a>(&'a Rest);

impl Serialize for RowRest<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.0 {
            Rest::WaitingChildren { children } => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("kind", self.0.name())?;
                m.serialize_entry("open", &children.len())?;
                m.end()
            }
            rest => rest.serialize(s),
        }
    }
}

pub fn run(global: &Global, args: Args) -> Result<i32> {
    let store = Store::discover(global.dir.as_deref())?;
    let who = super::snapshot::identity(std::env::var("SPLICE_HOLDER").ok(), None);
    let snap = snapshot::build(&store, args.scope.as_deref(), who)?;
    let decision = decide(&snap);
    // One read of the worktrees directory, not a look per node.
    let worktrees = worktree_ids(&store.worktrees_dir());
    let floors_dir = |id: &str| {
        if worktrees.contains(id) {
            format!(".splice/worktrees/{id}")
        } else {
            ".".to_string()
        }
    };
    let rows = Rows::new(&snap, &decision, floors_dir);
    let mut out = super::output::stdout();
    let written = if args.json {
        write_json(&mut out, decision.status, args.scope.as_deref(), &rows)
    } else {
        let colour = match args.color {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => {
                std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
            }
        };
        let rests = decision
            .nodes
            .iter()
            .filter_map(|(id, n)| Some((id.as_str(), n.rest.as_ref()?)));
        let headline = advice::headline(decision.status, rests, holder_alive);
        // Streamed: each row is written as it is made.
        let status = (decision.status, headline.as_str());
        human::write(&mut out, status, rows.iter(), human::Paint(colour))
            .and_then(|()| human::total(&mut out, rows.usage().as_ref()))
    };
    written
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("<stdout>", e))?;
    // The process exits next: freeing every bead one by one costs time for nothing.
    std::mem::forget((snap, decision));
    Ok(0)
}

/// The names of the directories under `.splice/worktrees/` (none when it is absent).
fn worktree_ids(dir: &std::path::Path) -> HashSet<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return HashSet::new();
    };
    entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect()
}

/// A node of the tree, in id order: its id, its bead (`None`: a file that could not be read) and
/// its decision.
#[derive(Clone, Copy)]
struct Slot<'a> {
    id: &'a str,
    bead: Option<&'a Bead>,
    node: Option<&'a crate::model::NodeDecision>,
}

/// The tree's rows: every node in depth-first order, children in natural order; nodes caught
/// in a parent cycle come last. A bead file that could not be read is a node too (its children
/// below it), with its reason. A row is made when it is asked for ([`Rows::row`]).
struct Rows<'a, F> {
    snap: &'a Snapshot,
    slots: Vec<Slot<'a>>,
    actions: FxMap<&'a str, &'a Action>,
    /// Each slot's position by id: the tree's parents, and lineage walks.
    position: FxMap<&'a str, usize>,
    /// The beads that are no slot (plain beads) and the scope's ancestors, for lineage walks
    /// (the first copy of an id).
    others: FxMap<&'a str, &'a Bead>,
    floors_dir: F,
    /// Each row's slot and depth, in the order shown.
    order: Vec<(usize, usize)>,
}

impl<'a, F: Fn(&str) -> String> Rows<'a, F> {
    fn new(snap: &'a Snapshot, decision: &'a Decision, floors_dir: F) -> Self {
        // `None`: a file that could not be read. Ids in order (a bead's id wins over an
        // unreadable file's of the same id), each once.
        let mut by_id: Vec<(&str, Option<&Bead>)> = snap
            .unreadable
            .iter()
            .map(|u| (u.id.as_str(), None))
            .collect();
        // Plain beads (no route: imported, or made by `splice create`) are no nodes: `list`
        // shows them.
        by_id.extend(
            snap.beads
                .iter()
                .filter(|b| b.is_node())
                .map(|b| (b.id.as_str(), Some(b))),
        );
        by_id.sort_by(|a, b| a.0.cmp(b.0).then_with(|| b.1.is_some().cmp(&a.1.is_some())));
        by_id.dedup_by(|later, earlier| later.0 == earlier.0);
        // Each id's decision: the decision's nodes are in id order too, so one merge, no
        // lookups.
        let mut nodes = decision.nodes.iter().peekable();
        let slots: Vec<Slot<'a>> = by_id
            .into_iter()
            .map(|(id, bead)| {
                while nodes.next_if(|(n, _)| n.as_str() < id).is_some() {}
                let node = nodes.next_if(|(n, _)| n.as_str() == id).map(|(_, n)| n);
                Slot { id, bead, node }
            })
            .collect();
        let actions = decision.actions.iter().map(|a| (a.bead(), a)).collect();
        let nodes: Vec<(&str, Option<&str>)> = slots
            .iter()
            .map(|s| (s.id, s.bead.and_then(|b| b.parent.as_deref())))
            .collect();
        let position = tree::positions(&nodes);
        let mut others: FxMap<&str, &Bead> = FxMap::default();
        let plain = snap.beads.iter().filter(|b| !b.is_node());
        for b in plain.chain(&snap.ancestors) {
            others.entry(b.id.as_str()).or_insert(b);
        }
        let order = tree::order(&nodes, &position);
        Rows {
            snap,
            slots,
            actions,
            position,
            others,
            floors_dir,
            order,
        }
    }

    /// The bead `id`, as the snapshot's beads then the scope's ancestors hold it (the first
    /// copy): a slot's, else a plain bead's or an ancestor's.
    fn bead(&self, id: &str) -> Option<&'a Bead> {
        let slot = self.position.get(id).and_then(|&at| self.slots[at].bead);
        slot.or_else(|| self.others.get(id).copied())
    }

    /// What every node shown used, summed (`None`: none has dispatched).
    fn usage(&self) -> Option<crate::model::Usage> {
        let mut total = None;
        for u in self
            .slots
            .iter()
            .filter_map(|s| s.bead?.pipeline.usage.as_deref())
        {
            crate::model::Usage::accumulate(&mut total, u);
        }
        total
    }

    /// Every row, in order, each made as the iterator reaches it.
    fn iter(&self) -> impl Iterator<Item = Row<'a>> + '_ {
        self.order.iter().map(|&at| self.row(at))
    }

    /// The row of slot `at` at depth `depth`.
    fn row(&self, (at, depth): (usize, usize)) -> Row<'a> {
        let snap = self.snap;
        let Slot { id, bead, node } = self.slots[at];
        let action = self.actions.get(id).copied();
        let rest = node.and_then(|n| n.rest.as_ref());
        let mut reason = advice::reason(action, rest);
        // A dependency bd kept on an issue it deleted or never exported: say so.
        let absent: Vec<&str> = match (action, rest) {
            (None, Some(Rest::Blocked { by })) => by
                .iter()
                .map(|b| b.as_str())
                .filter(|b| !self.position.contains_key(*b) && self.bead(b).is_none())
                .collect(),
            _ => Vec::new(),
        };
        let (external, missing): (Vec<&str>, Vec<&str>) = absent
            .iter()
            .partition(|b| crate::model::bd::external_ref(b).is_some());
        if !missing.is_empty() {
            reason.push_str(&format!(
                " ({} not in the store: a bead must be there, and closed, to unblock it)",
                missing.join(", ")
            ));
        }
        for e in external {
            reason.push_str(&format!(" ({})", advice::not_shipped(e)));
        }
        let Some(b) = bead else {
            return unreadable_row(id, depth, rest, reason);
        };
        let p = &b.pipeline;
        let step = snap.manifest.step(&p.step);
        let dir = (self.floors_dir)(id);
        let node = Node {
            id,
            step: &p.step,
            review: review_path(step, b, |id| self.bead(id))
                .map(|r| if dir == "." { r } else { format!("{dir}/{r}") }),
            max_attempts: step.map(|s| s.dispatch_limit(None)),
            escalated_check: advice::escalated_check(b),
            absent,
            clear_key: None,
        };
        let next = match (action, rest) {
            (Some(a), _) => advice::for_action(&node, a),
            (None, Some(r)) => advice::for_rest(&node, r, holder_alive),
            (None, None) => Next::default(),
        };
        Row {
            id,
            parent: b.parent.as_deref(),
            depth,
            title: &b.title,
            kind: p.kind.as_str(),
            status: b.status.as_str(),
            cancelled: b.is_cancelled(),
            step: &p.step,
            lease: p.lease.as_deref(),
            attempts: b.attempts_on(&p.step),
            max_attempts: step.map(|s| s.dispatch_limit(None)),
            looping: loop_row(b, step),
            calls: &p.calls,
            usage: p.usage.as_deref(),
            floors_dir: dir,
            action,
            rest: rest.map(RowRest),
            reason,
            next,
        }
    }
}

/// The status of a row whose bead file could not be read.
const UNREADABLE: &str = "unreadable";

/// The row of a bead file that could not be read: nothing known but its id and why.
fn unreadable_row<'a>(
    id: &'a str,
    depth: usize,
    rest: Option<&'a Rest>,
    reason: String,
) -> Row<'a> {
    Row {
        id,
        parent: None,
        depth,
        title: "",
        kind: "unknown",
        status: UNREADABLE,
        cancelled: false,
        step: "",
        lease: None,
        attempts: 0,
        max_attempts: None,
        looping: None,
        usage: None,
        calls: &[],
        floors_dir: ".".to_string(),
        action: None,
        rest: rest.map(RowRest),
        reason,
        next: rest.map_or_else(Next::default, |r| {
            let node = Node {
                id,
                step: "",
                review: None,
                max_attempts: None,
                escalated_check: None,
                absent: Vec::new(),
                clear_key: None,
            };
            advice::for_rest(&node, r, holder_alive)
        }),
    }
}

/// The artifact a person reads at `bead`'s gate: its step's artifact (`step`, the manifest's
/// step it is at), rendered, if it is a file. `find` looks a bead up by id (the snapshot's, or
/// the scope's ancestors).
fn review_path<'a>(
    step: Option<&crate::model::Step>,
    bead: &'a Bead,
    find: impl Fn(&str) -> Option<&'a Bead>,
) -> Option<String> {
    let step = step?;
    let root = lineage::chain(bead, find).last().unwrap_or(bead);
    let path = prompts::artifact_for(step, &bead.id, &root.id).ok()?;
    path.contains('/').then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_path_names_the_root_found_through_plain_beads_and_scope_ancestors() {
        const AT: &str = "2025-01-01T00:00:00Z";
        let node = |id: &str, parent: Option<&str>| {
            let mut b = Bead::new(id.into(), id.into(), String::new(), AT);
            b.parent = parent.map(Into::into);
            b.pipeline.route = "leaf".into();
            b.pipeline.step = "implement".into();
            b
        };
        let mut plain = node("sp-p", Some("sp-r"));
        plain.pipeline.route = Default::default();
        let beads = vec![
            node("sp-r", None),
            plain,
            node("sp-r.1", Some("sp-p")),
            node("sp-s", Some("sp-a")),
        ];
        let mut manifest = crate::model::Manifest::default_manifest();
        let implement = manifest.steps.iter_mut().find(|s| s.name == "implement");
        implement.unwrap().artifact = Some("notes/{{root.id}}/{{bead.id}}.md".into());
        let mut snap = Snapshot::new(manifest, beads, AT, "me", "run");
        snap.ancestors = vec![node("sp-a", None)];
        let decision = decide(&snap);
        let rows = Rows::new(&snap, &decision, |_: &str| ".".to_string());
        let step = snap.manifest.step("implement");
        let review = |id: &str| review_path(step, rows.bead(id).unwrap(), |id| rows.bead(id));
        assert_eq!(review("sp-r.1").as_deref(), Some("notes/sp-r/sp-r.1.md"));
        assert_eq!(review("sp-s").as_deref(), Some("notes/sp-a/sp-s.md"));
        assert!(rows.bead("sp-p").is_some_and(|b| !b.is_node()));
        assert!(rows.bead("sp-x").is_none());
    }
}
