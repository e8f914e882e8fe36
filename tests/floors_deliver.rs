//! The delivered floor: ancestry on the target, or a forge-confirmed merged pull request
//! (a squash merge, with a fake forge command written by the test).

#[path = "floors_common/mod.rs"]
mod common;

use common::{Repo, assert_verdict, bead};
use serde_json::json;
use splice::floors::{Effect, Outcome};
use splice::model::bead::Proposal;
use splice::model::{Autonomy, Bead};

const PR: &str = "https://forge.example/acme/calc/pull/7";

/// A repository whose `feature` branch holds one reviewed commit, not merged to `main`.
fn with_feature() -> (Repo, String) {
    let repo = Repo::new();
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write(
        "src/add.rs",
        "pub fn add(a: i32, b: i32) -> i32 { a + b }\n",
    );
    let reviewed = repo.commit("add");
    repo.git(&["checkout", "-q", "main"]);
    (repo, reviewed)
}

fn leaf(reviewed: Option<&str>) -> Bead {
    let mut b = bead("sp-a", "deliver");
    b.pipeline.target = Some("main".into());
    b.pipeline.reviewed_sha = reviewed.map(Into::into);
    b
}

fn check(repo: &Repo, b: &Bead, proposal: Option<&Proposal>) -> Outcome {
    repo.check(json!({"kind": "delivered"}), b, b, "deliver", proposal)
}

/// A forge that answers `answer` for PR and fails for any other URL.
fn forge(repo: &mut Repo, answer: &str) {
    let script = repo.path().join(".splice/forge.sh");
    std::fs::write(&script, format!("#!/bin/sh\n[ \"$1\" = \"{PR}\" ] || exit 9\necho 'asking the forge…' >&2\necho '{answer}'\n")).unwrap();
    repo.config.delivery.forge_command =
        Some(vec!["sh".into(), script.to_string_lossy().into_owned()]);
}

fn proposal() -> Proposal {
    Proposal {
        step: "deliver".into(),
        seq: 3,
        artifact: String::new(),
        pr_url: Some(PR.into()),
        at: "2026-01-01T00:00:00Z".into(),
        ..Proposal::default()
    }
}

#[test]
fn ancestry_on_the_target_passes() {
    let (repo, reviewed) = with_feature();
    repo.git(&["merge", "-q", "--no-ff", "feature", "-m", "merge feature"]);
    let o = check(&repo, &leaf(Some(&reviewed)), None);
    assert_verdict(&o, "pass");
    assert_eq!(o.evidence["proof"], json!("ancestry"));
    assert!(o.effects.is_empty());
    // The target's tip itself counts too.
    assert_verdict(&check(&repo, &leaf(Some(&repo.head())), None), "pass");
}

#[test]
fn not_on_target_and_no_pr_refuses() {
    let (repo, reviewed) = with_feature();
    let o = check(&repo, &leaf(Some(&reviewed)), None);
    assert_verdict(&o, "refuse");
    assert!(!o.awaiting_merge);
    assert!(o.reason.contains("no pull request"), "{}", o.reason);
}

#[test]
fn missing_reviewed_sha_refuses() {
    let (repo, _) = with_feature();
    let o = check(&repo, &leaf(None), None);
    assert_verdict(&o, "refuse");
    assert!(o.reason.contains("no reviewed commit"), "{}", o.reason);
}

#[test]
fn an_open_pr_is_awaiting_merge() {
    let (mut repo, reviewed) = with_feature();
    forge(&mut repo, r#"{"merged": false}"#);
    let o = check(&repo, &leaf(Some(&reviewed)), Some(&proposal()));
    assert_verdict(&o, "refuse");
    assert!(o.awaiting_merge);
    assert!(o.reason.contains("awaiting merge"), "{}", o.reason);
}

#[test]
fn a_squash_merged_pr_confirmed_by_the_forge_passes() {
    let (mut repo, reviewed) = with_feature();
    repo.git(&["merge", "-q", "--squash", "feature"]);
    let squash = repo.commit("add (#7)");
    forge(
        &mut repo,
        &format!(r#"{{"merged": true, "merge_commit": "{squash}"}}"#),
    );
    // The PR recorded on the bead (not the proposal) is used as well.
    let mut b = leaf(Some(&reviewed));
    b.pipeline.pr_url = Some(PR.into());
    let o = check(&repo, &b, None);
    assert_verdict(&o, "pass");
    assert_eq!(o.evidence["proof"], json!("forge"));
    assert_eq!(o.effects, vec![Effect::SetPrUrl(PR.into())]);
}

#[test]
fn a_merge_commit_off_the_target_escalates_for_a_person_to_fetch() {
    let (mut repo, reviewed) = with_feature();
    repo.git(&["checkout", "-q", "-b", "elsewhere"]);
    repo.write("x.txt", "x\n");
    let off = repo.commit("not on main");
    repo.git(&["checkout", "-q", "main"]);
    forge(
        &mut repo,
        &format!(r#"{{"merged": true, "merge_commit": "{off}"}}"#),
    );
    let o = check(&repo, &leaf(Some(&reviewed)), Some(&proposal()));
    assert_verdict(&o, "escalate");
    assert!(o.reason.contains("git pull"), "{}", o.reason);
    assert!(!o.awaiting_merge);
    // A merge commit this repository has not fetched yet.
    forge(
        &mut repo,
        r#"{"merged": true, "merge_commit": "0123456789012345678901234567890123456789"}"#,
    );
    let o = check(&repo, &leaf(Some(&reviewed)), Some(&proposal()));
    assert_verdict(&o, "escalate");
    assert!(o.reason.contains("does not have yet"), "{}", o.reason);
}

#[test]
fn a_pr_without_a_forge_command_escalates() {
    let (repo, reviewed) = with_feature();
    let o = check(&repo, &leaf(Some(&reviewed)), Some(&proposal()));
    assert_verdict(&o, "escalate");
    assert!(o.reason.contains("forge_command"), "{}", o.reason);
}

#[test]
fn a_forge_without_an_answer_escalates() {
    let (mut repo, reviewed) = with_feature();
    forge(&mut repo, "rate limited");
    assert_verdict(
        &check(&repo, &leaf(Some(&reviewed)), Some(&proposal())),
        "escalate",
    );
}

#[test]
fn deep_autonomy_never_delivers_to_main() {
    let (repo, _) = with_feature();
    let head = repo.head();
    let mut parent = bead("sp-p", "delegate");
    parent.pipeline.autonomy = Some(Autonomy::Deep);
    repo.put(&parent);
    let mut b = leaf(Some(&head));
    b.parent = Some("sp-p".into());
    let o = repo.check(json!({"kind": "delivered"}), &b, &parent, "deliver", None);
    assert_verdict(&o, "escalate");
    assert!(
        o.reason.contains("sp-p"),
        "the level's source is named: {}",
        o.reason
    );
    // On a campaign branch, deep delivery is proven like any other.
    repo.git(&["branch", "campaign"]);
    b.pipeline.target = Some("campaign".into());
    assert_verdict(
        &repo.check(json!({"kind": "delivered"}), &b, &parent, "deliver", None),
        "pass",
    );
}

#[test]
fn the_target_falls_back_to_config_then_the_checked_out_branch() {
    let (mut repo, reviewed) = with_feature();
    let mut b = leaf(Some(&reviewed));
    b.pipeline.target = None;
    // Checked out: main, where the commit is not.
    assert_verdict(&check(&repo, &b, None), "refuse");
    repo.config.delivery.target = Some("feature".into());
    let o = check(&repo, &b, None);
    assert_verdict(&o, "pass");
    assert_eq!(o.evidence["target"], json!("feature"));
}
