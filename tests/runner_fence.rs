//! Issue 9, defect 9: a dispatch dies with its runner, and a new dispatch never goes into a
//! worktree that a live process still uses. Real `splice run` processes, killed with SIGKILL.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::Repo;
use serde_json::Value;

/// A manifest whose leaf has one argv step running `script`.
fn manifest(r: &Repo, script: &str, max_attempts: u32) {
    let manifest = serde_json::json!({
        "routes": { "root": ["plan", "delegate"], "compound": ["plan", "delegate"], "leaf": ["work"] },
        "steps": [
            { "name": "plan", "floors": [] },
            { "name": "delegate", "floors": [ { "kind": "children_finished" } ] },
            { "name": "work", "run": { "argv": ["sh", "-c", script] }, "floors": [],
              "timeout_s": 120, "max_attempts": max_attempts, "resume": "continue" }
        ]
    });
    r.write(
        ".splice/manifest.json",
        &serde_json::to_string_pretty(&manifest).unwrap(),
    );
}

/// Is `pid` a live process (a zombie counts as gone)?
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

fn pid_in(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Wait (at most 30 s) until every file in `files` holds something.
fn wait_for(files: &[&Path]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !files
        .iter()
        .all(|f| std::fs::read_to_string(f).is_ok_and(|t| t.ends_with('\n')))
    {
        assert!(Instant::now() < deadline, "the agent never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn gone_within(pid: i32, bound: Duration) -> bool {
    let deadline = Instant::now() + bound;
    while alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn kill(pid: i32) {
    // SAFETY: kill(2) with a pid this test started; it touches no memory.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

#[test]
fn a_killed_runners_agent_and_its_children_die_with_it() {
    let r = Repo::unconfined();
    let (leader, child) = (r.path().join("leader.pid"), r.path().join("child.pid"));
    // The agent (a shell, its group's leader) starts a child and waits for it.
    let script = format!(
        "sleep 120 & echo $! > {child}; echo $$ > {leader}; wait",
        child = child.display(),
        leader = leader.display()
    );
    manifest(&r, &script, 3);
    let id = r.task("Long work", &[]);
    let mut runner = r.cmd(&["run", "--output", "json"]).spawn().unwrap();
    wait_for(&[&leader, &child]);
    runner.kill().unwrap();
    runner.wait().unwrap();
    let (leader, child) = (pid_in(&leader), pid_in(&child));
    let leader_gone = gone_within(leader, Duration::from_secs(10));
    let child_gone = gone_within(child, Duration::from_secs(10));
    // Whatever happened, leave nothing behind.
    // SAFETY: kill(2) on the agent's process group, which this test caused.
    unsafe { libc::kill(-leader, libc::SIGKILL) };
    kill(child);
    assert!(leader_gone, "the agent {leader} outlived its runner");
    assert!(child_gone, "the agent's child {child} outlived its runner");
    assert!(
        r.bead(&id)["pipeline"]["lease"].is_object(),
        "the dead runner's claim stays until a person clears it"
    );
}

#[test]
fn a_dispatch_into_a_worktree_a_live_process_uses_is_refused_until_it_ends() {
    let r = Repo::unconfined();
    let escapee = r.path().join("escapee.pid");
    // Attempt 1 leaves a process behind in the worktree, in a session of its own (so neither
    // the group kill nor the fence reaches it), and fails. Attempt 2 proposes.
    // (It waits until the process has left its group: until then the group kill reaches it.)
    let script = format!(
        "if [ ! -e {esc} ]; then setsid sleep 120 </dev/null >/dev/null 2>&1 & p=$!; \
         while [ \"$(cut -d' ' -f5 /proc/$p/stat)\" = $$ ]; do sleep 0.02; done; \
         echo $p > {esc}; exit 1; fi; \
         splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact HEAD",
        esc = escapee.display()
    );
    manifest(&r, &script, 3);
    // Retries at once: the wait between attempts is `tests/runner_retry.rs`'s business.
    r.write(".splice/config.toml", "[limits]\nbackoff_s = 0\n");
    let id = r.task("Leaves a process behind", &[]);
    let env: Value = r.ok(&["run", "--output", "json"]);
    let left = pid_in(&escapee);
    let still_there = alive(left);
    let b = r.bead(&id);
    if !still_there {
        panic!("the escapee {left} is gone already: {env:#}");
    }
    let attempts = b["pipeline"]["attempts"]["work"].clone();
    let status = env["status"].clone();
    let run = env["run"].as_str().unwrap();
    let events = std::fs::read_to_string(r.state().join("runs").join(run).join("events.jsonl"))
        .unwrap_or_default();
    kill(left);
    assert_eq!(
        attempts, 1,
        "no second dispatch went into the worktree in use: {b:#}"
    );
    assert_eq!(status, "stalled", "{env:#}");
    let skipped = events
        .lines()
        .find(|l| l.contains("is in use by"))
        .unwrap_or_else(|| panic!("no skipped dispatch in the events:\n{events}"));
    assert!(
        skipped.contains(&format!("pid {left} (sleep 120)")),
        "the run says which process holds the worktree: {skipped}"
    );
    assert!(gone_within(left, Duration::from_secs(10)));
    // Once it is gone, the next run dispatches again, and the node finishes.
    let env: Value = r.ok(&["run", "--output", "json"]);
    assert_eq!(env["status"], "done", "{env:#}");
    assert_eq!(r.bead(&id)["pipeline"]["attempts"]["work"], 2);
}
