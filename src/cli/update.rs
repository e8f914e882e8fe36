//! `splice update ID [ID…]`, `splice reopen ID [ID…]` and `splice label add|rm|list`: bd's
//! edits of a bead's own fields, as a person types them (`docs/bd-interop.md`, "bd verbs").
//! Through the writer, one journal record for every id given.

use super::args::JsonAlias;
use super::{Global, output};
use crate::error::Result;
use crate::store::Store;
use crate::transition::Ctx;
use crate::transition::edit::{self, Update};
use crate::transition::plain::parse_priority;

/// Change fields of one or more beads (bd's `update`). Prints JSON: the beads updated, and
/// those already as asked.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The beads to update.
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
    /// The new title (one line).
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// The new description.
    #[arg(short = 'd', long, value_name = "TEXT")]
    pub description: Option<String>,
    /// The new status: open, in_progress, blocked, deferred, pinned or hooked (`splice close`
    /// closes a bead; a pipeline node's status follows its route and is refused).
    #[arg(short = 's', long, value_name = "STATUS")]
    pub status: Option<String>,
    /// The new priority: 0 (critical) to 4 (backlog), or P0 to P4.
    #[arg(short = 'p', long, value_name = "0-4|P0-P4", value_parser = parse_priority)]
    pub priority: Option<i64>,
    /// The new issue type: task, bug, feature, epic, chore… (one word).
    #[arg(short = 't', long = "type", value_name = "TYPE")]
    pub issue_type: Option<String>,
    /// The assignee (bd's `assignee`; an empty value clears it).
    #[arg(short = 'a', long, value_name = "NAME")]
    pub assignee: Option<String>,
    /// Add a label; repeat it or give a comma list for several.
    #[arg(long = "add-label", value_name = "LABEL")]
    pub add_label: Vec<String>,
    /// Remove a label; repeat it or give a comma list for several.
    #[arg(long = "remove-label", value_name = "LABEL")]
    pub remove_label: Vec<String>,
    /// bd's design notes (`design`; empty clears).
    #[arg(long, value_name = "TEXT")]
    pub design: Option<String>,
    /// bd's notes (`notes`; empty clears).
    #[arg(long, value_name = "TEXT")]
    pub notes: Option<String>,
    /// bd's acceptance criteria (`acceptance_criteria`; empty clears).
    #[arg(long, value_name = "TEXT")]
    pub acceptance: Option<String>,
    /// bd's external reference (`external_ref`, e.g. gh-9; empty clears).
    #[arg(long = "external-ref", value_name = "REF")]
    pub external_ref: Option<String>,
    #[command(flatten)]
    pub json: JsonAlias,
}

fn labels(given: &[String]) -> Vec<String> {
    given.iter().flat_map(|l| output::comma_list(l)).collect()
}

pub fn run(args: Args, global: &Global) -> Result<i32> {
    let kept = [
        ("assignee", &args.assignee),
        ("design", &args.design),
        ("notes", &args.notes),
        ("acceptance_criteria", &args.acceptance),
        ("external_ref", &args.external_ref),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some((k, v.clone()?)))
    .collect();
    let u = Update {
        title: args.title,
        description: args.description,
        status: args.status,
        priority: args.priority,
        issue_type: args.issue_type,
        add_labels: labels(&args.add_label),
        remove_labels: labels(&args.remove_label),
        kept,
    };
    // Bad input is said before the state is looked for.
    edit::check(&u)?;
    let store = Store::discover(global.dir.as_deref())?;
    let ctx = Ctx::command_line(&store, crate::clock::now_string()?);
    output::emit(&store, edit::update(&ctx, &args.ids, &u))
}

/// Reopen closed beads (bd's `reopen`): status open, `closed_at` and `close_reason` cleared.
#[derive(clap::Args, Debug)]
pub struct ReopenArgs {
    /// The beads to reopen.
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
    /// Why: recorded in the journal.
    #[arg(short = 'r', long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub json: JsonAlias,
}

pub fn reopen(args: ReopenArgs, global: &Global) -> Result<i32> {
    let store = Store::discover(global.dir.as_deref())?;
    let ctx = Ctx::command_line(&store, crate::clock::now_string()?);
    output::emit(
        &store,
        edit::reopen(&ctx, &args.ids, args.reason.as_deref()),
    )
}

/// A bead's labels: `label add`, `label rm` (bd's argument order: the ids, then the label) and
/// `label list`.
#[derive(clap::Args, Debug)]
pub struct LabelArgs {
    #[command(subcommand)]
    pub command: LabelCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum LabelCommand {
    /// Put LABEL on each bead: `splice label add ID [ID…] LABEL`. Prints JSON.
    Add(LabelChange),
    /// Take LABEL off each bead: `splice label rm ID [ID…] LABEL`. Prints JSON.
    #[command(visible_alias = "remove")]
    Rm(LabelChange),
    /// A bead's labels, one a line (`--json`: an array, as bd's).
    List(LabelList),
}

#[derive(clap::Args, Debug)]
pub struct LabelChange {
    /// The beads, then the label (the last word).
    #[arg(value_name = "ID… LABEL", num_args = 2.., required = true)]
    pub words: Vec<String>,
    #[command(flatten)]
    pub json: JsonAlias,
}

#[derive(clap::Args, Debug)]
pub struct LabelList {
    /// The bead.
    #[arg(value_name = "ID")]
    pub id: String,
    /// Print JSON: an array of the labels.
    #[arg(long)]
    pub json: bool,
}

pub fn label(args: LabelArgs, global: &Global) -> Result<i32> {
    let (change, add) = match args.command {
        LabelCommand::Add(c) => (c, true),
        LabelCommand::Rm(c) => (c, false),
        LabelCommand::List(l) => return label_list(l, global),
    };
    let (label, ids) = change
        .words
        .split_last()
        .expect("clap requires two words at least");
    edit::label(label)?;
    let store = Store::discover(global.dir.as_deref())?;
    let ctx = Ctx::command_line(&store, crate::clock::now_string()?);
    output::emit(&store, edit::relabel(&ctx, ids, label, add))
}

fn label_list(args: LabelList, global: &Global) -> Result<i32> {
    let store = Store::discover(global.dir.as_deref())?;
    let bead = super::show::read_one(&store, &args.id)?;
    if args.json {
        output::print_json(&bead.labels);
    } else {
        let mut out = String::new();
        for l in &bead.labels {
            out.push_str(&output::printable(l));
            out.push('\n');
        }
        if bead.labels.is_empty() {
            out.push_str(&format!("{} has no labels\n", bead.id));
        }
        output::out(&out);
    }
    Ok(0)
}
