//! Issue 10, items 6 and 7: what an attempt is. A dispatch that could not start, or that the
//! runner itself cancelled (Ctrl-C, SIGTERM), counts no attempt and says why on the bead; a run
//! backs off between the attempts of one step; the cause of a failed dispatch is in the park
//! reason.

mod common;

use std::time::{Duration, Instant};

use common::Repo;
use serde_json::Value;

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

/// A manifest whose leaf has one argv step, `work`, running `script` with `max_attempts`.
fn argv_manifest(r: &Repo, script: &str, max_attempts: u32) {
    let manifest = serde_json::json!({
        "routes": { "root": ["plan", "delegate"], "compound": ["plan", "delegate"], "leaf": ["work"] },
        "steps": [
            { "name": "plan", "role": "split", "floors": [] },
            { "name": "delegate", "floors": [ { "kind": "children_finished" } ] },
            { "name": "work", "run": { "argv": ["sh", "-c", script] }, "floors": [],
              "timeout_s": 60, "max_attempts": max_attempts, "resume": "continue" }
        ]
    });
    r.write(
        ".splice/manifest.json",
        &serde_json::to_string_pretty(&manifest).unwrap(),
    );
}

fn run(r: &Repo, args: &[&str]) -> Value {
    let mut all = vec!["run", "--output", "json"];
    all.extend_from_slice(args);
    r.ok(&all)
}

fn attempts(b: &Value, step: &str) -> u64 {
    b["pipeline"]["attempts"][step].as_u64().unwrap_or(0)
}

#[test]
fn a_run_backs_off_between_the_attempts_of_a_step_and_parks_with_the_cause() {
    let r = Repo::unconfined();
    let times = r.path().join("times");
    argv_manifest(
        &r,
        &format!(
            "date +%s%N >> {}; echo 'the model is overloaded' >&2; exit 3",
            times.display()
        ),
        3,
    );
    r.write(".splice/config.toml", "[limits]\nbackoff_s = 1\n");
    let id = r.task("Flaky", &[]);
    let env = run(&r, &[]);
    assert_eq!(env["status"], "escalated", "{env:#}");
    assert_eq!(env["limits"]["backoff_s"], 1);
    let at: Vec<u128> = std::fs::read_to_string(&times)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(at.len(), 3, "three attempts");
    let gap = |a: u128, b: u128| Duration::from_nanos((b - a) as u64);
    assert!(gap(at[0], at[1]) >= Duration::from_secs(1), "{at:?}");
    assert!(
        gap(at[1], at[2]) >= Duration::from_secs(2),
        "the wait doubles: {at:?}"
    );
    let b = r.bead(&id);
    let reason = b["pipeline"]["dead_letter"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("attempts exhausted on work: 3 of 3"),
        "{reason}"
    );
    assert!(
        reason.contains("failed with code 3") && reason.contains("the model is overloaded"),
        "the park reason carries the cause: {reason}"
    );
    // Every pass that waited said so: the node rested `backoff` until its next attempt.
    let run_dir = r.state().join("runs").join(env["run"].as_str().unwrap());
    let waited = std::fs::read_dir(&run_dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("pass-"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter(|t| t.contains("\"kind\": \"backoff\""))
        .count();
    assert!(waited >= 2, "{waited} passes rested in backoff");
}

#[test]
fn the_default_backoff_is_seconds_not_zero() {
    let r = Repo::unconfined();
    r.task("T", &[]);
    r.write(".splice/config.toml", "[agent]\ncommand = [\"true\"]\n");
    let env = run(&r, &["--max-passes", "0"]);
    assert_eq!(env["limits"]["backoff_s"], 10);
}

#[test]
fn a_dispatch_that_could_not_start_counts_no_attempt_and_parks_saying_why() {
    let r = Repo::unconfined();
    // A relative path is looked for in the node's worktree, where there is no such file.
    r.write(
        ".splice/config.toml",
        "[agent]\ncommand = [\"./no-such-agent\"]\n",
    );
    let id = r.task("Unstartable", &[]);
    let started = Instant::now();
    let env = run(&r, &[]);
    assert!(started.elapsed() < Duration::from_secs(8), "no retries");
    assert_eq!(env["status"], "escalated", "{env:#}");
    let b = r.bead(&id);
    assert_eq!(attempts(&b, "generate-spec"), 0, "no attempt counted");
    let exit = &b["pipeline"]["exits"][0];
    assert_eq!(exit["exit"], "not-started");
    assert!(
        exit["cause"].as_str().unwrap().contains("No such file"),
        "{exit}"
    );
    let reason = b["pipeline"]["dead_letter"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("could not start `./no-such-agent`: No such file or directory")
            && reason.contains("set `[agent] command` in .splice/config.toml"),
        "{reason}"
    );
    assert!(b["pipeline"]["lease"].is_null());
}

/// Start a run whose agent sleeps, wait until it dispatched, and send it `signal`.
#[must_use]
fn interrupt_a_dispatch(r: &Repo, id: &str, signal: i32) -> std::process::Output {
    let pidfile = r.path().join("agent.pid");
    let _ = std::fs::remove_file(&pidfile);
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"sh\", \"-c\", \"echo $$ > {}; exec {SPLICE} sim-agent --sleep-ms 60000\"]\n",
            pidfile.display()
        ),
    );
    let runner = r
        .cmd(&["run", "--output", "json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(pidfile.exists() && r.bead(id)["pipeline"]["lease"].is_object()) {
        assert!(Instant::now() < deadline, "the runner never dispatched");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signal the runner, as Ctrl-C or `kill` would.
    unsafe { libc::kill(runner.id() as i32, signal) };
    runner.wait_with_output().unwrap()
}

#[test]
fn ctrl_c_and_sigterm_give_the_attempt_back() {
    let r = Repo::unconfined();
    let id = r.task("Interrupted", &[]);
    for (n, signal) in [(1, libc::SIGINT), (2, libc::SIGTERM)] {
        let out = interrupt_a_dispatch(&r, &id, signal);
        assert_eq!(out.status.code(), Some(130));
        let b = r.bead(&id);
        assert_eq!(attempts(&b, "generate-spec"), 0, "signal {signal}");
        let exits = b["pipeline"]["exits"].as_array().unwrap();
        assert_eq!(exits.len(), n);
        assert_eq!(exits[n - 1]["exit"], "cancelled", "{exits:?}");
        assert_eq!(exits[n - 1]["attempt"], 1);
        assert!(b["pipeline"]["lease"].is_null());
    }
    // The next run dispatches attempt 1 again, as a first attempt.
    r.write(
        ".splice/config.toml",
        &format!("[agent]\ncommand = [\"{SPLICE}\", \"sim-agent\"]\nusage = \"file\"\n"),
    );
    let env = run(&r, &[]);
    assert_eq!(env["status"], "suspended-human", "{env:#}");
    assert_eq!(attempts(&r.bead(&id), "generate-spec"), 1);
}

#[test]
fn ctrl_c_and_the_wall_time_cut_a_backoff_short() {
    let r = Repo::unconfined();
    argv_manifest(&r, "exit 1", 3);
    r.write(".splice/config.toml", "[limits]\nbackoff_s = 600\n");
    let id = r.task("Slow to retry", &[]);
    let started = Instant::now();
    let env = run(&r, &["--wall-time", "2"]);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(env["status"], "budget", "{env:#}");
    assert_eq!(attempts(&r.bead(&id), "work"), 1);

    // With no pass left after this one, there is nothing to wait for.
    let started = Instant::now();
    let env = run(&r, &["--max-passes", "1"]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "it did not wait"
    );
    assert_eq!(env["status"], "budget", "{env:#}");
    assert_eq!(env["nodes"][&id]["rest"]["kind"], "backoff");

    let runner = r
        .cmd(&["run", "--output", "json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: Ctrl-C the runner while it waits.
    unsafe { libc::kill(runner.id() as i32, libc::SIGINT) };
    let started = Instant::now();
    let out = runner.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "it stopped at once"
    );
    assert_eq!(out.status.code(), Some(130));
    assert_eq!(attempts(&r.bead(&id), "work"), 1, "nothing more was tried");
}
