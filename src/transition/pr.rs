//! Pull-request delivery is opened by splice, never by an agent (issue 33): checking a node's
//! deliver step under PR delivery, once its review recorded the reviewed commit and before any
//! pull request is known for the step, pushes that commit to the remote as `splice/<id>` and
//! opens a pull request against the target, in the check's slow phase before the writer's lock,
//! like a direct delivery's landing (`land.rs`). The agents' sandbox holds no forge credential
//! (no `SSH_AUTH_SOCK`, no `~/.config/gh`, no token: `docs/security.md`); the runner, or the
//! person running `splice transition deliver`, pushes with their own.
//!
//! 1. **What is pushed:** the reviewed commit itself (`git push <remote>
//!    <reviewed>:refs/heads/splice/<id>`), never the branch's tip: only reviewed content reaches
//!    the pull request. A push the remote rejects (the branch there holds other commits)
//!    escalates with git's words; splice never force-pushes.
//! 2. **The remote:** the target's upstream remote (`branch.<target>.remote`), else `origin`,
//!    else the repository's only remote; none escalates.
//! 3. **Who opens it:** `[delivery] pr_command` when set (any forge), run in the repository with
//!    `SPLICE_PR_REMOTE`, `SPLICE_PR_HEAD` (`splice/<id>`), `SPLICE_PR_BASE` (the target),
//!    `SPLICE_PR_SHA`, `SPLICE_PR_TITLE` and `SPLICE_PR_BODY_FILE` in its environment; it must
//!    print the pull request's URL as the last line of its output, and print the existing one's
//!    when it is asked again. Else, for a remote on a GitHub host with `gh` on `PATH`, `gh pr
//!    create --repo HOST/OWNER/REPO --head splice/<id> --base <target> --title=… --body-file=…`
//!    (an existing pull request for the branch is read from gh's refusal). Else it escalates,
//!    naming both ways (or `method = "direct"`).
//!
//! A container's integrate step, under PR delivery, delivers its own planning and reconciliation
//! documents the same way once its floors pass ([`deliver_documents`]): its branch's tip, in a
//! pull request of its own, proven by the `delivered` proof before the step passes.
//!
//! The answer is one more of the check's, kind `pr`: a pass names the pushed commit and the
//! pull request, whose URL the check then keeps on the step's proposal, where the `delivered`
//! floor asks the forge about it (an open pull request rests the node `awaiting-merge`) and no
//! later check opens another; a failure escalates (a person must give the remote, the forge or
//! its login) and the floors are not run.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::floors::{self, OUTPUT_CAP, Outcome, github, run_command, tail};
use crate::model::bead::{DeliveryMethod, Verdict};
use crate::model::{Bead, Config, Manifest, Role, Step};
use crate::policy::Lineage;
use crate::store::Store;
use crate::worktree::branch_name;

/// The check's answer kind for opening a pull request.
pub const KIND: &str = "pr";

/// How long a push or the forge may take.
const TIMEOUT: Duration = Duration::from_secs(300);

/// The longest URL kept.
const MAX_URL: usize = 2048;

/// The target checking `step` of `bead` opens a pull request against, if it does: a deliver
/// step under PR delivery with a reviewed commit and a target, and no pull request known yet
/// (`known`: the step's proposal, the node or the caller names one).
pub fn wanted(
    manifest: &Manifest,
    step: &Step,
    bead: &Bead,
    lineage: &Lineage,
    known: bool,
) -> Option<String> {
    if known
        || !manifest.is(&step.name, Role::Deliver)
        || lineage.delivery(bead) != DeliveryMethod::Pr
        || bead.pipeline.reviewed_sha.is_none()
    {
        return None;
    }
    lineage.target(bead).map(str::to_string)
}

/// Push `bead`'s reviewed commit and open its pull request against `target`: the URL and the
/// check's answer saying so, or the answer that escalates.
pub fn open(
    store: &Store,
    config: &Config,
    bead: &Bead,
    target: &str,
) -> Result<(String, Outcome), Box<Outcome>> {
    let sha = bead.pipeline.reviewed_sha.as_deref().unwrap_or_default();
    open_for(store, config, bead, target, (sha, &bead.title))
}

/// Push `sha` as `bead`'s branch and open a pull request titled `title` against `target`.
fn open_for(
    store: &Store,
    config: &Config,
    bead: &Bead,
    target: &str,
    (sha, title): (&str, &str),
) -> Result<(String, Outcome), Box<Outcome>> {
    let repo = store.repo();
    let head = branch_name(&bead.id);
    let mut evidence = json!({ "target": target, "head": head, "sha": sha });
    let fail = |reason: String, evidence: &serde_json::Value| {
        Box::new(Outcome::named(
            KIND,
            Verdict::Escalate,
            reason,
            evidence.clone(),
        ))
    };
    // The bead file is hostile: only a full hex name of a commit here goes on git's command line.
    if !floors::is_full_sha(sha)
        || git2::Repository::open(repo)
            .ok()
            .and_then(|g| Some(g.find_commit(git2::Oid::from_str(sha).ok()?).is_ok()))
            != Some(true)
    {
        return Err(fail(
            format!("the commit to push, {sha:?}, is not a commit of this repository"),
            &evidence,
        ));
    }
    let remote = remote_for(repo, target).map_err(|why| fail(why, &evidence))?;
    evidence["remote"] = json!(remote.name);
    push(repo, &remote.name, sha, &head).map_err(|why| fail(why, &evidence))?;
    let body = body(bead, sha);
    let body_file = write_body(&body).map_err(|e| {
        fail(
            format!("cannot write the pull request's body: {e}"),
            &evidence,
        )
    })?;
    let pr = Pr {
        remote: &remote,
        head: &head,
        base: target,
        sha,
        title,
        body_file: &body_file,
    };
    let opened = open_with(repo, config, &pr, &mut evidence);
    let _ = std::fs::remove_file(&body_file);
    let url = opened.map_err(|why| fail(why, &evidence))?;
    evidence["pr_url"] = json!(url);
    let reason = format!(
        "pushed the reviewed commit {} to {} as {head} and opened {url} against {target}",
        short(sha),
        remote.name
    );
    Ok((url, Outcome::named(KIND, Verdict::Pass, reason, evidence)))
}

/// The target a container's integrate step delivers its own documents to by pull request, if
/// it does: an integrate step under PR delivery with a target.
pub fn wanted_documents(
    manifest: &Manifest,
    step: &Step,
    bead: &Bead,
    lineage: &Lineage,
) -> Option<String> {
    if !manifest.is(&step.name, Role::Integrate) || lineage.delivery(bead) != DeliveryMethod::Pr {
        return None;
    }
    lineage.target(bead).map(str::to_string)
}

/// A container's planning and reconciliation documents (its branch `splice/<id>`: the PRP, the
/// reconciliation file) reach `target` by a pull request of their own once its integrate
/// floors pass, proven like any delivery: nothing to do when the branch is gone or on the
/// target; else the pull request `known` (the step's, or the one a person gave) is asked about,
/// or one is opened for the branch's tip. The answers, and the URL when this check opened it.
pub fn deliver_documents(
    ctx: &floors::Ctx,
    target: &str,
    known: Option<&str>,
) -> (Vec<Outcome>, Option<String>) {
    let bead = ctx.bead;
    let head = branch_name(&bead.id);
    let evidence = json!({ "target": target, "head": head });
    let escalate =
        |reason: String| Outcome::named(KIND, Verdict::Escalate, reason, evidence.clone());
    let tip = match tip_off_target(ctx.store.repo(), &head, target) {
        Ok(Some(tip)) => tip,
        Ok(None) => return (Vec::new(), None),
        Err(e) => return (vec![escalate(e)], None),
    };
    let prove = |url: &str| {
        let evidence = json!({ "target": target, "head": head, "sha": tip, "pr_url": url });
        let proven = floors::delivered::prove(ctx, target, &tip, Some(url), evidence);
        match proven.verdict {
            Verdict::Pass => proven.with_effect(floors::Effect::SetPrUrl(url.to_string())),
            _ => proven,
        }
    };
    if let Some(url) = known {
        return (vec![prove(url)], None);
    }
    let title = format!("{} (planning and reconciliation)", bead.title);
    match open_for(ctx.store, ctx.config, bead, target, (&tip, &title)) {
        Ok((url, opened)) => {
            let proven = prove(&url);
            (vec![opened, proven], Some(url))
        }
        Err(escalated) => (vec![*escalated], None),
    }
}

/// The tip of `head` when it holds commits `target` does not; `None` when there is no such
/// branch or it is on the target already.
fn tip_off_target(repo: &Path, head: &str, target: &str) -> Result<Option<String>, String> {
    let git =
        git2::Repository::open(repo).map_err(|e| format!("cannot open the repository: {e}"))?;
    let Ok(branch) = git.find_branch(head, git2::BranchType::Local) else {
        return Ok(None);
    };
    let Some(tip) = branch.get().target() else {
        return Ok(None);
    };
    let on = crate::worktree::resolve(&git, target)
        .and_then(|t| crate::worktree::is_on(&git, tip, t))
        .map_err(|e| e.to_string())?;
    Ok((!on).then(|| tip.to_string()))
}

/// A git remote: its name and configured URL.
struct Remote {
    name: String,
    url: String,
}

/// What a pull request is opened with.
struct Pr<'a> {
    remote: &'a Remote,
    head: &'a str,
    base: &'a str,
    sha: &'a str,
    title: &'a str,
    body_file: &'a Path,
}

/// The remote a pull request against `target` goes to (see the module doc).
fn remote_for(repo: &Path, target: &str) -> Result<Remote, String> {
    let git =
        git2::Repository::open(repo).map_err(|e| format!("cannot open the repository: {e}"))?;
    let names: Vec<String> = git
        .remotes()
        .map(|r| r.iter().flatten().map(str::to_string).collect())
        .unwrap_or_default();
    let upstream = git
        .config()
        .ok()
        .and_then(|c| c.get_string(&format!("branch.{target}.remote")).ok())
        .filter(|r| names.contains(r));
    let name = upstream
        .or_else(|| names.iter().find(|n| *n == "origin").cloned())
        .or_else(|| (names.len() == 1).then(|| names[0].clone()))
        .ok_or_else(|| {
            let which = if names.is_empty() {
                "the repository has no git remote".to_string()
            } else {
                format!(
                    "{target} has no upstream remote and none of the remotes ({}) is `origin`",
                    names.join(", ")
                )
            };
            format!(
                "PR delivery pushes the reviewed commit to a remote, and {which}: add one \
                 (`git remote add origin URL`), set {target}'s upstream (`git branch \
                 --set-upstream-to`), or deliver directly (`[delivery] method = \"direct\"`)"
            )
        })?;
    // As configured: git2's remote URL has `url.<base>.insteadOf` applied, and the forge is
    // named by the URL a person wrote.
    let url = git
        .config()
        .ok()
        .and_then(|c| c.get_string(&format!("remote.{name}.url")).ok())
        .unwrap_or_default();
    Ok(Remote { name, url })
}

/// `git push <remote> <sha>:refs/heads/<head>`, with the caller's own git and credentials, and
/// no prompt.
fn push(repo: &Path, remote: &str, sha: &str, head: &str) -> Result<(), String> {
    let argv: Vec<String> = [
        "git",
        "push",
        "--quiet",
        remote,
        &format!("{sha}:refs/heads/{head}"),
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    let env = [("GIT_TERMINAL_PROMPT", "0")];
    let ran = run_command(&argv, repo, &env, TIMEOUT, OUTPUT_CAP)
        .map_err(|e| format!("cannot run `git push`: {e}"))?;
    if ran.code() == Some(0) {
        return Ok(());
    }
    Err(format!(
        "`git push {remote} {}:refs/heads/{head}` failed ({}): {}; splice never force-pushes: \
         if {head} on {remote} holds other commits, look at them and delete or rename that \
         branch there, then run the delivery again",
        short(sha),
        exit_words(ran.code()),
        said(&ran.combined())
    ))
}

/// Open the pull request with `[delivery] pr_command`, else `gh` for a GitHub remote.
fn open_with(
    repo: &Path,
    config: &Config,
    pr: &Pr,
    evidence: &mut serde_json::Value,
) -> Result<String, String> {
    if let Some(argv) = config.delivery.pr_command.clone().filter(|a| !a.is_empty()) {
        let body = pr.body_file.to_string_lossy();
        let env = [
            ("SPLICE_PR_REMOTE", pr.remote.name.as_str()),
            ("SPLICE_PR_HEAD", pr.head),
            ("SPLICE_PR_BASE", pr.base),
            ("SPLICE_PR_SHA", pr.sha),
            ("SPLICE_PR_TITLE", pr.title),
            ("SPLICE_PR_BODY_FILE", &body),
        ];
        evidence["pr_command"] = json!(argv);
        let ran = run_command(&argv, repo, &env, TIMEOUT, OUTPUT_CAP)
            .map_err(|e| format!("cannot run the pull-request command `{}`: {e}", argv[0]))?;
        evidence["pr_output"] = json!(tail(&ran.combined(), 2000));
        return match (ran.code(), last_url(&ran.stdout)) {
            (Some(0), Some(url)) => Ok(url),
            (code, _) => Err(format!(
                "`[delivery] pr_command` gave no pull request ({}; it must print the pull \
                 request's URL as its last line): {}",
                exit_words(code),
                said(&ran.combined())
            )),
        };
    }
    let repo_name = github::repo_of_remote(&pr.remote.url);
    let gh = github::find_gh(std::env::var_os("PATH").as_deref());
    let (Some(name), Some(gh)) = (&repo_name, gh) else {
        let why = match repo_name {
            Some(_) => "its remote is on GitHub but the GitHub CLI `gh` is not on PATH",
            None => "its remote is not on a GitHub host splice knows",
        };
        return Err(format!(
            "cannot open a pull request for {} on {}: {why}; set `[delivery] pr_command` (a \
             command that opens it and prints its URL), or deliver directly (`[delivery] \
             method = \"direct\"`)",
            pr.head, pr.remote.name
        ));
    };
    let argv = vec![
        gh.to_string_lossy().into_owned(),
        "pr".into(),
        "create".into(),
        "--repo".into(),
        name.clone(),
        "--head".into(),
        pr.head.into(),
        "--base".into(),
        pr.base.into(),
        // One word each: a title an agent wrote that starts with `-` stays the title.
        format!("--title={}", pr.title),
        format!("--body-file={}", pr.body_file.to_string_lossy()),
    ];
    evidence["forge"] = json!("gh");
    let env = [("GH_PROMPT_DISABLED", "1"), ("NO_COLOR", "1")];
    let ran = run_command(&argv, repo, &env, TIMEOUT, OUTPUT_CAP)
        .map_err(|e| format!("cannot run `gh pr create`: {e}"))?;
    evidence["pr_output"] = json!(tail(&ran.combined(), 2000));
    match ran.code() {
        Some(0) => last_url(&ran.stdout),
        // gh refuses a second pull request for the branch, naming the first.
        _ if ran.stderr.contains("already exists") => last_url(&ran.stderr),
        _ => None,
    }
    .ok_or_else(|| {
        format!(
            "`gh pr create --repo {name} --head {} --base {}` opened no pull request ({}): {}",
            pr.head,
            pr.base,
            exit_words(ran.code()),
            said(&ran.combined())
        )
    })
}

/// The last line of `text` that is a URL (`scheme://…`, printable, no space).
fn last_url(text: &str) -> Option<String> {
    text.lines().rev().map(str::trim).find_map(|line| {
        let (scheme, rest) = line.split_once("://")?;
        let ok = !scheme.is_empty()
            && scheme.bytes().all(|b| b.is_ascii_alphabetic())
            && !rest.is_empty()
            && line.len() <= MAX_URL
            && line.chars().all(|c| c.is_ascii_graphic());
        ok.then(|| line.to_string())
    })
}

/// Write `body` to a new file of the temp directory (made new, so no file or link already there
/// is written through).
fn write_body(body: &str) -> std::io::Result<std::path::PathBuf> {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let path = std::env::temp_dir().join(format!(
        "splice-pr-{}-{nanos}-{}.md",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    file.write_all(body.as_bytes())?;
    Ok(path)
}

/// The pull request's body: what the node is, the reviewed commit, and where the review is.
fn body(bead: &Bead, sha: &str) -> String {
    let mut out = String::new();
    if !bead.description.trim().is_empty() {
        out.push_str(bead.description.trim());
        out.push_str("\n\n");
    }
    let review = bead
        .pipeline
        .reviews
        .iter()
        .rev()
        .find(|r| r.reviewed_sha.as_deref() == Some(sha));
    out.push_str(&format!(
        "---\nsplice task `{}`: the reviewed commit `{sha}`",
        bead.id
    ));
    if let Some(r) = review {
        out.push_str(&format!(
            ", its review kept as `.splice/reviews/{}/{}.md`",
            bead.id, r.sha256
        ));
    }
    out.push_str(". Opened by splice; merge it on the forge, and splice records the delivery.\n");
    out
}

fn exit_words(code: Option<i32>) -> String {
    code.map_or_else(|| "killed".to_string(), |c| format!("exit {c}"))
}

fn said(text: &str) -> String {
    match floors::tail(text.trim(), 500) {
        t if t.is_empty() => "it printed nothing".to_string(),
        t => crate::model::printable::printable_message(&t),
    }
}

fn short(sha: &str) -> &str {
    sha.get(..10).unwrap_or(sha)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_url_line_is_the_pull_request() {
        let out = "Creating pull request\nhttps://github.com/a/b/pull/3\n";
        assert_eq!(
            last_url(out).as_deref(),
            Some("https://github.com/a/b/pull/3")
        );
        assert_eq!(
            last_url(
                "a pull request for branch \"x\" into \"main\" already exists:\nhttps://h/p/1\n"
            )
            .as_deref(),
            Some("https://h/p/1")
        );
        for none in [
            "",
            "done\n",
            "://x\n",
            "https://a b\n",
            "see https://x/1 now\n",
        ] {
            assert_eq!(last_url(none), None, "{none:?}");
        }
    }
}
