//! `splice run --reclaim-dead`, or `[limits] reclaim_dead = true` (issue 33): a person lets the
//! run release the claims of runners that died on this host, so the nodes run again unattended.
//!
//! At every pass, before deciding, each claim whose holder the snapshot found dead
//! (`dead_holders`: a runner of this host whose process is gone, or whose pid now names another
//! process, [`super::holder::judge`]) is released through the writer's `release --clear`, as the
//! act of the person who set the flag: the journal's record names the actor `person`, and its
//! reason the dead holder, how it is known dead, and which setting asked for it. The attempt the
//! dead dispatch counted is given back, as `release --clear` does; then the node is decided as
//! any other and runs. Never released:
//!
//! - a claim naming a Slurm job: the job may still run on another node (`adopt-job` takes such a
//!   claim over, `docs/scale-out.md`);
//! - a claim while a process of the dead runner's dispatch lives — one whose environment names
//!   the claim's holder and the bead (`SPLICE_HOLDER`, `SPLICE_BEAD`), or one working in the
//!   node's worktree. The run warns, naming the pids, and releases it at a later pass once they
//!   are gone;
//! - a claim whose holder is not proved dead: a person's name, another host's runner, a runner
//!   whose record is of another boot, a live one.
//!
//! Claims still never expire by time: nothing here looks at how old a claim is.

use std::collections::BTreeSet;

use super::act::RunCtx;
use super::events::{Event, Events};
use super::holder::{self, Liveness};
use crate::model::Snapshot;
use crate::model::snapshot::Died;
use crate::process::procfs::{self, User};
use crate::transition::{Ctx, claim};

/// Who asked for dead runners' claims to be released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// `splice run --reclaim-dead`.
    Flag,
    /// `[limits] reclaim_dead = true` in `.splice/config.toml`.
    Config,
}

impl By {
    /// The setting, as a person typed it.
    pub fn words(self) -> &'static str {
        match self {
            By::Flag => "`splice run --reclaim-dead`",
            By::Config => "`[limits] reclaim_dead = true` (.splice/config.toml)",
        }
    }

    /// The setting, in the `reclaimed` event.
    pub fn name(self) -> &'static str {
        match self {
            By::Flag => "--reclaim-dead",
            By::Config => "[limits] reclaim_dead",
        }
    }
}

/// A run's reclaiming: who asked for it, and the claims it has warned about (once each).
#[derive(Debug)]
pub struct Reclaim {
    by: By,
    warned: BTreeSet<(String, String)>,
}

impl Reclaim {
    /// The run's reclaiming, when the flag or the config asks for it.
    pub fn new(flag: bool, config: &crate::model::Config) -> Option<Reclaim> {
        let by = match (flag, config.limits.reclaim_dead) {
            (true, _) => By::Flag,
            (false, Some(true)) => By::Config,
            _ => return None,
        };
        Some(Reclaim {
            by,
            warned: BTreeSet::new(),
        })
    }

    /// Release every claim of `snapshot` that may be released now; how many were.
    pub fn pass(&mut self, rc: &RunCtx, snapshot: &Snapshot, events: &Events) -> usize {
        let mut released = 0;
        for bead in snapshot.beads.iter().filter(|b| !b.is_closed()) {
            let Some(lease) = bead.pipeline.lease.as_deref() else {
                continue;
            };
            let Some(died) = snapshot.dead_holders.get(&lease.holder) else {
                continue;
            };
            let (id, holder) = (bead.id.as_str(), lease.holder.as_str());
            let of = format!(
                "{id}: the claim of {holder}, whose runner died ({})",
                died.text()
            );
            if let Some(job) = &lease.job {
                self.warn(
                    events,
                    id,
                    holder,
                    format!(
                        "{of}, names Slurm job {job}: it is not reclaimed (the job may still run; \
                         `splice transition adopt-job --bead {id} --job {job}` takes it over, \
                         `splice transition release --bead {id} --clear --reason R` releases it)"
                    ),
                );
                continue;
            }
            let live = survivors(rc, holder, id);
            if !live.is_empty() {
                self.warn(
                    events,
                    id,
                    holder,
                    format!(
                        "{of}, is kept: {} of its dispatch still run{}; it is reclaimed once \
                         they end",
                        named(&live),
                        if live.len() == 1 { "s" } else { "" }
                    ),
                );
                continue;
            }
            // Judged again at the last moment: the snapshot's verdict may be a pass old.
            let Liveness::Dead(died) = holder::judge(rc.store.dir(), holder) else {
                continue;
            };
            match self.release(rc, bead.pipeline.seq, id, &died) {
                Ok(true) => {
                    released += 1;
                    events.emit(&Event::Reclaimed {
                        bead: id.to_string(),
                        holder: holder.to_string(),
                        died,
                        by: self.by.name().to_string(),
                    });
                }
                Ok(false) => {}
                Err(e) => self.warn(
                    events,
                    id,
                    holder,
                    format!("{of}, could not be reclaimed: {e}"),
                ),
            }
        }
        released
    }

    /// `release --clear` of `id`'s claim as the person who asked, if the bead is still at
    /// `seq` (a claim taken or cleared since is left alone). `false`: there was none to clear.
    fn release(&self, rc: &RunCtx, seq: u64, id: &str, died: &Died) -> crate::error::Result<bool> {
        let ctx = Ctx {
            expect_seq: Some(seq),
            ..Ctx::person(&rc.store, rc.now()?)
        };
        // SAFETY: getuid has no preconditions and cannot fail.
        let uid = unsafe { libc::getuid() };
        let reason = format!(
            "its runner died ({}) and no process of its dispatch lives; released by {} \
             (uid {uid})",
            died.text(),
            self.by.words()
        );
        Ok(claim::clear(&ctx, id, &reason)?.cleared.is_some())
    }

    /// A warning about `holder`'s claim on `id`, once per run.
    fn warn(&mut self, events: &Events, id: &str, holder: &str, text: String) {
        if self.warned.insert((id.to_string(), holder.to_string())) {
            events.emit(&Event::Warning { text });
        }
    }
}

/// The live processes of `holder`'s dispatch of `bead`: those whose environment names both, and
/// those working in the node's worktree.
fn survivors(rc: &RunCtx, holder: &str, bead: &str) -> Vec<User> {
    let mut live = procfs::with_environment(&[("SPLICE_HOLDER", holder), ("SPLICE_BEAD", bead)]);
    let worktree = crate::worktree::node_path(&rc.store.worktrees_dir(), bead);
    live.extend(procfs::users_of(&worktree));
    live.sort_by_key(|u| u.pid);
    live.dedup_by_key(|u| u.pid);
    live
}

/// `pid 41 (sh -c …), pid 42 (…)`: at most three, then how many more.
fn named(users: &[User]) -> String {
    let mut out: Vec<String> = users
        .iter()
        .take(3)
        .map(|u| format!("pid {} ({})", u.pid, u.command))
        .collect();
    if users.len() > 3 {
        out.push(format!("{} more", users.len() - 3));
    }
    out.join(", ")
}
