//! `splice logs [ID] [--follow]`: the dispatch logs a run keeps under
//! `.splice/runs/<run>/<bead>-<step>-<attempt>.log`, newest first — a node's, across the runs
//! kept (`[runs] keep`), or without ID every dispatch of the latest run. `--follow` prints the
//! newest one and keeps printing what is appended to it until its dispatch ends: when the node's
//! claim no longer names that log (`exec::dispatch::in_flight_log`), or at once when it already
//! ended. Lines are printed as written, control characters escaped. A bead that cannot be read
//! (caught half written by hand) is read again at the next poll, and refused after 3 s of it.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::{Global, output};
use crate::error::{Error, Result};
use crate::exec::dispatch::in_flight_log;
use crate::store::Store;

/// How often `--follow` looks at the log and the node's claim.
const POLL: Duration = Duration::from_millis(200);

/// How many polls in a row the node's bead may fail to read before `--follow` refuses it (3 s):
/// a person's editor writing it in place can be caught half way, and the next poll reads it whole.
const UNREADABLE_POLLS: u32 = 15;

/// Print the dispatch logs of a node (or of the latest run), newest first.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The node whose logs to print; without it, every dispatch of the latest run.
    #[arg(value_name = "ID")]
    pub id: Option<String>,
    /// Print the newest log and what is appended to it until its dispatch ends (or Ctrl-C).
    #[arg(long, short = 'f', conflicts_with = "json")]
    pub follow: bool,
    /// Print JSON: `{"schema_version", "bead", "logs": [{"path", "run", "bead", "step",
    /// "attempt", "retry", "bytes"}]}`, newest first, without the logs' text (docs/cli.md).
    #[arg(long)]
    pub json: bool,
}

/// One dispatch log.
#[derive(Serialize, Debug, Clone)]
struct Log {
    /// Relative to the repository root.
    path: String,
    run: String,
    bead: String,
    step: String,
    attempt: u32,
    /// Which try of the attempt: 0 for its first, n for the n-th retry after a transient end
    /// (`<bead>-<step>-<attempt>.<n>.log`).
    retry: u32,
    bytes: u64,
    #[serde(skip)]
    file: PathBuf,
    #[serde(skip)]
    modified: Option<SystemTime>,
}

#[derive(Serialize, Debug)]
struct Listing<'a> {
    schema_version: u32,
    bead: Option<&'a str>,
    logs: &'a [Log],
}

pub fn run(global: &Global, args: Args) -> Result<i32> {
    let store = Store::discover(global.dir.as_deref())?;
    if let Some(id) = &args.id {
        store.read_bead(id)?;
    }
    let steps: Vec<String> = store
        .manifest()?
        .steps
        .iter()
        .map(|s| s.name.clone())
        .collect();
    let logs = find(&store, args.id.as_deref(), &steps)?;
    if args.json {
        output::print_json(&Listing {
            schema_version: output::OUTPUT_SCHEMA,
            bead: args.id.as_deref(),
            logs: &logs,
        });
        return Ok(0);
    }
    let Some(newest) = logs.first() else {
        output::out(&match &args.id {
            Some(id) => format!("no dispatch logs of {id} in the runs kept\n"),
            None => none_in_the_latest_run(&store, &steps)?,
        });
        return Ok(0);
    };
    if args.follow {
        return follow(&store, newest);
    }
    for log in &logs {
        output::out(&header(log));
        let text = crate::exec::agent_file::read(&log.file, crate::exec::agent_file::LOG)?
            .unwrap_or_default();
        output::out(&printable_lines(&String::from_utf8_lossy(&text)));
    }
    Ok(0)
}

/// What is the case when the latest run has no dispatch log: no run is kept, or the latest
/// dispatched nothing — and then which run kept did, if any (a run that finds every node at a
/// gate, say, comes after the runs that dispatched).
fn none_in_the_latest_run(store: &Store, steps: &[String]) -> Result<String> {
    let mut runs = dirs(&store.runs_dir())?;
    runs.sort_by(|a, b| (b.1, &b.0).cmp(&(a.1, &a.0)));
    let Some((latest, _)) = runs.first() else {
        return Ok(format!(
            "no dispatch logs: no run is kept in {}/runs\n",
            crate::store::STATE_DIR
        ));
    };
    let mut line = format!("no dispatch logs in the latest run, {latest}: it dispatched nothing");
    for (run, _) in &runs[1..] {
        if !logs_in(store, run, None, steps)?.is_empty() {
            line.push_str(&format!(
                "; the latest run that dispatched is {run} (`splice logs ID` prints a node's \
                 logs in every run kept)"
            ));
            break;
        }
    }
    Ok(format!("{}\n", output::printable(&line)))
}

/// `== PATH (BEAD STEP attempt N[ retry R], run RUN) ==`, escaped: a run directory may be
/// named anything.
fn header(log: &Log) -> String {
    let retry = if log.retry > 0 {
        format!(" retry {}", log.retry)
    } else {
        String::new()
    };
    let line = format!(
        "== {} ({} {} attempt {}{retry}, run {}) ==",
        log.path, log.bead, log.step, log.attempt, log.run
    );
    format!("{}\n", output::printable(&line))
}

/// Each line escaped ([`output::printable`]), ended with a newline.
fn printable_lines(text: &str) -> String {
    text.lines()
        .map(|l| format!("{}\n", output::printable(l)))
        .collect()
}

/// The logs of `bead` in every run kept, or every log of the latest run; newest first.
fn find(store: &Store, bead: Option<&str>, steps: &[String]) -> Result<Vec<Log>> {
    let runs_dir = store.runs_dir();
    let mut runs = dirs(&runs_dir)?;
    if bead.is_none() {
        // The latest run: the one written last (a run id sorts by time too).
        runs.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        runs = runs.split_off(runs.len().saturating_sub(1));
    }
    let mut logs = Vec::new();
    for (run, _) in runs {
        logs.extend(logs_in(store, &run, bead, steps)?);
    }
    logs.sort_by(|a, b| {
        (b.modified, &b.run, b.attempt, b.retry, &b.bead)
            .cmp(&(a.modified, &a.run, a.attempt, a.retry, &a.bead))
    });
    Ok(logs)
}

/// The dispatch logs in the run directory `run` (of `bead`, or every one), in no order.
fn logs_in(store: &Store, run: &str, bead: Option<&str>, steps: &[String]) -> Result<Vec<Log>> {
    let dir = store.runs_dir().join(run);
    let mut logs = Vec::new();
    for entry in std::fs::read_dir(&dir)
        .map_err(|e| Error::io(&dir, e))?
        .flatten()
    {
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        let Some((id, step, (attempt, retry))) = parse_name(&name, steps) else {
            continue;
        };
        if bead.is_some_and(|b| b != id) {
            continue;
        }
        let meta = entry.metadata().ok().filter(|m| m.is_file());
        let Some(meta) = meta else { continue };
        logs.push(Log {
            path: format!("{}/runs/{run}/{name}", crate::store::STATE_DIR),
            run: run.to_string(),
            bead: id.to_string(),
            step: step.to_string(),
            attempt,
            retry,
            bytes: meta.len(),
            file: entry.path(),
            modified: meta.modified().ok(),
        });
    }
    Ok(logs)
}

/// The run directories under `runs`, with when each was last written.
fn dirs(runs: &Path) -> Result<Vec<(String, Option<SystemTime>)>> {
    let entries = match std::fs::read_dir(runs) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(runs, e)),
    };
    Ok(entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let modified = e.metadata().and_then(|m| m.modified()).ok();
            Some((e.file_name().into_string().ok()?, modified))
        })
        // Not runs: the runners' records and the agents' homes (written by every dispatch).
        .filter(|(name, _)| {
            name != "runners"
                && name != crate::sandbox::places::AGENT_HOME
                && name != crate::floors::confine::FLOORS_DIR
                && name != crate::driver::looping::verify::BASELINES_DIR
        })
        .collect())
}

/// `<bead>-<step>-<attempt>[.<retry>].log`: its bead, step (one of `steps`: the longest that
/// fits, since both may hold `-`), attempt and retry (0 when the name has none).
fn parse_name<'a>(name: &'a str, steps: &'a [String]) -> Option<(&'a str, &'a str, (u32, u32))> {
    let (stem, attempt) = name.strip_suffix(".log")?.rsplit_once('-')?;
    let (attempt, retry) = match attempt.split_once('.') {
        Some((attempt, retry)) => (attempt.parse().ok()?, retry.parse().ok()?),
        None => (attempt.parse().ok()?, 0),
    };
    let step = steps
        .iter()
        .filter(|s| {
            stem.strip_suffix(s.as_str())
                .is_some_and(|rest| rest.len() > 1 && rest.ends_with('-'))
        })
        .max_by_key(|s| s.len())?;
    let bead = &stem[..stem.len() - step.len() - 1];
    crate::model::id::is_valid(bead).then_some((bead, step.as_str(), (attempt, retry)))
}

/// Print `log` and what is appended to it while its dispatch is in flight; then the rest.
fn follow(store: &Store, log: &Log) -> Result<i32> {
    output::out(&header(log));
    let mut offset = 0;
    let mut pending = Vec::new();
    let mut unreadable = 0;
    loop {
        let in_flight = match store.read_bead_file(&log.bead) {
            Ok(bead) => {
                unreadable = 0;
                bead.and_then(|b| in_flight_log(&store.runs_dir(), &b))
                    .is_some_and(|p| p == log.file)
            }
            Err(e) if unreadable + 1 >= UNREADABLE_POLLS => return Err(e),
            // Caught half written, perhaps: still in flight until a poll reads it whole.
            Err(_) => {
                unreadable += 1;
                true
            }
        };
        offset = read_from(&log.file, offset, &mut pending)?;
        // Whole lines only while it runs; the last line, ended or not, once it ended.
        let cut = match in_flight {
            true => pending
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1),
            false => pending.len(),
        };
        let ready: Vec<u8> = pending.drain(..cut).collect();
        output::out(&printable_lines(&String::from_utf8_lossy(&ready)));
        if !in_flight {
            return Ok(0);
        }
        std::thread::sleep(POLL);
    }
}

/// Append what `path` holds past `offset` to `into`; returns the new offset.
fn read_from(path: &Path, offset: u64, into: &mut Vec<u8>) -> Result<u64> {
    // The agent can replace its log (a FIFO would hang here): opened as an agent's file.
    let mut file = crate::safe_read::open(path).map_err(|u| u.at(path))?;
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| Error::io(path, e))?;
    let n = file.read_to_end(into).map_err(|e| Error::io(path, e))?;
    Ok(offset + n as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_name;

    #[test]
    fn a_log_name_gives_its_bead_step_and_attempt() {
        let steps = [
            "spec".to_string(),
            "generate-spec".into(),
            "implement".into(),
        ];
        assert_eq!(
            parse_name("sp-a.1-generate-spec-2.log", &steps),
            Some(("sp-a.1", "generate-spec", (2, 0)))
        );
        assert_eq!(
            parse_name("bd-x-y-implement-10.log", &steps),
            Some(("bd-x-y", "implement", (10, 0)))
        );
        assert_eq!(
            parse_name("sp-a.1-implement-2.3.log", &steps),
            Some(("sp-a.1", "implement", (2, 3))),
            "a retry after a transient end"
        );
        assert_eq!(parse_name("sp-a-implement-2.x.log", &steps), None);
        assert_eq!(parse_name("sp-a-implement-1.usage.json", &steps), None);
        assert_eq!(parse_name("sp-a-unknown-1.log", &steps), None);
        assert_eq!(parse_name("-implement-1.log", &steps), None);
    }
}
