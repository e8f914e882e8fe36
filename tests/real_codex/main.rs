//! The real Codex CLI (issue 32), pinned by `scripts/agent-clis.sh`, driven by `splice run`
//! inside splice's sandbox against a local stand-in for the OpenAI Responses API
//! (`standin.rs`): no network beyond 127.0.0.1, no model — the stand-in plays the model from a
//! script, and Codex itself runs every command it is told to, as it would a model's.
//!
//! Each test is `#[ignore]`d, so `cargo test` alone lists it as ignored. `.ci/run` runs them with
//! `--include-ignored`, `SPLICE_REAL_AGENT_TESTS=1` and `SPLICE_AGENT_CLIS` naming the bin
//! directory that holds `codex`; so run, each fails without them, never skips.
//!
//! How Codex 0.171.0 is pointed at the stand-in: it no longer reads `OPENAI_BASE_URL` (nor
//! `OPENAI_API_KEY` for the built-in OpenAI provider), so the base URL is `openai_base_url` in
//! its config, `$CODEX_HOME/config.toml` in the home splice gives it
//! (`.splice/runs/agent-home/codex/`), and the key is `CODEX_API_KEY`, which splice's sandbox
//! passes (`sandbox::DEFAULT_ENV`).

#[path = "../common/mod.rs"]
mod common;
mod standin;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::Repo;
use serde_json::{Value, json};
use standin::{CACHED_TOKENS, INPUT_TOKENS, OUTPUT_TOKENS, REASONING_TOKENS, Reply, Standin, Turn};

/// The version `scripts/agent-clis.sh` pins, which the stand-in speaks to.
const CODEX_VERSION: &str = "0.171.0";
/// The API key Codex sends and the stand-in wants.
const KEY: &str = "sk-standin-0123456789";

/// splice's config: the agent kind (with `agent`'s other lines), and for the rest only what
/// this machine needs, then `more`.
fn config(agent: &str, more: &str) -> String {
    format!(
        r#"[agent]
kind = "codex"
{agent}
# PR delivery would need `gh` and a forge: splice merges the reviewed branch itself.
[delivery]
method = "direct"

{more}"#
    )
}

/// The bin directory holding the real `codex`. The tests are `#[ignore]`d (`cargo test` alone
/// lists them as ignored); run with `--include-ignored` (`.ci/run`), each fails without
/// `SPLICE_REAL_AGENT_TESTS=1` or with a missing or other CLI, never skips.
fn agent_clis() -> PathBuf {
    assert!(
        std::env::var_os("SPLICE_REAL_AGENT_TESTS").is_some_and(|v| v == "1"),
        "this test drives the real Codex CLI: set SPLICE_REAL_AGENT_TESTS=1 and \
         SPLICE_AGENT_CLIS=<bin dir> (scripts/agent-clis.sh installs it) and run it with \
         --include-ignored, as .ci/run does"
    );
    let dir = std::env::var_os("SPLICE_AGENT_CLIS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "SPLICE_REAL_AGENT_TESTS=1 but SPLICE_AGENT_CLIS is unset: set it to the bin \
                 directory holding codex (scripts/agent-clis.sh DIR installs it in \
                 DIR/node_modules/.bin)"
            )
        });
    let codex = dir.join("codex");
    let version = std::process::Command::new(&codex)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "SPLICE_REAL_AGENT_TESTS=1 but {} cannot run ({e}): install the pinned CLIs with \
                 scripts/agent-clis.sh",
                codex.display()
            )
        });
    let said = String::from_utf8_lossy(&version.stdout);
    assert!(
        said.contains(CODEX_VERSION),
        "{} is not Codex {CODEX_VERSION}, the version this stand-in speaks to: {said}",
        codex.display()
    );
    dir
}

/// Codex's own config in the home splice gives it: its API at `base_url`, and nothing else
/// reached — no analytics (chatgpt.com), no plugin marketplace (github.com).
fn codex_config(r: &Repo, base_url: &str) {
    r.write(
        ".splice/runs/agent-home/codex/config.toml",
        &format!(
            "openai_base_url = \"{base_url}\"\n\n[analytics]\nenabled = false\n\n\
             [features]\nplugins = false\n"
        ),
    );
}

/// `splice run --json` with the CLIs first on `PATH`, the key and a git identity; its
/// envelope.
fn run(r: &Repo, clis: &Path) -> Value {
    let path = format!(
        "{}:{}",
        clis.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = r
        .cmd(&["run", "--json"])
        .env("PATH", path)
        .env("CODEX_API_KEY", KEY)
        .env("GIT_AUTHOR_NAME", "codex")
        .env("GIT_AUTHOR_EMAIL", "codex@example.com")
        .env("GIT_COMMITTER_NAME", "codex")
        .env("GIT_COMMITTER_EMAIL", "codex@example.com")
        .output()
        .expect("splice runs");
    common::no_panic(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "splice run failed\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the run's envelope is JSON")
}

/// The step a prompt is for: splice's prompts begin "… step `<name>`, in a git worktree".
fn step_of(prompt: &str) -> &str {
    prompt
        .split_once("step `")
        .and_then(|(_, rest)| rest.split_once('`'))
        .map_or("", |(step, _)| step)
}

/// The probe every implement step runs: a write into `.splice/`, which the sandbox refuses.
const PROBE: &str = r#"echo tampered >> "$SPLICE_DIR/journal.jsonl""#;

/// The commands the model has Codex run for `step`, in order, in the dispatch's environment
/// (`SPLICE_BEAD`, `SPLICE_STEP`, …): what the doc's minimal agent does (docs/agents.md).
fn commands(step: &str) -> Vec<String> {
    let propose = |artifact: &str| {
        format!(
            "splice transition propose --bead \"$SPLICE_BEAD\" --step \"$SPLICE_STEP\" \
             --artifact {artifact}"
        )
    };
    match step {
        "generate-spec" => vec![
            r#"mkdir -p specs && cat > "specs/$SPLICE_BEAD.md" <<EOF
---
bead: $SPLICE_BEAD
base_commit: $(git rev-parse HEAD)
files:
  - notes/$SPLICE_BEAD.md
verdict: leaf
---
# Notes for $SPLICE_BEAD

Scenario: S1 the notes exist
EOF
git add specs && git commit -q -m "spec for $SPLICE_BEAD""#
                .to_string(),
            propose("\"specs/$SPLICE_BEAD.md\""),
        ],
        "implement" => vec![
            r#"mkdir -p notes
echo "Written by Codex" > "notes/$SPLICE_BEAD.md"
git add notes && git commit -q -m "notes for $SPLICE_BEAD""#
                .to_string(),
            PROBE.to_string(),
            propose("\"$(git rev-parse HEAD)\""),
        ],
        // The test generator: test files only.
        "generate-tests" => vec![
            r#"mkdir -p tests && cat > "tests/$SPLICE_BEAD.feature" <<EOF
Feature: notes
  Scenario: S1 the notes exist
    Then notes/$SPLICE_BEAD.md exists
EOF
git add tests && git commit -q -m "tests for $SPLICE_BEAD""#
                .to_string(),
            propose("\"$(git rev-parse HEAD)\""),
        ],
        "review" => vec![
            r#"mkdir -p reviews && cat >> "reviews/$SPLICE_BEAD.md" <<EOF
## Review
Reviewed-SHA: $(git rev-parse HEAD)
Standards: PASS
Spec: PASS
Architecture: PASS
Evidence: PASS
EOF"#
                .to_string(),
            propose("\"reviews/$SPLICE_BEAD.md\""),
        ],
        // Dispatched only when splice's own landing refused: bring the target in.
        "deliver" => vec![
            r#"git merge -q --no-edit "$SPLICE_TARGET""#.to_string(),
            propose("HEAD"),
        ],
        _ => Vec::new(),
    }
}

/// The model: each of the step's commands, one a turn, then a one-line answer.
fn model(turn: &Turn) -> Reply {
    let step = step_of(&turn.prompt);
    match commands(step).get(turn.outputs.len()) {
        Some(cmd) => Reply::Shell(cmd.clone()),
        None if commands(step).is_empty() => Reply::Message(format!("I cannot do `{step}`.")),
        None => Reply::Message(format!("Done: `{step}` is proposed.")),
    }
}

/// What each command printed, as Codex sent it back, for assertion messages.
fn transcript(api: &Standin) -> String {
    api.requests()
        .iter()
        .filter_map(|q| q.output())
        .map(|o| format!("{o}\n---\n"))
        .collect()
}

/// The shape in which the model calls Codex's shell tool.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tools {
    /// Codex's default model runs in code mode: its only tool is JavaScript (`exec`), which
    /// calls `exec_command`; a command's output comes back as a `custom_tool_call_output`.
    CodeMode,
    /// Other models are offered `exec_command` itself (`function_call_output`).
    Functions,
}

/// The run rested with `status`, the node `id` at the gate of `gate` (when named).
fn rested(env: &Value, status: &str, id: &str, gate: Option<&str>, api: &Standin) {
    let said = || format!("{env:#}\nwhat the commands printed:\n{}", transcript(api));
    assert_eq!(env["status"], status, "{}", said());
    if let Some(gate) = gate {
        assert_eq!(env["nodes"][id]["rest"]["gate"], gate, "{}", said());
    }
}

/// A lone task taken by the real `codex` from `generate-spec` to `done` at the default
/// autonomy: three gates a person (the test) approves (the last, landing on protected `main`),
/// then splice lands the branch on `main`.
/// `model` is `[agent] model` (unset: Codex's default), `tools` how the model then calls
/// Codex's shell.
fn lone_task(model: Option<&str>, tools: Tools) {
    let clis = agent_clis();
    let started = Instant::now();
    let api = Standin::start(KEY, self::model);
    let r = Repo::new();
    let agent = model.map_or(String::new(), |m| format!("model = \"{m}\"\n"));
    r.write(".splice/config.toml", &config(&agent, ""));
    codex_config(&r, &api.base_url);
    let id = r.task("Write the notes", &[]);
    let branch = format!("splice/{id}");

    // The spec, written, committed and proposed by Codex's commands, waits at its gate.
    rested(
        &run(&r, &clis),
        "suspended-human",
        &id,
        Some("generate-spec"),
        &api,
    );
    let spec = r.git(&["show", &format!("{branch}:specs/{id}.md")]);
    assert!(spec.contains("Scenario: S1 the notes exist"), "{spec}");
    assert_eq!(r.bead(&id)["pipeline"]["scenarios"], json!(["S1"]));
    r.ok(&["transition", "approve", &id, "--step", "generate-spec"]);

    // The implementation: a commit on the node's branch, and its gate.
    rested(
        &run(&r, &clis),
        "suspended-human",
        &id,
        Some("implement"),
        &api,
    );
    let log = r.git(&["log", "--format=%s", &branch]);
    assert!(
        log.starts_with(&format!("notes for {id}\nspec for {id}")),
        "{log}"
    );
    r.ok(&["transition", "approve", &id, "--step", "implement"]);

    // The test generator (no gate of its own), then the review; main is protected, so a person
    // approves landing the reviewed tip; then splice lands the branch on main itself, and the
    // task is done.
    rested(
        &run(&r, &clis),
        "suspended-human",
        &id,
        Some("deliver"),
        &api,
    );
    r.ok(&["transition", "approve", &id, "--step", "deliver"]);
    rested(&run(&r, &clis), "done", &id, None, &api);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{b:#}");
    for step in STEPS {
        assert_eq!(b["pipeline"]["attempts"][step], 1, "{step}: {b:#}");
    }
    assert!(b["pipeline"]["attempts"]["deliver"].is_null(), "{b:#}");
    let notes = format!("notes/{id}.md");
    assert_eq!(
        r.git(&["show", &format!("main:{notes}")]),
        "Written by Codex"
    );
    let author = r.git(&["log", "-1", "--format=%an", "main", "--", &notes]);
    assert_eq!(
        author, "codex",
        "the agent's commit, with the identity splice passed"
    );
    // Each step's proposal came from its dispatch, through its inbox.
    let journal: Vec<Value> = r
        .journal()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let proposals: Vec<&Value> = journal.iter().filter(|j| j["verb"] == "propose").collect();
    assert_eq!(proposals.len(), STEPS.len(), "{journal:#?}");
    assert!(
        proposals.iter().all(|p| p["actor"] == "agent"),
        "{proposals:#?}"
    );

    // The dispatches ran sandboxed: each run says so, and Codex's write into .splice/ was
    // refused by the kernel.
    // (Four runs: three dispatch a step, the fourth lands what a person approved.)
    let starts = events(&r, "run_start");
    assert_eq!(starts.len(), 4, "{starts:#?}");
    assert!(
        starts.iter().all(|e| e["sandbox"]["enforced"] == true),
        "{starts:#?}"
    );
    let said = transcript(&api);
    assert!(said.contains("journal.jsonl: Permission denied"), "{said}");
    assert!(!r.journal().contains("tampered"));

    // What Codex asked of the stand-in: per session a WebSocket first (refused: 426), then
    // the Responses API over HTTP with the key, a request per command and one to answer.
    let requests = api.requests();
    for q in &requests {
        assert_eq!(q.path, "/v1/responses", "{q:?}");
        match q.method.as_str() {
            "GET" => assert_eq!(q.header("upgrade"), Some("websocket"), "{q:?}"),
            _ => assert_eq!(q.header("authorization"), Some(&*format!("Bearer {KEY}"))),
        }
    }
    let gets = requests.iter().filter(|q| q.method == "GET").count();
    assert_eq!(gets, STEPS.len(), "a session a step: {requests:#?}");
    let posts: Vec<_> = requests.iter().filter(|q| q.method == "POST").collect();
    let turns: usize = STEPS.iter().map(|s| commands(s).len() + 1).sum();
    assert_eq!(posts.len(), turns, "{requests:#?}");
    let output = match tools {
        Tools::CodeMode => "custom_tool_call_output",
        Tools::Functions => "function_call_output",
    };
    for q in &posts {
        assert_eq!(
            q.body.as_ref().unwrap()["model"],
            model.unwrap_or(DEFAULT_MODEL)
        );
        let last = &q.input().last().unwrap()["type"];
        assert!(last == "message" || last == output, "{tools:?}: {last}");
    }

    // Codex's usage, each session's last `turn.completed` (codex-json): the stand-in's tokens
    // once a request, the cached ones apart; the model is the one splice passed.
    let usage = &b["pipeline"]["usage"];
    let turns = turns as u64;
    assert_eq!(
        usage["input_tokens"],
        turns * (INPUT_TOKENS - CACHED_TOKENS),
        "{usage:#}"
    );
    assert_eq!(
        usage["cache_read_tokens"],
        turns * CACHED_TOKENS,
        "{usage:#}"
    );
    assert_eq!(usage["output_tokens"], turns * OUTPUT_TOKENS, "{usage:#}");
    assert_eq!(
        usage["reasoning_tokens"],
        turns * REASONING_TOKENS,
        "{usage:#}"
    );
    assert_eq!(usage["model"], json!(model), "{usage:#}");
    eprintln!(
        "codex ({tools:?}) took a lone task to done in {:.1}s ({} requests)",
        started.elapsed().as_secs_f64(),
        requests.len()
    );
}

/// The steps Codex is dispatched to: `deliver` is splice's own landing.
const STEPS: [&str; 4] = ["generate-spec", "implement", "generate-tests", "review"];
/// The model Codex 0.171.0 asks for when none is given.
const DEFAULT_MODEL: &str = "gpt-6.2-sol";

#[test]
#[ignore = "needs SPLICE_REAL_AGENT_TESTS=1 and the pinned Codex CLI (.ci/run)"]
fn codex_takes_a_lone_task_from_its_spec_to_done() {
    lone_task(None, Tools::CodeMode);
}

#[test]
#[ignore = "needs SPLICE_REAL_AGENT_TESTS=1 and the pinned Codex CLI (.ci/run)"]
fn codex_with_a_model_offered_function_tools_takes_a_lone_task_to_done() {
    lone_task(Some("gpt-5-codex"), Tools::Functions);
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Codex 0.171.0 left to itself never gives up on an API it cannot reach (it reconnects
/// "waiting for network" with a growing backoff: 10 s, 18 s, 31 s, 54 s, 97 s …, printing each
/// try, so it never looks stalled either). splice's built-in command bounds its reconnects
/// (`--disable unbounded_connection_retries`): it gives up after 5 (about 32 s here) with
/// `turn.failed` "Connection failed", which splice records as a transient end — no attempt
/// used, retried after the backoff (an hour here, so the run's wall-time budget ends it).
const UNREACHABLE_WALL_S: u64 = 40;

#[test]
#[ignore = "needs SPLICE_REAL_AGENT_TESTS=1 and the pinned Codex CLI (.ci/run)"]
fn codex_without_its_api_gives_up_and_the_end_is_transient() {
    let clis = agent_clis();
    let r = Repo::new();
    let limits = format!("\n[limits]\nbackoff_s = 3600\nwall_time_s = {UNREACHABLE_WALL_S}\n");
    r.write(".splice/config.toml", &config("", &limits));
    codex_config(&r, &format!("http://127.0.0.1:{}/v1", closed_port()));
    let id = r.task("Write the notes", &[]);
    let started = Instant::now();
    let env = run(&r, &clis);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(UNREACHABLE_WALL_S + 20),
        "{took:?}: {env:#}"
    );
    let b = r.bead(&id);
    let exits = b["pipeline"]["exits"].as_array().unwrap();
    assert_eq!(exits.len(), 1, "{b:#}");
    assert_eq!(exits[0]["exit"], "transient", "{b:#}");
    let cause = exits[0]["cause"].as_str().unwrap();
    assert!(cause.contains("Connection failed"), "{cause}");
    // No attempt was used; the node waits out its backoff.
    assert_eq!(b["pipeline"]["attempts"]["generate-spec"], 0, "{b:#}");
    let logs = dispatch_logs(&r);
    assert!(logs.contains("Reconnecting..."), "{logs}");
    eprintln!("the unreachable Codex gave up by itself after {took:?}: {env}");
}

/// The events of type `kind` in every run's `events.jsonl`.
fn events(r: &Repo, kind: &str) -> Vec<Value> {
    let mut found = Vec::new();
    for run in std::fs::read_dir(r.state().join("runs")).unwrap().flatten() {
        let text = std::fs::read_to_string(run.path().join("events.jsonl")).unwrap_or_default();
        found.extend(
            text.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|e| e["type"] == kind),
        );
    }
    found
}

/// Every dispatch log of the repository's runs, concatenated.
fn dispatch_logs(r: &Repo) -> String {
    let mut text = String::new();
    for run in std::fs::read_dir(r.state().join("runs")).unwrap().flatten() {
        for f in std::fs::read_dir(run.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if f.path().extension().is_some_and(|e| e == "log") {
                text += &std::fs::read_to_string(f.path()).unwrap_or_default();
            }
        }
    }
    text
}
