//! The runner's snapshot kept in memory between passes. The first pass reads every bead; after
//! that only the journal's new committed records are read, and their after-images replace the
//! beads they name — changes by anyone (another runner, a person's verbs) included — so a
//! steady-state pass costs O(changes), not O(beads).
//!
//! Its place in the journal is (generation, offset within that generation's segment): a closed
//! segment never changes, so when the writer closes the live one the feed finishes it from its
//! archive and goes on in the next generation; an offset is never read in another segment.

use std::collections::HashMap;

use crate::error::Result;
use crate::model::{Bead, Snapshot};
use crate::store::Store;
use crate::store::journal::{self, Tail};

use super::snapshot::{Identity, build};

/// A snapshot and where in the journal it is up to date.
pub struct Feed {
    store: Store,
    scope: Option<String>,
    who: Identity,
    pub snapshot: Snapshot,
    index: HashMap<String, usize>,
    /// The journal segment the feed is in.
    generation: u64,
    /// Where in that segment it is up to date.
    offset: u64,
}

impl Feed {
    /// Read everything once.
    pub fn load(store: &Store, scope: Option<&str>, who: Identity) -> Result<Feed> {
        // Take the journal position first: a transition committed while the beads are read is
        // then applied again from the journal, which is harmless (after-images are whole).
        let generation = store.live_generation()?;
        let offset = resume_offset(store)?;
        let snapshot = build(store, scope, who.clone())?;
        let index = snapshot
            .beads
            .iter()
            .enumerate()
            .map(|(i, b)| (b.id.to_string(), i))
            .collect();
        Ok(Feed {
            store: store.clone(),
            scope: scope.map(str::to_string),
            who,
            snapshot,
            index,
            generation,
            offset,
        })
    }

    /// Apply the journal's committed records since the last refresh. Returns how many beads
    /// changed.
    pub fn refresh(&mut self) -> Result<usize> {
        let mut changed = 0;
        // A segment closed since the last refresh is finished from its archive first.
        while self.generation < self.store.live_generation()? {
            let closed = self.store.segment_path(self.generation)?;
            if !closed.is_file() {
                return self.reload();
            }
            changed += self.read_from(&closed)?;
            self.generation += 1;
            self.offset = 0;
        }
        let live = self.store.journal_path();
        let len = std::fs::metadata(&live).map(|m| m.len()).unwrap_or(0);
        if len < self.offset {
            // Closed between the two reads (the next call finishes it), or replaced by hand.
            if self.store.live_generation()? > self.generation {
                return Ok(changed + self.refresh()?);
            }
            return self.reload();
        }
        Ok(changed + self.read_from(&live)?)
    }

    /// Apply the committed records of the segment at `path` after the feed's offset.
    fn read_from(&mut self, path: &std::path::Path) -> Result<usize> {
        let (records, consumed) = journal::read_committed(path, self.offset)?;
        self.offset = consumed;
        let mut changed = 0;
        for record in records {
            for patch in &record.patches {
                // A bead the feed holds takes the patch; one it does not is out of its scope (a
                // patch changes a bead that exists, and a new one comes whole). A patch that does
                // not fit what the feed holds (a bead edited by hand since): read it again.
                let Some(now) = self.current(&patch.id) else {
                    continue;
                };
                match patch.apply(now, &record.at) {
                    Ok(bead) => {
                        if self.apply(bead) {
                            changed += 1;
                        }
                    }
                    Err(_) => match self.store.read_bead(&patch.id) {
                        Ok(bead) => {
                            if self.apply(bead) {
                                changed += 1;
                            }
                        }
                        Err(_) => return self.reload(),
                    },
                }
            }
            for bead in record.beads {
                if self.apply(bead) {
                    changed += 1;
                }
            }
        }
        Ok(changed)
    }

    /// The image the feed holds of bead `id`: in scope, or one of the scope's ancestors.
    fn current(&self, id: &str) -> Option<&Bead> {
        self.bead(id)
            .or_else(|| self.snapshot.ancestors.iter().find(|a| a.id == id))
    }

    /// Read everything again (the journal was changed in a way the feed cannot follow).
    fn reload(&mut self) -> Result<usize> {
        *self = Feed::load(&self.store, self.scope.as_deref(), self.who.clone())?;
        Ok(self.snapshot.beads.len())
    }

    /// Replace or add one bead if it is in scope (or one of the scope's ancestors). An image
    /// whose id is no bead id (a forged committed record) is ignored: no verb could act on it.
    fn apply(&mut self, bead: Bead) -> bool {
        if !crate::store::ids::is_valid(&bead.id) {
            return false;
        }
        // A file repaired by hand and written since is readable again.
        self.snapshot.unreadable.retain(|u| u.id != bead.id);
        if let Some(&i) = self.index.get(bead.id.as_str()) {
            self.snapshot.beads[i] = bead;
            return true;
        }
        if let Some(a) = self.snapshot.ancestors.iter_mut().find(|a| a.id == bead.id) {
            *a = bead;
            return true;
        }
        let in_scope = match &self.scope {
            None => true,
            Some(root) => {
                bead.id == *root
                    || bead
                        .parent
                        .as_ref()
                        .is_some_and(|p| self.index.contains_key(p.as_str()))
            }
        };
        if in_scope {
            self.index
                .insert(bead.id.to_string(), self.snapshot.beads.len());
            self.snapshot.beads.push(bead);
        }
        in_scope
    }

    pub fn bead(&self, id: &str) -> Option<&Bead> {
        self.index.get(id).map(|&i| &self.snapshot.beads[i])
    }

    /// Ask git again which targets the snapshot's nodes may use name no commit (a branch
    /// deleted or created since).
    pub fn refresh_targets(&mut self) {
        self.snapshot.missing_targets =
            super::snapshot::missing_targets(&self.store, &self.snapshot);
    }

    /// Judge the holders of the snapshot's claims again (one may have died since, or its claim
    /// gone): the snapshot's `dead_holders`.
    pub fn refresh_holders(&mut self) {
        self.snapshot.dead_holders = super::holder::dead_holders(self.store.dir(), &self.snapshot);
    }

    /// Re-list the worktrees of beads in scope.
    pub fn refresh_worktrees(&mut self) {
        // A listing that fails leaves no worktree known; the next refresh tries again.
        let mut trees = crate::worktree::list(&self.store.worktrees_dir()).unwrap_or_default();
        trees.retain(|id| self.index.contains_key(id));
        self.snapshot.worktrees = trees;
    }
}

/// Where reading the journal should start so that no committed record is missed: its end, or the
/// start of an unfinished last line (a record whose marker recovery will append later).
fn resume_offset(store: &Store) -> Result<u64> {
    let path = store.journal_path();
    let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    Ok(match journal::read_tail(&path)? {
        Tail::Clean => len,
        Tail::Uncommitted { at, .. } => at,
        Tail::Torn { keep, .. } => keep,
        // No write goes on until a person mends it; nothing committed lies past it.
        Tail::Garbled { at, .. } => at,
    })
}
