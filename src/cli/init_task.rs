//! `splice init-task`: create a lone task (a leaf at generate-spec, or on its tier's route with
//! `--tier`; and `.splice/` when missing).

use super::init::NodeArgs;
use super::{Global, output};
use crate::error::Result;
use crate::store::Store;
use crate::transition::{Ctx, Verb, create};

/// Create a lone task: a leaf bead at generate-spec. Prints `{"id": …}`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub node: NodeArgs,
    /// Scenario ids the task owns, comma-separated (without any, its spec defines and names
    /// them, and they are recorded on the task when the spec passes).
    #[arg(long, value_name = "S1,S2")]
    pub scenarios: Option<String>,
    /// Request tier: auto (classify the title and description and record the tier and the
    /// deciding rule; the task stays a leaf at generate-spec), or trivial, light, standard,
    /// substantial or architectural (start on that tier's route, `tiers.routes` of the manifest).
    #[arg(long, default_value = "auto", value_name = "TIER")]
    pub tier: String,
}

pub fn run(args: Args, global: &Global) -> Result<i32> {
    create::check_tier(&args.tier)?;
    let node = create::NewNode {
        tier: Some(args.tier),
        scenarios: args
            .scenarios
            .as_deref()
            .map(|s| output::comma_ids("--scenarios", s))
            .transpose()?
            .unwrap_or_default(),
        ..args.node.into_node()?
    };
    let planned = Store::open_or_plan(global.dir.as_deref())?;
    create::admit_creation(&planned, Verb::InitTask)?;
    create::check_target(&planned, node.target.as_deref())?;
    let now = crate::clock::now_string()?;
    let store = Store::open_or_create(global.dir.as_deref())?;
    let node = super::exec::distilled(&store, node, &now);
    let outcome = create::init_task(&Ctx::command_line(&store, now), node);
    output::emit(&store, outcome)
}
