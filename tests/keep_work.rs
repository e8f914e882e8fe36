//! Issue 33, "Keep what the work produced": a review's text is kept in the state users commit
//! (`.splice/reviews/<id>/<sha256>.md`, the bead holding the hash) and shown by `show`; a FAIL
//! review is acted on once per reviewed commit (an unchanged HEAD gets a fresh review); `cancel`
//! removes the node's worktree and its branch (kept and named when it holds commits not on the
//! target); `redo` after `unpark` starts from the step's start commit, cleaned.

mod common;

use std::path::PathBuf;

use common::{Repo, git_in};
use serde_json::{Value, json};
use splice::authority::credential::sha256_hex_of;

fn head(r: &Repo) -> String {
    r.git(&["rev-parse", "HEAD"])
}

/// A lone task moved to its review step (its floors read the repository root).
fn at_review(r: &Repo, extra: &[&str]) -> String {
    // These tests complete implement by hand after a FAIL: no verification loop, and the light
    // route, where review follows implement (no test generator between them).
    common::single_pass_implement(r);
    let id = r.task("T", extra);
    r.ok(&[
        "transition",
        "route",
        "--bead",
        &id,
        "--to",
        "light",
        "--at",
        "review",
    ]);
    id
}

fn review(sha: &str, spec: &str) -> String {
    format!(
        "## Review\nReviewed-SHA: {sha}\nStandards: PASS\nSpec: {spec}\nArchitecture: PASS\n\
         Evidence: PASS\n"
    )
}

#[must_use]
fn complete(r: &Repo, id: &str, step: &str) -> std::process::Output {
    let out = r.run(&["transition", "complete", "--bead", id, "--step", step]);
    common::no_panic(&out);
    out
}

fn step(r: &Repo, id: &str) -> String {
    r.bead(id)["pipeline"]["step"].as_str().unwrap().to_string()
}

fn kept(r: &Repo, id: &str) -> Vec<Value> {
    r.bead(id)["pipeline"]["reviews"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn has_branch(r: &Repo, branch: &str) -> bool {
    !r.git(&["branch", "--list", branch]).is_empty()
}

// --- the review's text is kept --------------------------------------------------------------

#[test]
fn a_review_is_kept_content_addressed_in_the_state_and_shown_once_its_worktree_is_gone() {
    let r = Repo::new();
    let id = at_review(&r, &[]);
    let sha = head(&r);
    // Longer than the guidance that travels in the journal: its last line is only in the file.
    let text = format!(
        "{}{}The last line of the review.\n",
        review(&sha, "FAIL the empty input is not handled"),
        "A detail of the finding.\n".repeat(400)
    );
    r.write(&format!("reviews/{id}.md"), &text);
    assert_eq!(complete(&r, &id, "review").status.code(), Some(1));
    let hash = sha256_hex_of(text.as_bytes());
    let rel = format!(".splice/reviews/{id}/{hash}.md");
    assert_eq!(std::fs::read_to_string(r.path().join(&rel)).unwrap(), text);
    let reviews = kept(&r, &id);
    assert_eq!(reviews.len(), 1, "{reviews:#?}");
    assert_eq!(reviews[0]["sha256"], hash.as_str());
    assert_eq!(reviews[0]["reviewed_sha"], sha.as_str());
    assert_eq!(reviews[0]["verdict"], "FAIL");
    assert_eq!(reviews[0]["sent_back"], true);
    assert!(
        !r.journal().contains("The last line of the review."),
        "the journal does not grow with the review's text"
    );
    // Users commit `.splice/`: the kept review is not ignored.
    let ignored = common::git()
        .args(["check-ignore", "-q", &rel])
        .current_dir(r.path())
        .status()
        .unwrap();
    assert_eq!(ignored.code(), Some(1), "{rel} is ignored by git");

    // The file the reviewer wrote goes (with its worktree); `show` still has the text.
    std::fs::remove_file(r.path().join(format!("reviews/{id}.md"))).unwrap();
    let shown = r.ok(&["show", &id, "--json"])[0].clone();
    assert_eq!(shown["review"]["path"], rel.as_str(), "{shown:#}");
    assert_eq!(shown["review"]["text"], text.as_str());
    assert_eq!(shown["review"]["verdict"], "FAIL");
    let out = r.run(&["show", &id]);
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(human.contains(&rel), "{human}");
    assert!(human.contains("The last line of the review."), "{human}");
}

#[test]
fn a_passing_review_is_kept_and_the_same_text_only_once() {
    let r = Repo::new();
    let id = at_review(&r, &[]);
    let text = review(&head(&r), "PASS");
    r.write(&format!("reviews/{id}.md"), &text);
    assert_eq!(complete(&r, &id, "review").status.code(), Some(0));
    assert_eq!(step(&r, &id), "deliver");
    let reviews = kept(&r, &id);
    assert_eq!(reviews.len(), 1);
    assert_eq!(reviews[0]["verdict"], "PASS");
    assert!(reviews[0].get("sent_back").is_none(), "{reviews:#?}");
    let hash = sha256_hex_of(text.as_bytes());
    assert!(r.state().join(format!("reviews/{id}/{hash}.md")).is_file());
}

#[test]
fn hostile_review_files_are_refused_with_a_clear_message_and_nothing_kept() {
    let r = Repo::new();
    let id = at_review(&r, &[]);
    let path = r.path().join(format!("reviews/{id}.md"));
    let nothing_kept = |r: &Repo| {
        assert!(kept(r, &id).is_empty());
        assert!(!r.state().join("reviews").join(&id).exists());
    };
    // Huge: over the bound a kept review may have.
    let huge = format!("{}{}", review(&head(&r), "PASS"), "x".repeat(300 << 10));
    r.write(&format!("reviews/{id}.md"), &huge);
    let out = complete(&r, &id, "review");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("larger than"), "{err}");
    nothing_kept(&r);
    // A link (to a review elsewhere) is never followed.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("r.md"), review(&head(&r), "PASS")).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(outside.path().join("r.md"), &path).unwrap();
    let out = complete(&r, &id, "review");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("symbolic link"), "{err}");
    nothing_kept(&r);
    // Not UTF-8.
    std::fs::remove_file(&path).unwrap();
    let mut bytes = review(&head(&r), "PASS").into_bytes();
    bytes.extend([0xff, 0xfe, b'\n']);
    std::fs::write(&path, bytes).unwrap();
    let out = complete(&r, &id, "review");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not UTF-8"), "{err}");
    nothing_kept(&r);
}

#[test]
fn a_linked_reviews_directory_is_refused_and_never_written_through() {
    let r = Repo::new();
    let id = at_review(&r, &[]);
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), r.state().join("reviews")).unwrap();
    r.write(&format!("reviews/{id}.md"), &review(&head(&r), "PASS"));
    let out = complete(&r, &id, "review");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
}

#[test]
fn a_kept_review_that_was_altered_or_replaced_by_a_link_is_named_by_show() {
    let r = Repo::new();
    let id = at_review(&r, &[]);
    let text = review(&head(&r), "PASS");
    r.write(&format!("reviews/{id}.md"), &text);
    assert_eq!(complete(&r, &id, "review").status.code(), Some(0));
    let file = r.state().join(format!(
        "reviews/{id}/{}.md",
        sha256_hex_of(text.as_bytes())
    ));
    std::fs::write(&file, "## Review\nsomething else\n").unwrap();
    let shown = r.ok(&["show", &id, "--json"])[0].clone();
    assert_eq!(shown["review"]["text"], Value::Null, "{shown:#}");
    let why = shown["review"]["unreadable"].as_str().unwrap();
    assert!(why.contains("does not match"), "{why}");
    let out = r.run(&["show", &id]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("does not match"));

    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", &file).unwrap();
    let shown = r.ok(&["show", &id, "--json"])[0].clone();
    let why = shown["review"]["unreadable"].as_str().unwrap();
    assert!(why.contains("symbolic link"), "{why}");
    std::fs::remove_file(&file).unwrap();
    let shown = r.ok(&["show", &id, "--json"])[0].clone();
    let why = shown["review"]["unreadable"].as_str().unwrap();
    assert!(why.contains("does not exist"), "{why}");
}

// --- a FAIL review is acted on once per reviewed commit -------------------------------------

#[test]
fn an_old_fail_of_an_unchanged_head_is_not_acted_on_again_and_a_fresh_review_is_dispatched() {
    let r = Repo::new();
    let id = at_review(&r, &["--autonomy", "wave"]);
    let sha = head(&r);
    r.write(
        &format!("reviews/{id}.md"),
        &review(&sha, "FAIL S1 is missing"),
    );
    assert_eq!(complete(&r, &id, "review").status.code(), Some(1));
    assert_eq!(step(&r, &id), "implement", "the FAIL sends the node back");

    // implement proposes without a new commit; the old review is still there.
    r.ok(&[
        "transition",
        "propose",
        "--bead",
        &id,
        "--step",
        "implement",
        "--artifact",
        "HEAD",
    ]);
    assert_eq!(complete(&r, &id, "implement").status.code(), Some(0));
    assert_eq!(step(&r, &id), "review");
    let out = complete(&r, &id, "review");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already sent the node back"), "{err}");
    assert_eq!(step(&r, &id), "review", "not sent back a second time");
    let shown = r.ok(&["show", &id, "--json"])[0].clone();
    let action = &shown["decision"]["action"];
    assert_eq!(action["action"], "dispatch", "{shown:#}");
    assert_eq!(action["step"], "review", "a fresh review of HEAD");

    // A fresh FAIL of the same commit is not sent back again: the implementer made no change
    // for the first, so it goes to a person, who reads it …
    r.write(
        &format!("reviews/{id}.md"),
        &review(&sha, "FAIL still missing, said again"),
    );
    let out = complete(&r, &id, "review");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a fresh review fails it again"), "{err}");
    assert_eq!(step(&r, &id), "review");
    let shown = r.ok(&["show", &id, "--json"])[0].clone();
    let rest = &shown["decision"]["rest"];
    assert_eq!(rest["kind"], "escalated", "{shown:#}");
    assert!(
        rest["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("no new commit after the review's FAIL of {sha}")),
        "{shown:#}"
    );
    // … but a FAIL of a new commit is.
    r.write("src/s1.rs", "pub fn s1() {}\n");
    r.git(&["add", "src/s1.rs"]);
    r.git(&["commit", "-qm", "s1"]);
    r.write(
        &format!("reviews/{id}.md"),
        &review(&head(&r), "FAIL S1 is wrong"),
    );
    assert_eq!(complete(&r, &id, "review").status.code(), Some(1));
    assert_eq!(step(&r, &id), "implement");
    let reviews = kept(&r, &id);
    let sent: Vec<&Value> = reviews.iter().map(|v| &v["sent_back"]).collect();
    assert_eq!(
        sent,
        [&json!(true), &Value::Null, &json!(true)],
        "{reviews:#?}"
    );
}

#[test]
fn a_fresh_passing_review_of_the_unchanged_head_moves_on() {
    let r = Repo::new();
    let id = at_review(&r, &["--autonomy", "wave"]);
    let sha = head(&r);
    r.write(&format!("reviews/{id}.md"), &review(&sha, "FAIL nit"));
    assert_eq!(complete(&r, &id, "review").status.code(), Some(1));
    r.ok(&[
        "transition",
        "propose",
        "--bead",
        &id,
        "--step",
        "implement",
        "--artifact",
        "HEAD",
    ]);
    assert_eq!(complete(&r, &id, "implement").status.code(), Some(0));
    r.write(
        &format!("reviews/{id}.md"),
        &review(&sha, "PASS the nit was wrong"),
    );
    assert_eq!(complete(&r, &id, "review").status.code(), Some(0));
    assert_eq!(step(&r, &id), "deliver");
}

// --- cancel removes the node's worktree and branch -------------------------------------------

/// A worktree for `id` on `splice/<id>` at `main`, as the runner makes it.
fn add_worktree(r: &Repo, id: &str) -> PathBuf {
    let wt = r.worktree(id);
    r.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        &format!("splice/{id}"),
        wt.to_str().unwrap(),
        "main",
    ]);
    wt
}

#[test]
fn cancel_removes_the_worktree_and_a_branch_whose_commits_are_all_on_the_target() {
    let r = Repo::new();
    let id = r.task("Not wanted", &[]);
    let wt = add_worktree(&r, &id);
    let out = r.ok(&["cancel", &id, "--reason", "not wanted"]);
    assert!(!wt.exists(), "the worktree is removed");
    let branch = format!("splice/{id}");
    assert!(!has_branch(&r, &branch), "the branch is deleted");
    assert_eq!(out["cleanup"]["removed"], json!([id]), "{out:#}");
    assert_eq!(out["cleanup"]["deleted"], json!([branch]), "{out:#}");
    assert_eq!(out["cleanup"]["kept"], json!([]), "{out:#}");
    assert!(!r.git(&["worktree", "list"]).contains(&id));
}

#[test]
fn cancel_keeps_and_names_a_branch_holding_commits_not_on_the_target() {
    let r = Repo::new();
    let id = r.task("Half done", &[]);
    let wt = add_worktree(&r, &id);
    std::fs::write(wt.join("half.rs"), "fn half() {}\n").unwrap();
    git_in(&wt, &["add", "half.rs"]);
    git_in(&wt, &["commit", "-qm", "half"]);
    let out = r.ok(&["cancel", &id, "--reason", "not needed after all"]);
    assert!(!wt.exists(), "the worktree is removed");
    let branch = format!("splice/{id}");
    assert!(has_branch(&r, &branch), "its work is not deleted");
    let kept = &out["cleanup"]["kept"];
    assert_eq!(kept[0]["branch"], branch.as_str(), "{out:#}");
    assert_eq!(kept[0]["target"], "main");
    assert_eq!(kept[0]["commits"], 1);
    assert_eq!(out["cleanup"]["deleted"], json!([]));
}

#[test]
fn a_recursive_cancel_removes_every_cancelled_nodes_worktree() {
    let r = Repo::new();
    let root = r.init(&["--scenarios", "S1,S2"]);
    r.ok(&[
        "transition",
        "route",
        &root,
        "--to",
        "root",
        "--at",
        "to-issues",
    ]);
    r.write(
        "children.json",
        r#"[{"title": "A", "scenarios": ["S1"]}, {"title": "B", "scenarios": ["S2"]}]"#,
    );
    r.ok(&["transition", "split", &root, "--children", "children.json"]);
    let (one, two) = (format!("{root}.1"), format!("{root}.2"));
    let (w1, w2) = (add_worktree(&r, &one), add_worktree(&r, &two));
    let out = r.ok(&["cancel", &root, "--recursive", "--reason", "wrong plan"]);
    assert!(!w1.exists() && !w2.exists(), "{out:#}");
    assert!(!has_branch(&r, &format!("splice/{one}")));
    assert!(!has_branch(&r, &format!("splice/{two}")));
}

#[test]
fn a_cancelled_node_whose_worktree_is_still_there_is_cleaned_up_by_the_next_pass() {
    // E.g. a live runner's dispatch was still working in it when the cancel came.
    let r = Repo::new();
    let id = r.task("Not wanted", &[]);
    // A run looks up every command it may start first.
    r.write(".splice/config.toml", "[agent]\ncommand = [\"true\"]\n");
    r.ok(&["cancel", &id, "--reason", "not wanted"]);
    let wt = add_worktree(&r, &id);
    let shown = r.ok(&["show", &id, "--json"])[0].clone();
    let action = &shown["decision"]["action"];
    assert_eq!(action["action"], "cleanup-fanout", "{shown:#}");
    assert_eq!(action["own"], true);
    r.ok(&["pass", "--output", "json"]);
    assert!(!wt.exists());
    assert!(!has_branch(&r, &format!("splice/{id}")));
}

// --- redo after unpark starts from the step's start commit, cleaned ---------------------------

#[test]
fn redo_after_unpark_starts_from_the_steps_start_commit_with_untracked_files_removed() {
    let r = Repo::unconfined();
    let notes = r.path().join("seen");
    std::fs::create_dir_all(&notes).unwrap();
    // Each session notes what it found, commits its work, leaves an untracked file and proposes;
    // the step's floor always refuses, so its one attempt parks it.
    let script = format!(
        "n=$(ls {notes} | wc -l); n=$((n+1)); {{ git rev-parse HEAD; ls; }} > {notes}/$n; \
         echo $n > work-$n.txt; git add work-$n.txt; \
         git -c user.name=a -c user.email=a@x commit -qm \"attempt $n\"; \
         echo junk > junk-$n.txt; \
         splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact HEAD",
        notes = notes.display()
    );
    let manifest = common::work_step_manifest(
        json!(["sh", "-c", script]),
        json!([{ "kind": "file_exists", "path": "never.md" }]),
        60,
        1,
    )
    .replace("\"resume\": \"continue\"", "\"resume\": \"redo\"");
    assert!(manifest.contains("\"redo\""));
    r.write(".splice/manifest.json", &manifest);
    r.write(".splice/config.toml", "[limits]\nbackoff_s = 0\n");
    let base = head(&r);
    let id = r.task("Work", &[]);
    common::no_panic(&r.run(&["run", "--output", "json", "--max-passes", "6"]));
    let b = r.bead(&id);
    assert!(b["pipeline"]["dead_letter"].is_object(), "{b:#}");
    let first = std::fs::read_to_string(notes.join("1")).unwrap();
    assert!(first.starts_with(&base), "{first}");
    let refused = r.git(&["rev-parse", &format!("splice/{id}")]);
    assert_ne!(refused, base);

    r.ok(&[
        "transition",
        "unpark",
        "--bead",
        &id,
        "--reason",
        "try again",
    ]);
    common::no_panic(&r.run(&["run", "--output", "json", "--max-passes", "6"]));
    let second = std::fs::read_to_string(notes.join("2")).expect("a second session ran");
    assert!(
        second.starts_with(&base),
        "the session after unpark starts from the step's start commit: {second}"
    );
    assert!(
        !second.contains("work-1.txt") && !second.contains("junk-1.txt"),
        "the refused attempt's files are gone, untracked ones too: {second}"
    );
    let on_branch = common::git()
        .args([
            "merge-base",
            "--is-ancestor",
            &refused,
            &format!("splice/{id}"),
        ])
        .current_dir(r.path())
        .status()
        .unwrap();
    assert_eq!(
        on_branch.code(),
        Some(1),
        "the refused attempt's commit is not on the branch"
    );
}
