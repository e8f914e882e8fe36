//! The runner side of a pass: read the snapshot, decide, act, record (DESIGN §5).
//!
//! | module | what it holds |
//! |---|---|
//! | [`snapshot`] | the snapshot from one directory read |
//! | [`feed`] | the snapshot kept between passes, refreshed from the journal |
//! | [`act`] | each action carried out through the writer or the executor |
//! | [`commands`] | the commands a run may start, where each is set, and the check that they can |
//! | [`advice`] | what a person can do about a node, in words and with the exact command |
//! | `tree` | the one tree order of a scope's nodes (`splice status`, the cockpit) |
//! | [`runner`] | the loop of passes, dispatches in flight on threads |
//! | `heartbeat` | a waiting runner's report, every 10 s, of each dispatch in flight and what its agent is doing |
//! | [`holder`] | a run's holder identity, and whether a holder's process lives (or is provably dead) |
//! | [`reclaim`] | `--reclaim-dead`: a dead runner's claim released as the person's act |
//! | [`envelope`] | what a pass reports, and where it is recorded |
//! | [`events`] | human, json and stream-json output |
//! | [`interrupt`] | Ctrl-C: stop cleanly, releasing every claim |
//! | [`looping`] | a loop step in a run: measuring and recording each iteration, snapshots, the next iteration's context, escalate, roll back, step back |
//! | [`prompts`] | step prompt templates |
//! | [`headless`] | `splice exec`: run new work to rest, scoped to it, and say where it landed |
//! | [`crystallize`] | `splice plan crystallize`: notes to a validated plan file, and its critic |

pub mod act;
pub mod advice;
pub mod commands;
pub mod crystallize;
pub mod design;
pub mod distill;
pub mod envelope;
pub mod events;
pub mod external;
pub mod feed;
pub mod headless;
mod heartbeat;
pub mod holder;
pub mod interrupt;
pub mod job;
pub mod looping;
pub mod memory;
pub mod prompts;
pub mod reclaim;
pub mod runner;
pub mod slurm;
pub mod snapshot;
mod start;
pub(crate) mod tree;
