use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;

fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

fn cap(argv: &[String], dir: &Path, timeout: Option<Duration>) -> Captured {
    capture(
        &Cmd {
            timeout,
            ..Cmd::new(argv, dir)
        },
        64 * 1024,
    )
}

/// Poll `cond` every 10 ms for at most `bound`.
fn eventually(bound: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + bound;
    while !cond() {
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Is `pid` a live process (a zombie counts as gone)?
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

fn pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[test]
fn keeps_stdout_and_stderr_apart_with_the_exit_code() {
    let c = cap(&sh("echo out; echo err >&2; exit 3"), Path::new("."), None);
    assert_eq!(c.ran.exit, Exit::Code(3));
    assert_eq!(c.ran.exit.code(), Some(3));
    assert!(c.ran.drained);
    assert_eq!((c.stdout.as_str(), c.stderr.as_str()), ("out\n", "err\n"));
    assert_eq!(c.combined(), "out\nerr\n");
}

#[test]
fn combined_output_keeps_the_interleaving() {
    let sink = Arc::new(Mutex::new(Capture::new(1024)));
    let argv = sh("echo one; echo two >&2; echo three");
    let ran = run(
        &Cmd::new(&argv, Path::new(".")),
        Output::Combined(sink.clone()),
    );
    assert_eq!(ran.exit, Exit::Code(0));
    assert_eq!(lock(&sink).take_text(), "one\ntwo\nthree\n");
}

#[test]
fn runs_in_the_directory_with_the_extra_environment() {
    let dir = tempfile::tempdir().unwrap();
    let argv = sh("pwd; echo \"$SPLICE_X\"");
    let cmd = Cmd {
        env: vec![("SPLICE_X".into(), "forty-two".into())],
        ..Cmd::new(&argv, dir.path())
    };
    let c = capture(&cmd, 1024);
    let mut lines = c.stdout.lines();
    let pwd = Path::new(lines.next().unwrap()).canonicalize().unwrap();
    assert_eq!(pwd, dir.path().canonicalize().unwrap());
    assert_eq!(lines.next(), Some("forty-two"));
}

#[test]
fn returns_when_the_leader_exits_and_kills_what_it_left() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let c = cap(
        &sh("sleep 30 & echo $! > pids; echo hi; exit 5"),
        dir.path(),
        Some(Duration::from_secs(60)),
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(c.ran.exit, Exit::Code(5));
    assert!(c.ran.drained);
    assert_eq!(c.stdout, "hi\n");
    let left = pids(&dir.path().join("pids"));
    assert_eq!(left.len(), 1);
    assert!(eventually(Duration::from_secs(5), || !alive(left[0])));
}

#[test]
fn a_fenced_command_ends_as_any_other_and_its_fence_goes_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let argv = sh("echo $$ > leader; sleep 30 & echo $! > pids; echo hi; exit 3");
    let cmd = Cmd {
        fence: true,
        timeout: Some(Duration::from_secs(60)),
        ..Cmd::new(&argv, dir.path())
    };
    let started = Instant::now();
    let c = capture(&cmd, 1024);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!((c.ran.exit.clone(), c.ran.drained), (Exit::Code(3), true));
    assert_eq!(c.stdout, "hi\n", "the fence writes nothing");
    let left = pids(&dir.path().join("pids"));
    assert!(eventually(Duration::from_secs(5), || !alive(left[0])));
    // Nothing of the command's group (the fence was in it) is left a child of this process.
    let group = pids(&dir.path().join("leader"))[0];
    let left_of_group = procfs::own_children()
        .into_iter()
        .filter_map(procfs::stat)
        .filter(|s| s.pgrp == group)
        .count();
    assert_eq!(left_of_group, 0);
}

#[test]
fn a_timeout_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let c = cap(
        &sh("sleep 30 & echo $! > pids; echo begun; sleep 30"),
        dir.path(),
        Some(Duration::from_millis(500)),
    );
    let took = started.elapsed();
    assert_eq!(c.ran.exit, Exit::TimedOut);
    assert_eq!(c.ran.exit.code(), None);
    assert!(
        took >= Duration::from_millis(450) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert!(c.ran.elapsed <= took);
    assert_eq!(c.stdout, "begun\n");
    let left = pids(&dir.path().join("pids"));
    assert!(eventually(Duration::from_secs(5), || left
        .iter()
        .all(|&p| !alive(p))));
}

#[test]
fn cancelling_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let argv = sh("sleep 30 & echo $! > pids; wait");
    let cancel = AtomicBool::new(false);
    let pid_file = dir.path().join("pids");
    let c = std::thread::scope(|s| {
        let running = s.spawn(|| cap_with_cancel(&argv, dir.path(), &cancel));
        let ready = eventually(Duration::from_secs(5), || {
            std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n'))
        });
        cancel.store(true, Ordering::Relaxed);
        assert!(ready, "the command never started");
        running.join().unwrap()
    });
    assert_eq!(c.ran.exit, Exit::Cancelled);
    let left = pids(&pid_file);
    assert!(eventually(Duration::from_secs(5), || !alive(left[0])));
}

fn cap_with_cancel(argv: &[String], dir: &Path, cancel: &AtomicBool) -> Captured {
    let cmd = Cmd {
        cancel: Some(cancel),
        ..Cmd::new(argv, dir)
    };
    capture(&cmd, 1024)
}

#[test]
fn a_signal_is_not_an_exit_code() {
    let c = cap(&sh("kill -TERM $$"), Path::new("."), None);
    assert_eq!(c.ran.exit, Exit::Signal(libc::SIGTERM));
}

#[test]
fn what_cannot_start_says_why() {
    let missing = cap(&["/no/such/program".into()], Path::new("."), None);
    assert!(
        matches!(&missing.ran.exit, Exit::NotStarted(r) if r.contains("No such file")),
        "{:?}",
        missing.ran.exit
    );
    let empty = cap(&[], Path::new("."), None);
    assert_eq!(empty.ran.exit, Exit::NotStarted("the argv is empty".into()));
    let no_dir = cap(&sh("true"), Path::new("/no/such/dir"), None);
    assert!(
        matches!(&no_dir.ran.exit, Exit::NotStarted(r) if r.contains("not a directory")),
        "{:?}",
        no_dir.ran.exit
    );
}

#[test]
fn a_process_that_left_the_group_does_not_hold_the_run() {
    let dir = tempfile::tempdir().unwrap();
    // `setsid` puts the sleeper in a group of its own, out of reach of the kill; it keeps the
    // pipes open.
    let argv = sh("setsid sh -c 'echo $$ > escaped; exec sleep 30' & \
                   while ! test -s escaped; do sleep 0.01; done; echo hi");
    let started = Instant::now();
    let c = cap(&argv, dir.path(), Some(Duration::from_secs(60)));
    let took = started.elapsed();
    for pid in pids(&dir.path().join("escaped")) {
        // SAFETY: kill(2) on the pid of the sleeper this test started; it touches no memory.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    assert_eq!(c.ran.exit, Exit::Code(0));
    assert!(!c.ran.drained);
    assert!(
        took >= DRAIN_GRACE && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert_eq!(c.stdout, "hi\n");
}

#[test]
fn captured_output_is_bounded() {
    let c = capture(
        &Cmd::new(
            &sh("yes 0123456789 | head -n 100000; echo THE-END"),
            Path::new("."),
        ),
        1000,
    );
    assert_eq!(c.ran.exit, Exit::Code(0));
    assert!(c.stdout.len() < 1200, "{}", c.stdout.len());
    assert!(c.stdout.starts_with("0123456789\n"));
    assert!(c.stdout.contains("bytes of output elided"));
    assert!(c.stdout.ends_with("THE-END\n"));
}

fn stalling(script: &str, stall_s: u64) -> Captured {
    let argv = sh(script);
    let dir = std::env::temp_dir();
    capture(
        &Cmd {
            timeout: Some(Duration::from_secs(60)),
            stall: Some(Duration::from_secs(stall_s)),
            ..Cmd::new(&argv, &dir)
        },
        64 * 1024,
    )
}

#[test]
fn a_silent_idle_group_is_stopped_as_stalled_long_before_its_timeout() {
    let started = Instant::now();
    let ran = stalling("echo starting; sleep 50", 3);
    assert_eq!(ran.ran.exit, Exit::Stalled(Duration::from_secs(3)));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn output_or_cpu_is_progress() {
    // A line a second for 5 s: never 3 s without output.
    let ran = stalling("for i in 1 2 3 4 5; do echo $i; sleep 1; done", 3);
    assert_eq!(ran.ran.exit, Exit::Code(0), "{ran:?}");
    // Silent but busy for 6 s (a build): CPU is progress.
    let busy = "end=$(( $(date +%s) + 6 )); while [ $(date +%s) -lt $end ]; do :; done";
    let ran = stalling(busy, 3);
    assert_eq!(ran.ran.exit, Exit::Code(0), "{ran:?}");
}

#[test]
fn group_activity_counts_cpu_and_io() {
    // This test process's own group has used CPU and read files (its binary, /proc).
    // SAFETY: getpgrp takes nothing and touches no memory.
    let own = procfs::group_activity(unsafe { libc::getpgrp() });
    assert!(own.io_bytes > 0, "{own:?}");
    let later = procfs::group_activity(unsafe { libc::getpgrp() });
    assert!(later.io_bytes >= own.io_bytes, "{own:?} {later:?}");
}
