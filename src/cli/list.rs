//! `splice list`: the beads, pipeline nodes and plain beads (imported from bd, or made by
//! `splice create`), one line each in natural id order (`sp-x.1.2` before `sp-x.1.10`), as bd's
//! `list` shows them: closed and tombstoned beads are left out unless `--all` (or a `--status`
//! filter) asks for them. Filters narrow it; each filter given must match (`--status` given
//! twice, or as a comma list, matches either). `--sort` orders by another field (ties by id),
//! `--reverse` turns the order round, `--limit` keeps the first N.

use serde::Serialize;

use super::{Global, output};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::model::id::{self as ids, natural_cmp};
use crate::store::Store;

/// List the beads: id, status, priority, type, step (`-` for a plain bead) and title. Closed
/// and tombstoned beads are left out unless --all or --status asks for them.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only beads with this status (bd's words: open, in_progress, blocked, deferred, closed,
    /// tombstone… or any other kept verbatim); repeat it or give a comma list for several. A
    /// status filter shows closed beads when it names `closed`.
    #[arg(short = 's', long, value_name = "STATUS")]
    pub status: Vec<String>,
    /// Show every bead, closed and tombstoned ones too.
    #[arg(short = 'a', long)]
    pub all: bool,
    /// Only beads of this priority (0-4 or P0-P4); repeat it or give a comma list for several.
    #[arg(short = 'p', long, value_name = "PRIORITY")]
    pub priority: Vec<String>,
    /// Order by this field (ties by id): id (the default: natural order), priority, created,
    /// updated, closed, status, title, type or assignee.
    #[arg(long, value_name = "FIELD", value_parser = clap::builder::PossibleValuesParser::new(SORTS))]
    pub sort: Option<String>,
    /// Turn the order round.
    #[arg(short = 'r', long)]
    pub reverse: bool,
    /// Show at most N beads (after sorting; 0: no limit, the default).
    #[arg(short = 'n', long, value_name = "N", default_value_t = 0)]
    pub limit: usize,
    /// Only beads of this issue type (task, bug, feature, epic, chore…); repeatable.
    #[arg(long = "type", short = 't', value_name = "TYPE")]
    pub issue_type: Vec<String>,
    /// Only the children of this bead (its direct children, by their `parent`).
    #[arg(long, value_name = "ID")]
    pub parent: Option<String>,
    /// Only beads carrying this label; repeat it to require every one given.
    #[arg(long, value_name = "LABEL")]
    pub label: Vec<String>,
    /// Print JSON: an array of the beads, as bd's `list --json` (docs/cli.md).
    #[arg(long)]
    pub json: bool,
    /// With --json: splice's versioned envelope instead of the array, `{"schema_version",
    /// "beads": […], "unreadable": […]}`.
    #[arg(long, requires = "json")]
    pub envelope: bool,
}

/// The fields `--sort` takes (bd's that splice's beads have).
pub const SORTS: &[&str] = &[
    "id", "priority", "created", "updated", "closed", "status", "title", "type", "assignee",
];

/// One bead, as `list --json` prints it.
#[derive(Serialize, Debug)]
pub struct Item<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub status: &'a str,
    pub priority: i64,
    pub issue_type: &'a str,
    pub labels: &'a [crate::model::Text],
    pub parent: Option<&'a str>,
    /// A pipeline node's step; `null` for a plain bead.
    pub step: Option<&'a str>,
    pub created_at: &'a str,
    pub updated_at: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<&'a str>,
    /// bd's `assignee`, when the bead has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assignee: Option<&'a str>,
}

impl<'a> Item<'a> {
    pub fn of(b: &'a Bead) -> Item<'a> {
        Item {
            id: &b.id,
            title: &b.title,
            status: b.status.as_str(),
            priority: b.priority,
            issue_type: &b.issue_type,
            labels: &b.labels,
            parent: b.parent.as_deref(),
            step: b.is_node().then_some(b.pipeline.step.as_str()),
            created_at: &b.created_at,
            updated_at: &b.updated_at,
            closed_at: b.closed_at.as_deref(),
            assignee: assignee(b),
        }
    }
}

/// bd's `assignee`, kept in the bead's `extra`.
fn assignee(b: &Bead) -> Option<&str> {
    b.extra.get("assignee").and_then(|v| v.as_str())
}

/// Order `a` and `b` by `field` (`--sort`), ties by natural id.
fn by_field(field: &str, a: &Bead, b: &Bead) -> std::cmp::Ordering {
    let first = match field {
        "priority" => a.priority.cmp(&b.priority),
        "created" => a.created_at.cmp(&b.created_at),
        "updated" => a.updated_at.cmp(&b.updated_at),
        "closed" => a.closed_at.cmp(&b.closed_at),
        "status" => a.status.as_str().cmp(b.status.as_str()),
        "title" => a.title.cmp(&b.title),
        "type" => a.issue_type.cmp(&b.issue_type),
        "assignee" => assignee(a).cmp(&assignee(b)),
        _ => std::cmp::Ordering::Equal,
    };
    first.then_with(|| natural_cmp(&a.id, &b.id))
}

/// A bead file that could not be read.
#[derive(Serialize, Debug)]
struct Unreadable {
    id: String,
    error: String,
}

#[derive(Serialize, Debug)]
struct Listing<'a> {
    schema_version: u32,
    beads: Vec<Item<'a>>,
    unreadable: Vec<Unreadable>,
}

pub fn run(global: &Global, args: Args) -> Result<i32> {
    // An id no bead could have matches none; said, as `show` and `create --parent` say it,
    // before anything is read (a read may write the cache).
    if let Some(p) = &args.parent
        && !ids::is_valid(p)
    {
        return Err(Error::Invalid(format!(
            "--parent {}: not a bead id",
            ids::shown(p)
        )));
    }
    let priorities = args
        .priority
        .iter()
        .flat_map(|s| output::comma_list(s))
        .map(|p| {
            crate::transition::plain::parse_priority(&p)
                .map_err(|e| Error::Invalid(format!("--priority {e}")))
        })
        .collect::<Result<Vec<i64>>>()?;
    let store = Store::discover(global.dir.as_deref())?;
    let scan = store.scan_cached()?;
    let statuses: Vec<String> = args
        .status
        .iter()
        .flat_map(|s| output::comma_list(s))
        .collect();
    let types: Vec<String> = args
        .issue_type
        .iter()
        .flat_map(|s| output::comma_list(s))
        .collect();
    // bd's default: what is still to do. A status filter says itself what it wants.
    let hide_closed = !args.all && statuses.is_empty();
    let matches = |b: &Bead| {
        (statuses.is_empty() || statuses.iter().any(|s| s == b.status.as_str()))
            && (priorities.is_empty() || priorities.contains(&b.priority))
            && (types.is_empty() || types.iter().any(|t| *t == b.issue_type))
            && args
                .parent
                .as_ref()
                .is_none_or(|p| b.parent.as_deref() == Some(p.as_str()))
            && args.label.iter().all(|l| b.labels.iter().any(|x| x == l))
    };
    let mut beads: Vec<&Bead> = scan.beads.iter().filter(|b| matches(b)).collect();
    let before = beads.len();
    if hide_closed {
        beads.retain(|b| !b.is_closed());
    }
    let hidden = before - beads.len();
    let field = args.sort.as_deref().unwrap_or("id");
    beads.sort_by(|a, b| by_field(field, a, b));
    if args.reverse {
        beads.reverse();
    }
    if args.limit > 0 {
        beads.truncate(args.limit);
    }
    let listing = Listing {
        schema_version: output::OUTPUT_SCHEMA,
        beads: beads.into_iter().map(Item::of).collect(),
        unreadable: scan
            .unreadable
            .into_iter()
            .map(|u| Unreadable {
                id: u.id,
                error: u.error.to_string(),
            })
            .collect(),
    };
    if args.json && args.envelope {
        output::print_json(&listing);
    } else if args.json {
        // The array has no room for them: said on stderr, as the text says them.
        for u in &listing.unreadable {
            output::err(&format!(
                "splice: {}: unreadable: {}\n",
                output::printable(&u.id),
                output::printable(&u.error)
            ));
        }
        output::print_json(&listing.beads);
    } else {
        let mut text = human(&listing);
        if hidden > 0 {
            text.push_str(&format!(
                "({hidden} closed or tombstoned not shown: --all shows them)\n"
            ));
        }
        output::out(&text);
    }
    Ok(0)
}

/// One line a bead: `ID  STATUS  P2  TYPE  STEP  TITLE`, the columns aligned, text from the
/// files escaped ([`output::printable`]); unreadable files after, with why (their id is their
/// file's name, which may hold anything: escaped too).
fn human(l: &Listing) -> String {
    let rows: Vec<[String; 5]> = l
        .beads
        .iter()
        .map(|i| {
            [
                i.id.to_string(),
                output::printable(i.status),
                format!("P{}", i.priority),
                output::printable(i.issue_type),
                output::printable(i.step.unwrap_or("-")),
            ]
        })
        .collect();
    let mut widths = [0usize; 5];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for (row, i) in rows.iter().zip(&l.beads) {
        for (cell, w) in row.iter().zip(widths) {
            out.push_str(&format!("{cell:w$}  "));
        }
        out.push_str(&output::printable(i.title));
        out.push('\n');
    }
    for u in &l.unreadable {
        out.push_str(&format!(
            "{}  unreadable: {}\n",
            output::printable(&u.id),
            output::printable(&u.error)
        ));
    }
    if l.beads.is_empty() && l.unreadable.is_empty() {
        out.push_str("no beads\n");
    }
    out
}
