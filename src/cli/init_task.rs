//! `splice init-task`: create a lone task (a leaf at generate-spec, and `.splice/` when missing).

use super::init::{parse_autonomy, parse_delivery};
use super::{Global, output};
use crate::error::Result;
use crate::store::Store;
use crate::transition::{Ctx, create};

/// Create a lone task: a leaf bead at generate-spec. Prints `{"id": …}`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(long)]
    pub title: String,
    #[arg(long, default_value = "")]
    pub description: String,
    /// Request tier: auto, trivial, light, substantial or architectural (recorded).
    #[arg(long, default_value = "auto")]
    pub tier: String,
    /// Autonomy level: hitl, wave or deep (default: `[autonomy] default`, else hitl).
    #[arg(long, value_name = "LEVEL")]
    pub autonomy: Option<String>,
    /// Where the work lands (default: `[delivery] target`, else the current branch).
    #[arg(long, value_name = "BRANCH")]
    pub target: Option<String>,
    /// Delivery method: pr or direct.
    #[arg(long)]
    pub delivery: Option<String>,
}

pub fn run(args: Args, global: &Global) -> Result<i32> {
    // Validate before `.splice/` is created, so bad input leaves nothing behind.
    if !create::TIERS.contains(&args.tier.as_str()) {
        return Err(crate::error::Error::Invalid(format!(
            "--tier {:?}: unknown tier (one of {})",
            args.tier,
            create::TIERS.join(", ")
        )));
    }
    let node = create::NewNode {
        title: args.title,
        description: args.description,
        scenarios: Vec::new(),
        autonomy: parse_autonomy(args.autonomy.as_deref())?,
        target: args.target,
        delivery: parse_delivery(args.delivery.as_deref())?,
        tier: Some(args.tier),
    };
    let store = Store::open_or_create(global.dir.as_deref())?;
    Ok(output::emit(&create::init_task(
        &Ctx::person(&store),
        node,
    )?))
}
