//! A scripted local stand-in for the OpenAI Responses API, which the real Codex CLI talks to in
//! place of OpenAI's (issue 32). std only: a `TcpListener` on 127.0.0.1 (a free port), a thread
//! per connection, HTTP/1.1 with `Content-Length` bodies, one request per connection
//! (`Connection: close`).
//!
//! What it serves (Codex 0.171.0 makes no other request of it):
//!
//! - `GET /v1/responses` asking for a WebSocket upgrade (Codex tries its WebSocket transport
//!   first): `426 Upgrade Required`, which sends Codex to HTTPS at once — any other refusal
//!   costs five reconnections, about six seconds, before it falls back.
//! - `POST /v1/responses` (`stream: true`) with `Authorization: Bearer <key>`: the model's next
//!   turn as Server-Sent Events — `response.created`, `response.output_item.added`, for a
//!   message `response.output_text.delta`, `response.output_item.done`, then
//!   `response.completed` with its usage. What the turn is comes from the [`Script`], given the
//!   prompt and the outputs of the commands run so far: a shell command (a `function_call` of
//!   Codex's `exec_command` tool where the request lists it in `tools`, or, where the model runs
//!   in Codex's code mode and `exec_command` is only reachable from the JavaScript `exec` tool,
//!   a `custom_tool_call` of `exec` calling it) or the final message.
//! - A `POST` without the key: `401` as OpenAI answers it; anything else: `404`.
//!
//! Every request is kept ([`Standin::requests`]) so that a test can say what Codex asked.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// Tokens each response reports (Codex adds them up over a session).
pub const INPUT_TOKENS: u64 = 1000;
pub const CACHED_TOKENS: u64 = 200;
pub const OUTPUT_TOKENS: u64 = 50;
pub const REASONING_TOKENS: u64 = 10;

/// A request as the stand-in received it.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body, when it is JSON.
    pub body: Option<Value>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The items of a `POST`'s `input`.
    pub fn input(&self) -> &[Value] {
        self.body
            .as_ref()
            .and_then(|b| b["input"].as_array())
            .map_or(&[], Vec::as_slice)
    }

    /// What the last command printed, when this request brings it back (its last input item
    /// is a tool call's output).
    pub fn output(&self) -> Option<String> {
        let last = self.input().last()?;
        let kind = last["type"].as_str()?;
        kind.ends_with("_call_output")
            .then(|| text(&last["output"]))
    }
}

/// A content's text: a string, or the `text` of each of its parts, a line each.
fn text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The model's side of one turn of a conversation, as the script sees it.
#[derive(Clone, Debug)]
pub struct Turn {
    /// The text of the last user message: the prompt `codex exec` was given.
    pub prompt: String,
    /// The output of every command run so far in this conversation, oldest first.
    pub outputs: Vec<String>,
}

/// What the model does next.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// Run this shell command.
    Shell(String),
    /// Answer, ending the turn.
    Message(String),
}

/// Decides each reply from the turn so far.
pub type Script = dyn Fn(&Turn) -> Reply + Send + Sync;

pub struct Standin {
    /// The API's base URL, `http://127.0.0.1:<port>/v1`.
    pub base_url: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Standin {
    /// Listens on a free port of 127.0.0.1 and answers every request with a bearer `key` from
    /// `script`, until the test process ends.
    pub fn start(key: &str, script: impl Fn(&Turn) -> Reply + Send + Sync + 'static) -> Standin {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::new(script);
        let (log, key) = (requests.clone(), key.to_string());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, key, script) = (log.clone(), key.clone(), script.clone());
                std::thread::spawn(move || serve(stream, &key, &*script, &log));
            }
        });
        Standin {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            requests,
        }
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

/// Read one request from `stream`, log it, answer it.
fn serve(stream: TcpStream, key: &str, script: &Script, log: &Mutex<Vec<Request>>) {
    stream.set_read_timeout(Some(Duration::from_secs(30))).ok();
    let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    log.lock().unwrap().push(request.clone());
    let (status, content_type, body) = answer(&request, key, script);
    let mut out = stream;
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(body.as_bytes());
    let _ = out.flush();
}

fn read_request(reader: &mut impl BufRead) -> Option<Request> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut words = line.split_whitespace();
    let (method, path) = (words.next()?.to_string(), words.next()?.to_string());
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (name, value) = l.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut bytes = vec![0; length];
    reader.read_exact(&mut bytes).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body: serde_json::from_slice(&bytes).ok(),
    })
}

/// The status line's code and reason, the content type and the body for `request`.
fn answer(request: &Request, key: &str, script: &Script) -> (&'static str, &'static str, String) {
    let error = |message: &str| {
        json!({"error": {"message": message, "type": "invalid_request_error"}}).to_string()
    };
    if request.path != "/v1/responses" {
        return (
            "404 Not Found",
            "application/json",
            error("no such endpoint"),
        );
    }
    if request.method == "GET" {
        return (
            "426 Upgrade Required",
            "application/json",
            error("no WebSockets here"),
        );
    }
    if request.header("authorization") != Some(&format!("Bearer {key}")) {
        return (
            "401 Unauthorized",
            "application/json",
            error("Incorrect API key provided"),
        );
    }
    let Some(body) = &request.body else {
        return (
            "400 Bad Request",
            "application/json",
            error("the body is not JSON"),
        );
    };
    let turn = turn_of(body);
    let n = body["input"].as_array().map_or(0, Vec::len);
    let item = match script(&turn) {
        Reply::Shell(cmd) => match shell_call(body, &cmd, n) {
            Some(item) => item,
            None => {
                return (
                    "400 Bad Request",
                    "application/json",
                    error("no exec_command tool offered"),
                );
            }
        },
        Reply::Message(text) => json!({
            "type": "message", "id": format!("msg_{n}"), "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }),
    };
    ("200 OK", "text/event-stream", events(&item, n))
}

/// The prompt and the commands' outputs in a request's `input`.
fn turn_of(body: &Value) -> Turn {
    let items = body["input"].as_array().cloned().unwrap_or_default();
    let prompt = items
        .iter()
        .rfind(|i| i["type"] == "message" && i["role"] == "user")
        .map(|i| text(&i["content"]))
        .unwrap_or_default();
    let outputs = items
        .iter()
        .filter(|i| i["type"] == "function_call_output" || i["type"] == "custom_tool_call_output")
        .map(|i| text(&i["output"]))
        .collect();
    Turn { prompt, outputs }
}

/// Codex's shell tool called with `cmd`, as the request offers it: a `function_call` of
/// `exec_command` (`{"cmd": …}`) where `tools` lists it, else a `custom_tool_call` of code
/// mode's `exec` (JavaScript: `tools.exec_command`), else `None`.
fn shell_call(body: &Value, cmd: &str, n: usize) -> Option<Value> {
    let named = |tools: &Value, kind: &str, name: &str| {
        tools
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["type"] == kind && t["name"] == name))
    };
    if named(&body["tools"], "function", "exec_command") {
        return Some(json!({
            "type": "function_call", "id": format!("fc_{n}"), "call_id": format!("call_{n}"),
            "name": "exec_command", "arguments": json!({"cmd": cmd}).to_string(),
            "status": "completed",
        }));
    }
    let code_mode = body["input"].as_array()?.iter().any(|i| {
        i["type"] == "additional_tools"
            && i["tools"].as_array().is_some_and(|spaces| {
                spaces
                    .iter()
                    .any(|s| s["name"] == "functions" && named(&s["tools"], "custom", "exec"))
            })
    });
    code_mode.then(|| {
        let js = format!(
            "const r = await tools.exec_command({{cmd: {}}});\n\
             text(`exit ${{r.exit_code}}\\n${{r.output}}`);",
            Value::String(cmd.to_string())
        );
        json!({
            "type": "custom_tool_call", "id": format!("ctc_{n}"), "call_id": format!("call_{n}"),
            "name": "exec", "input": js, "status": "completed",
        })
    })
}

/// The Server-Sent Events of a response whose one output is `item`.
fn events(item: &Value, n: usize) -> String {
    let id = format!("resp_{n}");
    let mut events = vec![json!({"type": "response.created", "response": {"id": id}})];
    let mut added = item.clone();
    if item["type"] == "message" {
        added["status"] = json!("in_progress");
        added["content"] = json!([]);
        events
            .push(json!({"type": "response.output_item.added", "output_index": 0, "item": added}));
        events.push(json!({
            "type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
            "content_index": 0, "delta": item["content"][0]["text"],
        }));
    } else {
        events
            .push(json!({"type": "response.output_item.added", "output_index": 0, "item": added}));
    }
    events.push(json!({"type": "response.output_item.done", "output_index": 0, "item": item}));
    events.push(json!({
        "type": "response.completed",
        "response": {"id": id, "usage": {
            "input_tokens": INPUT_TOKENS,
            "input_tokens_details": {"cached_tokens": CACHED_TOKENS},
            "output_tokens": OUTPUT_TOKENS,
            "output_tokens_details": {"reasoning_tokens": REASONING_TOKENS},
            "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
        }},
    }));
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}
