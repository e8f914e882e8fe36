//! `splice exec "REQUEST"`: create a lone task and run it headless to rest; `splice exec --plan
//! FILE` (and `splice plan approve FILE`): run a saved plan the same way.

use std::path::PathBuf;

use super::init::{parse_autonomy, parse_delivery};
use super::run::{OutputArgs, status_code};
use super::{Global, output};
use crate::driver::events::{Event, Events, Output};
use crate::driver::headless::{self, ExecOptions, ExecResult};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::transition::{Ctx, Verb, create};

/// Create a lone task from REQUEST (title: its first line; description: all of it), or a
/// campaign from `--plan`, and run it headless, scoped to it, until the run rests. Prints the
/// result: the run's final status, the node, and where its work landed. Exits with the run's
/// final status as `run --exit-status` does: done 0, suspended-human 10, suspended-running 11,
/// escalated 12, budget 13, stalled 14, idle 15; 1 when refused (bad input, a dispatched
/// session: it is a person's verb), 2 on a fault, 130 when Ctrl-C or SIGTERM stopped it.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// What to do, in words (the task's title is its first line).
    #[arg(value_name = "REQUEST", required_unless_present = "plan")]
    pub request: Option<String>,
    /// Run this saved plan instead (docs/plan.md): a campaign root and its children, the plan's
    /// approval recorded as the approval of the root's create-prp and to-issues gates.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["request", "tier", "autonomy"])]
    pub plan: Option<PathBuf>,
    /// With `--plan` and a critic configured: approve the plan over the must-fix findings of
    /// the critic's verdict on it, for REASON (recorded with the approval, in the journal).
    #[arg(long, value_name = "REASON", requires = "plan")]
    pub override_critic: Option<String>,
    #[command(flatten)]
    pub task: TaskArgs,
    #[command(flatten)]
    pub run: ExecArgs,
}

/// What a request's task is created with (a plan says these itself).
#[derive(clap::Args, Debug)]
pub struct TaskArgs {
    /// Request tier: auto (classified; the task starts on the classified tier's route, its rule
    /// recorded), or trivial, light, standard, substantial or architectural (a campaign root).
    #[arg(long, default_value = "auto")]
    pub tier: String,
    /// Autonomy level of the task: hitl, wave or deep (default: `[autonomy] default`, else
    /// hitl, which waits for a person at its first gate).
    #[arg(long, value_name = "LEVEL")]
    pub autonomy: Option<String>,
}

/// What `exec` and `plan approve` share: how the run goes and reports.
#[derive(clap::Args, Debug)]
pub struct ExecArgs {
    /// Delivery method of the task (of a plan's campaign root, which its children inherit):
    /// pr or direct (default: `[delivery] method`, else pr).
    #[arg(long)]
    pub delivery: Option<String>,
    /// Stop the run with status `budget` after N passes (read → decide → act → record).
    #[arg(long, value_name = "N")]
    pub max_passes: Option<u64>,
    /// A loop step's iteration limit in place of its manifest's `max_iterations`, when
    /// positive (0 keeps the manifest's).
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// Keep a loop node's snapshot refs (`refs/splice/snapshots/<id>/<n>`) when its
    /// checkouts are removed.
    #[arg(long)]
    pub keep_snapshots: bool,
    /// Run every step with this agent instead of `[agent]` of config.toml (which is neither
    /// read for it nor written): `sim`, the built-in simulated agent in its generic mode.
    #[arg(long, value_enum, value_name = "AGENT")]
    pub agent: Option<AgentChoice>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Agents `--agent` names.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentChoice {
    /// `splice sim-agent --generic`: writes a note and a test for any request.
    Sim,
}

impl ExecArgs {
    pub fn options(&self) -> Result<ExecOptions> {
        if self.max_passes == Some(0) {
            return Err(Error::Invalid("--max-passes must be at least 1".into()));
        }
        Ok(ExecOptions {
            max_passes: self.max_passes,
            max_turns: self.max_turns,
            keep_snapshots: self.keep_snapshots,
            agent: match self.agent {
                Some(AgentChoice::Sim) => Some(headless::sim_agent()?),
                None => None,
            },
        })
    }
}

pub fn run(args: Args, global: &Global) -> Result<i32> {
    if let Some(plan) = &args.plan {
        return super::plan::run_plan(plan, args.override_critic.as_deref(), &args.run, global);
    }
    let request = args.request.as_deref().unwrap_or_default();
    let title = title_of(request)?;
    create::check_tier(&args.task.tier)?;
    let node = create::NewNode {
        title,
        description: request.trim().to_string(),
        autonomy: parse_autonomy(args.task.autonomy.as_deref())?,
        delivery: parse_delivery(args.run.delivery.as_deref())?,
        tier: Some(args.task.tier.clone()),
        ..create::NewNode::default()
    };
    let opts = args.run.options()?;
    let planned = Store::open_or_plan(global.dir.as_deref())?;
    create::admit_creation(&planned, Verb::Exec)?;
    create::check_target(&planned, None)?;
    let now = crate::clock::now_string()?;
    let store = Store::open_or_create(global.dir.as_deref())?;
    let node = distilled(&store, node, &now);
    let created = create::exec_task(&Ctx::command_line(&store, now), node)?;
    drive(&store, &created.id, &opts, &args.run.output, "task")
}

/// The new task with its request's intent (`[plan] distiller`, `driver::distill`); a
/// distiller's failure is warned about, and the task's steps get the deterministic cut.
pub(super) fn distilled(store: &Store, node: create::NewNode, now: &str) -> create::NewNode {
    let request = match node.description.trim().is_empty() {
        true => &node.title,
        false => &node.description,
    };
    let distilled = crate::driver::distill::request(store, request, now);
    if let Some(w) = &distilled.warning {
        super::output::err(&format!("splice: warning: {w}\n"));
    }
    create::NewNode {
        intent: distilled.intent,
        ..node
    }
}

/// The task's title: the request's first non-empty line, at most 100 characters.
fn title_of(request: &str) -> Result<String> {
    let line = request.lines().map(str::trim).find(|l| !l.is_empty());
    let Some(line) = line else {
        return Err(Error::Invalid("REQUEST must say what to do".into()));
    };
    Ok(line.chars().take(100).collect())
}

/// Run `id` to rest and print the result; the exit code is the run's status.
pub fn drive(
    store: &Store,
    id: &str,
    opts: &ExecOptions,
    output: &OutputArgs,
    what: &str,
) -> Result<i32> {
    let chosen = output.chosen();
    let events = Events::new(chosen);
    events.emit(&Event::Note {
        text: format!("exec: created {what} {id}; running it"),
    });
    crate::driver::interrupt::install();
    let outcome = headless::run(store, id, opts, &events);
    output::report_repairs(store);
    let (summary, result) = outcome?;
    print(&result, chosen);
    Ok(if summary.interrupted {
        130
    } else {
        status_code(summary.status)
    })
}

fn print(result: &ExecResult, chosen: Output) {
    match chosen {
        Output::Json => output::print_json(result),
        Output::Human => output::out(&headless::human(result)),
        // The last line is the runner's `result` event; the task's id is in the first note.
        Output::StreamJson | Output::Quiet => {}
    }
}
