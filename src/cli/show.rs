//! `splice show ID`: one bead, as bd's `show` prints it — its bd fields (title, status,
//! priority, type, labels, parent, dependencies, description, and the fields splice keeps
//! without knowing them: design, acceptance_criteria, notes, assignee…) — and, for a pipeline
//! node, its step, its claim and what the decision does with it (an action or a rest, with the
//! reason `splice status` prints). The bead is read as the writer reads it (`transition::read`);
//! `--field` reads one resolved field (step, kind, autonomy, target, delivery).
//!
//! Its latest kept review (`.splice/reviews/<id>/<sha256>.md`, `store::reviews`) is shown with
//! its path, verdict and text; a kept file that cannot be shown (missing in this clone, a link,
//! altered) is named with why, never followed or trusted.
//!
//! `--json`: the bead file's JSON (its own `schema_version` first), a `decision` object, `null`
//! for a plain bead, and a `review` object, `null` when none was kept (`docs/cli.md`).

use serde::Serialize;
use serde_json::Value;

use super::{Global, output};
use crate::decide::decide;
use crate::driver::snapshot;
use crate::error::{Error, Result};
use crate::model::{Action, Bead, Rest};
use crate::store::Store;
use crate::transition::read::{self, Answer, Query};

/// Show one or more beads: their fields and, for a pipeline node, its step, claim and decision.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The beads to show (bd's `show ID [ID…]`).
    #[arg(value_name = "ID", required_unless_present = "bead")]
    pub ids: Vec<String>,
    /// A bead to show: the same as a positional ID (repeatable).
    #[arg(long, value_name = "ID")]
    pub bead: Vec<String>,
    /// Print JSON: an array with one object per bead, as bd's `show --json` (each the bead
    /// file's JSON plus `decision` and `review`; docs/cli.md).
    #[arg(long)]
    pub json: bool,
    /// With --json: splice's versioned envelope instead of the array,
    /// `{"schema_version", "beads": […]}`.
    #[arg(long, requires = "json", conflicts_with = "field")]
    pub envelope: bool,
    /// Print one resolved field of one bead instead: `step` (with its route, status and seq),
    /// `kind`, `autonomy` (the level and the node or setting that supplied it), `target` (the
    /// branch its work lands on) or `delivery` (pr or direct), each resolved through the
    /// bead's ancestors as the writer resolves it. With --json, the object the deprecated
    /// `splice transition step|kind|autonomy|target|delivery` printed.
    #[arg(long, value_enum, value_name = "FIELD")]
    pub field: Option<Field>,
}

/// A field `splice show --field` resolves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Field {
    Step,
    Kind,
    Autonomy,
    Target,
    Delivery,
}

impl Field {
    fn query(self) -> Query {
        match self {
            Field::Step => Query::Step,
            Field::Kind => Query::Kind,
            Field::Autonomy => Query::Autonomy,
            Field::Target => Query::Target,
            Field::Delivery => Query::Delivery,
        }
    }
}

/// `--field`: one bead's resolved field, in words or (`json`) as its object.
fn field(store: &Store, id: &str, field: Field, json: bool) -> Result<i32> {
    let answer = read::query(store, id, field.query())?;
    if json {
        output::print_json(&answer);
        return Ok(0);
    }
    let p = output::printable;
    let text = match &answer {
        Answer::Step {
            step,
            route,
            status,
            seq,
            ..
        } => format!(
            "{} (route {}, {}, seq {seq})",
            p(step),
            p(route),
            status.as_str()
        ),
        Answer::Kind { kind, .. } => kind.as_str().to_string(),
        Answer::Autonomy {
            autonomy, source, ..
        } => format!("{} (from {})", autonomy.as_str(), p(source)),
        Answer::Target { target, .. } => match target {
            Some(t) => p(t),
            None => "none (no target is set and no branch is checked out)".into(),
        },
        Answer::Delivery { delivery, .. } => delivery.as_str().to_string(),
        Answer::Show(_) => unreachable!("--field never asks for the whole bead"),
    };
    output::out(&format!("{text}\n"));
    Ok(0)
}

/// The node's latest kept review, as shown.
#[derive(Serialize, Debug)]
struct Review {
    /// Relative to the repository: `.splice/reviews/<id>/<sha256>.md`.
    path: String,
    sha256: String,
    reviewed_sha: Option<String>,
    verdict: Option<&'static str>,
    sent_back: bool,
    /// The kept text; `null` when it cannot be read (then `unreadable` says why).
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unreadable: Option<String>,
}

fn review_of(store: &Store, b: &Bead) -> Option<Review> {
    let kept = b.latest_review()?;
    let path = crate::store::reviews::review_rel(&b.id, &kept.sha256);
    let (text, unreadable) = match store.read_review(&b.id, &kept.sha256) {
        Ok(text) => (Some(text), None),
        Err(why) => (None, Some(format!("{path} {why}"))),
    };
    Some(Review {
        path,
        sha256: kept.sha256.clone(),
        reviewed_sha: kept.reviewed_sha.clone(),
        verdict: kept.verdict.map(|v| v.as_str()),
        sent_back: kept.sent_back,
        text,
        unreadable,
    })
}

/// What the decision does with a node.
#[derive(Serialize, Debug)]
struct Decided {
    /// The action it would take now, if any.
    action: Option<Action>,
    /// Why it rests, when it takes none.
    rest: Option<Rest>,
    /// The line `splice status` prints.
    reason: String,
}

/// One bead, read as the writer reads it (no such bead, or an id that is not
/// one: bad input naming it).
pub fn read_one(store: &Store, id: &str) -> Result<Box<Bead>> {
    let Answer::Show(bead) = read::query(store, id, Query::Show)? else {
        unreachable!("a show query answers with the bead");
    };
    Ok(bead)
}

pub fn run(global: &Global, args: Args) -> Result<i32> {
    let store = Store::discover(global.dir.as_deref())?;
    let mut ids: Vec<&String> = Vec::new();
    for id in args.ids.iter().chain(&args.bead) {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if let Some(f) = args.field {
        let [id] = ids[..] else {
            return Err(Error::Invalid(format!(
                "--field reads one bead; {} were named",
                ids.len()
            )));
        };
        return field(&store, id, f, args.json);
    }
    // Every bead is read before anything is printed: one that is missing prints nothing.
    let beads = ids
        .iter()
        .map(|id| read_one(&store, id))
        .collect::<Result<Vec<_>>>()?;
    let mut decisions = match beads.iter().any(|b| b.is_node()) {
        true => Some(decisions(&store)?),
        false => None,
    };
    let mut values = Vec::new();
    let mut texts = Vec::new();
    for bead in &beads {
        let decided = match (bead.is_node(), decisions.as_mut()) {
            (true, Some(d)) => Some(decision_of(d, &bead.id)),
            _ => None,
        };
        let review = review_of(&store, bead);
        if args.json {
            let mut value = output::versioned(&**bead);
            if let Value::Object(fields) = &mut value {
                let d = serde_json::to_value(&decided).unwrap_or(Value::Null);
                fields.insert("decision".into(), d);
                let r = serde_json::to_value(&review).unwrap_or(Value::Null);
                fields.insert("review".into(), r);
            }
            values.push(value);
        } else {
            texts.push(human(bead, decided.as_ref(), review.as_ref()));
        }
    }
    match (args.json, args.envelope) {
        (true, true) => output::print_json(&serde_json::json!({
            "schema_version": output::OUTPUT_SCHEMA,
            "beads": values,
        })),
        (true, false) => output::print_json(&values),
        _ => output::out(&texts.join("\n")),
    }
    Ok(0)
}

/// The decision over the whole state.
fn decisions(store: &Store) -> Result<crate::model::Decision> {
    let who = super::snapshot::identity(std::env::var("SPLICE_HOLDER").ok(), None);
    let snap = snapshot::build(store, None, who)?;
    Ok(decide(&snap))
}

/// What `decision` does with node `id` (taken out of it: each node is shown once).
fn decision_of(decision: &mut crate::model::Decision, id: &str) -> Decided {
    let action = decision
        .actions
        .iter()
        .position(|a| a.bead() == id)
        .map(|at| decision.actions.swap_remove(at));
    let rest = decision.nodes.remove(id).and_then(|n| n.rest);
    let reason = crate::driver::advice::reason(action.as_ref(), rest.as_ref());
    Decided {
        action,
        rest,
        reason,
    }
}

fn human(b: &Bead, decided: Option<&Decided>, review: Option<&Review>) -> String {
    let p = output::printable;
    let mut out = format!("{}  {}\n", b.id, p(&b.title));
    let mut line = |k: &str, v: String| out.push_str(&format!("  {k:<13} {v}\n"));
    line("status", p(b.status.as_str()));
    if let Some(reason) = &b.close_reason {
        line("close reason", p(reason));
    }
    line("priority", format!("P{}", b.priority));
    line("type", p(&b.issue_type));
    if !b.labels.is_empty() {
        line("labels", p(&b.labels.join(", ")));
    }
    if let Some(parent) = &b.parent {
        line("parent", p(parent));
    }
    for d in &b.dependencies {
        line(
            "depends on",
            p(&format!("{} ({})", d.depends_on_id, d.dep_type)),
        );
    }
    line("created", p(&b.created_at));
    line("updated", p(&b.updated_at));
    if let Some(at) = &b.closed_at {
        line("closed", p(at));
    }
    match decided {
        None => line(
            "pipeline",
            "none: a plain bead (`splice start ID` puts it on a route)".into(),
        ),
        Some(d) => {
            let pl = &b.pipeline;
            line(
                "step",
                p(&format!(
                    "{} (route {}, {})",
                    pl.step,
                    pl.route,
                    pl.kind.as_str()
                )),
            );
            let claim = pl.lease.as_ref().map_or("none".into(), |l| {
                p(&format!("{} since {}", l.holder, l.since))
            });
            line("claim", claim);
            // Open calls, innermost first: where the node goes when its route ends.
            for f in pl.calls.iter().rev() {
                line(
                    "called",
                    p(&format!(
                        "route {} from {} (route {}), returns to {}",
                        f.callee, f.step, f.route, f.return_to
                    )),
                );
            }
            if let Some(u) = &pl.usage {
                line("used", u.summary());
            }
            line("decision", p(&d.reason));
            // The latest measured iteration's stages: which ran and what each found.
            if let Some(it) = pl.trajectory.last() {
                let head = format!("iteration {} of {}", it.state.iteration, it.step);
                for (i, s) in it.context.stages.iter().enumerate() {
                    let key = if i == 0 { "verified" } else { "" };
                    let what = format!("{} `{}`: {} ({})", s.stage, s.tool, s.status, s.found);
                    line(
                        key,
                        p(&if i == 0 {
                            format!("{head}: {what}")
                        } else {
                            what
                        }),
                    );
                }
            }
        }
    }
    if let Some(r) = review {
        let mut about = r.verdict.unwrap_or("no verdict").to_string();
        if let Some(sha) = &r.reviewed_sha {
            about.push_str(&format!(" of {}", sha.get(..12).unwrap_or(sha)));
        }
        if r.sent_back {
            about.push_str(", sent back");
        }
        line("review", p(&format!("{about}: {}", r.path)));
        if let Some(why) = &r.unreadable {
            line("", p(&format!("cannot be shown: {why}")));
        }
    }
    let mut text = |name: &str, body: &str| {
        if !body.trim().is_empty() {
            out.push_str(&format!("\n{name}:\n"));
            for l in body.lines() {
                out.push_str(&format!("  {}\n", p(l)));
            }
        }
    };
    text("description", &b.description);
    if let Some(body) = review.and_then(|r| r.text.as_deref()) {
        text("review", body);
    }
    for (key, value) in &b.extra {
        match value {
            Value::String(s) => text(&p(key), s),
            Value::Null => {}
            other => text(&p(key), &other.to_string()),
        }
    }
    out
}
