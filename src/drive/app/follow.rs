//! Following files another writer appends to: the newest run's `events.jsonl` (a run started
//! here or in another terminal) and the selected node's dispatch log, each from a kept offset,
//! whole lines only.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

pub(super) use crate::exec::dispatch::in_flight_log as dispatch_log;

use super::super::model::Msg;
use crate::driver::events::Event;

/// The most of a file read in one go (a log's beginning beyond this is skipped).
const MAX_READ: u64 = 256 * 1024;

/// A file read from a kept offset; a line not yet ended waits for the next read.
pub(super) struct Tail {
    pub path: PathBuf,
    offset: u64,
}

impl Tail {
    /// From the start (`from_end`: from the current end).
    pub(super) fn new(path: PathBuf, from_end: bool) -> Tail {
        let offset = match from_end {
            true => std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
            false => 0,
        };
        Tail { path, offset }
    }

    /// The whole lines appended since the last read.
    pub(super) fn lines(&mut self) -> Vec<String> {
        // The journal is committed and `events.jsonl` beside an agent's files: a FIFO or a link
        // in their place is not opened (it would hang the cockpit).
        let Ok(mut file) = crate::safe_read::open(&self.path) else {
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
pub(super) struct RunFollower {
    runs_dir: PathBuf,
    run: Option<String>,
    tail: Option<Tail>,
}

impl RunFollower {
    /// Watch the newest run if it is still live (its runner recorded in `state_dir`), from its
    /// start; an ended one is passed over.
    pub(super) fn new(runs_dir: PathBuf, state_dir: &Path) -> RunFollower {
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

    /// What the watched run reported since the last poll, a newer run taken up first (`own`:
    /// whether a run was started by this cockpit).
    pub(super) fn poll(&mut self, own: impl FnOnce(&str) -> bool) -> Vec<Msg> {
        let mut msgs = Vec::new();
        if let Some(newest) = self.newest()
            && self.run.as_deref() != Some(&newest)
        {
            self.tail = Some(Tail::new(self.events_path(&newest), false));
            msgs.push(Msg::RunStarted {
                background: own(&newest),
                run: newest.clone(),
            });
            self.run = Some(newest);
        }
        let Some(tail) = self.tail.as_mut() else {
            return msgs;
        };
        // A line of no event this version knows (a newer run's kind, a torn or hostile line) is
        // passed over.
        for event in tail.lines().iter().filter_map(|l| Event::from_json_line(l)) {
            let end = match &event {
                Event::Result { status, .. } => Some(*status),
                _ => None,
            };
            msgs.push(Msg::RunEvent(Box::new(event)));
            if let Some(status) = end {
                msgs.push(Msg::RunEnded { status });
            }
        }
        msgs
    }
}

/// The selected node's log, followed while it is selected.
#[derive(Default)]
pub(super) struct LogFollower {
    tail: Option<Tail>,
}

impl LogFollower {
    /// New lines of `log` (another path than before: read from its start), put in words.
    pub(super) fn poll(&mut self, log: Option<PathBuf>) -> Option<Msg> {
        let log = log?;
        if self.tail.as_ref().is_none_or(|t| t.path != log) {
            self.tail = Some(Tail::new(log, false));
        }
        let lines: Vec<String> = self
            .tail
            .as_mut()?
            .lines()
            .iter()
            .filter_map(|l| crate::exec::progress::words(l))
            .collect();
        (!lines.is_empty()).then_some(Msg::LogLines(lines))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::model::bead::Lease;
    use crate::model::{Bead, RunStatus};

    fn append(path: &Path, text: &str) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    #[test]
    fn a_tail_gives_whole_lines_once_and_holds_back_a_line_not_yet_ended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        let mut tail = Tail::new(path.clone(), false);
        assert!(tail.lines().is_empty(), "no file yet");
        append(&path, "one\ntw");
        assert_eq!(tail.lines(), ["one"]);
        append(&path, "o\nthree\n");
        assert_eq!(tail.lines(), ["two", "three"]);
        assert!(tail.lines().is_empty());
        // Replaced by a shorter file: read from its start.
        std::fs::write(&path, "new\n").unwrap();
        assert_eq!(tail.lines(), ["new"]);
        // From the end: only what comes after.
        let mut late = Tail::new(path.clone(), true);
        append(&path, "later\n");
        assert_eq!(late.lines(), ["later"]);
    }

    fn run_file(runs: &Path, run: &str, lines: &[&str], age_s: u64) -> PathBuf {
        std::fs::create_dir_all(runs.join(run)).unwrap();
        let path = runs.join(run).join("events.jsonl");
        append(
            &path,
            &lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
        );
        let at = SystemTime::now() - Duration::from_secs(age_s);
        std::fs::File::options()
            .append(true)
            .open(&path)
            .unwrap()
            .set_modified(at)
            .unwrap();
        path
    }

    /// The `result` line a run ends with, at `status`.
    fn result(run: &str, status: RunStatus) -> String {
        Event::Result {
            subtype: "success".into(),
            is_error: false,
            interrupted: false,
            status,
            run: run.into(),
            num_passes: 1,
            dispatches: 0,
            tokens: 0,
            cost_usd: None,
            known_cost_usd: None,
            cost: None,
            duration_ms: 1000,
            text: "{}".into(),
        }
        .to_json_line()
    }

    fn note(text: &str) -> String {
        Event::Note { text: text.into() }.to_json_line()
    }

    #[test]
    fn the_newest_run_is_followed_to_its_end_and_an_ended_one_is_passed_over() {
        let state = tempfile::tempdir().unwrap();
        let runs = state.path().join("runs");
        let old = result("r-old", RunStatus::Done);
        run_file(
            &runs,
            "r-old",
            &[note("old").trim_end(), old.trim_end()],
            100,
        );
        // At start the newest run has no live runner: nothing is replayed.
        let mut f = RunFollower::new(runs.clone(), state.path());
        assert!(f.poll(|_| false).is_empty());

        // A run started elsewhere: taken up from its start, its events passed on, its end told.
        let path = run_file(&runs, "r-new", &[note("begun").trim_end()], 10);
        let msgs = f.poll(|_| false);
        assert_eq!(
            msgs[0],
            Msg::RunStarted {
                run: "r-new".into(),
                background: false
            }
        );
        assert!(
            matches!(&msgs[1], Msg::RunEvent(e) if **e == Event::Note { text: "begun".into() })
        );
        assert_eq!(msgs.len(), 2);
        let pass = Event::PassStart { pass: 1 }.to_json_line();
        let end = result("r-new", RunStatus::SuspendedHuman);
        append(&path, &format!("{pass}{end}"));
        let msgs = f.poll(|_| false);
        assert_eq!(msgs.len(), 3, "{msgs:?}");
        assert_eq!(
            msgs[2],
            Msg::RunEnded {
                status: RunStatus::SuspendedHuman
            }
        );
        assert!(f.poll(|_| false).is_empty());
    }

    #[test]
    fn a_line_of_no_known_event_is_passed_over_and_the_lines_after_it_are_read() {
        let state = tempfile::tempdir().unwrap();
        let runs = state.path().join("runs");
        let mut f = RunFollower::new(runs.clone(), state.path());
        let path = run_file(&runs, "r-1", &[], 10);
        assert_eq!(f.poll(|_| true).len(), 1, "the run is taken up");
        let hostile = [
            "not json".to_string(),
            "{\"type\":\"a_kind_from_a_newer_run\",\"pass\":1}".into(),
            // A result of a newer shape (or torn): no end is told from it.
            "{\"type\":\"result\",\"status\":\"done\"}".into(),
            "{\"type\":\"pass_end\",\"pass\":1,\"status\":\"finished\"}".into(),
            "{\"type\":\"pass_start\",\"pass\":-1}".into(),
            "[".repeat(100_000),
            "\u{0}\u{1b}[2J".into(),
        ];
        let mut text: String = hostile.iter().map(|l| format!("{l}\n")).collect();
        text.push_str(&note("still read"));
        append(&path, &text);
        // Bytes that are no UTF-8 at all.
        let mut bytes = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        bytes.write_all(b"\xff\xfe{\n").unwrap();
        append(&path, &result("r-1", RunStatus::Budget));
        let msgs = f.poll(|_| true);
        assert_eq!(
            msgs,
            [
                Msg::RunEvent(Box::new(Event::Note {
                    text: "still read".into()
                })),
                Msg::RunEvent(Box::new(
                    Event::from_json_line(&result("r-1", RunStatus::Budget)).unwrap()
                )),
                Msg::RunEnded {
                    status: RunStatus::Budget
                },
            ]
        );
    }

    #[test]
    fn a_nodes_dispatch_log_is_named_by_the_run_that_holds_its_claim() {
        let mut bead: Bead =
            serde_json::from_value(serde_json::json!({"id": "sp-a.1", "title": "t"})).unwrap();
        let runs = Path::new("/s/runs");
        assert_eq!(dispatch_log(runs, &bead), None, "no claim");
        bead.pipeline.step = "implement".into();
        bead.pipeline.attempts.insert("implement", 2);
        bead.pipeline.lease = Some(Box::new(Lease {
            holder: "run:host:42:20260101T000000Z-42-0".into(),
            since: String::new(),
            credential_sha256: None,
            job: None,
        }));
        assert_eq!(
            dispatch_log(runs, &bead),
            Some(runs.join("20260101T000000Z-42-0/sp-a.1-implement-2.log"))
        );
        bead.pipeline.lease.as_mut().unwrap().holder = "alice".into();
        assert_eq!(
            dispatch_log(runs, &bead),
            None,
            "a person's claim has no log"
        );
    }
}
