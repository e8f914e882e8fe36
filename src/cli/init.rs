//! `splice init`: create a campaign root (and `.splice/` when missing); with no `--title`, as
//! bd's `init`, only an empty store (`.splice/` with nothing started), so `splice create` and
//! `splice import bd` have somewhere to write.

use super::{Global, output};
use crate::error::{Error, Result};
use crate::model::Autonomy;
use crate::model::bead::DeliveryMethod;
use crate::store::Store;
use crate::transition::{Ctx, Verb, create};

/// What `init` and `init-task` both take.
#[derive(clap::Args, Debug)]
pub struct NodeArgs {
    /// The title (`init-task` needs one; `init` without one creates an empty store).
    #[arg(long)]
    pub title: Option<String>,
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
        let Some(title) = self.title else {
            return Err(Error::Invalid(
                "--title is required: what the work is, in one line".into(),
            ));
        };
        Ok(create::NewNode {
            title,
            description: self.description,
            autonomy: parse_autonomy(self.autonomy.as_deref())?,
            target: self.target,
            delivery: parse_delivery(self.delivery.as_deref())?,
            ..create::NewNode::default()
        })
    }
}

/// Create a campaign: a root bead at create-prp. Prints `{"id": …}`. Without --title: an empty
/// store (`.splice/` only), as bd's `init`; prints `{"state_dir", "created"}`.
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

/// What `init` without a title did.
#[derive(serde::Serialize, Debug)]
struct Store0 {
    /// The state directory.
    state_dir: std::path::PathBuf,
    /// `false`: it was there already (nothing was changed).
    created: bool,
}

/// `init` without a title: `.splice/` and nothing in it, as bd's `init` makes an empty database.
fn empty_store(args: &Args, global: &Global) -> Result<i32> {
    let n = &args.node;
    let campaign_only = [
        (!n.description.is_empty(), "--description"),
        (n.autonomy.is_some(), "--autonomy"),
        (n.target.is_some(), "--target"),
        (n.delivery.is_some(), "--delivery"),
        (args.scenarios.is_some(), "--scenarios"),
    ];
    if let Some((_, flag)) = campaign_only.iter().find(|(given, _)| *given) {
        return Err(Error::Invalid(format!(
            "{flag} is for a campaign: give it --title too (`splice init` alone creates an \
             empty store)"
        )));
    }
    let planned = Store::open_or_plan(global.dir.as_deref())?;
    create::admit_creation(&planned, Verb::Init)?;
    let existed = planned.dir().join("beads").is_dir();
    let store = Store::open_or_create(global.dir.as_deref())?;
    output::print_json(&Store0 {
        state_dir: store.dir().to_path_buf(),
        created: !existed,
    });
    Ok(0)
}

pub fn run(args: Args, global: &Global) -> Result<i32> {
    if args.node.title.is_none() {
        return empty_store(&args, global);
    }
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
