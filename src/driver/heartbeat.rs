//! The runner's heartbeat: while it waits on its dispatches, every [`EVERY`] it tells a person
//! which are still running, for how long, and what each agent last did as its log says
//! ([`progress::of_dispatch`]): one `progress` event per dispatch in flight (`docs/cli.md`, "The
//! heartbeat").
//!
//! It only reports. It changes no state and no dispatch, and a run that waits on nothing beats
//! nothing; the runner's loop ([`super::runner`]) says when it waits.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use super::envelope::Running;
use super::events::{Event, Events};
use crate::exec::progress;

/// How often a waiting runner reports its dispatches in flight.
const EVERY: Duration = Duration::from_secs(10);

/// When the last beat was: the first is due [`EVERY`] after the wait began.
pub(super) struct Heartbeat {
    last: Instant,
}

impl Heartbeat {
    pub(super) fn new() -> Heartbeat {
        Heartbeat {
            last: Instant::now(),
        }
    }

    /// Is a beat due? When it is, the next is counted from now.
    pub(super) fn due(&mut self) -> bool {
        if self.last.elapsed() < EVERY {
            return false;
        }
        self.last = Instant::now();
        true
    }
}

/// One beat: a `progress` event for each dispatch of run `run` in flight, its logs under `runs`.
pub(super) fn beat(events: &Events, runs: &Path, run: &str, inflight: &BTreeMap<String, Running>) {
    for (bead, r) in inflight {
        events.emit(&Event::Progress {
            bead: bead.clone(),
            step: r.step.clone(),
            attempt: r.attempt,
            elapsed_s: r.since.elapsed().as_secs(),
            doing: progress::of_dispatch(runs, run, bead, &r.step, r.attempt, r.retry),
        });
    }
}
