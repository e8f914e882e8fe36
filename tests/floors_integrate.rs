//! coverage and suite at integrate: both read a detached checkout of the integration target's tip
//! (`.splice/worktrees/<id>@target`), not the branch checked out in the repository.

#[path = "floors_common/mod.rs"]
mod common;

use common::{Repo, assert_verdict, bead, git_in, root};
use serde_json::json;
use splice::model::{Bead, Kind};

/// `main` checked out; the children's tests landed on `campaign` only.
fn campaign() -> (Repo, Bead) {
    let repo = Repo::new();
    repo.git(&["checkout", "-q", "-b", "campaign"]);
    repo.write(
        "tests/add.rs",
        "#[test]\nfn s1_adds_two_numbers() {}\n\n#[test]\nfn s10_edge() {}\n",
    );
    repo.write(
        "tests/test_sub.py",
        "# S3 is future work\ndef test_s2_subtracts():\n    pass\n",
    );
    repo.write("src/lib.rs", "#[test]\nfn s3_inline() {}\n");
    repo.commit("children's work");
    repo.git(&["checkout", "-q", "main"]);
    let mut r = root("sp-root", "integrate", &["S1", "S2"]);
    r.pipeline.target = Some("campaign".into());
    r.pipeline.test_paths = vec!["tests".into()].into();
    r.pipeline.suite_cmd = Some("test -f tests/add.rs && echo suite ok".into());
    repo.put(&r);
    (repo, r)
}

fn coverage(repo: &Repo, b: &Bead, r: &Bead) -> splice::floors::Outcome {
    repo.check(json!({"kind": "coverage"}), b, r, "integrate", None)
}

fn suite(repo: &Repo, r: &Bead) -> splice::floors::Outcome {
    repo.check(json!({"kind": "suite"}), r, r, "integrate", None)
}

#[test]
fn coverage_reads_the_targets_tip() {
    let (repo, r) = campaign();
    let o = coverage(&repo, &r, &r);
    assert_verdict(&o, "pass");
    assert_eq!(o.evidence["found"]["S1"], json!(["tests/add.rs:2"]));
    assert_eq!(o.evidence["found"]["S2"], json!(["tests/test_sub.py:2"]));
    assert_eq!(o.evidence["target"], json!("campaign"));
    let checkout = repo.path().join(".splice/worktrees/sp-root@target");
    assert_eq!(
        git_in(&checkout, &["rev-parse", "--abbrev-ref", "HEAD"]),
        "HEAD",
        "detached"
    );
    assert_eq!(
        git_in(&checkout, &["rev-parse", "HEAD"]),
        repo.git(&["rev-parse", "campaign"])
    );
    assert_eq!(
        repo.git(&["branch", "--list", "sp-root@target"]),
        "",
        "no helper branch left behind"
    );
    assert!(
        !repo.path().join("tests").exists(),
        "the repository's own checkout is untouched"
    );
}

#[test]
fn coverage_refuses_missing_ids_then_sees_a_new_tip() {
    let (repo, mut r) = campaign();
    r.pipeline.scenarios.push("S3".into());
    let o = coverage(&repo, &r, &r);
    assert_verdict(&o, "refuse");
    assert_eq!(o.evidence["missing"], json!(["S3"]));
    assert!(o.reason.contains("S3"), "{}", o.reason);

    repo.git(&["checkout", "-q", "campaign"]);
    repo.write(
        "tests/add.rs",
        "#[test]\nfn s1_adds_two_numbers() {}\n#[test]\n#[ignore]\nfn s3_later() {}\n",
    );
    repo.commit("S3");
    repo.git(&["checkout", "-q", "main"]);
    let o = coverage(&repo, &r, &r);
    assert_verdict(&o, "pass");
    assert_eq!(o.evidence["found"]["S3"], json!(["tests/add.rs:5"]));

    // A checkout whose directory vanished is recreated.
    std::fs::remove_dir_all(repo.path().join(".splice/worktrees/sp-root@target")).unwrap();
    assert_verdict(&coverage(&repo, &r, &r), "pass");
}

#[test]
fn a_compound_node_covers_its_own_ids_with_the_roots_config() {
    let (repo, r) = campaign();
    let mut c = bead("sp-root.1", "integrate");
    c.parent = Some("sp-root".into());
    c.pipeline.kind = Kind::Compound;
    c.pipeline.scenarios = vec!["S2".into()].into();
    let o = coverage(&repo, &c, &r);
    assert_verdict(&o, "pass");
    assert_eq!(
        o.evidence["target"],
        json!("campaign"),
        "the target comes from the ancestor"
    );
    assert!(
        repo.path()
            .join(".splice/worktrees/sp-root.1@target")
            .is_dir()
    );
}

#[test]
fn unset_test_paths_escalate() {
    let (repo, mut r) = campaign();
    r.pipeline.test_paths.clear();
    let o = coverage(&repo, &r, &r);
    assert_verdict(&o, "escalate");
    assert!(o.reason.contains("set-config"), "{}", o.reason);
    let o = suite(&repo, &r);
    assert_verdict(&o, "escalate");
    assert!(
        o.reason
            .contains("missing configuration is not incomplete work"),
        "{}",
        o.reason
    );
}

#[test]
fn suite_runs_on_the_targets_tip() {
    let (repo, mut r) = campaign();
    let o = suite(&repo, &r);
    assert_verdict(&o, "pass");
    assert!(
        o.evidence["output_tail"]
            .as_str()
            .unwrap_or_default()
            .contains("suite ok")
    );

    r.pipeline.suite_cmd = Some("echo two failed; exit 3".into());
    let o = suite(&repo, &r);
    assert_verdict(&o, "refuse");
    assert!(o.reason.contains("exited 3"), "{}", o.reason);
    assert!(
        o.evidence["output_tail"]
            .as_str()
            .unwrap_or_default()
            .contains("two failed")
    );

    r.pipeline.suite_cmd = None;
    let o = suite(&repo, &r);
    assert_verdict(&o, "escalate");
    assert!(o.reason.contains("suite_cmd"), "{}", o.reason);
}

#[test]
fn an_unknown_target_escalates() {
    let (repo, mut r) = campaign();
    r.pipeline.target = Some("nowhere".into());
    assert_verdict(&coverage(&repo, &r, &r), "escalate");
    assert_verdict(&suite(&repo, &r), "escalate");
}

#[test]
fn a_suite_that_leaves_a_background_job_returns_with_its_own_verdict() {
    let (repo, mut r) = campaign();
    // The job outlives `sh` and holds its output pipes; the suite's verdict is `sh`'s.
    r.pipeline.suite_cmd = Some("sleep 30 & echo suite ok".into());
    let started = std::time::Instant::now();
    let o = suite(&repo, &r);
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(10), "took {took:?}");
    assert_verdict(&o, "pass");
    assert_eq!(o.evidence["timed_out"], json!(false));
    assert!(
        o.evidence["output_tail"]
            .as_str()
            .unwrap_or_default()
            .contains("suite ok"),
        "{}",
        o.evidence
    );
}
