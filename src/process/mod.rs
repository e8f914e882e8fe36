//! The one way splice runs a subprocess: an agent's dispatch ([`crate::exec::dispatch`]) and
//! every floor that runs a command ([`crate::floors`]).
//!
//! A [`Cmd`] is an argv (no shell unless it says `sh -c`), a working directory, extra
//! environment, an optional time limit and an optional cancel flag. [`run`] starts it in its own
//! process group with stdin closed, and:
//!
//! - at the time limit, or when the cancel flag is set, kills the whole group;
//! - when the leader exits, kills whatever is left of its group, so a background job can neither
//!   run on outside any limit nor hold the output pipes open;
//! - drains the output into bounded [`Sink`]s on reader threads, waiting at most
//!   [`DRAIN_GRACE`] for end-of-file once the group is gone;
//! - returns a typed [`Ran`]: how it ended ([`Exit`]), how long it took, whether the output was
//!   drained to its end.
//!
//! [`capture`] is the in-memory form floors use: stdout and stderr kept apart (a report parsed
//! from stdout stays clean), each bounded by a cap.
//!
//! A command dies with splice (issue 9): on Linux its leader gets SIGKILL when splice dies
//! (`PR_SET_PDEATHSIG`), and a command with [`Cmd::fence`] (every dispatch) also gets a fence in
//! its group — a `/bin/sh` waiting for end-of-file on a pipe only splice writes, which the kernel
//! closes however splice dies, and which then kills the whole group (Unix). A runner is a child
//! subreaper ([`become_subreaper`]): the orphans of its commands are re-parented to it, not to
//! pid 1, so they stay its descendants (the writer's authority rule counts on it) and it reaps
//! them after each command. In a subreaper, every child must be spawned here: the reaper leaves
//! alone only the children this module waits for.
//!
//! [`procfs`] answers questions about other processes (Linux): ancestry, start times, and which
//! processes work inside a directory (a worktree still in use).
//!
//! Limits: a process that leaves the group (`setsid`, a daemon) escapes the kill and the fence;
//! if it keeps the pipe open, its output after the grace period is lost and [`Ran::drained`] is
//! false. Without a fence, the group is killed once more right after the leader is reaped; in
//! that instant a new, unrelated group could in principle have taken the same id (a fence keeps
//! the group alive until it is reaped itself). The wait polls every 20 ms. Unix only.

mod group;
pub mod procfs;
pub mod sink;

use std::ffi::OsString;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use sink::{BoundedLog, Capture, DEFAULT_CAP, Sink};

/// How long the readers may take to see end-of-file once the process group is gone.
pub const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// A sink shared between the caller and a reader thread.
pub type SharedSink = Arc<Mutex<dyn Sink>>;

/// What to run.
#[derive(Clone, Debug)]
pub struct Cmd<'a> {
    /// The program and its arguments; the program is looked up on `PATH` when it has no `/`.
    pub argv: &'a [String],
    /// The working directory; it must exist.
    pub dir: &'a Path,
    /// Set on top of splice's own environment.
    pub env: Vec<(OsString, OsString)>,
    /// `None`: no limit.
    pub timeout: Option<Duration>,
    /// Set by another thread (e.g. on Ctrl-C) to kill the group at the next poll.
    pub cancel: Option<&'a AtomicBool>,
    /// Put a fence in the group, so the whole group dies when splice dies (see the module doc).
    pub fence: bool,
    /// Run it inside this kernel sandbox: its environment is then splice's filtered by the
    /// sandbox's allow-list, plus [`Cmd::env`] (`crate::sandbox`).
    pub sandbox: Option<&'a crate::sandbox::Sandbox>,
    /// Kill the group when it has made no progress for this long ([`Exit::Stalled`]): no
    /// output, and its CPU time and bytes read and written (files, pipes, sockets) barely grew
    /// (`group::Progress`). `None`: never.
    pub stall: Option<Duration>,
}

impl<'a> Cmd<'a> {
    /// `argv` in `dir`, with no extra environment, no limit and no cancel flag.
    pub fn new(argv: &'a [String], dir: &'a Path) -> Cmd<'a> {
        Cmd {
            argv,
            dir,
            env: Vec::new(),
            timeout: None,
            cancel: None,
            fence: false,
            sandbox: None,
            stall: None,
        }
    }
}

/// Where the output goes.
pub enum Output {
    /// stdout and stderr share one pipe into one sink, so their interleaving is kept.
    Combined(SharedSink),
    /// Each stream into its own sink.
    Split {
        stdout: SharedSink,
        stderr: SharedSink,
    },
}

/// How a command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// The leader exited by itself with this code.
    Code(i32),
    /// The leader died by this signal, not sent by splice.
    Signal(i32),
    /// splice killed the group at the time limit.
    TimedOut,
    /// splice killed the group after it made no progress for this long ([`Cmd::stall`]).
    Stalled(Duration),
    /// splice killed the group because the cancel flag was set.
    Cancelled,
    /// Nothing ran; the reason, without the program's name.
    NotStarted(String),
    /// Waiting on the leader failed; splice killed the group. The reason.
    Lost(String),
}

impl Exit {
    /// The exit code, when the leader exited by itself.
    pub fn code(&self) -> Option<i32> {
        match self {
            Exit::Code(c) => Some(*c),
            _ => None,
        }
    }
}

/// The result of [`run`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ran {
    pub exit: Exit,
    /// From the start to the end of the drain.
    pub elapsed: Duration,
    /// Every reader saw end-of-file within [`DRAIN_GRACE`] (false: a process outside the group
    /// held a pipe open).
    pub drained: bool,
}

/// Run `cmd` to its end, its time limit or its cancellation, its output into `output`.
pub fn run(cmd: &Cmd, output: Output) -> Ran {
    let started = Instant::now();
    let streams = match output {
        Output::Combined(sink) => vec![sink],
        Output::Split { stdout, stderr } => vec![stdout, stderr],
    };
    let spawned = match group::spawn(cmd, streams.len()) {
        Ok(spawned) => spawned,
        Err(reason) => {
            return Ran {
                exit: Exit::NotStarted(reason),
                elapsed: started.elapsed(),
                drained: true,
            };
        }
    };
    let output = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let done: Vec<_> = spawned
        .readers
        .into_iter()
        .zip(streams)
        .map(|(reader, sink)| group::drain_into(reader, sink, output.clone()))
        .collect();
    let limits = group::Limits {
        timeout: cmd.timeout,
        cancel: cmd.cancel,
        stall: cmd.stall.map(|after| (after, output)),
    };
    let exit = group::wait(spawned.child, spawned.pgid, &limits);
    group::take_down(spawned.fence);
    group::reap_orphans();
    let deadline = Instant::now() + DRAIN_GRACE;
    let drained = done.iter().all(|rx| {
        rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .is_ok()
    });
    Ran {
        exit,
        elapsed: started.elapsed(),
        drained,
    }
}

/// Make this process a child subreaper (Linux): orphans of its descendants are re-parented to
/// it instead of pid 1, and it reaps them. `Ok(false)` where the platform has no such thing.
pub fn become_subreaper() -> std::io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer and touches no memory.
        if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        group::SUBREAPER.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(true)
    }
    #[cfg(not(target_os = "linux"))]
    Ok(false)
}

/// What [`capture`] returns: the run and its two streams as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    pub ran: Ran,
    pub stdout: String,
    pub stderr: String,
}

impl Captured {
    /// The exit code, when the leader exited by itself.
    pub fn code(&self) -> Option<i32> {
        self.ran.exit.code()
    }

    /// Was it killed at its time limit?
    pub fn timed_out(&self) -> bool {
        self.ran.exit == Exit::TimedOut
    }

    /// stdout then stderr.
    pub fn combined(&self) -> String {
        let mut text = self.stdout.clone();
        text.push_str(&self.stderr);
        text
    }
}

/// Run `cmd` keeping stdout and stderr in memory, apart, each bounded by `cap` bytes (head and
/// tail kept, the middle elided with a marker).
pub fn capture(cmd: &Cmd, cap: usize) -> Captured {
    let stdout = Arc::new(Mutex::new(Capture::new(cap)));
    let stderr = Arc::new(Mutex::new(Capture::new(cap)));
    let ran = run(
        cmd,
        Output::Split {
            stdout: stdout.clone(),
            stderr: stderr.clone(),
        },
    );
    Captured {
        ran,
        stdout: lock(&stdout).take_text(),
        stderr: lock(&stderr).take_text(),
    }
}

/// Lock a sink. A reader that panicked mid-write leaves at worst a partial chunk, which is
/// still worth keeping.
pub fn lock<T: ?Sized>(sink: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests;
