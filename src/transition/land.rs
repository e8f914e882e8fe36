//! Direct delivery is landed by the writer (issue 10): checking a node's delivering step merges
//! its branch into the target itself ([`crate::worktree::land`]), in the check's slow phase
//! before the writer's lock, like the floors. Agents only prepare their branch.
//!
//! | step (role) | when it lands | why |
//! |---|---|---|
//! | deliver | before the floors | the `delivered` floor then proves the landing by ancestry |
//! | integrate | after its floors pass | a container's planning and reconcile documents (the PRP, the reconciliation file) land once, complete, when its integration is checked |
//!
//! Nothing lands when the node delivers by pull request, has no target, or is at deep autonomy
//! on a mainline target (the `delivered` floor escalates that: the merge to mainline is a
//! person's job), nor, on a deliver step, before a review has recorded the reviewed commit.
//!
//! The landing is one more answer of the check, kind `land`, recorded with the floors': a pass
//! says what moved; a refusal (the branch conflicts with the target, lacks the reviewed commit,
//! adds unreviewed commits, or changes `.splice/`) is one the agent can fix on its branch, so
//! the node stays on its step and the next dispatch reads why; so is a transient fault (the
//! target kept moving, or its checkout's index lock stayed held: issue 33), after which the next
//! check lands it; an escalation (the target is checked out with uncommitted changes, or is not
//! a local branch) waits for a person, and its reason says exactly what to run. Whatever the
//! answer, nothing is sent back to an earlier step.
//!
//! A landing is idempotent: when the writer then declines to record the check (the node moved
//! meanwhile), the next check finds the branch already on the target and passes.
//!
//! Only the runner and a person reach this: `complete`, `deliver` and `integrate` are not an
//! agent's verbs (`authority.rs`).

use serde_json::{Value, json};

use crate::floors::Outcome;
use crate::model::bead::{DeliveryMethod, Verdict};
use crate::model::{Autonomy, Bead, Manifest, Role, Step};
use crate::policy::Lineage;
use crate::policy::lineage::is_mainline;
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
    if lineage.autonomy(bead).0 == Autonomy::Deep && is_mainline(target) {
        return None;
    }
    Some(when)
}

/// Land `bead`'s branch on its target; `None` when it has no branch to land.
pub fn land(store: &Store, manifest: &Manifest, bead: &Bead, lineage: &Lineage) -> Option<Outcome> {
    let target = lineage.target(bead)?;
    let request = Landing {
        repo_root: store.repo(),
        worktrees_dir: &store.worktrees_dir(),
        id: &bead.id,
        title: &bead.title,
        target,
        reviewed: bead.pipeline.reviewed_sha.as_deref(),
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
    match worktree::land(&request) {
        Ok(Ok(Landed::NoBranch { .. })) => None,
        Ok(Ok(landed)) => Some(landed_outcome(&landed, target)),
        Ok(Err(refused)) => Some(refused_outcome(&refused, &again)),
        Err(e) => Some(Outcome::named(
            KIND,
            Verdict::Escalate,
            format!("cannot land on {target}: {e}"),
            json!({ "target": target }),
        )),
    }
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

fn refused_outcome(refused: &Refused, again: &str) -> Outcome {
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
            (
                format!(
                    "{target} is checked out at {dir} with uncommitted work ({}), and splice \
                     never moves a checked-out branch under it: commit it, or stash it (`git -C \
                     '{dir}' stash --include-untracked`), then run `{again}` (and `git -C \
                     '{dir}' stash pop` after it)",
                    paths.join(", ")
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
            json!({ "target": target }),
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
            json!({ "target": target, "checkout": checkout, "cause": cause }),
        ),
    };
    let verdict = if refused.needs_person() {
        Verdict::Escalate
    } else {
        Verdict::Refuse
    };
    Outcome::named(KIND, verdict, reason, evidence)
}

fn short(sha: &str) -> &str {
    sha.get(..10).unwrap_or(sha)
}
