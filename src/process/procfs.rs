//! What `/proc` says about other processes (Linux): a process's parent, group, state and start
//! time, the processes whose working directory is inside a directory, and this process's
//! children. Elsewhere every question answers "unknown" (`None`, empty), and callers say what
//! that weakens.
//!
//! A pid alone is not an identity: pids are reused. [`Stat::start`] (clock ticks since boot) is
//! fixed for a process's life, so a pid with its start time names one process.

use std::path::{Path, PathBuf};

/// The fields of `/proc/<pid>/stat` splice reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    pub pid: i32,
    /// `R`, `S`, `D`, `Z` (a zombie: exited, not yet reaped), …
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    /// When the process started, in clock ticks since boot.
    pub start: u64,
}

impl Stat {
    /// Exited but not yet reaped.
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }
}

/// Is `/proc` there to answer (Linux)?
pub fn available() -> bool {
    cfg!(target_os = "linux") && Path::new("/proc/self/stat").is_file()
}

/// Parse one `/proc/<pid>/stat` line. The command name is in parentheses and may itself hold
/// spaces and parentheses, so the fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let (head, rest) = text.rsplit_once(')')?;
    let pid = head.split_once('(')?.0.trim().parse().ok()?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(3) ppid(4) pgrp(5) … starttime(22), numbered from 1 as in proc(5).
    let field = |n: usize| fields.get(n - 3).copied();
    Some(Stat {
        pid,
        state: field(3)?.chars().next()?,
        ppid: field(4)?.parse().ok()?,
        pgrp: field(5)?.parse().ok()?,
        start: field(22)?.parse().ok()?,
    })
}

/// The stat of `pid`, or `None` when it is gone (or there is no `/proc`).
pub fn stat(pid: i32) -> Option<Stat> {
    if pid <= 0 {
        return None;
    }
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Is the process `pid` that started at `start` still alive (a zombie is not)?
pub fn alive(pid: i32, start: u64) -> bool {
    stat(pid).is_some_and(|s| s.start == start && !s.is_zombie())
}

/// The start time of this process.
pub fn own_start() -> Option<u64> {
    stat(std::process::id() as i32).map(|s| s.start)
}

/// `pid` and its ancestors up to (not including) pid 1, nearest first; empty without `/proc`.
/// A process whose parent died was re-parented (to pid 1, or to a child subreaper), so this is
/// the chain as it stands now.
pub fn ancestry(pid: i32) -> Vec<Stat> {
    let mut chain = Vec::new();
    let mut next = pid;
    while next > 1 && chain.len() < 4096 {
        let Some(s) = stat(next) else { break };
        next = s.ppid;
        chain.push(s);
    }
    chain
}

/// A live process whose working directory is inside a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub pid: i32,
    /// Its command line, for a person to recognize it (arguments joined by spaces).
    pub command: String,
}

/// The live processes other than this one whose working directory is `dir` or inside it (only
/// those this user may inspect). Empty without `/proc`.
pub fn users_of(dir: &Path) -> Vec<User> {
    let Ok(dir) = dir.canonicalize() else {
        return Vec::new();
    };
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut users = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // A zombie has no working directory: the link does not resolve.
        let cwd: Option<PathBuf> = std::fs::read_link(entry.path().join("cwd")).ok();
        if pid != me && cwd.is_some_and(|c| c.starts_with(&dir)) {
            users.push(User {
                pid,
                command: command_of(&entry.path()),
            });
        }
    }
    users.sort_by_key(|u| u.pid);
    users
}

/// The command line of the process at `/proc/<pid>` (`proc`), its arguments joined by spaces.
fn command_of(proc: &Path) -> String {
    std::fs::read(proc.join("cmdline"))
        .map(|raw| {
            String::from_utf8_lossy(&raw)
                .split('\0')
                .filter(|a| !a.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// The live processes other than this one whose environment (as they were started: `/proc/<pid>/
/// environ`) holds every `NAME=value` of `vars`. Only processes this user may inspect are seen;
/// a zombie has no environment. Empty without `/proc`.
pub fn with_environment(vars: &[(&str, &str)]) -> Vec<User> {
    let wanted: Vec<Vec<u8>> = vars
        .iter()
        .map(|(k, v)| format!("{k}={v}").into_bytes())
        .collect();
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let has = |w: &Vec<u8>| environ.split(|b| *b == 0).any(|e| e == w.as_slice());
        if pid != me && !wanted.is_empty() && wanted.iter().all(has) {
            found.push(User {
                pid,
                command: command_of(&entry.path()),
            });
        }
    }
    found.sort_by_key(|u| u.pid);
    found
}

/// This process's children (of every thread), from `/proc/self/task/*/children`.
pub fn own_children() -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// What a process group has done so far: CPU time (its members' and their reaped children's,
/// in clock ticks) and bytes read and written (`/proc/<pid>/io`'s `rchar` + `wchar`: files,
/// pipes and sockets alike). Members that are gone take theirs with them, so only growth
/// between two readings means anything. Zero where there is no `/proc`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Activity {
    pub cpu_ticks: u64,
    pub io_bytes: u64,
}

/// [`Activity`] of the processes in group `pgid`.
pub fn group_activity(pgid: i32) -> Activity {
    let mut total = Activity::default();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return total;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if parse_stat(&text).is_none_or(|s| s.pgrp != pgid) {
            continue;
        }
        total.cpu_ticks = total.cpu_ticks.saturating_add(cpu_ticks(&text));
        if let Ok(io) = std::fs::read_to_string(format!("/proc/{pid}/io")) {
            total.io_bytes = total.io_bytes.saturating_add(io_bytes(&io));
        }
    }
    total
}

/// Clock ticks per second, as `stat`'s times count them.
pub fn ticks_per_second() -> u64 {
    // SAFETY: sysconf takes an integer and touches no memory.
    let n = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(n).unwrap_or(100)
}

/// utime + stime + cutime + cstime (fields 14–17 of `stat`).
fn cpu_ticks(stat: &str) -> u64 {
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    (14..=17)
        .filter_map(|n| fields.get(n - 3)?.parse::<u64>().ok())
        .fold(0, u64::saturating_add)
}

/// `rchar` + `wchar` of an `io` file.
fn io_bytes(io: &str) -> u64 {
    io.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            matches!(k, "rchar" | "wchar").then(|| v.trim().parse::<u64>().ok())?
        })
        .fold(0, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_name_with_spaces_and_parentheses() {
        let line = "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 987654 1 2";
        let s = parse_stat(line).unwrap();
        assert_eq!(
            (s.pid, s.state, s.ppid, s.pgrp, s.start),
            (4242, 'S', 17, 4242, 987654)
        );
        assert!(!s.is_zombie());
        assert!(parse_stat("12 (x) Z 1").is_none(), "too short");
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn this_process_is_alive_and_descends_from_its_parent() {
        if !available() {
            return;
        }
        let me = std::process::id() as i32;
        let start = own_start().unwrap();
        assert!(alive(me, start));
        assert!(
            !alive(me, start + 1),
            "another start time is another process"
        );
        let chain = ancestry(me);
        assert_eq!(chain[0].pid, me);
        assert_eq!(chain[1].pid, stat(me).unwrap().ppid);
    }

    #[test]
    fn a_process_in_a_directory_is_its_user() {
        if !available() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("inner");
        std::fs::create_dir(&sub).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .current_dir(&sub)
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        assert!(own_children().contains(&pid));
        // Until it has exec'd, the child is a copy of this process with no command line yet.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let found = loop {
            let found = users_of(dir.path()).into_iter().find(|u| u.pid == pid);
            match found {
                Some(u) if u.command.starts_with("sleep") => break Some(u),
                _ if std::time::Instant::now() > deadline => break None,
                _ => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        };
        let _ = child.kill();
        let _ = child.wait();
        assert!(found.is_some(), "the child {pid} works in the directory");
        assert!(users_of(&dir.path().join("missing")).is_empty());
    }

    #[test]
    fn a_process_is_found_by_what_its_environment_holds() {
        if !available() {
            return;
        }
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("SPLICE_TEST_MARK", "procfs-env")
            .env("SPLICE_TEST_OTHER", "x")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mark = [
            ("SPLICE_TEST_MARK", "procfs-env"),
            ("SPLICE_TEST_OTHER", "x"),
        ];
        let found = loop {
            let found = with_environment(&mark).into_iter().find(|u| u.pid == pid);
            match found {
                Some(u) if u.command.starts_with("sleep") => break Some(u),
                _ if std::time::Instant::now() > deadline => break None,
                _ => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        };
        let other = with_environment(&[
            ("SPLICE_TEST_MARK", "procfs-env"),
            ("SPLICE_TEST_OTHER", "y"),
        ]);
        let _ = child.kill();
        let _ = child.wait();
        assert!(found.is_some(), "the child {pid} carries the mark");
        assert!(other.iter().all(|u| u.pid != pid), "every pair must match");
        assert!(with_environment(&[]).is_empty(), "no pairs match nothing");
    }
}
