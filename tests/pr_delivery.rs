//! Pull-request delivery is opened by splice, never by an agent (issue 33, `transition::pr`):
//! checking a reviewed node's deliver step pushes the reviewed commit (not the branch's tip) to
//! the remote as `splice/<id>` and opens the pull request with `[delivery] pr_command` or, for a
//! GitHub remote, a `gh` on `PATH`, then waits for its merge. The remote is a bare repository in
//! the test's temp directory; the forge is a script the test writes.

mod common;

use std::path::{Path, PathBuf};

use common::{Repo, Reviewed, git_in};
use serde_json::Value;

const PR: &str = "https://forge.example/acme/calc/pull/7";

/// A bare repository beside `r`'s, holding `main`, as `r`'s remote `name`.
fn remote(r: &Repo, name: &str) -> PathBuf {
    let bare = r.path().join(format!("{name}.git"));
    git_in(
        r.path(),
        &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
    );
    r.git(&["remote", "add", name, bare.to_str().unwrap()]);
    r.git(&["push", "-q", name, "main"]);
    bare
}

/// What `bare` holds for `splice/<id>`, if anything.
fn pushed(bare: &Path, id: &str) -> Option<String> {
    let out = common::git()
        .args([
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/heads/splice/{id}"),
        ])
        .current_dir(bare)
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A reviewed task delivering by pull request to `main`; one more commit after the reviewed one
/// sits on its branch, which must never be pushed. Returns the id and the reviewed commit.
fn reviewed(r: &Repo) -> (String, String) {
    let (id, sha) = r.reviewed_task(&Reviewed {
        title: "Add",
        delivery: "pr",
        target: "main",
        files: &[("add.txt", "a + b\n")],
    });
    let wt = r.worktree(&id);
    std::fs::write(wt.join("later.txt"), "not reviewed\n").unwrap();
    git_in(&wt, &["add", "later.txt"]);
    git_in(&wt, &["commit", "-q", "-m", "after the review"]);
    (id, sha)
}

/// `[delivery]` with a pull-request command that logs each call to `pr-calls.txt` (and the body
/// to `pr-body.txt`) and prints [`PR`], and a forge that answers what `forge-answer.json` says.
fn forge_config(r: &Repo) {
    std::fs::write(r.path().join("forge-answer.json"), r#"{"merged": false}"#).unwrap();
    let open = "echo \"$SPLICE_PR_REMOTE $SPLICE_PR_HEAD $SPLICE_PR_BASE $SPLICE_PR_SHA \
                $SPLICE_PR_TITLE\" >> pr-calls.txt; cat \"$SPLICE_PR_BODY_FILE\" > pr-body.txt; \
                echo 'opening…' >&2; echo 'Created:'; echo "
        .to_string()
        + PR;
    let ask = format!("[ \"$1\" = \"{PR}\" ] || exit 9; cat forge-answer.json");
    let config = serde_json::json!({
        "pr": ["sh", "-c", open],
        "forge": ["sh", "-c", ask, "forge"],
    });
    r.write(
        ".splice/config.toml",
        &format!(
            "[delivery]\nmethod = \"pr\"\npr_command = {}\nforge_command = {}\n",
            config["pr"], config["forge"]
        ),
    );
}

fn calls(r: &Repo) -> Vec<String> {
    std::fs::read_to_string(r.path().join("pr-calls.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[must_use]
fn deliver(r: &Repo, id: &str) -> std::process::Output {
    r.run(&["transition", "deliver", "--bead", id])
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_check_pushes_the_reviewed_commit_opens_the_pull_request_once_and_waits_for_its_merge() {
    let r = Repo::new();
    let bare = remote(&r, "origin");
    let (id, sha) = reviewed(&r);
    forge_config(&r);

    let out = deliver(&r, &id);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        pushed(&bare, &id).as_deref(),
        Some(sha.as_str()),
        "the reviewed commit is pushed, not the branch's tip"
    );
    assert_eq!(
        calls(&r),
        vec![format!("origin splice/{id} main {sha} Add")],
        "the pull request is opened once, from splice/<id> onto the target"
    );
    let body = std::fs::read_to_string(r.path().join("pr-body.txt")).unwrap();
    assert!(body.contains(&id) && body.contains(&sha), "{body}");
    let b = r.bead(&id);
    let p = &b["pipeline"];
    assert_eq!(p["proposal"]["pr_url"], PR, "{p:#}");
    assert_eq!(p["last_check"]["awaiting_merge"], true, "{p:#}");
    let opened = floor(&b, "pr");
    assert_eq!(opened["verdict"], "pass", "{opened:#}");
    assert!(
        opened["reason"].as_str().unwrap().contains(PR),
        "{opened:#}"
    );

    // Asked again while it is open: the same pull request, none opened anew.
    let out = deliver(&r, &id);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(calls(&r).len(), 1, "{:?}", calls(&r));
    assert_eq!(
        r.bead(&id)["pipeline"]["last_check"]["awaiting_merge"],
        true
    );

    // The forge squash-merges it: the delivery is proven and the node closes.
    git_in(r.path(), &["merge", "-q", "--squash", &sha]);
    git_in(r.path(), &["commit", "-q", "-m", "Add (#7)"]);
    let merged = r.git(&["rev-parse", "HEAD"]);
    std::fs::write(
        r.path().join("forge-answer.json"),
        format!(r#"{{"merged": true, "merge_commit": "{merged}"}}"#),
    )
    .unwrap();
    let out = deliver(&r, &id);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["pr_url"], PR, "{:#}", b["pipeline"]);
    assert_eq!(b["status"], "closed", "{:#}", b["pipeline"]);
    assert_eq!(calls(&r).len(), 1);
}

/// The check's answer of `kind` in the node's last check.
fn floor(bead: &Value, kind: &str) -> Value {
    bead["pipeline"]["last_check"]["evidence"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["kind"] == kind))
        .cloned()
        .unwrap_or_else(|| panic!("no `{kind}` answer: {:#}", bead["pipeline"]["last_check"]))
}

#[test]
fn a_run_opens_the_pull_request_itself_and_dispatches_no_agent_to_push() {
    let r = Repo::unconfined();
    let bare = remote(&r, "origin");
    let (id, sha) = reviewed(&r);
    forge_config(&r);
    let config = std::fs::read_to_string(r.path().join(".splice/config.toml")).unwrap();
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"sh\", \"-c\", \"echo $SPLICE_STEP >> $HOME/agent-steps.txt\"]\n\n{config}"
        ),
    );
    let out = r.run(&["run", "--output", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(pushed(&bare, &id).as_deref(), Some(sha.as_str()));
    assert_eq!(calls(&r).len(), 1);
    let steps = std::fs::read_to_string(r.path().join("agent-steps.txt")).unwrap_or_default();
    assert!(
        !steps.contains("deliver"),
        "an agent was dispatched: {steps}"
    );
    let ran: Value = serde_json::from_slice(&out.stdout).unwrap();
    let node = &ran["nodes"][&id];
    assert_eq!(node["rest"]["kind"], "awaiting-merge", "{ran:#}");
    assert_eq!(node["rest"]["pr_url"], PR, "{ran:#}");
}

#[test]
fn without_a_remote_the_check_escalates_saying_what_to_add_and_pushes_nothing() {
    let r = Repo::new();
    let (id, _) = reviewed(&r);
    forge_config(&r);
    let out = deliver(&r, &id);
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("git remote add origin"), "{err}");
    assert!(calls(&r).is_empty(), "{:?}", calls(&r));
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["last_check"]["verdict"], "escalate");
    assert!(
        b["pipeline"]["proposal"]["pr_url"].is_null(),
        "{:#}",
        b["pipeline"]
    );
    // Once a remote is there, the delivery goes on.
    let bare = remote(&r, "origin");
    let _ = deliver(&r, &id);
    assert!(pushed(&bare, &id).is_some());
    assert_eq!(calls(&r).len(), 1);
}

#[test]
fn a_push_the_remote_rejects_escalates_and_splice_never_forces_it() {
    let r = Repo::new();
    let bare = remote(&r, "origin");
    let (id, _) = reviewed(&r);
    forge_config(&r);
    // Someone else's commit, not under the reviewed one, is on splice/<id> there.
    r.git(&["checkout", "-q", "-b", "other"]);
    r.write("other.txt", "someone else's\n");
    r.git(&["add", "other.txt"]);
    r.git(&["commit", "-q", "-m", "someone else's"]);
    r.git(&["checkout", "-q", "main"]);
    r.git(&[
        "push",
        "-q",
        "origin",
        &format!("other:refs/heads/splice/{id}"),
    ]);
    let before = pushed(&bare, &id);
    let out = deliver(&r, &id);
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("never force-pushes"), "{err}");
    assert_eq!(
        pushed(&bare, &id),
        before,
        "the remote's branch is left as it was"
    );
    assert!(calls(&r).is_empty());
}

/// A `gh` that opens the pull request (`pr create` with exactly the expected arguments, the
/// body file readable) or says it exists (`exists`), and answers `pr view` with `OPEN`.
fn fake_gh(r: &Repo, id: &str, exists: bool) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let url = "https://github.com/acme/calc/pull/7";
    let create = if exists {
        format!(
            "echo 'a pull request for branch \"splice/{id}\" into branch \"main\" already exists:' >&2; echo {url} >&2; exit 1"
        )
    } else {
        format!("echo {url}")
    };
    let bin = r.path().join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        bin.join("gh"),
        format!(
            "#!/bin/sh\n\
             [ \"$GH_PROMPT_DISABLED\" = 1 ] || exit 8\n\
             case \"$1 $2\" in\n\
             'pr create')\n\
               [ \"$3 $4 $5 $6 $7 $8 $9\" = '--repo github.com/acme/calc --head splice/{id} --base main --title=Add' ] || {{ echo \"unexpected: $*\" >&2; exit 9; }}\n\
               [ -s \"${{10#--body-file=}}\" ] || exit 7\n\
               echo \"$*\" >> gh-calls.txt\n\
               {create} ;;\n\
             'pr view') echo '{{\"state\": \"OPEN\", \"mergeCommit\": null, \"mergedAt\": null}}' ;;\n\
             *) exit 9 ;;\n\
             esac\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("gh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn on_a_github_remote_gh_opens_the_pull_request_or_names_the_one_open() {
    for exists in [false, true] {
        let r = Repo::new();
        let bare = remote(&r, "origin");
        // The remote is GitHub by its URL; git reaches the bare repository in its place.
        r.git(&[
            "remote",
            "set-url",
            "origin",
            "https://github.com/acme/calc.git",
        ]);
        r.git(&[
            "config",
            &format!("url.{}.insteadOf", bare.display()),
            "https://github.com/acme/calc.git",
        ]);
        let (id, sha) = reviewed(&r);
        r.write(".splice/config.toml", "[delivery]\nmethod = \"pr\"\n");
        let bin = fake_gh(&r, &id, exists);
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        let out = r
            .cmd(&["transition", "deliver", "--bead", &id])
            .env("PATH", path)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "exists={exists}: {}",
            stderr(&out)
        );
        assert_eq!(
            pushed(&bare, &id).as_deref(),
            Some(sha.as_str()),
            "exists={exists}"
        );
        let b = r.bead(&id);
        assert_eq!(
            b["pipeline"]["proposal"]["pr_url"], "https://github.com/acme/calc/pull/7",
            "exists={exists}: {:#}",
            b["pipeline"]
        );
        assert_eq!(
            b["pipeline"]["last_check"]["awaiting_merge"], true,
            "exists={exists}"
        );
        let gh_calls = std::fs::read_to_string(r.path().join("gh-calls.txt")).unwrap();
        assert_eq!(gh_calls.lines().count(), 1, "{gh_calls}");
    }
}

#[test]
fn a_remote_no_forge_knows_escalates_naming_pr_command() {
    let r = Repo::new();
    let _ = remote(&r, "origin");
    let (id, _) = reviewed(&r);
    r.write(".splice/config.toml", "[delivery]\nmethod = \"pr\"\n");
    let out = deliver(&r, &id);
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("[delivery] pr_command"), "{err}");
    assert_eq!(r.bead(&id)["pipeline"]["last_check"]["verdict"], "escalate");
}

#[test]
fn at_deep_autonomy_on_a_campaign_branch_the_pull_request_waits_for_its_merge_like_any_other() {
    // Seed 003 let a deep delivery merge its own pull request into a campaign branch; an agent
    // holds no forge credential (issue 33), so splice opens it and a person or the forge merges.
    let r = Repo::new();
    r.git(&["branch", "campaign/x"]);
    let bare = remote(&r, "origin");
    r.git(&["push", "-q", "origin", "campaign/x"]);
    let (id, sha) = r.reviewed_task(&Reviewed {
        title: "Add",
        delivery: "pr",
        target: "campaign/x",
        files: &[("add.txt", "a + b\n")],
    });
    forge_config(&r);
    let config = std::fs::read_to_string(r.path().join(".splice/config.toml")).unwrap();
    r.write(
        ".splice/config.toml",
        &format!("[autonomy]\ndefault = \"deep\"\n\n{config}"),
    );
    let out = deliver(&r, &id);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        calls(&r),
        vec![format!("origin splice/{id} campaign/x {sha} Add")]
    );
    assert_eq!(pushed(&bare, &id).as_deref(), Some(sha.as_str()));
    assert_eq!(
        r.bead(&id)["pipeline"]["last_check"]["awaiting_merge"],
        true
    );
    assert_eq!(
        r.git(&["rev-parse", "campaign/x"]),
        r.git(&["rev-parse", "main"]),
        "nothing merged into the campaign branch"
    );
}

/// `[delivery]` by pull request with a forge on which each pull request is merged as soon as it
/// is opened, and the merge fetched into the local target (a person merging at once):
/// `pr_command` merges head into base with a merge commit (in a scratch worktree, as a forge
/// does on its side), files it under `.forge/<n>` and prints its URL; `forge_command` answers
/// merged, naming that commit.
fn merging_forge(r: &Repo, bare: &Path) {
    let open = format!(
        "mkdir -p .forge; n=$(ls .forge | wc -l); n=$((n + 1)); \
         echo \"$SPLICE_PR_HEAD $SPLICE_PR_BASE\" >> pr-calls.txt; \
         git fetch -q {bare} \"refs/heads/$SPLICE_PR_HEAD:refs/forge/$n\" || exit 3; \
         rm -rf .forge-wt; git worktree add -q --detach .forge-wt \"$SPLICE_PR_BASE\" || exit 4; \
         git -C .forge-wt -c user.name=forge -c user.email=f@example.com merge -q --no-ff \
           -m \"Merge pull request #$n\" \"refs/forge/$n\" >&2 || exit 5; \
         m=$(git -C .forge-wt rev-parse HEAD); git worktree remove --force .forge-wt; \
         git update-ref \"refs/heads/$SPLICE_PR_BASE\" \"$m\"; echo \"$m\" > .forge/$n; \
         echo https://forge.example/acme/calc/pull/$n",
        bare = bare.display()
    );
    let ask = "n=${1##*/}; echo \"{\\\"merged\\\": true, \\\"merge_commit\\\": \\\"$(cat .forge/$n)\\\"}\"";
    let config = serde_json::json!({
        "pr": ["sh", "-c", open],
        "forge": ["sh", "-c", ask, "forge"],
    });
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"{}\", \"sim-agent\"]\nusage = \"file\"\n\n\
             [delivery]\nmethod = \"pr\"\npr_command = {}\nforge_command = {}\n",
            env!("CARGO_BIN_EXE_splice"),
            config["pr"],
            config["forge"]
        ),
    );
}

fn on(r: &Repo, rev: &str, path: &str) -> bool {
    common::git()
        .args(["cat-file", "-e", &format!("{rev}:{path}")])
        .current_dir(r.path())
        .status()
        .unwrap()
        .success()
}

#[test]
fn a_campaigns_planning_documents_reach_its_target_by_a_pull_request_of_their_own() {
    let r = Repo::unconfined();
    r.write("tests/README", "the campaign's tests\n");
    r.write(".gitignore", ".forge/\n.forge-wt/\npr-calls.txt\n");
    r.git(&["add", "tests", ".gitignore"]);
    r.git(&["commit", "-qm", "tests"]);
    r.git(&["branch", "campaign/x"]);
    let bare = remote(&r, "origin");
    r.git(&["push", "-q", "origin", "campaign/x"]);
    let root = r.init(&["--autonomy", "wave", "--target", "campaign/x"]);
    merging_forge(&r, &bare);
    r.passing_suite(&root);
    let prp = format!("docs/prp/{root}.md");
    for _ in 0..30 {
        let env = r.ok(&["run", "--output", "json"]);
        if env["status"] == "done" {
            break;
        }
        let status = r.ok(&["status", "--json"]);
        assert!(r.approve_gates(&status), "stuck: {status:#}");
    }
    let b = r.bead(&root);
    assert_eq!(b["status"], "closed", "{:#}", b["pipeline"]);
    assert!(
        on(&r, "campaign/x", &prp),
        "the PRP never reached campaign/x: {:?}",
        calls(&r)
    );
    let root_pr = format!("splice/{root} campaign/x");
    assert!(
        calls(&r).iter().any(|c| c == &root_pr),
        "no pull request of the campaign's own: {:?}",
        calls(&r)
    );
    assert!(
        b["pipeline"]["pr_url"]
            .as_str()
            .is_some_and(|u| u.starts_with("https://forge.example/")),
        "{:#}",
        b["pipeline"]
    );
}

#[test]
fn a_hostile_reviewed_commit_in_the_bead_file_never_reaches_gits_command_line() {
    let r = Repo::new();
    let bare = remote(&r, "origin");
    let (id, _) = reviewed(&r);
    forge_config(&r);
    // The bead file is committed and may be anyone's: a "commit" that is an option of git push.
    let path = r.path().join(format!(".splice/beads/{id}.json"));
    let mut b: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let marker = r.path().join("pwned");
    b["pipeline"]["reviewed_sha"] =
        Value::String(format!("--receive-pack=touch {}", marker.display()));
    std::fs::write(&path, serde_json::to_vec_pretty(&b).unwrap()).unwrap();
    let out = deliver(&r, &id);
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("is not a commit of this repository"), "{err}");
    assert!(!marker.exists(), "git ran the bead file's command");
    assert_eq!(pushed(&bare, &id), None);
    assert!(calls(&r).is_empty());
}
