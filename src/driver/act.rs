//! Act: carry out one action of a decision. Every state change goes through the writer
//! (`src/transition/`) or the executor (`src/exec/`); a refusal is not a fault — the next pass
//! decides again from the new state.
//!
//! The runner calls the writer in-process as [`Who::Runner`](transition::Who::Runner), and is
//! recorded as a live runner ([`Presence`]) for as long as its [`RunCtx`] lives, so the writer
//! recognizes every process it dispatches. Dispatches themselves are in [`super::job`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::json;

use crate::authority::Presence;
use crate::error::{Error, Result};
use crate::model::bead::Verdict;
use crate::model::envelope::ActResult;
use crate::model::{Config, Manifest, Role};
use crate::policy::Lineage;
use crate::store::Store;
use crate::transition::{self, Ctx, complete, park, skip};
use crate::worktree;

use super::snapshot::Identity;

/// What every action needs to know about the run.
#[derive(Clone)]
pub struct RunCtx {
    pub store: Store,
    pub manifest: Manifest,
    pub config: Config,
    pub holder: String,
    pub run_id: String,
    /// This runner's record, removed when the last clone is dropped.
    pub presence: Arc<Presence>,
    /// The run's clock: how long it has slept for backoffs ([`crate::clock::now_after`]).
    pub slept_ms: Arc<AtomicU64>,
    /// A loop step's iteration limit in place of its `max_iterations` (`--max-turns`).
    pub max_turns: Option<u32>,
    /// Keep loop snapshots when a node's checkouts go (`--keep-snapshots`).
    pub keep_snapshots: bool,
    /// The run's Slurm poller (`[executor] kind = "slurm"`): dispatches are submitted as jobs
    /// and watched by it. `None`: dispatches run locally.
    pub poller: Option<Arc<super::slurm::Poller>>,
    /// Whether dispatches run in the kernel sandbox (issue 31): `Ok(abi)`, the Landlock ABI
    /// enforced; `Err(why)`, they run unsandboxed, and why (`[sandbox] enabled = false`, or
    /// the kernel cannot). [`RunCtx::new`] refuses the run instead when `[sandbox] required`.
    pub sandbox: std::result::Result<i32, String>,
}

impl RunCtx {
    /// The context of a run by `who`, recorded as a live runner of `store` (a child subreaper)
    /// until it is dropped.
    pub fn new(
        store: &Store,
        manifest: Manifest,
        config: Config,
        who: &Identity,
    ) -> Result<RunCtx> {
        // `[sandbox] required` and no sandbox, or a bad `SPLICE_SANDBOX`: nothing is dispatched.
        let sandbox =
            match crate::sandbox::choose(config.sandbox.enabled(), config.sandbox.required()) {
                Ok(None) => Ok(crate::sandbox::probe().enforced_abi()),
                Ok(Some(why)) => Err(why),
                Err(why) => return Err(Error::Invalid(format!("{why}; nothing was dispatched"))),
            };
        config
            .agent
            .check_for_run(sandbox.is_ok())
            .map_err(|why| Error::Invalid(format!("{why}; nothing was dispatched")))?;
        let presence = Presence::register(store.dir(), &who.holder, &who.run)?;
        Ok(RunCtx {
            sandbox,
            store: store.clone(),
            manifest,
            config,
            holder: who.holder.clone(),
            run_id: who.run.clone(),
            presence: Arc::new(presence),
            slept_ms: Arc::new(AtomicU64::new(0)),
            max_turns: None,
            keep_snapshots: false,
            poller: None,
        })
    }

    /// The run's time now (RFC 3339).
    pub fn now(&self) -> Result<String> {
        let slept = Duration::from_millis(self.slept_ms.load(Ordering::SeqCst));
        Ok(crate::clock::format(crate::clock::now_after(slept)?))
    }

    /// The run slept `d` for a backoff.
    pub fn slept(&self, d: Duration) {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        self.slept_ms.fetch_add(ms, Ordering::SeqCst);
    }

    /// The writer's context for one of this runner's own verbs, at the time read now.
    pub fn writer_ctx(&self) -> Result<Ctx<'_>> {
        Ok(Ctx {
            store: &self.store,
            holder: Some(self.holder.clone()),
            who: transition::Who::Runner,
            run: Some(self.run_id.clone()),
            expect_seq: None,
            now: self.now()?,
        })
    }
}

/// A refusal becomes `Skipped`; any other error is a fault for the caller.
pub(super) fn refusal_is_skip(r: Result<ActResult>) -> Result<ActResult> {
    match r {
        Err(Error::Refused(why)) => Ok(ActResult::Skipped {
            reason: why.to_string(),
        }),
        other => other,
    }
}

/// `check` = `transition complete` on the node's step (journaled as `integrate` or `deliver` for
/// the steps with those roles). A check whose floors refused or escalated is recorded (done, with
/// that status); a precondition's refusal wrote nothing (skip).
pub fn check(rc: &RunCtx, bead: &str, step: &str) -> Result<ActResult> {
    let verb = match [Role::Integrate, Role::Deliver]
        .into_iter()
        .find(|r| rc.manifest.is(step, *r))
    {
        Some(Role::Integrate) => crate::transition::Verb::Integrate,
        Some(_) => crate::transition::Verb::Deliver,
        None => crate::transition::Verb::Complete,
    };
    let done = |c: &complete::Checked, status: String| ActResult::Done {
        status,
        detail: json!({ "verdict": c.verdict, "gate": c.gate, "next": c.next }),
    };
    match complete::complete(&rc.writer_ctx()?, bead, step, None, verb) {
        Ok(checked) => Ok(done(&checked, passed(&checked))),
        Err(e @ Error::Refused(_)) => match e.refusal().and_then(|r| r.checked()) {
            Some(checked) => Ok(done(checked, e.to_string())),
            None => refusal_is_skip(Err(e)),
        },
        Err(e) => Err(e),
    }
}

/// A passed check's status: `ok`, and what it landed on the target when it landed a branch.
fn passed(checked: &complete::Checked) -> String {
    checked
        .floors
        .iter()
        .find(|f| f.kind == transition::land::KIND && f.verdict == Verdict::Pass)
        .map_or_else(|| "ok".to_string(), |f| format!("ok; {}", f.reason))
}

pub fn park(rc: &RunCtx, bead: &str, reason: &str) -> Result<ActResult> {
    let parked = park::park(&rc.writer_ctx()?, bead, reason);
    refusal_is_skip(parked.map(|o| ActResult::Done {
        status: "parked".into(),
        detail: json!(o),
    }))
}

/// `skip` = `transition skip`: move the node past an optional step whose command this run
/// cannot find, recorded as not applicable.
pub fn skip(rc: &RunCtx, bead: &str, step: &str, reason: &str) -> Result<ActResult> {
    let skipped = skip::skip(&rc.writer_ctx()?, bead, step, reason);
    refusal_is_skip(skipped.map(|o| ActResult::Done {
        status: "not-applicable".into(),
        detail: json!(o),
    }))
}

/// Clean up after a closed node: the checkouts of its `children`, and with `own` its own (its
/// route finished, so its work is on its target). Each node's branch `splice/<id>` goes too when
/// all its commits are on the node's target; a branch holding commits that are not is kept, and
/// the result says so.
pub fn cleanup_fanout(
    rc: &RunCtx,
    bead: &str,
    children: &[String],
    own: bool,
) -> Result<ActResult> {
    let nodes: Vec<&str> = own
        .then_some(bead)
        .into_iter()
        .chain(children.iter().map(String::as_str))
        .collect();
    let mut tidied = worktree::Tidied::default();
    let wts = rc.store.worktrees_dir();
    for node in &nodes {
        let target = target_of(rc, node)?;
        tidied.node(
            rc.store.repo(),
            &wts,
            node,
            target.as_deref(),
            rc.keep_snapshots,
        )?;
    }
    let kept: Vec<String> = tidied.kept.iter().map(worktree::KeptBranch::says).collect();
    let mut status = format!("removed the checkouts of {}", nodes.join(", "));
    if !tidied.deleted.is_empty() {
        status.push_str(&format!("; deleted {}", tidied.deleted.join(", ")));
    }
    for k in &kept {
        status.push_str(&format!("; {k}"));
    }
    Ok(ActResult::Done {
        status,
        detail: json!({ "removed": nodes, "deleted": tidied.deleted, "kept": kept }),
    })
}

/// Where node `id`'s work lands (its lineage's target), read now.
fn target_of(rc: &RunCtx, id: &str) -> Result<Option<String>> {
    let bead = rc.store.read_bead(id)?;
    let ancestors = transition::ancestors_unlocked(&rc.store, &bead)?;
    let branch = worktree::current_branch(rc.store.repo());
    let lineage = Lineage::new(&ancestors, transition::defaults(&rc.config, &branch));
    Ok(lineage.target(&bead).map(str::to_string))
}
