//! The delivery proof's built-in GitHub adapter (issue 15, §4): with `gh` on `PATH` and no
//! `[delivery] forge_command`, a pull request on github.com is asked about with `gh pr view URL
//! --json state,mergeCommit,mergedAt`. A fake `gh` (a script in a directory put first on `PATH`)
//! answers merged (a squash merge: the reviewed commit is not on the target, GitHub's commit is),
//! open, closed without merging, and an error.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{Repo, Reviewed, git_in};
use serde_json::Value;

const PR: &str = "https://github.com/acme/calc/pull/7";

/// A lone task (pull-request delivery to `main`) at its deliver step, its reviewed commit on
/// `splice/<id>` and not on `main`. Returns the id and the reviewed commit.
fn reviewed_task(r: &Repo) -> (String, String) {
    r.reviewed_task(&Reviewed {
        title: "Add",
        delivery: "pr",
        target: "main",
        files: &[("add.txt", "a + b\n")],
    })
}

/// GitHub squash-merges the branch: one new commit on `main`, the reviewed commit not under it.
fn squash_merge(r: &Repo, id: &str) -> String {
    git_in(
        r.path(),
        &["merge", "-q", "--squash", &format!("splice/{id}")],
    );
    git_in(r.path(), &["commit", "-q", "-m", "Add (#7)"]);
    git_in(r.path(), &["rev-parse", "HEAD"])
}

/// A directory holding a fake `gh` running `body` once it checks it was asked the right
/// question (any other arguments: exit 9).
fn fake_gh(r: &Repo, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = r.path().join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let gh = bin.join("gh");
    std::fs::write(
        &gh,
        format!(
            "#!/bin/sh\n\
             [ \"$*\" = \"pr view {PR} --json state,mergeCommit,mergedAt\" ] || {{ echo \"unexpected: $*\" >&2; exit 9; }}\n\
             [ \"$GH_PROMPT_DISABLED\" = 1 ] || {{ echo 'prompts are on' >&2; exit 8; }}\n\
             {body}\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// `PATH` with `first` in front, or, for `None`, without any directory holding a `gh`.
fn path_with(first: Option<&Path>) -> std::ffi::OsString {
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&inherited)
        .filter(|d| !d.join("gh").exists())
        .collect();
    if let Some(first) = first {
        dirs.insert(0, first.to_path_buf());
    }
    std::env::join_paths(dirs).unwrap()
}

/// `splice transition deliver ID --pr-url PR` with `gh` from `bin` (or none).
fn deliver(r: &Repo, id: &str, bin: Option<&Path>) -> Output {
    let out = r
        .cmd(&["transition", "deliver", id, "--pr-url", PR])
        .env("PATH", path_with(bin))
        .output()
        .unwrap();
    common::no_panic(&out);
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn last_check(r: &Repo, id: &str) -> Value {
    r.bead(id)["pipeline"]["last_check"].clone()
}

/// The `delivered` floor's evidence in the recorded check.
fn delivered_evidence(r: &Repo, id: &str) -> Value {
    let check = last_check(r, id);
    check["evidence"]
        .as_array()
        .and_then(|floors| floors.iter().find(|f| f["kind"] == "delivered"))
        .map(|f| f["evidence"].clone())
        .unwrap_or_else(|| panic!("no delivered floor in {check:#}"))
}

#[test]
fn a_squash_merged_pr_gh_confirms_proves_delivery() {
    let r = Repo::new();
    let (id, reviewed) = reviewed_task(&r);
    let squash = squash_merge(&r, &id);
    let on_main = common::git()
        .args(["merge-base", "--is-ancestor", &reviewed, "main"])
        .current_dir(r.path())
        .status()
        .unwrap();
    assert!(
        !on_main.success(),
        "a squash merge leaves the reviewed commit off main"
    );
    let answer = format!(
        r#"{{"mergeCommit":{{"oid":"{squash}"}},"mergedAt":"2026-01-01T00:00:00Z","state":"MERGED"}}"#
    );
    let bin = fake_gh(&r, &format!("echo '{answer}'"));
    let out = deliver(&r, &id, Some(&bin));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{b:#}");
    assert_eq!(b["pipeline"]["pr_url"], PR);
    let floor = &delivered_evidence(&r, &id);
    assert_eq!(floor["proof"], "forge", "{floor:#}");
    assert_eq!(floor["forge"], "gh");
    assert_eq!(floor["merge_commit"], squash.as_str());
}

#[test]
fn an_open_pr_is_awaiting_merge() {
    let r = Repo::new();
    let (id, _) = reviewed_task(&r);
    let bin = fake_gh(
        &r,
        r#"echo '{"mergeCommit":null,"mergedAt":null,"state":"OPEN"}'"#,
    );
    let out = deliver(&r, &id, Some(&bin));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("awaiting merge"),
        "{}",
        text(&out.stderr)
    );
    let check = last_check(&r, &id);
    assert_eq!(check["verdict"], "refuse");
    assert_eq!(check["awaiting_merge"], true);
    assert!(r.bead(&id)["pipeline"]["pr_url"].is_null());
}

#[test]
fn a_pr_closed_without_merging_escalates_to_a_person() {
    let r = Repo::new();
    let (id, _) = reviewed_task(&r);
    let bin = fake_gh(
        &r,
        r#"echo '{"mergeCommit":null,"mergedAt":null,"state":"CLOSED"}'"#,
    );
    let out = deliver(&r, &id, Some(&bin));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("escalated") && err.contains("closed without merging"),
        "{err}"
    );
    let check = last_check(&r, &id);
    assert_eq!(check["verdict"], "escalate");
    assert_ne!(check["awaiting_merge"], true);
    assert_ne!(r.bead(&id)["status"], "closed");
}

#[test]
fn a_failing_gh_escalates_naming_the_command_and_its_stderr() {
    let r = Repo::new();
    let (id, _) = reviewed_task(&r);
    let bin = fake_gh(
        &r,
        "echo 'HTTP 401: Bad credentials (https://api.github.com/graphql)' >&2; exit 1",
    );
    let out = deliver(&r, &id, Some(&bin));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("escalated"), "{err}");
    assert!(
        err.contains(&format!(
            "gh pr view {PR} --json state,mergeCommit,mergedAt"
        )),
        "the command is named: {err}"
    );
    assert!(
        err.contains("exit 1") && err.contains("HTTP 401: Bad credentials"),
        "{err}"
    );
    assert_eq!(last_check(&r, &id)["verdict"], "escalate");
}

#[test]
fn an_answer_gh_does_not_give_escalates() {
    let r = Repo::new();
    let (id, _) = reviewed_task(&r);
    let bin = fake_gh(&r, "echo 'Welcome to GitHub CLI!'");
    let out = deliver(&r, &id, Some(&bin));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("gave no answer") && err.contains("Welcome"),
        "{err}"
    );
}

#[test]
fn without_gh_on_path_the_floor_says_how_to_confirm_the_merge() {
    let r = Repo::new();
    let (id, _) = reviewed_task(&r);
    squash_merge(&r, &id);
    let out = deliver(&r, &id, None);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("escalated") && err.contains("forge_command") && err.contains("`gh`"),
        "{err}"
    );
}

#[test]
fn a_configured_forge_command_wins_over_gh() {
    let r = Repo::new();
    let (id, _) = reviewed_task(&r);
    let squash = squash_merge(&r, &id);
    // gh would say the PR is open; the configured command is asked instead.
    let bin = fake_gh(&r, r#"echo '{"state":"OPEN"}'"#);
    r.write(
        ".splice/forge.sh",
        &format!("echo '{{\"merged\": true, \"merge_commit\": \"{squash}\"}}'\n"),
    );
    r.write(
        ".splice/config.toml",
        "[delivery]\nforge_command = [\"sh\", \".splice/forge.sh\"]\n",
    );
    let out = deliver(&r, &id, Some(&bin));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(r.bead(&id)["status"], "closed");
    let floor = &delivered_evidence(&r, &id);
    assert!(floor.get("forge").is_none(), "{floor:#}");
}
