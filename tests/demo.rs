//! `splice demo`: the example campaign reaches `done` in a scratch repository; every scenario id
//! is on a test, and the target branch holds every leaf's reviewed commit. Its parsing leaf
//! implements in a loop step that fails, improves, regresses (rolled back) and then succeeds.

mod common;

use std::process::Command;

use serde_json::Value;

fn git(dir: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = common::git().args(args).current_dir(dir).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn the_demo_campaign_is_driven_to_done() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    // The demo's suite runs `cargo test` in the scratch crate, so keep the toolchain's env.
    let out = common::hermetic_splice(&mut Command::new(env!("CARGO_BIN_EXE_splice")))
        .args(["demo", "--keep"])
        .arg(&dir)
        .env_remove("SPLICE_DIR")
        .env_remove("SPLICE_HOLDER")
        .env_remove("SPLICE_DISPATCHED")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(!stderr.contains("panicked at"));
    assert!(stdout.contains("status done"), "{stdout}");
    assert!(
        stdout.contains("approving as the person"),
        "the demo says when it acts as the person"
    );

    let beads: Vec<Value> = std::fs::read_dir(dir.join(".splice/beads"))
        .unwrap()
        .flatten()
        .map(|e| serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap())
        .collect();
    assert_eq!(beads.len(), 4, "a root and three leaves");
    assert!(beads.iter().all(|b| b["status"] == "closed"));
    let root = beads
        .iter()
        .find(|b| b["pipeline"]["kind"] == "root")
        .unwrap();
    let ids: Vec<&str> = root["pipeline"]["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(ids, ["S1", "S2", "S3", "S4", "S5"]);

    // Every scenario id is on a test declaration on the campaign branch.
    let (_, tests) = git(
        &dir,
        &["grep", "-h", "^fn s", "campaign/calc", "--", "tests"],
    );
    for id in &ids {
        let prefix = format!("fn {}_", id.to_lowercase());
        assert!(
            tests.lines().any(|l| l.contains(&prefix)),
            "{id} has no test on campaign/calc: {tests}"
        );
    }
    // The target branch holds every leaf's reviewed commit.
    for leaf in beads.iter().filter(|b| b["pipeline"]["kind"] == "leaf") {
        let sha = leaf["pipeline"]["reviewed_sha"].as_str().unwrap();
        let (ok, _) = git(&dir, &["merge-base", "--is-ancestor", sha, "campaign/calc"]);
        assert!(
            ok,
            "{} reviewed {sha}, which is not on campaign/calc",
            leaf["id"]
        );
    }
    // The integration check ran the suite and found every id.
    let evidence = root["pipeline"]["last_check"]["evidence"]
        .as_array()
        .unwrap();
    assert!(
        evidence
            .iter()
            .any(|f| f["kind"] == "suite" && f["verdict"] == "pass")
    );
    assert!(
        evidence
            .iter()
            .any(|f| f["kind"] == "coverage" && f["verdict"] == "pass")
    );

    delivered_whole_and_cleaned_up(&dir, root["id"].as_str().unwrap());
    the_loop_rolled_back_then_succeeded(&dir, &beads, &stdout);
}

/// Issue 13, "Demo": the parsing leaf (child 2) moved to the loop route; its loop step's
/// iterations scored a failing change, a better one, a regression below the first (rolled back
/// to iteration 2) and the fix (success); the output shows each decision, in that order; the
/// rolled-back commit is not what was delivered; the snapshot refs are gone.
fn the_loop_rolled_back_then_succeeded(dir: &std::path::Path, beads: &[Value], stdout: &str) {
    let ran = |b: &Value, step: &str| {
        b["pipeline"]["trajectory"]
            .as_array()
            .is_some_and(|t| t.iter().any(|i| i["step"] == step))
    };
    let looped: Vec<&Value> = beads.iter().filter(|b| ran(b, "implement-loop")).collect();
    assert_eq!(looped.len(), 1, "one node runs the demo's loop step");
    // Every other leaf's implement and generate-tests are the default manifest's loops: each
    // measured once, a success; the test generator wrote the tests (the code writer did not).
    let verified: Vec<&Value> = beads.iter().filter(|b| ran(b, "implement")).collect();
    assert_eq!(verified.len(), 2, "the other two leaves were verified");
    for b in verified {
        let t = b["pipeline"]["trajectory"].as_array().unwrap();
        let steps: Vec<&str> = t.iter().map(|i| i["step"].as_str().unwrap()).collect();
        assert_eq!(steps, ["implement", "generate-tests"], "{t:#?}");
        assert!(
            t.iter().all(|i| i["monitor"]["decision"] == "success"),
            "{t:#?}"
        );
        assert!(ran(b, "generate-tests"));
    }
    let leaf = looped[0];
    let id = leaf["id"].as_str().unwrap();
    assert!(id.ends_with(".2"), "the parsing leaf loops: {id}");
    assert_eq!(leaf["status"], "closed");
    assert_eq!(leaf["pipeline"]["route"], "leaf-loop");
    let t = leaf["pipeline"]["trajectory"].as_array().unwrap();
    assert!(t.iter().all(|i| i["step"] == "implement-loop"));
    let scores: Vec<i64> = t.iter().map(|i| i["score"].as_i64().unwrap()).collect();
    assert_eq!(scores, [-12, 24, -30, 60], "{t:#?}");
    let decisions: Vec<&str> = t
        .iter()
        .map(|i| i["monitor"]["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["continue", "continue", "rollback", "success"]);
    assert!(scores[2] < scores[0], "the regression is below the first");
    assert_eq!(t[2]["effect"]["effect"], "rolled_back");
    assert_eq!(t[2]["effect"]["restored"], 2);
    assert!(t[3].get("effect").is_none());
    assert_eq!(t[3]["state"]["tests"]["failed"], 0);
    // The step was completed on the successful iteration and the node went on.
    let steps: Vec<&str> = leaf["pipeline"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["step"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        ["generate-spec", "implement-loop", "review", "deliver"]
    );

    // Each decision is visible, in order: the iterations, the rollback, then success.
    let at = |needle: &str| {
        stdout
            .find(needle)
            .unwrap_or_else(|| panic!("no {needle:?} in:\n{stdout}"))
    };
    let lines = [
        format!("{id} implement-loop iteration 1: score -12; monitor: continue"),
        format!("{id} implement-loop iteration 2: score 24; monitor: continue"),
        format!("{id} implement-loop iteration 3: score -30; monitor: rollback to iteration 2"),
        format!("roll back {id} implement-loop after iteration 3 to iteration 2"),
        format!("{id} implement-loop iteration 4: score 60; monitor: success"),
        format!("check {id} implement-loop: ok"),
        format!("demo: {id} iteration 3 regressed"),
        format!("demo: {id} iteration 4 passed every check"),
    ];
    let places: Vec<usize> = lines.iter().map(|l| at(l)).collect();
    assert!(
        places.windows(2).all(|w| w[0] < w[1]),
        "out of order: {lines:#?}\n{stdout}"
    );

    // The regression's commit was rolled back: the delivered branch has iterations 1, 2 and 4.
    let (_, log) = git(dir, &["log", "--format=%s", "campaign/calc"]);
    for n in [1, 2, 4] {
        let subject = format!("{id}: implement, iteration {n}");
        assert!(log.lines().any(|l| l == subject), "{subject} not in {log}");
    }
    assert!(!log.contains("iteration 3"), "{log}");
    let (_, refs) = git(dir, &["for-each-ref", "refs/splice/snapshots"]);
    assert_eq!(refs.trim(), "", "snapshot refs left behind");
}

/// Issue 10: after `done`, the campaign's planning and reconcile documents are on its target
/// (item 4), and nothing splice created is left: no worktree (the root's, its `@target`
/// checkout, a leaf's) and no branch (item 10).
fn delivered_whole_and_cleaned_up(dir: &std::path::Path, root_id: &str) {
    for doc in [
        format!("docs/prp/{root_id}.md"),
        format!("docs/reconcile/{root_id}.md"),
    ] {
        let (ok, _) = git(dir, &["show", &format!("campaign/calc:{doc}")]);
        assert!(ok, "{doc} is not on campaign/calc");
    }
    let (_, branches) = git(dir, &["branch", "--list", "splice/*"]);
    assert_eq!(branches.trim(), "", "branches left behind");
    let left: Vec<String> = std::fs::read_dir(dir.join(".splice/worktrees"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "checkouts left behind: {left:?}");
    let (_, worktrees) = git(dir, &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
}

#[test]
fn the_demo_refuses_a_directory_that_is_not_empty() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("precious.txt"), "keep me").unwrap();
    let out = common::hermetic_splice(&mut Command::new(env!("CARGO_BIN_EXE_splice")))
        .args(["demo", "--keep"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty directory"));
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

#[test]
fn without_keep_the_demo_removes_its_scratch_repository_and_says_so() {
    // Issue 10, item 10: each `splice demo` used to leave a repository in the temp directory.
    let tmp = tempfile::tempdir().unwrap();
    let out = common::hermetic_splice(&mut Command::new(env!("CARGO_BIN_EXE_splice")))
        .arg("demo")
        .env("TMPDIR", tmp.path())
        .env_remove("SPLICE_DIR")
        .env_remove("SPLICE_HOLDER")
        .env_remove("SPLICE_DISPATCHED")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("status done"), "{stdout}");
    assert!(
        stdout.contains("removed (`splice demo --keep` keeps it)"),
        "{stdout}"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn kept_demo_prints_commands_that_run_as_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let out = common::hermetic_splice(&mut Command::new(env!("CARGO_BIN_EXE_splice")))
        .args(["demo", "--keep"])
        .env("TMPDIR", tmp.path())
        .env_remove("SPLICE_DIR")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    // The status command names this binary (not on PATH here), so it runs as printed.
    let line = stdout
        .lines()
        .find(|l| l.contains("--dir") && l.trim_end().ends_with("status"))
        .unwrap_or_else(|| panic!("no status command in {stdout}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let named = std::path::Path::new(words[0]).canonicalize().unwrap();
    let this = std::path::Path::new(env!("CARGO_BIN_EXE_splice"))
        .canonicalize()
        .unwrap();
    assert_eq!(named, this, "{line}");
    let status = Command::new(words[0]).args(&words[1..]).output().unwrap();
    assert_eq!(status.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&status.stdout).starts_with("status: done"));
}

/// `splice demo --setup-only DIR` prepares the campaign for a person to drive (`splice drive`):
/// the scratch repository with `.splice/`, the simulated agent configured, the campaign ready —
/// and nothing run: no dispatch recorded, no run directory.
#[test]
fn setup_only_prepares_the_campaign_and_runs_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let splice = |args: &[&str], cwd: &std::path::Path| {
        common::hermetic_splice(&mut Command::new(env!("CARGO_BIN_EXE_splice")))
            .args(args)
            .current_dir(cwd)
            .env_remove("SPLICE_DIR")
            .env_remove("SPLICE_HOLDER")
            .env_remove("SPLICE_DISPATCHED")
            .output()
            .unwrap()
    };
    let out = splice(&["demo", "--setup-only", dir.to_str().unwrap()], tmp.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("drive"),
        "it says what to run next: {stdout}"
    );

    let state = dir.join(".splice");
    let config = std::fs::read_to_string(state.join("config.toml")).unwrap();
    assert!(
        config.contains("sim-agent"),
        "the simulated agent is configured: {config}"
    );
    let beads: Vec<Value> = std::fs::read_dir(state.join("beads"))
        .unwrap()
        .flatten()
        .map(|e| serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap())
        .collect();
    assert_eq!(beads.len(), 1, "the campaign's root, not split yet");
    assert_eq!(beads[0]["pipeline"]["kind"], "root");
    assert_eq!(beads[0]["pipeline"]["autonomy"], "deep");
    let journal = std::fs::read_to_string(state.join("journal.jsonl")).unwrap();
    let verbs: Vec<String> = journal
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|r| r["verb"].as_str().map(str::to_string))
        .collect();
    assert!(
        !verbs.iter().any(|v| v == "claim" || v == "record-exit"),
        "no dispatch was recorded: {verbs:?}"
    );
    assert!(!state.join("runs").exists(), "no run was started");

    let status = splice(&["status"], &dir);
    let text = String::from_utf8_lossy(&status.stdout);
    assert_eq!(status.status.code(), Some(0), "{text}");
    assert!(text.starts_with("status: ready"), "{text}");

    // Not over a directory that holds something.
    let again = splice(&["demo", "--setup-only", dir.to_str().unwrap()], tmp.path());
    assert_ne!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stderr).contains("missing or empty directory"));
}
