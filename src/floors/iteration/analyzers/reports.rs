//! Reading each analyzer's output into [`Finding`]s. Every reader takes agent-influenced text
//! (file names, messages, a tool's output on a hostile repository) and never panics: what it
//! cannot read is an `Err` (the report is unreadable) or a reason in [`Report::incomplete`].

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::Format;
use crate::floors::head;
use crate::floors::sarif::{self, Finding};

/// How much of a message a finding keeps.
const MESSAGE_BYTES: usize = 300;

/// What one report held.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Report {
    /// Each finding once.
    pub findings: Vec<Finding>,
    /// Entries read, counted or not (a non-zero exit with none read is no evidence).
    pub seen: usize,
    /// What the report itself says was not checked.
    pub incomplete: Vec<String>,
}

impl Report {
    fn push(&mut self, seen: &mut BTreeSet<String>, f: Finding) {
        let key = format!(
            "{}\u{0}{:?}\u{0}{:?}\u{0}{:?}",
            f.level, f.rule, f.location, f.message
        );
        if seen.insert(key) {
            self.findings.push(f);
        }
    }
}

/// Read `stdout` (and, for gofmt, `stderr`) as `format` says. Paths are made relative to
/// `dir` where the tool prints them absolute.
pub(super) fn read(
    format: Format,
    stdout: &str,
    stderr: &str,
    dir: &Path,
) -> Result<Report, String> {
    match format {
        Format::CargoJson => cargo(stdout),
        Format::PythonSyntax => python_syntax(stdout),
        Format::RuffJson => ruff(stdout, dir),
        Format::BanditJson => bandit(stdout),
        Format::GofmtList => Ok(gofmt(stdout, stderr)),
        Format::EslintJson => eslint(stdout, dir),
        Format::TscText => Ok(tsc(stdout)),
        Format::Sarif => sarif_log(stdout),
    }
}

fn finding(
    level: &'static str,
    security: Option<&'static str>,
    rule: Option<&str>,
    location: Option<String>,
    message: Option<&str>,
) -> Finding {
    Finding {
        rule: rule.map(str::to_string),
        level,
        security,
        location,
        message: message.map(|m| head(m.trim(), MESSAGE_BYTES)),
    }
}

fn at(file: &str, line: Option<u64>) -> String {
    match line {
        Some(l) => format!("{file}:{l}"),
        None => file.to_string(),
    }
}

/// `path` relative to `dir` when it is inside it, without a leading `./`.
fn relative(path: &str, dir: &Path) -> String {
    let inside = |base: &Path| {
        Path::new(path)
            .strip_prefix(base)
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    };
    let rel = inside(dir)
        .or_else(|| dir.canonicalize().ok().and_then(|d| inside(&d)))
        .unwrap_or_else(|| path.to_string());
    rel.strip_prefix("./").map(str::to_string).unwrap_or(rel)
}

fn json(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Err("it printed no report".into());
    }
    serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))
}

fn str_at<'v>(v: &'v Value, pointer: &str) -> Option<&'v str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// cargo's `--message-format=json` lines: each `compiler-message` at level `error` (or an
/// internal compiler error) or `warning`, its rule `code.code`, its place the first primary
/// span. rustc's span-less summary ("aborting due to …") is not a finding. `Err` when stdout
/// has text but not one JSON line.
fn cargo(stdout: &str) -> Result<Report, String> {
    let mut out = Report::default();
    let mut keys = BTreeSet::new();
    let mut json_lines = 0usize;
    for line in stdout.lines().map(str::trim).filter(|l| l.starts_with('{')) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        json_lines += 1;
        if str_at(&v, "/reason") != Some("compiler-message") {
            continue;
        }
        let Some(msg) = v.get("message") else {
            continue;
        };
        let level = match str_at(msg, "/level") {
            Some(l) if l.starts_with("error") => "error",
            Some("warning") => "warning",
            _ => continue,
        };
        let text = str_at(msg, "/message").unwrap_or_default();
        let primary = msg
            .get("spans")
            .and_then(Value::as_array)
            .and_then(|spans| {
                spans
                    .iter()
                    .find(|s| s.get("is_primary").and_then(Value::as_bool) == Some(true))
            });
        if primary.is_none() && text.starts_with("aborting due to") {
            continue;
        }
        out.seen += 1;
        let location = primary.and_then(|s| {
            let file = str_at(s, "/file_name")?;
            Some(at(file, s.get("line_start").and_then(Value::as_u64)))
        });
        let rule = str_at(msg, "/code/code");
        out.push(
            &mut keys,
            finding(
                level,
                None,
                rule,
                location,
                Some(text).filter(|t| !t.is_empty()),
            ),
        );
    }
    if json_lines == 0 && !stdout.trim().is_empty() {
        return Err("not cargo's JSON messages".into());
    }
    Ok(out)
}

/// The lines of [`super::PYTHON_SYNTAX`]. A file that does not compile is an error; one it
/// could not read, or a check that did not reach its last line, is incomplete.
fn python_syntax(stdout: &str) -> Result<Report, String> {
    let mut out = Report::default();
    let mut keys = BTreeSet::new();
    let mut finished = false;
    let mut unread = Vec::new();
    for line in stdout.lines().map(str::trim).filter(|l| l.starts_with('{')) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v.get("checked").and_then(Value::as_u64).is_some() {
            finished = true;
        } else if let Some(file) = str_at(&v, "/file") {
            out.seen += 1;
            let location = Some(at(file, v.get("line").and_then(Value::as_u64)));
            let message = str_at(&v, "/message");
            out.push(
                &mut keys,
                finding("error", None, Some("syntax-error"), location, message),
            );
        } else if let Some(file) = str_at(&v, "/unread") {
            unread.push(format!(
                "{file} ({})",
                str_at(&v, "/why").unwrap_or("unknown")
            ));
        }
    }
    if !unread.is_empty() {
        out.incomplete.push(format!(
            "the Python syntax check could not compile {} file(s): {}",
            unread.len(),
            head(&unread.join(", "), MESSAGE_BYTES)
        ));
    }
    if !finished {
        if out.seen == 0 && unread.is_empty() && !stdout.trim().is_empty() {
            return Err("not the syntax check's output".into());
        }
        out.incomplete
            .push("the Python syntax check did not finish its walk".into());
    }
    Ok(out)
}

/// ruff's `--output-format=json`: an array of diagnostics. ruff gives every rule the same
/// severity, so each is a warning. Its syntax errors are left to the Python syntax check (one
/// per file, by the interpreter itself); an unreadable file (`E902`) is incomplete.
fn ruff(stdout: &str, dir: &Path) -> Result<Report, String> {
    let value = json(stdout)?;
    let items = value.as_array().ok_or("not a JSON array of diagnostics")?;
    let mut out = Report::default();
    let mut keys = BTreeSet::new();
    let mut unreadable = Vec::new();
    for item in items {
        out.seen += 1;
        let code = str_at(item, "/code");
        let file = str_at(item, "/filename").map(|f| relative(f, dir));
        let message = str_at(item, "/message");
        match code {
            None | Some("invalid-syntax" | "E999") => continue,
            Some("E902") => {
                unreadable.push(file.unwrap_or_else(|| "?".into()));
                continue;
            }
            Some(_) => {}
        }
        let line = item.pointer("/location/row").and_then(Value::as_u64);
        let location = file.map(|f| at(&f, line));
        out.push(&mut keys, finding("warning", None, code, location, message));
    }
    if !unreadable.is_empty() {
        out.incomplete.push(format!(
            "ruff could not read {} file(s): {}",
            unreadable.len(),
            head(&unreadable.join(", "), MESSAGE_BYTES)
        ));
    }
    Ok(out)
}

/// bandit's `-f json` report: each result's `issue_severity` is its security bucket (HIGH →
/// high, MEDIUM → medium, LOW → low), its level error, warning, note alike; a file bandit could
/// not scan (its `errors`) is incomplete.
fn bandit(stdout: &str) -> Result<Report, String> {
    let value = json(stdout)?;
    let results = value
        .get("results")
        .and_then(Value::as_array)
        .ok_or("no `results` array: not a bandit report")?;
    let mut out = Report::default();
    let mut keys = BTreeSet::new();
    for r in results {
        out.seen += 1;
        let (level, security) = match str_at(r, "/issue_severity") {
            Some(s) if s.eq_ignore_ascii_case("high") => ("error", Some("high")),
            Some(s) if s.eq_ignore_ascii_case("medium") => ("warning", Some("medium")),
            Some(s) if s.eq_ignore_ascii_case("low") => ("note", Some("low")),
            _ => ("note", None),
        };
        let file = str_at(r, "/filename").map(|f| f.strip_prefix("./").unwrap_or(f));
        let location = file.map(|f| at(f, r.get("line_number").and_then(Value::as_u64)));
        let rule = str_at(r, "/test_id");
        let message = str_at(r, "/issue_text");
        out.push(&mut keys, finding(level, security, rule, location, message));
    }
    let errors: Vec<String> = value
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            format!(
                "{} ({})",
                str_at(e, "/filename").unwrap_or("?"),
                str_at(e, "/reason").unwrap_or("unknown")
            )
        })
        .collect();
    if !errors.is_empty() {
        out.incomplete.push(format!(
            "bandit could not scan {} file(s): {}",
            errors.len(),
            head(&errors.join(", "), MESSAGE_BYTES)
        ));
    }
    Ok(out)
}

/// A path the Go tools never read as the package's own: under `vendor/` or `testdata/`, or a
/// file or directory whose name starts with `.` or `_`.
fn go_ignores(path: &str) -> bool {
    path.split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .any(|p| p == "vendor" || p == "testdata" || p.starts_with('.') || p.starts_with('_'))
}

/// `gofmt -l -e`: each file on stdout is not formatted (a warning); each `file:line:col: msg`
/// on stderr a parse error, the first of each file kept (the rest follow from it); any other
/// line on stderr is incomplete.
fn gofmt(stdout: &str, stderr: &str) -> Report {
    let mut out = Report::default();
    let mut keys = BTreeSet::new();
    let mut broken = BTreeSet::new();
    let mut other = Vec::new();
    for line in stderr.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Some((file, line_no, message)) = go_position(line) else {
            other.push(line);
            continue;
        };
        let file = file.strip_prefix("./").unwrap_or(file);
        if go_ignores(file) || !broken.insert(file.to_string()) {
            continue;
        }
        out.seen += 1;
        let location = Some(at(file, Some(line_no)));
        out.push(
            &mut keys,
            finding("error", None, Some("syntax-error"), location, Some(message)),
        );
    }
    for file in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let file = file.strip_prefix("./").unwrap_or(file);
        if go_ignores(file) {
            continue;
        }
        out.seen += 1;
        let message = Some("not formatted as gofmt formats it");
        out.push(
            &mut keys,
            finding(
                "warning",
                None,
                Some("gofmt"),
                Some(file.to_string()),
                message,
            ),
        );
    }
    if !other.is_empty() {
        out.incomplete
            .push(format!("gofmt: {}", head(&other.join("; "), MESSAGE_BYTES)));
    }
    out
}

/// `file:line:col: message` (the file may hold `:`).
fn go_position(line: &str) -> Option<(&str, u64, &str)> {
    let (place, message) = line.split_once(": ")?;
    let mut parts = place.rsplitn(3, ':');
    let _col: u64 = parts.next()?.parse().ok()?;
    let line_no: u64 = parts.next()?.parse().ok()?;
    let file = parts.next().filter(|f| !f.is_empty())?;
    Some((file, line_no, message))
}

/// ESLint's `-f json`: per file, its messages; severity 2 is an error, 1 a warning. A file it
/// could not parse is a fatal error with no rule (`parse-error`).
fn eslint(stdout: &str, dir: &Path) -> Result<Report, String> {
    let value = json(stdout)?;
    let files = value
        .as_array()
        .ok_or("not a JSON array of ESLint results")?;
    let mut out = Report::default();
    let mut keys = BTreeSet::new();
    for file in files {
        let path = str_at(file, "/filePath").map(|p| relative(p, dir));
        for m in file
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let level = match m.get("severity").and_then(Value::as_u64) {
                Some(2) => "error",
                Some(1) => "warning",
                _ => continue,
            };
            out.seen += 1;
            let fatal = m.get("fatal").and_then(Value::as_bool) == Some(true);
            let rule = str_at(m, "/ruleId").or(fatal.then_some("parse-error"));
            let line = m.get("line").and_then(Value::as_u64);
            let location = path.as_deref().map(|p| at(p, line));
            let message = str_at(m, "/message");
            out.push(&mut keys, finding(level, None, rule, location, message));
        }
    }
    Ok(out)
}

/// tsc's `--pretty false` lines `file(line,col): error TSnnnn: message`, each an error; an
/// error of no file (`error TS18003: No inputs were found…`) says the project could not be
/// checked: incomplete.
fn tsc(stdout: &str) -> Report {
    let mut out = Report::default();
    let mut keys = BTreeSet::new();
    for line in stdout.lines() {
        if let Some(global) = line.trim().strip_prefix("error TS") {
            out.incomplete
                .push(format!("tsc: error TS{}", head(global, MESSAGE_BYTES)));
            continue;
        }
        let Some(at_error) = line.find("): error TS") else {
            continue;
        };
        let place = &line[..at_error];
        let Some(open) = place.rfind('(') else {
            continue;
        };
        let file = &place[..open];
        let line_no = place[open + 1..]
            .split(',')
            .next()
            .and_then(|l| l.trim().parse().ok());
        let rest = &line[at_error + "): error ".len()..];
        let (rule, message) = rest.split_once(':').unwrap_or((rest, ""));
        out.seen += 1;
        let location = Some(at(file.trim(), line_no));
        out.push(
            &mut keys,
            finding(
                "error",
                None,
                Some(rule.trim()),
                location,
                Some(message).filter(|m| !m.trim().is_empty()),
            ),
        );
    }
    out
}

/// A SARIF log ([`sarif::read_log`]); a run saying `executionSuccessful: false`, or an
/// `error`-level tool notification (semgrep's invalid rules), is incomplete.
fn sarif_log(stdout: &str) -> Result<Report, String> {
    if stdout.trim().is_empty() {
        return Err("it printed no report".into());
    }
    let log = sarif::read_log(stdout)?;
    let mut out = Report {
        seen: log.findings.len(),
        ..Report::default()
    };
    let mut keys = BTreeSet::new();
    for f in log.findings {
        out.push(&mut keys, f);
    }
    if log.incomplete {
        out.incomplete
            .push("the SARIF log says its tool did not finish".into());
    }
    if stdout.contains("toolExecutionNotifications") {
        let errors = tool_errors(stdout);
        if !errors.is_empty() {
            out.incomplete.push(format!(
                "the tool reported {} error(s): {}",
                errors.len(),
                head(&errors.join("; "), MESSAGE_BYTES)
            ));
        }
    }
    Ok(out)
}

/// The messages of a SARIF log's `error`-level tool execution notifications.
fn tool_errors(text: &str) -> Vec<String> {
    let Ok(log) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let runs = log.get("runs").and_then(Value::as_array);
    runs.into_iter()
        .flatten()
        .filter_map(|run| run.get("invocations").and_then(Value::as_array))
        .flatten()
        .filter_map(|i| {
            i.get("toolExecutionNotifications")
                .and_then(Value::as_array)
        })
        .flatten()
        .filter(|n| str_at(n, "/level") == Some("error"))
        .map(|n| {
            str_at(n, "/message/text")
                .unwrap_or("no message")
                .to_string()
        })
        .collect()
}
