//! `splice create "TITLE"`: a plain bead (no route), as bd's `create` makes one; a person puts
//! it on a route later with `splice start ID`. Through the writer, journaled.

use super::{Global, output};
use crate::error::Result;
use crate::store::Store;
use crate::transition::Ctx;
use crate::transition::plain::{self, NewPlain};

/// Create a plain bead (a work item on no route yet). Prints its id (`--json`: the bead).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The title: one line.
    #[arg(value_name = "TITLE")]
    pub title: String,
    /// The description.
    #[arg(
        short = 'd',
        long = "description",
        value_name = "TEXT",
        default_value = ""
    )]
    pub description: String,
    /// The priority: 0 (critical) to 4 (backlog), or P0 to P4, as in bd.
    #[arg(
        short = 'p',
        long,
        value_name = "0-4|P0-P4",
        default_value = "2",
        allow_negative_numbers = true,
        value_parser = plain::parse_priority
    )]
    pub priority: i64,
    /// The issue type: task, bug, feature, epic, chore… (one word).
    #[arg(
        short = 't',
        long = "type",
        value_name = "TYPE",
        default_value = "task"
    )]
    pub issue_type: String,
    /// A label to put on it; repeat it or give a comma list for several.
    #[arg(short = 'l', long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// Make it a child of this plain bead: its id is the parent's next `PARENT.N`. A pipeline
    /// node's children come from its split, so a node is refused.
    #[arg(long, value_name = "ID")]
    pub parent: Option<String>,
    /// Print the new bead as JSON (the bead file's JSON).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, global: &Global) -> Result<i32> {
    let store = Store::discover(global.dir.as_deref())?;
    let now = crate::clock::now_string()?;
    let ctx = Ctx::command_line(&store, now);
    let new = NewPlain {
        title: args.title,
        description: args.description,
        priority: args.priority,
        issue_type: args.issue_type,
        labels: args
            .labels
            .iter()
            .flat_map(|l| output::comma_list(l))
            .collect(),
        parent: args.parent,
    };
    let created = plain::create(&ctx, &new);
    output::report_repairs(&store);
    let id = created?;
    if args.json {
        output::print_json(&store.read_bead(&id)?);
    } else {
        output::out(&format!("{id}\n"));
    }
    Ok(0)
}
