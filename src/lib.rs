//! splice: a deterministic state-machine driver that carries software work through a declared
//! pipeline. Three parts (DESIGN §1): the pure [`decide`] core, the single writer
//! ([`transition`]), and the runner ([`driver`]). Everything else is called by one of these.

#![warn(unreachable_pub)]

pub mod authority;
pub mod cli;
pub mod clock;
pub mod decide;
pub mod demo;
pub mod doctor;
pub mod drive;
pub mod driver;
pub mod error;
pub mod exec;
pub mod floors;
pub mod guard;
pub mod hooks;
pub mod model;
pub mod policy;
pub mod process;
pub mod refusal;
pub mod safe_read;
pub mod sandbox;
pub mod stdio;
pub mod store;
pub mod transition;
pub mod worktree;

pub use error::{Error, Result};
