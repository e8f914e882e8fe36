//! `splice demo`: the example campaign reaches `done` in a scratch repository; every scenario id
//! is on a test, and the target branch holds every leaf's reviewed commit.

use std::process::Command;

use serde_json::Value;

fn git(dir: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
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
    let out = Command::new(env!("CARGO_BIN_EXE_splice"))
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
}

#[test]
fn the_demo_refuses_a_directory_that_is_not_empty() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("precious.txt"), "keep me").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_splice"))
        .args(["demo", "--keep"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty directory"));
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}
