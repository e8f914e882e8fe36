//! The writer's lock never blocks forever or silently: a writer waits `[lock] timeout_s`, then
//! exits 2 naming the holder (its pid and verb, recorded beside the lock); a FIFO, a link or
//! anything but a regular file at the lock path is refused at once.

mod common;

use std::fs::File;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::Repo;

/// Run splice, failing the test (and killing it) if it does not end within `secs`.
fn within(r: &Repo, secs: u64, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = r
        .cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(secs) {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("splice {args:?} blocked for more than {secs}s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    common::no_panic(&out);
    (out, started.elapsed())
}

fn setup() -> (Repo, String) {
    let r = Repo::new();
    let id = r.task("T", &[]);
    r.write(".splice/config.toml", "[lock]\ntimeout_s = 1\n");
    (r, id)
}

/// Hold `.splice/lock` the way another process would.
fn hold(r: &Repo) -> File {
    let file = File::options()
        .write(true)
        .create(true)
        .truncate(false)
        .open(r.state().join("lock"))
        .unwrap();
    file.lock().unwrap();
    file
}

fn park(id: &str) -> [&str; 6] {
    ["transition", "park", "--bead", id, "--reason", "r"]
}

#[test]
fn a_lock_held_by_another_program_times_out_and_says_so() {
    let (r, id) = setup();
    let _held = hold(&r);
    let (beads, journal) = (r.beads_bytes(), r.journal());
    let (out, took) = within(&r, 20, &park(&id));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(".splice/lock") && err.contains("1 s"), "{err}");
    assert!(err.contains("no splice writer recorded"), "{err}");
    assert!(err.contains("timeout_s"), "says how to wait longer: {err}");
    assert!(took >= Duration::from_secs(1), "it waited: {took:?}");
    assert_eq!((r.beads_bytes(), r.journal()), (beads, journal));
}

#[test]
fn a_lock_held_by_a_splice_writer_names_its_pid_and_verb() {
    let (r, id) = setup();
    let _held = hold(&r);
    let me = std::process::id();
    r.write(
        ".splice/lock.holder",
        &format!("{{\"pid\": {me}, \"verb\": \"claim\", \"since\": \"2026-01-01T00:00:00Z\"}}\n"),
    );
    let (out, _) = within(&r, 20, &park(&id));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("pid {me}")) && err.contains("claim"),
        "{err}"
    );
}

#[test]
fn a_writer_records_itself_beside_the_lock_only_while_it_holds_it() {
    let (r, id) = setup();
    r.ok(&park(&id));
    assert!(
        !r.state().join("lock.holder").exists(),
        "removed on release"
    );
    let lock = std::fs::read(r.state().join("lock")).unwrap();
    assert!(lock.is_empty(), "the lock file never holds data");
}

#[test]
fn a_fifo_or_a_link_at_the_lock_path_is_refused_at_once() {
    let (r, id) = setup();
    let lock = r.state().join("lock");
    let _ = std::fs::remove_file(&lock);
    let status = std::process::Command::new("mkfifo")
        .arg(&lock)
        .status()
        .unwrap();
    assert!(status.success());
    let (out, _) = within(&r, 20, &park(&id));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("lock") && err.contains("not a regular file"),
        "{err}"
    );
    std::fs::remove_file(&lock).unwrap();
    let victim = r.path().join("victim");
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    let (out, _) = within(&r, 20, &park(&id));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("link"));
    assert!(!victim.exists(), "the link was not followed");
}

#[test]
fn a_bad_lock_timeout_is_named() {
    let (r, id) = setup();
    r.write(".splice/config.toml", "[lock]\ntimeout_s = \"soon\"\n");
    let err = r.fails(2, &park(&id));
    assert!(
        err.contains("config.toml") && err.contains("timeout_s"),
        "{err}"
    );
}
