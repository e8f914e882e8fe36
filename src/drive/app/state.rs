//! The state the cockpit shows: the snapshot kept current from the journal's committed records
//! ([`Feed`]), its decision (re-made only when beads changed) and whether each claim's holder
//! lives.
//!
//! A tick costs what changed: with no bead changed, the holders are the ones gathered at the last
//! change, and only whether each lives is asked again (its process may have ended meanwhile),
//! once a holder — not once a claim, and nothing copied.

use std::collections::{BTreeMap, BTreeSet};

use crate::decide::decide;
use crate::driver::feed::Feed;
use crate::driver::holder::{holder_alive, identity};
use crate::error::Result;
use crate::model::Decision;
use crate::model::snapshot::Died;
use crate::store::Store;

use super::super::model::StateRead;

/// The feed, the last decision and the last liveness read.
pub(super) struct State {
    feed: Feed,
    decision: Decision,
    /// By holder of a claim in the snapshot, each once: whether it lives.
    alive: BTreeMap<String, Option<bool>>,
}

impl State {
    /// Read everything once. The cockpit decides as a holder of its own (`run:<host>:<pid>:…`),
    /// so a claim of any run, its own background run's included, is another holder's.
    pub(super) fn load(store: &Store, scope: Option<&str>) -> Result<State> {
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
    pub(super) fn refresh(&mut self) -> Result<Option<StateRead>> {
        if self.feed.refresh()? > 0 {
            self.decision = decide_now(&mut self.feed)?;
            self.alive = liveness(&self.feed);
            return Ok(Some(self.read()));
        }
        // The same beads, so the same holders (and the same `dead_holders`, judged when the
        // beads last changed); a holder's process may have ended since.
        let dead = &self.feed.snapshot.dead_holders;
        let mut moved = false;
        for (holder, alive) in &mut self.alive {
            let now = alive_now(holder, dead);
            if *alive != now {
                *alive = now;
                moved = true;
            }
        }
        Ok(moved.then(|| self.read()))
    }

    /// The state as it stands.
    pub(super) fn read(&self) -> StateRead {
        StateRead {
            snapshot: self.feed.snapshot.clone(),
            decision: self.decision.clone(),
            alive: self.alive.clone(),
        }
    }

    pub(super) fn feed(&self) -> &Feed {
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

/// Whether each claim holder in the snapshot lives ([`alive_now`]), each asked once.
fn liveness(feed: &Feed) -> BTreeMap<String, Option<bool>> {
    let dead = &feed.snapshot.dead_holders;
    let holders: BTreeSet<&str> = feed
        .snapshot
        .beads
        .iter()
        .filter_map(|b| b.pipeline.lease.as_ref())
        .map(|l| l.holder.as_str())
        .collect();
    holders
        .into_iter()
        .map(|h| (h.to_string(), alive_now(h, dead)))
        .collect()
}

/// Whether `holder` lives (`None`: cannot tell): dead when the snapshot found it so
/// (`dead_holders`), else as its pid says.
fn alive_now(holder: &str, dead: &BTreeMap<String, Died>) -> Option<bool> {
    match dead.contains_key(holder) {
        true => Some(false),
        false => holder_alive(holder),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Bead;
    use crate::model::bead::Lease;

    #[test]
    fn a_holder_whose_process_ends_is_seen_dead_with_no_bead_changed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".splice/beads")).unwrap();
        let store = Store::discover(Some(dir.path())).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .unwrap();
        let runner = format!("run:{}:{}:r-1", crate::driver::holder::host(), child.id());
        for (id, holder) in [
            ("sp-a", runner.as_str()),
            ("sp-b", "alice"),
            ("sp-c", &runner),
        ] {
            let mut bead = Bead::new(id.into(), id.into(), String::new(), "then");
            bead.pipeline.route = "leaf".into();
            bead.pipeline.step = "implement".into();
            bead.pipeline.lease = Some(Box::new(Lease {
                holder: holder.into(),
                since: "then".into(),
                credential_sha256: None,
                job: None,
            }));
            std::fs::write(store.bead_path(id), bead.to_file_bytes()).unwrap();
        }
        let mut state = State::load(&store, None).unwrap();
        // Each holder once, however many claims it holds.
        let want = BTreeMap::from([("alice".to_string(), None), (runner.clone(), Some(true))]);
        assert_eq!(state.read().alive, want);
        assert!(state.refresh().unwrap().is_none(), "nothing changed");
        child.kill().unwrap();
        child.wait().unwrap();
        let read = state
            .refresh()
            .unwrap()
            .expect("a holder's liveness changed");
        assert_eq!(read.alive[&runner], Some(false));
        assert!(state.refresh().unwrap().is_none(), "nothing changed since");
    }
}
