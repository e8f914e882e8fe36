//! A sandboxed dispatch's verbs (issue 31): how an agent whose sandbox keeps `.splice/`
//! read-only still runs `splice transition propose|split|resplit`, synchronously, with the
//! output and exit code the local verb gives.
//!
//! The dispatch's environment names its inbox (`SPLICE_INBOX`, `runs/<run>/<dispatch>/inbox/`,
//! the one directory under `.splice/` its sandbox may write). The command checks its
//! arguments as the local verb does, writes one [`Request`] there (`<name>.request.json`,
//! made whole by a rename) and waits, at most [`WAIT`], for `<name>.answer.json`. The runner
//! that dispatched it serves the inbox while the dispatch runs ([`serve`]): each request is
//! read (no link followed, a regular file, at most [`MAX_REQUEST`] bytes), removed, and applied
//! through the same verb functions as the command line, as [`Who::Proposed`] with the
//! dispatch's own credential. What the request says is only the verb and its arguments: the
//! store, the bead, the holder and the authority come from the runner's record of the dispatch
//! whose inbox it arrived in, so a request naming another bead is refused. Records it makes are
//! journaled with actor `agent`.
//!
//! The request and the answer are agent-writable files: the runner never follows a link at
//! either (an answer is written to a fresh temporary file and renamed over whatever is there).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::proposals::{Call, Line};
use super::{Ctx, Who, propose, resplit, split};
use crate::error::{Error, Result};

/// The environment variable naming a sandboxed dispatch's inbox.
pub const ENV: &str = "SPLICE_INBOX";
/// The version of the request and answer format.
pub const VERSION: u64 = 1;
/// The most a request may hold, in bytes (a split's children inline).
pub const MAX_REQUEST: u64 = 16 * 1024 * 1024;
/// How long a command waits for the runner's answer.
pub const WAIT: Duration = Duration::from_secs(300);
/// How often the runner looks at an inbox, and a command for its answer.
pub const POLL: Duration = Duration::from_millis(20);

const REQUEST: &str = ".request.json";
const ANSWER: &str = ".answer.json";

/// One verb a sandboxed agent called.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// [`VERSION`].
    pub v: u64,
    /// `propose`, `split` or `resplit`.
    pub verb: String,
    /// The bead the agent named: it must be the dispatch's.
    pub bead: String,
    /// The verb's arguments, as a proposal line carries them.
    pub args: Value,
}

/// The runner's answer: what the command prints and its exit code.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    pub v: u64,
    /// The exit code: 0 done, 1 refused, 2 a fault.
    pub code: i32,
    /// The verb's JSON output (or the check a refusal recorded), printed on stdout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The error, printed on stderr after `splice: `.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Request {
    /// The request for `call` on `bead`.
    pub fn new(call: &Call, bead: &str) -> Request {
        let line = Line::new(call, bead, &Default::default());
        Request {
            v: VERSION,
            verb: line.verb,
            bead: line.bead,
            args: line.args,
        }
    }

    /// Parse a request: its version, its fields, its verb's arguments (checked as a proposal
    /// line's are).
    pub fn parse(bytes: &[u8]) -> std::result::Result<(Request, Call), String> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        match value.get("v").and_then(Value::as_u64) {
            Some(VERSION) => {}
            Some(v) => return Err(format!("v: unknown version {v} (this splice reads 1)")),
            None => return Err("v: missing".into()),
        }
        let request: Request = serde_json::from_value(value).map_err(|e| e.to_string())?;
        // Its verb and arguments are a proposal line's, checked by the same code.
        let line = Line {
            v: super::proposals::VERSION,
            verb: request.verb.clone(),
            bead: request.bead.clone(),
            step: String::new(),
            attempt: 0,
            seq: 0,
            args: request.args.clone(),
            credential: String::new(),
        };
        Ok((request, line.call()?))
    }
}

/// Send `request` to the inbox at `inbox` and wait for the answer (the command's side).
pub fn send(inbox: &Path, request: &Request) -> Result<Answer> {
    let name = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    );
    let bytes = serde_json::to_vec(request).map_err(|e| Error::Internal(e.to_string()))?;
    let tmp = inbox.join(format!(".{name}.tmp"));
    write_new(&tmp, &bytes)?;
    let path = inbox.join(format!("{name}{REQUEST}"));
    std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
    let answer = inbox.join(format!("{name}{ANSWER}"));
    let deadline = Instant::now() + WAIT;
    loop {
        match crate::safe_read::read_optional(&answer, MAX_REQUEST) {
            Ok(Some(bytes)) => {
                let _ = std::fs::remove_file(&answer);
                return serde_json::from_slice(&bytes)
                    .map_err(|e| Error::bad_file(&answer, format!("not an answer: {e}")));
            }
            Ok(None) => {}
            Err(e) => return Err(e),
        }
        if Instant::now() >= deadline {
            let _ = std::fs::remove_file(&path);
            return Err(Error::Invalid(format!(
                "the runner did not answer the {} request in {}s (its inbox {}): it may have \
                 stopped; nothing was recorded",
                request.verb,
                WAIT.as_secs(),
                inbox.display()
            )));
        }
        std::thread::sleep(POLL);
    }
}

/// The dispatch whose inbox the runner serves, from its own record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    pub bead: String,
    /// The sha256 of the dispatch's credential (its claim's).
    pub credential_sha256: String,
}

/// What became of one request, for the dispatch's log.
#[derive(Clone, Debug, PartialEq)]
pub struct Served {
    pub verb: String,
    pub code: i32,
    pub error: Option<String>,
}

/// Answer every request now in `inbox`, in name order, through the writer: the store, clock
/// and run from `base`, the authority of `dispatch`'s credential.
pub fn serve(base: &Ctx, inbox: &Path, dispatch: &Dispatch) -> Vec<Served> {
    let Ok(listing) = std::fs::read_dir(inbox) else {
        return Vec::new();
    };
    let mut names: Vec<String> = listing
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(REQUEST) && !n.starts_with('.') && n.len() <= 200)
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let stem = &name[..name.len() - REQUEST.len()];
            let path = inbox.join(&name);
            let answer = answer_to(base, &path, dispatch);
            let _ = std::fs::remove_file(&path);
            let served = Served {
                verb: answer.0,
                code: answer.1.code,
                error: answer.1.error.clone(),
            };
            let bytes = serde_json::to_vec(&answer.1).unwrap_or_default();
            let tmp = inbox.join(format!(".{stem}.answer.{}.tmp", std::process::id()));
            let _ = std::fs::remove_file(&tmp);
            let written = write_new(&tmp, &bytes).and_then(|()| {
                let to = inbox.join(format!("{stem}{ANSWER}"));
                std::fs::rename(&tmp, &to).map_err(|e| Error::io(&to, e))
            });
            if written.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            served
        })
        .collect()
}

/// The verb of the request at `path` and the answer to it.
fn answer_to(base: &Ctx, path: &Path, dispatch: &Dispatch) -> (String, Answer) {
    let fault = |code: i32, e: String| Answer {
        v: VERSION,
        code,
        output: None,
        error: Some(e),
    };
    let bytes = match crate::safe_read::read_optional(path, MAX_REQUEST) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return (
                "?".into(),
                fault(2, format!("{}: vanished", path.display())),
            );
        }
        Err(e) => return ("?".into(), fault(2, e.to_string())),
    };
    let (request, call) = match Request::parse(&bytes) {
        Ok(parsed) => parsed,
        Err(why) => {
            let e = Error::bad_file(path, format!("not a request: {why}"));
            return ("?".into(), fault(2, e.to_string()));
        }
    };
    if request.bead != dispatch.bead {
        let e = crate::refusal::Refusal::NotYourBead {
            verb: request.verb.clone(),
            bead: request.bead.clone(),
        };
        return (request.verb, fault(1, Error::Refused(e).to_string()));
    }
    let (_, expect_seq, run) = call.common();
    let ctx = Ctx {
        who: Who::Proposed {
            credential: dispatch.credential_sha256.clone(),
        },
        holder: None,
        expect_seq,
        run: run.cloned().or_else(|| base.run.clone()),
        ..base.clone()
    };
    let done = apply(&ctx, &dispatch.bead, call);
    let answer = match done {
        Ok(output) => Answer {
            v: VERSION,
            code: 0,
            output: Some(output),
            error: None,
        },
        Err(e) => {
            let checked = match &e {
                Error::Refused(r) => r.checked().and_then(|c| serde_json::to_value(c).ok()),
                _ => None,
            };
            Answer {
                v: VERSION,
                code: e.exit_code(),
                output: checked,
                error: Some(e.to_string()),
            }
        }
    };
    (request.verb, answer)
}

/// Call the verb as the command line would; its output as JSON.
fn apply(ctx: &Ctx, bead: &str, call: Call) -> Result<Value> {
    let json = |v: std::result::Result<Value, serde_json::Error>| {
        v.map_err(|e| Error::Internal(e.to_string()))
    };
    match call {
        Call::Propose(a) => {
            let args = propose::ProposeArgs {
                step: a.step,
                artifact: a.artifact,
                result: a.result,
                pr_url: a.pr_url,
                confidence: a.confidence,
            };
            json(serde_json::to_value(propose::propose(ctx, bead, args)?))
        }
        Call::Split(a) => json(serde_json::to_value(split::split(ctx, bead, &a.children)?)),
        Call::Resplit(a) => json(serde_json::to_value(resplit::resplit(
            ctx,
            bead,
            &a.children,
        )?)),
    }
}

/// Create `path` (never through a link, never over a file) holding `bytes`.
fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    file.write_all(bytes).map_err(|e| Error::io(path, e))
}

/// The inbox named by the environment, when this is a sandboxed dispatch.
pub fn from_env() -> Option<PathBuf> {
    std::env::var_os(ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}
