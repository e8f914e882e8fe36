//! A live runner's record, and descent from one.
//!
//! A runner (`splice run`, `splice pass`, the demo's) makes itself a child subreaper and records
//! itself under `.splice/runs/runners/<run>.json` — its pid, its start time and the boot it runs
//! in, its holder and run id — for as long as it runs ([`Presence`] removes the file when
//! dropped). Every process it starts is its descendant, and stays one when its parent dies (the
//! subreaper takes in orphans), so a caller whose ancestry (`/proc`) reaches a recorded runner is
//! one of its dispatches. A record whose process is gone, or whose pid now names another process
//! (another start time), is ignored: a runner killed with `kill -9` leaves a stale file. It is
//! kept while a claim still names its runner's holder — it is what proves that runner dead when
//! its pid has been reused ([`record_of`], `driver::holder::judge`) — and a later runner removes
//! it once no claim does ([`sweep`]). Processes the runner starts *for a person* (a cockpit's editor or pager)
//! are recorded in its `person` list ([`Presence::add_person_process`]); a caller descending
//! from one of them is that person's.
//!
//! Without `/proc` (macOS) nothing is found by descent; see `docs/security.md`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::process::{self, procfs};

/// One process, named so a reused pid does not match: pid and start time.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proc {
    pub pid: i32,
    /// Clock ticks since boot ([`procfs::Stat::start`]).
    pub start: u64,
}

/// What a runner records about itself.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct RunnerRecord {
    pub schema_version: u32,
    /// The kernel's boot id: start times count from a boot, so a record of another boot (or
    /// another machine sharing the directory) never matches.
    pub boot_id: String,
    #[serde(flatten)]
    pub runner: Proc,
    pub holder: String,
    pub run: String,
    /// Processes the runner started for a person: they and their descendants are the person's.
    #[serde(default)]
    pub person: Vec<Proc>,
}

/// The directory of runner records in a state directory.
pub fn records_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("runs").join("runners")
}

/// This boot's id (Linux), else empty.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The records in `state_dir` of this boot whose runner is alive.
pub fn live_records(state_dir: &Path) -> Vec<RunnerRecord> {
    let boot = boot_id();
    read_records(state_dir)
        .into_iter()
        .filter(|(_, r)| !boot.is_empty() && r.boot_id == boot)
        .filter(|(_, r)| procfs::alive(r.runner.pid, r.runner.start))
        .map(|(_, r)| r)
        .collect()
}

/// The record of the runner whose holder is `holder`, of whatever boot, if one is there.
pub fn record_of(state_dir: &Path, holder: &str) -> Option<RunnerRecord> {
    read_records(state_dir)
        .into_iter()
        .map(|(_, r)| r)
        .find(|r| r.holder == holder)
}

/// Remove the records of this boot whose runner is dead and whose holder no claim names any more
/// (`claimed` answers for a holder). A record of another boot is left alone: its start time
/// cannot be checked here, and it may be another machine's that shares the directory.
pub fn sweep(state_dir: &Path, claimed: impl Fn(&str) -> bool) {
    let boot = boot_id();
    if boot.is_empty() {
        return;
    }
    for (path, r) in read_records(state_dir) {
        let dead = r.boot_id == boot && !procfs::alive(r.runner.pid, r.runner.start);
        if dead && !claimed(&r.holder) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Every record that parses, with its file.
fn read_records(state_dir: &Path) -> Vec<(PathBuf, RunnerRecord)> {
    let Ok(entries) = std::fs::read_dir(records_dir(state_dir)) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| {
            // Planted by anyone who can write `runs/` (a FIFO would hang the writer's check).
            let bytes = crate::safe_read::read(&p, crate::safe_read::SETTINGS).ok()?;
            let record = serde_json::from_slice(&bytes).ok()?;
            Some((p, record))
        })
        .collect()
}

/// The runner `chain` (a process and its ancestors, nearest first) descends from, unless a
/// process the runner started for a person comes first. `None`: not a runner's dispatch.
pub fn runner_of<'r>(
    chain: &[procfs::Stat],
    records: &'r [RunnerRecord],
) -> Option<&'r RunnerRecord> {
    for s in chain {
        let this = Proc {
            pid: s.pid,
            start: s.start,
        };
        if records.iter().any(|r| r.person.contains(&this)) {
            return None;
        }
        if let Some(r) = records.iter().find(|r| r.runner == this) {
            return Some(r);
        }
    }
    None
}

/// The live runner of `state_dir` that process `pid` descends from, if any (Linux).
pub fn descent(state_dir: &Path, pid: i32) -> Option<RunnerRecord> {
    let records = live_records(state_dir);
    if records.is_empty() {
        return None;
    }
    runner_of(&procfs::ancestry(pid), &records).cloned()
}

/// A runner's record, on disk while this value lives.
#[derive(Debug)]
pub struct Presence {
    path: PathBuf,
    record: Mutex<RunnerRecord>,
}

impl Presence {
    /// Make this process a child subreaper and record this runner. Failing to do either is a
    /// fault: a runner that could not be recognized must not dispatch. (Stale records of dead
    /// runners are the runner's to [`sweep`] once it knows which holders still have claims.)
    pub fn register(state_dir: &Path, holder: &str, run: &str) -> Result<Presence> {
        process::become_subreaper()
            .map_err(|e| Error::Invalid(format!("cannot become a child subreaper: {e}")))?;
        Presence::record_at(state_dir, holder, run)
    }

    /// [`Presence::register`] without becoming a subreaper (a test process must not).
    fn record_at(state_dir: &Path, holder: &str, run: &str) -> Result<Presence> {
        let boot = boot_id();
        let runner = Proc {
            pid: std::process::id() as i32,
            start: procfs::own_start().unwrap_or(0),
        };
        let record = RunnerRecord {
            schema_version: 1,
            boot_id: boot,
            runner,
            holder: holder.to_string(),
            run: run.to_string(),
            person: Vec::new(),
        };
        let dir = records_dir(state_dir);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let presence = Presence {
            path: dir.join(format!("{run}.json")),
            record: Mutex::new(record),
        };
        presence.write()?;
        Ok(presence)
    }

    /// Record `pid`, a process this runner started for a person (an editor, a pager): it and its
    /// descendants act as the person.
    pub fn add_person_process(&self, pid: i32) -> Result<()> {
        let Some(s) = procfs::stat(pid) else {
            return Ok(());
        };
        self.lock().person.push(Proc {
            pid,
            start: s.start,
        });
        self.write()
    }

    /// The record as it stands.
    pub fn record(&self) -> RunnerRecord {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RunnerRecord> {
        self.record.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Write the record whole, atomically (a temp file that follows no link, renamed over it).
    fn write(&self) -> Result<()> {
        let text = serde_json::to_vec_pretty(&*self.lock()).unwrap_or_default();
        let tmp = self.path.with_extension("json.tmp");
        // A link left at the temp path is removed, never followed (`create_new`).
        let _ = std::fs::remove_file(&tmp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| Error::io(&tmp, e))?;
        std::io::Write::write_all(&mut file, &text).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| Error::io(&self.path, e))
    }
}

impl Drop for Presence {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(pid: i32, ppid: i32, start: u64) -> procfs::Stat {
        procfs::Stat {
            pid,
            state: 'S',
            ppid,
            pgrp: pid,
            start,
        }
    }

    fn record(pid: i32, start: u64, person: Vec<Proc>) -> RunnerRecord {
        RunnerRecord {
            schema_version: 1,
            boot_id: "b".into(),
            runner: Proc { pid, start },
            holder: format!("run:h:{pid}:r"),
            run: "r".into(),
            person,
        }
    }

    /// A link planted at the record's temp path (`runs/runners/<run>.json.tmp`, in a committed
    /// directory) is replaced, never written through.
    #[test]
    fn writing_the_record_never_follows_a_link_at_its_temp_path() {
        let state = tempfile::tempdir().unwrap();
        let victim = state.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let dir = records_dir(state.path());
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("r.json.tmp")).unwrap();
        let presence = Presence::record_at(state.path(), "run:h:1:r", "r").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(
            !std::fs::symlink_metadata(dir.join("r.json"))
                .unwrap()
                .is_symlink()
        );
        drop(presence);
    }

    #[test]
    fn a_caller_belongs_to_the_nearest_recorded_runner_unless_a_person_process_comes_first() {
        // 40 → 30 → 20 (runner) → 10
        let chain = [
            stat(40, 30, 4),
            stat(30, 20, 3),
            stat(20, 10, 2),
            stat(10, 1, 1),
        ];
        let runner = record(20, 2, vec![]);
        assert_eq!(
            runner_of(&chain, std::slice::from_ref(&runner)),
            Some(&runner)
        );
        // A reused pid (another start time) is another process.
        assert_eq!(runner_of(&chain, &[record(20, 9, vec![])]), None);
        // The runner started 30 for a person: 40 is the person's.
        let with_editor = record(20, 2, vec![Proc { pid: 30, start: 3 }]);
        assert_eq!(runner_of(&chain, &[with_editor]), None);
        assert_eq!(runner_of(&chain, &[]), None);
    }

    #[test]
    fn a_runner_is_recorded_while_it_runs_and_this_process_descends_from_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = Presence::record_at(dir.path(), "run:h:1:r", "r-1").unwrap();
        let file = records_dir(dir.path()).join("r-1.json");
        assert!(file.is_file());
        if procfs::available() {
            let live = live_records(dir.path());
            assert_eq!(live, vec![p.record()]);
            let me = std::process::id() as i32;
            assert_eq!(descent(dir.path(), me).map(|r| r.run), Some("r-1".into()));
            // A record of a dead runner is ignored; it is kept while a claim names its holder
            // (it proves the runner dead once its pid is reused), and swept once none does.
            let mut dead = p.record();
            dead.runner.start += 1;
            dead.run = "dead".into();
            dead.holder = "run:h:1:dead".into();
            let stale = records_dir(dir.path()).join("dead.json");
            std::fs::write(&stale, serde_json::to_vec(&dead).unwrap()).unwrap();
            assert_eq!(live_records(dir.path()).len(), 1);
            drop(Presence::record_at(dir.path(), "run:h:1:s", "r-2").unwrap());
            assert_eq!(record_of(dir.path(), "run:h:1:dead"), Some(dead.clone()));
            sweep(dir.path(), |h| h == "run:h:1:dead");
            assert!(stale.exists(), "its holder still has a claim");
            sweep(dir.path(), |_| false);
            assert!(!stale.exists());
            assert!(file.exists(), "a live runner's record is never swept");
        }
        drop(p);
        assert!(!file.exists(), "the record goes with the runner");
    }
}
