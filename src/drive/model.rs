//! The cockpit's model: what the screen shows, as plain data, and what a key does to it.
//!
//! Built from a [`Snapshot`] and the [`Decision`] `decide` makes of it; refreshed when the
//! journal's committed records change beads (the app re-decides from its feed, never re-reading
//! the store per frame). A key either changes the view (selection, collapse, a text prompt) or
//! asks the app to carry out a [`Command`]; the app reports back with [`Msg::Done`].

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

/// What the app tells the model.
#[derive(Clone, Debug, PartialEq)]
pub enum Msg {
    /// A new read of the state: the snapshot (kept current from the journal) and its decision.
    State(Box<(Snapshot, Decision)>),
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
