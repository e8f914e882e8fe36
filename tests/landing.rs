//! Landing you can trust (issue 33): nothing reaches a protected branch without a person's
//! approval recorded before the move, a step's own gate is met before its landing, and only
//! reviewed content lands.
//!
//! Protected: the main line (`main`, `master`, a remote's default branch) and `[delivery]
//! protected`. The approval is a landing gate bound to the branch's tip; no autonomy relaxes it.

mod common;

use std::process::Command;

use common::{Repo, Reviewed, git_in, passing_review};
use serde_json::Value;

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

fn sim_agent(r: &Repo, extra: &str) {
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"{SPLICE}\", \"sim-agent\"]\nusage = \"file\"\n\n\
             [delivery]\nmethod = \"direct\"\n{extra}"
        ),
    );
}

/// A lone task at its deliver step, delivering directly to `target`, whose reviewed work is one
/// commit writing `files` on `splice/<id>`. Returns the id and the reviewed commit.
fn reviewed_task(r: &Repo, target: &str, files: &[(&str, &str)]) -> (String, String) {
    r.reviewed_task(&Reviewed {
        title: "Work",
        delivery: "direct",
        target,
        files,
    })
}

/// A passing review of `sha` recorded through the review step's check.
fn review(r: &Repo, id: &str, sha: &str) {
    let wt = r.worktree(id);
    std::fs::create_dir_all(wt.join("reviews")).unwrap();
    std::fs::write(wt.join(format!("reviews/{id}.md")), passing_review(sha)).unwrap();
    r.ok(&["transition", "complete", "--bead", id, "--step", "review"]);
    assert_eq!(r.bead(id)["pipeline"]["step"], "deliver");
}

fn node<'a>(status: &'a Value, id: &str) -> &'a Value {
    status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {status:#}"))
}

fn on(r: &Repo, rev: &str, path: &str) -> bool {
    common::git()
        .args(["cat-file", "-e", &format!("{rev}:{path}")])
        .current_dir(r.path())
        .status()
        .unwrap()
        .success()
}

// --- protected targets wait for a person's approval before they move ------------------------

#[test]
fn a_lone_task_at_hitl_waits_for_a_person_before_main_moves() {
    let r = Repo::new();
    let (id, reviewed) = reviewed_task(&r, "main", &[("src/a.rs", "pub fn a() {}\n")]);
    sim_agent(&r, "");
    let before = r.git(&["rev-parse", "main"]);
    let env = r.ok(&["run", "--output", "json"]);
    assert_eq!(env["status"], "suspended-human", "{env:#}");
    assert_eq!(
        r.git(&["rev-parse", "main"]),
        before,
        "main moved unapproved"
    );
    // The node says what waits, for which commit, and that no level relaxes it.
    let status = r.ok(&["status", "--json"]);
    let rest = &node(&status, &id)["rest"];
    assert_eq!(rest["kind"], "awaiting-human", "{rest:#}");
    assert_eq!(rest["land"]["target"], "main", "{rest:#}");
    assert_eq!(rest["land"]["sha"], reviewed.as_str(), "{rest:#}");
    assert_eq!(rest["relaxes"], false, "{rest:#}");
    let human = String::from_utf8_lossy(&r.run(&["status"]).stdout).into_owned();
    assert!(
        human.contains(&format!("approve landing {} on main", &reviewed[..10])),
        "{human}"
    );
    // A person approves; the approval moves nothing by itself.
    let approved = r.ok(&["transition", "approve", "--bead", &id, "--step", "deliver"]);
    assert_eq!(approved["lands"]["sha"], reviewed.as_str(), "{approved:#}");
    assert!(approved["next"].is_null(), "{approved:#}");
    assert_eq!(r.git(&["rev-parse", "main"]), before);
    // The next run lands exactly that commit and closes the node.
    let env = r.ok(&["run", "--output", "json"]);
    assert_eq!(env["status"], "done", "{env:#}");
    assert_eq!(r.git(&["rev-parse", "main"]), reviewed);
    // The journal holds the approval before the landing.
    let journal = std::fs::read_to_string(r.state().join("journal.jsonl")).unwrap();
    let approval = journal.find("approved by").expect("no approval journaled");
    let landing = journal
        .find("landed splice/")
        .expect("no landing journaled");
    assert!(approval < landing, "the approval came after the landing");
}

#[test]
fn wave_and_deep_autonomy_do_not_relax_the_landing_approval() {
    for level in ["wave", "deep"] {
        let r = Repo::new();
        // Deep never targets the main line; a branch in `[delivery] protected` is protected too.
        r.git(&["branch", "release"]);
        let (id, _) = reviewed_task(&r, "release", &[("a.txt", "a\n")]);
        r.ok(&[
            "transition",
            "set-autonomy",
            "--bead",
            &id,
            "--level",
            level,
        ]);
        sim_agent(&r, "protected = [\"release\"]\n");
        let before = r.git(&["rev-parse", "release"]);
        let env = r.ok(&["run", "--output", "json"]);
        assert_eq!(env["status"], "suspended-human", "{level}: {env:#}");
        assert_eq!(r.git(&["rev-parse", "release"]), before, "{level}");
    }
}

#[test]
fn a_remotes_default_branch_is_protected_and_an_unprotected_target_lands_at_once() {
    let r = Repo::new();
    r.git(&["branch", "trunk"]);
    r.git(&["branch", "dev"]);
    r.git(&["update-ref", "refs/remotes/origin/trunk", "trunk"]);
    r.git(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/trunk",
    ]);
    let (a, _) = reviewed_task(&r, "trunk", &[("a.txt", "a\n")]);
    let out = r.ok(&["transition", "deliver", "--bead", &a]);
    assert_eq!(out["gate"], "pending", "{out:#}");
    assert!(!on(&r, "trunk", "a.txt"));
    let (b, reviewed) = reviewed_task(&r, "dev", &[("b.txt", "b\n")]);
    let out = r.ok(&["transition", "deliver", "--bead", &b]);
    assert_eq!(out["closed"], true, "{out:#}");
    assert_eq!(r.git(&["rev-parse", "dev"]), reviewed);
}

#[test]
fn an_approval_holds_only_for_the_commit_it_approved() {
    let r = Repo::new();
    let (id, reviewed) = reviewed_task(&r, "main", &[("src/a.rs", "pub fn a() {}\n")]);
    r.ok(&["transition", "deliver", "--bead", &id]);
    r.ok(&["transition", "approve", "--bead", &id, "--step", "deliver"]);
    // The branch moves after the approval: main gained a commit, merged into the branch.
    r.write("other.txt", "other\n");
    r.git(&["add", "other.txt"]);
    r.git(&["commit", "-qm", "other"]);
    let main = r.git(&["rev-parse", "main"]);
    git_in(&r.worktree(&id), &["merge", "-q", "--no-edit", "main"]);
    let tip = git_in(&r.worktree(&id), &["rev-parse", "HEAD"]);
    assert_ne!(tip, reviewed);
    let out = r.ok(&["transition", "deliver", "--bead", &id]);
    assert_eq!(out["gate"], "pending", "asks again: {out:#}");
    assert_eq!(r.git(&["rev-parse", "main"]), main, "main moved");
    let gate = &r.bead(&id)["pipeline"]["gate"];
    assert_eq!(gate["land"]["sha"], tip.as_str(), "{gate:#}");
    // Approved again, it lands.
    r.ok(&["transition", "approve", "--bead", &id, "--step", "deliver"]);
    let out = r.ok(&["transition", "deliver", "--bead", &id]);
    assert_eq!(out["closed"], true, "{out:#}");
    assert!(on(&r, "main", "src/a.rs") && on(&r, "main", "other.txt"));
}

#[test]
fn a_rejected_landing_moves_nothing_and_sends_the_step_back_to_its_agent() {
    let r = Repo::new();
    let (id, _) = reviewed_task(&r, "main", &[("src/a.rs", "pub fn a() {}\n")]);
    let before = r.git(&["rev-parse", "main"]);
    r.ok(&["transition", "deliver", "--bead", &id]);
    r.ok(&[
        "transition",
        "reject",
        "--bead",
        &id,
        "--step",
        "deliver",
        "--reason",
        "not this week",
    ]);
    assert_eq!(r.git(&["rev-parse", "main"]), before);
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["step"], "deliver", "{b:#}");
    assert!(b["pipeline"]["gate"].is_null(), "{b:#}");
    assert_eq!(b["pipeline"]["guidance"], "not this week");
}

// --- a step's own gate comes before its landing ----------------------------------------------

/// Approve every pending gate but the root's integrate gate, running between, until the root
/// waits there.
fn run_to_the_integrate_gate(r: &Repo, root: &str) {
    for _ in 0..30 {
        r.ok(&["run", "--output", "json"]);
        let status = r.ok(&["status", "--json"]);
        let rest = &node(&status, root)["rest"];
        if rest["kind"] == "awaiting-human" && rest["gate"] == "integrate" {
            return;
        }
        assert!(r.approve_gates(&status), "stuck: {status:#}");
    }
    panic!("the root never reached its integrate gate");
}

#[test]
fn the_integrate_gate_is_met_before_the_campaign_lands() {
    let r = Repo::new();
    r.write("tests/README", "the campaign's tests\n");
    r.git(&["add", "tests"]);
    r.git(&["commit", "-qm", "tests"]);
    r.git(&["branch", "campaign/x"]);
    let root = r.init(&[
        "--autonomy",
        "wave",
        "--target",
        "campaign/x",
        "--delivery",
        "direct",
    ]);
    sim_agent(&r, "");
    r.passing_suite(&root);
    run_to_the_integrate_gate(&r, &root);
    // The children landed on the (unprotected) campaign branch; the root's documents did not:
    // the integrate gate waits first.
    let prp = format!("docs/prp/{root}.md");
    assert!(
        !on(&r, "campaign/x", &prp),
        "the campaign landed before its gate"
    );
    let before = r.git(&["rev-parse", "campaign/x"]);
    let status = r.ok(&["status", "--json"]);
    let rest = &node(&status, &root)["rest"];
    assert_eq!(rest["land"]["target"], "campaign/x", "{rest:#}");
    // Rejected at the gate: nothing moved.
    r.ok(&[
        "transition",
        "reject",
        "--bead",
        &root,
        "--step",
        "integrate",
        "--reason",
        "not yet",
    ]);
    assert_eq!(r.git(&["rev-parse", "campaign/x"]), before);
    // Checked again, approved, it lands and the campaign is done.
    run_to_the_integrate_gate(&r, &root);
    r.ok(&[
        "transition",
        "approve",
        "--bead",
        &root,
        "--step",
        "integrate",
    ]);
    let env = r.ok(&["run", "--output", "json"]);
    assert_eq!(env["status"], "done", "{env:#}");
    assert!(on(&r, "campaign/x", &prp));
}

/// At deep autonomy a campaign whose target is the main line integrates on its own branch,
/// `splice/<root>` (issue 33; seed 003: deep "additionally requires a campaign integration
/// branch", and "the final campaign merge to main remains a person's job"): its pieces land there
/// unattended, and the root's integrate lands that branch on `main` only after a person approved.
#[test]
fn a_deep_campaign_on_main_integrates_on_its_own_branch_and_a_person_approves_the_merge_to_main() {
    let r = Repo::new();
    r.write("tests/README", "the campaign's tests\n");
    r.git(&["add", "tests"]);
    r.git(&["commit", "-qm", "tests"]);
    let main_before = r.git(&["rev-parse", "main"]);
    let root = r.init(&[
        "--autonomy",
        "deep",
        "--target",
        "main",
        "--delivery",
        "direct",
    ]);
    sim_agent(&r, "");
    r.passing_suite(&root);
    let integration = format!("splice/{root}");
    let mut waiting = None;
    for _ in 0..20 {
        let env = r.ok(&["run", "--output", "json"]);
        assert_ne!(env["status"], "done", "done without a person: {env:#}");
        let status = r.ok(&["status", "--json"]);
        let rest = node(&status, &root)["rest"].clone();
        if rest["land"].is_object() {
            waiting = Some(rest);
            break;
        }
        assert_ne!(env["status"], "escalated", "{status:#}");
        // Deep still holds the planning gates for a person (seed 003).
        r.approve_gates(&status);
    }
    let rest = waiting.expect("the root never waited for the landing on main");
    assert_eq!(rest["land"]["target"], "main", "{rest:#}");
    assert_eq!(r.git(&["rev-parse", "main"]), main_before, "main moved");
    // Every piece landed on the integration branch, which the children name as their target.
    let split = r.bead(&root)["pipeline"]["split"]["children"].clone();
    let children: Vec<String> = split
        .as_array()
        .expect("the root split")
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    assert!(!children.is_empty());
    for child in &children {
        let b = r.bead(child);
        assert_eq!(b["pipeline"]["target"], integration.as_str(), "{child}");
        assert_eq!(b["status"], "closed", "{child}: {:#}", b["pipeline"]);
    }
    let prp = format!("docs/prp/{root}.md");
    assert!(on(&r, &integration, &prp));
    // The person approves; the next run lands the whole campaign on main.
    r.ok(&[
        "transition",
        "approve",
        "--bead",
        &root,
        "--step",
        "integrate",
    ]);
    let env = r.ok(&["run", "--output", "json"]);
    assert_eq!(env["status"], "done", "{env:#}");
    assert!(on(&r, "main", &prp));
    let tip = r.git(&["rev-parse", "main"]);
    assert_eq!(
        r.git(&[
            "merge-base",
            "--is-ancestor",
            rest["land"]["sha"].as_str().unwrap(),
            &tip
        ]),
        ""
    );
}

// --- only reviewed content lands --------------------------------------------------------------

/// `dev` gains a commit touching `path`, and the node's branch merges it in with `--no-commit`,
/// then `extra` is added to the merge before it is committed.
fn merge_target_in(r: &Repo, id: &str, path: &str, text: &str, extra: Option<(&str, &str)>) {
    r.git(&["checkout", "-q", "dev"]);
    r.write(path, text);
    r.git(&["add", path]);
    r.git(&["commit", "-qm", "dev moves"]);
    r.git(&["checkout", "-q", "main"]);
    let wt = r.worktree(id);
    let merged = common::git()
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(["merge", "-q", "--no-commit", "--no-ff", "dev"])
        .current_dir(&wt)
        .output()
        .unwrap();
    if !merged.status.success() {
        // A conflict: the branch's version is kept, resolving it.
        git_in(&wt, &["checkout", "--ours", "--", path]);
    }
    git_in(&wt, &["add", "-u"]);
    if let Some((rel, body)) = extra {
        std::fs::write(wt.join(rel), body).unwrap();
        git_in(&wt, &["add", rel]);
    }
    git_in(&wt, &["commit", "-q", "--no-edit", "-m", "merge dev"]);
}

#[test]
fn a_merge_commit_that_adds_unreviewed_content_goes_back_to_review() {
    let r = Repo::new();
    r.git(&["branch", "dev"]);
    let (id, _) = reviewed_task(&r, "dev", &[("src/a.rs", "pub fn a() {}\n")]);
    merge_target_in(
        &r,
        &id,
        "other.txt",
        "dev\n",
        Some(("src/unreviewed.txt", "sneaked in\n")),
    );
    let before = r.git(&["rev-parse", "dev"]);
    let err = r.fails(1, &["transition", "deliver", "--bead", &id]);
    assert!(err.contains("src/unreviewed.txt"), "{err}");
    assert_eq!(
        r.git(&["rev-parse", "dev"]),
        before,
        "unreviewed code landed"
    );
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["step"], "review", "{b:#}");
    assert!(
        b["pipeline"]["guidance"]
            .as_str()
            .unwrap()
            .contains("moved past its review"),
        "{b:#}"
    );
}

#[test]
fn a_conflict_resolved_on_the_branch_goes_back_to_review() {
    let r = Repo::new();
    r.git(&["branch", "dev"]);
    let (id, _) = reviewed_task(&r, "dev", &[("README.md", "theirs\n")]);
    merge_target_in(&r, &id, "README.md", "ours\n", None);
    let before = r.git(&["rev-parse", "dev"]);
    let err = r.fails(1, &["transition", "deliver", "--bead", &id]);
    assert!(
        err.contains("conflicts") && err.contains("README.md"),
        "{err}"
    );
    assert_eq!(r.git(&["rev-parse", "dev"]), before);
    assert_eq!(r.bead(&id)["pipeline"]["step"], "review");
    // Reviewed again as it is now, it lands.
    let tip = git_in(&r.worktree(&id), &["rev-parse", "HEAD"]);
    review(&r, &id, &tip);
    let out = r.ok(&["transition", "deliver", "--bead", &id]);
    assert_eq!(out["closed"], true, "{out:#}");
}

#[test]
fn a_clean_merge_of_the_target_adds_nothing_and_lands() {
    let r = Repo::new();
    r.git(&["branch", "dev"]);
    let (id, reviewed) = reviewed_task(&r, "dev", &[("src/a.rs", "pub fn a() {}\n")]);
    merge_target_in(&r, &id, "other.txt", "dev\n", None);
    let out = r.ok(&["transition", "deliver", "--bead", &id]);
    assert_eq!(out["closed"], true, "{out:#}");
    let dev = r.git(&["rev-parse", "dev"]);
    assert!(on(&r, &dev, "src/a.rs") && on(&r, &dev, "other.txt"));
    assert!(!reviewed.is_empty());
}

// --- a transient refusal is the next check's, not the agent's ----------------------------------

#[test]
fn a_busy_target_is_checked_again_by_the_next_run_with_no_dispatch_and_no_attempt() {
    // `trunk` (unprotected) is checked out in the main checkout, where a crashed git left
    // `.git/index.lock`: the landing is refused as transient (`recheck`), the run that checked
    // it checks it no more, and the next run lands it; no agent runs, no attempt is spent.
    let r = Repo::unconfined();
    r.git(&["checkout", "-q", "-b", "trunk"]);
    let (id, reviewed) = reviewed_task(&r, "trunk", &[("src/a.rs", "pub fn a() {}\n")]);
    let notes = tempfile::tempdir().unwrap();
    let log = notes.path().join("dispatched");
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"sh\", \"-c\", \"echo \\\"$SPLICE_STEP\\\" >> {}\"]\n\n\
             [delivery]\nmethod = \"direct\"\n",
            log.display()
        ),
    );
    let attempts = r.bead(&id)["pipeline"]["attempts"].clone();
    let before = r.git(&["rev-parse", "trunk"]);
    let lock = r.path().join(".git/index.lock");
    std::fs::write(&lock, "").unwrap();
    let env = r.ok(&["run", "--output", "json"]);
    assert_eq!(env["status"], "escalated", "{env:#}");
    let check = r.bead(&id)["pipeline"]["last_check"].clone();
    assert_eq!(check["verdict"], "refuse", "{check:#}");
    assert_eq!(check["recheck"], true, "{check:#}");
    assert!(
        check["reason"]
            .as_str()
            .unwrap()
            .contains("the next check lands it"),
        "{check:#}"
    );
    assert_eq!(r.git(&["rev-parse", "trunk"]), before, "trunk moved");

    std::fs::remove_file(&lock).unwrap();
    let env = r.ok(&["run", "--output", "json"]);
    assert_eq!(env["status"], "done", "{env:#}");
    assert_eq!(r.git(&["rev-parse", "trunk"]), reviewed);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{b:#}");
    assert_eq!(b["pipeline"]["attempts"], attempts, "an attempt was spent");
    let dispatched = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(dispatched, "", "an agent was dispatched");
}

// --- a dirty checkout of the target: the printed remedy works as printed -----------------------

/// The commands a landing's reason names, in its order: its backquoted spans that run `git` or
/// `splice` (others quote a branch).
fn quoted_commands(reason: &str) -> Vec<String> {
    reason
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| span.starts_with("git ") || span.starts_with("splice "))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_dirty_checkout_remedy_followed_as_printed_lands_and_gives_the_work_back() {
    // `main` needs a person's approval, so its remedy approves between the two checks; `trunk`
    // does not. Either way the stashed edit comes back only after the landing.
    for target in ["main", "trunk"] {
        let r = Repo::new();
        if target != "main" {
            r.git(&["checkout", "-q", "-b", target]);
        }
        let (id, reviewed) = reviewed_task(&r, target, &[("src/a.rs", "pub fn a() {}\n")]);
        r.write("README.md", "a person's edit in progress\n");
        let err = r.fails(1, &["transition", "deliver", "--bead", &id]);
        assert!(err.contains("uncommitted work"), "{target}: {err}");
        let check = r.bead(&id)["pipeline"]["last_check"].clone();
        let reason = check["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["kind"] == "land")
            .and_then(|a| a["reason"].as_str())
            .unwrap_or_else(|| panic!("{target}: no landing answer: {check:#}"))
            .to_string();
        let commands = quoted_commands(&reason);
        assert!(
            commands.len() >= 3 && commands.iter().any(|c| c.contains("stash pop")),
            "{target}: {reason}"
        );
        for command in &commands {
            let out = Command::new("sh")
                .args(["-c", command])
                .current_dir(r.path())
                .env_clear()
                .envs(r.cmd(&[]).get_envs().filter_map(|(k, v)| Some((k, v?))))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{target}: `{command}` failed ({reason}):\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert_eq!(
            r.git(&["rev-parse", target]),
            reviewed,
            "{target}: {reason}"
        );
        assert_eq!(r.bead(&id)["status"], "closed", "{target}: {reason}");
        assert_eq!(
            std::fs::read_to_string(r.path().join("README.md")).unwrap(),
            "a person's edit in progress\n",
            "{target}: the stashed edit is not back: {reason}"
        );
        assert!(on(&r, target, "src/a.rs"), "{target}");
        assert_eq!(r.git(&["stash", "list"]), "", "{target}: a stash is left");
    }
}
