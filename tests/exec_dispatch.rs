//! Dispatch: environment, exit kinds, timeouts that kill the whole process group, bounded logs.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use splice::exec::dispatch::{DispatchSpec, dispatch};
use splice::model::bead::ExitKind;

#[path = "exec_common/mod.rs"]
mod exec_common;
use exec_common::{fixture, paths, sh, spec};

/// Poll `cond` every 10 ms for at most `bound`.
fn eventually(bound: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + bound;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Is `pid` a live process (a zombie awaiting its reaper counts as gone)?
fn alive(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

#[test]
fn the_command_sees_its_environment_and_runs_in_the_worktree() {
    let f = fixture();
    let p = paths(&f, 2);
    let argv = sh("env > env.out; pwd > pwd.out; echo to-stdout; echo to-stderr >&2");
    let bin = Path::new("/opt/splice-bin");
    let spec = DispatchSpec {
        splice_bin_dir: Some(bin),
        target: Some("campaign/x"),
        ..DispatchSpec::new(
            "sp-1",
            "implement",
            2,
            "holder-x",
            "run-1",
            &f.splice,
            &f.worktree,
            &p,
            &argv,
        )
    };
    let r = dispatch(&spec).unwrap();
    assert_eq!((r.exit, r.code), (ExitKind::Ok, Some(0)));
    assert_eq!(r.log, f.splice.join("runs/run-1/sp-1-implement-2.log"));
    let env = fs::read_to_string(f.worktree.join("env.out")).unwrap();
    let var = |k: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("{k} missing from\n{env}"))
            .to_string()
    };
    assert_eq!(var("SPLICE_BEAD"), "sp-1");
    assert_eq!(var("SPLICE_STEP"), "implement");
    assert_eq!(var("SPLICE_ATTEMPT"), "2");
    assert_eq!(var("SPLICE_HOLDER"), "holder-x");
    assert_eq!(var("SPLICE_RUN"), "run-1");
    assert_eq!(var("SPLICE_DISPATCHED"), "1");
    assert_eq!(var("SPLICE_DIR"), f.splice.to_string_lossy());
    assert_eq!(var("SPLICE_WORKTREE"), f.worktree.to_string_lossy());
    assert_eq!(var("SPLICE_USAGE_FILE"), p.usage_file.to_string_lossy());
    assert_eq!(var("SPLICE_TARGET"), "campaign/x");
    assert!(
        var("PATH").starts_with("/opt/splice-bin:"),
        "{}",
        var("PATH")
    );
    let pwd = fs::read_to_string(f.worktree.join("pwd.out")).unwrap();
    assert_eq!(
        Path::new(pwd.trim()).canonicalize().unwrap(),
        f.worktree.canonicalize().unwrap()
    );
    let log = fs::read_to_string(&r.log).unwrap();
    assert!(
        log.contains("to-stdout") && log.contains("to-stderr"),
        "{log}"
    );
    assert!(r.usage.is_none());
}

#[test]
fn path_defaults_to_the_running_binary_directory() {
    let f = fixture();
    let p = paths(&f, 1);
    let argv = sh("echo \"$PATH\" > path.out");
    dispatch(&spec(&f, &p, &argv)).unwrap();
    let path = fs::read_to_string(f.worktree.join("path.out")).unwrap();
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().to_string_lossy().to_string();
    assert!(path.starts_with(&format!("{dir}:")), "{path}");
}

#[test]
fn the_credential_is_in_the_environment_only() {
    let f = fixture();
    let p = paths(&f, 1);
    let argv = sh("echo \"cred=${SPLICE_CREDENTIAL-unset}\" > cred.out; echo done");
    let with = DispatchSpec {
        credential: Some("s3cret-credential"),
        ..spec(&f, &p, &argv)
    };
    let r = dispatch(&with).unwrap();
    let seen = fs::read_to_string(f.worktree.join("cred.out")).unwrap();
    assert_eq!(seen, "cred=s3cret-credential\n");
    let log = fs::read_to_string(&r.log).unwrap();
    assert!(!log.contains("s3cret"), "the log never holds it: {log}");
    dispatch(&spec(&f, &p, &argv)).unwrap();
    let seen = fs::read_to_string(f.worktree.join("cred.out")).unwrap();
    assert_eq!(seen, "cred=unset\n", "no credential, no variable");
}

#[test]
fn failures_and_unstartable_commands_are_typed() {
    let f = fixture();
    let p = paths(&f, 1);
    let argv = sh("exit 3");
    let r = dispatch(&spec(&f, &p, &argv)).unwrap();
    assert_eq!((r.exit, r.code), (ExitKind::Failed, Some(3)));

    assert_eq!(r.cause.as_deref(), None, "it printed nothing");
    let argv = sh("echo first; echo '  the model is   overloaded'; exit 3");
    let r = dispatch(&spec(&f, &p, &argv)).unwrap();
    assert_eq!(
        r.cause.as_deref(),
        Some("last output: the model is overloaded")
    );

    let argv = vec!["/no/such/agent-binary".to_string(), "x".to_string()];
    let r = dispatch(&spec(&f, &p, &argv)).unwrap();
    assert_eq!((r.exit, r.code), (ExitKind::NotStarted, None));
    let log = fs::read_to_string(&r.log).unwrap();
    assert!(
        log.contains("could not start") && log.contains("agent-binary"),
        "{log}"
    );
    assert_eq!(
        r.cause.as_deref(),
        Some("could not start `/no/such/agent-binary`: No such file or directory")
    );

    let gone = f.worktree.join("gone");
    let argv = sh("true");
    let r = dispatch(&DispatchSpec::new(
        "sp-1",
        "implement",
        1,
        "h",
        "run-1",
        &f.splice,
        &gone,
        &p,
        &argv,
    ))
    .unwrap();
    assert_eq!(r.exit, ExitKind::NotStarted);
    let log = fs::read_to_string(&r.log).unwrap();
    assert!(
        log.contains("is not a directory") && log.contains("gone"),
        "{log}"
    );

    let argv = sh("kill -TERM $$");
    let r = dispatch(&spec(&f, &p, &argv)).unwrap();
    assert_eq!((r.exit, r.code), (ExitKind::Error, None));
}

#[test]
fn a_timeout_kills_the_whole_group() {
    let f = fixture();
    let p = paths(&f, 1);
    let argv = sh("sleep 60 & echo $! > pids; sleep 60 & echo $! >> pids; \
                   (sleep 60; echo never) & echo $! >> pids; echo started; wait");
    let spec = DispatchSpec {
        timeout: Some(Duration::from_millis(1500)),
        ..spec(&f, &p, &argv)
    };
    let started = Instant::now();
    let r = dispatch(&spec).unwrap();
    let took = started.elapsed();
    assert_eq!((r.exit, r.code), (ExitKind::Timeout, None));
    assert!(took >= Duration::from_millis(1400), "{took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let pids: Vec<i32> = fs::read_to_string(f.worktree.join("pids"))
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert_eq!(pids.len(), 3);
    assert!(
        eventually(Duration::from_secs(5), || pids.iter().all(|&p| !alive(p))),
        "children still alive: {pids:?}"
    );
    let log = fs::read_to_string(&r.log).unwrap();
    assert!(
        log.contains("started") && log.contains("timed out"),
        "{log}"
    );
    assert!(!log.contains("never"));
}

#[test]
fn a_cancelled_dispatch_kills_its_group() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let f = fixture();
    let p = paths(&f, 1);
    let argv = sh("sleep 60 & echo $! > pids; wait");
    let cancel = AtomicBool::new(false);
    let pids = f.worktree.join("pids");
    let r = std::thread::scope(|s| {
        let run = s.spawn(|| {
            dispatch(&DispatchSpec {
                cancel: Some(&cancel),
                ..spec(&f, &p, &argv)
            })
        });
        let ready = eventually(Duration::from_secs(5), || {
            fs::read_to_string(&pids).is_ok_and(|t| t.ends_with('\n'))
        });
        cancel.store(true, Ordering::Relaxed);
        assert!(ready, "the command never started");
        run.join().unwrap().unwrap()
    });
    assert_eq!((r.exit, r.code), (ExitKind::Cancelled, None));
    let pid: i32 = fs::read_to_string(&pids).unwrap().trim().parse().unwrap();
    assert!(eventually(Duration::from_secs(5), || !alive(pid)));
    assert!(fs::read_to_string(&r.log).unwrap().contains("cancelled"));
}

#[test]
fn leftover_children_die_when_the_leader_exits() {
    let f = fixture();
    let p = paths(&f, 1);
    let argv = sh("sleep 60 & echo $! > pids; exit 0");
    let started = Instant::now();
    let r = dispatch(&spec(&f, &p, &argv)).unwrap();
    assert_eq!(r.exit, ExitKind::Ok);
    assert!(started.elapsed() < Duration::from_secs(10));
    let pid: i32 = fs::read_to_string(f.worktree.join("pids"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(eventually(Duration::from_secs(5), || !alive(pid)));
}

#[test]
fn the_log_is_bounded() {
    let f = fixture();
    let p = paths(&f, 1);
    // 5 MB of output: 80 000 lines of 64 bytes, then a last line.
    let argv = sh("line=$(printf '%063d' 0); \
                   yes \"$line\" | head -n 80000; echo THE-END");
    let cap = 1024 * 1024;
    let r = dispatch(&spec(&f, &p, &argv)).unwrap();
    assert_eq!(r.exit, ExitKind::Ok);
    let log = fs::read(&r.log).unwrap();
    assert!(log.len() <= cap + 200, "log is {} bytes", log.len());
    assert!(log.len() >= cap, "log is {} bytes", log.len());
    let text = String::from_utf8_lossy(&log);
    assert!(text.contains("bytes of output elided"), "no marker");
    assert!(text.trim_end().ends_with("THE-END"));
}
