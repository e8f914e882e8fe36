//! Running a floor's command: captured output, a bound on time, and the whole process group
//! killed on timeout so a suite's grandchildren cannot keep its pipes open.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a command ended.
#[derive(Debug)]
pub struct Ran {
    /// The exit code; `None` when killed by a signal or the timeout.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

impl Ran {
    /// stdout then stderr, for evidence.
    pub fn combined(&self) -> String {
        let mut text = self.stdout.clone();
        text.push_str(&self.stderr);
        text
    }
}

/// The time bound for a floor's command: its `timeout_s` parameter, else the step's.
pub fn timeout_for(spec: &crate::model::manifest::FloorSpec, step_timeout_s: u64) -> Duration {
    let secs = spec
        .params
        .get("timeout_s")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(step_timeout_s)
        .max(1);
    Duration::from_secs(secs)
}

/// Run `argv` in `dir` with `env`, waiting at most `timeout`. `Err` means it could not start.
pub fn run(
    argv: &[String],
    dir: &Path,
    env: &[(&str, &str)],
    timeout: Duration,
) -> std::io::Result<Ran> {
    let Some((program, args)) = argv.split_first() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "empty command",
        ));
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn()?;
    let out = child.stdout.take().map(reader);
    let err = child.stderr.take().map(reader);
    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() >= deadline {
            timed_out = true;
            kill_group(child.id());
            break child.wait()?;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let join = |h: Option<std::thread::JoinHandle<String>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    Ok(Ran {
        code: if timed_out { None } else { status.code() },
        stdout: join(out),
        stderr: join(err),
        timed_out,
    })
}

fn reader(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

fn kill_group(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) with a negative pid signals the process group the child leads
        // (spawned with process_group(0)); it touches no memory of ours.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    #[test]
    fn captures_output_and_code() {
        let ran = run(
            &sh("echo out; echo err >&2; exit 3"),
            Path::new("."),
            &[],
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(ran.code, Some(3));
        assert_eq!(ran.stdout, "out\n");
        assert_eq!(ran.stderr, "err\n");
    }

    #[test]
    fn timeout_kills_the_group() {
        let ran = run(
            &sh("sleep 30 & sleep 30"),
            Path::new("."),
            &[],
            Duration::from_millis(300),
        )
        .unwrap();
        assert!(ran.timed_out);
        assert_eq!(ran.code, None);
    }

    #[test]
    fn missing_program_is_an_error() {
        assert!(
            run(
                &["/nonexistent/prog".into()],
                Path::new("."),
                &[],
                Duration::from_secs(1)
            )
            .is_err()
        );
    }
}
