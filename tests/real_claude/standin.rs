//! A scripted local stand-in for the Anthropic Messages API, for driving the real Claude Code
//! CLI with no network and no model (std only, plus serde_json).
//!
//! It listens on `127.0.0.1:<any port>` (a thread per connection, HTTP/1.1 keep-alive, bodies by
//! `Content-Length`) and serves:
//!
//! - `HEAD` anything (Claude Code's connectivity probe, `HEAD /`): `200`, no body;
//! - `POST /v1/messages/count_tokens`: `{"input_tokens": N}`, N the body's length over 4;
//! - `POST /v1/messages` (any query, e.g. `?beta=true`), *the main conversation* — a request with
//!   tools whose first user message is one of splice's step prompts ("You are working on splice
//!   task ID (…), step `STEP`"): the next assistant turn of that step's [`script`], chosen by how
//!   many assistant turns the conversation already holds and what the tool results said;
//! - `POST /v1/messages`, anything else: a session title request (`{"title": …}`), else a
//!   one-line text answer;
//! - any other request: `404` with an Anthropic-shaped error body.
//!
//! Replies are Server-Sent Events in Anthropic's streaming format when the request says
//! `"stream": true` (`message_start`, `content_block_start`/`_delta`/`_stop` for each text or
//! `tool_use` block — a tool's input as `input_json_delta` pieces —, `message_delta` with the
//! stop reason and usage, `message_stop`), else one JSON message. Every request is recorded
//! ([`StandIn::seen`]) so a test can say what the CLI asked for and what its tools answered;
//! with `SPLICE_STANDIN_DUMP=FILE` each request is also appended to FILE whole, one JSON line.
//!
//! What the main conversation gets is the stand-in's [`Mode`]: the steps' scripts
//! ([`StandIn::start`]), or a scripted failure ([`StandIn::with`]): the first session
//! overloaded (`529`), every main request held unanswered, or a command the agent may not run.
//! A session is told apart by the `x-claude-code-session-id` header Claude Code sends with each
//! request (the same on each of its own retries).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// One request the stand-in answered.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    /// The path with its query, as sent.
    pub path: String,
    /// What it was taken for: `head`, `count_tokens`, `step <STEP> turn <N>`, `title`, `side`,
    /// `unknown`.
    pub kind: String,
    /// The request's `model` and `stream`, for `/v1/messages`.
    pub model: Option<String>,
    pub stream: bool,
    /// The text of the tool results in the request's last message (what the agent's tools
    /// answered the turn before).
    pub tool_results: Vec<String>,
    /// The Claude Code session it came from (its `x-claude-code-session-id` header).
    pub session: Option<String>,
}

/// What the stand-in answers the main conversation with.
#[derive(Clone, Debug)]
pub enum Mode {
    /// Each step's [`script`].
    Script,
    /// The main conversation of the first session that asks is answered `529`
    /// `overloaded_error`, each of its retries too; every later session gets the script.
    OverloadedFirstSession,
    /// The main conversation's request is read and never answered: the connection is held
    /// open, nothing is sent, until the client closes it.
    Hang,
    /// Each step's first turn runs this shell command with `Bash`; whatever it answers, the
    /// next turn ends the session without proposing.
    Run(&'static str),
}

/// The stand-in's state shared by its connections.
struct Shared {
    mode: Mode,
    seen: Mutex<Vec<Seen>>,
    /// The session [`Mode::OverloadedFirstSession`] refuses, once one asked.
    overloaded: Mutex<Option<String>>,
}

/// The stand-in server, running until the test process ends.
pub struct StandIn {
    /// `http://127.0.0.1:<port>`, for `ANTHROPIC_BASE_URL`.
    pub url: String,
    shared: Arc<Shared>,
}

impl StandIn {
    /// Listen on a free port of 127.0.0.1 and serve the steps' scripts in the background.
    pub fn start() -> StandIn {
        StandIn::with(Mode::Script)
    }

    /// Listen on a free port of 127.0.0.1 and serve in the background, the main conversation
    /// as `mode` says.
    pub fn with(mode: Mode) -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").expect("stand-in: bind 127.0.0.1:0");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Arc::new(Shared {
            mode,
            seen: Mutex::new(Vec::new()),
            overloaded: Mutex::new(None),
        });
        let serving = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = serving.clone();
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        StandIn { url, shared }
    }

    /// Every request so far, in the order received (a held one as soon as it is read).
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// The distinct sessions that asked for a step's turn (or were refused one), in order.
    pub fn sessions(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in self.seen() {
            if let Some(id) = s.session.filter(|_| s.kind.contains("step "))
                && !out.contains(&id)
            {
                out.push(id);
            }
        }
        out
    }

    /// One line per request: `METHOD PATH -> KIND (model, stream)`.
    pub fn summary(&self) -> String {
        self.seen()
            .iter()
            .map(|s| {
                format!(
                    "{} {} -> {}{}{}",
                    s.method,
                    s.path,
                    s.kind,
                    s.model
                        .as_ref()
                        .map(|m| format!(" ({m}, stream {})", s.stream))
                        .unwrap_or_default(),
                    s.session
                        .as_ref()
                        .map(|id| format!(" [session {}]", &id[..id.len().min(8)]))
                        .unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Answer the requests of one connection until the client closes it (or asks to).
fn serve(stream: TcpStream, shared: &Shared) {
    let mut out = stream.try_clone().expect("clone the connection");
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut words = line.split_whitespace();
        let (method, path) = (
            words.next().unwrap_or("").to_string(),
            words.next().unwrap_or("").to_string(),
        );
        let (mut length, mut close, mut session) = (0usize, false, None);
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let value = value.trim();
                match name.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = value.parse().unwrap_or(0),
                    "connection" => close = value.eq_ignore_ascii_case("close"),
                    "x-claude-code-session-id" => session = Some(value.to_string()),
                    _ => {}
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if let Some(dump) = std::env::var_os("SPLICE_STANDIN_DUMP") {
            let line = json!({"method": method, "path": path, "body": request});
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(dump);
            if let Ok(file) = file.as_mut() {
                let _ = writeln!(file, "{line}");
            }
        }
        let (seen, response) = answer(&method, &path, &request, session, shared);
        shared.seen.lock().unwrap().push(seen);
        let Some(response) = response else {
            // Held: nothing is sent; wait for the client to hang up (or be killed).
            let mut rest = Vec::new();
            let _ = reader.read_to_end(&mut rest);
            return;
        };
        if out.write_all(&response).and_then(|_| out.flush()).is_err() || close {
            return;
        }
    }
}

/// The record of a request from `session` and the bytes of its response (`None`: held, never
/// answered).
fn answer(
    method: &str,
    path: &str,
    request: &Value,
    session: Option<String>,
    shared: &Shared,
) -> (Seen, Option<Vec<u8>>) {
    let route = path.split('?').next().unwrap_or("");
    let mut seen = Seen {
        method: method.to_string(),
        path: path.to_string(),
        kind: "unknown".into(),
        model: request["model"].as_str().map(str::to_string),
        stream: request["stream"] == true,
        tool_results: last_tool_results(request),
        session,
    };
    let response = match (method, route) {
        ("HEAD", _) => {
            seen.kind = "head".into();
            http(200, "application/json", b"")
        }
        ("POST", "/v1/messages/count_tokens") => {
            seen.kind = "count_tokens".into();
            let n = request.to_string().len() / 4;
            http(
                200,
                "application/json",
                json!({"input_tokens": n}).to_string().as_bytes(),
            )
        }
        ("POST", "/v1/messages") => {
            let Some(step) = Step::of(request) else {
                let (kind, blocks) = side(request);
                seen.kind = kind;
                return (seen, Some(message(request, &blocks)));
            };
            let turn = assistant_turns(request);
            seen.kind = format!("step {} turn {turn}", step.name);
            match &shared.mode {
                Mode::OverloadedFirstSession if overloaded(shared, &seen.session) => {
                    seen.kind = format!("overloaded {}", seen.kind);
                    let error = json!({"type": "error", "error": {"type": "overloaded_error",
                        "message": "Overloaded"}});
                    http(529, "application/json", error.to_string().as_bytes())
                }
                Mode::Hang => {
                    seen.kind = format!("held {}", seen.kind);
                    return (seen, None);
                }
                Mode::Run(command) => message(request, &run(command, turn, &seen.tool_results)),
                _ => {
                    let first = first_tool_result(request);
                    message(request, &script(&step, turn, first, &seen.tool_results))
                }
            }
        }
        _ => {
            let error = json!({"type": "error", "error": {"type": "not_found_error",
                "message": format!("the stand-in does not serve {method} {route}")}});
            http(404, "application/json", error.to_string().as_bytes())
        }
    };
    (seen, Some(response))
}

/// Is `session` the one [`Mode::OverloadedFirstSession`] refuses (the first to ask)?
fn overloaded(shared: &Shared, session: &Option<String>) -> bool {
    let mut first = shared.overloaded.lock().unwrap();
    let first = first.get_or_insert_with(|| session.clone().unwrap_or_default());
    session.as_deref().unwrap_or_default() == first.as_str()
}

/// [`Mode::Run`]'s assistant turn number `turn`: `command` with `Bash`, then, with what it
/// answered (`results`), the end of the session without a proposal.
fn run(command: &str, turn: usize, results: &[String]) -> Vec<Block> {
    if turn == 0 {
        return vec![
            Block::Text("First, the toolchain.".into()),
            Block::Tool(
                "Bash",
                json!({"command": command, "description": "Check the toolchain"}),
            ),
        ];
    }
    vec![Block::Text(format!(
        "Stopping without a proposal: `{command}` answered: {}",
        results.join(" | ")
    ))]
}

/// A request that is no step of splice's: a session title (Claude Code asks for one at the
/// start of each session, on the same model, with no tools: `{"title": …}` in JSON), else a
/// one-line answer.
fn side(request: &Value) -> (String, Vec<Block>) {
    let system = text_of(&request["system"]);
    if system.contains("title") && system.contains("JSON") {
        let title = json!({"title": "Splice step"}).to_string();
        return ("title".into(), vec![Block::Text(title)]);
    }
    ("side".into(), vec![Block::Text("OK.".into())])
}

/// A block of an assistant turn.
#[derive(Clone, Debug)]
pub enum Block {
    Text(String),
    /// A tool call: the tool's name and its input.
    Tool(&'static str, Value),
}

/// The splice step a main-conversation request is for, from its first user message.
pub struct Step {
    pub name: String,
    pub bead: String,
}

impl Step {
    fn of(request: &Value) -> Option<Step> {
        if request["tools"].as_array().is_none_or(|t| t.is_empty()) {
            return None;
        }
        let first = request["messages"]
            .as_array()?
            .iter()
            .find(|m| m["role"] == "user")?;
        let text = text_of(&first["content"]);
        let after = |marker: &str, end: char| -> Option<String> {
            let rest = &text[text.find(marker)? + marker.len()..];
            Some(rest[..rest.find(end)?].trim().to_string())
        };
        Some(Step {
            bead: after("You are working on splice task ", ' ')?,
            name: after(", step `", '`')?,
        })
    }
}

/// Shell commands the scripts run with the Bash tool (in the dispatch's environment).
const LOOK: &str = "pwd && git rev-parse HEAD";
/// A write to splice's journal the guard cannot see (the path is inside an awk program): only
/// the kernel sandbox refuses it.
const PROBE: &str = "awk 'BEGIN { printf \"probe\\n\" >> (ENVIRON[\"SPLICE_DIR\"] \"/journal.jsonl\") }' \
     2>&1 && echo 'journal: WRITABLE' || echo 'journal: refused'";
const PROPOSE: &str = "splice transition propose --bead \"$SPLICE_BEAD\" --step \"$SPLICE_STEP\"";

/// The assistant turn number `turn` (from 0) of `step`, given the conversation's first tool
/// result and the tool results the last turn got. Each step first runs [`LOOK`] (its answer,
/// the worktree and HEAD, feeds the files it writes), then writes its files with `Write`, then
/// commits and proposes with `Bash`, then ends its turn with a text answer. A failed tool call
/// ends the session at once, saying so.
pub fn script(step: &Step, turn: usize, first: Option<String>, results: &[String]) -> Vec<Block> {
    if let Some(failed) = results.iter().find(|r| r.starts_with("ERROR: ")) {
        return vec![Block::Text(format!(
            "Stopping: a tool call failed: {failed}"
        ))];
    }
    let bash = |command: String, description: &str| {
        Block::Tool(
            "Bash",
            json!({"command": command, "description": description}),
        )
    };
    let write = |path: String, content: String| {
        Block::Tool("Write", json!({"file_path": path, "content": content}))
    };
    let id = &step.bead;
    // The worktree and HEAD, from the first turn's LOOK, once there (picked by their shape:
    // a shell may print a warning first).
    let first = first.unwrap_or_default();
    let line = |shape: &dyn Fn(&str) -> bool| first.lines().map(str::trim).find(|l| shape(l));
    let dir = line(&|l| l.starts_with('/') && !l.contains(": ")).unwrap_or("");
    let head = line(&|l| l.len() == 40 && l.bytes().all(|b| b.is_ascii_hexdigit())).unwrap_or("");
    let done = |what: &str| vec![Block::Text(format!("{what} for {id}: done, and proposed."))];
    match (step.name.as_str(), turn) {
        ("generate-spec", 0) => vec![
            Block::Text("Looking at the worktree first.".into()),
            bash(format!("{LOOK} && {PROBE}"), "Find the worktree and HEAD"),
        ],
        ("generate-spec", 1) => vec![write(
            format!("{dir}/specs/{id}.md"),
            format!(
                "---\nbead: {id}\nbase_commit: {head}\nfiles:\n  - greeting/{id}.txt\n  \
                 - tests/{id}.feature\nverdict: leaf\n---\n# A greeting\n\n\
                 A file that greets.\n\nScenario: S1 the greeting exists\n"
            ),
        )],
        ("generate-spec", 2) => vec![bash(
            format!(
                "git add specs && git commit -q -m 'spec for {id}' && {PROPOSE} \
                 --artifact specs/{id}.md"
            ),
            "Commit the spec and propose it",
        )],
        ("generate-spec", _) => done("The spec"),
        ("implement", 0) | ("generate-tests", 0) | ("review", 0) => {
            vec![bash(LOOK.into(), "Find the worktree and HEAD")]
        }
        ("implement", 1) => vec![write(
            format!("{dir}/greeting/{id}.txt"),
            "Hello from Claude Code!\n".into(),
        )],
        ("implement", 2) => vec![bash(
            format!(
                "git add greeting && git commit -q -m 'greeting for {id}' && {PROPOSE} \
                 --artifact \"$(git rev-parse HEAD)\""
            ),
            "Commit the greeting and propose the commit",
        )],
        ("implement", _) => done("The greeting"),
        // The test generator: two tool calls in one turn, test files only.
        ("generate-tests", 1) => vec![
            write(
                format!("{dir}/tests/{id}.feature"),
                format!(
                    "Feature: greeting\n  Scenario: S1 the greeting exists\n    \
                     Then greeting/{id}.txt exists\n"
                ),
            ),
            bash(
                format!("git add tests && git commit -q -m 'tests for {id}'"),
                "Commit the tests",
            ),
        ],
        ("generate-tests", 2) => vec![bash(
            format!("{PROPOSE} --artifact \"$(git rev-parse HEAD)\""),
            "Propose the commit",
        )],
        ("generate-tests", _) => done("The tests"),
        // The review is not committed: HEAD stays the reviewed commit.
        ("review", 1) => vec![write(
            format!("{dir}/reviews/{id}.md"),
            format!(
                "## Review\nReviewed-SHA: {head}\nStandards: PASS\nSpec: PASS\n\
                 Architecture: PASS\nEvidence: PASS\n"
            ),
        )],
        ("review", 2) => vec![bash(
            format!("{PROPOSE} --artifact reviews/{id}.md"),
            "Propose the review",
        )],
        ("review", _) => done("The review"),
        ("deliver", 0) => vec![bash(format!("{PROPOSE} --artifact HEAD"), "Propose")],
        ("deliver", _) => done("Delivery"),
        (other, _) => vec![Block::Text(format!(
            "The stand-in has no script for {other}."
        ))],
    }
}

/// How many assistant turns the conversation holds.
fn assistant_turns(request: &Value) -> usize {
    request["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0)
}

/// The text of the conversation's first `tool_result`.
fn first_tool_result(request: &Value) -> Option<String> {
    request["messages"]
        .as_array()?
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .find(|b| b["type"] == "tool_result")
        .map(|b| text_of(&b["content"]))
}

/// The text of each `tool_result` in the last message, `ERROR: `-prefixed when `is_error`.
fn last_tool_results(request: &Value) -> Vec<String> {
    let Some(last) = request["messages"].as_array().and_then(|m| m.last()) else {
        return Vec::new();
    };
    last["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| {
                    let text = text_of(&b["content"]);
                    if b["is_error"] == true {
                        format!("ERROR: {text}")
                    } else {
                        text
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A message content's text: a string, or its text blocks joined.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The response carrying `blocks` as the assistant's turn: SSE when the request streams.
fn message(request: &Value, blocks: &[Block]) -> Vec<u8> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let model = request["model"].as_str().unwrap_or("claude-stand-in");
    let stop = if blocks.iter().any(|b| matches!(b, Block::Tool(..))) {
        "tool_use"
    } else {
        "end_turn"
    };
    let input_tokens = request.to_string().len() / 4;
    let content: Vec<Value> = blocks
        .iter()
        .enumerate()
        .map(|(i, b)| match b {
            Block::Text(t) => json!({"type": "text", "text": t}),
            Block::Tool(name, input) => {
                json!({"type": "tool_use", "id": format!("toolu_{n:04}_{i}"), "name": name, "input": input})
            }
        })
        .collect();
    let output_tokens = 5 + content
        .iter()
        .map(|c| c.to_string().len() / 4)
        .sum::<usize>();
    let usage = json!({"input_tokens": input_tokens, "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    let id = format!("msg_standin_{n:04}");
    if request["stream"] != true {
        let body = json!({"id": id, "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": null, "usage": usage});
        return http(200, "application/json", body.to_string().as_bytes());
    }
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": id, "type": "message",
            "role": "assistant", "model": model, "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": input_tokens, "output_tokens": 1,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
    ];
    for (index, block) in content.iter().enumerate() {
        // Each block opens empty and arrives in two pieces, as a real stream splits it.
        let (start, whole, delta) = if block["type"] == "text" {
            (
                json!({"type": "text", "text": ""}),
                block["text"].as_str().unwrap().to_string(),
                "text_delta",
            )
        } else {
            let mut start = block.clone();
            start["input"] = json!({});
            (start, block["input"].to_string(), "input_json_delta")
        };
        events.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        let cut = whole
            .char_indices()
            .nth(whole.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        for piece in [&whole[..cut], &whole[cut..]] {
            let delta = if delta == "text_delta" {
                json!({"type": delta, "text": piece})
            } else {
                json!({"type": delta, "partial_json": piece})
            };
            events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": stop,
        "stop_sequence": null}, "usage": {"output_tokens": output_tokens}}),
    );
    events.push(json!({"type": "message_stop"}));
    let body: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    http(200, "text/event-stream", body.as_bytes())
}

/// An HTTP/1.1 response, kept alive.
fn http(status: u16, content_type: &str, body: &[u8]) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        529 => "Overloaded",
        _ => "Error",
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
         request-id: req_standin\r\nconnection: keep-alive\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}
