//! Landing and worktrees under concurrency (issue 33, "Landing and worktrees are robust under
//! concurrency"): with `.splice/` committed, as the README recommends, several runners with
//! `--jobs 3` land every bead on `main` exactly once, every runner exits 0, and the main
//! checkout is left current — while the runners write `.splice/` under git's feet, a person's
//! `git status` takes the main checkout's index lock, and runners create, reuse and remove
//! worktrees side by side.
//!
//! The 8-runner load on 200 beads is long (minutes on 2 cores): it is `#[ignore]`d, so `cargo
//! test` alone lists it as ignored; `.ci/run` runs it with `--include-ignored` and
//! `SPLICE_LOAD_TESTS=1`, and so run it fails, never skips, without the variable. The small
//! versions run in every `cargo test`.

mod common;

use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use common::Repo;

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

/// A repository whose main checkout has `trunk` checked out: the runners land there, on the
/// checked-out branch, without a person's approval (`main` is protected: issue 33).
fn repo() -> Repo {
    let r = Repo::new();
    r.git(&["checkout", "-q", "-b", "trunk"]);
    r
}

/// `n` lone tasks delivering directly to `main` at wave autonomy (no gate stops them), the
/// simulated agent for every step, and `.splice/` committed. Returns the ids.
fn committed_tasks(r: &Repo, n: usize) -> Vec<String> {
    let ids: Vec<String> = (1..=n)
        .map(|i| {
            r.task(
                &format!("Task {i}"),
                &["--autonomy", "wave", "--delivery", "direct"],
            )
        })
        .collect();
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"{SPLICE}\", \"sim-agent\"]\nusage = \"file\"\n\n\
             [delivery]\nmethod = \"direct\"\n"
        ),
    );
    r.git(&["add", ".splice"]);
    r.git(&["commit", "-q", "-m", "splice state"]);
    assert!(
        !r.git(&["ls-files", ".splice/beads"]).is_empty(),
        "the bead files are committed"
    );
    ids
}

/// Start `runners` runners together, each with `--jobs jobs`, and wait for them all.
fn run_together(r: &Repo, runners: usize, jobs: usize) -> Vec<Output> {
    let jobs = jobs.to_string();
    let children: Vec<_> = (0..runners)
        .map(|_| {
            r.cmd(&["run", "--jobs", &jobs, "--output", "json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("splice run starts")
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().expect("splice run ends"))
        .collect()
}

/// Every runner exited 0, with no fault and no panic on its stderr.
fn all_exited_zero(outs: &[Output]) {
    for (i, out) in outs.iter().enumerate() {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "runner {i} exit: {err}");
        assert!(!err.contains("panicked"), "runner {i} panicked: {err}");
        assert!(!err.contains("splice: git:"), "runner {i}: {err}");
    }
}

/// Every bead is closed with its work on `main`, landed exactly once (one move of `main` by
/// splice for each bead's branch, as `main`'s reflog records), and the main checkout holds
/// `main`'s tip with nothing staged or changed outside `.splice/`.
fn every_bead_landed_once(r: &Repo, ids: &[String]) {
    let reflog = r.git(&["reflog", "--format=%gs", "trunk"]);
    let mut not_closed = Vec::new();
    for id in ids {
        let bead = r.bead(id);
        if bead["status"] != "closed" {
            not_closed.push(format!(
                "{id} at {}: {}",
                bead["pipeline"]["step"], bead["pipeline"]["last_check"]["reason"]
            ));
            continue;
        }
        let landing = format!("splice: land splice/{id} on trunk");
        let landed = reflog.lines().filter(|l| *l == landing).count();
        assert_eq!(landed, 1, "{id} landed {landed} times:\n{reflog}");
        let note = format!("work/{id}.md");
        assert!(
            !r.git(&["ls-tree", "trunk", "--", &note]).is_empty(),
            "{note} is not on trunk"
        );
        assert!(r.path().join(&note).is_file(), "{note} is not checked out");
    }
    assert!(not_closed.is_empty(), "not closed: {not_closed:#?}");
    let changed = r.git(&[
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ".",
        ":(exclude).splice",
    ]);
    assert_eq!(changed, "", "the main checkout is not at main's tip");
}

/// A person's editor polling `git status` in the main checkout: git refreshes the index as it
/// goes, taking `index.lock` each time. Stops when the returned flag is set.
fn git_status_loop(repo: &Path) -> (Arc<AtomicBool>, std::thread::JoinHandle<usize>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (flag, dir) = (stop.clone(), repo.to_path_buf());
    let handle = std::thread::spawn(move || {
        let mut n = 0;
        while !flag.load(Ordering::Relaxed) {
            let _ = common::git()
                .args(["status", "--porcelain"])
                .current_dir(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            n += 1;
        }
        n
    });
    (stop, handle)
}

#[test]
fn one_runner_with_three_jobs_lands_everything_while_splice_is_committed_and_written() {
    // Before: "cannot land on main: git: error reading file for hashing: " (the main checkout's
    // status hashed a bead file the writer was renaming), and "the index is locked" when a
    // `git status` held the main checkout's index, each escalating a bead for good.
    let r = repo();
    let ids = committed_tasks(&r, 8);
    let (stop, status) = git_status_loop(r.path());
    let outs = run_together(&r, 1, 3);
    stop.store(true, Ordering::Relaxed);
    let polls = status.join().unwrap();
    assert!(polls > 0);
    all_exited_zero(&outs);
    every_bead_landed_once(&r, &ids);
}

#[test]
fn two_runners_with_three_jobs_each_land_every_bead_once() {
    // Before: a runner exited 2 ("… not a git worktree: could not find repository") when the
    // other removed a closed node's worktree between its `ensure` and its read of HEAD.
    let r = repo();
    let ids = committed_tasks(&r, 20);
    let started = Instant::now();
    let outs = run_together(&r, 2, 3);
    eprintln!(
        "2 runners × 20 beads, --jobs 3: {:.1}s",
        started.elapsed().as_secs_f64()
    );
    all_exited_zero(&outs);
    every_bead_landed_once(&r, &ids);
}

#[test]
#[ignore = "the 8-runner load: minutes on 2 cores; needs SPLICE_LOAD_TESTS=1 (.ci/run)"]
fn eight_runners_on_two_hundred_beads_land_every_bead_once() {
    assert!(
        std::env::var_os("SPLICE_LOAD_TESTS").is_some_and(|v| !v.is_empty()),
        "the 8-runner load test runs with SPLICE_LOAD_TESTS=1 cargo test --test \
         landing_concurrency -- --include-ignored (.ci/run)"
    );
    let r = repo();
    let ids = committed_tasks(&r, 200);
    let started = Instant::now();
    let outs = run_together(&r, 8, 3);
    eprintln!(
        "8 runners × 200 beads, --jobs 3: {:.1}s",
        started.elapsed().as_secs_f64()
    );
    all_exited_zero(&outs);
    every_bead_landed_once(&r, &ids);
}

/// A lone task at its deliver step (direct delivery to `main`) whose reviewed work, one commit
/// writing `work/<id>.md`, is on `splice/<id>`. Returns the id.
fn reviewed_task(r: &Repo) -> String {
    let id = r.task("Reviewed", &["--delivery", "direct"]);
    r.ok(&[
        "transition",
        "route",
        "--bead",
        &id,
        "--to",
        "leaf",
        "--at",
        "review",
    ]);
    let wt = r.worktree(&id);
    let wt_arg = wt.to_str().unwrap();
    r.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        &format!("splice/{id}"),
        wt_arg,
        "trunk",
    ]);
    std::fs::create_dir_all(wt.join("work")).unwrap();
    std::fs::write(wt.join(format!("work/{id}.md")), "done\n").unwrap();
    r.git(&["-C", wt_arg, "add", "-A"]);
    r.git(&["-C", wt_arg, "commit", "-q", "-m", "work"]);
    let reviewed = r.git(&["-C", wt_arg, "rev-parse", "HEAD"]);
    std::fs::create_dir_all(wt.join("reviews")).unwrap();
    std::fs::write(
        wt.join(format!("reviews/{id}.md")),
        common::passing_review(&reviewed),
    )
    .unwrap();
    r.ok(&["transition", "complete", "--bead", &id, "--step", "review"]);
    assert_eq!(r.bead(&id)["pipeline"]["step"], "deliver");
    id
}

#[test]
fn an_index_lock_that_stays_held_refuses_the_landing_and_the_next_check_lands_it() {
    // A lock a crashed git left behind: splice waits for it (10 s), then refuses rather than
    // escalates, so the node is checked again (before, the escalation rested for good although
    // the advice said the next run would check it again).
    let r = repo();
    let id = reviewed_task(&r);
    let before = r.git(&["rev-parse", "trunk"]);
    let lock = r.path().join(".git/index.lock");
    std::fs::write(&lock, "").unwrap();
    let err = r.fails(1, &["transition", "deliver", "--bead", &id]);
    assert!(
        err.contains("refused") && err.contains("stayed busy"),
        "{err}"
    );
    assert!(err.contains("the next check lands it"), "{err}");
    assert_eq!(r.bead(&id)["pipeline"]["last_check"]["verdict"], "refuse");
    // Nothing landed, and the main checkout's files are as they were.
    assert_eq!(r.git(&["rev-parse", "trunk"]), before);
    assert!(!r.path().join(format!("work/{id}.md")).exists());
    std::fs::remove_file(&lock).unwrap();
    assert_eq!(
        r.git(&["status", "--porcelain", "--untracked-files=no"]),
        ""
    );

    r.ok(&["transition", "deliver", "--bead", &id]);
    assert_eq!(r.bead(&id)["status"], "closed");
    assert!(r.path().join(format!("work/{id}.md")).is_file());
    assert_eq!(
        r.git(&["status", "--porcelain", "--untracked-files=no"]),
        ""
    );
}
