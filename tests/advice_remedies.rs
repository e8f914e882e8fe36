//! Issue 33: advice that is safe to follow. Each command `splice doctor` prints to fix a checkout
//! no node owns is run here as a person would run it (`sh -c`, in the repository's root), and
//! afterwards the state (`.splice/`'s bead files and journal) is as it was, the uncommitted work
//! of the checkout can still be read, and doctor no longer reports the checkout.
//! (The remedy `worktree::verify` prints for a checkout whose git data was changed is run by its
//! unit test, `a_changed_checkouts_remedy_sets_it_aside_and_loses_nothing`.)

mod common;

use std::path::Path;
use std::process::Command;

use common::{Repo, git_in};
use serde_json::Value;

/// `splice doctor --json`'s findings of the `worktrees` check.
fn worktree_findings(r: &Repo) -> Vec<Value> {
    let out = r.run(&["doctor", "--json"]);
    common::no_panic(&out);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "worktrees")
        .cloned()
        .collect()
}

/// The one `worktrees` warning about `id`, and its fix.
fn the_fix(r: &Repo, id: &str) -> String {
    let findings = worktree_findings(r);
    let about: Vec<&Value> = findings
        .iter()
        .filter(|f| f["message"].as_str().unwrap().contains(id))
        .collect();
    assert_eq!(about.len(), 1, "{findings:#?}");
    assert_eq!(about[0]["severity"], "warn", "{about:#?}");
    about[0]["fix"].as_str().unwrap().to_string()
}

/// Run `fix` as a person pastes it, in the repository's root; it must succeed.
fn follow(r: &Repo, fix: &str) {
    for unsafe_word in ["--force", "rm -rf", "reset --hard", "clean -f"] {
        assert!(!fix.contains(unsafe_word), "{fix}");
    }
    let out = Command::new("sh")
        .args(["-c", fix])
        .current_dir(r.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{fix}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The bead files and the journal, byte for byte.
fn state(r: &Repo) -> (Vec<(String, Vec<u8>)>, String) {
    (r.beads_bytes(), r.journal())
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A registered worktree on a new `branch` at `.splice/worktrees/<id>` with a commit, an uncommitted
/// change to a tracked file, an untracked file and an ignored one.
fn worktree_with_work(r: &Repo, id: &str, branch: &str) {
    let wt = r.worktree(id);
    r.git(&["worktree", "add", "-q", "-b", branch, wt.to_str().unwrap()]);
    std::fs::write(wt.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(wt.join("done.txt"), "committed\n").unwrap();
    git_in(&wt, &["add", "-A"]);
    git_in(&wt, &["commit", "-q", "-m", "done"]);
    std::fs::write(wt.join("done.txt"), "committed\nand changed after\n").unwrap();
    std::fs::write(wt.join("notes.md"), "uncommitted notes\n").unwrap();
    std::fs::write(wt.join("run.log"), "an ignored file\n").unwrap();
}

/// The work [`worktree_with_work`] left is all in `dir`.
fn work_is_in(dir: &Path) {
    assert_eq!(read(&dir.join("notes.md")), "uncommitted notes\n");
    assert_eq!(
        read(&dir.join("done.txt")),
        "committed\nand changed after\n"
    );
    assert_eq!(read(&dir.join("run.log")), "an ignored file\n");
}

fn registered(r: &Repo, id: &str) -> bool {
    r.git(&["worktree", "list", "--porcelain"])
        .lines()
        .any(|l| l.ends_with(&format!("/.splice/worktrees/{id}")))
}

#[test]
fn the_fix_for_a_worktree_no_bead_owns_keeps_its_work_and_the_state() {
    let r = Repo::new();
    r.task("Unrelated", &[]);
    worktree_with_work(&r, "sp-orph", "splice/sp-orph");
    // A dispatch's git quarantine, which may hold commits not yet imported.
    let quarantine = r.state().join("worktrees/.dispatch-git/sp-orph");
    std::fs::create_dir_all(quarantine.join("objects")).unwrap();
    std::fs::write(quarantine.join("HEAD"), "ref: refs/heads/splice/sp-orph\n").unwrap();
    let before = state(&r);

    let fix = the_fix(&r, "sp-orph");
    follow(&r, &fix);

    assert_eq!(state(&r), before, "{fix}");
    let aside = r.state().join("worktrees/.set-aside");
    work_is_in(&aside.join("sp-orph"));
    assert_eq!(
        read(&aside.join("sp-orph.dispatch-git/HEAD")),
        "ref: refs/heads/splice/sp-orph\n"
    );
    assert!(!registered(&r, "sp-orph"), "git forgot the worktree");
    // Its commit is still on its branch.
    assert_eq!(
        r.git(&["log", "-1", "--format=%s", "splice/sp-orph"]),
        "done"
    );
    assert!(
        worktree_findings(&r).iter().all(|f| f["severity"] == "ok"),
        "{:#?}",
        worktree_findings(&r)
    );
    // The set-aside directory is no uncommitted change of the main checkout: git ignores it.
    r.git(&[
        "check-ignore",
        "-q",
        ".splice/worktrees/.set-aside/sp-orph/notes.md",
    ]);

    // A second orphan of the same name is set aside beside the first, which stays.
    worktree_with_work(&r, "sp-orph", "again");
    let fix = the_fix(&r, "sp-orph");
    follow(&r, &fix);
    work_is_in(&aside.join("sp-orph-2"));
    work_is_in(&aside.join("sp-orph"));
    assert_eq!(state(&r), before, "{fix}");
}

#[test]
fn the_fix_for_a_closed_nodes_worktree_no_run_removes_keeps_its_work_and_the_state() {
    let r = Repo::new();
    let id = r.task("Closed mid-route", &[]);
    worktree_with_work(&r, &id, &format!("splice/{id}"));
    r.ok(&["close", &id, "--reason", "done by hand"]);
    let before = state(&r);

    let fix = the_fix(&r, &id);
    follow(&r, &fix);

    assert_eq!(state(&r), before, "{fix}");
    work_is_in(&r.state().join("worktrees/.set-aside").join(&id));
    assert!(!registered(&r, &id));
    assert!(
        worktree_findings(&r).iter().all(|f| f["severity"] == "ok"),
        "{:#?}",
        worktree_findings(&r)
    );
}

#[test]
fn the_fix_for_a_directory_that_is_no_worktree_keeps_its_files() {
    let r = Repo::new();
    r.task("Unrelated", &[]);
    let dir = r.worktree("sp-plain");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/kept.rs"), "fn kept() {}\n").unwrap();
    let before = state(&r);

    let fix = the_fix(&r, "sp-plain");
    follow(&r, &fix);

    assert_eq!(state(&r), before, "{fix}");
    assert_eq!(
        read(&r.state().join("worktrees/.set-aside/sp-plain/src/kept.rs")),
        "fn kept() {}\n"
    );
    assert!(worktree_findings(&r).iter().all(|f| f["severity"] == "ok"));
}

/// The commands a fix names between backticks, in order.
fn commands(fix: &str) -> Vec<&str> {
    fix.split('`').skip(1).step_by(2).collect()
}

#[test]
fn the_fix_for_an_unreadable_bead_file_keeps_a_copy_before_restoring_it() {
    let r = Repo::new();
    let id = r.task("Committed", &[]);
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "state"]);
    let file = r.state().join("beads").join(format!("{id}.json"));
    let committed = std::fs::read(&file).unwrap();
    std::fs::write(&file, "{ an edit by hand, torn").unwrap();
    let journal = r.journal();
    let out = r.run(&["doctor", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "beads" && f["severity"] == "needs-person")
        .unwrap_or_else(|| panic!("{report:#}"))
        .clone();
    let fix = finding["fix"].as_str().unwrap();
    let [keep, restore] = commands(fix)[..] else {
        panic!("{fix}");
    };
    follow(&r, keep);
    follow(&r, restore);
    assert_eq!(std::fs::read(&file).unwrap(), committed, "{fix}");
    assert_eq!(r.journal(), journal);
    let copy = r.state().join(format!("worktrees/.set-aside/{id}.json"));
    assert_eq!(read(&copy), "{ an edit by hand, torn", "the edit is kept");
    let out = r.run(&["doctor", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let beads: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "beads")
        .collect();
    assert!(beads.iter().all(|f| f["severity"] == "ok"), "{beads:#?}");
}

#[test]
fn a_bead_file_name_is_one_word_of_the_printed_commands() {
    // A file name is anyone's: pasted, a `;` or `$(…)` in it must stay part of the name.
    let r = Repo::new();
    r.task("Any", &[]);
    let name = "x;touch pwned $(touch pwned2).json";
    std::fs::write(r.state().join("beads").join(name), "{ torn").unwrap();
    let out = r.run(&["doctor", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fix = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "beads" && f["severity"] == "needs-person")
        .unwrap_or_else(|| panic!("{report:#}"))["fix"]
        .as_str()
        .unwrap()
        .to_string();
    follow(&r, commands(&fix)[0]);
    assert!(!r.path().join("pwned").exists() && !r.path().join("pwned2").exists());
    assert_eq!(
        read(&r.state().join("worktrees/.set-aside").join(name)),
        "{ torn"
    );
}

#[test]
fn a_target_named_in_a_printed_command_is_one_word() {
    // git allows `;`, `$` and `(` in a branch's name; a bead file names any target.
    let r = Repo::new();
    let id = r.task("Hand-edited", &["--delivery", "direct"]);
    let path = r.state().join("beads").join(format!("{id}.json"));
    let mut bead: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    bead["pipeline"]["target"] = Value::from("gone;touch${IFS}pwned");
    std::fs::write(&path, serde_json::to_vec_pretty(&bead).unwrap()).unwrap();
    let out = r.run(&["doctor", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fix = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "targets" && f["severity"] == "needs-person")
        .unwrap_or_else(|| panic!("{report:#}"))["fix"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, create) = fix
        .split_once("or create it: ")
        .unwrap_or_else(|| panic!("{fix}"));
    follow(&r, &create.replace("COMMIT", "HEAD"));
    assert!(!r.path().join("pwned").exists(), "{fix}");
    r.git(&["rev-parse", "--verify", "refs/heads/gone;touch${IFS}pwned"]);
    let out = r.run(&["doctor", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let targets: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "targets")
        .collect();
    assert!(
        targets.iter().all(|f| f["severity"] == "ok"),
        "{targets:#?}"
    );
}
