//! Planning floors against a real repository: scenarios_declared, spec, children_conserved,
//! children_finished.

#[path = "floors_common/mod.rs"]
mod common;

use common::{Repo, assert_verdict, bead, root, split};
use serde_json::json;
use splice::floors::Effect;
use splice::model::Status;

fn prp_check(repo: &Repo, text: &str) -> splice::floors::Outcome {
    let r = root("sp-root", "create-prp", &[]);
    repo.write("docs/prp/sp-root.md", text);
    repo.check(
        json!({"kind": "scenarios_declared", "path": "docs/prp/{{root.id}}.md"}),
        &r,
        &r,
        "create-prp",
        None,
    )
}

#[test]
fn scenarios_declared_records_the_ids() {
    let repo = Repo::new();
    let o = prp_check(
        &repo,
        "# PRP\n```gherkin\nScenario: S1 adds\n@AUTH-3\nScenario: logs in\n```\n",
    );
    assert_verdict(&o, "pass");
    assert_eq!(
        o.effects,
        vec![Effect::SetScenarios(vec!["S1".into(), "AUTH-3".into()])]
    );
}

#[test]
fn scenarios_declared_refusals() {
    let repo = Repo::new();
    let o = prp_check(&repo, "Scenario: S1 a\nScenario: no id here\n");
    assert_verdict(&o, "refuse");
    assert!(o.reason.contains("without an id"), "{}", o.reason);
    let o = prp_check(&repo, "Scenario: S1 a\nScenario: s1 again\n");
    assert_verdict(&o, "refuse");
    assert!(o.reason.contains("duplicate"), "{}", o.reason);
    let o = prp_check(&repo, "# PRP without scenarios\n");
    assert_verdict(&o, "refuse");
    assert!(o.effects.is_empty());
    let r = root("sp-root", "create-prp", &[]);
    let o = repo.check(
        json!({"kind": "scenarios_declared", "path": "docs/prp/missing.md"}),
        &r,
        &r,
        "create-prp",
        None,
    );
    assert_verdict(&o, "refuse");
}

fn spec_text(bead: &str, sha: &str, extra: &str) -> String {
    format!(
        "---\nbead: {bead}\nbase_commit: {sha}\nfiles:\n  - src/add.rs\n{extra}---\n# Spec\n\nScenario: S1 adds two numbers\n"
    )
}

fn spec_check(repo: &Repo, id: &str, text: &str) -> splice::floors::Outcome {
    let b = bead(id, "generate-spec");
    repo.write(&format!("specs/{id}.md"), text);
    repo.check(
        json!({"kind": "spec", "path": "specs/{{bead.id}}.md"}),
        &b,
        &b,
        "generate-spec",
        None,
    )
}

#[test]
fn spec_passes_and_records_files_and_verdict() {
    let repo = Repo::new();
    let head = repo.head();
    let o = spec_check(
        &repo,
        "sp-a",
        &spec_text("sp-a", &head, "verdict: compound\n"),
    );
    assert_verdict(&o, "pass");
    // The node owns no scenario: the ids its spec defines are recorded on it (issue 10, item 3).
    assert_eq!(
        o.effects,
        vec![
            Effect::SetFiles(vec!["src/add.rs".into()]),
            Effect::DefineScenarios(vec!["S1".into()]),
            Effect::SetVerdict(splice::model::SpecVerdict::Compound)
        ]
    );
    let o = spec_check(&repo, "sp-a", &spec_text("sp-a", &head, ""));
    assert_verdict(&o, "pass");
    assert_eq!(
        o.effects,
        vec![
            Effect::SetFiles(vec!["src/add.rs".into()]),
            Effect::DefineScenarios(vec!["S1".into()]),
        ]
    );
    // A node that owns scenarios keeps them, whatever its spec names.
    let mut owner = bead("sp-a", "generate-spec");
    owner.pipeline.scenarios = vec!["S7".into()].into();
    let o = repo.check(
        json!({"kind": "spec", "path": "specs/{{bead.id}}.md"}),
        &owner,
        &owner,
        "generate-spec",
        None,
    );
    assert_verdict(&o, "pass");
    assert_eq!(o.effects, vec![Effect::SetFiles(vec!["src/add.rs".into()])]);
}

#[test]
fn spec_refusals() {
    let repo = Repo::new();
    let head = repo.head();
    let unknown = "0123456789abcdef0123456789abcdef01234567";
    for (text, needle) in [
        (
            spec_text("sp-a", unknown, ""),
            "not a commit in this repository",
        ),
        (spec_text("sp-a", &head[..12], ""), "full 40-hex"),
        (spec_text("sp-b", &head, ""), "the node is `sp-a`"),
        (
            spec_text("sp-a", &head, "verdict: both\n"),
            "leaf` or `compound",
        ),
        (
            spec_text("sp-a", &head, "").replace("Scenario:", "Story:"),
            "no Gherkin",
        ),
        (
            spec_text("sp-a", &head, "").replace("src/add.rs", "/abs/x.rs"),
            "repository-relative",
        ),
        (
            spec_text("sp-a", &head, "").replace("src/add.rs", "../x.rs"),
            "repository-relative",
        ),
        (
            spec_text("sp-a", &head, "").replace("  - src/add.rs\n", ""),
            "missing or empty",
        ),
    ] {
        let o = spec_check(&repo, "sp-a", &text);
        assert_verdict(&o, "refuse");
        assert!(o.reason.contains(needle), "want {needle:?} in {}", o.reason);
        assert!(o.effects.is_empty());
    }
}

#[test]
fn children_conserved_pass_and_refusals() {
    let repo = Repo::new();
    let mut r = root("sp-root", "to-issues", &["S1", "S2", "S3"]);
    let check = |r: &splice::model::Bead| {
        repo.check(
            json!({"kind": "children_conserved"}),
            r,
            r,
            "to-issues",
            None,
        )
    };
    let o = check(&r);
    assert_verdict(&o, "refuse");
    assert!(
        o.reason
            .contains("no children: run `splice transition split`"),
        "{}",
        o.reason
    );

    let children = split(&mut r, &[&["S1", "s2"], &["S3"]]);
    for c in &children {
        repo.put(c);
    }
    repo.put(&r);
    assert_verdict(&check(&r), "pass");

    // A child loses a claim and gains a foreign one.
    let mut c2 = children[1].clone();
    c2.pipeline.scenarios = vec!["S9".into()].into();
    repo.put(&c2);
    let o = check(&r);
    assert_verdict(&o, "refuse");
    assert_eq!(o.evidence["missing"], json!(["S3"]));
    assert_eq!(o.evidence["extra"], json!(["S9"]));
    repo.put(&children[1]);

    // A bead claiming to be a child that the split did not sanction.
    let mut stray = bead("sp-stray", "generate-spec");
    stray.parent = Some("sp-root".into());
    repo.put(&stray);
    let o = check(&r);
    assert_verdict(&o, "refuse");
    assert!(
        o.reason
            .contains("unsanctioned children of sp-root: sp-stray"),
        "{}",
        o.reason
    );
}

#[test]
fn children_finished_names_the_open_ones() {
    let repo = Repo::new();
    let mut r = root("sp-root", "delegate", &["S1", "S2"]);
    let check = |r: &splice::model::Bead| {
        repo.check(json!({"kind": "children_finished"}), r, r, "delegate", None)
    };
    assert_verdict(&check(&r), "refuse");
    let mut children = split(&mut r, &[&["S1"], &["S2"]]);
    children[0].status = Status::Closed;
    for c in &children {
        repo.put(c);
    }
    let o = check(&r);
    assert_verdict(&o, "refuse");
    assert!(
        o.reason.contains("sp-root.2 (at generate-spec)") && !o.reason.contains("sp-root.1"),
        "{}",
        o.reason
    );
    children[1].status = Status::Closed;
    repo.put(&children[1]);
    assert_verdict(&check(&r), "pass");
}
