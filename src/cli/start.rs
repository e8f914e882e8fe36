//! `splice start ID [--tier T] [--campaign]`: put a plain bead (imported from bd, or made by
//! `splice create`) on a route (`docs/bd-interop.md`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::args::{BeadId, JsonAlias};
use super::{Global, output};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::transition::Ctx;
use crate::transition::start::{self, StartArgs};

/// Start a plain bead: a task on its tier's route, or an epic as a campaign. Prints JSON: the
/// node's kind, route, step and target (and the children adopted).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub bead: BeadId,
    /// Request tier: auto (classify the title and description and record the tier; the task
    /// is a leaf at generate-spec), or trivial, light, standard, substantial or architectural
    /// (start on that tier's route). Not with --campaign.
    #[arg(long, value_name = "TIER")]
    pub tier: Option<String>,
    /// Start an epic as a campaign root at its split step, adopting its children (the beads
    /// whose parent it is) as the split.
    #[arg(long)]
    pub campaign: bool,
    /// With --campaign: a JSON object giving each adopted child the scenario ids it owns
    /// (`{"bd-a1.1": ["S1"], …}`); the epic owns their union.
    #[arg(long, value_name = "FILE", requires = "campaign")]
    pub scenarios: Option<PathBuf>,
    /// The delivery target (a branch or commit): default `[delivery] target`, else the branch
    /// checked out.
    #[arg(long, value_name = "REF")]
    pub target: Option<String>,
    #[command(flatten)]
    pub json: JsonAlias,
}

pub fn run(args: Args, global: &Global) -> Result<i32> {
    let scenarios = match &args.scenarios {
        Some(path) => read_scenarios(path)?,
        None => BTreeMap::new(),
    };
    if let Some(tier) = &args.tier {
        crate::transition::create::check_tier(tier)?;
    }
    let store = Store::discover(global.dir.as_deref())?;
    let now = crate::clock::now_string()?;
    let ctx = Ctx::command_line(&store, now);
    let what = StartArgs {
        tier: args.tier,
        campaign: args.campaign,
        target: args.target,
        scenarios,
    };
    let outcome = start::start(&ctx, args.bead.id(), what);
    if let Ok(started) = &outcome {
        for w in &started.warnings {
            output::err(&format!("warning: {w}\n"));
        }
    }
    output::emit(&store, outcome)
}

fn read_scenarios(path: &std::path::Path) -> Result<BTreeMap<String, Vec<String>>> {
    let text = crate::safe_read::read_text(path, crate::safe_read::INPUT)?;
    serde_json::from_str(&text).map_err(|e| {
        Error::bad_file(
            path,
            format!("expected a JSON object of child id → [scenario ids]: {e}"),
        )
    })
}
