//! Issue 10, item 8: a person undoes mistakes. `splice close ID --reason R` (the work is done
//! another way) and `splice cancel ID --reason R` (it will not be done) close a bead, release its
//! claim, and are journaled; a cancelled bead does not count toward the run status and does not
//! satisfy `blocks` dependencies; cancelling a child of a split fails the parent's conservation
//! check until `transition resplit` redoes the split, which it may only before the split step's
//! gate has passed.

mod common;

use std::time::{Duration, Instant};

use common::Repo;
use serde_json::{Value, json};

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

fn status(r: &Repo) -> Value {
    r.ok(&["status", "--json"])
}

fn node<'a>(status: &'a Value, id: &str) -> &'a Value {
    status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {status:#}"))
}

/// A campaign root at to-issues split into two children: `.1` claims S1, `.2` claims S2 and
/// waits for `.1`.
fn split_campaign(r: &Repo) -> String {
    let root = r.init(&["--scenarios", "S1,S2"]);
    r.ok(&[
        "transition",
        "route",
        &root,
        "--to",
        "root",
        "--at",
        "to-issues",
    ]);
    r.write(
        "children.json",
        r#"[{"title": "A", "scenarios": ["S1"]},
            {"title": "B", "scenarios": ["S2"], "depends_on": [0]}]"#,
    );
    r.ok(&["transition", "split", &root, "--children", "children.json"]);
    root
}

#[test]
fn close_ends_a_bead_done_another_way_and_is_journaled() {
    let r = Repo::new();
    let id = r.task("Done elsewhere", &[]);
    let out = r.ok(&["close", &id, "--reason", "fixed by hand in 1a2b3c"]);
    assert_eq!(out["schema_version"], 1);
    assert_eq!(out["bead"], id.as_str());
    assert_eq!(out["cancelled"], false);
    assert_eq!(out["closed"], serde_json::json!([id]));
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed");
    assert_eq!(b["close_reason"], "fixed by hand in 1a2b3c");
    assert!(b["pipeline"].get("cancelled").is_none());
    assert!(r.journal().contains("\"verb\":\"close\""));
    assert_eq!(status(&r)["status"], "done", "closed as done counts");
    let err = r.fails(1, &["close", &id, "--reason", "again"]);
    assert!(err.contains("is closed"), "{err}");
    let err = r.fails(2, &["close", &id, "--reason", " "]);
    assert!(err.contains("--reason"), "{err}");
}

#[test]
fn a_cancelled_parked_bead_no_longer_escalates_and_does_not_count_toward_done() {
    let r = Repo::new();
    let mistake = r.task("Created by mistake", &[]);
    let real = r.task("The real work", &[]);
    r.ok(&["transition", "park", &mistake, "--reason", "not wanted"]);
    r.ok(&["close", &real, "--reason", "done in another repo"]);
    assert_eq!(status(&r)["status"], "escalated");

    let out = r.ok(&["cancel", &mistake, "--reason", "created by mistake"]);
    assert_eq!(out["cancelled"], true);
    let b = r.bead(&mistake);
    assert_eq!(b["status"], "closed");
    assert_eq!(b["pipeline"]["cancelled"]["reason"], "created by mistake");
    assert!(r.journal().contains("\"verb\":\"cancel\""));
    assert_eq!(
        status(&r)["status"],
        "done",
        "the cancelled bead does not count"
    );
    let text = r.run(&["status"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("(cancelled)"), "{text}");

    // With nothing but cancelled beads, nothing was done.
    let r = Repo::new();
    let only = r.task("Only a mistake", &[]);
    r.ok(&["cancel", &only, "--reason", "mistake"]);
    assert_eq!(status(&r)["status"], "idle");
}

#[test]
fn a_cancelled_bead_does_not_satisfy_blocks_dependencies() {
    let r = Repo::new();
    let root = split_campaign(&r);
    let (one, two) = (format!("{root}.1"), format!("{root}.2"));
    r.ok(&["close", &one, "--reason", "done by hand"]);
    assert_ne!(node(&status(&r), &two)["rest"]["kind"], "blocked");

    let r = Repo::new();
    let root = split_campaign(&r);
    let (one, two) = (format!("{root}.1"), format!("{root}.2"));
    r.ok(&["cancel", &one, "--reason", "not needed"]);
    let st = status(&r);
    let rest = &node(&st, &two)["rest"];
    assert_eq!(rest["kind"], "blocked", "{rest}");
    assert_eq!(rest["by"], serde_json::json!([one]));
}

#[test]
fn cancelling_a_bead_with_open_children_needs_recursive() {
    let r = Repo::new();
    let root = split_campaign(&r);
    let before = r.beads_bytes();
    let err = r.fails(1, &["cancel", &root, "--reason", "wrong campaign"]);
    assert!(err.contains(&format!("{root}.1, {root}.2")), "{err}");
    assert!(err.contains("--recursive"), "{err}");
    assert_eq!(r.beads_bytes(), before, "nothing was written");

    let journal_lines = r.journal().lines().count();
    let out = r.ok(&["cancel", &root, "--reason", "wrong campaign", "--recursive"]);
    let closed = serde_json::json!([root, format!("{root}.1"), format!("{root}.2")]);
    assert_eq!(out["closed"], closed);
    for id in closed.as_array().unwrap() {
        let b = r.bead(id.as_str().unwrap());
        assert_eq!(b["status"], "closed");
        assert!(b["pipeline"]["cancelled"].is_object(), "{id}");
    }
    assert_eq!(
        r.journal().lines().count(),
        journal_lines + 2,
        "one record (and its commit marker)"
    );
}

#[test]
fn a_cancelled_child_fails_the_conservation_check_until_the_parent_is_resplit() {
    let r = Repo::new();
    let root = split_campaign(&r);
    r.ok(&["cancel", &format!("{root}.1"), "--reason", "split wrongly"]);
    let complete = ["transition", "complete", &root, "--step", "to-issues"];
    let out = r.run(&complete);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{root}.1 was cancelled")), "{err}");
    assert!(err.contains("transition resplit"), "{err}");

    r.write(
        "again.json",
        r#"[{"title": "A again", "scenarios": ["S1"]},
            {"title": "B again", "scenarios": ["S2"], "depends_on": [0]}]"#,
    );
    let out = r.ok(&["transition", "resplit", &root, "--children", "again.json"]);
    let (three, four) = (format!("{root}.3"), format!("{root}.4"));
    assert_eq!(out["children"], serde_json::json!([three, four]));
    assert_eq!(out["superseded"], serde_json::json!([format!("{root}.2")]));
    let two = r.bead(&format!("{root}.2"));
    assert_eq!(two["status"], "closed");
    assert!(two["pipeline"]["cancelled"].is_object());
    assert_eq!(
        r.bead(&four)["dependencies"][0]["depends_on_id"],
        three.as_str()
    );
    let checked = r.ok(&complete);
    assert_eq!(checked["verdict"], "pass", "{checked:#}");

    // Once the gate has passed, the split stands.
    r.ok(&["transition", "approve", &root, "--step", "to-issues"]);
    let err = r.fails(
        1,
        &["transition", "resplit", &root, "--children", "again.json"],
    );
    assert!(err.contains("which does not split"), "{err}");
}

#[test]
fn a_claim_is_released_when_its_holder_is_dead_and_refused_while_another_may_live() {
    let r = Repo::new();
    let id = r.task("Claimed", &[]);
    r.ok(&["transition", "claim", &id, "--holder", "alice"]);
    let before = r.beads_bytes();
    let err = r.fails(1, &["cancel", &id, "--reason", "mistake"]);
    assert!(err.contains("claimed by alice"), "{err}");
    assert!(err.contains("--clear"), "says how to clear it: {err}");
    assert_eq!(r.beads_bytes(), before);
    r.ok(&["transition", "release", &id, "--holder", "alice"]);

    // A runner of this host whose process is gone.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let dead = format!("run:{}:{pid}:some-run", host());
    r.ok(&["transition", "claim", &id, "--holder", &dead]);
    let out = r.ok(&["cancel", &id, "--reason", "mistake"]);
    assert_eq!(out["released"][0]["holder"], dead.as_str());
    assert_eq!(out["released"][0]["alive"], false);
    assert!(r.bead(&id)["pipeline"].get("lease").is_none());
}

#[test]
fn cancelling_a_bead_in_flight_kills_its_dispatch_and_the_run_goes_on() {
    let r = Repo::unconfined();
    let id = r.task("Slow", &[]);
    let pidfile = r.path().join("agent.pid");
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"sh\", \"-c\", \"echo $$ > {}; exec {SPLICE} sim-agent --sleep-ms 60000\"]\n",
            pidfile.display()
        ),
    );
    let runner = r
        .cmd(&["run", "--output", "json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(pidfile.exists() && r.bead(&id)["pipeline"]["lease"].is_object()) {
        assert!(Instant::now() < deadline, "the runner never dispatched");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = r.ok(&["cancel", &id, "--reason", "not wanted after all"]);
    assert_eq!(out["released"][0]["alive"], true, "{out:#}");
    let started = Instant::now();
    let out = runner.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the runner killed the dispatch rather than wait for it"
    );
    assert_eq!(out.status.code(), Some(0));
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(env["status"], "idle", "{env:#}");
    let agent: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: signal 0 only asks whether the agent's process still exists.
    let alive = unsafe { libc::kill(agent, 0) } == 0;
    assert!(!alive, "the dispatch was killed");
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed");
    assert!(b["pipeline"]["cancelled"].is_object());
    let events = std::fs::read_dir(r.state().join("runs"))
        .unwrap()
        .flatten()
        .filter_map(|d| std::fs::read_to_string(d.path().join("events.jsonl")).ok())
        .collect::<String>();
    assert!(
        events.contains("was closed while its dispatch ran"),
        "{events}"
    );
}

/// This host's name as a runner's holder writes it.
fn host() -> String {
    let out = std::process::Command::new("hostname").output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .replace(':', "_")
}

/// A node's worktree on `splice/<id>` from `main`, where splice keeps it, with an uncommitted
/// file of work in progress.
fn worktree_in_progress(r: &Repo, id: &str) -> std::path::PathBuf {
    let wt = r.worktree(id);
    let branch = format!("splice/{id}");
    r.git(&["worktree", "add", "-q", "-b", &branch, wt.to_str().unwrap()]);
    std::fs::write(wt.join("wip.md"), "not committed yet\n").unwrap();
    wt
}

fn has_branch(r: &Repo, branch: &str) -> bool {
    !r.git(&["branch", "--list", branch]).is_empty()
}

#[test]
fn cancel_leaves_the_worktree_a_live_runner_works_in_and_says_so() {
    let r = Repo::new();
    let id = r.task("In progress", &[]);
    let wt = worktree_in_progress(&r, &id);
    // A live runner of this host holds the claim (this test's own process stands in for it).
    let live = format!("run:{}:{}:some-run", host(), std::process::id());
    r.ok(&["transition", "claim", &id, "--holder", &live]);

    let out = r.ok(&["cancel", &id, "--reason", "not wanted after all"]);

    let cleanup = &out["cleanup"];
    assert_eq!(cleanup["left"], json!([id]), "{out:#}");
    // Why: its claim was a live runner's, whose dispatch may still be writing the worktree.
    assert_eq!(out["released"][0]["holder"], live.as_str(), "{out:#}");
    assert_eq!(out["released"][0]["alive"], true, "{out:#}");
    assert_eq!(cleanup["removed"], json!([]), "{out:#}");
    assert_eq!(cleanup["deleted"], json!([]), "{out:#}");
    assert_eq!(cleanup["failed"], json!([]), "{out:#}");
    assert_eq!(
        std::fs::read_to_string(wt.join("wip.md")).unwrap(),
        "not committed yet\n",
        "the worktree and its uncommitted work are where they were"
    );
    assert!(r.git(&["worktree", "list"]).contains(&id));
    assert!(has_branch(&r, &format!("splice/{id}")));
    assert!(r.bead(&id)["pipeline"]["cancelled"].is_object());
}

#[test]
fn cancel_cleans_up_after_a_dead_runners_claim_removing_the_worktree_and_merged_branch() {
    let r = Repo::new();
    let id = r.task("Abandoned", &[]);
    let wt = r.worktree(&id);
    let branch = format!("splice/{id}");
    r.git(&["worktree", "add", "-q", "-b", &branch, wt.to_str().unwrap()]);
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let dead = format!("run:{}:{pid}:some-run", host());
    r.ok(&["transition", "claim", &id, "--holder", &dead]);

    let out = r.ok(&["cancel", &id, "--reason", "its runner died"]);

    let cleanup = &out["cleanup"];
    assert_eq!(out["released"][0]["alive"], false, "{out:#}");
    assert_eq!(cleanup["left"], json!([]), "{out:#}");
    assert_eq!(cleanup["removed"], json!([id]), "{out:#}");
    assert_eq!(cleanup["deleted"], json!([branch]), "{out:#}");
    assert_eq!(cleanup["failed"], json!([]), "{out:#}");
    assert!(!wt.exists());
    assert!(!r.git(&["worktree", "list"]).contains(&id));
    assert!(!has_branch(&r, &branch));
}
