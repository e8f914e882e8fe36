//! Issue 32: splice drives the real Claude Code CLI (the version `scripts/agent-clis.sh` pins)
//! end to end, in splice's kernel sandbox, against a scripted local stand-in for the Anthropic
//! Messages API (`standin.rs`): no network, no model, no account.
//!
//! Run only with `SPLICE_REAL_AGENT_TESTS=1`, the CLI's bin directory in `SPLICE_AGENT_CLIS`
//! (`.ci/run` installs it); without the variable each test says `skipped` and passes, with it and
//! no CLI there each fails.

#[path = "../common/mod.rs"]
mod common;
mod standin;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Repo;
use serde_json::Value;
use standin::StandIn;

/// The bound on one `splice run` (the whole test stays well under a minute).
const RUN_BOUND: Duration = Duration::from_secs(60);
/// The API key the stand-in is called with (it checks none).
const KEY: &str = "sk-ant-standin-not-a-key";

/// The directory holding the `claude` to drive, or `None` (the test is skipped) without
/// `SPLICE_REAL_AGENT_TESTS=1`. Asked for and missing, it fails.
fn agent_clis(test: &str) -> Option<PathBuf> {
    if std::env::var("SPLICE_REAL_AGENT_TESTS").as_deref() != Ok("1") {
        println!("skipped: {test} drives the real Claude Code CLI; set SPLICE_REAL_AGENT_TESTS=1");
        return None;
    }
    let dir = std::env::var_os("SPLICE_AGENT_CLIS").map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "SPLICE_REAL_AGENT_TESTS=1 but SPLICE_AGENT_CLIS (the bin directory holding `claude`) \
             is unset: install the CLIs with scripts/agent-clis.sh DIR and set it to \
             DIR/node_modules/.bin"
        )
    });
    let claude = dir.join("claude");
    assert!(
        claude.is_file(),
        "SPLICE_REAL_AGENT_TESTS=1 but {} is missing: install it with scripts/agent-clis.sh",
        claude.display()
    );
    Some(dir)
}

/// `splice run --json` in `r`, the CLIs first on `PATH`, the API at `api` with `key` as the API
/// key (none without), bounded by [`RUN_BOUND`]: its envelope.
fn run(r: &Repo, clis: &Path, api: &StandIn, key: Option<&str>) -> Value {
    let mut cmd = r.cmd(&["run", "--json"]);
    let path = std::env::join_paths(std::iter::once(clis.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    cmd.env("PATH", path)
        // The agent's commits need an author (the sandbox passes git's identity variables).
        .env("GIT_AUTHOR_NAME", "claude")
        .env("GIT_AUTHOR_EMAIL", "claude@example.com")
        .env("GIT_COMMITTER_NAME", "claude")
        .env("GIT_COMMITTER_EMAIL", "claude@example.com");
    cmd.env("ANTHROPIC_BASE_URL", &api.url);
    if let Some(key) = key {
        cmd.env("ANTHROPIC_API_KEY", key);
    }
    let (code, stdout, stderr) = bounded(cmd, RUN_BOUND);
    let envelope: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "splice run (exit {code:?}): stdout is not JSON ({e})\nstdout: {stdout}\n\
             stderr: {stderr}\nrequests:\n{}",
            api.summary()
        )
    });
    assert_eq!(code, Some(0), "splice run: {envelope:#}\nstderr: {stderr}");
    assert!(!stderr.contains("panicked at"), "splice panicked: {stderr}");
    envelope
}

/// Run `cmd` to its end, killed past `bound`: its exit code, stdout and stderr.
fn bounded(mut cmd: Command, bound: Duration) -> (Option<i32>, String, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("splice starts");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for splice") {
            break status;
        }
        if start.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "splice run did not end within {bound:?}\nstderr: {}",
                err.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.code(), out.join().unwrap(), err.join().unwrap())
}

/// `.splice/config.toml`: Claude Code by its kind (splice's built-in command for it), and `extra`.
fn configure(r: &Repo, extra: &str) {
    r.write(
        ".splice/config.toml",
        &format!("[agent]\nkind = \"claude\"\n\n{extra}"),
    );
}

/// The `run_start` event of the run that wrote `envelope`.
fn run_start(r: &Repo, envelope: &Value) -> Value {
    let run = envelope["run"]
        .as_str()
        .expect("the envelope names its run");
    let events = std::fs::read_to_string(r.state().join("runs").join(run).join("events.jsonl"))
        .expect("the run's events");
    events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "run_start")
        .expect("a run_start event")
}

/// Approve `step`'s gate as the person.
fn approve(r: &Repo, id: &str, step: &str) {
    r.ok(&["transition", "approve", id, "--step", step]);
}

#[test]
fn claude_code_takes_a_lone_task_from_its_spec_to_done() {
    let Some(clis) = agent_clis("claude_code_takes_a_lone_task_from_its_spec_to_done") else {
        return;
    };
    let started = Instant::now();
    let api = StandIn::start();
    let r = Repo::new();
    // Direct delivery: splice merges the reviewed branch itself (a PR would need `gh`).
    configure(&r, "[delivery]\nmethod = \"direct\"\n");
    let id = r.task("Add a greeting", &[]);
    let journal_before = r.journal();

    // generate-spec, then its gate (hitl).
    let env = run(&r, &clis, &api, Some(KEY));
    let requests = api.summary();
    assert_eq!(env["status"], "suspended-human", "{env:#}\n{requests}");
    assert_eq!(
        env["nodes"][&id]["rest"]["gate"], "generate-spec",
        "{env:#}"
    );
    let start = run_start(&r, &env);
    assert_eq!(start["sandbox"]["enforced"], true, "{start:#}");
    let spec = r.git(&["show", &format!("splice/{id}:specs/{id}.md")]);
    assert!(spec.contains("Scenario: S1"), "{spec}");
    assert_eq!(
        r.bead(&id)["pipeline"]["scenarios"],
        serde_json::json!(["S1"])
    );
    // The agent's write to the journal, which no guard could see, was refused by the kernel.
    let probe: Vec<String> = api
        .seen()
        .iter()
        .flat_map(|s| s.tool_results.clone())
        .filter(|t| t.contains("journal: "))
        .collect();
    assert_eq!(probe.len(), 1, "{probe:?}\n{requests}");
    assert!(probe[0].contains("journal: refused"), "{probe:?}");
    assert!(!r.journal().contains("probe"), "the journal was written");
    approve(&r, &id, "generate-spec");

    // implement, then its gate.
    let env = run(&r, &clis, &api, Some(KEY));
    assert_eq!(
        env["status"],
        "suspended-human",
        "{env:#}\n{}",
        api.summary()
    );
    assert_eq!(env["nodes"][&id]["rest"]["gate"], "implement", "{env:#}");
    approve(&r, &id, "implement");

    // review, and splice lands the branch on main itself.
    let env = run(&r, &clis, &api, Some(KEY));
    assert_eq!(env["status"], "done", "{env:#}\n{}", api.summary());
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{b:#}");
    for step in ["generate-spec", "implement", "review"] {
        assert_eq!(b["pipeline"]["attempts"][step], 1, "{step}: {b:#}");
    }
    let check = &b["pipeline"]["last_check"];
    assert_eq!(check["step"], "deliver", "{b:#}");
    assert_eq!(check["evidence"][0]["kind"], "land", "{b:#}");
    assert_eq!(check["evidence"][0]["verdict"], "pass", "{b:#}");
    // What the agent's tools wrote and committed is on main.
    let greeting = r.git(&["show", &format!("main:greeting/{id}.txt")]);
    assert_eq!(greeting, "Hello from Claude Code!");
    r.git(&["show", &format!("main:tests/{id}.feature")]);
    let log = r.git(&["log", "--format=%an %s", "main"]);
    assert!(log.contains(&format!("claude greeting for {id}")), "{log}");
    assert!(log.contains(&format!("claude spec for {id}")), "{log}");
    // Claude Code's usage was read from its result event.
    assert!(
        b["pipeline"]["usage"]["input_tokens"].as_u64() > Some(0),
        "{b:#}"
    );
    // Each step's proposal reached the writer as the agent's (through the sandbox's inbox),
    // and each gate was passed by the person.
    let records: Vec<Value> = r.journal()[journal_before.len()..]
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let said = |verb: &str, actor: &str| -> Vec<String> {
        records
            .iter()
            .filter(|rec| rec["verb"] == verb && rec["actor"] == actor)
            .map(|rec| rec["reason"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let proposed = said("propose", "agent");
    assert_eq!(proposed.len(), 3, "{proposed:?}");
    for (reason, step) in proposed
        .iter()
        .zip(["generate-spec", "implement", "review"])
    {
        assert!(reason.ends_with(&format!(" for {step}")), "{proposed:?}");
    }
    assert_eq!(
        said("approve", "person"),
        [
            "generate-spec approved by person",
            "implement approved by person"
        ]
    );
    // Every step's script ran to its end.
    let seen = api.seen();
    for step in ["generate-spec", "implement", "review"] {
        assert!(
            seen.iter().any(|s| s.kind == format!("step {step} turn 3")),
            "{step} did not finish its script:\n{}",
            api.summary()
        );
    }
    println!(
        "requests Claude Code made:\n{}\ntook {:?}",
        api.summary(),
        started.elapsed()
    );
}

#[test]
fn claude_code_without_credentials_parks_its_node_at_once() {
    let Some(clis) = agent_clis("claude_code_without_credentials_parks_its_node_at_once") else {
        return;
    };
    let started = Instant::now();
    let api = StandIn::start();
    let r = Repo::new();
    configure(&r, "");
    let id = r.task("Add a greeting", &[]);
    // No API key, and nothing to copy into Claude's home (`HOME` is the repository: no
    // `~/.claude/.credentials.json`).
    let env = run(&r, &clis, &api, None);
    let home = r.state().join("runs/agent-home/claude");
    assert!(!home.join(".credentials.json").exists());
    assert_eq!(env["status"], "escalated", "{env:#}");
    let rest = &env["nodes"][&id]["rest"];
    assert_eq!(rest["kind"], "parked", "{env:#}");
    let reason = rest["reason"].as_str().unwrap().to_lowercase();
    assert!(reason.contains("not logged in"), "{reason}");
    // Parked at the first dispatch, which counted no attempt: no retry waited out a backoff.
    let b = r.bead(&id);
    let exits = b["pipeline"]["exits"].as_array().unwrap();
    assert_eq!(exits.len(), 1, "{b:#}");
    assert_eq!(exits[0]["exit"], "unauthorized", "{b:#}");
    assert_eq!(b["pipeline"]["attempts"]["generate-spec"], 0, "{b:#}");
    // Claude Code asked the API nothing without a key.
    assert!(
        api.seen().iter().all(|s| !s.path.starts_with("/v1/")),
        "{}",
        api.summary()
    );
    println!("parked: {reason}\ntook {:?}", started.elapsed());
}
