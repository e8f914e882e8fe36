//! Issue 33, "Dead runners": a claim whose runner died (`kill -9`) is named for what it is, and a
//! person may let a run release it (`splice run --reclaim-dead`, `[limits] reclaim_dead`) — never
//! a Slurm job's claim, a live holder's, or one while a process of its dispatch still runs.

mod common;

use std::process::{Child, Command, Stdio};

use common::Repo;
use serde_json::Value;

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

/// The host name splice puts in a runner's holder (`:` would split the holder).
fn host() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    assert_eq!(rc, 0);
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).replace(':', "_")
}

/// A pid no process has any more: a child that exited and was reaped.
fn dead_pid() -> i32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id() as i32;
    child.wait().unwrap();
    pid
}

/// A runner holder of this host naming `pid`.
fn holder_of(pid: i32) -> String {
    format!("run:{}:{pid}:20260101T000000Z-{pid}-0", host())
}

/// A lone task at wave autonomy whose steps the simulated agent does, claimed by `holder`.
fn claimed_task(r: &Repo, holder: &str) -> String {
    let id = r.task("Left behind", &["--autonomy", "wave"]);
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"{SPLICE}\", \"sim-agent\"]\nusage = \"file\"\n\n\
             [delivery]\nmethod = \"direct\"\n"
        ),
    );
    r.ok(&["transition", "claim", "--bead", &id, "--holder", holder]);
    id
}

fn status_text(r: &Repo) -> String {
    let out = r.run(&["status", "--color", "never"]);
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn status_says_the_runner_that_claimed_a_node_has_died() {
    let r = Repo::unconfined();
    let pid = dead_pid();
    let holder = holder_of(pid);
    let id = claimed_task(&r, &holder);

    let text = status_text(&r);
    let headline = text.lines().next().unwrap();
    assert!(
        !headline.contains("another runner is at work"),
        "the headline must not say a dead runner works: {headline}"
    );
    assert!(
        headline.contains(&format!(
            "the runner that claimed {id} has died (pid {pid} gone)"
        )),
        "{headline}"
    );
    assert!(headline.contains("splice run --reclaim-dead"), "{headline}");

    // The JSON says the same: the rest carries how the holder died.
    let status = r.ok(&["status", "--json"]);
    let node = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id.as_str())
        .unwrap();
    assert_eq!(node["rest"]["kind"], "running");
    assert_eq!(node["rest"]["died"]["pid"], pid);
    assert_eq!(node["rest"]["died"]["cause"], "gone");

    // A run without the flag releases nothing and rests as before (`suspended-running`, 11).
    let before = r.bead(&id);
    let out = r.run(&["run", "--exit-status"]);
    assert_eq!(out.status.code(), Some(11));
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(
        human.contains(&format!("the runner that claimed {id} has died")),
        "{human}"
    );
    assert_eq!(
        r.bead(&id)["pipeline"]["lease"],
        before["pipeline"]["lease"]
    );
}
