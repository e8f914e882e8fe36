//! Issue 32: splice drives the real Claude Code CLI (the version `scripts/agent-clis.sh` pins)
//! end to end, in splice's kernel sandbox, against a scripted local stand-in for the Anthropic
//! Messages API (`standin.rs`): no network, no model, no account.
//!
//! Each test is `#[ignore]`d, so `cargo test` alone lists it as ignored. `.ci/run` runs them with
//! `--include-ignored`, `SPLICE_REAL_AGENT_TESTS=1` and the CLI's bin directory in
//! `SPLICE_AGENT_CLIS` (it installs it); so run, each fails without them, never skips.

#[path = "../common/mod.rs"]
mod common;
mod standin;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Repo;
use serde_json::Value;
use standin::{Mode, StandIn};

/// The bound on one `splice run` (the whole test stays well under a minute).
const RUN_BOUND: Duration = Duration::from_secs(60);
/// The API key the stand-in is called with (it checks none).
const KEY: &str = "sk-ant-standin-not-a-key";

/// The directory holding the `claude` to drive. The tests are `#[ignore]`d (`cargo test` alone
/// lists them as ignored); run with `--include-ignored` (`.ci/run`) each fails without
/// `SPLICE_REAL_AGENT_TESTS=1` or without the CLI, never skips.
fn agent_clis(test: &str) -> PathBuf {
    assert!(
        std::env::var("SPLICE_REAL_AGENT_TESTS").as_deref() == Ok("1"),
        "{test} drives the real Claude Code CLI: set SPLICE_REAL_AGENT_TESTS=1 and \
         SPLICE_AGENT_CLIS (scripts/agent-clis.sh) and run it with --include-ignored, as .ci/run does"
    );
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
    dir
}

/// `splice run --json` in `r`, the CLIs first on `PATH`, the API at `api` with `key` as the API
/// key (none without), bounded by [`RUN_BOUND`]: its envelope.
fn run(r: &Repo, clis: &Path, api: &StandIn, key: Option<&str>) -> Value {
    run_with(r, clis, api, key, &[])
}

/// [`run`] with more variables in splice's environment.
fn run_with(
    r: &Repo,
    clis: &Path,
    api: &StandIn,
    key: Option<&str>,
    env: &[(&str, &str)],
) -> Value {
    let mut cmd = r.cmd(&["run", "--json"]);
    cmd.envs(env.iter().copied());
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
    // Waited for on a thread, the result sent back: the wait ends when splice does, or at
    // `bound`, when it is killed.
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(bound) {
        Ok(status) => status.expect("wait for splice"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            let _ = rx.recv();
            panic!(
                "splice run did not end within {bound:?}\nstderr: {}",
                err.join().unwrap()
            );
        }
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

/// The node's dispatch exits (`pipeline.exits`), oldest first.
fn exits(r: &Repo, id: &str) -> Vec<Value> {
    r.bead(id)["pipeline"]["exits"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// A dispatch log's text (what Claude Code printed, with splice's notes), by the path an exit
/// names.
fn read_log(r: &Repo, log: &str) -> String {
    let path = r.path().join(log);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What each of the dispatch logs `exits` name holds ([`events_of`]), each log once: a
/// dispatch that counted no attempt shares its log with the next on the step, which rewrites it.
fn logs(r: &Repo, exits: &[Value]) -> Vec<String> {
    let mut named: Vec<&str> = exits.iter().filter_map(|e| e["log"].as_str()).collect();
    named.dedup();
    named
        .iter()
        .map(|log| format!("{log}:\n{}", events_of(&read_log(r, log))))
        .collect()
}

/// The `type`/`subtype` of each of Claude Code's events in `log`, and splice's notes, a line
/// each (for a failure's message and the test's output).
fn events_of(log: &str) -> String {
    log.lines()
        .filter_map(|l| {
            let l = l.trim();
            if l.starts_with("[splice") {
                return Some(l.to_string());
            }
            let e: Value = serde_json::from_str(l).ok()?;
            let what = [&e["type"], &e["subtype"]]
                .iter()
                .filter_map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join("/");
            let more = match e["type"].as_str() {
                Some("result") => format!(
                    " is_error={} result={:?} denials={}",
                    e["is_error"], e["result"], e["permission_denials"]
                ),
                Some("system") if e["subtype"] == "api_retry" => format!(
                    " attempt {} of {}, status {}, {}",
                    e["attempt"], e["max_retries"], e["error_status"], e["error"]
                ),
                _ => String::new(),
            };
            Some(format!("{what}{more}"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Approve `step`'s gate as the person.
fn approve(r: &Repo, id: &str, step: &str) {
    r.ok(&["transition", "approve", id, "--step", step]);
}

#[test]
#[ignore = "needs SPLICE_REAL_AGENT_TESTS=1 and the pinned Claude Code CLI (.ci/run)"]
fn claude_code_takes_a_lone_task_from_its_spec_to_done() {
    let clis = agent_clis("claude_code_takes_a_lone_task_from_its_spec_to_done");
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

    // review; main is protected, so a person approves landing the reviewed tip, then splice
    // lands the branch on main itself.
    let env = run(&r, &clis, &api, Some(KEY));
    assert_eq!(
        env["status"],
        "suspended-human",
        "{env:#}\n{}",
        api.summary()
    );
    assert_eq!(
        env["nodes"][&id]["rest"]["land"]["target"], "main",
        "{env:#}"
    );
    let landed = env["nodes"][&id]["rest"]["land"]["sha"]
        .as_str()
        .unwrap()
        .to_string();
    approve(&r, &id, "deliver");
    let env = run(&r, &clis, &api, Some(KEY));
    assert_eq!(env["status"], "done", "{env:#}\n{}", api.summary());
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{b:#}");
    for step in ["generate-spec", "implement", "generate-tests", "review"] {
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
    let steps = ["generate-spec", "implement", "generate-tests", "review"];
    assert_eq!(proposed.len(), steps.len(), "{proposed:?}");
    for (reason, step) in proposed.iter().zip(steps) {
        assert!(reason.ends_with(&format!(" for {step}")), "{proposed:?}");
    }
    assert_eq!(
        said("approve", "person"),
        [
            "generate-spec approved by person".to_string(),
            "implement approved by person".to_string(),
            format!(
                "deliver: landing {} on main approved by person",
                &landed[..10]
            ),
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
#[ignore = "needs SPLICE_REAL_AGENT_TESTS=1 and the pinned Claude Code CLI (.ci/run)"]
fn claude_code_without_credentials_parks_its_node_at_once() {
    let clis = agent_clis("claude_code_without_credentials_parks_its_node_at_once");
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

/// An overloaded API, then one that answers. Claude Code 2.1.197 refused `529` on each try of
/// its session prints a `system`/`api_retry` event per retry (`error_status` 529, `error`
/// `overloaded`), then a synthetic assistant message and an error result (`is_error`,
/// `api_error_status` 529, `API Error: 529 Overloaded. …`), and exits 1: a transient end.
#[test]
#[ignore = "needs SPLICE_REAL_AGENT_TESTS=1 and the pinned Claude Code CLI (.ci/run)"]
fn claude_code_overloaded_then_answering_counts_no_attempt() {
    let clis = agent_clis("claude_code_overloaded_then_answering_counts_no_attempt");
    let started = Instant::now();
    let api = StandIn::with(Mode::OverloadedFirstSession);
    let r = Repo::new();
    // Claude Code retries a 529 itself, 10 times unless `CLAUDE_CODE_MAX_RETRIES` says (at most
    // 15), waiting 0.5 s doubling to 32 s: minutes. Here it retries once; the sandbox passes the
    // variable because `[sandbox] env` names it. One attempt on the step, no backoff.
    configure(
        &r,
        "[limits]\nbackoff_s = 0\n\n[agent.steps.generate-spec]\nmax_attempts = 1\n\n\
         [sandbox]\nenv = [\"CLAUDE_CODE_MAX_RETRIES\"]\n",
    );
    let id = r.task("Add a greeting", &[]);
    let env = run_with(
        &r,
        &clis,
        &api,
        Some(KEY),
        &[("CLAUDE_CODE_MAX_RETRIES", "1")],
    );
    let requests = api.summary();
    let exits = exits(&r, &id);
    let logs = logs(&r, &exits);
    let context = format!("{env:#}\nexits: {exits:#?}\nlogs:\n{logs:#?}\nrequests:\n{requests}");
    // The run went on past the overload to the step's gate, in the one `splice run`.
    assert_eq!(env["status"], "suspended-human", "{context}");
    assert_eq!(
        env["nodes"][&id]["rest"]["gate"], "generate-spec",
        "{context}"
    );
    assert_eq!(exits.len(), 2, "{context}");
    // The first session: transient, the agent's words as the cause, no proposal.
    assert_eq!(exits[0]["exit"], "transient", "{context}");
    assert_eq!(exits[0]["proposed"], false, "{context}");
    let cause = exits[0]["cause"].as_str().unwrap_or("").to_lowercase();
    assert!(
        cause.contains("529") && cause.contains("overloaded"),
        "{cause}\n{context}"
    );
    // The second: the script to its proposal, on the step's one attempt.
    assert_eq!(exits[1]["exit"], "ok", "{context}");
    assert_eq!(exits[1]["proposed"], true, "{context}");
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["attempts"]["generate-spec"], 1, "{b:#}");
    assert_eq!(
        b["pipeline"]["scenarios"],
        serde_json::json!(["S1"]),
        "{b:#}"
    );
    // Two sessions asked for the step. The first asked twice, a try and the one retry
    // `CLAUDE_CODE_MAX_RETRIES=1` allows (so the variable reached Claude Code in the sandbox),
    // and was refused both; the second was never refused and ran its script to the end.
    let sessions = api.sessions();
    assert_eq!(sessions.len(), 2, "{context}");
    let seen = api.seen();
    let refused = |session: &str| {
        seen.iter()
            .filter(|s| s.session.as_deref() == Some(session) && s.kind.starts_with("overloaded"))
            .count()
    };
    assert_eq!(refused(&sessions[0]), 2, "{context}");
    assert_eq!(refused(&sessions[1]), 0, "{context}");
    assert!(
        seen.iter()
            .any(|s| s.session.as_deref() == Some(&sessions[1])
                && s.kind == "step generate-spec turn 3"),
        "{context}"
    );
    println!(
        "exits: {exits:#?}\nlogs:\n{}\nrequests:\n{requests}\ntook {:?}",
        logs.join("\n--\n"),
        started.elapsed()
    );
}

/// A hung API request: the stand-in reads the main conversation's request and never answers.
/// Claude Code 2.1.197 prints nothing while it waits but its `system/init` event (its request
/// timeout, `API_TIMEOUT_MS`, is 600 s unless set), so `[limits] stall_s` should stop it.
///
///
/// Waiting, Claude Code's process group uses 1.5–3.5% of the wall time in CPU (its runtime's
/// timers, a 1 s `statx` poll of `.claude.json`, GC), under the 5% a stall must stay below; its
/// telemetry to the unreachable api.anthropic.com, whose retries rewrite ~155 KiB files and
/// would count as I/O progress, is off in the built-in command
/// (`CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`). So the hang is stopped after `stall_s`.
#[test]
#[ignore = "needs SPLICE_REAL_AGENT_TESTS=1 and the pinned Claude Code CLI (.ci/run)"]
fn claude_code_waiting_on_a_silent_api_is_stopped_as_stalled() {
    let clis = agent_clis("claude_code_waiting_on_a_silent_api_is_stopped_as_stalled");
    let started = Instant::now();
    let api = StandIn::with(Mode::Hang);
    let r = Repo::new();
    // A stall is 5 s without progress; the step's timeout is far past it (and past what the
    // test waits for).
    const TIMEOUT_S: u64 = 45;
    configure(
        &r,
        &format!(
            "[limits]\nstall_s = 5\n\n[agent.steps.generate-spec]\nmax_attempts = 1\n\
             timeout_s = {TIMEOUT_S}\n"
        ),
    );
    let id = r.task("Add a greeting", &[]);
    let env = run(&r, &clis, &api, Some(KEY));
    let took = started.elapsed();
    let requests = api.summary();
    let exits = exits(&r, &id);
    let logs = logs(&r, &exits);
    let context = format!(
        "{env:#}\nexits: {exits:#?}\nlogs:\n{logs:#?}\nrequests:\n{requests}\ntook {took:?}"
    );
    // Claude Code asked, and got nothing.
    assert!(
        api.seen()
            .iter()
            .any(|s| s.kind == "held step generate-spec turn 0"),
        "{context}"
    );
    assert_eq!(exits.len(), 1, "{context}");
    assert_eq!(exits[0]["exit"], "stalled", "{context}");
    assert_eq!(exits[0]["proposed"], false, "{context}");
    let cause = exits[0]["cause"].as_str().unwrap_or("");
    assert!(cause.starts_with("stalled: no output"), "{context}");
    // Stopped by the stall, long before the step's timeout.
    assert!(took < Duration::from_secs(TIMEOUT_S / 2), "{context}");
    // The one attempt used, the node parks saying so.
    assert_eq!(env["status"], "escalated", "{context}");
    let rest = &env["nodes"][&id]["rest"];
    assert_eq!(rest["kind"], "parked", "{context}");
    let reason = rest["reason"].as_str().unwrap_or("");
    assert!(reason.contains("stalled"), "{reason}\n{context}");
    assert_eq!(
        r.bead(&id)["pipeline"]["attempts"]["generate-spec"],
        1,
        "{context}"
    );
    println!(
        "parked: {reason}\nlogs:\n{}\nrequests:\n{requests}\ntook {took:?}",
        logs.join("\n--\n")
    );
}

/// What the stand-in has the agent run: no tool `--allowedTools` of splice's narrower default
/// lists (`Bash(git:*)`, `Bash(splice:*)`).
const DENIED: &str = "cargo --version";

/// Unsandboxed, Claude Code 2.1.197 under `acceptEdits` and splice's `--allowedTools` refuses
/// a command the list does not name, without running it: the model gets an error tool result
/// (`This command requires approval`), the session ends 0 with a success result that lists the
/// call in `permission_denials`, and splice parks the node saying which call was denied.
#[test]
#[ignore = "needs SPLICE_REAL_AGENT_TESTS=1 and the pinned Claude Code CLI (.ci/run)"]
fn claude_code_unsandboxed_denied_a_command_says_so() {
    let clis = agent_clis("claude_code_unsandboxed_denied_a_command_says_so");
    let started = Instant::now();
    let api = StandIn::with(Mode::Run(DENIED));
    let r = Repo::new();
    configure(&r, "[agent.steps.generate-spec]\nmax_attempts = 1\n");
    let id = r.task("Add a greeting", &[]);
    // A person's switch for this run: no sandbox, so splice runs Claude Code with
    // `--permission-mode acceptEdits --allowedTools …`.
    let env = run_with(&r, &clis, &api, Some(KEY), &[("SPLICE_SANDBOX", "off")]);
    let took = started.elapsed();
    let requests = api.summary();
    let exits = exits(&r, &id);
    let logs = logs(&r, &exits);
    let context = format!(
        "{env:#}\nexits: {exits:#?}\nlogs:\n{logs:#?}\nrequests:\n{requests}\ntook {took:?}"
    );
    let start = run_start(&r, &env);
    assert_eq!(start["sandbox"]["enforced"], false, "{start:#}");
    // Claude Code refused the call, and told the model so.
    let answered: Vec<String> = api
        .seen()
        .iter()
        .filter(|s| s.kind == "step generate-spec turn 1")
        .flat_map(|s| s.tool_results.clone())
        .collect();
    assert_eq!(answered.len(), 1, "{context}");
    assert!(answered[0].starts_with("ERROR: "), "{context}");
    assert!(!answered[0].contains("cargo 1."), "it ran: {context}");
    // One dispatch, its attempt used, no proposal; the denied call is the reason.
    assert_eq!(exits.len(), 1, "{context}");
    assert_eq!(exits[0]["exit"], "ok", "{context}");
    assert_eq!(exits[0]["proposed"], false, "{context}");
    let cause = exits[0]["cause"].as_str().unwrap_or("");
    let denial = format!("1 tool call(s) were denied permission (Bash: {DENIED})");
    assert!(cause.contains(&denial), "{cause}\n{context}");
    assert_eq!(env["status"], "escalated", "{context}");
    let rest = &env["nodes"][&id]["rest"];
    assert_eq!(rest["kind"], "parked", "{context}");
    let reason = rest["reason"].as_str().unwrap_or("");
    assert!(reason.contains(&denial), "{reason}\n{context}");
    assert_eq!(
        r.bead(&id)["pipeline"]["attempts"]["generate-spec"],
        1,
        "{context}"
    );
    println!(
        "parked: {reason}\nlogs:\n{}\nrequests:\n{requests}\ntook {took:?}",
        logs.join("\n--\n")
    );
}
