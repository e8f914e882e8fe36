//! A loop step in a run (issue 13, `docs/monitor.md` "The loop in a run"): measuring each
//! iteration after its dispatch and recording it (`transition iterate`), the snapshots, the
//! context the next dispatch gets, and the monitor's effects decide asks for — escalate, roll
//! back, step back — each recorded through the writer (`transition loop-effect`).

use std::path::Path;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::floors::iteration::{self, MeasureInput, SarifSource};
use crate::model::bead::{ExitKind, StepResponse};
use crate::model::manifest::{LoopSpec, SarifUse, Stage};
use crate::model::{Bead, Step};
use crate::transition::loops::{self, IterateArgs, Iterated};
use crate::worktree::{self, snapshots};

use super::act::RunCtx;

mod context;
mod effects;
pub mod verify;

pub use context::context;
pub(crate) use effects::configured_model;
pub use effects::{escalate, render_step_back, rollback, step_back};

/// The default time bound of a stage that declares none: the step's.
fn stage_timeout(own: Option<u64>, step: &Step) -> Duration {
    Duration::from_secs(own.unwrap_or(step.timeout_s).max(1))
}

/// Before a loop step's first iteration: snapshot `0` of the worktree (its state before the
/// agent's work), and the baseline of every tests stage that compares with the base (run
/// there, sandboxed as the stages are). A baseline that cannot be taken is measured without.
pub fn before_dispatch(rc: &RunCtx, bead: &Bead, step: &Step, path: &Path) -> Result<()> {
    if step.loop_.is_some() && bead.iterations_since_entry().next().is_none() {
        snapshots::take(path, &bead.id, 0)?;
        // Keyed by the commit it ran at: a measurement against another base does not use it.
        let Some(base) = head_of(path) else {
            return Ok(());
        };
        let confined =
            crate::floors::confine::for_dir(&rc.store, &rc.config, path).map_err(Error::Invalid)?;
        verify::take_baselines(
            &rc.store.runs_dir(),
            &bead.id,
            step,
            (path, &base),
            confined.as_ref(),
        )?;
    }
    Ok(())
}

/// Does a dispatch that ended so get measured? One that ran (to its end, a failure or its
/// timeout); not one that could not start, that splice lost, or that the runner cancelled.
pub fn measured(exit: ExitKind) -> bool {
    matches!(exit, ExitKind::Ok | ExitKind::Failed | ExitKind::Timeout)
}

/// What a finished loop dispatch hands to [`measure_and_record`].
pub struct Ran<'a> {
    pub rc: &'a RunCtx,
    pub bead: &'a str,
    pub step: &'a Step,
    pub spec: &'a LoopSpec,
    pub attempt: u32,
    pub worktree: &'a Path,
    pub usage: Option<&'a crate::model::Usage>,
    pub response: Option<&'a StepResponse>,
}

/// Measure the iteration that just ran in the node's worktree, snapshot it when it completed,
/// and append it to the node's trajectory (`transition iterate`, while the claim is held).
pub fn measure_and_record(ran: &Ran) -> Result<Iterated> {
    let rc = ran.rc;
    let bead = rc.store.read_bead(ran.bead)?;
    let base = worktree::step_base(&bead)
        .map(str::to_string)
        .or_else(|| snapshot_zero(&rc.store, ran.bead))
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{}: no base commit recorded for {}, so its change cannot be measured",
                ran.bead, ran.step.name
            ))
        })?;
    let started_at = bead
        .pipeline
        .last_dispatch
        .as_ref()
        .filter(|d| d.step == ran.step.name)
        .map_or_else(|| bead.updated_at.clone(), |d| d.at.as_str().into());
    let confidence = confidence(&bead, ran);
    let iteration = u32::try_from(bead.iterations_since_entry().count())
        .unwrap_or(u32::MAX)
        .saturating_add(1);
    // The stages run what the agent wrote: inside the sandbox, as floors do.
    let confined = crate::floors::confine::for_dir(&ran.rc.store, &ran.rc.config, ran.worktree)
        .map_err(Error::Invalid)?
        .map(std::sync::Arc::new);
    let mut resolved = verify::resolve(ran.spec, ran.step, ran.worktree);
    verify::attach_baselines(
        &rc.store.runs_dir(),
        ran.bead,
        (&ran.step.name, &base),
        &mut resolved,
    );
    let input = MeasureInput {
        confined,
        worktree: ran.worktree.to_path_buf(),
        base,
        iteration,
        bead_id: ran.bead.to_string(),
        tests: resolved.tests.into_iter().map(|(t, _)| t).collect(),
        acceptance: if has_command_stage(ran.spec) {
            bead.pipeline.acceptance.to_vec()
        } else {
            Vec::new()
        },
        acceptance_timeout: command_timeout(ran.spec, ran.step),
        lint: sarif_stages(ran.spec, ran.step, SarifUse::Lint),
        security: sarif_stages(ran.spec, ran.step, SarifUse::Security),
        analyzers: resolved.analyzers,
        notes: resolved.notes,
        confidence,
        tokens: ran.usage.map_or(0, crate::model::Usage::budget_tokens),
        cost_usd: ran
            .usage
            .and_then(|u| u.cost_usd)
            .filter(|c| c.is_finite() && *c >= 0.0)
            .unwrap_or(0.0),
    };
    let m = iteration::measure(&input).map_err(Error::Invalid)?;
    let snapshot = match m.state.stage_failed {
        true => None,
        false => Some(snapshots::take(ran.worktree, ran.bead, iteration)?),
    };
    let args = IterateArgs {
        step: ran.step.name.clone(),
        attempt: ran.attempt,
        started_at: started_at.to_string(),
        state: m.state,
        context: m.context,
        snapshot,
        max_turns: rc.max_turns,
    };
    loops::iterate(&rc.writer_ctx()?, ran.bead, &args)
}

fn head_of(path: &Path) -> Option<String> {
    let repo = git2::Repository::open(path).ok()?;
    let head = repo.head().ok()?.peel_to_commit().ok()?;
    Some(head.id().to_string())
}

/// The base when none was recorded at claim: the snapshot taken before the first iteration.
fn snapshot_zero(store: &crate::store::Store, id: &str) -> Option<String> {
    let repo = worktree::open_repo(store.repo()).ok()?;
    let name = snapshots::snapshot_ref(id, 0);
    let commit = repo.revparse_single(&name).ok()?.peel_to_commit().ok()?;
    Some(commit.id().to_string())
}

/// The agent's confidence in this iteration: its proposal's during the dispatch
/// (`propose --confidence`), else its result file's.
fn confidence(bead: &Bead, ran: &Ran) -> Option<f64> {
    let dispatched = bead
        .pipeline
        .last_dispatch
        .as_ref()
        .filter(|d| d.step == ran.step.name)
        .map_or(0, |d| d.seq);
    bead.proposal_since_entry()
        .filter(|p| p.seq > dispatched)
        .and_then(|p| p.confidence)
        .or_else(|| ran.response.and_then(|r| r.confidence))
        .or_else(|| {
            // The file's confidence when it gave no response to carry it (the dispatch removed
            // any stale file before it started).
            let paths = crate::exec::DispatchPaths::new(
                &ran.rc.store.runs_dir(),
                &ran.rc.run_id,
                ran.bead,
                &ran.step.name,
                ran.attempt,
            );
            crate::exec::response::confidence_in(&paths.ok()?.result_file)
        })
        .filter(|c| c.is_finite() && (0.0..=1.0).contains(c))
}

fn has_command_stage(spec: &LoopSpec) -> bool {
    spec.stages
        .iter()
        .any(|s| matches!(s, Stage::Command { .. }))
}

fn command_timeout(spec: &LoopSpec, step: &Step) -> Duration {
    let own = spec.stages.iter().find_map(|s| match s {
        Stage::Command { timeout_s } => *timeout_s,
        _ => None,
    });
    stage_timeout(own, step)
}

fn sarif_stages(spec: &LoopSpec, step: &Step, counts: SarifUse) -> Vec<SarifSource> {
    spec.stages
        .iter()
        .filter_map(|s| match s {
            Stage::Sarif {
                counts_as,
                file,
                argv,
                timeout_s,
            } if *counts_as == counts => match (file, argv) {
                (Some(f), _) => Some(SarifSource::File(f.clone())),
                (None, Some(a)) => Some(SarifSource::Argv {
                    argv: a.clone(),
                    timeout: stage_timeout(*timeout_s, step),
                }),
                (None, None) => None,
            },
            _ => None,
        })
        .collect()
}

/// The command a node's dispatch runs: its escalation's once it escalated, else the config's.
pub fn agent_command(rc: &RunCtx, bead: &Bead, step: &str) -> Vec<String> {
    match &bead.pipeline.escalation {
        Some(e) => e.command.clone(),
        None => rc.config.agent.command_for(step, rc.sandbox.is_ok()),
    }
}
