//! What an agent is doing, in words, read from its dispatch log while it runs (issue 14).
//!
//! [`words`] turns one log line into a short line for a person. For Claude Code's stream-json
//! (`claude -p --output-format stream-json --verbose`, the default agent), each line is one
//! JSON event:
//!
//! | event | words |
//! |---|---|
//! | `{"type":"system","subtype":"init","model":M}` | `session started (model M)` |
//! | `{"type":"system","subtype":"api_retry","attempt":A,"max_retries":M,"error_status":S,"error":E}` | `retrying the API (A of M): S E` |
//! | `assistant`, a `text` item | its first non-empty line |
//! | `assistant`, a `tool_use` item | `Read src/a.rs`, `Edit …`, `Write …`, `Bash: cargo test`, `Grep "pattern"`, `Glob "**/*.rs"`, `Task: description`, `TodoWrite` (`: the item in progress`), `WebFetch URL`, any other tool by name |
//! | `user`, a `tool_result` item with `is_error` | `(tool failed: its first line)` |
//! | `result` | `finished: success (N turns)`, `finished: error_max_turns (N turns)`, … |
//! | Codex CLI's `codex exec --json` events | the table in `progress_codex.rs`: `run: cargo test`, `edit src/a.rs`, … |
//! | any other JSON, or a line cut short (`{` that does not parse) | nothing |
//! | a line that is not JSON (another agent's plain output) | the line itself |
//!
//! An assistant event with several items gives the words of its last one that has some. Words
//! are one line of at most [`WORDS_CAP`] characters with no control characters (an agent's
//! colours are dropped); a path inside a splice worktree is shown relative to it.
//!
//! [`Tail`] follows a growing log from a byte offset; [`latest`] reads a log's last 64 KiB for
//! the newest line with words (the run's heartbeat, `Event::Progress`).
//!
//! Limit: while a dispatch runs, its log holds the first half of its cap as written, the rest
//! only when it ends ([`crate::process::sink`]); past 512 KiB of output (by default) the log
//! stops growing until then, so the words stay those of the last line written before.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

#[path = "progress_codex.rs"]
mod codex;

/// The most characters words hold.
pub const WORDS_CAP: usize = 120;

/// How much of a log's end [`latest`] reads.
const LATEST_WINDOW: u64 = 64 * 1024;

/// The most bytes one [`Tail::poll`] reads.
const POLL_CAP: u64 = 256 * 1024;

/// The longest line [`Tail`] holds back waiting for its end; a longer one is skipped.
const LINE_CAP: usize = 1024 * 1024;

/// One log line in words, if it says anything a person wants to see.
pub fn words(line: &str) -> Option<String> {
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    if !line.starts_with('{') {
        return said(line);
    }
    let event: Value = serde_json::from_str(line).ok()?;
    let words = match event.get("type").and_then(Value::as_str)? {
        "system" => session(&event),
        "assistant" => items(&event).iter().rev().find_map(assistant_item),
        "user" => items(&event).iter().rev().find_map(tool_failure),
        "result" => Some(finished(&event)),
        kind => codex::words(kind, &event),
    }?;
    said(&words)
}

/// The content items of an assistant or user event.
fn items(event: &Value) -> &[Value] {
    event
        .pointer("/message/content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn session(event: &Value) -> Option<String> {
    match event.get("subtype").and_then(Value::as_str) {
        Some("init") => {}
        Some("api_retry") => return Some(api_retry(event)),
        _ => return None,
    }
    Some(match text_at(event, "model") {
        Some(model) => format!("session started (model {model})"),
        None => "session started".to_string(),
    })
}

/// Claude Code retrying its API: `retrying the API (2 of 10): 529 overloaded`.
fn api_retry(event: &Value) -> String {
    let n = |k: &str| event.get(k).and_then(Value::as_u64);
    let count = match (n("attempt"), n("max_retries")) {
        (Some(a), Some(m)) => format!(" ({a} of {m})"),
        (Some(a), None) => format!(" ({a})"),
        _ => String::new(),
    };
    let status = n("error_status")
        .map(|s| format!("{s} "))
        .unwrap_or_default();
    let error = text_at(event, "error").unwrap_or("");
    let why = format!("{status}{error}");
    match why.trim() {
        "" => format!("retrying the API{count}"),
        why => format!("retrying the API{count}: {why}"),
    }
}

fn assistant_item(item: &Value) -> Option<String> {
    match item.get("type").and_then(Value::as_str)? {
        "text" => first_line(text_at(item, "text")?).map(str::to_string),
        "tool_use" => Some(tool_use(
            text_at(item, "name")?,
            item.get("input").unwrap_or(&Value::Null),
        )),
        _ => None,
    }
}

/// A tool call: its name and what it works on.
fn tool_use(name: &str, input: &Value) -> String {
    let arg = |key: &str| text_at(input, key).and_then(first_line);
    let detail = match name {
        "Read" | "Edit" | "MultiEdit" | "Write" => {
            arg("file_path").map(|p| format!(" {}", path(p)))
        }
        "NotebookEdit" | "NotebookRead" => arg("notebook_path").map(|p| format!(" {}", path(p))),
        "Bash" => arg("command").map(|c| format!(": {c}")),
        "Grep" | "Glob" => arg("pattern").map(|p| format!(" \"{p}\"")),
        "Task" | "Agent" => arg("description").map(|d| format!(": {d}")),
        "TodoWrite" => todo_in_progress(input).map(|t| format!(": {t}")),
        "WebFetch" => arg("url").map(|u| format!(" {u}")),
        "WebSearch" => arg("query").map(|q| format!(" \"{q}\"")),
        _ => None,
    };
    format!("{name}{}", detail.unwrap_or_default())
}

/// The todo item in progress, as the agent says it while doing it.
fn todo_in_progress(input: &Value) -> Option<&str> {
    let todo = input
        .get("todos")?
        .as_array()?
        .iter()
        .find(|t| t.get("status").and_then(Value::as_str) == Some("in_progress"))?;
    text_at(todo, "activeForm")
        .or_else(|| text_at(todo, "content"))
        .and_then(first_line)
}

/// A path inside a splice worktree (`…/.splice/worktrees/<bead>/src/a.rs`), relative to it.
fn path(p: &str) -> &str {
    const WORKTREES: &str = "/.splice/worktrees/";
    let Some(at) = p.find(WORKTREES) else {
        return p;
    };
    let rest = &p[at + WORKTREES.len()..];
    match rest.find('/') {
        Some(slash) if slash + 1 < rest.len() => &rest[slash + 1..],
        _ => p,
    }
}

fn tool_failure(item: &Value) -> Option<String> {
    if item.get("type").and_then(Value::as_str) != Some("tool_result")
        || item.get("is_error").and_then(Value::as_bool) != Some(true)
    {
        return None;
    }
    let text = match item.get("content") {
        Some(Value::String(s)) => first_line(s),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| text_at(p, "text"))
            .find_map(first_line),
        _ => None,
    };
    Some(match text {
        Some(t) => format!("(tool failed: {t})"),
        None => "(tool failed)".to_string(),
    })
}

fn finished(event: &Value) -> String {
    let subtype = text_at(event, "subtype").unwrap_or("success");
    let is_error = event.get("is_error").and_then(Value::as_bool) == Some(true);
    let how = if is_error && subtype == "success" {
        "error"
    } else {
        subtype
    };
    match event.get("num_turns").and_then(Value::as_u64) {
        Some(1) => format!("finished: {how} (1 turn)"),
        Some(n) => format!("finished: {how} ({n} turns)"),
        None => format!("finished: {how}"),
    }
}

fn text_at<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

/// The first line of `text` with something on it, trimmed.
fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|l| !l.is_empty())
}

/// Words fit for one line of a terminal: no escape sequences or control characters, spaces
/// collapsed, at most [`WORDS_CAP`] characters (cut with `…`). `None` when nothing is left.
fn said(text: &str) -> Option<String> {
    let mut clean = String::with_capacity(text.len().min(WORDS_CAP * 4));
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // An ANSI sequence: ESC [ parameters final-byte (colours, cursor moves).
            if chars.peek() == Some(&'[') {
                chars.next();
                while chars.next().is_some_and(|c| !('@'..='~').contains(&c)) {}
            }
            continue;
        }
        let c = if c.is_control() { ' ' } else { c };
        if c == ' ' && (clean.is_empty() || clean.ends_with(' ')) {
            continue;
        }
        clean.push(c);
    }
    let clean = clean.trim_end();
    if clean.is_empty() {
        return None;
    }
    if clean.chars().count() <= WORDS_CAP {
        return Some(clean.to_string());
    }
    let mut cut: String = clean.chars().take(WORDS_CAP - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    Some(cut)
}

/// Follows a growing log file from a kept byte offset: each [`Tail::poll`] returns the lines
/// completed since the last one. A file that shrank or was replaced is read again from its
/// start; a missing file reads as nothing yet. A poll reads at most 256 KiB, and a line longer
/// than 1 MiB is skipped rather than held.
#[derive(Debug)]
pub struct Tail {
    path: PathBuf,
    offset: u64,
    /// The file's identity (device, inode) when last read.
    id: Option<(u64, u64)>,
    /// The start of a line whose end has not been read yet.
    partial: Vec<u8>,
    /// Inside a line too long to hold: drop bytes up to its end.
    skipping: bool,
}

impl Tail {
    /// Follow `path` from its start.
    pub fn new(path: &Path) -> Tail {
        Tail::at(path, 0)
    }

    /// Follow `path` from byte `offset` (a line there is taken to start at it).
    pub fn at(path: &Path, offset: u64) -> Tail {
        Tail {
            path: path.to_path_buf(),
            offset,
            id: None,
            partial: Vec::new(),
            skipping: false,
        }
    }

    /// The byte offset read up to.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The lines completed since the last poll, without their line ends; invalid UTF-8 reads
    /// as U+FFFD. An error reading the file reads as nothing new.
    pub fn poll(&mut self) -> Vec<String> {
        // An agent can replace its log with a FIFO or a link: neither is opened.
        let Ok(mut file) = crate::safe_read::open(&self.path) else {
            return Vec::new();
        };
        let Ok(meta) = file.metadata() else {
            return Vec::new();
        };
        let id = Some((meta.dev(), meta.ino()));
        if meta.len() < self.offset || (self.id.is_some() && self.id != id) {
            self.restart();
        }
        self.id = id;
        let mut chunk = Vec::new();
        if file.seek(SeekFrom::Start(self.offset)).is_err()
            || file.take(POLL_CAP).read_to_end(&mut chunk).is_err()
        {
            return Vec::new();
        }
        self.offset += chunk.len() as u64;
        self.split(&chunk)
    }

    fn restart(&mut self) {
        self.offset = 0;
        self.partial.clear();
        self.skipping = false;
    }

    /// Complete lines of `partial` + `chunk`; the unfinished rest is kept.
    fn split(&mut self, chunk: &[u8]) -> Vec<String> {
        let mut lines = Vec::new();
        let mut rest = chunk;
        while let Some(end) = rest.iter().position(|b| *b == b'\n') {
            let too_long = self.partial.len() + end > LINE_CAP;
            if !std::mem::take(&mut self.skipping) && !too_long {
                self.partial.extend_from_slice(&rest[..end]);
                let line = String::from_utf8_lossy(&self.partial);
                lines.push(line.strip_suffix('\r').unwrap_or(&line).to_string());
            }
            self.partial.clear();
            rest = &rest[end + 1..];
        }
        if !self.skipping {
            self.partial.extend_from_slice(rest);
            if self.partial.len() > LINE_CAP {
                self.partial = Vec::new();
                self.skipping = true;
            }
        }
        lines
    }
}

/// The newest line of the log at `path` that gives words, read from its last 64 KiB: what the
/// agent is doing now, as far as its log says. `None` when the log is missing or says nothing.
pub fn latest(path: &Path) -> Option<String> {
    let mut file = crate::safe_read::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(LATEST_WINDOW);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.take(LATEST_WINDOW).read_to_end(&mut bytes).ok()?;
    let mut text = &bytes[..];
    if start > 0 {
        // The window starts inside a line: that line is not whole.
        let first_end = text.iter().position(|b| *b == b'\n')?;
        text = &text[first_end + 1..];
    }
    String::from_utf8_lossy(text).lines().rev().find_map(words)
}

/// What the agent of a dispatch is doing: [`latest`] of its log
/// (`<runs_dir>/<run>/<bead>-<step>-<attempt>.log`, or its retry's, [`super::DispatchPaths`]).
pub fn of_dispatch(
    runs_dir: &Path,
    run: &str,
    bead: &str,
    step: &str,
    attempt: u32,
    retry: u32,
) -> Option<String> {
    let paths = super::DispatchPaths::new(runs_dir, run, bead, step, attempt)
        .ok()?
        .retry(retry);
    latest(&paths.log)
}

#[cfg(test)]
#[path = "progress_tests.rs"]
mod tests;
