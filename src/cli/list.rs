//! `splice list`: every bead, pipeline nodes and plain beads (imported from bd, or made by
//! `splice create`), one line each in natural id order (`sp-x.1.2` before `sp-x.1.10`), as bd's
//! `list` shows them. Filters narrow it; each filter given must match (`--status` given twice,
//! or as a comma list, matches either).

use serde::Serialize;

use super::{Global, output};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::model::id::{self as ids, natural_cmp};
use crate::store::Store;

/// List every bead: id, status, priority, type, step (`-` for a plain bead) and title.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only beads with this status (bd's words: open, in_progress, blocked, deferred, closed,
    /// tombstone… or any other kept verbatim); repeat it or give a comma list for several.
    #[arg(long, value_name = "STATUS")]
    pub status: Vec<String>,
    /// Only beads of this issue type (task, bug, feature, epic, chore…); repeatable.
    #[arg(long = "type", short = 't', value_name = "TYPE")]
    pub issue_type: Vec<String>,
    /// Only the children of this bead (its direct children, by their `parent`).
    #[arg(long, value_name = "ID")]
    pub parent: Option<String>,
    /// Only beads carrying this label; repeat it to require every one given.
    #[arg(long, value_name = "LABEL")]
    pub label: Vec<String>,
    /// Print JSON: `{"schema_version", "beads": […], "unreadable": […]}` (docs/cli.md).
    #[arg(long)]
    pub json: bool,
}

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
        }
    }
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
    let keep = |b: &Bead| {
        (statuses.is_empty() || statuses.iter().any(|s| s == b.status.as_str()))
            && (types.is_empty() || types.iter().any(|t| *t == b.issue_type))
            && args
                .parent
                .as_ref()
                .is_none_or(|p| b.parent.as_deref() == Some(p.as_str()))
            && args.label.iter().all(|l| b.labels.iter().any(|x| x == l))
    };
    let mut beads: Vec<&Bead> = scan.beads.iter().filter(|b| keep(b)).collect();
    beads.sort_by(|a, b| natural_cmp(&a.id, &b.id));
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
    if args.json {
        output::print_json(&listing);
    } else {
        output::out(&human(&listing));
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
