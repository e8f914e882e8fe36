//! Direct delivery is landed by the writer (issue 10): checking a node's delivering step merges
//! its branch into the target itself ([`crate::worktree::land`]), in the check's slow phase
//! before the writer's lock, like the floors. Agents only prepare their branch.
//!
//! | step (role) | when it lands | why |
//! |---|---|---|
//! | deliver | before the floors | the `delivered` floor then proves the landing by ancestry |
//! | integrate | after its floors pass | a container's planning and reconcile documents (the PRP, the reconciliation file) land once, complete, when its integration is checked |
//!
//! Nothing lands when the node delivers by pull request (splice opens one instead: `pr.rs`), or
//! has no target, nor on a deliver step at deep autonomy on a mainline target (the `delivered`
//! floor escalates that: the merge to mainline is a person's job; a deep campaign's pieces land
//! on its integration branch instead, `split::integration_branch`, and its root's integrate lands
//! that branch on the main line behind a landing gate), nor, on a deliver step, before a review
//! has recorded the reviewed commit.
//!
//! **Approval before the move (issue 33).** A landing needs a person's approval, recorded on
//! the node as an approved landing gate bound to the branch's tip, before anything moves when
//! its target is *protected* — the main line (`main`, `master`, a remote's default branch) or a
//! branch in `[delivery] protected` — at any autonomy, or when the step's own gate (the
//! integrate gate) would wait for a person at the node's autonomy. Without one, the check runs
//! the landing as a dry run: a landing that would be refused is refused as below; one that would
//! move records a pending landing gate (the `AwaitLand` effect) and moves nothing. The approval
//! (`splice transition approve`) advances nothing: the next check lands the approved tip and
//! advances. No autonomy relaxes a landing gate, and a branch whose tip moved after the approval
//! asks again.
//!
//! The landing is one more answer of the check, kind `land`, recorded with the floors': a pass
//! says what moved; a refusal (the branch conflicts with the target, lacks the reviewed commit,
//! adds unreviewed commits, or changes `.splice/`) is one the agent can fix on its branch, so
//! the node stays on its step and the next dispatch reads why. A transient fault (the target
//! kept moving, or its checkout's index lock stayed held: issue 33) is a refusal too, but
//! nothing on the branch answers it: its evidence says `transient`, the check is recorded
//! `recheck` ([`only_transient`]), and decide asks for the next check, not a dispatch, spending
//! no attempt (`decide`'s rule 24: once per run). An escalation (the target is checked out with
//! uncommitted changes, or is not a local branch) waits for a person, and its reason says
//! exactly what to run. Only a branch
//! that moved past its review ([`Refused::BeyondReview`]: what would land is not the reviewed
//! commit merged cleanly with the target) is sent back, to the route's review step; no other
//! answer sends the node to an earlier step.
//!
//! A landing is idempotent: when the writer then declines to record the check (the node moved
//! meanwhile), the next check finds the branch already on the target and passes.
//!
//! Only the runner and a person reach this: `complete`, `deliver` and `integrate` are not an
//! agent's verbs (`authority.rs`).

use serde_json::{Value, json};

use crate::floors::{Effect, Outcome};
use crate::model::bead::{DeliveryMethod, GateState, Verdict};
use crate::model::manifest::FloorKind;
use crate::model::{Autonomy, Bead, Config, Manifest, Role, Step};
use crate::policy::lineage::is_mainline;
use crate::policy::{Lineage, gate};
use crate::store::Store;
use crate::worktree::{self, Landed, Landing, Refused};

/// The check's answer kind for a landing.
pub const KIND: &str = "land";

/// When a check lands the node's branch, relative to the step's floors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    BeforeFloors,
    AfterFloors,
}

/// Does checking `step` of `bead` land its branch, and when (see the module doc)?
pub fn when(manifest: &Manifest, step: &Step, bead: &Bead, lineage: &Lineage) -> Option<When> {
    let when = if manifest.is(&step.name, Role::Deliver) {
        bead.pipeline.reviewed_sha.as_ref()?;
        When::BeforeFloors
    } else if manifest.is(&step.name, Role::Integrate) {
        When::AfterFloors
    } else {
        return None;
    };
    if lineage.delivery(bead) != DeliveryMethod::Direct {
        return None;
    }
    let target = lineage.target(bead)?;
    // A deep node's work never lands on the main line by itself; a deep campaign root's does,
    // its integration branch, behind a person's landing approval (the main line is protected).
    if when == When::BeforeFloors
        && lineage.autonomy(bead).0 == Autonomy::Deep
        && is_mainline(target)
    {
        return None;
    }
    Some(when)
}

/// Why a landing on `target` needs a person's approval before it moves, if it does: the target
/// is protected, or `step`'s own gate would wait for a person (see the module doc).
pub fn needs_approval(
    store: &Store,
    config: &Config,
    step: &Step,
    bead: &Bead,
    lineage: &Lineage,
    target: &str,
) -> Option<String> {
    let remote_mains = worktree::remote_main_lines(store.repo());
    gate::landing_needs_approval(
        target,
        (&config.delivery.protected, &remote_mains),
        step,
        bead,
        lineage.autonomy(bead),
    )
}

/// The tip a person approved landing on `target`: an approved landing gate on the node's step
/// since it entered it.
pub fn approved_tip<'a>(bead: &'a Bead, target: &str) -> Option<&'a str> {
    bead.gate_on_step()
        .filter(|g| g.state == GateState::Approved)
        .and_then(|g| g.land.as_ref())
        .filter(|l| l.target == target)
        .map(|l| l.sha.as_str())
}

/// Land `bead`'s branch on its target; `None` when it has no branch to land. A landing that
/// needs a person's approval and has none for the branch's tip only says what would move.
pub fn land(
    store: &Store,
    (manifest, config): (&Manifest, &Config),
    step: &Step,
    bead: &Bead,
    lineage: &Lineage,
) -> Option<Outcome> {
    let target = lineage.target(bead)?;
    let ask = needs_approval(store, config, step, bead, lineage, target);
    let mut request = Landing {
        repo_root: store.repo(),
        worktrees_dir: &store.worktrees_dir(),
        id: &bead.id,
        title: &bead.title,
        target,
        reviewed: bead.pipeline.reviewed_sha.as_deref(),
        dry_run: ask.is_some(),
    };
    let verb = [Role::Integrate, Role::Deliver]
        .into_iter()
        .find(|r| manifest.is(&bead.pipeline.step, *r))
        .map_or("complete", Role::name);
    let again = if verb == "complete" {
        format!(
            "splice transition complete --bead {} --step {}",
            bead.id, bead.pipeline.step
        )
    } else {
        format!("splice transition {verb} --bead {}", bead.id)
    };
    let mut landed = worktree::land(&request);
    if let (Some(why), Ok(Ok(Landed::Would { branch, tip, .. }))) = (&ask, &landed) {
        if approved_tip(bead, target) != Some(tip.as_str()) {
            return Some(awaiting(bead, (branch, tip), target, why));
        }
        request.dry_run = false;
        landed = worktree::land(&request);
    }
    match landed {
        Ok(Ok(Landed::NoBranch { .. })) => None,
        Ok(Ok(landed)) => Some(landed_outcome(&landed, target)),
        Ok(Err(refused)) => {
            // Work set aside from a dirty checkout comes back only after the move: after a
            // person's approval, when the landing needs one and has none for the branch's tip.
            let approval = ask
                .filter(|_| matches!(refused, Refused::Dirty { .. }))
                .filter(|_| !approved_as_it_is(store, bead, target))
                .map(|why| (why, approve_command(bead)));
            let remedy = Remedy {
                again: &again,
                approval: approval.as_ref().map(|(w, a)| (w.as_str(), a.as_str())),
            };
            Some(refused_outcome(
                &refused,
                &remedy,
                review_step(manifest, bead),
            ))
        }
        Err(e) => Some(Outcome::named(
            KIND,
            Verdict::Escalate,
            format!("cannot land on {target}: {e}"),
            json!({ "target": target }),
        )),
    }
}

/// Does a check whose answers are `outcomes` refuse only for transient landing faults (the
/// target kept moving, or its checkout stayed busy)? Then nothing on the branch needs to
/// change: the check is recorded `recheck`, and the next check answers it, not the agent.
pub fn only_transient(outcomes: &[Outcome]) -> bool {
    let mut refusing = outcomes
        .iter()
        .filter(|o| o.verdict != Verdict::Pass)
        .peekable();
    refusing.peek().is_some() && refusing.all(is_transient)
}

/// A landing refused for a fault that passes by itself ([`refused_outcome`] marks it).
fn is_transient(o: &Outcome) -> bool {
    o.kind == KIND && o.evidence.get("transient") == Some(&Value::Bool(true))
}

/// What a person runs to check the node again (`again`), and, when the landing waits for a
/// person's approval first, why and the command that approves it.
struct Remedy<'a> {
    again: &'a str,
    approval: Option<(&'a str, &'a str)>,
}

/// Is a landing approved for the tip `bead`'s branch has now? Then the next check lands it
/// without asking. A branch that cannot be read is not.
fn approved_as_it_is(store: &Store, bead: &Bead, target: &str) -> bool {
    let tip = worktree::open_repo(store.repo())
        .and_then(|r| worktree::resolve(&r, &worktree::branch_name(&bead.id)))
        .map(|oid| oid.to_string());
    matches!((tip, approved_tip(bead, target)), (Ok(tip), Some(ok)) if tip == ok)
}

fn approve_command(bead: &Bead) -> String {
    format!(
        "splice transition approve --bead {} --step {}",
        bead.id, bead.pipeline.step
    )
}

/// A landing that would move `target` to `tip` and waits for a person's approval first.
fn awaiting(bead: &Bead, (branch, tip): (&str, &str), target: &str, why: &str) -> Outcome {
    let step = &bead.pipeline.step;
    let reason = format!(
        "landing {branch} ({}) on {target} waits for a person's approval, since {why}: \
         approve it with `{}` (splice then lands that commit), or reject it with `splice \
         transition reject --bead {id} --step {step} --reason …`",
        short(tip),
        approve_command(bead),
        id = bead.id,
    );
    let evidence = json!({ "branch": branch, "target": target, "tip": tip, "why": why });
    Outcome::named(KIND, Verdict::Pass, reason, evidence).with_effect(Effect::AwaitLand {
        sha: tip.to_string(),
        target: target.to_string(),
    })
}

fn landed_outcome(landed: &Landed, target: &str) -> Outcome {
    let (reason, evidence) = match landed {
        Landed::NoBranch { branch } => (
            format!("no branch {branch} to land"),
            json!({ "branch": branch }),
        ),
        Landed::Already { branch, tip } => (
            format!("{branch} is already on {target}"),
            json!({ "branch": branch, "target": target, "tip": tip }),
        ),
        Landed::Would {
            branch, from, tip, ..
        } => (
            format!("{branch} would land on {target}"),
            json!({ "branch": branch, "target": target, "from": from, "tip": tip }),
        ),
        Landed::Moved {
            branch,
            from,
            to,
            merge,
            checkout,
        } => {
            let how = if *merge {
                format!("as merge commit {}", short(to))
            } else {
                format!("by fast-forward to {}", short(to))
            };
            let follows = checkout.as_ref().map_or(String::new(), |c| {
                format!("; the checkout at {} follows it", c.display())
            });
            let evidence = json!({
                "branch": branch, "target": target, "from": from, "to": to, "merge": merge,
                "checkout": checkout,
            });
            (
                format!("landed {branch} on {target} {how}{follows}"),
                evidence,
            )
        }
    };
    Outcome::named(KIND, Verdict::Pass, reason, evidence)
}

fn refused_outcome(refused: &Refused, remedy: &Remedy, review_step: Option<&str>) -> Outcome {
    let (reason, evidence): (String, Value) = match refused {
        Refused::NotABranch { target } => (
            format!(
                "direct delivery lands on a local branch, and `{target}` is not one: set a \
                 branch with `splice transition set-target`, or deliver by pull request"
            ),
            json!({ "target": target }),
        ),
        Refused::NotReviewed { branch, reviewed } => (
            format!(
                "{branch} does not hold the reviewed commit {}: only the reviewed work lands",
                short(reviewed)
            ),
            json!({ "branch": branch, "reviewed_sha": reviewed }),
        ),
        Refused::Unreviewed {
            branch,
            reviewed,
            commits,
        } => (
            format!(
                "{branch} adds commits after the reviewed commit {} that are not merges: {}; \
                 only reviewed work lands (merge the target into the branch to resolve a \
                 conflict, and commit nothing else)",
                short(reviewed),
                commits.join(", ")
            ),
            json!({ "branch": branch, "reviewed_sha": reviewed, "commits": commits }),
        ),
        Refused::BeyondReview {
            branch,
            reviewed,
            paths,
            conflicted,
        } => {
            let what = if *conflicted {
                format!(
                    "the reviewed commit {} conflicts with the target in {}, and the branch's \
                     resolution of it is new code",
                    short(reviewed),
                    paths.join(", ")
                )
            } else {
                format!(
                    "what would land differs from the reviewed commit {} merged cleanly with \
                     the target in {}",
                    short(reviewed),
                    paths.join(", ")
                )
            };
            (
                format!("{branch} moved past its review: {what}; it goes back for review"),
                json!({ "branch": branch, "reviewed_sha": reviewed, "paths": paths,
                        "conflicted": conflicted }),
            )
        }
        Refused::TouchesState { branch, paths } => (
            format!(
                "{branch} changes splice's state ({}): `.splice/` is never delivered from a \
                 branch (a worktree's copy of it is stale); drop those changes from the branch",
                paths.join(", ")
            ),
            json!({ "branch": branch, "paths": paths }),
        ),
        Refused::Conflict {
            branch,
            target,
            paths,
        } => (
            format!(
                "merging {branch} into {target} conflicts in {}: merge `{target}` into the \
                 branch, resolve the conflicts there and commit; splice lands the result",
                paths.join(", ")
            ),
            json!({ "branch": branch, "target": target, "conflicts": paths }),
        ),
        Refused::Dirty {
            checkout,
            target,
            paths,
        } => {
            let dir = checkout.display();
            let again = remedy.again;
            // Each command in the order a person runs it, quoted: the steps work as printed.
            let then = match remedy.approval {
                None => format!("then run `{again}`"),
                Some((why, approve)) => format!(
                    "then run `{again}` (it records the landing for a person's approval, since \
                     {why}), approve it with `{approve}`, and run `{again}` again, which lands \
                     it (a run does too)"
                ),
            };
            (
                format!(
                    "{target} is checked out at {dir} with uncommitted work ({}), and splice \
                     never moves a checked-out branch under it: commit it, or set just those \
                     files aside (`{}`), {then}; only after the landing bring them back with \
                     `{}`",
                    paths.join(", "),
                    stash_command(checkout, paths),
                    format_args!("git -C {} stash pop", shell_word(checkout)),
                ),
                json!({ "target": target, "checkout": checkout, "paths": paths }),
            )
        }
        Refused::TargetMoved { target } => (
            format!(
                "{target} kept moving while splice landed on it (someone is committing on it); \
                 nothing landed, and nothing on the branch needs to change: the next check \
                 lands it"
            ),
            json!({ "target": target, "transient": true }),
        ),
        Refused::Busy {
            checkout,
            target,
            cause,
        } => (
            format!(
                "{target}'s checkout at {} stayed busy while splice landed on it ({cause}); \
                 nothing landed, and nothing on the branch needs to change: the next check lands \
                 it (a lock a crashed git left, `.git/index.lock`, must be removed by hand)",
                checkout.display()
            ),
            json!({ "target": target, "checkout": checkout, "cause": cause, "transient": true }),
        ),
    };
    let verdict = if refused.needs_person() {
        Verdict::Escalate
    } else {
        Verdict::Refuse
    };
    let outcome = Outcome::named(KIND, verdict, reason.clone(), evidence);
    // New code is for review: the step that recorded the reviewed commit checks it again.
    match (refused, review_step) {
        (Refused::BeyondReview { .. }, Some(step)) => outcome.with_effect(Effect::SendBack {
            step: step.to_string(),
            guidance: format!(
                "{reason}. Review the branch's tip as it is now, including the merge commit."
            ),
        }),
        _ => outcome,
    }
}

/// The step of `bead`'s route before `step` that declares the review floor: where a branch that
/// moved past its review goes back to.
fn review_step<'a>(manifest: &'a Manifest, bead: &Bead) -> Option<&'a str> {
    let route = manifest.route(&bead.pipeline.route)?;
    let here = route
        .iter()
        .position(|s| s.as_str() == bead.pipeline.step.as_str())?;
    route[..here].iter().rev().find_map(|name| {
        let step = manifest.step(name)?;
        step.floors
            .iter()
            .any(|f| f.kind == FloorKind::Review)
            .then_some(step.name.as_str())
    })
}

/// The command that stashes exactly `paths` of the checkout at `dir` (untracked ones too), and
/// nothing else: never `.splice/` (the live state, when it is untracked) nor another file a
/// person is working on.
fn stash_command(dir: &std::path::Path, paths: &[String]) -> String {
    let words: Vec<String> = paths
        .iter()
        .filter(|p| p.as_str() != crate::store::STATE_DIR && !p.starts_with(".splice/"))
        .map(|p| shell_word(std::path::Path::new(p)))
        .collect();
    format!(
        "git -C {} stash push --include-untracked -m 'before splice lands' -- {}",
        shell_word(dir),
        words.join(" ")
    )
}

fn shell_word(p: &std::path::Path) -> String {
    crate::hooks::shell_word(p)
}

fn short(sha: &str) -> &str {
    sha.get(..10).unwrap_or(sha)
}
