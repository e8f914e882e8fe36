//! A dispatch as a Slurm batch job (`[executor] kind = "slurm"`, `docs/scale-out.md`): the
//! batch script, `sbatch --parsable`, and reading what Slurm says about a job (`squeue
//! --states=all`, `scontrol show job`, `sacct` when accounting answers; never depended on).
//!
//! This module runs Slurm's commands and parses their answers; it changes no bead. The runner
//! claims, submits through [`submit`], records the job id on the claim (`record-job`), watches
//! every job of a run with one poller, and records each job's end ([`exit_of`]) as it records a
//! local exit.

mod parse;

use std::path::Path;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::model::bead::ExitKind;
use crate::model::executor::Resources;
use crate::process::{self, Cmd};

pub use parse::{Listed, Shown, parse_sacct, parse_sbatch, parse_scontrol, parse_squeue};

/// How long one call of a Slurm command may take.
const CALL_LIMIT: Duration = Duration::from_secs(30);

/// The most output of a Slurm command splice reads.
const CALL_CAP: usize = 4 << 20;

/// A job's state, as Slurm names it (`squeue %T`, `scontrol`'s `JobState=`, `sacct`'s `State`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobState {
    Pending,
    Configuring,
    Running,
    Completing,
    Suspended,
    Requeued,
    Resizing,
    Completed,
    Failed,
    Timeout,
    Cancelled,
    NodeFail,
    OutOfMemory,
    Preempted,
    BootFail,
    Deadline,
    /// Any other name Slurm uses: treated as still live until it says an end.
    Other(String),
}

impl JobState {
    /// `RUNNING`, `CANCELLED by 0` (sacct) and `CANCELLED+` all read as their first word.
    pub fn parse(text: &str) -> JobState {
        let word = text
            .split([' ', '+'])
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        match word.as_str() {
            "PENDING" | "PD" => JobState::Pending,
            "CONFIGURING" | "CF" => JobState::Configuring,
            "RUNNING" | "R" => JobState::Running,
            "COMPLETING" | "CG" => JobState::Completing,
            "SUSPENDED" | "S" => JobState::Suspended,
            "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" | "RQ" => JobState::Requeued,
            "RESIZING" | "RS" => JobState::Resizing,
            "COMPLETED" | "CD" => JobState::Completed,
            "FAILED" | "F" => JobState::Failed,
            "TIMEOUT" | "TO" => JobState::Timeout,
            "CANCELLED" | "CA" => JobState::Cancelled,
            "NODE_FAIL" | "NF" => JobState::NodeFail,
            "OUT_OF_MEMORY" | "OOM" => JobState::OutOfMemory,
            "PREEMPTED" | "PR" => JobState::Preempted,
            "BOOT_FAIL" | "BF" => JobState::BootFail,
            "DEADLINE" | "DL" => JobState::Deadline,
            _ => JobState::Other(word),
        }
    }

    /// Slurm's name for it.
    pub fn name(&self) -> &str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Configuring => "CONFIGURING",
            JobState::Running => "RUNNING",
            JobState::Completing => "COMPLETING",
            JobState::Suspended => "SUSPENDED",
            JobState::Requeued => "REQUEUED",
            JobState::Resizing => "RESIZING",
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::Timeout => "TIMEOUT",
            JobState::Cancelled => "CANCELLED",
            JobState::NodeFail => "NODE_FAIL",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
            JobState::Preempted => "PREEMPTED",
            JobState::BootFail => "BOOT_FAIL",
            JobState::Deadline => "DEADLINE",
            JobState::Other(name) => name,
        }
    }

    /// The job has ended: nothing of it runs any more (`COMPLETING` still has processes).
    pub fn ended(&self) -> bool {
        matches!(
            self,
            JobState::Completed
                | JobState::Failed
                | JobState::Timeout
                | JobState::Cancelled
                | JobState::NodeFail
                | JobState::OutOfMemory
                | JobState::Preempted
                | JobState::BootFail
                | JobState::Deadline
        )
    }
}

/// How a job ended, from `scontrol show job` (or `sacct`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobEnd {
    pub state: JobState,
    /// `ExitCode=<code>:<signal>`: the batch script's exit code.
    pub code: Option<i32>,
    /// The signal that killed it, when one did.
    pub signal: Option<i32>,
}

/// The batch script of one dispatch. Its `#SBATCH` lines carry the job's name and
/// [`Resources::options`] (every value a token checked at load: a bead id, a step name, a
/// partition, a size); paths go on `sbatch`'s command line ([`sbatch_argv`]), never into the
/// script's text, and the argv is quoted for `sh`.
pub fn batch_script(name: &str, r: &Resources, timeout_s: u64, argv: &[String]) -> String {
    let mut s = String::from("#!/bin/sh\n");
    s.push_str("# A splice dispatch (generated for one job; `docs/scale-out.md`).\n");
    s.push_str(&format!("#SBATCH --job-name={name}\n"));
    for option in r.options(timeout_s) {
        s.push_str(&format!("#SBATCH {option}\n"));
    }
    let quoted: Vec<String> = argv.iter().map(|a| sh_quote(a)).collect();
    s.push_str(&format!("exec {}\n", quoted.join(" ")));
    s
}

/// `sbatch`'s command line for `script`: stdout and stderr to `log`, run in `worktree`, every
/// variable of the submitting environment exported (the dispatch's `SPLICE_*` among them).
pub fn sbatch_argv(script: &Path, log: &Path, worktree: &Path) -> Vec<String> {
    vec![
        "sbatch".into(),
        "--parsable".into(),
        "--export=ALL".into(),
        format!("--output={}", log.display()),
        format!("--chdir={}", worktree.display()),
        script.display().to_string(),
    ]
}

/// `'…'` for `sh`, a `'` inside as `'\''`.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The typed exit of a job that ended: recorded like a local exit. A job this runner cancelled
/// (Ctrl-C, a closed node) is `Cancelled` and costs no attempt; cancelled by anyone else, or
/// preempted, it is an `Error` and does. The cause names the job and its state.
pub fn exit_of(
    job: &str,
    end: &JobEnd,
    cancelled_here: bool,
) -> (ExitKind, Option<i32>, Option<String>) {
    let said = |what: &str| Some(format!("slurm job {job} ended {}{what}", end.state.name()));
    match &end.state {
        JobState::Completed if end.code == Some(0) || end.code.is_none() => {
            (ExitKind::Ok, Some(0), None)
        }
        JobState::Completed | JobState::Failed => match (end.code, end.signal) {
            (Some(c), _) if c != 0 => (ExitKind::Failed, Some(c), said(&format!(" (exit {c})"))),
            (_, Some(s)) if s != 0 => (ExitKind::Error, None, said(&format!(" (signal {s})"))),
            _ => (ExitKind::Failed, end.code, said("")),
        },
        JobState::Timeout => (ExitKind::Timeout, None, said(" (its time limit)")),
        JobState::Cancelled if cancelled_here => (
            ExitKind::Cancelled,
            None,
            Some(format!("slurm job {job} cancelled by the runner (scancel)")),
        ),
        JobState::Cancelled => (ExitKind::Error, None, said(" (not by this runner)")),
        JobState::Deadline => (ExitKind::Timeout, None, said(" (its deadline)")),
        JobState::OutOfMemory => (ExitKind::Error, None, said(" (over its --mem)")),
        JobState::NodeFail | JobState::BootFail => {
            (ExitKind::Error, None, said(" (the node failed)"))
        }
        JobState::Preempted => (ExitKind::Error, None, said(" (preempted)")),
        other => (
            ExitKind::Error,
            None,
            Some(format!("slurm job {job} in state {}", other.name())),
        ),
    }
}

/// Run one Slurm command: its stdout, or an error naming it with its exit and stderr.
fn call(argv: &[String], env: Vec<(std::ffi::OsString, std::ffi::OsString)>) -> Result<String> {
    let dir = std::env::temp_dir();
    let cmd = Cmd {
        env,
        timeout: Some(CALL_LIMIT),
        ..Cmd::new(argv, &dir)
    };
    let out = process::capture(&cmd, CALL_CAP);
    match out.code() {
        Some(0) => Ok(out.stdout),
        _ => Err(Error::Invalid(format!(
            "`{}` failed ({}): {}",
            argv.join(" "),
            match &out.ran.exit {
                process::Exit::Code(c) => format!("exit {c}"),
                other => format!("{other:?}"),
            },
            out.stderr.trim()
        ))),
    }
}

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Submit `script`: the job id `sbatch --parsable` prints. `env` is the dispatch's environment
/// on top of the runner's; the job gets it through `--export=ALL`.
pub fn submit(
    script: &Path,
    log: &Path,
    worktree: &Path,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
) -> Result<String> {
    let out = call(&sbatch_argv(script, log, worktree), env)?;
    parse_sbatch(&out)
        .ok_or_else(|| Error::Invalid(format!("sbatch printed no job id: {:?}", out.trim())))
}

/// Every job of this user Slurm still lists, ended ones too (`squeue --me --states=all`): one
/// call for all the jobs of a run, whatever the size of the store.
pub fn listing() -> Result<Vec<Listed>> {
    let out = call(
        &words(&[
            "squeue",
            "--me",
            "--states=all",
            "--noheader",
            "--format=%i|%T|%j",
        ]),
        Vec::new(),
    )?;
    Ok(parse_squeue(&out))
}

/// The jobs named `name` Slurm still lists.
pub fn by_name(name: &str) -> Result<Vec<Listed>> {
    let argv = vec![
        "squeue".into(),
        "--me".into(),
        "--states=all".into(),
        "--noheader".into(),
        "--format=%i|%T|%j".into(),
        format!("--name={name}"),
    ];
    Ok(parse_squeue(&call(&argv, Vec::new())?))
}

/// `scontrol show job <id>`: the job's name and end, `None` when Slurm no longer knows it.
pub fn show(job: &str) -> Result<Option<Shown>> {
    let argv = vec![
        "scontrol".into(),
        "show".into(),
        "job".into(),
        "--oneliner".into(),
        job.to_string(),
    ];
    match call(&argv, Vec::new()) {
        Ok(out) => Ok(parse_scontrol(&out)),
        Err(e) if e.to_string().contains("Invalid job id") => Ok(None),
        Err(e) => Err(e),
    }
}

/// `sacct` on one job, when accounting answers (it needs `slurmdbd`; `None` otherwise).
pub fn accounted(job: &str) -> Option<JobEnd> {
    let argv = vec![
        "sacct".into(),
        "--noheader".into(),
        "--parsable2".into(),
        "--allocations".into(),
        "--format=State,ExitCode".into(),
        format!("--jobs={job}"),
    ];
    parse_sacct(&call(&argv, Vec::new()).ok()?)
}

/// Which of `programs` a Slurm job finds (`srun`, one minute at most, with the executor's
/// resources), with the `PATH` a dispatch gets: how a Slurm run checks its agent commands where
/// they will run. A program with a `/` must be an executable file there.
pub fn programs_in_job(
    r: &Resources,
    programs: &[String],
) -> Result<std::collections::BTreeSet<String>> {
    let mut script = String::new();
    for (i, p) in programs.iter().enumerate() {
        let q = sh_quote(p);
        let test = match p.contains('/') {
            true => format!("test -x {q}"),
            false => format!("command -v {q} >/dev/null 2>&1"),
        };
        script.push_str(&format!("{test} && echo {i}\n"));
    }
    // Not found is an answer, not a failure of the job.
    script.push_str("exit 0\n");
    let mut argv = vec![
        "srun".to_string(),
        "--quiet".to_string(),
        "--job-name=splice-check-commands".to_string(),
        "--time=1".to_string(),
    ];
    if let Some(p) = &r.partition {
        argv.push(format!("--partition={p}"));
    }
    argv.extend(["--".to_string(), "sh".to_string(), "-c".to_string(), script]);
    let path = super::dispatch::dispatch_path(None);
    let out = call(&argv, vec![("PATH".into(), path)])?;
    Ok(out
        .lines()
        .filter_map(|l| programs.get(l.trim().parse::<usize>().ok()?).cloned())
        .collect())
}

/// `scancel <id>`.
pub fn cancel(job: &str) -> Result<()> {
    call(&["scancel".into(), job.to_string()], Vec::new()).map(|_| ())
}

#[cfg(test)]
mod tests;
