//! `splice drive`, the cockpit: refused without a terminal and to a dispatched session, and, in a
//! real terminal (tmux), the demo campaign driven to `done` by a person's keys — start a run, see
//! the gate, approve it, run on to done, quit — with the terminal given back as it was.
//!
//! The tmux test runs only with `SPLICE_TMUX_TESTS=1` (CI sets it, `.ci/run`); with it set and
//! tmux missing it fails rather than skip. It waits on what the screen shows, each wait bounded by
//! a generous deadline, never on a timing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::Repo;

#[test]
fn drive_without_a_terminal_says_what_to_use_and_exits_2() {
    let r = Repo::new();
    r.init(&[]);
    // The test's stdout is a pipe, not a terminal.
    let err = r.fails(2, &["drive"]);
    assert!(err.contains("needs a terminal"), "{err}");
    assert!(
        err.contains("splice status") && err.contains("splice run"),
        "{err}"
    );
}

#[test]
fn a_dispatched_session_cannot_drive() {
    let r = Repo::new();
    r.init(&[]);
    let out = r
        .cmd(&["drive"])
        .env("SPLICE_DISPATCHED", "1")
        .output()
        .unwrap();
    common::no_panic(&out);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`drive` is a person's verb"), "{err}");
}

/// A tmux server of this test's own (its own socket), killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "drive"])
    }

    fn keys(&self, keys: &str) {
        self.cmd(&["send-keys", "-t", "drive", keys]);
    }

    /// Wait until the screen shows `what` (any of them), at most `limit`; returns the screen.
    fn wait_for(&self, what: &[&str], limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let screen = self.screen();
            if what.iter().any(|w| screen.contains(w)) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {what:?} within {limit:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

fn tmux_tests() -> bool {
    if std::env::var("SPLICE_TMUX_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: set SPLICE_TMUX_TESTS=1 to run the cockpit in tmux");
        return false;
    }
    let found = Command::new("tmux").arg("-V").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "SPLICE_TMUX_TESTS=1 but tmux cannot be run: install tmux"
    );
    true
}

fn splice(args: &[&str], cwd: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_splice"))
        .args(args)
        .current_dir(cwd)
        .env_remove("SPLICE_DIR")
        .env_remove("SPLICE_HOLDER")
        .env_remove("SPLICE_DISPATCHED")
        .output()
        .unwrap()
}

/// The shell command the pane runs: the cockpit, then how it exited and whether the terminal is
/// back in its cooked mode (`icanon`, `echo`; raw mode shows `-icanon`, `-echo`).
fn pane_command(dir: &Path) -> String {
    let bin = env!("CARGO_BIN_EXE_splice");
    format!(
        "cd '{}' && env -u SPLICE_DIR -u SPLICE_HOLDER -u SPLICE_DISPATCHED '{bin}' drive; \
         echo splice-drive-exited=$?; stty -a | tr ' ;' '\\n\\n' | grep -xE -- '-?(icanon|echo)' \
         | tr '\\n' ' '; echo; sleep 600",
        dir.display()
    )
}

#[test]
fn a_person_drives_the_demo_to_done_in_the_cockpit() {
    if !tmux_tests() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir: PathBuf = tmp.path().join("demo");
    let setup = splice(&["demo", "--setup-only", dir.to_str().unwrap()], tmp.path());
    assert_eq!(setup.status.code(), Some(0), "{setup:?}");

    let tmux = Tmux {
        socket: format!("splice-test-{}", std::process::id()),
    };
    tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "drive",
        "-x",
        "120",
        "-y",
        "40",
        &pane_command(&dir),
    ]);
    tmux.wait_for(&["r run"], Duration::from_secs(30));
    tmux.keys("r");
    // The run rests at the campaign's planning gate: a person approves it, and runs on.
    let mut approvals = 0;
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let screen = tmux.wait_for(&["a approve", "run ended: done"], Duration::from_secs(60));
        if screen.contains("run ended: done") {
            break;
        }
        tmux.keys("a");
        tmux.wait_for(&["approved "], Duration::from_secs(30));
        approvals += 1;
        tmux.keys("r");
        assert!(
            Instant::now() < deadline && approvals < 10,
            "the campaign did not reach done:\n{screen}"
        );
    }
    assert!(
        approvals >= 1,
        "the demo's planning gate waited for a person"
    );

    tmux.keys("q");
    // The pane's shell prints how the cockpit exited, then the terminal's modes.
    let screen = tmux.wait_for(&["icanon"], Duration::from_secs(30));
    assert!(screen.contains("splice-drive-exited=0"), "{screen}");
    let modes = screen
        .lines()
        .find(|l| l.contains("icanon"))
        .unwrap_or_default();
    assert_eq!(
        modes.trim(),
        "icanon echo",
        "the terminal is back in cooked mode:\n{screen}"
    );
    let flags = tmux.cmd(&[
        "display-message",
        "-p",
        "-t",
        "drive",
        "#{alternate_on} #{cursor_flag}",
    ]);
    assert_eq!(
        flags.trim(),
        "0 1",
        "the alternate screen was left and the cursor shown"
    );

    let status = splice(&["status"], &dir);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.starts_with("status: done"), "{text}");
}

#[test]
fn drive_json_prints_the_state_it_would_open_on_without_a_terminal() {
    let r = Repo::new();
    let root = r.init(&[]);
    let drive = r.ok(&["drive", "--json"]);
    assert_eq!(drive, r.ok(&["status", "--json"]));
    assert!(drive.to_string().contains(&root));
}
