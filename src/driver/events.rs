//! Everything a run reports, as one typed [`Event`] enum, serialized in one place.
//!
//! The same events become human progress lines (`--output human`), one JSON object per line on
//! stdout (`--output stream-json`, the last a `result` whose `text` is the final envelope), or
//! nothing until the final envelope (`--output json`). Whatever the format, a run also appends
//! every event to `.splice/runs/<run>/events.jsonl` (DESIGN §3), so a run can be read back after
//! the fact. Each JSON event carries `type` first and `schema_version` last.
//!
//! Output to stdout never fails the run: a reader that went away (a closed pipe) loses the lines,
//! the run goes on and records its work as usual.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::bead::ExitKind;
use crate::model::envelope::ActionReport;
use crate::model::printable::{printable, printable_message};
use crate::model::{Limits, RunStatus, Usage};

/// The version of the event and envelope shapes.
pub const EVENT_SCHEMA: u32 = 1;

/// The output format of `splice run` / `splice pass` / `splice demo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Human,
    Json,
    StreamJson,
    /// Nothing at all (benchmarks).
    #[value(skip)]
    Quiet,
}

/// Whether a run's dispatches are sandboxed (issue 31, `docs/security.md`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Sandboxing {
    pub enforced: bool,
    /// The Landlock ABI enforced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landlock_abi: Option<i32>,
    /// Why the dispatches run unsandboxed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl Sandboxing {
    /// From a run's [`super::act::RunCtx::sandbox`].
    pub fn of(sandbox: &Result<i32, String>) -> Sandboxing {
        match sandbox {
            Ok(abi) => Sandboxing {
                enforced: true,
                landlock_abi: Some(*abi),
                why: None,
            },
            Err(why) => Sandboxing {
                enforced: false,
                landlock_abi: None,
                why: Some(why.clone()),
            },
        }
    }
}

/// One thing a run reports. Read back as it was written ([`Event::from_json_line`]: the
/// cockpit follows a run's `events.jsonl`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The run began.
    RunStart {
        run: String,
        holder: String,
        scope: Option<String>,
        limits: Limits,
        /// Whether its dispatches run in the kernel sandbox, at which Landlock ABI, or why not.
        sandbox: Sandboxing,
    },
    /// A pass began.
    PassStart { pass: u64 },
    /// An action of the pass's decision was carried out (or skipped), with how it went.
    Action { pass: u64, action: ActionReport },
    /// A pass ended with this status.
    PassEnd { pass: u64, status: RunStatus },
    /// A dispatch ended.
    DispatchEnd {
        bead: String,
        step: String,
        attempt: u32,
        exit: ExitKind,
        code: Option<i32>,
        /// Why it ended so, in a line (also on the bead's exit record).
        #[serde(skip_serializing_if = "Option::is_none")]
        cause: Option<String>,
        elapsed_ms: u64,
        usage: Option<Usage>,
        log: Option<PathBuf>,
        /// What went wrong around the dispatch (preparing it, or recording its exit).
        problem: Option<String>,
    },
    /// A loop step's iteration was measured and recorded: its state, score and the pass
    /// monitor's decision with the rule's evidence (`docs/monitor.md`).
    Iteration {
        bead: String,
        step: String,
        iteration: u32,
        state: crate::model::trajectory::IterationState,
        score: Option<i64>,
        monitor: Value,
    },
    /// A dispatch is still running (every 10 s while the run waits), and what its agent is
    /// doing as far as its log says ([`crate::exec::progress::latest`]; `null` when it says
    /// nothing yet).
    Progress {
        bead: String,
        step: String,
        attempt: u32,
        elapsed_s: u64,
        doing: Option<String>,
    },
    /// Nothing is in flight and a node waits before its next attempt: the run sleeps this
    /// long (less when its wall time ends first), then decides again.
    Waiting { wait_s: u64 },
    /// Something said to a person along the way (the demo's narration).
    Note { text: String },
    /// Something a person should know before trusting the run's result.
    Warning { text: String },
    /// The claim of a runner that died on this host was released, as the act of the person who
    /// asked for it (`by`: `--reclaim-dead` or `[limits] reclaim_dead`), so the node runs again.
    Reclaimed {
        bead: String,
        holder: String,
        died: crate::model::snapshot::Died,
        by: String,
    },
    /// Ctrl-C or SIGTERM stopped the run.
    Interrupted { run: String },
    /// The run ended; `text` is the final envelope as JSON.
    Result {
        subtype: String,
        is_error: bool,
        interrupted: bool,
        status: RunStatus,
        run: String,
        num_passes: u64,
        dispatches: u64,
        tokens: u64,
        /// The run's cost; `null` when unknown (or nothing reported usage).
        cost_usd: Option<f64>,
        /// The known part when some dispatches' costs are unknown.
        #[serde(skip_serializing_if = "Option::is_none")]
        known_cost_usd: Option<f64>,
        /// The cost as a person reads it: `$0.4200`, `$0.4200 + unknown`, `cost unknown`; `null`
        /// when nothing reported usage.
        cost: Option<String>,
        duration_ms: u64,
        text: String,
    },
}

/// The monitor's decision in a few words: its name and the evidence a person needs.
fn monitor_line(monitor: &Value) -> String {
    let name = monitor
        .get("decision")
        .and_then(Value::as_str)
        .unwrap_or("continue");
    let restore = monitor
        .pointer("/restore/iteration")
        .and_then(Value::as_u64)
        .map_or(String::new(), |n| format!(" to iteration {n}"));
    let scores: Vec<String> = monitor
        .get("scores")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.get("score").and_then(Value::as_i64))
                .map(|s| s.to_string())
                .collect()
        })
        .unwrap_or_default();
    format!("{name}{restore} (scores {})", scores.join(" → "))
}

impl Event {
    /// The line a person sees for this event, if any. What it quotes from beads, agents and
    /// tools (a step, a reason, what the agent is doing) is escaped ([`printable`]) and kept on
    /// its line; splice's narration (a note) keeps its own line breaks.
    pub fn human(&self) -> Option<String> {
        let line = self.words()?;
        Some(match self {
            Event::Note { .. } => printable_message(&line),
            _ => printable(&line),
        })
    }

    /// [`Event::human`]'s line, as it is.
    fn words(&self) -> Option<String> {
        Some(match self {
            Event::RunStart { run, .. } => format!("run {run} started"),
            Event::Action { action, .. } => super::envelope::describe_action(action),
            Event::DispatchEnd {
                bead,
                step,
                attempt,
                exit,
                cause,
                elapsed_ms,
                problem,
                ..
            } => format!(
                "{bead} {step} attempt {attempt} exited {exit:?} in {:.1}s{}{}",
                *elapsed_ms as f64 / 1000.0,
                cause.as_ref().map_or(String::new(), |c| format!(": {c}")),
                problem
                    .as_ref()
                    .map_or(String::new(), |p| format!(" ({p})"))
            ),
            Event::Iteration {
                bead,
                step,
                iteration,
                score,
                monitor,
                ..
            } => format!(
                "{bead} {step} iteration {iteration}: {}; monitor: {}",
                score.map_or("a stage failed".to_string(), |s| format!("score {s}")),
                monitor_line(monitor)
            ),
            Event::Waiting { wait_s } => {
                format!("waiting {wait_s}s before the next attempt (Ctrl-C stops the run)")
            }
            Event::Progress {
                bead,
                step,
                attempt,
                elapsed_s,
                doing,
            } => format!(
                "… {bead} {step} attempt {attempt} running for {elapsed_s}s{}",
                doing.as_ref().map_or(String::new(), |d| format!(": {d}"))
            ),
            Event::Note { text } => text.clone(),
            Event::Warning { text } => format!("warning: {text}"),
            Event::Reclaimed {
                bead,
                holder,
                died,
                by,
            } => format!(
                "reclaimed {bead}'s claim from {holder}, whose runner died ({}); asked by {by}",
                died.text()
            ),
            Event::Interrupted { .. } => {
                "interrupted: dispatches in flight were stopped and their claims released".into()
            }
            Event::Result {
                run,
                status,
                num_passes,
                dispatches,
                tokens,
                cost,
                ..
            } => format!(
                "run {run} ended: {} after {num_passes} passes, {dispatches} dispatches{}",
                status.as_str(),
                cost.as_ref()
                    .map(|c| format!(", {tokens} tokens, {c}"))
                    .unwrap_or_default()
            ),
            Event::PassStart { .. } | Event::PassEnd { .. } => return None,
        })
    }

    /// One JSON line: the event with `schema_version`.
    pub fn to_json_line(&self) -> String {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(obj) = value.as_object_mut() {
            obj.insert("schema_version".into(), EVENT_SCHEMA.into());
        }
        let mut line = serde_json::to_string(&value).unwrap_or_default();
        line.push('\n');
        line
    }

    /// The event of one line of `events.jsonl` ([`Event::to_json_line`]'s, `schema_version`
    /// and any field this version does not know ignored). `None` for a line that is not a whole
    /// event of a kind this version knows: a newer run's event, a torn or hostile line.
    pub fn from_json_line(line: &str) -> Option<Event> {
        serde_json::from_str(line).ok()
    }
}

/// Where events go: stdout in the chosen format, and the run's `events.jsonl` once the run knows
/// its directory.
pub struct Events {
    output: Output,
    started: Instant,
    log: Mutex<Option<File>>,
}

impl Events {
    pub fn new(output: Output) -> Events {
        Events {
            output,
            started: Instant::now(),
            log: Mutex::new(None),
        }
    }

    pub fn output(&self) -> Output {
        self.output
    }

    /// Append every later event to `<run_dir>/events.jsonl` (created with the directory).
    pub fn record_to(&self, run_dir: &Path) -> Result<()> {
        std::fs::create_dir_all(run_dir).map_err(|e| Error::io(run_dir, e))?;
        let path = run_dir.join("events.jsonl");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        *self.log.lock().unwrap_or_else(|p| p.into_inner()) = Some(file);
        Ok(())
    }

    /// Report one event.
    pub fn emit(&self, event: &Event) {
        let line = event.to_json_line();
        if let Some(file) = self.log.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            // One write per line: appends from one owner stay whole. A full disk loses the
            // line, not the run (the journal and the pass files are the record).
            let _ = file.write_all(line.as_bytes());
        }
        match self.output {
            Output::StreamJson => out(&line),
            Output::Human => match (event, event.human()) {
                // Narration reads as prose, without the run clock.
                (Event::Note { .. }, Some(text)) => out(&format!("{text}\n")),
                (_, Some(text)) => out(&format!("{} {text}\n", self.clock())),
                (_, None) => {}
            },
            // With only the final envelope on stdout, a warning still reaches a person.
            Output::Json => {
                if let Event::Warning { text } = event {
                    let line = format!("splice: warning: {}\n", printable(text));
                    crate::stdio::err(&line);
                }
            }
            Output::Quiet => {}
        }
    }

    /// Seconds since the run started, for human lines.
    fn clock(&self) -> String {
        format!("[{:>6.1}s]", self.started.elapsed().as_secs_f64())
    }
}

/// Write to stdout; a closed stdout is not the run's failure ([`crate::stdio`]).
pub use crate::stdio::out;

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(doing: Option<&str>) -> Event {
        Event::Progress {
            bead: "sp-1".into(),
            step: "implement".into(),
            attempt: 2,
            elapsed_s: 40,
            doing: doing.map(str::to_string),
        }
    }

    #[test]
    fn a_heartbeat_says_what_the_agent_is_doing_when_its_log_says() {
        assert_eq!(
            progress(Some("Edit src/lib.rs")).human().as_deref(),
            Some("… sp-1 implement attempt 2 running for 40s: Edit src/lib.rs")
        );
        assert_eq!(
            progress(None).human().as_deref(),
            Some("… sp-1 implement attempt 2 running for 40s")
        );
        let json: Value = serde_json::from_str(&progress(None).to_json_line()).unwrap();
        assert_eq!(json["type"], "progress");
        assert!(json["doing"].is_null(), "present, null: {json}");
        let json: Value =
            serde_json::from_str(&progress(Some("Bash: cargo test")).to_json_line()).unwrap();
        assert_eq!(json["doing"], "Bash: cargo test");
    }

    /// One event of every kind (each `Option` both set and unset somewhere), and the number of
    /// kinds: [`kind_of`]'s match is exhaustive, so a new kind must be named there and given an
    /// event here.
    fn every_kind() -> Vec<Event> {
        use crate::model::Action;
        use crate::model::envelope::ActResult;
        use crate::model::snapshot::{DeathCause, Died};
        use crate::model::trajectory::IterationState;
        let dispatch = Action::Dispatch {
            bead: "sp-1".into(),
            step: "implement".into(),
            attempt: 2,
            target: "main".into(),
        };
        let report = |result| ActionReport {
            action: dispatch.clone(),
            result,
        };
        let usage = Usage {
            input_tokens: 1200,
            output_tokens: 300,
            cost_usd: Some(0.1),
            model: Some("m".into()),
            ..Usage::default()
        };
        let result = |cost_usd: Option<f64>, known: Option<f64>| Event::Result {
            subtype: "success".into(),
            is_error: false,
            interrupted: false,
            status: RunStatus::SuspendedHuman,
            run: "r-1".into(),
            num_passes: 3,
            dispatches: 2,
            tokens: 1500,
            cost_usd,
            known_cost_usd: known,
            cost: cost_usd.map(|c| format!("${c:.4}")),
            duration_ms: 61_000,
            text: "{\"status\":\"suspended-human\"}".into(),
        };
        vec![
            Event::RunStart {
                run: "r-1".into(),
                holder: "run:h:1:r-1".into(),
                scope: Some("sp-1".into()),
                limits: Limits {
                    max_passes: Some(4),
                    ..Limits::default()
                },
                sandbox: Sandboxing::of(&Ok(5)),
            },
            Event::RunStart {
                run: "r-1".into(),
                holder: "run:h:1:r-1".into(),
                scope: None,
                limits: Limits::default(),
                sandbox: Sandboxing::of(&Err("no Landlock".into())),
            },
            Event::PassStart { pass: 1 },
            Event::Action {
                pass: 1,
                action: report(ActResult::Started),
            },
            Event::Action {
                pass: 1,
                action: report(ActResult::Done {
                    status: "ok".into(),
                    detail: serde_json::json!({"verdict": "pass", "next": null}),
                }),
            },
            Event::Action {
                pass: 1,
                action: report(ActResult::Skipped {
                    reason: "changed".into(),
                }),
            },
            Event::Action {
                pass: 1,
                action: report(ActResult::DryRun),
            },
            Event::PassEnd {
                pass: 1,
                status: RunStatus::Ready,
            },
            Event::DispatchEnd {
                bead: "sp-1".into(),
                step: "implement".into(),
                attempt: 2,
                exit: ExitKind::Failed,
                code: Some(1),
                cause: Some("exit 1".into()),
                elapsed_ms: 4000,
                usage: Some(usage),
                log: Some("runs/r-1/sp-1-implement-2.log".into()),
                problem: Some("a problem".into()),
            },
            Event::DispatchEnd {
                bead: "sp-1".into(),
                step: "implement".into(),
                attempt: 1,
                exit: ExitKind::NotStarted,
                code: None,
                cause: None,
                elapsed_ms: 0,
                usage: None,
                log: None,
                problem: None,
            },
            Event::Iteration {
                bead: "sp-1".into(),
                step: "improve".into(),
                iteration: 2,
                state: IterationState {
                    iteration: 2,
                    confidence: Some(0.5),
                    cost_usd: 0.25,
                    change_hash: "ab12".into(),
                    ..IterationState::default()
                },
                score: Some(-3),
                monitor: serde_json::json!({"decision": "continue", "scores": [{"score": -3}]}),
            },
            Event::Progress {
                bead: "sp-1".into(),
                step: "implement".into(),
                attempt: 2,
                elapsed_s: 40,
                doing: Some("Edit src/lib.rs".into()),
            },
            progress(None),
            Event::Waiting { wait_s: 20 },
            Event::Note {
                text: "first\nsecond".into(),
            },
            Event::Warning {
                text: "uncommitted".into(),
            },
            Event::Reclaimed {
                bead: "sp-1".into(),
                holder: "run:h:41:r-0".into(),
                died: Died {
                    pid: 41,
                    cause: DeathCause::Reused,
                },
                by: "--reclaim-dead".into(),
            },
            Event::Interrupted { run: "r-1".into() },
            result(Some(0.42), None),
            result(None, Some(0.4)),
        ]
    }

    /// How many kinds [`Event`] has.
    const KINDS: usize = 13;

    /// The kind of `e`, numbered `0..KINDS`.
    fn kind_of(e: &Event) -> usize {
        match e {
            Event::RunStart { .. } => 0,
            Event::PassStart { .. } => 1,
            Event::Action { .. } => 2,
            Event::PassEnd { .. } => 3,
            Event::DispatchEnd { .. } => 4,
            Event::Iteration { .. } => 5,
            Event::Progress { .. } => 6,
            Event::Waiting { .. } => 7,
            Event::Note { .. } => 8,
            Event::Warning { .. } => 9,
            Event::Reclaimed { .. } => 10,
            Event::Interrupted { .. } => 11,
            Event::Result { .. } => 12,
        }
    }

    #[test]
    fn every_event_reads_back_as_it_was_written() {
        let events = every_kind();
        let kinds: std::collections::BTreeSet<usize> = events.iter().map(kind_of).collect();
        assert_eq!(kinds, (0..KINDS).collect(), "an event of every kind");
        for event in events {
            let line = event.to_json_line();
            assert_eq!(
                Event::from_json_line(&line).as_ref(),
                Some(&event),
                "{line}"
            );
            // Written again, the same bytes.
            let again = Event::from_json_line(&line).unwrap().to_json_line();
            assert_eq!(again, line);
        }
    }

    #[test]
    fn the_lines_keep_their_shape() {
        // As `docs/cli.md` documents them: `type` first, `schema_version` last; an action's
        // report inline.
        let lines: Vec<String> = every_kind().iter().map(Event::to_json_line).collect();
        assert_eq!(
            lines[3],
            "{\"type\":\"action\",\"pass\":1,\"action\":{\"action\":\"dispatch\",\"bead\":\"sp-1\",\
             \"step\":\"implement\",\"attempt\":2,\"target\":\"main\",\"result\":\"started\"},\
             \"schema_version\":1}\n"
        );
        assert_eq!(
            every_kind()[3].human().as_deref(),
            Some("dispatch sp-1 implement (attempt 2): started")
        );
        assert_eq!(
            lines[7],
            "{\"type\":\"pass_end\",\"pass\":1,\"status\":\"ready\",\"schema_version\":1}\n"
        );
        assert_eq!(
            lines[1],
            "{\"type\":\"run_start\",\"run\":\"r-1\",\"holder\":\"run:h:1:r-1\",\"scope\":null,\
             \"limits\":{\"max_passes\":null,\"token_budget\":null,\"wall_time_s\":null,\"jobs\":1,\
             \"backoff_s\":0},\"sandbox\":{\"enforced\":false,\"why\":\"no Landlock\"},\
             \"schema_version\":1}\n"
        );
    }

    #[test]
    fn a_line_of_no_known_event_is_none() {
        for line in [
            "",
            "not json",
            "{\"type\":\"pass_start\"",
            "{\"type\":\"a_kind_from_a_newer_run\",\"pass\":1}",
            "{\"pass\":1}",
            "{\"type\":7}",
            "{\"type\":\"pass_start\",\"pass\":-1}",
            "{\"type\":\"pass_start\",\"pass\":18446744073709551616}",
            "{\"type\":\"pass_end\",\"pass\":1,\"status\":\"finished\"}",
            "{\"type\":\"result\",\"status\":\"done\"}",
            "[{\"type\":\"pass_start\",\"pass\":1}]",
            &"[".repeat(100_000),
            &format!("{{\"type\":\"note\",\"text\":{}}}", "[".repeat(10_000)),
        ] {
            assert_eq!(Event::from_json_line(line), None, "{line:.60}");
        }
        // A field this version does not know is no reason to drop the event.
        assert_eq!(
            Event::from_json_line("{\"type\":\"pass_start\",\"pass\":2,\"later\":[1]}"),
            Some(Event::PassStart { pass: 2 })
        );
    }

    #[test]
    fn a_line_escapes_what_it_quotes_and_a_note_keeps_its_lines() {
        assert_eq!(
            progress(Some("Edit \u{1b}[2J\nfake")).human().as_deref(),
            Some("… sp-1 implement attempt 2 running for 40s: Edit \\u{1b}[2J\\nfake")
        );
        let note = Event::Note {
            text: "first\n\u{7}second".into(),
        };
        assert_eq!(note.human().as_deref(), Some("first\n\\u{7}second"));
    }
}
