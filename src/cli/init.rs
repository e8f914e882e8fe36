//! `splice init`: create a campaign root (and `.splice/` when missing).

use super::{Global, output};
use crate::error::{Error, Result};
use crate::model::Autonomy;
use crate::model::bead::DeliveryMethod;
use crate::store::Store;
use crate::transition::{Ctx, create};

/// Create a campaign: a root bead at create-prp. Prints `{"id": …}`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The campaign's title.
    #[arg(long)]
    pub title: String,
    #[arg(long, default_value = "")]
    pub description: String,
    /// Scenario ids the campaign promises, comma-separated (the PRP can declare them instead).
    #[arg(long, value_name = "S1,S2")]
    pub scenarios: Option<String>,
    /// Autonomy level: hitl, wave or deep.
    #[arg(long, value_name = "LEVEL")]
    pub autonomy: Option<String>,
    /// The integration target branch (default: `[delivery] target`, else the current branch).
    #[arg(long, value_name = "BRANCH")]
    pub target: Option<String>,
    /// Delivery method: pr or direct.
    #[arg(long)]
    pub delivery: Option<String>,
}

pub fn parse_autonomy(s: Option<&str>) -> Result<Option<Autonomy>> {
    s.map(|l| {
        Autonomy::parse(l)
            .ok_or_else(|| Error::Invalid(format!("--autonomy {l:?}: expected hitl, wave or deep")))
    })
    .transpose()
}

pub fn parse_delivery(s: Option<&str>) -> Result<Option<DeliveryMethod>> {
    s.map(|m| {
        DeliveryMethod::parse(m)
            .ok_or_else(|| Error::Invalid(format!("--delivery {m:?}: expected pr or direct")))
    })
    .transpose()
}

pub fn run(args: Args, global: &Global) -> Result<i32> {
    let node = create::NewNode {
        title: args.title,
        description: args.description,
        scenarios: args
            .scenarios
            .as_deref()
            .map(output::comma_list)
            .unwrap_or_default(),
        autonomy: parse_autonomy(args.autonomy.as_deref())?,
        target: args.target,
        delivery: parse_delivery(args.delivery.as_deref())?,
        tier: None,
    };
    let store = Store::open_or_create(global.dir.as_deref())?;
    let outcome = create::init(&Ctx::person(&store), node)?;
    for w in outcome.json["warnings"].as_array().into_iter().flatten() {
        eprintln!("splice: warning: {}", w.as_str().unwrap_or_default());
    }
    Ok(output::emit(&outcome))
}
