//! `splice run` and `splice pass`: the headless runner.

use super::Global;
use crate::driver::events::{Events, Output};
use crate::driver::runner::{self, Options};
use crate::error::Result;
use crate::store::Store;
use crate::transition::authority::{self, Verb, Who};

/// Drive passes until the run rests (not `ready`) or a limit is reached. Prints the final
/// envelope; exits 0 whatever the status (the status is in the output). Ctrl-C stops the
/// dispatches in flight, records their exits and releases their claims, then exits 130. A
/// dispatched session cannot start a runner (exit 1).
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Only this bead's tree.
    #[arg(long, value_name = "ID")]
    pub scope: Option<String>,
    /// Stop with status `budget` after this many passes.
    #[arg(long, value_name = "N")]
    pub max_passes: Option<u64>,
    /// Dispatches in flight at once.
    #[arg(long, value_name = "J")]
    pub jobs: Option<u32>,
    /// Stop with status `budget` once dispatches have used this many tokens.
    #[arg(long, value_name = "T")]
    pub token_budget: Option<u64>,
    /// Stop with status `budget` after this many seconds (checked before each pass).
    #[arg(long, value_name = "S")]
    pub wall_time: Option<u64>,
    /// human: progress lines; json: the final envelope; stream-json: one event per line, the
    /// last a `result` whose `text` is the final envelope.
    #[arg(long, value_enum, default_value = "human")]
    pub output: Output,
}

/// One pass: decide, act (waiting for the dispatches it starts), record. Prints the envelope.
#[derive(clap::Args, Debug)]
pub struct PassArgs {
    #[arg(long, value_name = "ID")]
    pub scope: Option<String>,
    /// Decide only: print what the pass would do, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long, value_name = "J")]
    pub jobs: Option<u32>,
    #[arg(long, value_enum, default_value = "json")]
    pub output: Output,
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
        ..Options::default()
    };
    let summary = runner::run(&store, &opts, &Events::new(args.output));
    super::output::report_repairs(&store);
    finish(summary?, args.output)
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
    let summary = runner::run(&store, &opts, &Events::new(args.output));
    super::output::report_repairs(&store);
    finish(summary?, args.output)
}

/// Exit 0 whatever the status (it is in the output); 130 when Ctrl-C stopped the run.
fn finish(summary: runner::Summary, output: Output) -> Result<i32> {
    if output == Output::Json {
        let env = serde_json::to_value(&summary.envelope).unwrap_or_default();
        super::output::print_json(&env);
    }
    Ok(if summary.interrupted { 130 } else { 0 })
}
