//! The `slurm` check: with `[executor] kind = "slurm"`, Slurm's client commands answer —
//! `sbatch --version` (the commands are installed), `squeue -h` (the controller answers) and
//! `sacct` (accounting; a note only: it needs slurmdbd, and splice does not depend on it). Each
//! runs through [`crate::process`] with a time limit, in the repository's root, with splice's own
//! environment (so `SLURM_CONF` is the one a run would see). With `kind = "local"` the check says
//! it is not used.

use std::time::Duration;

use super::{Ctx, Finding};
use crate::model::executor::ExecutorKind;
use crate::process::{self, Cmd, Exit};

pub const SLURM: &str = "slurm";

/// How long each Slurm command may take to answer (`squeue` retries a controller that is down
/// for about 9 s before it says so).
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// What a failing `sbatch` or `squeue` asks of a person.
const FIX: &str = "is SLURM_CONF set? is slurmctld up? Run the command yourself to see why; \
                   Slurm's client commands (Debian: slurm-client) must be on PATH";

/// The Slurm client commands, when the executor is Slurm.
pub fn slurm(cx: &Ctx) -> Vec<Finding> {
    let config = match &cx.config {
        Ok(c) => c,
        Err(_) => return vec![Finding::not_checked(SLURM, "config.toml does not load")],
    };
    if config.executor.kind() != ExecutorKind::Slurm {
        return vec![Finding::ok(SLURM, "not used: [executor] kind is \"local\"")];
    }
    let dir = cx.store.repo();
    let sbatch = answer(&["sbatch", "--version"], dir);
    let squeue = answer(&["squeue", "-h"], dir);
    let sacct = answer(&["sacct", "-n"], dir);
    vec![
        required(
            &["sbatch", "--version"],
            sbatch,
            "the Slurm commands are installed",
        ),
        required(&["squeue", "-h"], squeue, "the controller answers"),
        accounting(sacct),
    ]
}

/// How one command answered: `Ok(first line of stdout)`, or `Err(what happened)`.
fn answer(argv: &[&str], dir: &std::path::Path) -> Result<String, String> {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let mut cmd = Cmd::new(&argv, dir);
    cmd.timeout = Some(TIMEOUT);
    let ran = process::capture(&cmd, 4096);
    let first = |text: &str| {
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string()
    };
    match &ran.ran.exit {
        Exit::Code(0) => Ok(first(&ran.stdout)),
        Exit::Code(code) => Err(match first(&ran.stderr) {
            e if e.is_empty() => format!("exited {code}"),
            e => format!("exited {code}: {e}"),
        }),
        Exit::TimedOut => Err(format!("did not answer within {}s", TIMEOUT.as_secs())),
        Exit::NotStarted(why) => Err(format!("did not start: {why}")),
        Exit::Signal(sig) => Err(format!("died by signal {sig}")),
        other => Err(format!("did not run: {other:?}")),
    }
}

/// `sbatch` or `squeue`: a run cannot submit or watch jobs without them.
fn required(argv: &[&str], answered: Result<String, String>, what: &str) -> Finding {
    let shown = argv.join(" ");
    match answered {
        Ok(line) if line.is_empty() => Finding::ok(SLURM, format!("`{shown}` answers: {what}")),
        Ok(line) => Finding::ok(SLURM, format!("`{shown}` answers: {what} ({line})")),
        Err(why) => Finding::needs_person(
            SLURM,
            format!(
                "`{shown}` {why}: [executor] kind is \"slurm\", and a run cannot submit or \
                 watch jobs"
            ),
            format!("`{shown}` {why}: {FIX}"),
        ),
    }
}

/// `sacct`: a note either way; splice reads jobs through `squeue` and `scontrol`.
fn accounting(answered: Result<String, String>) -> Finding {
    match answered {
        Ok(_) => Finding::ok(SLURM, "`sacct -n` answers: accounting is available"),
        Err(why) => Finding::ok(
            SLURM,
            format!(
                "`sacct -n` {why} (a note: accounting needs slurmdbd; splice does not depend \
                 on it)"
            ),
        ),
    }
}
