//! `splice demo`: the example campaign of `state/` driven to `done` in a scratch repository, and
//! `splice sim-agent`, the simulated agent that does its work.

pub mod agent;
pub mod files;
pub mod git;
pub mod looping;
pub mod plan;
pub mod run;
