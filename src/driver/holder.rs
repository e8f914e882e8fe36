//! Who a run is: the holder identity that names its process (`run:<host>:<pid>:<run-id>`), and
//! whether the process behind such a holder still lives.
//!
//! Two answers, one quick and one that can be proved: [`holder_alive`] asks only whether a
//! process has the holder's pid; [`judge`] also reads the runner's record under
//! `.splice/runs/runners/` (its pid's start time and the boot it ran in), so a pid reused by
//! another process does not pass for the runner. What [`judge`] calls dead is what a run with
//! `--reclaim-dead` may release (`super::reclaim`) and what `splice status` says has died.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

use super::snapshot::Identity;
use crate::authority::presence;
use crate::error::Result;
use crate::model::Snapshot;
use crate::model::snapshot::{DeathCause, Died};
use crate::process::procfs;

/// This process's host name, for holder identities.
pub fn host() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).replace(':', "_")
}

/// A fresh run id and the holder identity that names this process: `run:<host>:<pid>:<run-id>`.
pub fn identity() -> Result<Identity> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let stamp = crate::clock::now()?.format("%Y%m%dT%H%M%SZ");
    let pid = std::process::id();
    let run = format!("{stamp}-{pid}-{n}");
    Ok(Identity {
        holder: format!("run:{}:{pid}:{run}", host()),
        run,
    })
}

/// Is the process behind a `run:<host>:<pid>:…` holder alive? `None` when it names another host
/// or is not a runner's holder.
pub fn holder_alive(holder: &str) -> Option<bool> {
    own_pid(holder).map(pid_exists)
}

/// The pid of a `run:<host>:<pid>:…` holder of this host.
fn own_pid(holder: &str) -> Option<i32> {
    let mut parts = holder.splitn(4, ':');
    if parts.next() != Some("run") {
        return None;
    }
    let (h, pid) = (parts.next()?, parts.next()?.parse::<i32>().ok()?);
    (h == host() && pid > 0).then_some(pid)
}

/// Does any process have `pid` (one of another user's too)?
fn pid_exists(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// What can be told of a claim's holder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// Nothing can be proved: not a runner of this host (a person's name, another host's runner),
    /// or a runner whose record is of another boot (this host before a reboot, or another
    /// machine of the same name sharing the directory).
    Unknown,
    /// Its process lives — or a process has its pid and no record of this boot says it is
    /// another one.
    Alive,
    /// Provably dead on this host.
    Dead(Died),
}

/// Judge the holder of a claim in the state directory `state_dir`. A runner of this host is
/// dead when its record (same boot) names a start time its pid's process does not have (the pid
/// was reused), or the process is gone or a zombie; without a record, when no process has its
/// pid. A record of another boot proves nothing: the holder is [`Liveness::Unknown`].
pub fn judge(state_dir: &Path, holder: &str) -> Liveness {
    let Some(pid) = own_pid(holder) else {
        return Liveness::Unknown;
    };
    let dead = |cause| Liveness::Dead(Died { pid, cause });
    let record = presence::record_of(state_dir, holder);
    match record {
        Some(r) if r.runner.pid != pid => Liveness::Unknown,
        Some(r) if !procfs::available() || r.boot_id.is_empty() => match pid_exists(pid) {
            true => Liveness::Alive,
            false => dead(DeathCause::Gone),
        },
        Some(r) if r.boot_id != presence::boot_id() => Liveness::Unknown,
        Some(r) => match procfs::stat(pid) {
            None => dead(DeathCause::Gone),
            Some(s) if s.start != r.runner.start => dead(DeathCause::Reused),
            Some(s) if s.is_zombie() => dead(DeathCause::Gone),
            Some(_) => Liveness::Alive,
        },
        None => match procfs::stat(pid) {
            Some(s) if s.is_zombie() => dead(DeathCause::Gone),
            _ if pid_exists(pid) => Liveness::Alive,
            _ => dead(DeathCause::Gone),
        },
    }
}

/// The holders of `snapshot`'s claims (other than its own) that [`judge`] finds dead: the
/// snapshot's `dead_holders`.
pub fn dead_holders(
    state_dir: &Path,
    snapshot: &Snapshot,
) -> std::collections::BTreeMap<String, Died> {
    let mut judged = std::collections::BTreeMap::new();
    for lease in snapshot
        .beads
        .iter()
        .filter_map(|b| b.pipeline.lease.as_deref())
    {
        if lease.holder == snapshot.holder || judged.contains_key(&lease.holder) {
            continue;
        }
        judged.insert(lease.holder.clone(), judge(state_dir, &lease.holder));
    }
    judged
        .into_iter()
        .filter_map(|(h, l)| match l {
            Liveness::Dead(d) => Some((h, d)),
            _ => None,
        })
        .collect()
}
