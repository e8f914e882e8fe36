//! The mechanics of [`super::run`]: spawning into a new process group, reading its pipes on
//! threads, and the wait that kills the group.

use std::io::{PipeReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{Cmd, Exit, SharedSink, lock};

/// How often the wait checks on the child.
const POLL: Duration = Duration::from_millis(20);

/// Start `cmd` in its own process group with `pipes` output pipes (1: stdout and stderr share
/// one; 2: one each). `Err` is why it could not start.
pub(super) fn spawn(cmd: &Cmd, pipes: usize) -> Result<(Child, Vec<PipeReader>), String> {
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
    command
        .args(args)
        .current_dir(cmd.dir)
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out_w)
        .stderr(err_w)
        .process_group(0);
    let child = command.spawn().map_err(|e| e.to_string())?;
    // `command` holds the pipes' write ends; drop it so the readers see end-of-file.
    drop(command);
    Ok((child, std::iter::once(out_r).chain(err_r).collect()))
}

/// Read `reader` into `sink` on a thread; the receiver hears when it reaches end-of-file. The
/// thread is not joined: a pipe held open by a process outside the group must not block splice.
pub(super) fn drain_into(mut reader: PipeReader, sink: SharedSink) -> mpsc::Receiver<()> {
    let (done, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => lock(&sink).write(&buf[..n]),
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
pub(super) fn wait(
    mut child: Child,
    timeout: Option<Duration>,
    cancel: Option<&AtomicBool>,
) -> Exit {
    let pgid = libc::pid_t::try_from(child.id()).unwrap_or(0);
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
            Err(e) => break stop(&mut child, pgid, Exit::Lost(e.to_string())),
        }
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            break stop(&mut child, pgid, Exit::Cancelled);
        }
        let now = Instant::now();
        match deadline {
            Some(d) if now >= d => break stop(&mut child, pgid, Exit::TimedOut),
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
