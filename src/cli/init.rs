//! `splice init`: create a campaign root (and `.splice/` when missing).

use super::{Global, output};
use crate::error::{Error, Result};
use crate::model::Autonomy;
use crate::model::bead::DeliveryMethod;
use crate::store::Store;
use crate::transition::{Ctx, Verb, create};

/// What `init` and `init-task` both take.
#[derive(clap::Args, Debug)]
pub struct NodeArgs {
    /// The title.
    #[arg(long)]
    pub title: String,
    /// What the work is, for the agents (their prompts quote it) and for people.
    #[arg(long, default_value = "")]
    pub description: String,
    /// Autonomy level: hitl, wave or deep (default: the nearest ancestor's, else
    /// `[autonomy] default`, else hitl).
    #[arg(long, value_name = "LEVEL")]
    pub autonomy: Option<String>,
    /// Where the work lands (default: `[delivery] target`, else the current branch).
    #[arg(long, value_name = "BRANCH")]
    pub target: Option<String>,
    /// Delivery method: pr or direct.
    #[arg(long)]
    pub delivery: Option<String>,
    #[command(flatten)]
    pub json: super::args::JsonAlias,
}

impl NodeArgs {
    /// The node to create, with every value checked (before `.splice/` is created, so bad input
    /// leaves nothing behind).
    pub fn into_node(self) -> Result<create::NewNode> {
        Ok(create::NewNode {
            title: self.title,
            description: self.description,
            autonomy: parse_autonomy(self.autonomy.as_deref())?,
            target: self.target,
            delivery: parse_delivery(self.delivery.as_deref())?,
            ..create::NewNode::default()
        })
    }
}

/// Create a campaign: a root bead at create-prp. Prints `{"id": …}`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub node: NodeArgs,
    /// Scenario ids the campaign promises, comma-separated (the PRP can declare them instead).
    #[arg(long, value_name = "S1,S2")]
    pub scenarios: Option<String>,
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
        scenarios: args
            .scenarios
            .as_deref()
            .map(|s| output::comma_ids("--scenarios", s))
            .transpose()?
            .unwrap_or_default(),
        ..args.node.into_node()?
    };
    let planned = Store::open_or_plan(global.dir.as_deref())?;
    create::admit_creation(&planned, Verb::Init)?;
    create::check_target(&planned, node.target.as_deref())?;
    let now = crate::clock::now_string()?;
    let store = Store::open_or_create(global.dir.as_deref())?;
    let node = super::exec::distilled(&store, node, &now);
    let outcome = create::init(&Ctx::command_line(&store, now), node);
    output::report_repairs(&store);
    for w in outcome.iter().flat_map(|created| &created.warnings) {
        output::err(&format!("splice: warning: {w}\n"));
    }
    output::emit(&store, outcome)
}
