//! The landing gate for every autonomy × target kind (issue 33): what a direct delivery's check
//! does with the target, against real git repositories and the built binary.
//!
//! | target | hitl | wave | deep |
//! |---|---|---|---|
//! | the main line `main` | gate | gate | nothing lands (the `delivered` floor escalates) |
//! | a branch in `[delivery] protected` | gate | gate | gate |
//! | an unprotected feature branch | lands | lands | lands |
//! | a campaign's integration branch (a child of the campaign) | lands | lands | lands |
//!
//! "gate": the check records a pending landing gate bound to the reviewed tip and moves nothing;
//! after `splice transition approve` the next check lands exactly that commit. No autonomy
//! relaxes it.

mod common;

use common::{Repo, Reviewed, git_in};
use serde_json::Value;

/// A campaign's integration branch, the campaign root's target.
const CAMPAIGN: &str = "campaign/x";

/// The project's config: direct delivery, `release` protected.
const CONFIG: &str = "[delivery]\nmethod = \"direct\"\nprotected = [\"release\"]\n";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `main`.
    MainLine,
    /// `release`, listed in `[delivery] protected`.
    Protected,
    /// `dev`, named nowhere.
    Feature,
    /// [`CAMPAIGN`], inherited by a child from its campaign root.
    Campaign,
}

impl Kind {
    fn target(self) -> &'static str {
        match self {
            Kind::MainLine => "main",
            Kind::Protected => "release",
            Kind::Feature => "dev",
            Kind::Campaign => CAMPAIGN,
        }
    }
}

/// What the check does with the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// Moves it to the reviewed commit at once.
    Lands,
    /// Records a pending landing gate; lands the approved commit after a person's approval.
    Gate,
    /// Nothing lands and the check escalates: the merge to the main line is a person's job.
    Escalates,
}

const MATRIX: &[(&str, Kind, Expect)] = &[
    ("hitl", Kind::MainLine, Expect::Gate),
    ("hitl", Kind::Protected, Expect::Gate),
    ("hitl", Kind::Feature, Expect::Lands),
    ("hitl", Kind::Campaign, Expect::Lands),
    ("wave", Kind::MainLine, Expect::Gate),
    ("wave", Kind::Protected, Expect::Gate),
    ("wave", Kind::Feature, Expect::Lands),
    ("wave", Kind::Campaign, Expect::Lands),
    ("deep", Kind::MainLine, Expect::Escalates),
    ("deep", Kind::Protected, Expect::Gate),
    ("deep", Kind::Feature, Expect::Lands),
    ("deep", Kind::Campaign, Expect::Lands),
];

/// A repository with the branches every target kind needs and the project's config.
fn repo() -> Repo {
    let r = Repo::new();
    for branch in ["release", "dev", CAMPAIGN] {
        r.git(&["branch", branch]);
    }
    r
}

/// A node at `level` delivering directly to `kind`'s target, at its deliver step with one
/// reviewed commit. Returns its id and the reviewed commit.
fn node_at_deliver(r: &Repo, level: &str, kind: Kind) -> (String, String) {
    let target = kind.target();
    let id = if kind == Kind::Campaign {
        let root = r.init(&[
            "--autonomy",
            level,
            "--target",
            target,
            "--delivery",
            "direct",
        ]);
        r.ok(&[
            "transition",
            "route",
            &root,
            "--to",
            "root",
            "--at",
            "to-issues",
        ]);
        r.write("children.json", r#"[{"title": "Piece"}]"#);
        r.ok(&["transition", "split", &root, "--children", "children.json"]);
        format!("{root}.1")
    } else {
        r.task(
            "Work",
            &[
                "--autonomy",
                level,
                "--target",
                target,
                "--delivery",
                "direct",
            ],
        )
    };
    r.write(".splice/config.toml", CONFIG);
    let reviewed = r.review_at_deliver(
        &id,
        &Reviewed {
            title: "Work",
            delivery: "direct",
            target,
            files: &[("src/work.rs", "pub fn work() {}\n")],
        },
    );
    (id, reviewed)
}

/// Run the check of the node's deliver step; its exit code and stdout (JSON when it has any).
#[must_use]
fn deliver(r: &Repo, id: &str) -> (Option<i32>, Value, String) {
    let out = r.run(&["transition", "deliver", "--bead", id]);
    common::no_panic(&out);
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), json, stderr)
}

#[test]
fn each_autonomy_and_target_kind_lands_or_waits_as_the_table_says() {
    for &(level, kind, expect) in MATRIX {
        let case = format!("{level} × {kind:?} ({}) → {expect:?}", kind.target());
        let r = repo();
        let (id, reviewed) = node_at_deliver(&r, level, kind);
        let target = kind.target();
        let before = r.git(&["rev-parse", target]);
        let resolved = r.ok(&["transition", "autonomy", "--bead", &id]);
        assert_eq!(resolved["autonomy"], level, "{case}: {resolved:#}");
        let (code, out, stderr) = deliver(&r, &id);
        match expect {
            Expect::Lands => {
                assert_eq!(code, Some(0), "{case}: {stderr}");
                assert_eq!(out["closed"], true, "{case}: {out:#}");
                assert_eq!(r.git(&["rev-parse", target]), reviewed, "{case}");
            }
            Expect::Escalates => {
                assert_ne!(code, Some(0), "{case}: {out:#}");
                assert_eq!(
                    r.git(&["rev-parse", target]),
                    before,
                    "{case}: {target} moved"
                );
                let b = r.bead(&id);
                let p = &b["pipeline"];
                assert_eq!(p["last_check"]["verdict"], "escalate", "{case}: {b:#}");
                assert!(p["gate"].is_null(), "{case}: a gate was recorded: {b:#}");
                assert_eq!(p["step"], "deliver", "{case}");
            }
            Expect::Gate => {
                assert_eq!(code, Some(0), "{case}: {stderr}");
                assert_eq!(out["gate"], "pending", "{case}: {out:#}");
                assert_eq!(
                    r.git(&["rev-parse", target]),
                    before,
                    "{case}: moved unapproved"
                );
                let gate = &r.bead(&id)["pipeline"]["gate"];
                assert_eq!(gate["state"], "pending", "{case}: {gate:#}");
                assert_eq!(gate["land"]["sha"], reviewed.as_str(), "{case}: {gate:#}");
                assert_eq!(gate["land"]["target"], target, "{case}: {gate:#}");
                // Checked again without an approval: still nothing moves.
                let (code, out, stderr) = deliver(&r, &id);
                assert_eq!(code, Some(0), "{case}: {stderr}");
                assert_eq!(out["gate"], "pending", "{case}: {out:#}");
                assert_eq!(r.git(&["rev-parse", target]), before, "{case}");
                // Approved: the approval itself moves nothing; the next check lands that commit.
                r.ok(&["transition", "approve", "--bead", &id, "--step", "deliver"]);
                assert_eq!(
                    r.git(&["rev-parse", target]),
                    before,
                    "{case}: the approval moved it"
                );
                let (code, out, stderr) = deliver(&r, &id);
                assert_eq!(code, Some(0), "{case}: {stderr}");
                assert_eq!(out["closed"], true, "{case}: {out:#}");
                assert_eq!(r.git(&["rev-parse", target]), reviewed, "{case}");
            }
        }
    }
}

#[test]
fn the_matrix_covers_every_autonomy_level_and_target_kind() {
    // The CLI's levels, as `init-task --help` lists them.
    for level in ["hitl", "wave", "deep"] {
        for kind in [
            Kind::MainLine,
            Kind::Protected,
            Kind::Feature,
            Kind::Campaign,
        ] {
            assert!(
                MATRIX.iter().any(|&(l, k, _)| l == level && k == kind),
                "no case for {level} × {kind:?}"
            );
        }
    }
}

// --- a dry run reports a dirty target checkout (issue 33) -------------------------------------

/// A lone task at hitl delivering to `main` (protected, checked out in the main checkout), whose
/// reviewed commit writes `files`.
fn task_on_main(r: &Repo, files: &[(&str, &str)]) -> (String, String) {
    let id = r.task("Work", &["--target", "main", "--delivery", "direct"]);
    r.write(".splice/config.toml", CONFIG);
    let reviewed = r.review_at_deliver(
        &id,
        &Reviewed {
            title: "Work",
            delivery: "direct",
            target: "main",
            files,
        },
    );
    (id, reviewed)
}

/// The check escalates at once with the Dirty reason naming `path`, records no landing gate and
/// moves nothing, so no person is asked to approve a landing that cannot happen.
fn escalates_dirty_without_a_gate(r: &Repo, id: &str, path: &str, case: &str) {
    let before = r.git(&["rev-parse", "main"]);
    let (code, out, stderr) = deliver(r, id);
    assert_ne!(code, Some(0), "{case}: {out:#}");
    assert!(
        stderr.contains("uncommitted work") && stderr.contains(path),
        "{case}: {stderr}"
    );
    let b = r.bead(id);
    assert!(
        b["pipeline"]["gate"].is_null(),
        "{case}: a landing gate was recorded: {b:#}"
    );
    assert_eq!(b["pipeline"]["last_check"]["verdict"], "escalate", "{case}");
    assert_eq!(r.git(&["rev-parse", "main"]), before, "{case}: main moved");
}

#[test]
fn an_edit_to_a_file_the_landing_writes_escalates_before_anyone_is_asked_to_approve() {
    let r = Repo::new();
    let (id, _) = task_on_main(&r, &[("README.md", "the reviewed readme\n")]);
    r.write("README.md", "a person's edit\n");
    escalates_dirty_without_a_gate(&r, &id, "README.md", "edited file the landing writes");
    let text = std::fs::read_to_string(r.path().join("README.md")).unwrap();
    assert_eq!(text, "a person's edit\n", "the person's edit was touched");
}

#[test]
fn an_edit_elsewhere_escalates_before_anyone_is_asked_to_approve() {
    // The real landing refuses any uncommitted change (it never moves a checked-out branch
    // under a person's work), so the dry run does too.
    let r = Repo::new();
    r.write("notes.txt", "notes\n");
    r.git(&["add", "notes.txt"]);
    r.git(&["commit", "-qm", "notes"]);
    let (id, _) = task_on_main(&r, &[("src/a.rs", "pub fn a() {}\n")]);
    r.write("notes.txt", "more notes\n");
    escalates_dirty_without_a_gate(&r, &id, "notes.txt", "edited file elsewhere");
}

#[test]
fn an_untracked_file_where_the_landing_writes_one_escalates_before_anyone_is_asked() {
    let r = Repo::new();
    let (id, _) = task_on_main(&r, &[("src/a.rs", "pub fn a() {}\n")]);
    r.write("src/a.rs", "a person's own a.rs\n");
    escalates_dirty_without_a_gate(&r, &id, "src/a.rs", "untracked file in the way");
}

#[test]
fn a_clean_main_checkout_still_waits_for_approval_and_then_follows_the_landing() {
    let r = Repo::new();
    // An untracked file the landing does not write is no one's business.
    r.write("scratch.txt", "scratch\n");
    let (id, reviewed) = task_on_main(&r, &[("src/a.rs", "pub fn a() {}\n")]);
    let (code, out, stderr) = deliver(&r, &id);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(out["gate"], "pending", "{out:#}");
    r.ok(&["transition", "approve", "--bead", &id, "--step", "deliver"]);
    let (code, out, stderr) = deliver(&r, &id);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(out["closed"], true, "{out:#}");
    assert_eq!(r.git(&["rev-parse", "main"]), reviewed);
    assert!(r.path().join("src/a.rs").is_file(), "the checkout follows");
    assert_eq!(
        git_in(r.path(), &["status", "--porcelain", "--", "src"]),
        ""
    );
}
