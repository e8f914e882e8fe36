//! The writer acting on what the default manifest's floors find: scenarios recorded on the root,
//! a compound spec moving the node to the compound route, a FAIL review sending it back to
//! implement, an open pull request awaiting merge.

mod common;

use common::Repo;

fn head(r: &Repo) -> String {
    r.git(&["rev-parse", "HEAD"])
}

#[test]
fn a_passing_prp_records_its_scenarios_on_the_root_and_waits_for_a_person() {
    let r = Repo::new();
    let root = r.init(&[]);
    r.write(
        &format!("docs/prp/{root}.md"),
        "# PRP\n\nFeature: f\n  Scenario: S1 one\n    Given x\n  @S2\n  Scenario: two\n    Given y\n",
    );
    let out = r.ok(&[
        "transition",
        "complete",
        "--bead",
        &root,
        "--step",
        "create-prp",
    ]);
    assert_eq!(out["gate"], "pending", "create-prp is a planning gate");
    assert_eq!(
        r.bead(&root)["pipeline"]["scenarios"],
        serde_json::json!(["S1", "S2"])
    );
    // Planning gates never relax, even at deep autonomy.
    r.ok(&[
        "transition",
        "set-autonomy",
        "--bead",
        &root,
        "--autonomy",
        "deep",
    ]);
    r.ok(&[
        "transition",
        "approve",
        "--bead",
        &root,
        "--step",
        "create-prp",
    ]);
    assert_eq!(r.bead(&root)["pipeline"]["step"], "refine-design");
}

#[test]
fn a_compound_spec_moves_the_node_to_the_compound_route() {
    let r = Repo::new();
    let id = r.task("Big task", &["--autonomy", "wave"]);
    let sha = head(&r);
    r.write(
        &format!("specs/{id}.md"),
        &format!("---\nbead: {id}\nbase_commit: {sha}\nfiles:\n  - src/a.rs\nverdict: compound\n---\n\nScenario: S1 x\n"),
    );
    let out = r.ok(&[
        "transition",
        "complete",
        "--bead",
        &id,
        "--step",
        "generate-spec",
    ]);
    assert_eq!(out["gate"]["state"], "relaxed");
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["kind"], "compound");
    assert_eq!(b["pipeline"]["route"], "compound");
    assert_eq!(b["pipeline"]["step"], "to-issues");
    assert_eq!(b["pipeline"]["files"], serde_json::json!(["src/a.rs"]));
    assert_eq!(b["pipeline"]["verdict"], "compound");
}

#[test]
fn a_verdictless_spec_keeps_its_gate_at_every_level() {
    let r = Repo::new();
    // A target must exist (issue 10, item 9).
    r.git(&["branch", "campaign/x"]);
    let id = r.task("T", &["--autonomy", "deep", "--target", "campaign/x"]);
    let sha = head(&r);
    r.write(
        &format!("specs/{id}.md"),
        &format!(
            "---\nbead: {id}\nbase_commit: {sha}\nfiles:\n  - src/a.rs\n---\n\nScenario: S1 x\n"
        ),
    );
    let out = r.ok(&[
        "transition",
        "complete",
        "--bead",
        &id,
        "--step",
        "generate-spec",
    ]);
    assert_eq!(out["gate"], "pending");
}

#[test]
fn a_failing_review_sends_the_node_back_to_implement_with_guidance() {
    let r = Repo::new();
    let id = r.task("T", &[]);
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
    let sha = head(&r);
    r.write(
        &format!("reviews/{id}.md"),
        &format!(
            "## Review\nReviewed-SHA: {sha}\nStandards: PASS\nSpec: FAIL the empty input is not handled\n\
             Architecture: PASS\nEvidence: WARNING thin\n"
        ),
    );
    let err = r.fails(
        1,
        &["transition", "complete", "--bead", &id, "--step", "review"],
    );
    assert!(err.contains("FAIL"), "{err}");
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["step"], "implement");
    assert!(
        b["pipeline"]["guidance"]
            .as_str()
            .unwrap()
            .contains("the empty input is not handled")
    );
}

#[test]
fn a_stale_review_only_refuses() {
    let r = Repo::new();
    let id = r.task("T", &[]);
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
    let old = head(&r);
    r.write(
        &format!("reviews/{id}.md"),
        &format!("## Review\nReviewed-SHA: {old}\nStandards: PASS\nSpec: PASS\nArchitecture: PASS\nEvidence: PASS\n"),
    );
    r.write("src/new.rs", "fn main() {}\n");
    r.git(&["add", "src/new.rs"]);
    r.git(&["commit", "-q", "-m", "new work"]);
    let err = r.fails(
        1,
        &["transition", "complete", "--bead", &id, "--step", "review"],
    );
    assert!(
        err.contains(&format!("the review was made against {old}, but HEAD is")),
        "{err}"
    );
    assert_eq!(
        r.bead(&id)["pipeline"]["step"],
        "review",
        "no send-back for a stale sha"
    );
    // Re-reviewing the current HEAD passes and records the reviewed sha.
    let now = head(&r);
    r.write(
        &format!("reviews/{id}.md"),
        &format!("## Review\nReviewed-SHA: {now}\nStandards: PASS\nSpec: PASS\nArchitecture: PASS\nEvidence: PASS\n"),
    );
    r.ok(&["transition", "complete", "--bead", &id, "--step", "review"]);
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["step"], "deliver");
    assert_eq!(b["pipeline"]["reviewed_sha"], now.as_str());
}

#[test]
fn an_open_pull_request_is_awaiting_merge_and_a_merged_one_closes_the_leaf() {
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
        "review",
    ]);
    // Work on a branch, reviewed there, then squash-merged into main by "the forge".
    r.git(&["checkout", "-q", "-b", "feature"]);
    r.write("src/f.rs", "pub fn f() {}\n");
    r.git(&["add", "src/f.rs"]);
    r.git(&["commit", "-q", "-m", "feature"]);
    let reviewed = head(&r);
    r.write(
        &format!("reviews/{id}.md"),
        &format!("## Review\nReviewed-SHA: {reviewed}\nStandards: PASS\nSpec: PASS\nArchitecture: PASS\nEvidence: PASS\n"),
    );
    r.ok(&["transition", "complete", "--bead", &id, "--step", "review"]);
    r.write(
        "forge.sh",
        "#!/bin/sh\ncat \"$(dirname \"$0\")/forge-answer.json\"\n",
    );
    r.write("forge-answer.json", r#"{"merged": false}"#);
    r.write(
        ".splice/config.toml",
        &format!(
            "[delivery]\nforge_command = [\"sh\", \"{}/forge.sh\"]\n",
            r.path().display()
        ),
    );
    let err = r.fails(
        1,
        &[
            "transition",
            "deliver",
            "--bead",
            &id,
            "--pr-url",
            "https://forge.example/pr/1",
        ],
    );
    assert!(err.contains("awaiting merge"), "{err}");
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["last_check"]["awaiting_merge"], true);
    // Issue 10, item 13: the pull request is recorded on the node only once its delivery is
    // proven; while it is open, it is kept on the step's proposal.
    assert!(b["pipeline"]["pr_url"].is_null(), "{:#}", b["pipeline"]);
    assert_eq!(
        b["pipeline"]["proposal"]["pr_url"],
        "https://forge.example/pr/1"
    );
    // The forge squash-merges: a new commit on main with the same tree, not the reviewed commit.
    r.git(&["checkout", "-q", "main"]);
    r.git(&["merge", "-q", "--squash", "feature"]);
    r.git(&["commit", "-q", "-m", "squash"]);
    let merge = head(&r);
    r.write(
        "forge-answer.json",
        &format!(r#"{{"merged": true, "merge_commit": "{merge}"}}"#),
    );
    let out = r.ok(&["transition", "deliver", "--bead", &id]);
    assert_eq!(out["closed"], true);
    assert_eq!(
        r.bead(&id)["pipeline"]["pr_url"],
        "https://forge.example/pr/1"
    );
}

#[test]
fn a_leaf_whose_tests_miss_an_owned_scenario_goes_back_to_implement_before_it_can_deliver() {
    // Issue 10, item 5: a leaf whose tests carried no scenario ids passed implement, review and
    // deliver, landed, and only then parked the campaign at integrate.
    let r = Repo::new();
    let id = r.init(&["--scenarios", "S1,S2"]);
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
    r.write(
        "tests/calc.rs",
        "#[test]\nfn s1_adds() {}\n\n#[test]\nfn adds_again() {}\n",
    );
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "work"]);
    let review = |sha: &str| {
        format!(
            "## Review\nReviewed-SHA: {sha}\nStandards: PASS\nSpec: PASS\nArchitecture: PASS\nEvidence: PASS\n"
        )
    };
    r.write(&format!("reviews/{id}.md"), &review(&head(&r)));
    let err = r.fails(
        1,
        &["transition", "complete", "--bead", &id, "--step", "review"],
    );
    assert!(
        err.contains("no test declaration carries scenario id(s) S2 in the node's worktree"),
        "{err}"
    );
    let bead = r.bead(&id);
    assert_eq!(
        bead["pipeline"]["step"], "implement",
        "sent back where it can be fixed"
    );
    let guidance = bead["pipeline"]["guidance"].as_str().unwrap();
    assert!(
        guidance.contains("S2") && guidance.contains("fn s2_"),
        "{guidance}"
    );
    // Once every owned id is on a test, review passes on to deliver.
    r.write(
        "tests/calc.rs",
        "#[test]\nfn s1_adds() {}\n\n#[test]\nfn s2_subtracts() {}\n",
    );
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "tests named"]);
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
    r.write(&format!("reviews/{id}.md"), &review(&head(&r)));
    let out = r.ok(&["transition", "complete", "--bead", &id, "--step", "review"]);
    assert_eq!(out["next"], "deliver", "{out:#}");
}
