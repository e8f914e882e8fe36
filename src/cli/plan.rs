//! `splice plan crystallize` (notes → a validated plan file, with an optional critic) and
//! `splice plan approve` (`exec --plan`), and the run of a plan both share.

use std::path::{Path, PathBuf};

use super::exec::{self, ExecArgs};
use super::{Global, output};
use crate::driver::crystallize::{self, Crystallized};
use crate::error::Result;
use crate::store::Store;
use crate::transition::plan::{PlanInput, start};
use crate::transition::{Ctx, Verb, create};

/// Saved plans (docs/plan.md).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: PlanCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum PlanCommand {
    /// Turn notes into a plan file: the design agent (`[plan] designer`, else `[agent]
    /// command` with the crystallize prompt) writes it in a scratch directory; it is validated
    /// and, with `[plan] critic`, judged, then written to `-o`. Exits 0 when written (and the
    /// critic, if any, passed it), 1 when the critic failed it (it is written all the same), 2
    /// when the designer failed or its plan is invalid (nothing written).
    Crystallize(CrystallizeArgs),
    /// Approve and run a saved plan: the same as `splice exec --plan PLAN`. With `[plan]
    /// critic` configured, refused (exit 1) until the critic has judged the plan in its current
    /// form (`plan critique`), and while its verdict holds a must-fix finding, unless
    /// `--override-critic REASON`.
    Approve(ApproveArgs),
    /// Run `[plan] critic` on a plan file and record its verdict under the plan's sha256
    /// (`.splice/runs/critiques/`), where `plan approve` reads it. Exits 0 when nothing must be
    /// fixed, 1 when a finding must be (or a dispatched session asked), 2 when no critic is
    /// configured, the plan is invalid or the critic could not start.
    Critique(CritiqueArgs),
}

#[derive(clap::Args, Debug)]
pub struct CritiqueArgs {
    /// The plan file.
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,
    /// Print the verdict as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct CrystallizeArgs {
    /// The notes (markdown) to turn into a plan.
    #[arg(value_name = "NOTES")]
    pub notes: PathBuf,
    /// Where the plan goes (default: NOTES with the extension `.plan.json`).
    #[arg(short = 'o', long = "output-file", value_name = "PLAN")]
    pub out: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct ApproveArgs {
    /// The plan file.
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,
    /// Approve the plan over the must-fix findings of the critic's verdict on it, for REASON
    /// (recorded with the approval, in the journal).
    #[arg(long, value_name = "REASON")]
    pub override_critic: Option<String>,
    #[command(flatten)]
    pub run: ExecArgs,
}

pub fn run(args: Args, global: &Global) -> Result<i32> {
    match args.command {
        PlanCommand::Crystallize(a) => crystallize_cmd(&a, global),
        PlanCommand::Approve(a) => run_plan_as(
            &a.plan,
            a.override_critic.as_deref(),
            &a.run,
            global,
            Verb::PlanApprove,
        ),
        PlanCommand::Critique(a) => critique_cmd(&a, global),
    }
}

/// `exec --plan FILE`.
pub fn run_plan(
    plan: &Path,
    override_critic: Option<&str>,
    args: &ExecArgs,
    global: &Global,
) -> Result<i32> {
    run_plan_as(plan, override_critic, args, global, Verb::Exec)
}

fn run_plan_as(
    path: &Path,
    override_critic: Option<&str>,
    args: &ExecArgs,
    global: &Global,
    verb: Verb,
) -> Result<i32> {
    run_plan_then(path, override_critic, args, global, verb, |_, _| Ok(()))
}

/// Approve and start the plan at `path`, call `started` with its campaign (before the run), then
/// run it to rest.
pub fn run_plan_then(
    path: &Path,
    override_critic: Option<&str>,
    args: &ExecArgs,
    global: &Global,
    verb: Verb,
    started: impl FnOnce(&Store, &crate::transition::plan::Started) -> Result<()>,
) -> Result<i32> {
    let opts = args.options()?;
    super::init::parse_delivery(args.delivery.as_deref())?;
    let (plan, sha256) = crate::transition::plan::read_file(path)?;
    let planned = Store::open_or_plan(global.dir.as_deref())?;
    create::admit_creation(&planned, verb)?;
    create::check_target(&planned, plan.target.as_deref())?;
    let now = crate::clock::now_string()?;
    let store = Store::open_or_create(global.dir.as_deref())?;
    let mut input = PlanInput {
        plan: &plan,
        file: path.display().to_string(),
        critic: crystallize::standing(&store, &sha256)?,
        sha256,
        delivery: super::init::parse_delivery(args.delivery.as_deref())?,
        override_critic: override_critic.map(str::to_string),
        intent: None,
    };
    if let Some(w) = crate::driver::distill::approval(&store, &mut input, &now)? {
        output::err(&format!("splice: warning: {w}\n"));
    }
    let campaign = start(&Ctx::command_line(&store, now), verb, &input)?;
    for w in &campaign.warnings {
        output::err(&format!("splice: warning: {w}\n"));
    }
    started(&store, &campaign)?;
    exec::drive(&store, &campaign.id, &opts, &args.output, "campaign")
}

fn crystallize_cmd(args: &CrystallizeArgs, global: &Global) -> Result<i32> {
    let store = Store::open_or_plan(global.dir.as_deref())?;
    crate::transition::authority::admit(
        Verb::PlanCrystallize,
        &crate::transition::Who::command_line(store.dir()),
    )?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.notes.with_extension("plan.json"));
    // The critic's verdict is kept in the state directory: it is made when there is a critic.
    let store = match store.config()?.plan.critic.is_some() {
        true => Store::open_or_create(global.dir.as_deref())?,
        false => store,
    };
    let result: Crystallized = crystallize::crystallize(&store, &args.notes, &out)?;
    if args.json {
        output::print_json(&result);
    } else {
        output::out(&crystallize::human(&result));
    }
    Ok(if result.critic.as_ref().is_some_and(|c| !c.passed()) {
        1
    } else {
        0
    })
}

fn critique_cmd(args: &CritiqueArgs, global: &Global) -> Result<i32> {
    let planned = Store::open_or_plan(global.dir.as_deref())?;
    crate::transition::authority::admit(
        Verb::PlanCritique,
        &crate::transition::Who::command_line(planned.dir()),
    )?;
    if planned.config()?.plan.critic.is_none() {
        return Err(crate::error::Error::Invalid(
            "no critic is configured: set `[plan] critic = [...]` in config.toml".into(),
        ));
    }
    let store = Store::open_or_create(global.dir.as_deref())?;
    let judged = crystallize::critique(&store, &args.plan)?;
    if args.json {
        output::print_json(&judged);
    } else {
        output::out(&format!(
            "plan {} (sha256 {})\n{}",
            args.plan.display(),
            judged.sha256,
            crystallize::findings_text(&judged)
        ));
    }
    Ok(if judged.passed() { 0 } else { 1 })
}
