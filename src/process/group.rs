//! The mechanics of [`super::run`]: spawning into a new process group, reading its pipes on
//! threads, the wait that kills the group, the fence that kills it when splice dies, and the
//! reaping of orphans a child subreaper inherits.

use std::collections::BTreeSet;
use std::io::{PipeReader, PipeWriter, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Cmd, Exit, SharedSink, lock, procfs};

/// How often the wait checks on the child.
const POLL: Duration = Duration::from_millis(20);

/// The fence: a member of the command's group that waits for end-of-file on a pipe whose only
/// write end splice holds, then kills its whole group. The kernel closes that end when splice
/// dies in any way (`kill -9` too); when the command ends first, the group kill takes the fence
/// with it. `read` and `kill` are shell builtins, so it needs no `PATH`.
const FENCE_SCRIPT: &str = "while read -r line; do :; done; kill -s KILL 0";

/// Pids of the children spawned here whose `Child` has not reaped them yet: the orphan reaper
/// leaves them alone. A spawn holds the lock until its pid is in the set.
static TRACKED: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Set once this process is a child subreaper ([`super::become_subreaper`]).
pub(super) static SUBREAPER: AtomicBool = AtomicBool::new(false);

/// A started command: its leader, its process group, the read ends of its output pipes, and
/// its fence.
pub(super) struct Spawned {
    pub child: Child,
    /// The group to kill: the fence's when there is one (it leads the group), else the leader's.
    pub pgid: libc::pid_t,
    pub readers: Vec<PipeReader>,
    pub fence: Option<Fence>,
}

/// The fence process and the write end of its pipe (dropped only after the fence is reaped).
pub(super) struct Fence {
    child: Child,
    _pipe: PipeWriter,
}

/// Start `cmd` in its own process group with `pipes` output pipes (1: stdout and stderr share
/// one; 2: one each), its leader killed when splice's thread that started it dies (Linux), and
/// with `cmd.fence` a fence in its group. The fence starts first and leads the group, so the
/// command is never in its group without it (a splice killed right after the command started
/// would otherwise leave the group unfenced). `Err` is why it could not start.
pub(super) fn spawn(cmd: &Cmd, pipes: usize) -> Result<Spawned, String> {
    let Some((program, args)) = cmd.argv.split_first() else {
        return Err("the argv is empty".into());
    };
    if !cmd.dir.is_dir() {
        return Err("the working directory is not a directory".into());
    }
    let pipe_error = |e: std::io::Error| format!("cannot create an output pipe: {e}");
    let (out_r, out_w) = std::io::pipe().map_err(pipe_error)?;
    let (err_r, err_w) = if pipes == 1 {
        (None, out_w.try_clone().map_err(pipe_error)?)
    } else {
        let (r, w) = std::io::pipe().map_err(pipe_error)?;
        (Some(r), w)
    };
    let mut command = Command::new(program);
    if let Some(sandbox) = cmd.sandbox {
        command.env_clear();
        command.envs(std::env::vars_os().filter(|(k, _)| sandbox.keeps(k)));
    }
    command
        .args(args)
        .current_dir(cmd.dir)
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out_w)
        .stderr(err_w)
        .process_group(0);
    die_with_parent(&mut command);
    if let Some(sandbox) = cmd.sandbox {
        enter_sandbox(&mut command, sandbox);
    }
    let mut tracked = lock(&TRACKED);
    let fence = if cmd.fence {
        spawn_fence(&mut tracked)
    } else {
        None
    };
    if let Some(f) = &fence {
        command.process_group(f.child.id() as i32);
    }
    let child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            drop(tracked);
            take_down(fence);
            return Err(e.to_string());
        }
    };
    tracked.insert(child.id() as i32);
    // `command` holds the pipes' write ends; drop it so the readers see end-of-file.
    drop(command);
    let pgid = fence.as_ref().map_or(child.id(), |f| f.child.id()) as libc::pid_t;
    Ok(Spawned {
        child,
        pgid,
        readers: std::iter::once(out_r).chain(err_r).collect(),
        fence,
    })
}

/// Linux: the leader gets SIGKILL when the thread that started it dies — the thread that waits
/// for it, so only when splice dies first. A leader whose parent is already gone does not start.
fn die_with_parent(command: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
        // functions (prctl, getppid); it allocates only on the error path, which ends the child.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    return Err(std::io::Error::other(
                        "splice exited before the command started",
                    ));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// The child enters `sandbox` after the parent-death signal is set, as the last thing before
/// `exec` (Linux; a sandbox cannot be built elsewhere).
fn enter_sandbox(command: &mut Command, sandbox: &crate::sandbox::Sandbox) {
    #[cfg(target_os = "linux")]
    // SAFETY: the closure makes only system calls on values it owns ([`Sandbox::entry`]).
    unsafe {
        command.pre_exec(sandbox.entry());
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (command, sandbox);
}

/// Start the fence as the leader of a new process group ([`FENCE_SCRIPT`]). Best effort:
/// without one, the command leads its own group and still dies with splice (Linux); the rest of
/// its group may not.
fn spawn_fence(tracked: &mut BTreeSet<i32>) -> Option<Fence> {
    let (read, write) = std::io::pipe().ok()?;
    let child = Command::new("/bin/sh")
        .args(["-c", FENCE_SCRIPT])
        .env_clear()
        .current_dir("/")
        .stdin(read)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .ok()?;
    tracked.insert(child.id() as i32);
    Some(Fence {
        child,
        _pipe: write,
    })
}

/// Reap the fence (the group kill took it) before its pipe closes, so it never outlives the
/// command with a group id that could be reused.
pub(super) fn take_down(fence: Option<Fence>) {
    if let Some(mut f) = fence {
        let _ = f.child.kill();
        let _ = f.child.wait();
        lock(&TRACKED).remove(&(f.child.id() as i32));
    }
}

/// A child subreaper inherits every orphan of its descendants; reap those that have exited and
/// that no `Child` here is waiting for (the rest are reaped when they exit, at a later call).
pub(super) fn reap_orphans() {
    if !SUBREAPER.load(Ordering::Relaxed) {
        return;
    }
    let tracked = lock(&TRACKED);
    for pid in procfs::own_children() {
        if !tracked.contains(&pid) && procfs::stat(pid).is_some_and(|s| s.is_zombie()) {
            // SAFETY: waitpid on a child this process owns, without blocking.
            unsafe {
                libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG);
            }
        }
    }
}

/// Read `reader` into `sink` on a thread; the receiver hears when it reaches end-of-file. The
/// thread is not joined: a pipe held open by a process outside the group must not block splice.
pub(super) fn drain_into(
    mut reader: PipeReader,
    sink: SharedSink,
    output: Arc<AtomicU64>,
) -> mpsc::Receiver<()> {
    let (done, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    output.fetch_add(n as u64, Ordering::Relaxed);
                    lock(&sink).write(&buf[..n]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = done.send(());
    });
    rx
}

/// Wait for the child without spinning; kill its group at the deadline or on cancel, and its
/// leftovers once the leader is gone.
pub(super) fn wait(mut child: Child, pgid: libc::pid_t, limits: &Limits) -> Exit {
    let leader = child.id() as i32;
    let exit = wait_leader(&mut child, pgid, limits);
    lock(&TRACKED).remove(&leader);
    exit
}

/// When [`wait`] stops a group: its time limit, the cancel flag, and its stall limit with the
/// count of output bytes its readers have drained.
pub(super) struct Limits<'a> {
    pub timeout: Option<Duration>,
    pub cancel: Option<&'a AtomicBool>,
    pub stall: Option<(Duration, Arc<AtomicU64>)>,
}

/// How often a group's progress is looked at.
const PROBE: Duration = Duration::from_secs(2);

/// Growth of a group's bytes read and written that counts as progress (a reconnect loop's
/// handshakes are less; a streamed API answer, a build, file writes are more).
const IO_PROGRESS: u64 = 64 * 1024;

/// How much of the time passed the group's CPU time must grow by to count as progress, in
/// percent: an agent CLI idling on an API that does not answer keeps its runtime's timers going
/// at 1.5–3.5% (Claude Code 2.1.197, measured); a build or a streamed answer uses far more.
const CPU_PROGRESS_PERCENT: u128 = 5;

/// A group's progress, as [`wait`] watches it for a stall: any output, or since the last
/// progress its CPU time grew by more than [`CPU_PROGRESS_PERCENT`] of the time passed, or its
/// bytes read and written by more than [`IO_PROGRESS`].
struct Progress {
    after: Duration,
    output: Arc<AtomicU64>,
    since: Instant,
    at: (u64, procfs::Activity),
    probed: Instant,
}

impl Progress {
    fn new(after: Duration, output: Arc<AtomicU64>, pgid: libc::pid_t) -> Progress {
        let now = Instant::now();
        let at = (output.load(Ordering::Relaxed), procfs::group_activity(pgid));
        Progress {
            after,
            output,
            since: now,
            at,
            probed: now,
        }
    }

    /// Has the group made no progress for `after`? Looked at every [`PROBE`].
    fn stalled(&mut self, pgid: libc::pid_t) -> bool {
        let now = Instant::now();
        if now.duration_since(self.probed) < PROBE {
            return false;
        }
        self.probed = now;
        let out = self.output.load(Ordering::Relaxed);
        let act = procfs::group_activity(pgid);
        let ticks = procfs::ticks_per_second().max(1);
        let passed = now.duration_since(self.since);
        let cpu_ms = act.cpu_ticks.saturating_sub(self.at.1.cpu_ticks) * 1000 / ticks;
        let moved = out != self.at.0
            || u128::from(cpu_ms) * 100 > passed.as_millis() * CPU_PROGRESS_PERCENT
            || act.io_bytes.saturating_sub(self.at.1.io_bytes) > IO_PROGRESS;
        if moved {
            self.since = now;
            self.at = (out, act);
            return false;
        }
        passed >= self.after
    }
}

/// The loop of [`wait`]: the leader reaped, and its group killed.
fn wait_leader(child: &mut Child, pgid: libc::pid_t, limits: &Limits) -> Exit {
    let (timeout, cancel) = (limits.timeout, limits.cancel);
    let mut progress = limits
        .stall
        .as_ref()
        .map(|(after, output)| Progress::new(*after, output.clone(), pgid));
    let deadline = timeout.map(|t| Instant::now() + t);
    let exit = loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                break match (status.code(), status.signal()) {
                    (Some(code), _) => Exit::Code(code),
                    (None, Some(signal)) => Exit::Signal(signal),
                    (None, None) => Exit::Lost(format!("unexpected wait status {status}")),
                };
            }
            Ok(None) => {}
            Err(e) => break stop(child, pgid, Exit::Lost(e.to_string())),
        }
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            break stop(child, pgid, Exit::Cancelled);
        }
        if let Some(p) = &mut progress
            && p.stalled(pgid)
        {
            break stop(child, pgid, Exit::Stalled(p.after));
        }
        let now = Instant::now();
        match deadline {
            Some(d) if now >= d => break stop(child, pgid, Exit::TimedOut),
            Some(d) => std::thread::sleep(POLL.min(d - now)),
            None => std::thread::sleep(POLL),
        }
    };
    kill_group(pgid);
    exit
}

/// Kill the group while the leader is not reaped yet (so the group id is still ours), then reap.
fn stop(child: &mut Child, pgid: libc::pid_t, exit: Exit) -> Exit {
    kill_group(pgid);
    let _ = child.wait();
    exit
}

fn kill_group(pgid: libc::pid_t) {
    if pgid > 0 {
        // SAFETY: kill(2) with a negative pid signals a process group; it touches no memory.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}
