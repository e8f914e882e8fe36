//! Delivery on the user's repository (issue 10): splice itself lands a direct delivery on the
//! target (an agent never moves the target ref), keeps a checkout of the target current or
//! refuses to touch a dirty one, refuses a branch that changes `.splice/`, records a pull
//! request only once it is proven, cleans up what it created once the work is on the target, and
//! tells a deep campaign's delivery that it may merge its pull request into the campaign branch.

mod common;

use std::process::Command;

use common::{Repo, Reviewed, git_in};
use serde_json::Value;

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

/// The simulated agent for every step, delivering by `method`.
fn sim_agent(r: &Repo, method: &str) {
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"{SPLICE}\", \"sim-agent\"]\nusage = \"file\"\n\n\
             [delivery]\nmethod = \"{method}\"\n"
        ),
    );
}

fn run(r: &Repo) -> Value {
    r.ok(&["run", "--output", "json"])
}

/// The nodes waiting at a landing gate (issue 33: `main` is protected, so a person approves
/// each landing before it moves).
fn pending_landings(r: &Repo) -> Vec<String> {
    let status = r.ok(&["status", "--json"]);
    status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["rest"]["land"].is_object())
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect()
}

/// [`run`], a person approving each landing it waits for, until it rests otherwise.
fn run_approving(r: &Repo) -> Value {
    loop {
        let env = run(r);
        let pending = pending_landings(r);
        if pending.is_empty() {
            return env;
        }
        for id in pending {
            r.ok(&["transition", "approve", "--bead", &id, "--step", "deliver"]);
        }
    }
}

/// A person's `deliver` of a node whose target is protected: the check stops at the landing
/// gate, the person approves, and the next `deliver` lands.
fn deliver_approved(r: &Repo, id: &str) -> Value {
    let out = r.ok(&["transition", "deliver", "--bead", id]);
    assert_eq!(out["gate"], "pending", "{out:#}");
    r.ok(&["transition", "approve", "--bead", id, "--step", "deliver"]);
    r.ok(&["transition", "deliver", "--bead", id])
}

/// Tracked changes in the main checkout (`.splice/` is untracked in these repositories).
fn tracked_changes(r: &Repo) -> String {
    r.git(&["status", "--porcelain", "--untracked-files=no"])
}

/// A lone task at its deliver step (direct delivery to `main`) whose reviewed work is one commit
/// writing `files` on `splice/<id>`, in a worktree where splice makes it. Returns the id and the
/// reviewed commit.
fn reviewed_task(r: &Repo, title: &str, files: &[(&str, &str)]) -> (String, String) {
    reviewed_task_on(r, "main", title, files)
}

/// [`reviewed_task`] delivering to `target`.
fn reviewed_task_on(
    r: &Repo,
    target: &str,
    title: &str,
    files: &[(&str, &str)],
) -> (String, String) {
    r.reviewed_task(&Reviewed {
        title,
        delivery: "direct",
        target,
        files,
    })
}

fn is_ancestor(r: &Repo, commit: &str, of: &str) -> bool {
    common::git()
        .args(["merge-base", "--is-ancestor", commit, of])
        .current_dir(r.path())
        .status()
        .unwrap()
        .success()
}

// --- item 2: splice lands a direct delivery, and keeps the checkout of the target current ----

#[test]
fn direct_delivery_to_the_checked_out_branch_leaves_the_checkout_current_and_clean() {
    let r = Repo::new();
    let id = r.task("Write the notes", &["--autonomy", "wave"]);
    sim_agent(&r, "direct");
    let env = run_approving(&r);
    assert_eq!(env["status"], "done", "{env:#}");
    let reviewed = r.bead(&id)["pipeline"]["reviewed_sha"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(is_ancestor(&r, &reviewed, "main"));
    // The main checkout has `main` checked out: its files and index follow the new tip, so
    // nothing shows as staged (a `git commit -a` would otherwise undo the delivery).
    assert_eq!(
        tracked_changes(&r),
        "",
        "the checkout of main is not current"
    );
    assert!(r.path().join(format!("work/{id}.md")).is_file());
    // The check says what it landed.
    let floors = r.bead(&id)["pipeline"]["last_check"]["evidence"].clone();
    let land = floors
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "land")
        .unwrap_or_else(|| panic!("no landing in {floors:#}"));
    assert_eq!(land["verdict"], "pass");
    let reason = land["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(&format!("landed splice/{id} on main by fast-forward")),
        "{reason}"
    );
}

#[test]
fn a_target_checked_out_in_another_worktree_follows_when_clean_and_refuses_when_dirty() {
    let r = Repo::new();
    r.git(&["branch", "campaign/x"]);
    let other = tempfile::tempdir().unwrap();
    let other = other.path().join("other");
    r.git(&[
        "worktree",
        "add",
        "-q",
        other.to_str().unwrap(),
        "campaign/x",
    ]);
    let (a, _) = reviewed_task_on(&r, "campaign/x", "A", &[("src/a.rs", "pub fn a() {}\n")]);
    let (b, _) = reviewed_task_on(&r, "campaign/x", "B", &[("src/b.rs", "pub fn b() {}\n")]);
    r.ok(&["transition", "deliver", "--bead", &a]);
    assert!(
        other.join("src/a.rs").is_file(),
        "the other checkout did not follow"
    );
    assert_eq!(git_in(&other, &["status", "--porcelain"]), "");

    std::fs::write(other.join("README.md"), "edited there\n").unwrap();
    let before = r.git(&["rev-parse", "campaign/x"]);
    let err = r.fails(1, &["transition", "deliver", "--bead", &b]);
    assert!(
        err.contains("escalated") && err.contains("README.md"),
        "{err}"
    );
    assert!(err.contains(&other.display().to_string()), "{err}");
    assert_eq!(r.git(&["rev-parse", "campaign/x"]), before);
    assert!(!other.join("src/b.rs").exists());
}

#[test]
fn direct_delivery_refuses_a_dirty_checkout_of_the_target_and_says_what_to_run() {
    let r = Repo::new();
    let id = r.task("Write the notes", &["--autonomy", "wave"]);
    sim_agent(&r, "direct");
    r.write("README.md", "a person's edit in progress\n");
    let before = r.git(&["rev-parse", "main"]);
    let env = run_approving(&r);
    assert_eq!(env["status"], "escalated", "{env:#}");
    assert_eq!(
        r.git(&["rev-parse", "main"]),
        before,
        "main moved under a dirty checkout"
    );
    assert_eq!(
        std::fs::read_to_string(r.path().join("README.md")).unwrap(),
        "a person's edit in progress\n"
    );
    let reason = r.bead(&id)["pipeline"]["last_check"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("README.md"), "{reason}");
    assert!(
        reason.contains(&format!("splice transition deliver --bead {id}")),
        "{reason}"
    );
    // Doing exactly what it says (its commands, run as printed) delivers, leaves `.splice/`
    // alone, and the person's edit comes back.
    let between = |from: &str, to: &str| {
        let start = reason.find(from).unwrap() + from.len();
        reason[start..][..reason[start..].find(to).unwrap()].to_string()
    };
    let set_aside = between("set just those files aside (`", "`)");
    let pop = between("only after the landing bring them back with `", "`");
    assert!(set_aside.ends_with("-- README.md"), "{set_aside}");
    let sh = |cmd: &str| {
        let out = Command::new("sh").args(["-c", cmd]).output().unwrap();
        assert!(out.status.success(), "{cmd}: {out:?}");
    };
    let journal = std::fs::read(r.state().join("journal.jsonl")).unwrap();
    sh(&set_aside);
    assert_eq!(
        std::fs::read(r.state().join("journal.jsonl")).unwrap(),
        journal,
        "the stash took splice's state"
    );
    // The checkout clean, the check asks for the landing's approval (main is protected) before
    // it lands.
    let out = deliver_approved(&r, &id);
    assert_eq!(out["closed"], true, "{out:#}");
    assert_eq!(tracked_changes(&r), "");
    sh(&pop);
    assert_eq!(
        std::fs::read_to_string(r.path().join("README.md")).unwrap(),
        "a person's edit in progress\n"
    );
    assert!(r.path().join(format!("work/{id}.md")).is_file());
}

#[test]
fn an_untracked_file_the_delivery_would_overwrite_stops_it_and_is_kept() {
    let r = Repo::new();
    let (id, _) = reviewed_task(&r, "A", &[("src/a.rs", "pub fn a() {}\n")]);
    r.write("src/a.rs", "a person's draft\n");
    let before = r.git(&["rev-parse", "main"]);
    // The check escalates at once: no one is asked to approve a landing the checkout refuses.
    let err = r.fails(1, &["transition", "deliver", "--bead", &id]);
    assert!(
        err.contains("escalated") && err.contains("src/a.rs"),
        "{err}"
    );
    assert!(r.bead(&id)["pipeline"]["gate"].is_null());
    assert_eq!(r.git(&["rev-parse", "main"]), before);
    assert_eq!(
        std::fs::read_to_string(r.path().join("src/a.rs")).unwrap(),
        "a person's draft\n"
    );
}

#[test]
fn two_deliveries_to_one_target_at_once_both_land_and_the_checkout_follows() {
    let r = Repo::new();
    let (a, ra) = reviewed_task(&r, "A", &[("src/a.rs", "pub fn a() {}\n")]);
    let (b, rb) = reviewed_task(&r, "B", &[("src/b.rs", "pub fn b() {}\n")]);
    for id in [&a, &b] {
        r.ok(&["transition", "deliver", "--bead", id]);
        r.ok(&["transition", "approve", "--bead", id, "--step", "deliver"]);
    }
    let children: Vec<_> = [&a, &b]
        .iter()
        .map(|id| {
            r.cmd(&["transition", "deliver", "--bead", id])
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
    }
    assert!(is_ancestor(&r, &ra, "main") && is_ancestor(&r, &rb, "main"));
    assert_eq!(tracked_changes(&r), "");
    assert!(r.path().join("src/a.rs").is_file() && r.path().join("src/b.rs").is_file());
    // The second landing is a merge commit that names the bead.
    let log = r.git(&["log", "--format=%s", "main"]);
    assert!(log.contains(&a) || log.contains(&b), "{log}");
}

#[test]
fn a_merge_that_conflicts_refuses_with_the_paths_and_moves_nothing() {
    let r = Repo::new();
    let (id, _) = reviewed_task(&r, "A", &[("README.md", "theirs\n")]);
    r.write("README.md", "ours\n");
    r.git(&["commit", "-qam", "ours"]);
    let before = r.git(&["rev-parse", "main"]);
    let err = r.fails(1, &["transition", "deliver", "--bead", &id]);
    assert!(
        err.contains("conflict") && err.contains("README.md"),
        "{err}"
    );
    assert_eq!(r.git(&["rev-parse", "main"]), before);
    assert_eq!(tracked_changes(&r), "");
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["step"], "deliver", "nothing is sent back");
    assert_eq!(b["pipeline"]["last_check"]["verdict"], "refuse");
}

// --- item 4b: the live state, never a checked-out copy ---------------------------------------

#[test]
fn inside_a_worktree_discovery_finds_the_live_state_not_a_checked_out_copy() {
    let r = Repo::new();
    let id = r.task("Write the notes", &[]);
    sim_agent(&r, "direct");
    // The user commits `.splice/`: every worktree then checks out an old copy of it.
    r.git(&["add", ".splice"]);
    r.git(&["commit", "-qm", "splice state"]);
    let env = run(&r);
    assert_eq!(env["status"], "suspended-human", "{env:#}");
    let wt = r.worktree(&id);
    assert!(
        wt.join(".splice/beads").is_dir(),
        "the worktree holds a copy"
    );
    let out = r
        .cmd(&["transition", "show", "--bead", &id])
        .current_dir(wt.join("specs"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        shown["pipeline"]["gate"]["state"], "pending",
        "the copy was read, not the live state: {shown:#}"
    );
}

#[test]
fn delivery_refuses_a_branch_that_changes_splice_state() {
    let r = Repo::new();
    let (id, _) = reviewed_task(
        &r,
        "A",
        &[
            ("src/a.rs", "pub fn a() {}\n"),
            (".splice/notes.txt", "x\n"),
        ],
    );
    let before = r.git(&["rev-parse", "main"]);
    let err = r.fails(1, &["transition", "deliver", "--bead", &id]);
    assert!(err.contains(".splice/notes.txt"), "{err}");
    assert_eq!(r.git(&["rev-parse", "main"]), before);
}

// --- item 10: what splice created goes once the work is on the target ------------------------

#[test]
fn a_finished_lone_task_leaves_no_worktree_and_no_branch() {
    let r = Repo::new();
    let id = r.task("Write the notes", &["--autonomy", "wave"]);
    sim_agent(&r, "direct");
    let env = run_approving(&r);
    assert_eq!(env["status"], "done", "{env:#}");
    assert!(!r.worktree(&id).exists(), "its worktree is left");
    assert_eq!(
        r.git(&["branch", "--list", "splice/*"]),
        "",
        "its branch is left"
    );
    assert_eq!(
        r.git(&["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
}

#[test]
fn a_branch_with_undelivered_commits_is_kept_and_the_run_says_so() {
    let r = Repo::new();
    let (id, _) = reviewed_task(&r, "A", &[("src/a.rs", "pub fn a() {}\n")]);
    deliver_approved(&r, &id);
    // A commit made on the branch after delivery is not on the target.
    let wt = r.worktree(&id);
    std::fs::write(wt.join("later.txt"), "later\n").unwrap();
    git_in(&wt, &["add", "later.txt"]);
    git_in(&wt, &["commit", "-q", "-m", "later"]);
    // A run checks its agent command exists before it starts (`docs/agents.md`).
    sim_agent(&r, "direct");
    let out = r.run(&["run", "--output", "human"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!wt.exists(), "the worktree is removed: {stdout}");
    let branch = format!("splice/{id}");
    assert_eq!(
        r.git(&["branch", "--list", &branch]),
        branch,
        "the branch is kept"
    );
    assert!(
        stdout.contains(&format!("kept {branch}")) && stdout.contains("not on main"),
        "{stdout}"
    );
}

// --- item 13: a pull request is recorded once its delivery is proven ------------------------

#[test]
fn deliver_with_a_pr_url_before_the_review_records_no_pr_url() {
    let r = Repo::new();
    let id = r.task("T", &["--target", "main"]);
    r.ok(&[
        "transition",
        "route",
        "--bead",
        &id,
        "--to",
        "leaf",
        "--at",
        "deliver",
    ]);
    let err = r.fails(
        1,
        &[
            "transition",
            "deliver",
            "--bead",
            &id,
            "--pr-url",
            "https://forge.example/pr/9",
        ],
    );
    assert!(err.contains("no reviewed commit"), "{err}");
    let b = r.bead(&id);
    assert!(b["pipeline"]["pr_url"].is_null(), "{:#}", b["pipeline"]);
}
