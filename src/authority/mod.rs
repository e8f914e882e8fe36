//! Who is calling, as far as splice can tell from outside the caller's arguments: the facts the
//! writer's authority rule stands on (issue 9; the rule itself is one table in
//! [`crate::transition::authority`], written up in `docs/security.md`).
//!
//! A caller is a *dispatched session* when either test says so:
//!
//! - **descent** ([`presence`]): it descends from a live runner recorded in this state directory
//!   (Linux: its `/proc` ancestry reaches the runner's pid with the runner's start time; the
//!   runner is a child subreaper, so orphans stay its descendants). Nothing in the environment
//!   changes that. Processes the runner starts for a person are recorded as the person's.
//! - **the environment**: `SPLICE_DISPATCHED` is set to anything but `0`, or a
//!   `SPLICE_CREDENTIAL` is present. The environment can only make a caller *more* restricted.
//!
//! A caller that neither test calls dispatched is a person. A dispatched caller may present its
//! dispatch's credential ([`credential`]); the writer checks its hash against the claim.
//!
//! This module reads `/proc`, the environment and the records; it decides nothing.

pub mod credential;
pub mod presence;

use std::path::Path;

pub use credential::Credential;
pub use presence::{Presence, RunnerRecord};

/// How a caller was found to be a dispatched session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dispatched {
    /// It descends from this live runner of the state directory.
    Descent(Box<RunnerRecord>),
    /// Only its environment says so.
    Environment,
}

/// What splice knows about a command-line caller besides its arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recognized {
    /// `None`: neither test calls it dispatched — a person.
    pub dispatched: Option<Dispatched>,
    /// The sha256 (hex) of the `SPLICE_CREDENTIAL` it presented.
    pub credential: Option<String>,
}

impl Recognized {
    /// The holder of the runner it descends from, when descent found one.
    pub fn runner_holder(&self) -> Option<&str> {
        match &self.dispatched {
            Some(Dispatched::Descent(r)) => Some(&r.holder),
            _ => None,
        }
    }
}

/// Recognize this process as a caller of the state directory `state_dir`.
pub fn recognize(state_dir: &Path) -> Recognized {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let credential = env(credential::ENV).map(|c| credential::sha256_hex(&c));
    let by_env = env("SPLICE_DISPATCHED").is_some_and(|v| v != "0") || credential.is_some();
    let dispatched = match presence::descent(state_dir, std::process::id() as i32) {
        Some(runner) => Some(Dispatched::Descent(Box::new(runner))),
        None if by_env => Some(Dispatched::Environment),
        None => None,
    };
    Recognized {
        dispatched,
        credential,
    }
}
