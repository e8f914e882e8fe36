//! The state the cockpit shows: the snapshot kept current from the journal's committed records
//! ([`Feed`]), its decision (re-made only when beads changed) and whether each claim's holder
//! lives.

use std::collections::BTreeMap;

use crate::decide::decide;
use crate::driver::feed::Feed;
use crate::driver::holder::{holder_alive, identity};
use crate::error::Result;
use crate::model::Decision;
use crate::store::Store;

use super::super::model::StateRead;

/// The feed, the last decision and the last liveness read.
pub struct State {
    feed: Feed,
    decision: Decision,
    alive: BTreeMap<String, Option<bool>>,
}

impl State {
    /// Read everything once. The cockpit decides as a holder of its own (`run:<host>:<pid>:…`),
    /// so a claim of any run, its own background run's included, is another holder's.
    pub fn load(store: &Store, scope: Option<&str>) -> Result<State> {
        let mut feed = Feed::load(store, scope, identity()?)?;
        let decision = decide_now(&mut feed)?;
        let alive = liveness(&feed);
        Ok(State {
            feed,
            decision,
            alive,
        })
    }

    /// Follow the journal: a new read when beads changed or a holder's liveness did, else
    /// `None`.
    pub fn refresh(&mut self) -> Result<Option<StateRead>> {
        let changed = self.feed.refresh()?;
        if changed > 0 {
            self.decision = decide_now(&mut self.feed)?;
        }
        let alive = liveness(&self.feed);
        if changed == 0 && alive == self.alive {
            return Ok(None);
        }
        self.alive = alive;
        Ok(Some(self.read()))
    }

    /// The state as it stands.
    pub fn read(&self) -> StateRead {
        StateRead {
            snapshot: self.feed.snapshot.clone(),
            decision: self.decision.clone(),
            alive: self.alive.clone(),
        }
    }

    pub fn feed(&self) -> &Feed {
        &self.feed
    }
}

/// `decide` of the feed's snapshot at this moment, with the worktrees and targets read again
/// (a decision can turn on them).
fn decide_now(feed: &mut Feed) -> Result<Decision> {
    feed.refresh_worktrees();
    feed.refresh_targets();
    feed.refresh_holders();
    feed.snapshot.now = crate::clock::now_string()?;
    Ok(decide(&feed.snapshot))
}

/// Whether each claim holder in the snapshot lives (`None`: cannot tell): dead when the snapshot
/// found it so (`dead_holders`), else as its pid says.
fn liveness(feed: &Feed) -> BTreeMap<String, Option<bool>> {
    let dead = &feed.snapshot.dead_holders;
    feed.snapshot
        .beads
        .iter()
        .filter_map(|b| b.pipeline.lease.as_ref())
        .map(|l| match dead.contains_key(&l.holder) {
            true => (l.holder.clone(), Some(false)),
            false => (l.holder.clone(), holder_alive(&l.holder)),
        })
        .collect()
}
