//! `delivered`: the reviewed commit has reached the integration target, proven by ancestry (it is
//! the target's tip or an ancestor of it) or by a forge confirming a merged pull request whose
//! merge commit is on the target (squash merges leave the reviewed commit off the target).
//!
//! Which forge is asked about a recorded pull request, in this order:
//!
//! 1. `[delivery] forge_command`, when set, run with the PR URL appended; it prints
//!    `{"merged": bool, "merge_commit": "<sha>"}` (any forge; it wins over the built-in one);
//! 2. else, for a pull request on a GitHub host, the GitHub CLI when `gh` is on `PATH`
//!    (`gh pr view URL --json state,mergeCommit,mergedAt`, [`super::github`]);
//! 3. else nothing can confirm the merge: the floor escalates, naming both ways to give it one
//!    (a person can also deliver by merging so the reviewed commit is on the target).
//!
//! An open PR refuses as "awaiting merge". A PR closed without merging escalates: a person must
//! act; so does a merge commit not on the target here (not fetched yet, or elsewhere), which no
//! agent can fix. A forge that fails or gives no answer escalates, naming the command and what it said.
//! Deep autonomy never delivers to `main`/`master`: that escalates to a person.

use std::time::Duration;

use git2::{Oid, Repository};
use serde_json::{Value, json};

use super::github::{self, PrState};
use super::{Ctx, Effect, Floor, OUTPUT_CAP, Outcome, run_command, tail};
use crate::model::Autonomy;
use crate::model::bead::Verdict;
use crate::model::manifest::{FloorKind, FloorSpec};
use crate::policy::lineage::is_mainline;
use crate::worktree::{is_on, open_repo, resolve};

pub struct Delivered;

const KIND: FloorKind = FloorKind::Delivered;

/// How long the forge may take to answer.
const FORGE_TIMEOUT: Duration = Duration::from_secs(120);

/// What the forge said about a PR.
#[derive(Debug, PartialEq)]
pub struct ForgeAnswer {
    pub merged: bool,
    pub merge_commit: Option<String>,
}

/// Parse the forge command's stdout (one JSON object, possibly after log lines).
pub fn parse_forge(stdout: &str) -> Option<ForgeAnswer> {
    let value: Value = serde_json::from_str(stdout.trim()).ok().or_else(|| {
        stdout.lines().rev().find_map(|l| {
            serde_json::from_str::<Value>(l.trim())
                .ok()
                .filter(Value::is_object)
        })
    })?;
    Some(ForgeAnswer {
        merged: value.get("merged")?.as_bool()?,
        merge_commit: value
            .get("merge_commit")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

impl Floor for Delivered {
    fn check(&self, _spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        let Some(target) = ctx.target().map(str::to_string) else {
            return Outcome::escalate(
                KIND,
                "no integration target: set one with `splice transition set-target`, or `[delivery] target` in config.toml",
                json!({}),
            );
        };
        let (level, source) = ctx.lineage.autonomy(ctx.bead);
        if level == Autonomy::Deep && is_mainline(&target) {
            return Outcome::escalate(
                KIND,
                format!(
                    "deep autonomy (from {}) may not deliver to `{target}`: the merge to mainline is a person's job",
                    source.label()
                ),
                json!({ "target": target, "autonomy": level.as_str() }),
            );
        }
        let Some(reviewed) = ctx.bead.pipeline.reviewed_sha.clone() else {
            return Outcome::refuse(
                KIND,
                "no reviewed commit is recorded: the review step must pass first",
                json!({ "target": target }),
            );
        };
        let pr_url = ctx
            .proposal
            .and_then(|p| p.pr_url.clone())
            .or_else(|| ctx.bead.pipeline.pr_url.as_deref().map(str::to_string));
        let evidence = json!({ "target": target, "reviewed_sha": reviewed, "pr_url": pr_url });
        let outcome = prove(ctx, &target, &reviewed, pr_url.as_deref(), evidence);
        // A proven delivery records the PR it went through.
        match pr_url {
            Some(url) if outcome.verdict == Verdict::Pass => {
                outcome.with_effect(Effect::SetPrUrl(url))
            }
            _ => outcome,
        }
    }
}

/// Prove `reviewed` reached `target`: by ancestry, else through the forge when a PR is known
/// (also a container's documents under PR delivery, `transition::pr`).
pub fn prove(
    ctx: &Ctx,
    target: &str,
    reviewed: &str,
    pr_url: Option<&str>,
    mut evidence: Value,
) -> Outcome {
    let repo = match open_repo(ctx.store.repo()) {
        Ok(r) => r,
        Err(e) => {
            return Outcome::escalate(KIND, format!("cannot open the repository: {e}"), evidence);
        }
    };
    let tip = match resolve(&repo, target) {
        Ok(t) => t,
        Err(e) => return Outcome::escalate(KIND, e.to_string(), evidence),
    };
    evidence["tip"] = json!(tip.to_string());
    if let Ok(oid) = Oid::from_str(reviewed)
        && repo.find_commit(oid).is_ok()
    {
        match is_on(&repo, oid, tip) {
            Ok(true) => {
                evidence["proof"] = json!("ancestry");
                return Outcome::pass(
                    KIND,
                    format!("reviewed commit {reviewed} is on {target}"),
                    evidence,
                );
            }
            Ok(false) => {}
            Err(e) => return Outcome::escalate(KIND, e.to_string(), evidence),
        }
    }
    let Some(url) = pr_url else {
        return Outcome::refuse(
            KIND,
            format!(
                "reviewed commit {reviewed} is not on {target} and no pull request is recorded"
            ),
            evidence,
        );
    };
    let answer = match ask_forge(ctx, url, &mut evidence) {
        Ok(a) => a,
        Err(outcome) => return *outcome,
    };
    merged_on_target(&repo, tip, target, url, answer, evidence)
}

/// Ask the forge about `url` (the module doc's order); `Err` is the floor's answer when there is
/// none.
fn ask_forge(ctx: &Ctx, url: &str, evidence: &mut Value) -> Result<ForgeAnswer, Box<Outcome>> {
    if let Some(argv) = ctx
        .config
        .delivery
        .forge_command
        .clone()
        .filter(|f| !f.is_empty())
    {
        return ask_command(ctx, argv, url, evidence);
    }
    let on_github = github::is_github_pr(url);
    if on_github && let Some(gh) = github::find_gh(std::env::var_os("PATH").as_deref()) {
        return ask_gh(ctx, &gh, url, evidence);
    }
    let or_gh = if on_github {
        " and the GitHub CLI `gh` is not on PATH"
    } else {
        ""
    };
    Err(Box::new(Outcome::escalate(
        KIND,
        format!(
            "a pull request ({url}) is recorded but nothing can confirm its merge: no `[delivery] forge_command` is configured{or_gh}"
        ),
        evidence.clone(),
    )))
}

/// Run `[delivery] forge_command <url>` and read its answer.
fn ask_command(
    ctx: &Ctx,
    mut argv: Vec<String>,
    url: &str,
    evidence: &mut Value,
) -> Result<ForgeAnswer, Box<Outcome>> {
    argv.push(url.to_string());
    let ran =
        run_command(&argv, ctx.store.repo(), &[], FORGE_TIMEOUT, OUTPUT_CAP).map_err(|e| {
            Box::new(Outcome::escalate(
                KIND,
                format!("cannot run the forge command `{}`: {e}", argv[0]),
                evidence.clone(),
            ))
        })?;
    evidence["forge_output"] = json!(tail(&ran.combined(), 2000));
    match (ran.code(), parse_forge(&ran.stdout)) {
        (Some(0), Some(a)) => Ok(a),
        (code, _) => Err(Box::new(Outcome::escalate(
            KIND,
            format!(
                "the forge command gave no answer (exit {code:?}); it must print {{\"merged\": bool, \"merge_commit\": sha}}"
            ),
            evidence.clone(),
        ))),
    }
}

/// Ask the GitHub CLI at `gh` about `url`: open is not merged yet, merged names its commit on
/// the base branch, closed unmerged and every failure escalate.
fn ask_gh(
    ctx: &Ctx,
    gh: &std::path::Path,
    url: &str,
    evidence: &mut Value,
) -> Result<ForgeAnswer, Box<Outcome>> {
    let argv = github::argv(gh, url);
    let shown = format!("gh pr view {url} --json {}", github::FIELDS);
    evidence["forge"] = json!("gh");
    evidence["forge_command"] = json!(shown);
    let escalate = |reason: String, evidence: &Value| {
        Box::new(Outcome::escalate(KIND, reason, evidence.clone()))
    };
    let env = [("GH_PROMPT_DISABLED", "1"), ("NO_COLOR", "1")];
    let ran = run_command(&argv, ctx.store.repo(), &env, FORGE_TIMEOUT, OUTPUT_CAP)
        .map_err(|e| escalate(format!("cannot run `{shown}`: {e}"), evidence))?;
    evidence["forge_output"] = json!(tail(&ran.combined(), 2000));
    let said = |text: &str| match tail(text.trim(), 500) {
        t if t.is_empty() => "nothing".to_string(),
        t => t,
    };
    if ran.code() != Some(0) {
        let how = match ran.code() {
            Some(c) => format!("exit {c}"),
            None if ran.timed_out() => format!("no answer in {}s", FORGE_TIMEOUT.as_secs()),
            None => "stopped before it exited".to_string(),
        };
        return Err(escalate(
            format!("`{shown}` failed ({how}): {}", said(&ran.stderr)),
            evidence,
        ));
    }
    match github::parse_pr_view(&ran.stdout) {
        Some(PrState::Open) => Ok(ForgeAnswer {
            merged: false,
            merge_commit: None,
        }),
        Some(PrState::Merged {
            merge_commit,
            merged_at,
        }) => {
            evidence["merged_at"] = json!(merged_at);
            Ok(ForgeAnswer {
                merged: true,
                merge_commit,
            })
        }
        Some(PrState::Closed) => Err(escalate(
            format!(
                "{url} was closed without merging: a person must reopen and merge it, or deliver the work another way"
            ),
            evidence,
        )),
        None => Err(escalate(
            format!(
                "`{shown}` gave no answer (a JSON object with `state` OPEN, MERGED or CLOSED); it printed {}",
                said(&ran.stdout)
            ),
            evidence,
        )),
    }
}

/// The forge's answer judged: merged, and its merge commit on the target's `tip`.
fn merged_on_target(
    repo: &Repository,
    tip: Oid,
    target: &str,
    url: &str,
    answer: ForgeAnswer,
    mut evidence: Value,
) -> Outcome {
    if !answer.merged {
        let mut o = Outcome::refuse(
            KIND,
            format!("awaiting merge: {url} is not merged yet"),
            evidence,
        );
        o.awaiting_merge = true;
        return o;
    }
    let Some(merge) = answer.merge_commit else {
        return Outcome::refuse(
            KIND,
            format!("the forge says {url} is merged but names no merge commit"),
            evidence,
        );
    };
    evidence["merge_commit"] = json!(merge);
    let on_target = Oid::from_str(&merge)
        .ok()
        .filter(|oid| repo.find_commit(*oid).is_ok())
        .map(|oid| is_on(repo, oid, tip));
    match on_target {
        Some(Ok(true)) => {
            evidence["proof"] = json!("forge");
            Outcome::pass(
                KIND,
                format!("{url} is merged as {merge} on {target}"),
                evidence,
            )
        }
        Some(Err(e)) => Outcome::escalate(KIND, e.to_string(), evidence),
        // No agent can fix this (it holds no forge credential, and never moves the target): a
        // person brings the forge's target here, or looks at where the merge went.
        Some(Ok(false)) => Outcome::escalate(
            KIND,
            format!(
                "{url} is merged as {merge}, which is in this repository but not on {target}:                  bring {target} up to date with the forge's (`git pull` with {target} checked                  out), then check the delivery again"
            ),
            evidence,
        ),
        None => Outcome::escalate(
            KIND,
            format!(
                "{url} is merged as {merge}, which this repository does not have yet: fetch                  it into {target} (`git pull` with {target} checked out), then check the                  delivery again"
            ),
            evidence,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forge_answers() {
        let a = parse_forge("{\"merged\": true, \"merge_commit\": \"abc\"}\n").unwrap();
        assert!(a.merged && a.merge_commit.as_deref() == Some("abc"));
        let a = parse_forge("fetching…\n{\"merged\": false}\n").unwrap();
        assert!(!a.merged && a.merge_commit.is_none());
        assert!(parse_forge("not json").is_none());
        assert!(parse_forge("{\"state\": \"open\"}").is_none());
    }
}
