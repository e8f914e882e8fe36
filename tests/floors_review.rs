//! The review floor against a real repository: four verdicts, the reviewed commit against HEAD.

#[path = "floors_common/mod.rs"]
mod common;

use common::{Repo, assert_verdict, bead};
use serde_json::json;
use splice::floors::{Effect, Outcome, ReviewText};
use splice::model::bead::ReviewVerdict;

fn review(sha: &str, verdicts: [&str; 4]) -> String {
    format!(
        "## Review\nReviewed-SHA: {sha}\nStandards: {}\nSpec: {}\nArchitecture: {}\nEvidence: {}\n",
        verdicts[0], verdicts[1], verdicts[2], verdicts[3]
    )
}

fn check(repo: &Repo, spec: serde_json::Value, text: &str) -> Outcome {
    repo.write("reviews/sp-a.md", text);
    let b = bead("sp-a", "review");
    repo.check(spec, &b, &b, "review", None)
}

/// The effects that act on the node: every review read is also kept ([`Effect::KeepReview`]),
/// whatever its verdict.
fn acting(o: &Outcome) -> Vec<&Effect> {
    o.effects
        .iter()
        .filter(|e| !matches!(e, Effect::KeepReview(_)))
        .collect()
}

/// The review the floor asks the writer to keep.
fn kept(o: &Outcome) -> Option<&ReviewText> {
    o.effects.iter().find_map(|e| match e {
        Effect::KeepReview(r) => Some(&**r),
        _ => None,
    })
}

fn default_spec() -> serde_json::Value {
    json!({"kind": "review", "path": "reviews/{{bead.id}}.md"})
}

#[test]
fn passes_against_head_and_lists_warnings() {
    let repo = Repo::new();
    let head = repo.head();
    let o = check(
        &repo,
        default_spec(),
        &review(&head, ["PASS", "WARNING naming is loose", "PASS", "PASS"]),
    );
    assert_verdict(&o, "pass");
    assert_eq!(o.evidence["warnings"], json!(["Spec"]));
    assert_eq!(acting(&o), vec![&Effect::SetReviewedSha(head)]);
    let k = kept(&o).unwrap();
    assert_eq!(k.verdict, Some(ReviewVerdict::Warning));
    assert!(!k.fail);
}

#[test]
fn the_latest_review_decides() {
    let repo = Repo::new();
    let head = repo.head();
    let text = format!(
        "{}\n{}",
        review(&head, ["FAIL", "PASS", "PASS", "PASS"]),
        review(&head, ["PASS"; 4])
    );
    assert_verdict(&check(&repo, default_spec(), &text), "pass");
}

#[test]
fn fail_refuses_with_its_verdict_and_the_review_as_text() {
    // The review step's result branch (`on_result` in the manifest) reads these to send the node
    // back; the floor itself moves nothing.
    let repo = Repo::new();
    let head = repo.head();
    let text = review(
        &head,
        ["PASS", "FAIL: S2 is not implemented", "PASS", "PASS"],
    );
    let o = check(&repo, default_spec(), &text);
    assert_verdict(&o, "refuse");
    assert!(acting(&o).is_empty(), "{:?}", o.effects);
    assert!(kept(&o).unwrap().fail, "the FAIL that sends the node back");
    assert_eq!(o.evidence["verdict"], json!("FAIL"));
    assert!(o.evidence.get("stale").is_none());
    let guidance = o.evidence["text"].as_str().unwrap();
    assert!(guidance.contains("S2 is not implemented"), "{guidance}");
    // Where a FAIL goes is the review step's branch now: a schema-3 manifest refuses `back_to`.
    let moved = splice::model::manifest::DEFAULT_MANIFEST.replace(
        "{ \"kind\": \"review\", \"path\": \"reviews/{{bead.id}}.md\" }",
        "{ \"kind\": \"review\", \"path\": \"reviews/{{bead.id}}.md\", \"back_to\": \"implement\" }",
    );
    let problems = splice::model::Manifest::parse(&moved)
        .unwrap_err()
        .to_string();
    assert!(
        problems.contains("has no parameter \"back_to\""),
        "{problems}"
    );
}

#[test]
fn a_long_failing_review_is_truncated_as_guidance() {
    let repo = Repo::new();
    let text = format!(
        "{}{}",
        review(&repo.head(), ["FAIL", "PASS", "PASS", "PASS"]),
        "detail line\n".repeat(2000)
    );
    let o = check(&repo, default_spec(), &text);
    let guidance = o.evidence["text"].as_str().unwrap();
    assert!(guidance.len() < 4200, "{}", guidance.len());
}

#[test]
fn missing_or_bad_verdicts_refuse_without_send_back() {
    let repo = Repo::new();
    let head = repo.head();
    let o = check(
        &repo,
        default_spec(),
        &format!(
            "## Review\nReviewed-SHA: {head}\nStandards: PASS\nSpec: PASS\nArchitecture: PASS\n"
        ),
    );
    assert_verdict(&o, "refuse");
    assert!(o.reason.contains("Evidence"), "{}", o.reason);
    assert!(acting(&o).is_empty());
    let o = check(
        &repo,
        default_spec(),
        &review(&head, ["PASS", "OK", "PASS", "PASS"]),
    );
    assert_verdict(&o, "refuse");
    assert!(
        o.reason.contains("not PASS, WARNING or FAIL"),
        "{}",
        o.reason
    );
    let o = check(&repo, default_spec(), "# Notes only\n");
    assert_verdict(&o, "refuse");
}

#[test]
fn a_review_of_an_older_commit_is_refused_after_a_new_commit_lands() {
    let repo = Repo::new();
    let reviewed = repo.head();
    let text = review(&reviewed, ["PASS"; 4]);
    assert_verdict(&check(&repo, default_spec(), &text), "pass");
    repo.write("src/add.rs", "pub fn add() {}\n");
    let new_head = repo.commit("more work");
    let o = check(&repo, default_spec(), &text);
    assert_verdict(&o, "refuse");
    assert!(
        o.reason.contains(&new_head) && o.reason.contains(&reviewed),
        "{}",
        o.reason
    );
    assert!(
        acting(&o).is_empty(),
        "a stale sha only refuses: {:?}",
        o.effects
    );
}

#[test]
fn a_stale_fail_review_never_sends_the_node_back() {
    // Issue 10, item 1: after one FAIL review, each new implement commit was checked against the
    // old review and sent straight back, so the reviewer never ran again and the task parked.
    let repo = Repo::new();
    let reviewed = repo.head();
    let text = review(&reviewed, ["FAIL: S2 is missing", "PASS", "PASS", "PASS"]);
    repo.write("src/add.rs", "pub fn add() {}\n");
    let new_head = repo.commit("the fix");
    let o = check(&repo, default_spec(), &text);
    assert_verdict(&o, "refuse");
    assert!(
        o.reason.contains(&reviewed) && o.reason.contains(&new_head),
        "{}",
        o.reason
    );
    assert!(
        acting(&o).is_empty(),
        "a stale FAIL only refuses: {:?}",
        o.effects
    );
    // What the default FAIL branch reads: stale, and no verdict to match.
    assert_eq!(o.evidence["stale"], json!(true));
    assert!(o.evidence.get("verdict").is_none(), "{}", o.evidence);
    // A FAIL without a usable Reviewed-SHA cannot be placed either: it only refuses.
    let o = check(
        &repo,
        default_spec(),
        "## Review\nStandards: FAIL\nSpec: PASS\nArchitecture: PASS\nEvidence: PASS\n",
    );
    assert_verdict(&o, "refuse");
    assert!(acting(&o).is_empty(), "{:?}", o.effects);
    assert_eq!(o.evidence["stale"], json!(true));
}

#[test]
fn a_short_sha_refuses() {
    let repo = Repo::new();
    let head = repo.head();
    let o = check(&repo, default_spec(), &review(&head[..10], ["PASS"; 4]));
    assert_verdict(&o, "refuse");
    assert!(o.reason.contains("full 40-hex"), "{}", o.reason);
}

#[test]
fn evidence_through_a_link_is_never_read() {
    // A review symlinked to a file outside the repository must not have that file's text
    // copied into the guidance (and from there into the committed bead and journal).
    let repo = Repo::new();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.md");
    std::fs::write(
        &secret,
        review(
            &repo.head(),
            ["FAIL the private key is hunter2", "PASS", "PASS", "PASS"],
        ),
    )
    .unwrap();
    std::fs::create_dir_all(repo.path().join("reviews")).unwrap();
    std::os::unix::fs::symlink(&secret, repo.path().join("reviews/sp-a.md")).unwrap();
    let b = bead("sp-a", "review");
    let o = repo.check(default_spec(), &b, &b, "review", None);
    assert_verdict(&o, "refuse");
    assert!(o.reason.contains("symbolic link"), "{}", o.reason);
    assert!(
        o.effects.is_empty(),
        "nothing read, nothing kept: {:?}",
        o.effects
    );
    let all = format!("{} {} {:?}", o.reason, o.evidence, o.effects);
    assert!(!all.contains("hunter2"), "{all}");
    // The same for a floor that only asks whether the file is there.
    let o = repo.check(
        json!({"kind": "file_exists", "path": "reviews/sp-a.md"}),
        &b,
        &b,
        "review",
        None,
    );
    assert_verdict(&o, "refuse");
    // A symlink that stays inside the repository is not followed either: no link is, anywhere
    // on the path (issue 31; `docs/security.md`, "Files splice reads").
    repo.write("docs/real.md", &review(&repo.head(), ["PASS"; 4]));
    std::fs::remove_file(repo.path().join("reviews/sp-a.md")).unwrap();
    std::os::unix::fs::symlink(
        repo.path().join("docs/real.md"),
        repo.path().join("reviews/sp-a.md"),
    )
    .unwrap();
    let o = repo.check(default_spec(), &b, &b, "review", None);
    assert_verdict(&o, "refuse");
    assert!(o.reason.contains("symbolic link"), "{}", o.reason);
    // The file itself passes.
    std::fs::remove_file(repo.path().join("reviews/sp-a.md")).unwrap();
    repo.write("reviews/sp-a.md", &review(&repo.head(), ["PASS"; 4]));
    let o = repo.check(default_spec(), &b, &b, "review", None);
    assert_verdict(&o, "pass");
}

/// A kept review of `commit` with `text`'s hash whose FAIL sent the node back.
fn sent_back(text: &str, commit: &str) -> splice::model::bead::KeptReview {
    splice::model::bead::KeptReview {
        sha256: splice::store::reviews::sha256_hex(text),
        step: "review".into(),
        seq: 3,
        reviewed_sha: Some(commit.to_string()),
        verdict: Some(ReviewVerdict::Fail),
        sent_back: true,
        at: "2026-01-01T00:00:00Z".into(),
    }
}

#[test]
fn a_fail_read_again_of_a_commit_already_sent_back_refuses_as_stale_for_a_fresh_review() {
    // Issue 33: a FAIL is acted on once per reviewed commit; the review that sent the node back,
    // read again on an unchanged HEAD (an implement step that made no commit), dispatches a
    // fresh review instead of another send-back.
    let repo = Repo::new();
    let head = repo.head();
    let text = review(&head, ["PASS", "FAIL: S2 is missing", "PASS", "PASS"]);
    repo.write("reviews/sp-a.md", &text);
    let mut b = bead("sp-a", "review");
    b.push_review(sent_back(&text, &head));
    let o = repo.check(default_spec(), &b, &b, "review", None);
    assert_verdict(&o, "refuse");
    assert!(
        o.reason.contains("already sent the node back"),
        "{}",
        o.reason
    );
    assert_eq!(o.evidence["stale"], json!(true));
    assert_eq!(o.evidence["acted_on"], json!(true));
    assert!(o.evidence.get("verdict").is_none(), "{}", o.evidence);
    assert!(acting(&o).is_empty());
    let k = kept(&o).unwrap();
    assert_eq!(k.verdict, Some(ReviewVerdict::Fail));
    assert!(!k.fail, "not the FAIL that acts");
    // A PASS of the same commit passes.
    repo.write("reviews/sp-a.md", &review(&head, ["PASS"; 4]));
    assert_verdict(&repo.check(default_spec(), &b, &b, "review", None), "pass");
}

#[test]
fn a_fresh_fail_of_a_commit_already_sent_back_goes_to_a_person() {
    // Issue 33: the fresh review of an unchanged HEAD fails it again. Another send-back would
    // act twice on one commit, and a stale refusal would dispatch the reviewer again and again
    // with the implementer never seeing the FAIL: a person decides.
    let repo = Repo::new();
    let head = repo.head();
    let first = review(&head, ["PASS", "FAIL: S2 is missing", "PASS", "PASS"]);
    let mut b = bead("sp-a", "review");
    b.push_review(sent_back(&first, &head));
    let fresh = format!(
        "{first}\n{}",
        review(&head, ["PASS", "FAIL: S2 is still missing", "PASS", "PASS"])
    );
    repo.write("reviews/sp-a.md", &fresh);
    let o = repo.check(default_spec(), &b, &b, "review", None);
    assert_verdict(&o, "escalate");
    assert!(
        o.reason
            .contains(&format!("no new commit after the review's FAIL of {head}"))
            && o.reason.contains("fails it again"),
        "{}",
        o.reason
    );
    assert!(acting(&o).is_empty(), "{:?}", o.effects);
    assert_eq!(o.evidence["failed"], json!(["Spec"]));
    assert!(
        o.evidence.get("verdict").is_none(),
        "no FAIL branch matches: {}",
        o.evidence
    );
    let text = o.evidence["text"].as_str().unwrap();
    assert!(
        text.contains("S2 is still missing"),
        "the person reads it: {text}"
    );
    let k = kept(&o).unwrap();
    assert_eq!(k.verdict, Some(ReviewVerdict::Fail));
    assert!(!k.fail, "it sends nothing back");
}
