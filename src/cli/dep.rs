//! `splice dep add|rm|tree`: a bead's dependencies, as bd's `dep` verbs (`docs/bd-interop.md`,
//! "bd verbs"). `add` and `rm` go through the writer (`transition::dep`); `tree` only reads.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::args::JsonAlias;
use super::{Global, output};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::model::id as ids;
use crate::store::Store;
use crate::transition::{Ctx, dep};

/// A bead's dependencies: add one, remove one, or show the tree of what it waits on.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: DepCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum DepCommand {
    /// ISSUE depends on DEPENDS_ON (bd's `dep add`): a `blocks` dependency keeps ISSUE waiting
    /// until DEPENDS_ON is closed. A cycle of `blocks` is refused. Prints JSON.
    Add(AddArgs),
    /// ISSUE no longer depends on DEPENDS_ON (whatever the type). Prints JSON.
    #[command(visible_alias = "remove")]
    Rm(RmArgs),
    /// The tree of what ID depends on, and what those depend on (`--json`: a flat array, as
    /// bd's).
    Tree(TreeArgs),
}

#[derive(clap::Args, Debug)]
pub struct AddArgs {
    /// The bead that depends.
    #[arg(value_name = "ISSUE")]
    pub issue: String,
    /// The bead it depends on (or an `external:<project>:<id>` reference, kept as bd keeps it).
    #[arg(value_name = "DEPENDS_ON")]
    pub depends_on: String,
    /// The dependency's type: blocks (the default), related, discovered-from, tracks… (bd's
    /// types; only `blocks` makes a bead wait).
    #[arg(
        short = 't',
        long = "type",
        value_name = "TYPE",
        default_value = "blocks"
    )]
    pub dep_type: String,
    #[command(flatten)]
    pub json: JsonAlias,
}

#[derive(clap::Args, Debug)]
pub struct RmArgs {
    /// The bead that depends.
    #[arg(value_name = "ISSUE")]
    pub issue: String,
    /// The bead it no longer depends on.
    #[arg(value_name = "DEPENDS_ON")]
    pub depends_on: String,
    #[command(flatten)]
    pub json: JsonAlias,
}

#[derive(clap::Args, Debug)]
pub struct TreeArgs {
    /// The bead at the root of the tree.
    #[arg(value_name = "ID")]
    pub id: String,
    /// How deep to go (bd's default: 50).
    #[arg(
        short = 'd',
        long = "max-depth",
        value_name = "N",
        default_value_t = 50
    )]
    pub max_depth: usize,
    /// Print JSON: a flat array of the tree's nodes, depth first (`id`, `title`, `status`,
    /// `priority`, `issue_type`, `depth`, `parent_id`, `dep_type`, `seen`, `missing`).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, global: &Global) -> Result<i32> {
    match args.command {
        DepCommand::Add(a) => {
            let store = Store::discover(global.dir.as_deref())?;
            let ctx = Ctx::command_line(&store, crate::clock::now_string()?);
            output::emit(&store, dep::add(&ctx, &a.issue, &a.depends_on, &a.dep_type))
        }
        DepCommand::Rm(a) => {
            let store = Store::discover(global.dir.as_deref())?;
            let ctx = Ctx::command_line(&store, crate::clock::now_string()?);
            output::emit(&store, dep::remove(&ctx, &a.issue, &a.depends_on))
        }
        DepCommand::Tree(a) => tree(a, global),
    }
}

/// One node of the tree.
#[derive(Serialize, Debug)]
struct Node {
    id: String,
    title: Option<String>,
    status: Option<String>,
    priority: Option<i64>,
    issue_type: Option<String>,
    depth: usize,
    /// The bead above it in the tree (`null` at the root).
    parent_id: Option<String>,
    /// The type of the dependency from `parent_id` on it.
    dep_type: Option<String>,
    /// Shown above already: its own dependencies are not repeated.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    seen: bool,
    /// Named by a dependency, but no bead of the store.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    missing: bool,
}

fn tree(args: TreeArgs, global: &Global) -> Result<i32> {
    if !ids::is_valid(&args.id) {
        return Err(Error::Invalid(format!(
            "{}: not a bead id",
            ids::shown(&args.id)
        )));
    }
    let store = Store::discover(global.dir.as_deref())?;
    let scan = store.scan_cached()?;
    let by_id: HashMap<&str, &Bead> = scan.beads.iter().map(|b| (b.id.as_str(), b)).collect();
    if !by_id.contains_key(args.id.as_str()) {
        super::show::read_one(&store, &args.id)?;
    }
    let mut nodes = Vec::new();
    let mut seen = HashSet::new();
    walk(
        &by_id,
        &args.id,
        None,
        0,
        args.max_depth,
        &mut seen,
        &mut nodes,
    );
    if args.json {
        output::print_json(&nodes);
    } else {
        output::out(&human(&nodes));
    }
    Ok(0)
}

fn walk(
    by_id: &HashMap<&str, &Bead>,
    id: &str,
    above: Option<(&str, &str)>,
    depth: usize,
    max_depth: usize,
    seen: &mut HashSet<String>,
    out: &mut Vec<Node>,
) {
    let bead = by_id.get(id);
    let again = !seen.insert(id.to_string());
    out.push(Node {
        id: id.to_string(),
        title: bead.map(|b| b.title.to_string()),
        status: bead.map(|b| b.status.as_str().to_string()),
        priority: bead.map(|b| b.priority),
        issue_type: bead.map(|b| b.issue_type.to_string()),
        depth,
        parent_id: above.map(|(p, _)| p.to_string()),
        dep_type: above.map(|(_, t)| t.to_string()),
        seen: again,
        missing: bead.is_none(),
    });
    let Some(bead) = bead else { return };
    if again || depth >= max_depth {
        return;
    }
    for d in &bead.dependencies {
        let below = (bead.id.as_str(), d.dep_type.as_str());
        walk(
            by_id,
            &d.depends_on_id,
            Some(below),
            depth + 1,
            max_depth,
            seen,
            out,
        );
    }
}

/// `ID  [STATUS] P2  TITLE`, indented by depth, each dependency's type before it.
fn human(nodes: &[Node]) -> String {
    let p = output::printable;
    let mut out = String::new();
    for n in nodes {
        let indent = "    ".repeat(n.depth.saturating_sub(1));
        let branch = match &n.dep_type {
            Some(t) => format!("{indent}└─ ({}) ", p(t)),
            None => String::new(),
        };
        let what = match (&n.status, &n.title) {
            (Some(s), Some(t)) => {
                format!("  [{}] P{}  {}", p(s), n.priority.unwrap_or_default(), p(t))
            }
            _ => "  (no such bead)".into(),
        };
        let again = if n.seen { "  (shown above)" } else { "" };
        out.push_str(&format!("{branch}{}{what}{again}\n", p(&n.id)));
    }
    if nodes.len() == 1 {
        out.push_str("  no dependencies\n");
    }
    out
}
