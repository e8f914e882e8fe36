//! `splice run` and `splice pass`: the headless runner.

use super::Global;
use crate::driver::events::{Events, Output};
use crate::driver::runner::{self, Options};
use crate::error::Result;
use crate::model::RunStatus;
use crate::model::config::parse_jobs;
use crate::store::Store;
use crate::transition::authority::{self, Verb, Who};

/// Drive passes until the run rests (not `ready`) or a limit is reached. Prints the final
/// envelope. Exits 0 when the run ran, whatever its status (the status is in the output), unless
/// `--exit-status` asks for the status as the exit code; 130 when Ctrl-C or SIGTERM stopped it
/// (dispatches in flight are stopped, their exits recorded and their claims released first). A
/// dispatched session cannot start a runner (exit 1).
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Only this bead's tree (the bead and its descendants).
    #[arg(long, value_name = "ID")]
    pub scope: Option<String>,
    /// Stop with status `budget` after this many passes.
    #[arg(long, value_name = "N")]
    pub max_passes: Option<u64>,
    /// Dispatches in flight at once (default: `[limits] jobs`, else 1); at least 1.
    #[arg(long, value_name = "J", value_parser = parse_jobs)]
    pub jobs: Option<u32>,
    /// Stop with status `budget` once dispatches have used this many tokens.
    #[arg(long, value_name = "T")]
    pub token_budget: Option<u64>,
    /// Stop with status `budget` after this many seconds (checked before each pass).
    #[arg(long, value_name = "S")]
    pub wall_time: Option<u64>,
    /// A loop step's iteration limit in place of its manifest's `max_iterations`, when
    /// positive (0 keeps the manifest's).
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// Keep a loop node's snapshot refs (`refs/splice/snapshots/<id>/<n>`) when its
    /// checkouts are removed.
    #[arg(long)]
    pub keep_snapshots: bool,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Release the claims of runners that died on this host (their process is gone, or their
    /// pid now names another process; never a Slurm job's claim, nor while a process of the
    /// dead runner's dispatch lives), as your act, journaled; then their nodes run.
    /// `[limits] reclaim_dead = true` asks the same of every run.
    #[arg(long)]
    pub reclaim_dead: bool,
    /// Exit with the final run status instead of 0: done 0, suspended-human 10,
    /// suspended-running 11, escalated 12, budget 13, stalled 14, idle 15 (see docs/cli.md;
    /// `ready`, 16, cannot end a run).
    #[arg(long)]
    pub exit_status: bool,
}

/// How a run reports.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputArgs {
    /// human: progress lines and the final reasons; json: the final envelope only;
    /// stream-json: one event per line, the last a `result` whose `text` is the final envelope.
    #[arg(long, value_enum, default_value = "human")]
    pub output: Output,
    /// The same as `--output json`.
    #[arg(long, conflicts_with = "output")]
    pub json: bool,
}

impl OutputArgs {
    pub fn chosen(&self) -> Output {
        if self.json { Output::Json } else { self.output }
    }
}

/// One pass: decide, act (waiting for the dispatches it starts), record. Prints the envelope
/// (JSON by default).
#[derive(clap::Args, Debug)]
pub struct PassArgs {
    /// Only this bead's tree (the bead and its descendants).
    #[arg(long, value_name = "ID")]
    pub scope: Option<String>,
    /// Decide only: print what the pass would do (each action with result `dry-run`), change
    /// nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Dispatches the pass may start (default: `[limits] jobs`, else 1); at least 1.
    #[arg(long, value_name = "J", value_parser = parse_jobs)]
    pub jobs: Option<u32>,
    /// human: the actions and the final reasons; json: the envelope; stream-json: one event
    /// per line, the last a `result` whose `text` is the envelope.
    #[arg(long, value_enum, default_value = "json")]
    pub output: Output,
    /// The same as `--output json`.
    #[arg(long, conflicts_with = "output")]
    pub json: bool,
}

pub fn run(args: RunArgs, global: &Global) -> Result<i32> {
    let store = Store::discover(global.dir.as_deref())?;
    authority::admit(Verb::Run, &Who::command_line(store.dir()))?;
    crate::driver::interrupt::install();
    let opts = Options {
        scope: args.scope,
        max_passes: args.max_passes,
        jobs: args.jobs,
        token_budget: args.token_budget,
        wall_time_s: args.wall_time,
        max_turns: args.max_turns,
        keep_snapshots: args.keep_snapshots,
        reclaim_dead: args.reclaim_dead,
        ..Options::default()
    };
    let output = args.output.chosen();
    let summary = runner::run(&store, &opts, &Events::new(output));
    super::output::report_repairs(&store);
    let summary = summary?;
    let code = finish(&summary, output);
    Ok(match code {
        0 if args.exit_status => status_code(summary.status),
        code => code,
    })
}

pub fn pass(args: PassArgs, global: &Global) -> Result<i32> {
    let store = Store::discover(global.dir.as_deref())?;
    let verb = if args.dry_run {
        Verb::PassDryRun
    } else {
        Verb::Pass
    };
    authority::admit(verb, &Who::command_line(store.dir()))?;
    crate::driver::interrupt::install();
    let opts = Options {
        scope: args.scope,
        jobs: args.jobs,
        dry_run: args.dry_run,
        one_pass: true,
        ..Options::default()
    };
    let output = if args.json { Output::Json } else { args.output };
    let summary = runner::run(&store, &opts, &Events::new(output));
    super::output::report_repairs(&store);
    Ok(finish(&summary?, output))
}

/// Print the final envelope for `json`; exit 0 (the status is in the output), or 130 when
/// Ctrl-C or SIGTERM stopped the run.
fn finish(summary: &runner::Summary, output: Output) -> i32 {
    if output == Output::Json {
        super::output::print_json(&summary.envelope);
    }
    if summary.interrupted { 130 } else { 0 }
}

/// `--exit-status`: the final status as an exit code, clear of 1, 2 and 130.
pub fn status_code(status: RunStatus) -> i32 {
    match status {
        RunStatus::Done => 0,
        RunStatus::SuspendedHuman => 10,
        RunStatus::SuspendedRunning => 11,
        RunStatus::Escalated => 12,
        RunStatus::Budget => 13,
        RunStatus::Stalled => 14,
        RunStatus::Idle => 15,
        RunStatus::Ready => 16,
    }
}
