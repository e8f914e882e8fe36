//! The proposal-file protocol (issue 17): how an agent in a cluster job reports its work without
//! taking `.splice/`'s lock, and how the runner applies it through the writer.
//!
//! A cluster dispatch's environment names its proposal file (`SPLICE_PROPOSALS`, an absolute
//! path in the dispatch's output directory) and the bead's `seq` the job was handed
//! (`SPLICE_SEQ`). There `splice transition propose|split|resplit` checks its arguments as the
//! local verb does, then appends one [`Line`] ([`append`]) and touches nothing else. When the
//! job ends the runner calls [`apply_file`] with what it handed the job ([`Expected`]): each line
//! in order is parsed, checked against that (a bad credential is `forged`; another bead, step,
//! attempt or seq is `stale`; a line that does not parse is `malformed`) and applied through the
//! same verb functions the command line calls, as [`Who::Proposed`], so it meets every refusal
//! a local call would. Each line's [`Outcome`] is data for the dispatch's record.
//!
//! The line carries the credential itself, not its hash: it is the job's only authority, and
//! its hash is on the committed bead file, so the hash alone would let anyone forge a line.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::split::{ChildSpec, check_children};
use super::{Ctx, Who, propose, resplit, split};
use crate::authority::credential::sha256_hex;
use crate::error::{Error, Result};

/// The environment variable naming a cluster dispatch's proposal file.
pub const ENV: &str = "SPLICE_PROPOSALS";
/// The environment variable carrying the bead's `seq` the job was handed.
pub const SEQ_ENV: &str = "SPLICE_SEQ";
/// The version of the line format.
pub const VERSION: u64 = 1;
/// A proposal file larger than this is refused as a whole.
pub const MAX_FILE: u64 = 16 * 1024 * 1024;

/// One line of a proposal file: one verb the job's agent called.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Line {
    /// [`VERSION`].
    pub v: u64,
    /// `propose`, `split` or `resplit`.
    pub verb: String,
    /// The bead the agent named.
    pub bead: String,
    /// `SPLICE_STEP`, `SPLICE_ATTEMPT`, `SPLICE_SEQ`: what the job was handed.
    pub step: String,
    pub attempt: u32,
    pub seq: u64,
    /// The verb's arguments: [`ProposeLine`] or [`ChildrenLine`].
    pub args: Value,
    /// `SPLICE_CREDENTIAL`, the secret itself.
    pub credential: String,
}

/// A verb's arguments, as a line carries them.
#[derive(Clone, Debug, PartialEq)]
pub enum Call {
    Propose(ProposeLine),
    Split(ChildrenLine),
    Resplit(ChildrenLine),
}

/// `propose`'s arguments.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProposeLine {
    pub step: String,
    pub artifact: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// `split`'s and `resplit`'s arguments: the children inline.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ChildrenLine {
    pub children: Vec<ChildSpec>,
    /// `--holder`, `--expect-seq` and `--run`, when given (as in [`ProposeLine`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

impl Call {
    pub fn verb(&self) -> &'static str {
        match self {
            Call::Propose(_) => "propose",
            Call::Split(_) => "split",
            Call::Resplit(_) => "resplit",
        }
    }

    fn args(&self) -> Value {
        let value = match self {
            Call::Propose(a) => serde_json::to_value(a),
            Call::Split(a) | Call::Resplit(a) => serde_json::to_value(a),
        };
        value.unwrap_or(Value::Null)
    }

    /// `--holder`, `--expect-seq` and `--run` as given (only `--run` is used when the line is
    /// applied: see [`apply_line`]).
    pub(super) fn common(&self) -> (Option<&String>, Option<u64>, Option<&String>) {
        match self {
            Call::Propose(a) => (a.holder.as_ref(), a.expect_seq, a.run.as_ref()),
            Call::Split(a) | Call::Resplit(a) => (a.holder.as_ref(), a.expect_seq, a.run.as_ref()),
        }
    }
}

/// What the job was handed, as the job's environment said it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Handed {
    pub step: String,
    pub attempt: u32,
    pub seq: u64,
    pub credential: String,
}

impl Line {
    /// The line recording `call` on `bead` by a job handed `handed`.
    pub fn new(call: &Call, bead: &str, handed: &Handed) -> Line {
        Line {
            v: VERSION,
            verb: call.verb().to_string(),
            bead: bead.to_string(),
            step: handed.step.clone(),
            attempt: handed.attempt,
            seq: handed.seq,
            args: call.args(),
            credential: handed.credential.clone(),
        }
    }

    /// Parse one line of a proposal file: its version first, then its fields, then its verb's
    /// arguments. The error says what is wrong.
    pub fn parse(text: &str) -> std::result::Result<(Line, Call), String> {
        let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        match value.get("v").and_then(Value::as_u64) {
            Some(VERSION) => {}
            Some(v) => {
                return Err(format!(
                    "v: unknown version {v} (this splice reads {VERSION})"
                ));
            }
            None => return Err("v: missing (expected the line format's version, 1)".into()),
        }
        let line: Line = serde_json::from_value(value).map_err(|e| e.to_string())?;
        let call = line.call()?;
        Ok((line, call))
    }

    /// The verb's arguments, checked as the local verb checks them.
    pub(super) fn call(&self) -> std::result::Result<Call, String> {
        let args = |e: serde_json::Error| format!("args: {e}");
        let children = || -> std::result::Result<ChildrenLine, String> {
            let c: ChildrenLine = serde_json::from_value(self.args.clone()).map_err(args)?;
            check_children(&c.children).map_err(|e| match e.starts_with('[') {
                true => format!("args.children{e}"),
                false => format!("args.children: {e}"),
            })?;
            Ok(c)
        };
        match self.verb.as_str() {
            "propose" => Ok(Call::Propose(
                serde_json::from_value(self.args.clone()).map_err(args)?,
            )),
            "split" => Ok(Call::Split(children()?)),
            "resplit" => Ok(Call::Resplit(children()?)),
            other => Err(format!(
                "verb: unknown verb {other:?} (a proposal file records propose, split or resplit)"
            )),
        }
    }
}

/// Append `line` to the proposal file at `path`: created with mode 0600 when missing, never
/// through a link, in one write so that lines of concurrent calls do not interleave.
pub fn append(path: &Path, line: &Line) -> Result<()> {
    let mut text = serde_json::to_string(line).map_err(|e| Error::Internal(e.to_string()))?;
    text.push('\n');
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| open_error(path, e))?;
    if !file.metadata().map_err(|e| Error::io(path, e))?.is_file() {
        return Err(Error::bad_file(path, NOT_REGULAR));
    }
    file.write_all(text.as_bytes())
        .map_err(|e| Error::io(path, e))
}

const LINK: &str = "is a symbolic link; splice does not follow a link at a proposal file";
const NOT_REGULAR: &str = "is not a regular file (a FIFO, a device or a directory)";

fn open_error(path: &Path, e: std::io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::ELOOP) => Error::bad_file(path, LINK),
        Some(libc::ENXIO) => Error::bad_file(path, NOT_REGULAR),
        _ => Error::io(path, e),
    }
}

/// What the runner handed the job whose proposal file it applies: read from the claim and its
/// own record of the submission, never from the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    pub bead: String,
    pub step: String,
    pub attempt: u32,
    pub seq: u64,
    /// The sha256 of the dispatch's credential (the claim's `credential_sha256`).
    pub credential_sha256: String,
}

/// What became of one line. `kind` is `malformed`, `forged`, `stale`, `invalid` (arguments
/// the local verb refuses before reading: an empty artifact…), `fault` (the writer failed), or a
/// [`Refusal`](crate::Refusal)'s kind; `None` when the line was applied.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Outcome {
    /// 1-based.
    pub line: usize,
    /// The line's verb (`?` when the line did not say).
    pub verb: String,
    pub applied: bool,
    pub kind: Option<String>,
    /// Why it was refused, or what was done.
    pub message: Option<String>,
}

/// Apply the proposal file at `path`, line by line in order, through the writer: the caller's
/// store, clock and run from `base`, the authority of each line's credential. A missing file is
/// no proposals; a link at `path` is not followed and a file over [`MAX_FILE`] is not read, each
/// an error naming the file. A line refused does not stop the lines after it.
pub fn apply_file(base: &Ctx, path: &Path, expected: &Expected) -> Result<Vec<Outcome>> {
    let Some(text) = read_bounded(path)? else {
        return Ok(Vec::new());
    };
    let lines = text.split(|b| *b == b'\n').enumerate();
    let outcomes = lines
        .filter(|(_, bytes)| !bytes.iter().all(u8::is_ascii_whitespace))
        .map(|(i, bytes)| apply_line(base, i + 1, bytes, expected))
        .collect();
    Ok(outcomes)
}

/// The file's bytes, `None` when it does not exist.
fn read_bounded(path: &Path) -> Result<Option<Vec<u8>>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let file = match file {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(open_error(path, e)),
    };
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::bad_file(path, NOT_REGULAR));
    }
    let too_large = || {
        Error::bad_file(
            path,
            format!("is larger than {MAX_FILE} bytes; no proposal in it is applied"),
        )
    };
    if meta.len() > MAX_FILE {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(too_large());
    }
    Ok(Some(bytes))
}

/// Parse, check and apply line number `n`.
fn apply_line(base: &Ctx, n: usize, bytes: &[u8], expected: &Expected) -> Outcome {
    let refused = |verb: &str, kind: &str, message: String| Outcome {
        line: n,
        verb: verb.to_string(),
        applied: false,
        kind: Some(kind.to_string()),
        message: Some(message),
    };
    let parsed = std::str::from_utf8(bytes)
        .map_err(|e| format!("not UTF-8: {e}"))
        .and_then(Line::parse);
    let (line, call) = match parsed {
        Ok(parsed) => parsed,
        Err(why) => return refused(&said_verb(bytes), "malformed", format!("line {n}: {why}")),
    };
    let credential = sha256_hex(&line.credential);
    if credential != expected.credential_sha256 {
        let why = format!(
            "line {n}: its credential is not the one this job was handed for bead {}",
            expected.bead
        );
        return refused(&line.verb, "forged", why);
    }
    if let Some(differs) = stale(&line, expected) {
        return refused(&line.verb, "stale", format!("line {n}: {differs}"));
    }
    // The holder a line names is the one the job was dispatched under (`SPLICE_HOLDER`); a
    // runner that adopted the job holds its claim now. The credential, checked against the
    // claim under the lock, is the job's authority: it acts as the claim's holder. Its
    // compare-and-swap is the line's `seq`, checked above against the seq the job was handed
    // (the claim's own seq moves on with `record-job` and `adopt-job`).
    let (_, _, run) = call.common();
    let ctx = Ctx {
        who: Who::Proposed { credential },
        holder: None,
        expect_seq: None,
        run: run.cloned().or_else(|| base.run.clone()),
        ..base.clone()
    };
    match apply(&ctx, &line.bead, call) {
        Ok(done) => Outcome {
            line: n,
            verb: line.verb,
            applied: true,
            kind: None,
            message: Some(done),
        },
        Err(Error::Refused(r)) => refused(&line.verb, r.kind(), r.to_string()),
        Err(e @ (Error::Invalid(_) | Error::BadFile { .. })) => {
            refused(&line.verb, "invalid", e.to_string())
        }
        Err(e) => refused(&line.verb, "fault", e.to_string()),
    }
}

/// The verb a line that does not parse names, if it names one (`?` when it does not).
fn said_verb(bytes: &[u8]) -> String {
    let value: Option<Value> = serde_json::from_slice(bytes).ok();
    let verb = value.as_ref().and_then(|v| v.get("verb")?.as_str());
    verb.unwrap_or("?").to_string()
}

/// What differs between the line and what the job was handed, if anything.
fn stale(line: &Line, expected: &Expected) -> Option<String> {
    let mut differs = Vec::new();
    let mut compare = |what: &str, got: String, want: String| {
        if got != want {
            differs.push(format!("{what} {got}, but the job was handed {want}"));
        }
    };
    compare("bead", line.bead.clone(), expected.bead.clone());
    compare("step", line.step.clone(), expected.step.clone());
    compare(
        "attempt",
        line.attempt.to_string(),
        expected.attempt.to_string(),
    );
    compare("seq", line.seq.to_string(), expected.seq.to_string());
    (!differs.is_empty()).then(|| format!("the line names {}", differs.join("; ")))
}

/// Call the verb as the command line would, and say what it did.
fn apply(ctx: &Ctx, bead: &str, call: Call) -> Result<String> {
    match call {
        Call::Propose(a) => {
            let args = propose::ProposeArgs {
                step: a.step,
                artifact: a.artifact,
                result: a.result,
                pr_url: a.pr_url,
                confidence: a.confidence,
            };
            let done = propose::propose(ctx, bead, args)?;
            Ok(format!(
                "proposed {} for {} (seq {})",
                done.artifact, done.step, done.seq
            ))
        }
        Call::Split(a) => {
            let done = split::split(ctx, bead, &a.children)?;
            Ok(format!("split into {}", done.children.join(", ")))
        }
        Call::Resplit(a) => {
            let done = resplit::resplit(ctx, bead, &a.children)?;
            Ok(format!(
                "re-split into {}; superseded: {}",
                done.children.join(", "),
                done.superseded.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests;
