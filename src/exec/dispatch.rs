//! Run one dispatch: an argv in the node's worktree, in its own process group, with the
//! `SPLICE_*` environment, a timeout that kills the whole group, and a bounded log.
//!
//! The process itself is run by [`crate::process::run`] (own group, the group killed at the
//! timeout, on cancel and after the leader exits, a fence that kills it when the runner dies, the
//! output drained with a grace period). The dispatch's credential (`SPLICE_CREDENTIAL`, made by
//! the runner, its hash on the claim) goes into its environment and nowhere else: not the argv,
//! the prompt or the log.
//! stdout and stderr share one pipe, so the log keeps their interleaving; the log is a
//! [`BoundedLog`]. splice's notes (a timeout, a signal, why the command could not start) are
//! appended to the log after the output.
//!
//! A command that cannot start is [`ExitKind::NotStarted`], one the runner cancelled (Ctrl-C,
//! SIGTERM) [`ExitKind::Cancelled`], each with the reason in the log and in the result's `cause`;
//! `Err` is kept for splice's own faults (the run directory or the log cannot be written).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::model::Bead;
use crate::model::bead::{ExitKind, StepResponse};
use crate::model::config::Price;
use crate::process::{self, BoundedLog, Cmd, DEFAULT_CAP, Exit, Output, lock};

use super::usage::{self, Adapter, Usage};

/// The files of one dispatch, under `.splice/runs/<run-id>/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchPaths {
    pub run_dir: PathBuf,
    /// `<bead>-<step>-<attempt>.log`; a retry after a transient end,
    /// `<bead>-<step>-<attempt>.<retry>.log` ([`DispatchPaths::retry`]), so that no try's log
    /// overwrites another's.
    pub log: PathBuf,
    /// `<bead>-<step>-<attempt>/`: the dispatch's own directory, the one place under `.splice/`
    /// its sandbox may write: the usage and result files, the inbox, the temp directory.
    pub private_dir: PathBuf,
    /// `<private>/usage.json`, passed as `SPLICE_USAGE_FILE`.
    pub usage_file: PathBuf,
    /// `<private>/result.json`, passed as `SPLICE_RESULT_FILE`: where an agent may write its
    /// final response (`{"response": …, "confidence": …}`).
    pub result_file: PathBuf,
    /// `<private>/inbox/`, passed as `SPLICE_INBOX` to a sandboxed dispatch: where its
    /// `splice transition propose|split|resplit` leave their requests for the runner to answer
    /// ([`crate::transition::inbox`]).
    pub inbox: PathBuf,
    /// `<private>/tmp/`: the sandboxed dispatch's `TMPDIR`.
    pub tmp: PathBuf,
    /// `<bead>-<step>-<attempt>.prompt.md`, for `{{prompt_file}}`.
    pub prompt_file: PathBuf,
    /// `<bead>-<step>-<attempt>.settings.json`: a Claude Code agent's settings registering the
    /// guard ([`super::guard`]).
    pub settings_file: PathBuf,
    /// `<bead>-<step>-<attempt>.sbatch`: a Slurm job's batch script ([`super::slurm`]).
    pub script_file: PathBuf,
    /// `<bead>-<step>-<attempt>.proposals.jsonl`, passed to a Slurm job as `SPLICE_PROPOSALS`:
    /// where its agent's verbs are recorded for the runner to apply when the job ends.
    pub proposals_file: PathBuf,
}

impl DispatchPaths {
    /// The paths for a dispatch. Every name part must be a plain file-name component.
    pub fn new(
        runs_dir: &Path,
        run_id: &str,
        bead: &str,
        step: &str,
        attempt: u32,
    ) -> Result<DispatchPaths> {
        for (what, part) in [("run id", run_id), ("bead id", bead), ("step", step)] {
            if !plain_component(part) {
                return Err(Error::Invalid(format!(
                    "{what} {part:?} cannot name a file under {}",
                    runs_dir.display()
                )));
            }
        }
        let run_dir = runs_dir.join(run_id);
        let stem = format!("{bead}-{step}-{attempt}");
        let private_dir = run_dir.join(&stem);
        Ok(DispatchPaths {
            log: run_dir.join(format!("{stem}.log")),
            usage_file: private_dir.join("usage.json"),
            result_file: private_dir.join("result.json"),
            inbox: private_dir.join("inbox"),
            tmp: private_dir.join("tmp"),
            private_dir,
            prompt_file: run_dir.join(format!("{stem}.prompt.md")),
            settings_file: run_dir.join(format!("{stem}.settings.json")),
            script_file: run_dir.join(format!("{stem}.sbatch")),
            proposals_file: run_dir.join(format!("{stem}.proposals.jsonl")),
            run_dir,
        })
    }

    /// The same dispatch's retry number `retry` after transient ends ([`Bead::retries_at`]): its
    /// log is `<bead>-<step>-<attempt>.<retry>.log` (the first try, 0, keeps
    /// `<bead>-<step>-<attempt>.log`). Its other files are the attempt's: a retry starts them
    /// afresh, and its exit record keeps what it used.
    #[must_use]
    pub fn retry(mut self, retry: u32) -> DispatchPaths {
        if retry > 0
            && let Some(stem) = self
                .log
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".log"))
        {
            self.log = self.run_dir.join(format!("{stem}.{retry}.log"));
        }
        self
    }
}

/// The dispatch log of `bead`'s dispatch in flight (the cockpit's log pane, `splice logs
/// --follow`): `.splice/runs/<run>/<bead>-<step>-<attempt>.log`
/// of the run that holds its claim. `None` when it has no runner's claim.
pub fn in_flight_log(runs_dir: &Path, bead: &Bead) -> Option<PathBuf> {
    let lease = bead.pipeline.lease.as_ref()?;
    let mut parts = lease.holder.splitn(4, ':');
    if parts.next() != Some("run") {
        return None;
    }
    let run = parts.nth(2)?;
    let step = &bead.pipeline.step;
    let attempt = bead.pipeline.attempts.get(step).copied().unwrap_or(1);
    DispatchPaths::new(runs_dir, run, &bead.id, step, attempt)
        .ok()
        .map(|p| p.retry(bead.retries_at(attempt)).log)
}

/// Can `s` name a file inside a directory (no separator, not hidden, not `..`)?
fn plain_component(s: &str) -> bool {
    !s.is_empty() && s.len() <= 200 && !s.starts_with('.') && !s.contains(['/', '\\', '\0'])
}

/// Everything one dispatch needs.
#[derive(Clone, Debug)]
pub struct DispatchSpec<'a> {
    pub bead: &'a str,
    pub step: &'a str,
    pub attempt: u32,
    pub holder: &'a str,
    pub run_id: &'a str,
    /// The `.splice` directory (`SPLICE_DIR`).
    pub splice_dir: &'a Path,
    /// Where the command runs (`SPLICE_WORKTREE`).
    pub worktree: &'a Path,
    pub paths: &'a DispatchPaths,
    /// The rendered argv ([`super::template::command_argv`]).
    pub argv: &'a [String],
    /// `None`: no limit.
    pub timeout: Option<Duration>,
    /// Stop the command after this long without progress (`process::Cmd::stall`); `None`:
    /// never.
    pub stall: Option<Duration>,
    /// Log cap in bytes ([`DEFAULT_CAP`]).
    pub log_cap: usize,
    pub usage: Adapter,
    pub prices: &'a BTreeMap<String, Price>,
    /// The step's configured model (`{{model}}`): the usage's model when the agent's output
    /// names none (Codex's), so `[prices.<model>]` can price it.
    pub model: Option<&'a str>,
    /// The directory put first on `PATH`; `None`: the running splice binary's directory.
    pub splice_bin_dir: Option<&'a Path>,
    /// Set by another thread (e.g. on Ctrl-C) to kill the process group at the next poll; the
    /// dispatch then ends as [`ExitKind::Cancelled`] with a note in the log.
    pub cancel: Option<&'a AtomicBool>,
    /// The dispatch's own credential (`SPLICE_CREDENTIAL`): the writer lets it act on this
    /// dispatch's bead only, and only while the claim lasts. `None`: the agent can only read.
    pub credential: Option<&'a str>,
    /// The branch the node's work lands on (`SPLICE_TARGET`), when one is known.
    pub target: Option<&'a str>,
    /// More `SPLICE_*` variables for this dispatch (a loop step's `SPLICE_ITERATION` and
    /// `SPLICE_LOOP_CONTEXT`, a step-back's `SPLICE_STEP_BACK`).
    pub env: Vec<(String, String)>,
    /// The kernel sandbox it runs in ([`super::sandbox`]); `None`: unsandboxed.
    pub sandbox: Option<&'a crate::sandbox::Sandbox>,
}

impl<'a> DispatchSpec<'a> {
    /// A spec with the defaults: no timeout, 1 MiB log, automatic usage adapter, no prices.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        bead: &'a str,
        step: &'a str,
        attempt: u32,
        holder: &'a str,
        run_id: &'a str,
        splice_dir: &'a Path,
        worktree: &'a Path,
        paths: &'a DispatchPaths,
        argv: &'a [String],
    ) -> DispatchSpec<'a> {
        static NO_PRICES: BTreeMap<String, Price> = BTreeMap::new();
        DispatchSpec {
            bead,
            step,
            attempt,
            holder,
            run_id,
            splice_dir,
            worktree,
            paths,
            argv,
            timeout: None,
            stall: None,
            log_cap: DEFAULT_CAP,
            usage: Adapter::Auto,
            prices: &NO_PRICES,
            model: None,
            splice_bin_dir: None,
            cancel: None,
            credential: None,
            target: None,
            env: Vec::new(),
            sandbox: None,
        }
    }
}

/// How a dispatch ended.
#[derive(Clone, Debug, PartialEq)]
pub struct DispatchResult {
    pub exit: ExitKind,
    /// The exit code, when the command exited by itself.
    pub code: Option<i32>,
    /// Why it ended so, in a line: why it could not start, the signal, the cancel, or the last
    /// line the command printed before it failed.
    pub cause: Option<String>,
    pub log: PathBuf,
    pub elapsed_ms: u64,
    pub usage: Option<Usage>,
    /// Its final response ([`super::response`]), for result branches.
    pub response: Option<StepResponse>,
    /// A transient end's wait the agent's API asked for ([`super::ended::retry_after_s`]).
    pub retry_after_s: Option<u64>,
}

/// The `PATH` a dispatched command gets: the directory of the running splice binary (or
/// `bin_dir`) first, then splice's own `PATH`.
pub fn dispatch_path(bin_dir: Option<&Path>) -> OsString {
    let bin_dir = bin_dir.map(Path::to_path_buf).or_else(|| {
        std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_path_buf))
    });
    let mut path_dirs: Vec<PathBuf> = bin_dir.into_iter().collect();
    if let Some(old) = std::env::var_os("PATH") {
        path_dirs.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(path_dirs).unwrap_or_else(|_| {
        // A directory with ':' in its name cannot go on PATH; keep the inherited one.
        std::env::var_os("PATH").unwrap_or_default()
    })
}

/// Where a command's `argv[0]` would be found when a dispatch starts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// An executable file.
    At(PathBuf),
    /// Not there, or not executable: why, in words that follow "which" (`is not on PATH`).
    Missing(String),
    /// Cannot be told before the dispatch: a relative path (found from the node's worktree) or
    /// a template (`{{worktree}}/agent`).
    Unknown,
}

/// Look `program` up as a dispatch would start it: a path as it is, a bare name on the dispatch
/// `PATH` ([`dispatch_path`]).
pub fn find_program(program: &str) -> Found {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.is_empty() {
        return Found::Missing("is empty".into());
    }
    if program.contains("{{") || (program.contains('/') && !program.starts_with('/')) {
        return Found::Unknown;
    }
    if program.contains('/') {
        let path = Path::new(program);
        return match executable(path) {
            true => Found::At(path.to_path_buf()),
            false if path.is_file() => Found::Missing("is not executable".into()),
            false => Found::Missing("does not exist".into()),
        };
    }
    let path = dispatch_path(None);
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
        .map_or_else(|| Found::Missing("is not on PATH".into()), Found::At)
}

/// The environment a dispatched command sees on top of splice's own.
pub fn env_for(spec: &DispatchSpec) -> Vec<(String, OsString)> {
    let path = dispatch_path(spec.splice_bin_dir);
    let mut env: Vec<(String, OsString)> = vec![
        ("SPLICE_BEAD".into(), spec.bead.into()),
        ("SPLICE_STEP".into(), spec.step.into()),
        ("SPLICE_ATTEMPT".into(), spec.attempt.to_string().into()),
        ("SPLICE_HOLDER".into(), spec.holder.into()),
        ("SPLICE_DIR".into(), spec.splice_dir.into()),
        ("SPLICE_WORKTREE".into(), spec.worktree.into()),
        (
            "SPLICE_USAGE_FILE".into(),
            spec.paths.usage_file.clone().into(),
        ),
        (
            "SPLICE_RESULT_FILE".into(),
            spec.paths.result_file.clone().into(),
        ),
        ("SPLICE_DISPATCHED".into(), "1".into()),
        ("SPLICE_RUN".into(), spec.run_id.into()),
        ("PATH".into(), path),
    ];
    if let Some(credential) = spec.credential {
        env.push(("SPLICE_CREDENTIAL".into(), credential.into()));
    }
    if let Some(target) = spec.target {
        env.push(("SPLICE_TARGET".into(), target.into()));
    }
    for (k, v) in &spec.env {
        env.push((k.clone(), v.into()));
    }
    env
}

/// Run one dispatch to its end (or its timeout).
pub fn dispatch(spec: &DispatchSpec) -> Result<DispatchResult> {
    let paths = spec.paths;
    std::fs::create_dir_all(&paths.private_dir).map_err(|e| Error::io(&paths.private_dir, e))?;
    for stale in [&paths.usage_file, &paths.result_file] {
        match std::fs::remove_file(stale) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(stale, e)),
        }
    }
    let log = Arc::new(Mutex::new(BoundedLog::create(&paths.log, spec.log_cap)?));
    let cmd = Cmd {
        env: env_for(spec)
            .into_iter()
            .map(|(k, v)| (k.into(), v))
            .collect(),
        timeout: spec.timeout,
        stall: spec.stall,
        cancel: spec.cancel,
        fence: true,
        sandbox: spec.sandbox,
        ..Cmd::new(spec.argv, spec.worktree)
    };
    let ran = process::run(&cmd, Output::Combined(log.clone()));
    let (exit, code, note, retry_after_s) = {
        let mut log = lock(&log);
        log.finish()?;
        let failed_with = matches!(ran.exit, Exit::Code(c) if c != 0)
            .then(|| last_output_line(&paths.log))
            .flatten();
        if !ran.drained {
            log.note("output after the command ended was not waited for (a process outside its group holds it)")?;
        }
        let (exit, code, note) = record_end(spec, &ran.exit, &mut log)?;
        // What the agent itself reported: why it did nothing, a transient API failure, a
        // missing login (`ended`).
        let text = super::agent_file::log_text(&paths.log);
        let (exit, note) = super::ended::settle(exit, note.or(failed_with), &text);
        let retry_after_s = (exit == ExitKind::Transient)
            .then(|| super::ended::retry_after_s(note.as_deref(), &text))
            .flatten();
        if matches!(exit, ExitKind::Transient | ExitKind::Unauthorized) {
            log.note(&format!(
                "{}: {}",
                kind_word(exit),
                note.as_deref().unwrap_or("")
            ))?;
        }
        (exit, code, note, retry_after_s)
    };
    let elapsed_ms = u64::try_from(ran.elapsed.as_millis()).unwrap_or(u64::MAX);
    let usage = match usage::collect(
        spec.usage,
        &paths.log,
        &paths.usage_file,
        elapsed_ms,
        spec.prices,
        spec.model,
    ) {
        Ok(u) => u,
        Err(e) => {
            lock(&log).note(&format!("usage not recorded: {e}"))?;
            None
        }
    };
    Ok(DispatchResult {
        exit,
        code,
        cause: note,
        log: paths.log.clone(),
        elapsed_ms,
        usage,
        response: super::response::read(&paths.log, &paths.result_file),
        retry_after_s,
    })
}

/// How a transient or unauthorized end is named in the log.
fn kind_word(exit: ExitKind) -> &'static str {
    match exit {
        ExitKind::Transient => "a transient failure of the agent's API; it counts no attempt",
        _ => "the agent cannot authenticate; the node parks for a person",
    }
}

/// The dispatch's exit kind and code, with a note in the log for every end but a plain exit;
/// the note is the cause, except for a timeout (its kind says it).
fn record_end(
    spec: &DispatchSpec,
    exit: &Exit,
    log: &mut BoundedLog,
) -> Result<(ExitKind, Option<i32>, Option<String>)> {
    let cancelled = spec.cancel.is_some_and(|c| c.load(Ordering::SeqCst));
    let (kind, code, note) = match exit {
        Exit::Code(0) => (ExitKind::Ok, Some(0), None),
        Exit::Code(c) => (ExitKind::Failed, Some(*c), None),
        // The runner was stopping: whatever killed it, the runner cancelled it.
        Exit::Signal(s) if cancelled => (
            ExitKind::Cancelled,
            None,
            Some(format!("cancelled by the runner (signal {s})")),
        ),
        Exit::Signal(s) => (
            ExitKind::Error,
            None,
            Some(format!("the command died by signal {s}")),
        ),
        Exit::Stalled(after) => (
            ExitKind::Stalled,
            None,
            Some(format!(
                "stalled: no output, and next to no CPU time or reads and writes, for {}s; \
                 killed the process group",
                after.as_secs()
            )),
        ),
        Exit::TimedOut => {
            let limit = spec.timeout.unwrap_or_default().as_secs_f64();
            let note = format!("timed out after {limit}s; killed the process group");
            log.note(&note)?;
            return Ok((ExitKind::Timeout, None, None));
        }
        Exit::Cancelled => (
            ExitKind::Cancelled,
            None,
            Some("cancelled by the runner (Ctrl-C or SIGTERM); killed the process group".into()),
        ),
        Exit::Lost(e) => (
            ExitKind::Error,
            None,
            Some(format!(
                "lost track of the command: {e}; killed its process group"
            )),
        ),
        Exit::NotStarted(reason) => {
            // `No such file or directory (os error 2)`: the OS's words are enough.
            let reason = reason.split(" (os error").next().unwrap_or(reason);
            let cause = match spec.argv.first() {
                None => format!("could not start the command: {reason}"),
                Some(program) => format!("could not start `{program}`: {reason}"),
            };
            log.note(&format!("{cause} (in {})", spec.worktree.display()))?;
            return Ok((ExitKind::NotStarted, None, Some(cause)));
        }
    };
    if let Some(note) = &note {
        log.note(note)?;
    }
    Ok((kind, code, note))
}

/// The most a cause quoted from a command's output holds, in bytes.
const CAUSE_CAP: usize = 300;

/// The last line a failed command printed, as its cause (`last output: …`): the text of a JSON
/// event line (Claude Code's `result` or `error`, Codex's `error.message` or `message`), the
/// `error.message` of Gemini's JSON output when the line closes it, else the line.
fn last_output_line(log: &Path) -> Option<String> {
    let text = super::agent_file::read(log, super::agent_file::LOG).ok()??;
    let text = String::from_utf8_lossy(&text);
    let line = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("[splice:"))?;
    let said = serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .and_then(|v| {
            ["/result", "/error", "/error/message", "/message"]
                .iter()
                .find_map(|k| v.pointer(k).and_then(|t| t.as_str()).map(str::to_string))
        })
        .or_else(|| {
            line.starts_with('}')
                .then(|| usage::gemini::error(&text))
                .flatten()
        })
        .unwrap_or_else(|| line.to_string());
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(format!(
        "last output: {}",
        super::prompt::truncate(&said, CAUSE_CAP)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_named_after_the_dispatch() {
        let p = DispatchPaths::new(
            Path::new("/s/runs"),
            "2025-01-02T03:04:05Z-ab",
            "sp-1.2",
            "review",
            3,
        )
        .unwrap();
        assert_eq!(p.run_dir, Path::new("/s/runs/2025-01-02T03:04:05Z-ab"));
        assert_eq!(p.log, p.run_dir.join("sp-1.2-review-3.log"));
        assert_eq!(
            p.usage_file,
            p.run_dir.join("sp-1.2-review-3").join("usage.json")
        );
        assert_eq!(p.prompt_file, p.run_dir.join("sp-1.2-review-3.prompt.md"));
        let retried = p.clone().retry(2);
        assert_eq!(retried.log, p.run_dir.join("sp-1.2-review-3.2.log"));
        assert_eq!(
            retried.private_dir, p.private_dir,
            "a retry's other files are its attempt's"
        );
        assert_eq!(p.clone().retry(0), p);
        for bad in ["", "..", "../x", "a/b", ".hidden"] {
            assert!(
                DispatchPaths::new(Path::new("/s"), bad, "sp-1", "s", 1).is_err(),
                "{bad}"
            );
            assert!(
                DispatchPaths::new(Path::new("/s"), "r", "sp-1", bad, 1).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn an_empty_argv_is_a_start_failure() {
        let dir = tempfile::tempdir().unwrap();
        let paths = DispatchPaths::new(&dir.path().join("runs"), "r", "sp-1", "s", 1).unwrap();
        let spec = DispatchSpec::new(
            "sp-1",
            "s",
            1,
            "h",
            "r",
            dir.path(),
            dir.path(),
            &paths,
            &[],
        );
        let r = dispatch(&spec).unwrap();
        assert_eq!((r.exit, r.code), (ExitKind::NotStarted, None));
        let log = std::fs::read_to_string(&r.log).unwrap();
        assert!(log.contains("argv is empty"), "{log}");
        assert_eq!(
            r.cause.as_deref(),
            Some("could not start the command: the argv is empty")
        );
    }
}
