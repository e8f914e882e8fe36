//! `splice drive`: the interactive cockpit (issue 14, seed 003: it "invokes passes, explains
//! stopped branches, and asks for decisions"). A full-screen terminal UI on ratatui: the tree of
//! the scope, the selected node's detail, the log of its dispatch in flight, a run bar and the
//! keys that apply now.
//!
//! Three parts, like splice itself:
//!
//! | part | file | what it is |
//! |---|---|---|
//! | the model | `model/` | plain data built from a snapshot and its decision (the same `decide` a run uses), updated from the journal's committed records and a run's events; [`Model::key`] turns a key into a [`Command`] or a change of the view (selection, collapse, a prompt) — no I/O |
//! | the view | `view.rs` | `render(&Model, &mut Frame)`: draws the model, nothing else |
//! | the app | `app/` | the terminal (`input.rs`: watched for keys and for a hang-up, chosen once at start), the event loop, following the journal (`driver::feed`) and a run's `events.jsonl`, a run in the background, and each [`Command`] carried out through the writer exactly as its CLI verb (as a person) |
//!
//! `drive` imports what is below `cli` (the writer, the runner, the model); nothing imports it
//! but `cli`.

pub mod app;
pub mod model;
pub mod view;

pub use model::{Command, Model, Msg};
