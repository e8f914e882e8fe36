//! The command line: one file per subcommand, each with clap derive `Args` and a `run`.
//! `main.rs` parses, calls [`run`], and maps the error to the exit code.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::error::Result;

pub mod args;
pub mod cache;
pub mod classify;
pub mod close;
pub mod completions;
pub mod create;
pub mod decide;
pub mod demo;
pub mod dep;
pub mod design;
pub mod doctor;
pub mod drive;
pub mod exec;
pub mod guard;
pub mod hooks;
pub mod init;
pub mod init_task;
pub mod interop;
pub mod list;
pub mod logs;
pub mod manifest;
pub mod monitor;
pub mod output;
pub mod plan;
pub mod ready;
pub mod run;
pub mod sandbox;
pub mod show;
pub mod snapshot;
pub mod start;
pub mod status;
pub mod transition;
pub mod update;

/// splice: carry software work through a declared pipeline, one deterministic pass at a time.
#[derive(Parser, Debug)]
#[command(name = "splice", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every subcommand takes.
#[derive(clap::Args, Debug, Clone)]
pub struct Global {
    /// The state directory (`.splice`) or the directory holding it. Default: $SPLICE_DIR, else the
    /// nearest ancestor of the working directory that holds `.splice/`.
    #[arg(long, global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Read the bead files around the derived cache `.splice/cache/` (which is left as it is).
    /// Hidden: a read through the cache equals a read of the files, so no read needs it; kept
    /// so that scripts passing it still run, and to measure the cache against
    /// (docs/decisions/0006-cache.md).
    #[arg(long, global = true, hide = true)]
    pub no_cache: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create a campaign root (and `.splice/` when missing).
    #[command(
        after_help = "Examples:\n  splice init\n  splice init --title \"Billing revamp\" --scenarios S1,S2 --autonomy wave"
    )]
    Init(init::Args),
    /// Create a lone task: a leaf at generate-spec (and `.splice/` when missing).
    #[command(
        after_help = "Examples:\n  splice init-task --title \"Fix the login redirect\"\n  splice init-task --title \"Rename the flag\" --tier light --target develop"
    )]
    InitTask(init_task::Args),
    /// Change or read pipeline state: the writer's verbs.
    Transition(transition::Args),
    /// Drive an example campaign to done in a scratch repository.
    Demo(demo::Args),
    /// Drive passes until the run rests or reaches a limit (the headless runner).
    #[command(
        after_help = "Examples:\n  splice run\n  splice run --jobs 4 --max-passes 50\n  splice run --scope sp-a1 --json --exit-status"
    )]
    Run(run::RunArgs),
    /// Run one pass: decide, act, record.
    Pass(run::PassArgs),
    /// The demo and test agent: does a step's real work in its worktree, then proposes.
    #[command(hide = true)]
    SimAgent(crate::demo::agent::Args),
    /// Print the snapshot a pass would decide from (JSON).
    Snapshot(snapshot::Args),
    /// Replay a saved snapshot through the pure decide core.
    Decide(decide::Args),
    /// Show the tree, each node's step and the reason it acts or rests.
    #[command(
        after_help = "Examples:\n  splice status\n  splice status --scope sp-a1\n  splice status --json"
    )]
    Status(status::Args),
    /// Read the effective manifest (`manifest show`).
    Manifest(manifest::Args),
    /// A person closes a bead whose work was done another way (releases its claim; journaled).
    Close(close::Args),
    /// A person cancels a bead that will not be done: closed, and it counts for nothing.
    Cancel(close::Args),
    /// Install or inspect the hooks that guard agents: Claude Code's `splice guard` and git's
    /// pre-commit check.
    Hooks(hooks::Args),
    /// A Claude Code PreToolUse hook: reads the hook's JSON on stdin and denies tool calls that
    /// would write splice's state, run a verb the caller may not run, or (from a dispatched
    /// session) write outside its worktree or move branches it does not own. Prints Claude
    /// Code's deny decision on stdout, nothing to allow; always exits 0.
    Guard(guard::Args),
    /// Run a command inside the kernel sandbox a policy file describes (`sandbox exec`): how a
    /// Slurm job confines its agent.
    Sandbox(sandbox::Args),
    /// Print the request tier the manifest's rules give a request, and the rule that decided it.
    Classify(classify::Args),
    /// Create a lone task from a request (or a campaign from `--plan`) and run it headless to
    /// rest; prints where it landed, exits with the run's status.
    #[command(
        after_help = "Examples:\n  splice exec \"Add a --verbose flag to the CLI\"\n  splice exec --plan plan.json --json"
    )]
    Exec(exec::Args),
    /// Saved plans: `plan crystallize` turns notes into one, `plan critique` judges one, `plan
    /// approve` runs it.
    Plan(plan::Args),
    /// Design mode: talk the work over with the design agent, crystallize the conversation into
    /// a plan, approve it (the cockpit's design pane, `D`, keeps the same sessions).
    Design(design::Args),
    /// Replay a loop step's trajectory through the pure pass monitor: stop, escalate, roll
    /// back, step back, ask the user or continue.
    Monitor(monitor::Args),
    /// The interactive cockpit: the tree, a node's detail and its dispatch's log, and keys to
    /// run, approve, reject, unpark and guide (a terminal only).
    #[command(after_help = "Examples:\n  splice drive\n  splice drive --scope sp-a1 --jobs 2")]
    Drive(drive::Args),
    /// Import another tool's export: `import bd FILE` (bd and br's issues.jsonl).
    Import(interop::ImportArgs),
    /// Export to another tool's format: `export bd` (bd and br's issues.jsonl).
    Export(interop::ExportArgs),
    /// Put a plain bead (imported, or made by `splice create`) on a route: a task on its
    /// tier's route, or with --campaign an epic as a campaign root adopting its children.
    #[command(
        after_help = "Examples:\n  splice start bd-a3f8\n  splice start bd-a3f8 --tier light\n  splice start bd-e1 --campaign"
    )]
    Start(start::Args),
    /// Print a shell completion script: bash, zsh, fish or powershell (`docs/cli.md`).
    Completions(completions::CompletionsArgs),
    /// Print splice's manual page (roff), or write one page per command with `--dir`.
    Man(completions::ManArgs),
    /// Check the repository, targets, agent command, config and manifest, claims, worktrees,
    /// journal and hooks, each finding with its fix; exit 1 when something needs a person.
    #[command(after_help = "Examples:\n  splice doctor\n  splice doctor --json")]
    Doctor(doctor::Args),
    /// Every bead, pipeline nodes and plain beads, one line each (bd's `list`).
    #[command(
        after_help = "Examples:\n  splice list\n  splice list --all --sort priority --limit 20\n  splice list --json"
    )]
    List(list::Args),
    /// What could run now and why (the decision's actions), and the plain beads ready to start.
    #[command(after_help = "Examples:\n  splice ready\n  splice ready --json")]
    Ready(ready::Args),
    /// One bead: its fields and, for a pipeline node, its step, claim and decision.
    #[command(after_help = "Examples:\n  splice show sp-a1\n  splice show sp-a1 sp-a2 --json")]
    Show(show::Args),
    /// Create a plain bead (no route yet; `splice start ID` puts it on one), as bd's `create`.
    #[command(
        after_help = "Examples:\n  splice create \"Fix login\" -p P1 -t bug\n  splice create \"Write the docs\" --parent bd-e1 -l docs"
    )]
    Create(create::Args),
    /// The dispatch logs of a node (or of the latest run), newest first; `--follow` tails one.
    #[command(after_help = "Examples:\n  splice logs\n  splice logs sp-a1 --follow")]
    Logs(logs::Args),
    /// The derived snapshot cache `.splice/cache/`: `cache rebuild` writes it anew.
    Cache(cache::Args),
    /// Change fields of one or more beads (bd's `update`): title, status, priority, type,
    /// assignee, labels, description and bd's kept fields. A claimed bead is refused.
    #[command(
        after_help = "Examples:\n  splice update bd-a3f8 --title \"Clearer title\" -p 1\n  splice update bd-1 bd-2 --add-label ui"
    )]
    Update(update::Args),
    /// Reopen closed beads (bd's `reopen`). A pipeline node is not reopened.
    Reopen(update::ReopenArgs),
    /// A bead's labels: `label add ID… LABEL`, `label rm ID… LABEL`, `label list ID`.
    Label(update::LabelArgs),
    /// A bead's dependencies: `dep add ISSUE DEPENDS_ON [--type T]`, `dep rm`, `dep tree ID`.
    Dep(dep::Args),
    /// Keep a bd export and the store in step both ways: `sync bd [--path .beads/issues.jsonl]`.
    Sync(interop::SyncArgs),
}

/// Run the parsed command; the returned code is the process exit code.
pub fn run(cli: Cli) -> Result<i32> {
    let global = &cli.global;
    if global.no_cache {
        crate::store::cache::disable();
    }
    match cli.command {
        Command::Init(args) => init::run(args, global),
        Command::InitTask(args) => init_task::run(args, global),
        Command::Transition(args) => transition::run(args, global),
        Command::Demo(args) => demo::run(args, global),
        Command::Run(args) => run::run(args, global),
        Command::Pass(args) => run::pass(args, global),
        Command::SimAgent(args) => crate::demo::agent::run(&args),
        Command::Snapshot(args) => snapshot::run(global, args),
        Command::Decide(args) => decide::run(global, args),
        Command::Status(args) => status::run(global, args),
        Command::Manifest(args) => manifest::run(global, args),
        Command::Close(args) => close::run(args, global, false),
        Command::Cancel(args) => close::run(args, global, true),
        Command::Hooks(args) => hooks::run(args, global),
        Command::Guard(args) => guard::run(args, global),
        Command::Sandbox(args) => sandbox::run(args, global),
        Command::Classify(args) => classify::run(global, args),
        Command::Exec(args) => exec::run(args, global),
        Command::Plan(args) => plan::run(args, global),
        Command::Design(args) => design::run(args, global),
        Command::Monitor(args) => monitor::run(global, args),
        Command::Drive(args) => drive::run(args, global),
        Command::Import(args) => interop::import(args, global),
        Command::Export(args) => interop::export(args, global),
        Command::Start(args) => start::run(args, global),
        Command::Completions(args) => completions::completions(global, args),
        Command::Man(args) => completions::man(global, args),
        Command::Doctor(args) => doctor::run(args, global),
        Command::List(args) => list::run(global, args),
        Command::Ready(args) => ready::run(global, args),
        Command::Show(args) => show::run(global, args),
        Command::Create(args) => create::run(args, global),
        Command::Logs(args) => logs::run(global, args),
        Command::Cache(args) => cache::run(global, args),
        Command::Update(args) => update::run(args, global),
        Command::Reopen(args) => update::reopen(args, global),
        Command::Label(args) => update::label(args, global),
        Command::Dep(args) => dep::run(args, global),
        Command::Sync(args) => interop::sync(args, global),
    }
}
