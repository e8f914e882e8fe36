//! `splice drive`, the cockpit: refused without a terminal and to a dispatched session, and, in a
//! real terminal (tmux), the demo campaign driven to `done` by a person's keys — start a run, see
//! the gate, approve it, run on to done, quit — with the terminal given back as it was.
//!
//! The tmux tests are `#[ignore]`d, so `cargo test` alone lists them as ignored; `.ci/run` runs
//! them with `--include-ignored` and `SPLICE_TMUX_TESTS=1`, and so run each fails (never skips)
//! without the variable or without tmux. It waits on what the screen shows, each wait bounded by
//! a generous deadline, never on a timing.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Tmux servers started by this test process, to name their sockets apart.
static SESSIONS: AtomicUsize = AtomicUsize::new(0);

use common::Repo;
use splice::process::procfs;

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

    /// Type `text` literally, then Enter.
    fn line(&self, text: &str) {
        self.cmd(&["send-keys", "-t", "drive", "-l", text]);
        self.keys("Enter");
    }

    /// Wait until the screen shows `what` (any of them), at most `limit`; returns the screen.
    fn wait_for(&self, what: &[&str], limit: Duration) -> String {
        self.wait_until(
            &format!("{what:?}"),
            |s| what.iter().any(|w| s.contains(w)),
            limit,
        )
    }

    /// Wait until `ok` holds of the screen (`what` says what it waits for), at most `limit`.
    fn wait_until(&self, what: &str, ok: impl Fn(&str) -> bool, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {what} within {limit:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Once the selected node shows a pending gate, press `a`, and wait until it is gone.
    fn approve(&self) {
        self.wait_for(&["a approve"], Duration::from_secs(60));
        self.keys("a");
        self.wait_until(
            "the gate approved",
            |s| !s.contains("a approve"),
            Duration::from_secs(30),
        );
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// The tmux tests are `#[ignore]`d: `cargo test` alone lists them as ignored. Run with
/// `--include-ignored` (`.ci/run`), each fails unless `SPLICE_TMUX_TESTS=1` is set and tmux runs.
fn tmux_tests() {
    assert!(
        std::env::var("SPLICE_TMUX_TESTS").as_deref() == Ok("1"),
        "this test drives the cockpit in tmux: set SPLICE_TMUX_TESTS=1 (with tmux installed) and \
         run it with --include-ignored, as .ci/run does"
    );
    let found = Command::new("tmux").arg("-V").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "SPLICE_TMUX_TESTS=1 but tmux cannot be run: install tmux"
    );
}

#[must_use]
fn splice(args: &[&str], cwd: &Path) -> std::process::Output {
    common::hermetic_splice(&mut Command::new(env!("CARGO_BIN_EXE_splice")))
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
fn pane_command(dir: &Path, env: &str) -> String {
    let bin = env!("CARGO_BIN_EXE_splice");
    format!(
        "cd '{}' && env -u SPLICE_DIR -u SPLICE_HOLDER -u SPLICE_DISPATCHED {env} '{bin}' drive; \
         echo splice-drive-exited=$?; stty -a | tr ' ;' '\\n\\n' | grep -xE -- '-?(icanon|echo)' \
         | tr '\\n' ' '; echo; sleep 600",
        dir.display()
    )
}

/// Start the cockpit in DIR (prepared by `demo --setup-only`) in a tmux of the test's own.
fn cockpit(dir: &Path, env: &str) -> Tmux {
    let setup = splice(
        &["demo", "--setup-only", dir.to_str().unwrap()],
        Path::new("/"),
    );
    assert_eq!(setup.status.code(), Some(0), "{setup:?}");
    cockpit_again(dir, env)
}

/// Start the cockpit in DIR as it is.
fn cockpit_again(dir: &Path, env: &str) -> Tmux {
    let tmux = Tmux {
        socket: format!(
            "splice-test-{}-{}",
            std::process::id(),
            SESSIONS.fetch_add(1, Ordering::Relaxed)
        ),
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
        &pane_command(dir, env),
    ]);
    tmux.wait_for(&["r run"], Duration::from_secs(30));
    tmux
}

/// Each dispatch of the simulated agent takes a second longer, so a run is seen in flight.
fn slow_agent(dir: &Path) {
    let config = dir.join(".splice/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let bin = env!("CARGO_BIN_EXE_splice");
    let from = format!("command = [\"{bin}\", \"sim-agent\"]");
    assert!(text.contains(&from), "{text}");
    let to = format!("command = [\"sh\", \"-c\", \"sleep 1; exec '{bin}' sim-agent\"]");
    std::fs::write(&config, text.replace(&from, &to)).unwrap();
}

/// How the pane's shell saw the cockpit exit: its code and the terminal's modes after.
fn quit(tmux: &Tmux) -> String {
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
    screen
}

#[test]
#[ignore = "needs SPLICE_TMUX_TESTS=1 and tmux (.ci/run)"]
fn a_person_drives_the_demo_to_done_in_the_cockpit() {
    tmux_tests();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let tmux = cockpit(&dir, "");
    tmux.keys("r");
    // The run rests at the campaign's planning gate: a person approves it, and runs on.
    let mut approvals = 0;
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let screen = tmux.screen();
        let message = screen.lines().rev().find(|l| !l.trim().is_empty());
        let message = message.unwrap_or_default();
        if message.starts_with("run ended: done") {
            break;
        }
        if screen.contains("a approve") {
            tmux.approve();
            approvals += 1;
        } else if message.starts_with("run ended") || message.starts_with("approved") {
            tmux.keys("r");
        }
        assert!(
            Instant::now() < deadline && approvals < 10,
            "the campaign did not reach done:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        approvals >= 1,
        "the demo's planning gate waited for a person"
    );

    quit(&tmux);
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

/// The cockpit watches a run started in another terminal; the editor it opens while a run of
/// its own is live is the person's (a person's verb from it is judged on its merits, not refused
/// as a dispatch's); `s` stops its run as Ctrl-C stops `splice run`, leaving no claim.
#[test]
#[ignore = "needs SPLICE_TMUX_TESTS=1 and tmux (.ci/run)"]
fn a_run_elsewhere_is_watched_an_editor_is_a_persons_and_a_stopped_run_leaves_no_claim() {
    tmux_tests();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let probe = tmp.path().join("probe.out");
    let editor = tmp.path().join("editor.sh");
    std::fs::write(
        &editor,
        format!(
            "#!/bin/sh\nls '{state}/runs/runners' > '{out}' 2>&1\n\
             root=$(ls '{state}/beads' | head -1 | sed 's/.json$//')\n\
             '{bin}' transition unpark --bead \"$root\" --reason probe >> '{out}' 2>&1\n\
             echo probe-rc=$? >> '{out}'\n",
            state = dir.join(".splice").display(),
            out = probe.display(),
            bin = env!("CARGO_BIN_EXE_splice"),
        ),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&editor).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&editor, perms).unwrap();
    let tmux = cockpit(&dir, &format!("EDITOR='{}'", editor.display()));
    slow_agent(&dir);

    // `splice run` in another terminal, to its rest at the gate: the cockpit shows that run.
    let elsewhere = splice(&["run"], &dir);
    assert_eq!(elsewhere.status.code(), Some(0), "{elsewhere:?}");
    let run = std::fs::read_dir(dir.join(".splice/runs"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n != "runners" && n != "agent-home")
        .unwrap();
    tmux.wait_for(&[run.as_str()], Duration::from_secs(30));

    tmux.approve();
    tmux.keys("r");
    // A dispatch of the cockpit's run is in flight: its node is claimed.
    let deadline = Instant::now() + Duration::from_secs(60);
    while claimed(&dir).is_empty() {
        assert!(
            Instant::now() < deadline,
            "no dispatch started:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    tmux.keys("e");
    let deadline = Instant::now() + Duration::from_secs(30);
    let said = loop {
        let said = std::fs::read_to_string(&probe).unwrap_or_default();
        if said.contains("probe-rc=") {
            break said;
        }
        assert!(Instant::now() < deadline, "the editor never ran: {said}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        said.lines().next().is_some_and(|l| l.ends_with(".json")),
        "the cockpit's run was live while the editor ran: {said}"
    );
    assert!(
        said.contains("is not parked"),
        "judged as a person's: {said}"
    );
    assert!(!said.contains("person's verb"), "{said}");

    tmux.keys("s");
    tmux.wait_for(&["run stopped", "run ended"], Duration::from_secs(60));
    quit(&tmux);
    assert_eq!(
        claimed(&dir),
        Vec::<String>::new(),
        "claims left after the run stopped"
    );
}

/// The beads whose claim is held.
fn claimed(dir: &Path) -> Vec<String> {
    let beads = std::fs::read_dir(dir.join(".splice/beads"))
        .unwrap()
        .flatten();
    beads
        .filter_map(|e| {
            serde_json::from_slice::<serde_json::Value>(&std::fs::read(e.path()).ok()?).ok()
        })
        .filter(|b| !b["pipeline"]["lease"].is_null())
        .map(|b| b["id"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The pids of `splice drive` processes working in `dir`.
fn cockpits_in(dir: &Path) -> Vec<u32> {
    let bin = env!("CARGO_BIN_EXE_splice");
    let want = std::fs::canonicalize(dir).unwrap();
    let found: Vec<(u32, Option<u32>)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
            args.first() == Some(&bin.as_bytes())
                && args.get(1) == Some(&&b"drive"[..])
                && cwd.as_deref() == Some(want.as_path())
        })
        .map(|pid| (pid, procfs::stat(pid as i32).map(|s| s.ppid as u32)))
        .collect();
    // A process the cockpit forked (git, an agent) looks like the cockpit until it execs.
    found
        .iter()
        .filter(|(_, parent)| !found.iter().any(|(pid, _)| Some(*pid) == *parent))
        .map(|(pid, _)| *pid)
        .collect()
}

#[test]
#[ignore = "needs SPLICE_TMUX_TESTS=1 and tmux (.ci/run)"]
fn a_terminal_that_hangs_up_ends_the_cockpit_and_its_run_leaving_no_claim() {
    tmux_tests();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let tmux = cockpit(&dir, "");
    slow_agent(&dir);
    tmux.keys("r");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while claimed(&dir).is_empty() {
        assert!(std::time::Instant::now() < deadline, "no dispatch started");
        std::thread::sleep(Duration::from_millis(100));
    }
    let pids = cockpits_in(&dir);
    assert_eq!(pids.len(), 1, "one cockpit: {pids:?}");
    // The terminal goes away (an ssh connection dropped): the cockpit must not linger.
    tmux.cmd(&["kill-server"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !cockpits_in(&dir).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the cockpit outlived its terminal"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        claimed(&dir).is_empty(),
        "its run was stopped: {:?}",
        claimed(&dir)
    );
}

/// Issue 35's design mode in the cockpit: three turns with a scripted design agent, whose
/// request to crystallize waits for the person's `/crystallize`; the critic's must-fix finding
/// shown beside the plan and blocking `/approve`; a fix and a second crystallize; then, after
/// quitting, the conversation resumed in a new cockpit and `/approve` starting the campaign.
#[test]
#[ignore = "needs SPLICE_TMUX_TESTS=1 and tmux (.ci/run)"]
fn a_design_conversation_is_crystallized_blocked_fixed_resumed_and_approved() {
    tmux_tests();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let setup = splice(
        &["demo", "--setup-only", dir.to_str().unwrap()],
        Path::new("/"),
    );
    assert_eq!(setup.status.code(), Some(0), "{setup:?}");
    let config = dir.join(".splice/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push('\n');
    text.push_str(&common::design_scripts(&dir));
    std::fs::write(&config, text).unwrap();
    let git = |args: &[&str]| {
        let out = common::git().args(args).current_dir(&dir).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["branch", "greeter"]);
    let long = Duration::from_secs(60);

    let tmux = cockpit_again(&dir, "");
    tmux.keys("D");
    tmux.wait_for(&["design (new session)"], long);
    tmux.line("We need a greeter.");
    tmux.wait_for(&["answer 1: noted."], long);
    tmux.line("It greets in English only.");
    tmux.wait_for(&["answer 3: noted."], long);
    tmux.line("That is all: crystallize it.");
    let screen = tmux.wait_for(&["answer 5: noted."], long);
    assert!(screen.contains("design d1 (conversation)"), "{screen}");
    let screen = tmux.wait_for(&["asks to crystallize"], long);
    assert!(
        screen.contains("no plan yet"),
        "the request did nothing:\n{screen}"
    );

    tmux.line("/crystallize");
    let screen = tmux.wait_for(&["MUST FIX"], long);
    assert!(screen.contains("names no file"), "{screen}");
    assert!(
        !screen.contains("asks to crystallize"),
        "a request carried out is not shown as pending:\n{screen}"
    );
    tmux.line("/approve");
    let screen = tmux.wait_for(&["refused:"], long);
    assert!(screen.contains("must-fix"), "{screen}");

    tmux.line("Task hello writes src/bye.txt.");
    tmux.wait_for(&["answer 7: noted."], long);
    tmux.line("/crystallize");
    tmux.wait_for(&["the critic passed it"], long);
    tmux.keys("Escape");
    tmux.wait_for(&["design session d1 kept"], long);
    quit(&tmux);
    drop(tmux);

    // A new cockpit resumes the conversation where it was.
    let tmux = cockpit_again(&dir, "");
    tmux.keys("D");
    let screen = tmux.wait_for(&["design session d1 resumed (8 turn(s))"], long);
    assert!(screen.contains("answer 7: noted."), "{screen}");
    assert!(screen.contains("critic: passed"), "{screen}");
    tmux.line("/approve");
    tmux.wait_for(&["plan approved: campaign"], long);
    tmux.keys("Escape");
    tmux.wait_for(&["r run"], long);
    quit(&tmux);
    let listed = splice(&["design", "list", "--json"], &dir);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed["sessions"][0]["status"], "approved", "{listed:#}");
    let campaign = listed["sessions"][0]["campaign"].as_str().unwrap();
    let root = splice(&["show", campaign, "--json"], &dir);
    assert_eq!(root.status.code(), Some(0), "{root:?}");
    assert!(
        !dir.join("design/agent-wrote").exists(),
        "the design agent wrote the checkout"
    );
}
