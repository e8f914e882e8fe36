//! `splice demo`: the example campaign driven to `done` in a scratch repository.

use std::path::{Path, PathBuf};

use super::Global;
use crate::demo::run::{Setup, demo, summary_table};
use crate::driver::events::{Output, out};
use crate::error::{Error, Result};
use crate::model::RunStatus;
use crate::store::Store;

/// Copy the example campaign (a tiny Rust crate, five scenarios, three leaves) into a scratch git
/// repository and drive it to `done` with the built-in simulated agent (`splice sim-agent`), which
/// does each step's real work: the PRP, the split, specs, code and tests named with scenario ids,
/// reviews at HEAD, merges into the campaign branch, the reconciliation. Planning gates wait for a
/// person; the demo approves them as the person and says so. Exits 0 when the campaign is done.
/// The scratch repository is removed at the end unless `--keep` is given.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Keep the scratch repository afterwards and print where it is, with commands to look
    /// around. With DIR (a missing or empty directory), build it there.
    #[arg(long, value_name = "DIR", num_args = 0..=1)]
    pub keep: Option<Option<PathBuf>>,
    /// Only prepare the campaign in DIR (a missing or empty directory): the scratch repository,
    /// `.splice/` with the simulated agent configured, the campaign at deep autonomy (its
    /// planning gates wait for a person). No pass is run; drive it with `splice drive` there.
    #[arg(long, value_name = "DIR", conflicts_with = "keep")]
    pub setup_only: Option<PathBuf>,
    /// human: progress and a summary table; json: one object with the outcome (status,
    /// passes, dispatches, tokens, and the repository when kept); stream-json: the runner's
    /// events.
    #[arg(long, value_enum, default_value = "human")]
    pub output: Output,
    /// The same as `--output json`.
    #[arg(long, conflicts_with = "output")]
    pub json: bool,
    /// Where the dispatches run: local (processes of the runner) or slurm (a batch job each, on
    /// the cluster `sbatch` reaches; the simulated agent runs inside the jobs, and the scratch
    /// repository, under the system temp dir or `--keep DIR`, must be on a file system the
    /// compute nodes share: it is the config's `shared_root`).
    #[arg(long, value_enum, default_value = "local")]
    pub executor: Executor,
    /// How many dispatches run at once (`[limits] jobs`).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = crate::model::config::parse_jobs)]
    pub jobs: u32,
}

/// `--executor`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Executor {
    Local,
    Slurm,
}

pub fn run(args: Args, _global: &Global) -> Result<i32> {
    let output = if args.json { Output::Json } else { args.output };
    let setup = Setup {
        slurm: args.executor == Executor::Slurm,
        jobs: args.jobs,
    };
    if let Some(dir) = &args.setup_only {
        return setup_only(dir, output, &setup);
    }
    let result = demo(args.keep.clone().flatten().as_deref(), output, &setup)?;
    let store = Store::discover(Some(&result.dir))?;
    let human = output == Output::Human;
    if human {
        out(&summary_table(&store, &result)?);
    }
    if output == Output::Json {
        super::output::print_json(&serde_json::json!({
            "status": result.status,
            "passes": result.passes,
            "dispatches": result.dispatches,
            "tokens": result.tokens,
            "wall_ms": result.wall_ms,
            "kept": args.keep.is_some().then(|| result.dir.display().to_string()),
        }));
    }
    if args.keep.is_some() {
        if human {
            let dir = result.dir.display();
            let splice = invocation();
            out(&format!(
                "repository kept: {dir}\n  git -C {dir} log --oneline --graph campaign/calc\n  \
                 {splice} --dir {dir} status\n"
            ));
        }
    } else {
        std::fs::remove_dir_all(&result.dir).map_err(|e| Error::io(&result.dir, e))?;
        if human {
            out(&format!(
                "scratch repository {} removed (`splice demo --keep` keeps it)\n",
                result.dir.display()
            ));
        }
    }
    Ok(if result.status == RunStatus::Done {
        0
    } else {
        1
    })
}

/// `--setup-only DIR`: the campaign prepared, nothing run; says what was made and what to run
/// next. Exits 0.
fn setup_only(dir: &Path, output: Output, setup: &Setup) -> Result<i32> {
    let root = crate::demo::run::setup_only(dir, output, setup)?;
    let dir = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
    let shown = dir.display();
    match output {
        Output::Json => super::output::print_json(&serde_json::json!({
            "dir": shown.to_string(),
            "root": root,
            "next": format!("cd {shown} && splice drive"),
        })),
        _ => out(&format!(
            "demo prepared in {shown}: campaign {root}, the simulated agent configured, no pass \
             run; its planning gates wait for a person.\nnext: cd {shown} && {} drive\n",
            invocation()
        )),
    }
    Ok(0)
}

/// How to run this splice in a printed command: `splice` when that is the binary on PATH, else
/// this executable's path (e.g. `target/release/splice` under `cargo run`).
fn invocation() -> String {
    let Ok(exe) = std::env::current_exe() else {
        return "splice".into();
    };
    let on_path = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| same_file(&dir.join("splice"), &exe))
    });
    if on_path {
        return "splice".into();
    }
    let shown = std::env::current_dir()
        .ok()
        .and_then(|cwd| exe.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or(exe);
    shown.display().to_string()
}

fn same_file(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}
