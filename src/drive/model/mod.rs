//! The cockpit's model: what the screen shows, as plain data, and what a key does to it.
//!
//! Built from a [`Snapshot`] and the [`Decision`] `decide` makes of it; refreshed when the
//! journal's committed records change beads (the app re-decides from its feed, never re-reading
//! the store per frame). A key either changes the view (selection, collapse, a text prompt) or
//! asks the app to carry out a [`Command`]; the app reports back with [`Msg::Done`].

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use ratatui::crossterm::event::KeyEvent;

use crate::driver::events::Event;
use crate::model::{Action, Bead, Decision, Rest, RunStatus, Snapshot};

mod detail;
mod keys;
mod run;
mod tree;

pub use detail::{Detail, Field};
pub use run::RunBar;
pub use tree::{Tone, TreeLine};

/// What a key asks the app to do. Each writing command goes through the writer exactly as the
/// CLI verb named in its doc would, as a person (same refusals).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `transition approve --bead B --step S`.
    Approve { bead: String, step: String },
    /// `transition reject --bead B --step S --reason R`.
    Reject {
        bead: String,
        step: String,
        reason: String,
    },
    /// `transition release --clear --bead B --reason R` (a dead holder's claim).
    ClearClaim { bead: String, reason: String },
    /// `transition unpark --bead B --reason R`.
    Unpark { bead: String, reason: String },
    /// `transition guide --bead B --text T` (the pass monitor asked).
    Guide { bead: String, text: String },
    /// `transition set-config --bead B --suite-cmd CMD` (a node escalated for a missing suite
    /// command).
    SetSuiteCmd { bead: String, cmd: String },
    /// Open `path` in `$PAGER` (`edit`: `$EDITOR`), the terminal handed over until it exits.
    Open { path: String, edit: bool },
    /// Start a run in the background (`splice run --jobs J` in-process).
    StartRun,
    /// Stop the background run as Ctrl-C stops `splice run`.
    StopRun,
    /// One pass (`splice pass`).
    Pass,
    /// A dry-run pass: its decision shown, nothing done (`splice pass --dry-run`).
    DryRun,
    /// `plan crystallize NOTES`: the design agent turns the notes into a plan file beside them
    /// (`NOTES` with the extension `plan.json`), and the critic reads it (`docs/plan.md`).
    Crystallize { notes: String },
    /// `plan approve PLAN`: the plan's campaign is created, its planning gates approved; a run
    /// (`r`) then carries it out.
    ApprovePlan { plan: String },
    /// Open the design pane on the newest open design session (`splice design show`), or on a
    /// new one when there is none.
    DesignOpen,
    /// `design say`: the person's turn, and the design agent's answer (`session` none: a new
    /// session).
    DesignSay {
        session: Option<String>,
        text: String,
    },
    /// `/crystallize`: `design crystallize`.
    DesignCrystallize { session: String },
    /// `/approve [REASON]`: `design approve` without its run (`r` runs the campaign), REASON
    /// overriding the critic's must-fix findings.
    DesignApprove {
        session: String,
        override_critic: Option<String>,
    },
    /// `/abort`: `design abort`.
    DesignAbort { session: String },
    /// Leave the cockpit (stopping a background run first).
    Quit,
}

/// The design pane: a session's conversation in words, what the agent asks for, the plan and
/// the critic's findings beside it, and the line being typed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DesignPane {
    /// None until the first turn makes the session.
    pub session: Option<String>,
    pub status: String,
    /// `(the person's, text)`, oldest first.
    pub turns: Vec<(bool, String)>,
    /// What the agent's last answer asks for (`crystallize`, `approve`, `abort`).
    pub request: Option<String>,
    pub plan: Option<String>,
    /// The critic's verdict on the plan in words, a line each.
    pub findings: Vec<String>,
    /// The line being typed.
    pub input: String,
}

/// One read of the state, as the app hands it to the model.
#[derive(Clone, Debug, PartialEq)]
pub struct StateRead {
    /// Kept current from the journal's committed records (`driver::feed`).
    pub snapshot: Snapshot,
    /// `decide` of that snapshot.
    pub decision: Decision,
    /// Whether each claim holder in the snapshot still lives on this host (`None`: cannot
    /// tell, another host), by holder.
    pub alive: BTreeMap<String, Option<bool>>,
}

/// What the app tells the model.
#[derive(Clone, Debug, PartialEq)]
pub enum Msg {
    /// A new read of the state.
    State(Box<StateRead>),
    /// A run started (in the background, or elsewhere and now watched): its id.
    RunStarted { run: String, background: bool },
    /// The run ended with this status (its `result` event's).
    RunEnded { status: RunStatus },
    /// An event a run reported (a line of its `events.jsonl`).
    RunEvent(Box<Event>),
    /// New text of the selected node's dispatch log, already put in words.
    LogLines(Vec<String>),
    /// How a command went: `Ok` a line saying what was done, `Err` the refusal or fault.
    Done(Result<String, String>),
    /// The wall time of the run shown in the run bar so far, by the app's clock (the model has
    /// none).
    Clock { wall_s: u64 },
    /// The design pane's session as it now stands (its typed line is kept).
    Design(Box<DesignPane>),
}

/// The most log lines the model keeps for the selected node.
pub const LOG_LINES: usize = 200;

/// A text prompt open at the bottom line: what it asks, what was typed, and the command it
/// completes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    /// What is asked, e.g. `reason to reject sp-1 at review`.
    pub label: String,
    pub text: String,
    pub(crate) then: keys::Then,
}

/// Beads in a state past which the state last read is dropped on a thread of its own: freeing
/// 10,000 beads takes milliseconds the frame should not wait for.
const DROP_APART: usize = 1_000;

/// Free `old`, apart from the frame when it is large.
fn let_go(old: Box<StateRead>) {
    if old.snapshot.beads.len() >= DROP_APART {
        let spawned = std::thread::Builder::new()
            .name("drive-drop".into())
            .spawn(move || drop(old));
        // No thread to be had: freed here, the frame waits.
        drop(spawned);
    }
}

/// The cockpit's model (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct Model {
    scope: Option<String>,
    color: bool,
    state: Option<Box<StateRead>>,
    /// Every node in tree order (see [`tree`]).
    rows: Vec<tree::Row>,
    /// Row of each id.
    index: HashMap<String, usize>,
    /// By row: the index into `decision.actions` of its node's action, if it has one.
    actions: Vec<Option<usize>>,
    /// The rows shown (collapsed subtrees left out), as indices into `rows`.
    visible: Vec<usize>,
    collapsed: BTreeSet<String>,
    selected: Option<String>,
    run: Option<RunBar>,
    log: VecDeque<String>,
    message: Option<String>,
    prompt: Option<Prompt>,
    all_keys: bool,
    design: Option<DesignPane>,
}

impl Model {
    /// An empty model of the scope `scope` (none: the whole store).
    pub fn new(scope: Option<String>) -> Model {
        Model {
            scope,
            color: true,
            ..Model::default()
        }
    }

    /// Draw in colour (`false` under `NO_COLOR`).
    pub fn set_color(&mut self, color: bool) {
        self.color = color;
    }

    /// Take in what the app reports.
    pub fn update(&mut self, msg: Msg) {
        match msg {
            Msg::State(read) => self.take_state(read),
            Msg::RunStarted { run, background } => self.run = Some(RunBar::new(run, background)),
            Msg::RunEnded { status } => {
                if let Some(bar) = &mut self.run {
                    bar.end(status);
                }
            }
            Msg::RunEvent(event) => {
                if let Some(bar) = &mut self.run {
                    bar.event(&event);
                }
            }
            Msg::Clock { wall_s } => {
                if let Some(bar) = &mut self.run {
                    bar.wall_s = wall_s;
                }
            }
            Msg::LogLines(lines) => {
                self.log.extend(lines);
                while self.log.len() > LOG_LINES {
                    self.log.pop_front();
                }
            }
            Msg::Design(pane) => {
                let input = self.design.take().map(|d| d.input).unwrap_or_default();
                self.design = Some(DesignPane { input, ..*pane });
            }
            Msg::Done(Ok(line)) => self.message = Some(line),
            Msg::Done(Err(refusal)) => self.message = Some(format!("refused: {refusal}")),
        }
    }

    /// A key: a change of the view, or a command for the app.
    pub fn key(&mut self, key: KeyEvent) -> Option<Command> {
        keys::key(self, key)
    }

    /// The selected node, whose dispatch log the app tails.
    pub fn selected(&self) -> Option<&str> {
        self.selected.as_deref()
    }

    /// The scope the cockpit shows (none: the whole store).
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// Whether to draw in colour.
    pub fn color(&self) -> bool {
        self.color
    }

    /// The state last read, if any.
    pub fn state(&self) -> Option<&StateRead> {
        self.state.as_deref()
    }

    /// The run bar, once a run started or is watched.
    pub fn run(&self) -> Option<&RunBar> {
        self.run.as_ref()
    }

    /// The selected node's dispatch log, oldest line first (at most [`LOG_LINES`]).
    pub fn log(&self) -> impl ExactSizeIterator<Item = &str> + DoubleEndedIterator {
        self.log.iter().map(String::as_str)
    }

    /// The message line: what the last command did, its refusal, or why a key does not apply.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The design pane, when it is open.
    pub fn design(&self) -> Option<&DesignPane> {
        self.design.as_ref()
    }

    /// The prompt being typed, if any.
    pub fn prompt(&self) -> Option<&Prompt> {
        self.prompt.as_ref()
    }

    /// Whether `?` asked for every key (not only those that apply now).
    pub fn showing_all_keys(&self) -> bool {
        self.all_keys
    }

    /// How many rows the tree shows, and where the selection is among them.
    pub fn visible_len(&self) -> usize {
        self.visible.len()
    }

    /// The position of the selection among the rows shown.
    pub fn cursor(&self) -> Option<usize> {
        let row = *self.index.get(self.selected.as_deref()?)?;
        self.visible.iter().position(|&r| r == row)
    }

    /// A new read: rebuild the tree only when its shape changed (ids or parents), keep the
    /// collapsed set and the selection by id.
    fn take_state(&mut self, read: Box<StateRead>) {
        let same_shape = tree::same_shape(&self.rows, &read.snapshot);
        if let Some(old) = self.state.replace(read) {
            let_go(old);
        }
        let state = self.state.as_deref().expect("just set");
        if !same_shape {
            self.rows = tree::rows(&state.snapshot);
            self.index = self
                .rows
                .iter()
                .enumerate()
                .map(|(i, r)| (r.id.clone(), i))
                .collect();
        }
        self.actions.clear();
        self.actions.resize(self.rows.len(), None);
        for (i, a) in state.decision.actions.iter().enumerate() {
            if let Some(&row) = self.index.get(a.bead()) {
                self.actions[row] = Some(i);
            }
        }
        if !same_shape {
            self.collapsed.retain(|id| self.index.contains_key(id));
            self.refresh_visible();
        }
        if self
            .selected
            .as_ref()
            .is_none_or(|s| !self.index.contains_key(s))
        {
            self.selected = self.visible.first().map(|&r| self.rows[r].id.clone());
        }
    }

    /// Recompute the rows shown from the collapsed set.
    fn refresh_visible(&mut self) {
        self.visible = tree::visible(&self.rows, &self.collapsed);
        // A selection hidden under a collapsed node moves up to its shown ancestor.
        if let Some(mut row) = self
            .selected
            .as_ref()
            .and_then(|s| self.index.get(s).copied())
        {
            while !self.visible.contains(&row) {
                match self.rows[row].parent {
                    Some(p) => row = p,
                    None => break,
                }
            }
            self.selected = Some(self.rows[row].id.clone());
        }
    }

    /// The bead of `id`, when its file could be read.
    fn bead(&self, id: &str) -> Option<&Bead> {
        let row = &self.rows[*self.index.get(id)?];
        Some(&self.state.as_ref()?.snapshot.beads[row.bead?])
    }

    /// The action `decide` gave `id` this pass, if any.
    fn action(&self, id: &str) -> Option<&Action> {
        let i = (*self.actions.get(*self.index.get(id)?)?)?;
        self.state.as_ref()?.decision.actions.get(i)
    }

    /// Why `id` rests this pass, if it does.
    fn rest(&self, id: &str) -> Option<&Rest> {
        self.state.as_ref()?.decision.nodes.get(id)?.rest.as_ref()
    }
}

#[cfg(test)]
mod tests;
