//! Following files another writer appends to: the newest run's `events.jsonl` (a run started
//! here or in another terminal) and the selected node's dispatch log, each from a kept offset,
//! whole lines only.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::exec::dispatch::DispatchPaths;
use crate::model::Bead;

use super::super::model::Msg;

/// The most of a file read in one go (a log's beginning beyond this is skipped).
const MAX_READ: u64 = 256 * 1024;

/// A file read from a kept offset; a line not yet ended waits for the next read.
pub struct Tail {
    pub path: PathBuf,
    offset: u64,
}

impl Tail {
    /// From the start (`from_end`: from the current end).
    pub fn new(path: PathBuf, from_end: bool) -> Tail {
        let offset = match from_end {
            true => std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
            false => 0,
        };
        Tail { path, offset }
    }

    /// The whole lines appended since the last read.
    pub fn lines(&mut self) -> Vec<String> {
        let Ok(mut file) = std::fs::File::open(&self.path) else {
            return Vec::new();
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < self.offset {
            // Replaced or truncated: start again.
            self.offset = 0;
        }
        if len.saturating_sub(self.offset) > MAX_READ {
            self.offset = len - MAX_READ;
        }
        let mut buf = Vec::new();
        let read = file
            .seek(SeekFrom::Start(self.offset))
            .and_then(|_| file.take(MAX_READ).read_to_end(&mut buf));
        if read.is_err() {
            return Vec::new();
        }
        let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
            return Vec::new();
        };
        self.offset += end as u64 + 1;
        String::from_utf8_lossy(&buf[..end])
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// The run being watched: the newest directory under `.splice/runs/` with an `events.jsonl`.
pub struct RunFollower {
    runs_dir: PathBuf,
    run: Option<String>,
    tail: Option<Tail>,
}

impl RunFollower {
    /// Watch the newest run if it is still live (its runner recorded in `state_dir`), from its
    /// start; an ended one is passed over.
    pub fn new(runs_dir: PathBuf, state_dir: &Path) -> RunFollower {
        let mut f = RunFollower {
            runs_dir,
            run: None,
            tail: None,
        };
        if let Some(run) = f.newest() {
            let live = crate::authority::presence::live_records(state_dir)
                .iter()
                .any(|r| r.run == run);
            f.tail = Some(Tail::new(f.events_path(&run), !live));
            f.run = Some(run);
        }
        f
    }

    fn events_path(&self, run: &str) -> PathBuf {
        self.runs_dir.join(run).join("events.jsonl")
    }

    /// The run whose `events.jsonl` changed last.
    fn newest(&self) -> Option<String> {
        let entries = std::fs::read_dir(&self.runs_dir).ok()?;
        entries
            .flatten()
            .filter_map(|e| {
                let events = e.path().join("events.jsonl");
                let modified = std::fs::metadata(&events).ok()?.modified().ok()?;
                Some((modified, e.file_name().to_string_lossy().into_owned()))
            })
            .max()
            .map(|(_, run)| run)
    }

    /// What the watched run reported since the last poll, a newer run taken up first
    /// (`background`: a run of this cockpit is going).
    pub fn poll(&mut self, background: bool) -> Vec<Msg> {
        let mut msgs = Vec::new();
        if let Some(newest) = self.newest()
            && self.run.as_deref() != Some(&newest)
        {
            self.tail = Some(Tail::new(self.events_path(&newest), false));
            msgs.push(Msg::RunStarted {
                run: newest.clone(),
                background,
            });
            self.run = Some(newest);
        }
        let Some(tail) = self.tail.as_mut() else {
            return msgs;
        };
        for line in tail.lines() {
            let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            let end =
                (event["type"] == "result").then(|| event["status"].as_str().map(str::to_string));
            msgs.push(Msg::RunEvent(event));
            if let Some(status) = end {
                msgs.push(Msg::RunEnded {
                    status: status.unwrap_or_else(|| "ended".into()),
                });
            }
        }
        msgs
    }
}

/// The dispatch log of `bead`'s dispatch in flight: `.splice/runs/<run>/<bead>-<step>-<attempt>.log`
/// of the run that holds its claim. `None` when it has no runner's claim.
pub fn dispatch_log(runs_dir: &Path, bead: &Bead) -> Option<PathBuf> {
    let lease = bead.pipeline.lease.as_ref()?;
    let mut parts = lease.holder.splitn(4, ':');
    if parts.next() != Some("run") {
        return None;
    }
    let run = parts.nth(2)?;
    let step = &bead.pipeline.step;
    let attempt = bead.pipeline.attempts.get(step).copied().unwrap_or(1);
    DispatchPaths::new(runs_dir, run, &bead.id, step, attempt)
        .ok()
        .map(|p| p.log)
}

/// The selected node's log, followed while it is selected.
#[derive(Default)]
pub struct LogFollower {
    tail: Option<Tail>,
}

impl LogFollower {
    /// New lines of `log` (another path than before: read from its start), put in words.
    pub fn poll(&mut self, log: Option<PathBuf>) -> Option<Msg> {
        let log = log?;
        if self.tail.as_ref().is_none_or(|t| t.path != log) {
            self.tail = Some(Tail::new(log, false));
        }
        let lines: Vec<String> = self
            .tail
            .as_mut()?
            .lines()
            .iter()
            .filter_map(|l| in_words(l))
            .collect();
        (!lines.is_empty()).then_some(Msg::LogLines(lines))
    }
}

/// HOOK(exec::progress): a dispatch log's line in words. Claude's stream-json lines are to be
/// turned into words by `exec::progress` (another part of issue 14); until it lands the line is
/// passed as it is, blank lines dropped.
fn in_words(line: &str) -> Option<String> {
    let line = line.trim_end();
    (!line.is_empty()).then(|| line.to_string())
}
