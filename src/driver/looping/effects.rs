//! The effects of the pass monitor's decisions that the runner carries out (`docs/monitor.md`,
//! the decision table): escalate, roll back, step back — each recorded through the writer
//! (`transition loop-effect`).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;

use crate::error::{Error, Result};
use crate::exec::{self, DispatchPaths, DispatchSpec, template};
use crate::model::envelope::ActResult;
use crate::model::manifest::{LoopSpec, Run};
use crate::model::{Bead, Step};
use crate::transition::loops::{self, EffectArgs};
use crate::worktree::{self, snapshots};

use super::super::act::{RunCtx, park, refusal_is_skip};
use super::{agent_command, context};

/// `escalate`: the once-per-node switch to `[agent] escalation_command`, or recovery context.
pub fn escalate(
    rc: &RunCtx,
    bead: &str,
    step: &str,
    iteration: u32,
    rule: &str,
) -> Result<ActResult> {
    let args = EffectArgs::Escalate {
        rule: rule.to_string(),
        command: rc.config.agent.escalation_command.clone(),
    };
    record(rc, bead, step, iteration, &args)
}

fn record(
    rc: &RunCtx,
    bead: &str,
    step: &str,
    iteration: u32,
    args: &EffectArgs,
) -> Result<ActResult> {
    let done = loops::loop_effect(&rc.writer_ctx()?, bead, step, iteration, args);
    refusal_is_skip(done.map(|e| ActResult::Done {
        status: loops::describe(&e.effect),
        detail: json!(e),
    }))
}

/// `rollback`: restore the node's worktree to snapshot `restore`, then record it. Without a
/// worktree or the snapshot, the node is parked.
pub fn rollback(
    rc: &RunCtx,
    bead: &str,
    step: &str,
    iteration: u32,
    restore: u32,
) -> Result<ActResult> {
    let path = worktree::node_path(&rc.store.worktrees_dir(), bead);
    if !path.is_dir() {
        let why = format!(
            "rollback of {step} to iteration {restore} needs the node's worktree, and it has none"
        );
        return park(rc, bead, &why);
    }
    match snapshots::restore(&path, bead, restore) {
        Ok(_) => {
            let args = EffectArgs::RolledBack {
                restored: restore,
                snapshot: snapshots::snapshot_ref(bead, restore),
            };
            record(rc, bead, step, iteration, &args)
        }
        Err(e) => park(
            rc,
            bead,
            &format!("rollback of {step} to iteration {restore} failed: {e}"),
        ),
    }
}

/// `step-back`: one analysis dispatch of the plateau in the node's worktree, without a
/// credential (it can read state, not change it), then its root cause recorded. It is not an
/// iteration and uses none; its usage counts towards the loop's budget.
pub fn step_back(
    rc: &RunCtx,
    id: &str,
    step_name: &str,
    iteration: u32,
    reason: &str,
) -> Result<ActResult> {
    let bead = rc.store.read_bead(id)?;
    let step = crate::transition::current_step(&rc.manifest, &bead)?.clone();
    let Some(spec) = step.loop_.clone() else {
        return Ok(ActResult::Skipped {
            reason: format!("{step_name} is not a loop step"),
        });
    };
    let path = worktree::node_path(&rc.store.worktrees_dir(), id);
    let (root_cause, tokens, cost_usd) = if path.is_dir() {
        analyse(rc, &bead, &step, &spec, (iteration, reason), &path)
            .unwrap_or_else(|e| (format!("the step-back analysis could not run: {e}"), 0, 0.0))
    } else {
        ("not analysed: the node has no worktree".to_string(), 0, 0.0)
    };
    let args = EffectArgs::SteppedBack {
        root_cause,
        tokens,
        cost_usd,
    };
    record(rc, id, step_name, iteration, &args)
}

/// The step-back prompt for `bead` at `step`, stalled because `reason`: its variables are
/// `{{bead.id}}`, `{{bead.title}}`, `{{bead.description}}`, `{{step}}` and `{{reason}}`.
pub fn render_step_back(template: &str, bead: &Bead, step: &str, reason: &str) -> Result<String> {
    template::substitute(template, "the step-back prompt", |name| match name {
        "bead.id" => Some(bead.id.as_str().into()),
        "bead.title" => Some(bead.title.as_str().into()),
        "bead.description" => Some(bead.description.as_str().into()),
        "step" => Some(step.into()),
        "reason" => Some(reason.into()),
        _ => None,
    })
}

/// Run the step-back analysis; its root cause (the result file's `root_cause`, else its final
/// response), tokens and cost.
fn analyse(
    rc: &RunCtx,
    bead: &Bead,
    step: &Step,
    spec: &LoopSpec,
    (iteration, reason): (u32, &str),
    path: &Path,
) -> Result<(String, u64, f64)> {
    let paths = DispatchPaths::new(
        &rc.store.runs_dir(),
        &rc.run_id,
        &bead.id,
        &format!("{}-step-back", step.name),
        iteration,
    )?;
    let (section, data) = context(bead, step.dispatch_limit(rc.max_turns)).unwrap_or_default();
    std::fs::create_dir_all(&paths.run_dir).map_err(|e| Error::io(&paths.run_dir, e))?;
    let context_file = paths.log.with_extension("context.json");
    let bytes = serde_json::to_vec_pretty(&data).unwrap_or_default();
    crate::store::atomic::replace_file(&context_file, &bytes)?;
    let argv = analysis_argv(
        rc,
        bead,
        step,
        spec,
        (iteration, reason),
        (&section, &paths, path),
    )?;
    let mut env = vec![
        ("SPLICE_STEP_BACK".into(), "1".into()),
        ("SPLICE_ITERATION".into(), iteration.to_string()),
        (
            "SPLICE_LOOP_CONTEXT".into(),
            context_file.display().to_string(),
        ),
    ];
    // The analysis reads what the agent wrote: it runs sandboxed like a dispatch (it has no
    // credential, so its inbox answers nothing; it only reads and writes its result file).
    let sandbox = match (&rc.sandbox, rc.poller.is_some()) {
        (Ok(_), false) => {
            let (sandbox, more) =
                super::super::job::dispatch_sandbox(rc, &bead.id, path, &paths, &argv)?;
            env.extend(more);
            Some(sandbox)
        }
        _ => None,
    };
    let ds = DispatchSpec {
        timeout: Some(Duration::from_secs(step.timeout_s.max(1))),
        usage: exec::usage::Adapter::from(rc.config.agent.usage),
        prices: &rc.config.prices,
        model: configured_model(rc, bead, &step.name),
        sandbox: sandbox.as_ref(),
        env,
        ..DispatchSpec::new(
            &bead.id,
            &step.name,
            iteration,
            &rc.holder,
            &rc.run_id,
            rc.store.dir(),
            path,
            &paths,
            &argv,
        )
    };
    let result = dispatch_read_only(&ds, path)?;
    Ok(answer(&result, &paths))
}

/// The model a dispatch's usage falls back to when the agent's output names none: the step's
/// configured one, unless the node escalated to a command that may name another.
pub(crate) fn configured_model<'c>(rc: &'c RunCtx, bead: &Bead, step: &str) -> Option<&'c str> {
    bead.pipeline
        .escalation
        .is_none()
        .then(|| rc.config.agent.model_for(step))
        .flatten()
}

/// The analysis's command line. An argv step's analysis runs its own argv, which takes no
/// prompt; only the agent's command (a prompt step's, or an escalated node's) reads the
/// step-back template, followed by the loop's context.
fn analysis_argv(
    rc: &RunCtx,
    bead: &Bead,
    step: &Step,
    spec: &LoopSpec,
    (iteration, reason): (u32, &str),
    (section, paths, path): (&str, &DispatchPaths, &Path),
) -> Result<Vec<String>> {
    let vars = template::ArgvVars {
        bead: &bead.id,
        step: &step.name,
        attempt: iteration,
        worktree: path,
        holder: &rc.holder,
        run: &rc.run_id,
        model: rc.config.agent.model_for(&step.name),
    };
    match &step.run {
        Some(Run::Argv { argv }) if bead.pipeline.escalation.is_none() => {
            template::command_argv(argv, &vars, None, &paths.prompt_file)
        }
        _ => {
            let template_text = super::super::prompts::template(&rc.store, &spec.step_back_prompt)?;
            let prompt = render_step_back(&template_text, bead, &step.name, reason)? + section;
            let command = agent_command(rc, bead, &step.name);
            template::command_argv(&command, &vars, Some(&prompt), &paths.prompt_file)
        }
    }
}

/// Run the analysis, stopped by Ctrl-C like a dispatch; whatever it leaves in the worktree,
/// committed or not, is reset to the commit it started from: it may not change the work.
fn dispatch_read_only(ds: &DispatchSpec, path: &Path) -> Result<exec::DispatchResult> {
    let head = worktree::head(path)?;
    let (cancel, ended) = (AtomicBool::new(false), AtomicBool::new(false));
    let ds = DispatchSpec {
        cancel: Some(&cancel),
        ..ds.clone()
    };
    let result = std::thread::scope(|s| {
        s.spawn(|| super::super::job::relay_interrupt(&cancel, &ended));
        let result = exec::dispatch(&ds);
        ended.store(true, Ordering::Relaxed);
        result
    });
    worktree::reset_hard_clean(path, &head)?;
    result
}

/// The analysis's answer: its root cause (the result file's `root_cause`, else its final
/// response; at most 2000 characters), tokens and cost.
fn answer(result: &exec::DispatchResult, paths: &DispatchPaths) -> (String, u64, f64) {
    let from_file = exec::agent_file::read(&paths.result_file, exec::agent_file::SMALL)
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_slice::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("root_cause")?.as_str().map(str::to_string));
    let root_cause = from_file
        .or_else(|| result.response.as_ref().map(|r| r.text.clone()))
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| {
            let how = result
                .cause
                .clone()
                .unwrap_or_else(|| format!("{:?}", result.exit));
            format!("the analysis gave no root cause ({how})")
        });
    let usage = result.usage.as_ref();
    let tokens = usage.map_or(0, crate::model::Usage::budget_tokens);
    let cost = usage
        .and_then(|u| u.cost_usd)
        .filter(|c| c.is_finite() && *c >= 0.0)
        .unwrap_or(0.0);
    (root_cause.chars().take(2000).collect(), tokens, cost)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::manifest::prompts::DEFAULT_PROMPTS;

    #[test]
    fn the_default_step_back_prompt_renders_and_asks_for_a_root_cause() {
        let (_, text) = DEFAULT_PROMPTS
            .iter()
            .find(|(n, _)| *n == "step-back")
            .expect("a default step-back prompt");
        let bead = Bead::new(
            "sp-1".into(),
            "Parse dates".into(),
            "all of them".into(),
            "now",
        );
        let out = render_step_back(text, &bead, "implement", "the scores did not rise").unwrap();
        assert!(out.contains("sp-1") && out.contains("Parse dates") && out.contains("all of them"));
        assert!(out.contains("the scores did not rise"));
        assert!(out.contains("SPLICE_RESULT_FILE") && out.contains("root_cause"));
        assert!(!out.contains("{{"), "{out}");
    }
}
