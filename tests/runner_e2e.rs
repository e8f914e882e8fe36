//! The runner end to end against real git repositories: gates, parking, claims left by a killed
//! runner, serialization under `--jobs 2`, timeouts, and the stream-json protocol.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::Repo;
use serde_json::Value;

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

/// Point the agent at the simulated agent with extra arguments.
fn use_sim_agent(r: &Repo, extra: &[&str]) {
    let mut argv = vec![format!("\"{SPLICE}\""), "\"sim-agent\"".into()];
    argv.extend(extra.iter().map(|a| format!("\"{a}\"")));
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [{}]\nusage = \"file\"\n\n[delivery]\nmethod = \"direct\"\n",
            argv.join(", ")
        ),
    );
}

fn run(r: &Repo, args: &[&str]) -> Value {
    let mut all = vec!["run", "--output", "json"];
    all.extend_from_slice(args);
    r.ok(&all)
}

fn rest<'a>(env: &'a Value, id: &str) -> &'a Value {
    &env["nodes"][id]["rest"]
}

#[test]
fn a_lone_task_at_hitl_stops_at_its_first_gate_until_approved() {
    let r = Repo::unconfined();
    let id = r.task("Write the notes", &[]);
    use_sim_agent(&r, &[]);
    let env = run(&r, &[]);
    assert_eq!(env["status"], "suspended-human");
    assert_eq!(rest(&env, &id)["kind"], "awaiting-human");
    assert_eq!(rest(&env, &id)["gate"], "generate-spec");
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["step"], "generate-spec");
    assert_eq!(b["pipeline"]["gate"]["state"], "pending");
    assert!(
        r.state()
            .join("worktrees")
            .join(&id)
            .join(format!("specs/{id}.md"))
            .is_file()
    );
    // Approval lets the next run go on, to the next gate (implement, also held at hitl).
    r.ok(&[
        "transition",
        "approve",
        "--bead",
        &id,
        "--step",
        "generate-spec",
    ]);
    let env = run(&r, &[]);
    assert_eq!(env["status"], "suspended-human");
    assert_eq!(r.bead(&id)["pipeline"]["step"], "implement");
    assert_eq!(rest(&env, &id)["gate"], "implement");
    // The pass files and the record on the root are there.
    assert!(r.bead(&id)["pipeline"]["driver_last"]["status"] == "suspended-human");
}

#[test]
fn an_agent_that_always_fails_is_parked_and_the_run_escalates() {
    let r = Repo::unconfined();
    let id = r.task("Doomed", &[]);
    use_sim_agent(&r, &["--fail"]);
    // Retries at once: the wait between attempts is `tests/runner_retry.rs`'s business.
    let config = std::fs::read_to_string(r.state().join("config.toml")).unwrap();
    r.write(
        ".splice/config.toml",
        &format!(
            "{config}
[limits]
backoff_s = 0
"
        ),
    );
    let env = run(&r, &[]);
    assert_eq!(env["status"], "escalated");
    assert_eq!(rest(&env, &id)["kind"], "parked");
    let b = r.bead(&id);
    assert_eq!(
        b["pipeline"]["attempts"]["generate-spec"], 3,
        "max_attempts of the default manifest"
    );
    let exits = b["pipeline"]["exits"].as_array().unwrap();
    assert_eq!(exits.len(), 3);
    assert!(
        exits
            .iter()
            .all(|e| e["exit"] == "failed" && e["proposed"] == false)
    );
    let reason = b["pipeline"]["dead_letter"]["reason"].as_str().unwrap();
    assert!(reason.contains("attempts exhausted"), "{reason}");
    assert!(
        reason.contains("last dispatch failed with code 1 (log: "),
        "says why: {reason}"
    );
    assert!(
        b["pipeline"]["lease"].is_null(),
        "the runner released its claim"
    );
}

/// A manifest whose leaf has one argv step, so tests control exactly what the agent does. The
/// root splits at `plan`.
fn argv_manifest(r: &Repo, script: &str, timeout_s: u64, max_attempts: u32) {
    let manifest = serde_json::json!({
        "routes": { "root": ["plan", "delegate"], "compound": ["plan", "delegate"], "leaf": ["work"] },
        "steps": [
            { "name": "plan", "role": "split", "floors": [] },
            { "name": "delegate", "floors": [ { "kind": "children_finished" } ] },
            { "name": "work", "run": { "argv": ["sh", "-c", script] }, "floors": [],
              "timeout_s": timeout_s, "max_attempts": max_attempts, "resume": "continue" }
        ]
    });
    r.write(
        ".splice/manifest.json",
        &serde_json::to_string_pretty(&manifest).unwrap(),
    );
}

/// A root at delegate with two children whose declared files are `a` and `b`.
fn two_children(r: &Repo, a: &str, b: &str) -> (String, String, String) {
    let root = r.init(&["--target", "main"]);
    r.write(
        "children.json",
        &format!(r#"[{{"title": "A", "files": ["{a}"]}}, {{"title": "B", "files": ["{b}"]}}]"#),
    );
    r.ok(&[
        "transition",
        "split",
        "--bead",
        &root,
        "--children",
        "children.json",
    ]);
    r.ok(&[
        "transition",
        "propose",
        "--bead",
        &root,
        "--step",
        "plan",
        "--artifact",
        "children.json",
    ]);
    r.ok(&["transition", "complete", "--bead", &root, "--step", "plan"]);
    (root.clone(), format!("{root}.1"), format!("{root}.2"))
}

/// Each child logs when it starts and ends, working for two seconds (long enough that two dispatches started in one pass surely overlap).
fn timing_script(log: &Path) -> String {
    format!(
        "echo \"$SPLICE_BEAD start $(date +%s%N)\" >> {log}; sleep 2; \
         echo \"$SPLICE_BEAD end $(date +%s%N)\" >> {log}; \
         splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact done",
        log = log.display()
    )
}

/// (start, end) in nanoseconds per bead.
fn intervals(log: &Path) -> Vec<(String, u128, u128)> {
    let text = std::fs::read_to_string(log).unwrap();
    let mut out: Vec<(String, u128, u128)> = Vec::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let t: u128 = parts[2].parse().unwrap();
        match parts[1] {
            "start" => out.push((parts[0].to_string(), t, 0)),
            _ => out.iter_mut().find(|(b, _, _)| b == parts[0]).unwrap().2 = t,
        }
    }
    out
}

fn overlapped(iv: &[(String, u128, u128)]) -> bool {
    iv[0].1 < iv[1].2 && iv[1].1 < iv[0].2
}

#[test]
fn jobs_two_runs_disjoint_siblings_at_once_and_overlapping_ones_in_turn() {
    for (a, b, expect_overlap) in [("src/a.rs", "src/b.rs", true), ("src", "src/b.rs", false)] {
        let r = Repo::unconfined();
        let log = r.path().join("timing.log");
        argv_manifest(&r, &timing_script(&log), 30, 3);
        let (root, c1, c2) = two_children(&r, a, b);
        let env = run(&r, &["--jobs", "2"]);
        assert_eq!(env["status"], "done", "{env:#}");
        assert_eq!(r.bead(&root)["status"], "closed");
        let iv = intervals(&log);
        assert_eq!(iv.len(), 2, "{iv:?}");
        assert!(iv.iter().any(|x| x.0 == c1) && iv.iter().any(|x| x.0 == c2));
        assert_eq!(overlapped(&iv), expect_overlap, "files {a} / {b}: {iv:?}");
    }
}

#[test]
fn stream_json_is_one_event_per_line_ending_with_the_result() {
    let r = Repo::unconfined();
    argv_manifest(
        &r,
        "splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact done",
        30,
        3,
    );
    two_children(&r, "a", "b");
    let out = r.run(&["run", "--output", "stream-json"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"run_start"));
    for t in ["pass_start", "action", "dispatch_end", "pass_end"] {
        assert!(types.contains(&t), "{t} missing from {types:?}");
    }
    let last = events.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["status"], "done");
    let envelope: Value = serde_json::from_str(last["text"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["status"], "done");
    assert_eq!(types.iter().filter(|t| **t == "result").count(), 1);
    for e in &events {
        assert_eq!(e["schema_version"], 1, "{e}");
    }
    // The run keeps the same events in its run directory, whatever the output format.
    let run = last["run"].as_str().unwrap();
    let kept = std::fs::read_to_string(r.state().join("runs").join(run).join("events.jsonl"))
        .expect("events.jsonl");
    assert_eq!(kept, text);
    // Each line reads back as the typed event the cockpit takes, and writes the same bytes.
    for line in kept.split_inclusive('\n') {
        let event = splice::driver::events::Event::from_json_line(line)
            .unwrap_or_else(|| panic!("no event: {line}"));
        assert_eq!(event.to_json_line(), line);
    }
}

#[test]
fn a_json_run_keeps_its_events_in_the_run_directory() {
    let r = Repo::unconfined();
    argv_manifest(
        &r,
        "splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact done",
        30,
        3,
    );
    two_children(&r, "a", "b");
    let env = run(&r, &[]);
    assert_eq!(env["status"], "done");
    let kept = std::fs::read_to_string(
        r.state()
            .join("runs")
            .join(env["run"].as_str().unwrap())
            .join("events.jsonl"),
    )
    .expect("events.jsonl");
    let events: Vec<Value> = kept
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.first().unwrap()["type"], "run_start");
    assert_eq!(events.last().unwrap()["type"], "result");
    assert!(events.iter().any(|e| e["type"] == "dispatch_end"));
}

#[test]
fn a_dispatch_past_its_timeout_is_killed_and_recorded_as_timeout() {
    let r = Repo::unconfined();
    let pids = r.path().join("pids");
    let script = format!(
        "sleep 60 & echo $! >> {p}; sleep 60 & echo $! >> {p}; wait",
        p = pids.display()
    );
    argv_manifest(&r, &script, 1, 1);
    let (_, c1, _) = two_children(&r, "a", "b");
    let started = Instant::now();
    let env = run(&r, &["--jobs", "2"]);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the timeout bounded the run"
    );
    assert_eq!(env["status"], "escalated");
    let exits = &r.bead(&c1)["pipeline"]["exits"];
    assert_eq!(exits[0]["exit"], "timeout");
    assert_eq!(r.bead(&c1)["pipeline"]["dead_letter"]["step"], "work");
    // The agent's children died with it.
    for pid in std::fs::read_to_string(&pids).unwrap().lines() {
        let alive = Path::new(&format!("/proc/{pid}")).exists()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z ");
        assert!(!alive, "child {pid} survived the timeout");
    }
}

#[test]
fn a_killed_runner_leaves_its_claim_until_a_person_clears_it() {
    let r = Repo::unconfined();
    // `trunk`: landing on `main` would wait for a person's approval (issue 33).
    r.git(&["checkout", "-q", "-b", "trunk"]);
    let id = r.task("Interrupted", &["--autonomy", "wave"]);
    let pidfile = r.path().join("agent.pid");
    // The agent records its pid (its process group) and then works slowly.
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"sh\", \"-c\", \"echo $$ > {}; exec {SPLICE} sim-agent --sleep-ms 60000\"]\n\
             [delivery]\nmethod = \"direct\"\n",
            pidfile.display()
        ),
    );
    let mut runner = r.cmd(&["run", "--output", "json"]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    // The pid once the agent has written it whole (the shell creates the file, then writes).
    let written = || {
        std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
    };
    while !(written().is_some() && r.bead(&id)["pipeline"]["lease"].is_object()) {
        assert!(Instant::now() < deadline, "the runner never dispatched");
        std::thread::sleep(Duration::from_millis(20));
    }
    runner.kill().unwrap();
    runner.wait().unwrap();
    let agent: i32 = written().unwrap();
    // SAFETY: kill the orphaned agent's process group, as a person would.
    unsafe { libc::kill(-agent, libc::SIGKILL) };
    let holder = r.bead(&id)["pipeline"]["lease"]["holder"]
        .as_str()
        .unwrap()
        .to_string();

    let env = run(&r, &[]);
    assert_eq!(env["status"], "suspended-running");
    let rest = rest(&env, &id);
    assert_eq!(rest["kind"], "running");
    assert_eq!(rest["holder"], holder.as_str());
    assert_eq!(
        rest["holder_alive"], false,
        "the dead runner's process is gone"
    );
    assert_eq!(
        r.bead(&id)["pipeline"]["lease"]["holder"],
        holder.as_str(),
        "a claim never expires"
    );

    // An orphan of the dead run can no longer propose once the claim is cleared.
    r.ok(&[
        "transition",
        "release",
        "--bead",
        &id,
        "--clear",
        "--reason",
        "runner was killed",
    ]);
    let orphan = r
        .cmd(&[
            "transition",
            "propose",
            "--bead",
            &id,
            "--step",
            "generate-spec",
            "--artifact",
            "x",
        ])
        .env("SPLICE_HOLDER", &holder)
        .output()
        .unwrap();
    assert_eq!(orphan.status.code(), Some(1));
    let err = String::from_utf8_lossy(&orphan.stderr);
    assert!(
        err.contains(&format!("not claimed by {holder}")),
        "the orphan is told why: {err}"
    );

    use_sim_agent(&r, &[]);
    let env = run(&r, &[]);
    assert_eq!(env["status"], "done", "{env:#}");
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed");
    assert_eq!(
        b["pipeline"]["attempts"]["generate-spec"], 1,
        "the killed dispatch counted no attempt"
    );
    let reviewed = b["pipeline"]["reviewed_sha"].as_str().unwrap();
    let on_main = common::git()
        .args(["merge-base", "--is-ancestor", reviewed, "trunk"])
        .current_dir(r.path())
        .status()
        .unwrap();
    assert!(
        on_main.success(),
        "the reviewed commit landed on the target"
    );
}

#[test]
fn ctrl_c_stops_the_dispatch_and_releases_the_claim() {
    let r = Repo::unconfined();
    let id = r.task("Interrupted politely", &[]);
    let pidfile = r.path().join("agent.pid");
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
    while !(pidfile.exists() && r.bead(&id)["pipeline"]["lease"].is_object()) {
        assert!(Instant::now() < deadline, "the runner never dispatched");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: send SIGINT to the runner, as Ctrl-C would.
    unsafe { libc::kill(runner.id() as i32, libc::SIGINT) };
    let started = Instant::now();
    let out = runner.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the run stopped promptly"
    );
    assert_eq!(out.status.code(), Some(130));
    let b = r.bead(&id);
    assert!(b["pipeline"]["lease"].is_null(), "no claim is left behind");
    // The runner stopped it: it counts no attempt (issue 10, item 7).
    assert_eq!(b["pipeline"]["exits"][0]["exit"], "cancelled");
    assert_eq!(b["pipeline"]["attempts"]["generate-spec"], 0);
    let agent = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .to_string();
    let alive = Path::new(&format!("/proc/{agent}")).exists()
        && !std::fs::read_to_string(format!("/proc/{agent}/stat"))
            .unwrap_or_default()
            .contains(") Z ");
    assert!(!alive, "the agent was killed");
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(env["status"].is_string());
}

#[test]
fn a_run_out_of_passes_starts_nothing_more() {
    let r = Repo::unconfined();
    let id = r.task("Budgeted", &[]);
    use_sim_agent(&r, &["--fail"]);
    // Pass 1 checks the (missing) spec, pass 2 dispatches once; pass 3 is over budget.
    let env = run(&r, &["--max-passes", "2"]);
    assert_eq!(env["status"], "budget");
    assert_eq!(env["actions"].as_array().map(Vec::len), Some(0), "{env:#}");
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["attempts"]["generate-spec"], 1);
    assert!(b["pipeline"]["lease"].is_null());
    assert!(b["pipeline"]["dead_letter"].is_null());
}

/// `--max-passes 3` is three passes, and the run says so: the read after them, which finds the
/// cap spent and starts nothing, is not a fourth (it was counted: "budget after 4 passes").
#[test]
fn a_run_capped_at_three_passes_reports_three() {
    let r = Repo::unconfined();
    // An agent that never finishes: each attempt ends without proposing, and is tried again.
    argv_manifest(&r, "true", 30, 10);
    r.write(".splice/config.toml", "[limits]\nbackoff_s = 0\n");
    let id = r.task("Never done", &[]);
    let out = r.run(&["run", "--output", "human", "--max-passes", "3"]);
    common::no_panic(&out);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("ended: budget after 3 passes, 3 dispatches"),
        "{text}"
    );
    assert_eq!(r.bead(&id)["pipeline"]["attempts"]["work"], 3);

    let out = r.run(&["run", "--output", "stream-json", "--max-passes", "2"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let result: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "result")
        .unwrap_or_else(|| panic!("no result event: {text}"));
    assert_eq!(result["status"], "budget", "{result}");
    assert_eq!(result["num_passes"], 2, "{result}");
    assert_eq!(r.bead(&id)["pipeline"]["attempts"]["work"], 5);
}

#[test]
fn a_panic_in_a_dispatch_thread_ends_the_run_with_exit_2_and_releases_its_claim() {
    let r = Repo::unconfined();
    argv_manifest(
        &r,
        "splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact done",
        30,
        3,
    );
    let (_, c1, c2) = two_children(&r, "a", "b");
    let mut child = r
        .cmd(&["run", "--jobs", "2", "--output", "json"])
        .env("SPLICE_FAILPOINT", "dispatch-panic")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The run must end by itself; before the fix it waited for the dead thread forever.
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("splice run hung after a dispatch thread panicked");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("internal error") && err.contains("the dispatch thread panicked"),
        "{err}"
    );
    for id in [&c1, &c2] {
        let b = r.bead(id);
        assert!(
            b["pipeline"]["lease"].is_null(),
            "{id} is still claimed: {b:#}"
        );
    }
    // The attempt that panicked was recorded as an error, so a person sees what happened.
    let exits = [&c1, &c2]
        .iter()
        .flat_map(|id| {
            r.bead(id)["pipeline"]["exits"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect::<Vec<_>>();
    assert!(
        !exits.is_empty() && exits.iter().all(|e| e["exit"] == "error"),
        "{exits:?}"
    );
}

#[test]
fn two_runners_started_together_never_fail_on_creating_worktrees() {
    // Before the checkouts' lock, 4 trials in 10 had one runner exit 2 on a git error
    // ("… .lock: File exists", "already checked out") while both created the same worktree.
    for trial in 0..4 {
        let r = Repo::unconfined();
        argv_manifest(
            &r,
            "sleep 0.2; splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact done",
            30,
            3,
        );
        two_children(&r, "a", "b");
        let start = || {
            r.cmd(&["run", "--jobs", "2", "--output", "json"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (one, two) = (start(), start());
        for out in [
            one.wait_with_output().unwrap(),
            two.wait_with_output().unwrap(),
        ] {
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "trial {trial}: {err}");
            assert!(!err.contains("panicked"), "trial {trial}: {err}");
        }
    }
}

#[test]
fn a_run_warns_when_the_main_checkout_has_uncommitted_changes() {
    // Issue 10, item 12: agents branch from the committed target, so an edit left uncommitted in
    // the main checkout is silently not part of the work.
    let r = Repo::new();
    let id = r.task("T", &[]);
    use_sim_agent(&r, &[]);
    let out = r.run(&["run", "--output", "human", "--max-passes", "1"]);
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("warning"),
        "a clean checkout gives no warning"
    );
    r.write("notes.md", "not committed\n");
    std::fs::write(r.path().join("README.md"), "edited\n").unwrap();
    let out = r.run(&["run", "--output", "human", "--max-passes", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("warning: the main checkout has uncommitted changes (README.md, notes.md)"),
        "{text}"
    );
    let out = r.run(&["run", "--output", "json", "--max-passes", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("splice: warning: the main checkout has uncommitted"),
        "{err}"
    );
    let out = r.run(&["run", "--output", "stream-json", "--max-passes", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.contains("\"type\":\"warning\"")),
        "{text}"
    );
    let _ = id;
}

#[test]
fn exit_status_maps_the_final_run_status_to_its_documented_code() {
    // Issue 10, item 19: `splice run` exits 0 when it ran, whatever happened; `--exit-status`
    // says how it ended, with codes clear of 1, 2 and 130.
    let r = Repo::unconfined();
    r.task("Write the notes", &[]);
    use_sim_agent(&r, &[]);
    let plain = r.run(&["run", "--json"]);
    assert_eq!(plain.status.code(), Some(0));
    let env: Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert_eq!(env["status"], "suspended-human", "{env:#}");
    let out = r.run(&["run", "--json", "--exit-status"]);
    assert_eq!(out.status.code(), Some(10), "suspended-human is 10");
    let out = r.run(&[
        "run",
        "--exit-status",
        "--max-passes",
        "0",
        "--output",
        "json",
    ]);
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(env["status"], "budget");
    assert_eq!(out.status.code(), Some(13), "budget is 13");
    let err = r.fails(2, &["run", "--json", "--output", "human"]);
    assert!(err.contains("cannot be used with"), "{err}");
}

#[test]
fn a_run_records_on_its_root_once_and_keeps_only_the_newest_run_directories() {
    // Issue 10, item 11: run records were most of the journal (one per pass); they belong under
    // runs/, with one compact `driver_last` on the root. `[runs] keep` bounds runs/.
    let r = Repo::unconfined();
    let id = r.task("Write the notes", &[]);
    use_sim_agent(&r, &[]);
    let config = std::fs::read_to_string(r.state().join("config.toml")).unwrap();
    r.write(
        ".splice/config.toml",
        &format!("{config}\n[runs]\nkeep = 2\n"),
    );
    let env = run(&r, &[]);
    assert!(env["pass"].as_u64().unwrap() > 1, "several passes: {env:#}");
    let run_records = r
        .journal()
        .lines()
        .filter(|l| l.contains("\"verb\":\"record-run\""))
        .count();
    assert_eq!(run_records, 1, "one record per run, not per pass");
    assert_eq!(
        r.bead(&id)["pipeline"]["driver_last"]["status"],
        "suspended-human"
    );
    let runs = r.state().join("runs").join(env["run"].as_str().unwrap());
    assert!(
        runs.join("pass-0001.json").is_file(),
        "every pass is kept under runs/"
    );
    for _ in 0..3 {
        run(&r, &[]);
    }
    let kept: Vec<String> = std::fs::read_dir(r.state().join("runs"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "runners" && n != "agent-home")
        .collect();
    assert_eq!(kept.len(), 2, "{kept:?}");
}
