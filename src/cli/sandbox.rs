//! `splice sandbox exec --policy FILE -- ARGV…`: run a command inside the kernel sandbox a
//! policy file describes (issue 31). A Slurm job's script runs its agent this way, since the job
//! starts on a compute node where no runner can confine it (`docs/scale-out.md`); the runner
//! writes the policy (`exec::sandbox`). Read-only: it changes no state, and inside the
//! sandbox splice's own state is read-only anyway.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use super::Global;
use crate::error::{Error, Result};
use crate::sandbox::{Policy, Sandbox};

/// Run a command in the kernel sandbox.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Run ARGV inside the sandbox FILE describes (JSON: `read`, `write`, `devices`, `env`), in
    /// place of this process: its exit is ARGV's. Exit 2 when the policy cannot be read or the
    /// kernel cannot sandbox (nothing is run unconfined).
    ///
    /// Example: `splice sandbox exec --policy job.sandbox.json -- claude -p "…"`
    Exec {
        /// The policy file (the runner writes one per Slurm job).
        #[arg(long, value_name = "FILE")]
        policy: PathBuf,
        /// Accepted, as on every command, and changes nothing: what is printed is ARGV's.
        #[command(flatten)]
        json: super::args::JsonAlias,
        /// The command and its arguments.
        #[arg(last = true, required = true, value_name = "ARGV")]
        argv: Vec<String>,
    },
}

pub fn run(args: Args, _global: &Global) -> Result<i32> {
    let Command::Exec { policy, argv, .. } = args.command;
    let text = crate::safe_read::read_text(&policy, crate::safe_read::SETTINGS)?;
    let policy_value: Policy = serde_json::from_str(&text)
        .map_err(|e| Error::bad_file(&policy, format!("not a sandbox policy: {e}")))?;
    let sandbox = Sandbox::prepare(&policy_value)
        .map_err(|why| Error::Invalid(format!("cannot sandbox `{}`: {why}", argv[0])))?;
    enter_and_exec(&sandbox, &argv)
}

/// Enter `sandbox` in this process (no other thread runs) and exec `argv` with the kept
/// environment; returns only when the exec failed.
fn enter_and_exec(sandbox: &Sandbox, argv: &[String]) -> Result<i32> {
    let mut command = std::process::Command::new(&argv[0]);
    command.args(&argv[1..]).env_clear();
    command.envs(std::env::vars_os().filter(|(k, _)| sandbox.keeps(k)));
    #[cfg(target_os = "linux")]
    {
        let mut enter = sandbox.entry();
        enter().map_err(|e| Error::Invalid(format!("cannot enter the sandbox: {e}")))?;
    }
    let e = command.exec();
    Err(Error::Invalid(format!("cannot run `{}`: {e}", argv[0])))
}
