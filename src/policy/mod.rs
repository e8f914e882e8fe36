//! Pure policy shared by `decide`, the writer, the floors and the runner: one home for each rule
//! that more than one part applies.
//!
//! Like [`crate::decide`], this module touches no file, process, environment variable, clock or
//! random source (`tests/decide_purity.rs` scans both); everything it needs arrives as
//! arguments. It imports only [`crate::model`].
//!
//! | module | the rule |
//! |---|---|
//! | [`lineage`] | what a node inherits: autonomy, delivery target and method, from itself, its ancestors, the config, the checked-out branch |
//! | [`deps`] | when a bead is blocked: a `blocks` dependency whose work is not done (decide's rule 8, `splice ready`) |
//! | [`gate`] | whether a passed check waits for a person at the step's gate, or the node's autonomy relaxes it (and who supplied that level) |
//! | [`branch`] | which result branch (`on_result`) of a step fires on its result, and what it does: continue, goto, switch route, abort, suggest a route, call a route, or park when a target does not resolve |
//! | [`call`] | where an open call returns when the called route ends, with the callee's summary; the call depth bound |
//! | [`route`] | where a node goes after a step passes: the next step, back to a caller, or closed; and when a parent releases its children |
//! | [`monitor`] | after each iteration of a loop step: stop, escalate, roll back, step back, ask the user or continue (seed 000's pass monitor), and the iteration's score |
//! | [`tier`] | which request tier a request gets, by the manifest's classifier rules |
//! | [`verification`] | what a leaf's default verification runs: the repository's test command and the languages present, from its file list |

#![warn(missing_docs)]

pub mod branch;
pub mod call;
pub mod deps;
pub mod gate;
pub mod lineage;
pub mod monitor;
pub mod route;
pub mod tier;
pub mod verification;

pub use gate::GateOutcome;
pub use lineage::{Defaults, Lineage, Source};
pub use route::Advance;
