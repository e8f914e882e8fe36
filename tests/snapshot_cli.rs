//! `splice snapshot` and `splice status` against a state directory in a temp dir.

use std::path::Path;
use std::process::{Command, Output};

use splice::model::Bead;
use splice::model::bead::Lease;
use splice::model::{Kind, Snapshot, Status};

const NOW: &str = "2025-02-03T04:05:06Z";

fn bead(id: &str, parent: Option<&str>, route: &str, step: &str) -> Bead {
    let mut b = Bead::new(id.into(), format!("{id} title"), String::new(), NOW);
    b.parent = parent.map(Into::into);
    b.pipeline.route = route.into();
    b.pipeline.step = step.into();
    b.pipeline.kind = match route {
        "root" => Kind::Root,
        "compound" => Kind::Compound,
        _ => Kind::Leaf,
    };
    b.pipeline.seq = 3;
    b.pipeline.entered = 1;
    b
}

fn write(repo: &Path, beads: &[Bead]) {
    let dir = repo.join(".splice/beads");
    std::fs::create_dir_all(&dir).unwrap();
    for b in beads {
        std::fs::write(dir.join(format!("{}.json", b.id)), b.to_file_bytes()).unwrap();
    }
}

#[must_use]
fn splice(repo: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_splice"))
        .args(args)
        .arg("--dir")
        .arg(repo)
        .env_clear()
        .env("SPLICE_NOW", NOW)
        // None of the machine's git configuration (tests/common's `hermetic_splice`).
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap()
}

fn campaign(repo: &Path) {
    let mut root = bead("sp-root", None, "root", "delegate");
    // Where the campaign lands, as `splice init` records it (the temp dir is no git repository,
    // so no checked-out branch could stand in).
    root.pipeline.target = Some("main".into());
    root.pipeline.split = Some(Box::new(splice::model::bead::SplitRecord {
        children: vec!["sp-root.1".into(), "sp-root.2".into()],
        seq: 2,
    }));
    let mut one = bead("sp-root.1", Some("sp-root"), "leaf", "implement");
    one.pipeline.lease = Some(Box::new(Lease {
        holder: "alice".into(),
        since: NOW.into(),
        credential_sha256: None,
        job: None,
    }));
    let mut two = bead("sp-root.2", Some("sp-root"), "leaf", "implement");
    two.pipeline.attempts.insert("implement", 1);
    let mut done = bead("sp-other", None, "leaf", "deliver");
    done.status = Status::Closed;
    write(repo, &[root, one, two, done]);
    std::fs::create_dir_all(repo.join(".splice/worktrees/sp-root.2")).unwrap();
    std::fs::create_dir_all(repo.join(".splice/worktrees/sp-root@target")).unwrap();
    std::fs::write(
        repo.join(".splice/config.toml"),
        "[limits]\njobs = 3\nmax_passes = 9\n\n[autonomy]\ndefault = \"wave\"\n",
    )
    .unwrap();
}

#[test]
fn snapshot_reads_beads_worktrees_config_and_clock() {
    let tmp = tempfile::tempdir().unwrap();
    campaign(tmp.path());
    let out = splice(tmp.path(), &["snapshot", "--holder", "h-1", "--run", "r-1"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let snap: Snapshot = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(snap.now, NOW);
    assert_eq!(snap.holder, "h-1");
    assert_eq!(snap.run, "r-1");
    assert_eq!(snap.limits.jobs, 3);
    assert_eq!(snap.limits.max_passes, Some(9));
    assert_eq!(snap.counters.passes, 0);
    assert_eq!(snap.autonomy_default, Some(splice::model::Autonomy::Wave));
    // A node with a target checkout is listed too (issue 10: the runner cleans it up).
    assert_eq!(
        snap.worktrees,
        vec!["sp-root".to_string(), "sp-root.2".to_string()]
    );
    let ids: Vec<&str> = snap.beads.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(ids, ["sp-other", "sp-root", "sp-root.1", "sp-root.2"]);
    assert!(snap.manifest.routes.contains_key("leaf"));
}

#[test]
fn snapshot_scope_keeps_the_tree_and_defaults_the_identity() {
    let tmp = tempfile::tempdir().unwrap();
    campaign(tmp.path());
    let out = splice(tmp.path(), &["snapshot", "--scope", "sp-root"]);
    assert_eq!(out.status.code(), Some(0));
    let snap: Snapshot = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = snap.beads.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(ids, ["sp-root", "sp-root.1", "sp-root.2"]);
    assert_eq!(snap.scope.as_deref(), Some("sp-root"));
    assert_eq!(snap.holder, "snapshot");

    let missing = splice(tmp.path(), &["snapshot", "--scope", "sp-nope"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("sp-nope"));
}

#[test]
fn snapshot_then_decide_round_trips() {
    let tmp = tempfile::tempdir().unwrap();
    campaign(tmp.path());
    let snap = splice(tmp.path(), &["snapshot"]);
    let file = tmp.path().join("snap.json");
    std::fs::write(&file, &snap.stdout).unwrap();
    let a = splice(
        tmp.path(),
        &["decide", "--snapshot", file.to_str().unwrap()],
    );
    let b = splice(
        tmp.path(),
        &["decide", "--snapshot", file.to_str().unwrap()],
    );
    assert_eq!(a.status.code(), Some(0));
    assert_eq!(a.stdout, b.stdout);
    let d: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(d["status"], "ready");
    assert_eq!(d["actions"][0]["action"], "dispatch");
    assert_eq!(d["actions"][0]["bead"], "sp-root.2");
    assert_eq!(d["actions"][0]["attempt"], 2);
    assert_eq!(d["nodes"]["sp-root.1"]["rest"]["kind"], "running");
}

/// Issue 9 (13): a bad bead file no longer fails the whole read; the snapshot names it with its
/// error, and a scope rooted at it is still a fault naming it.
#[test]
fn bad_bead_file_is_named_and_the_rest_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    campaign(tmp.path());
    std::fs::write(tmp.path().join(".splice/beads/sp-bad.json"), "{").unwrap();
    let out = splice(tmp.path(), &["snapshot"]);
    assert_eq!(out.status.code(), Some(0));
    let snap: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(snap["unreadable"][0]["file"], ".splice/beads/sp-bad.json");
    assert!(!snap["unreadable"][0]["error"].as_str().unwrap().is_empty());
    assert!(!snap["beads"].as_array().unwrap().is_empty());
    let out = splice(tmp.path(), &["snapshot", "--scope", "sp-bad"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sp-bad.json"));
}

#[test]
fn status_shows_the_tree_with_reasons() {
    let tmp = tempfile::tempdir().unwrap();
    campaign(tmp.path());
    let out = splice(tmp.path(), &["status"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("status: ready — "), "{text}");
    assert_eq!(lines[1], "sp-other sp-other title (closed)", "{text}");
    assert!(
        lines[2].starts_with("sp-root sp-root title  (root, delegate"),
        "{text}"
    );
    assert!(
        lines[3].contains("waits for its children to close: sp-root.1, sp-root.2"),
        "{text}"
    );
    assert!(
        lines[4].starts_with(
            "  sp-root.1 sp-root.1 title  (leaf, implement, iteration 0/5, claimed by alice)"
        ),
        "{text}"
    );
    // alice is no runner this machine knows: wait, or clear the claim with the exact command.
    assert!(lines[5].contains("claimed by alice since"), "{text}");
    assert_eq!(
        lines[6].trim(),
        "→ splice transition release --bead sp-root.1 --clear --reason \"<why>\"",
        "{text}"
    );
    assert!(
        lines[7].contains("iteration 0/5, work in .splice/worktrees/sp-root.2)"),
        "{text}"
    );
    assert!(
        lines[8].contains("the agent is dispatched for implement next (attempt 2 of 5)"),
        "{text}"
    );
    assert_eq!(lines.len(), 9, "{text}");
}

#[test]
fn status_says_a_dead_runners_claim_is_to_be_cleared_and_how() {
    let tmp = tempfile::tempdir().unwrap();
    campaign(tmp.path());
    // A runner of this machine whose process is gone (pid 0x7ffffffe is never a live one here).
    let path = tmp.path().join(".splice/beads/sp-root.1.json");
    let mut b: Bead = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let holder = format!("run:{}:2147483646:r-1", splice::driver::runner::host());
    b.pipeline.lease = Some(Box::new(Lease {
        holder: holder.clone(),
        since: NOW.into(),
        credential_sha256: None,
        job: None,
    }));
    std::fs::write(&path, b.to_file_bytes()).unwrap();
    let out = splice(tmp.path(), &["status", "--scope", "sp-root.1"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "claimed since {NOW} by {holder}, a runner that is no longer running"
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "→ splice transition release --bead sp-root.1 --clear --reason \"its runner died\""
        ),
        "{text}"
    );
    let json = splice(tmp.path(), &["status", "--scope", "sp-root.1", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        v["nodes"][0]["next"]["command"],
        "splice transition release --bead sp-root.1 --clear --reason \"its runner died\""
    );
}

#[test]
fn status_json_for_machines() {
    let tmp = tempfile::tempdir().unwrap();
    campaign(tmp.path());
    let out = splice(tmp.path(), &["status", "--scope", "sp-root", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "ready");
    let nodes = v["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    assert_eq!(nodes[0]["id"], "sp-root");
    assert_eq!(nodes[1]["depth"], 1);
    assert_eq!(nodes[1]["lease"]["holder"], "alice");
    assert_eq!(nodes[2]["action"]["action"], "dispatch");
    assert_eq!(nodes[2]["floors_dir"], ".splice/worktrees/sp-root.2");
    assert_eq!(nodes[0]["rest"]["kind"], "waiting-children");
    // The root row counts its open children (its rows follow) rather than listing them.
    assert_eq!(v["schema_version"], 2);
    assert_eq!(nodes[0]["rest"]["open"], 2);
    assert!(nodes[0]["rest"].get("children").is_none(), "{}", nodes[0]);
}

#[test]
fn status_without_state_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let out = splice(tmp.path(), &["status"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no splice state here") && err.contains("splice init"),
        "{err}"
    );
}
