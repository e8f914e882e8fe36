//! Run one dispatch: an argv in the node's worktree, in its own process group, with the
//! `SPLICE_*` environment, a timeout that kills the whole group, and a bounded log.
//!
//! The argv runs as given (no shell unless it says `sh -c`). stdout and stderr share one pipe,
//! so the log keeps their interleaving; one reader thread drains it into a [`BoundedLog`]. The
//! wait polls `try_wait` every 20 ms. When the leader exits, whatever is left of its process
//! group is killed: a dispatch leaves no orphans behind to run outside any timeout or to hold
//! the log pipe open.
//!
//! A command that cannot start is [`ExitKind::Error`] with the reason in the log; `Err` is kept
//! for splice's own faults (the run directory or the log cannot be written).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::model::bead::ExitKind;
use crate::model::config::Price;

use super::log::{BoundedLog, DEFAULT_CAP};
use super::usage::{self, Adapter, Usage};

/// How often the wait checks on the child.
const POLL: Duration = Duration::from_millis(20);
/// How long the log reader may take to see end-of-file once the process group is gone.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The files of one dispatch, under `.splice/runs/<run-id>/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchPaths {
    pub run_dir: PathBuf,
    /// `<bead>-<step>-<attempt>.log`
    pub log: PathBuf,
    /// `<bead>-<step>-<attempt>.usage.json`, passed as `SPLICE_USAGE_FILE`.
    pub usage_file: PathBuf,
    /// `<bead>-<step>-<attempt>.prompt.md`, for `{{prompt_file}}`.
    pub prompt_file: PathBuf,
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
        Ok(DispatchPaths {
            log: run_dir.join(format!("{stem}.log")),
            usage_file: run_dir.join(format!("{stem}.usage.json")),
            prompt_file: run_dir.join(format!("{stem}.prompt.md")),
            run_dir,
        })
    }
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
    /// Log cap in bytes ([`DEFAULT_CAP`]).
    pub log_cap: usize,
    pub usage: Adapter,
    pub prices: &'a BTreeMap<String, Price>,
    /// The directory put first on `PATH`; `None`: the running splice binary's directory.
    pub splice_bin_dir: Option<&'a Path>,
    /// Set by another thread (e.g. on Ctrl-C) to kill the process group at the next poll; the
    /// dispatch then ends as [`ExitKind::Error`] with a note in the log.
    pub cancel: Option<&'a AtomicBool>,
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
            log_cap: DEFAULT_CAP,
            usage: Adapter::Auto,
            prices: &NO_PRICES,
            splice_bin_dir: None,
            cancel: None,
        }
    }
}

/// How a dispatch ended.
#[derive(Clone, Debug, PartialEq)]
pub struct DispatchResult {
    pub exit: ExitKind,
    /// The exit code, when the command exited by itself.
    pub code: Option<i32>,
    pub log: PathBuf,
    pub elapsed_ms: u64,
    pub usage: Option<Usage>,
}

/// The environment a dispatched command sees on top of splice's own.
pub fn env_for(spec: &DispatchSpec) -> Vec<(String, OsString)> {
    let bin_dir = spec.splice_bin_dir.map(Path::to_path_buf).or_else(|| {
        std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_path_buf))
    });
    let mut path_dirs: Vec<PathBuf> = bin_dir.into_iter().collect();
    if let Some(old) = std::env::var_os("PATH") {
        path_dirs.extend(std::env::split_paths(&old));
    }
    let path = std::env::join_paths(path_dirs).unwrap_or_else(|_| {
        // A directory with ':' in its name cannot go on PATH; keep the inherited one.
        std::env::var_os("PATH").unwrap_or_default()
    });
    vec![
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
        ("SPLICE_DISPATCHED".into(), "1".into()),
        ("SPLICE_RUN".into(), spec.run_id.into()),
        ("PATH".into(), path),
    ]
}

/// Run one dispatch to its end (or its timeout).
pub fn dispatch(spec: &DispatchSpec) -> Result<DispatchResult> {
    let paths = spec.paths;
    std::fs::create_dir_all(&paths.run_dir).map_err(|e| Error::io(&paths.run_dir, e))?;
    match std::fs::remove_file(&paths.usage_file) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(&paths.usage_file, e)),
    }
    let log = Arc::new(Mutex::new(BoundedLog::create(&paths.log, spec.log_cap)?));
    let started = Instant::now();

    let (exit, code) = match spawn(spec) {
        Ok((child, reader)) => {
            let drained = start_reader(reader, Arc::clone(&log));
            let outcome = wait(child, spec.timeout, spec.cancel);
            // Drain what the group wrote; a process that left the group may hold the pipe.
            let drained = drained.recv_timeout(DRAIN_GRACE).is_ok();
            let mut log = lock(&log);
            log.finish()?;
            if !drained {
                log.note("output after the command ended was not waited for (a process outside its group holds it)")?;
            }
            match outcome {
                Waited::Exited(status) => exit_kind(status, &mut log)?,
                Waited::TimedOut => {
                    let limit = spec.timeout.unwrap_or_default().as_secs_f64();
                    log.note(&format!(
                        "timed out after {limit}s; killed the process group"
                    ))?;
                    (ExitKind::Timeout, None)
                }
                Waited::Cancelled => {
                    log.note("cancelled; killed the process group")?;
                    (ExitKind::Error, None)
                }
                Waited::Lost(e) => {
                    log.note(&format!(
                        "lost track of the command: {e}; killed its process group"
                    ))?;
                    (ExitKind::Error, None)
                }
            }
        }
        Err(reason) => {
            let mut log = lock(&log);
            log.finish()?;
            log.note(&reason)?;
            (ExitKind::Error, None)
        }
    };
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let usage = match usage::collect(
        spec.usage,
        &paths.log,
        &paths.usage_file,
        elapsed_ms,
        spec.prices,
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
        log: paths.log.clone(),
        elapsed_ms,
        usage,
    })
}

fn lock(log: &Mutex<BoundedLog>) -> std::sync::MutexGuard<'_, BoundedLog> {
    // A panic in the reader cannot leave the log half-updated in a way that matters here.
    log.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Start the command, or say why it could not start.
fn spawn(spec: &DispatchSpec) -> std::result::Result<(Child, std::io::PipeReader), String> {
    let Some((program, args)) = spec.argv.split_first() else {
        return Err("cannot start the command: the argv is empty".into());
    };
    if !spec.worktree.is_dir() {
        return Err(format!(
            "cannot start {program:?}: the worktree {} is not a directory",
            spec.worktree.display()
        ));
    }
    let (reader, writer) =
        std::io::pipe().map_err(|e| format!("cannot create the output pipe: {e}"))?;
    let writer2 = writer
        .try_clone()
        .map_err(|e| format!("cannot create the output pipe: {e}"))?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(spec.worktree)
        .envs(env_for(spec))
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2)
        .process_group(0);
    let child = cmd.spawn().map_err(|e| {
        format!(
            "cannot start {program:?} in {}: {e}",
            spec.worktree.display()
        )
    })?;
    // `cmd` holds the pipe's write ends; drop it so the reader sees end-of-file.
    drop(cmd);
    Ok((child, reader))
}

/// Drain the pipe into the log on a thread; the receiver hears when it reaches end-of-file.
fn start_reader(
    mut reader: std::io::PipeReader,
    log: Arc<Mutex<BoundedLog>>,
) -> mpsc::Receiver<()> {
    let (done, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => lock(&log).write(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = done.send(());
    });
    rx
}

enum Waited {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
    Lost(std::io::Error),
}

/// Wait for the child without spinning; kill its group at the deadline, and its leftovers after.
fn wait(mut child: Child, timeout: Option<Duration>, cancel: Option<&AtomicBool>) -> Waited {
    let pgid = child.id() as libc::pid_t;
    let deadline = timeout.map(|t| Instant::now() + t);
    let outcome = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Waited::Exited(status),
            Ok(None) => {}
            Err(e) => {
                kill_group(pgid);
                let _ = child.wait();
                break Waited::Lost(e);
            }
        }
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            kill_group(pgid);
            let _ = child.wait();
            break Waited::Cancelled;
        }
        let now = Instant::now();
        match deadline {
            Some(d) if now >= d => {
                // The leader is not reaped yet, so the group id is still ours.
                kill_group(pgid);
                let _ = child.wait();
                break Waited::TimedOut;
            }
            Some(d) => std::thread::sleep(POLL.min(d - now)),
            None => std::thread::sleep(POLL),
        }
    };
    kill_group(pgid);
    outcome
}

fn kill_group(pgid: libc::pid_t) {
    if pgid > 0 {
        // SAFETY: kill(2) with a negative pid signals a process group; it touches no memory.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

fn exit_kind(status: ExitStatus, log: &mut BoundedLog) -> Result<(ExitKind, Option<i32>)> {
    Ok(match status.code() {
        Some(0) => (ExitKind::Ok, Some(0)),
        Some(code) => (ExitKind::Failed, Some(code)),
        None => {
            let signal = status.signal().map_or("?".to_string(), |s| s.to_string());
            log.note(&format!("the command died by signal {signal}"))?;
            (ExitKind::Error, None)
        }
    })
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
        assert_eq!(p.usage_file, p.run_dir.join("sp-1.2-review-3.usage.json"));
        assert_eq!(p.prompt_file, p.run_dir.join("sp-1.2-review-3.prompt.md"));
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
    fn an_empty_argv_is_an_error_exit() {
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
        assert_eq!((r.exit, r.code), (ExitKind::Error, None));
        let log = std::fs::read_to_string(&r.log).unwrap();
        assert!(log.contains("argv is empty"), "{log}");
    }
}
