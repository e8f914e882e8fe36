//! The cockpit's model: what the screen shows, as plain data, and what a key does to it.
//!
//! Built from a [`Snapshot`] and the [`Decision`] `decide` makes of it; refreshed when the
//! journal's committed records change beads (the app re-decides from its feed, never re-reading
//! the store per frame). A key either changes the view (selection, collapse, a text prompt) or
//! asks the app to carry out a [`Command`]; the app reports back with [`Msg::Done`].

use std::collections::BTreeMap;

use ratatui::crossterm::event::KeyEvent;

use crate::model::{Decision, Snapshot};

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
    /// Leave the cockpit (stopping a background run first).
    Quit,
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
    /// The run ended with this status.
    RunEnded { status: String },
    /// A line a run reported (`events.jsonl`, as JSON).
    RunEvent(serde_json::Value),
    /// New text of the selected node's dispatch log, already put in words.
    LogLines(Vec<String>),
    /// How a command went: `Ok` a line saying what was done, `Err` the refusal or fault.
    Done(Result<String, String>),
}

/// The cockpit's model (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct Model {}

impl Model {
    /// An empty model of the scope `scope` (none: the whole store).
    pub fn new(scope: Option<String>) -> Model {
        let _ = scope;
        Model::default()
    }

    /// Take in what the app reports.
    pub fn update(&mut self, msg: Msg) {
        let _ = msg;
    }

    /// A key: a change of the view, or a command for the app.
    pub fn key(&mut self, key: KeyEvent) -> Option<Command> {
        let _ = key;
        None
    }

    /// The selected node, whose dispatch log the app tails.
    pub fn selected(&self) -> Option<&str> {
        None
    }
}
