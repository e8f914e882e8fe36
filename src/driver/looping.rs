//! A loop step in a run (issue 13, `docs/monitor.md` "The loop in a run"): measuring each
//! iteration after its dispatch and recording it (`transition iterate`), the snapshots, the
//! context the next dispatch gets, and the monitor's effects decide asks for — escalate, roll
//! back, step back — each recorded through the writer (`transition loop-effect`).

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::error::{Error, Result};
use crate::exec::{self, DispatchPaths, DispatchSpec, template};
use crate::floors::iteration::{self, MeasureInput, SarifSource, TestsStage};
use crate::model::bead::{ExitKind, StepResponse};
use crate::model::envelope::ActResult;
use crate::model::manifest::{LoopSpec, Run, SarifUse, Stage};
use crate::model::trajectory::{Effect, Iteration, since_entry};
use crate::model::{Bead, Step};
use crate::transition::loops::{self, EffectArgs, IterateArgs, Iterated};
use crate::worktree::{self, snapshots};

use super::act::{RunCtx, park, refusal_is_skip};

/// The default time bound of a stage that declares none: the step's.
fn stage_timeout(own: Option<u64>, step: &Step) -> Duration {
    Duration::from_secs(own.unwrap_or(step.timeout_s).max(1))
}

/// The iterations of `bead` on its current step since it entered it.
pub fn current(bead: &Bead) -> Vec<&Iteration> {
    let p = &bead.pipeline;
    since_entry(&p.trajectory, &p.step, p.entered).collect()
}

/// Before a loop step's first iteration: snapshot `0` of the worktree (its state before the
/// agent's work).
pub fn before_dispatch(bead: &Bead, step: &Step, path: &Path) -> Result<()> {
    if step.loop_.is_some() && current(bead).is_empty() {
        snapshots::take(path, &bead.id, 0)?;
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
        .map_or_else(|| bead.updated_at.clone(), |d| d.at.clone());
    let confidence = confidence(&bead, ran);
    let iteration = u32::try_from(current(&bead).len())
        .unwrap_or(u32::MAX)
        .saturating_add(1);
    let input = MeasureInput {
        worktree: ran.worktree.to_path_buf(),
        base,
        iteration,
        bead_id: ran.bead.to_string(),
        tests: tests_stages(ran.spec, ran.step),
        acceptance: if has_command_stage(ran.spec) {
            bead.pipeline.acceptance.clone()
        } else {
            Vec::new()
        },
        acceptance_timeout: command_timeout(ran.spec, ran.step),
        lint: sarif_stages(ran.spec, ran.step, SarifUse::Lint),
        security: sarif_stages(ran.spec, ran.step, SarifUse::Security),
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
        started_at,
        state: m.state,
        context: m.context,
        snapshot,
        max_turns: rc.max_turns,
    };
    loops::iterate(&rc.writer_ctx()?, ran.bead, &args)
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
        .or_else(|| result_file_confidence(ran))
        .filter(|c| c.is_finite() && (0.0..=1.0).contains(c))
}

/// The result file's `confidence` when it gave no response to carry it (`{"confidence": 0.4}`
/// alone), or when the response came from elsewhere (a stream-json `result` event). The file
/// is this dispatch's: the dispatch removed any stale one before it started.
fn result_file_confidence(ran: &Ran) -> Option<f64> {
    let rc = ran.rc;
    let paths = DispatchPaths::new(
        &rc.store.runs_dir(),
        &rc.run_id,
        ran.bead,
        &ran.step.name,
        ran.attempt,
    )
    .ok()?;
    let text = std::fs::read_to_string(&paths.result_file).ok()?;
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()?
        .get("confidence")?
        .as_f64()
}

fn tests_stages(spec: &LoopSpec, step: &Step) -> Vec<TestsStage> {
    spec.stages
        .iter()
        .filter_map(|s| match s {
            Stage::Tests {
                argv,
                junit,
                timeout_s,
            } => Some(TestsStage {
                argv: argv.clone(),
                junit: junit.clone(),
                timeout: stage_timeout(*timeout_s, step),
            }),
            _ => None,
        })
        .collect()
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

/// The context a loop step's next dispatch gets: a markdown section appended to a prompt step's
/// prompt, and the same with the data as JSON in the file `SPLICE_LOOP_CONTEXT` names. `None`
/// before the first iteration.
pub fn context(bead: &Bead, limit: u32) -> Option<(String, serde_json::Value)> {
    let its = current(bead);
    let latest = *its.last()?;
    let scores: Vec<String> = its
        .iter()
        .map(|i| match i.score {
            Some(s) => format!("{}: {s}", i.state.iteration),
            None => format!("{}: stage failed", i.state.iteration),
        })
        .collect();
    let s = &latest.state;
    let c = &latest.context;
    let mut md = format!(
        "\n\n## Loop: iteration {} of at most {limit} on {}\n\nKeep to the task above: this \
         step runs again until its checks pass.\n\nScore history (iteration: score): {}\n",
        s.iteration + 1,
        latest.step,
        scores.join(", ")
    );
    if s.stage_failed {
        md.push_str("\nThe last iteration did not complete its checks.\n");
    } else {
        md.push_str(&format!(
            "\nLast iteration ({}): tests {} passed, {} failed, {} errored; acceptance {} \
             passed, {} failed, {} errored; lint high {}, medium {}; security critical {}, high \
             {}.\n",
            s.iteration,
            s.tests.passed,
            s.tests.failed,
            s.tests.errored,
            s.acceptance.passed,
            s.acceptance.failed,
            s.acceptance.errored,
            s.lint.high,
            s.lint.medium,
            s.security.critical,
            s.security.high
        ));
    }
    let list = |title: &str, items: &[String], md: &mut String| {
        if !items.is_empty() {
            md.push_str(&format!("\n{title}:\n"));
            for i in items {
                md.push_str(&format!("- {i}\n"));
            }
        }
    };
    if let Some(f) = &c.stage_failure {
        md.push_str(&format!(
            "\nStage `{}` failed: {}\n```\n{}\n```\n",
            f.stage, f.reason, f.output_tail
        ));
    }
    list("Failing tests", &c.failing_tests, &mut md);
    let acceptance: Vec<String> = c
        .acceptance
        .iter()
        .map(|a| format!("{} ({}): {}", a.id, a.outcome, a.reason))
        .collect();
    list("Acceptance facts not passing", &acceptance, &mut md);
    let findings: Vec<String> = c
        .findings
        .iter()
        .map(|f| {
            format!(
                "[{} {}] {} {}: {}",
                f.stage,
                f.severity,
                f.rule.as_deref().unwrap_or("-"),
                f.location.as_deref().unwrap_or(""),
                f.message.as_deref().unwrap_or("")
            )
        })
        .collect();
    list("Findings", &findings, &mut md);
    list("Changed files", &c.changed_files, &mut md);
    list("Incomplete verifications", &c.incomplete, &mut md);
    for it in &its {
        if let Some(e) = &it.effect {
            md.push_str(&format!(
                "\nAfter iteration {}: {}\n",
                it.state.iteration,
                effect_advice(e)
            ));
        }
    }
    let data = json!({
        "iteration": s.iteration + 1,
        "max_iterations": limit,
        "scores": its.iter().map(|i| json!({"iteration": i.state.iteration, "score": i.score})).collect::<Vec<_>>(),
        "last": latest.state,
        "context": latest.context,
        "effects": its.iter().filter_map(|i| i.effect.as_ref().map(|e| json!({"iteration": i.state.iteration, "effect": e}))).collect::<Vec<_>>(),
    });
    Some((md, data))
}

/// What an effect tells the next iteration.
fn effect_advice(effect: &Effect) -> String {
    match effect {
        Effect::Escalated { rule, .. } | Effect::Recovery { rule, .. } => format!(
            "your changes repeat themselves ({rule}): the same change was proposed before. \
             Do not propose it again; find another approach."
        ),
        Effect::RolledBack { restored, .. } => format!(
            "the work regressed below the first iteration, so the worktree was rolled back to \
             iteration {restored}, the best so far. Build on it."
        ),
        Effect::SteppedBack { root_cause, .. } => format!(
            "the scores stopped rising; an analysis of the plateau found this root cause: \
             {root_cause}"
        ),
        Effect::Guided { text, .. } => format!("a person's guidance: {text}"),
    }
}

/// The command a node's dispatch runs: its escalation's once it escalated, else the config's.
pub fn agent_command(rc: &RunCtx, bead: &Bead, step: &str) -> Vec<String> {
    match &bead.pipeline.escalation {
        Some(e) => e.command.clone(),
        None => rc.config.agent.command_for(step),
    }
}

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
        analyse(rc, &bead, &step, &spec, iteration, reason, &path)
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
    iteration: u32,
    reason: &str,
    path: &Path,
) -> Result<(String, u64, f64)> {
    let limit = step.dispatch_limit(rc.max_turns);
    let (section, data) = context(bead, limit).unwrap_or_default();
    let paths = DispatchPaths::new(
        &rc.store.runs_dir(),
        &rc.run_id,
        &bead.id,
        &format!("{}-step-back", step.name),
        iteration,
    )?;
    std::fs::create_dir_all(&paths.run_dir).map_err(|e| Error::io(&paths.run_dir, e))?;
    let context_file = paths.run_dir.join(format!(
        "{}-{}-step-back-{iteration}.context.json",
        bead.id, step.name
    ));
    crate::store::atomic::replace_file(
        &context_file,
        &serde_json::to_vec_pretty(&data).unwrap_or_default(),
    )?;
    // An argv step's analysis runs its own argv, which takes no prompt: only the agent's
    // command (a prompt step's, or an escalated node's) reads the step-back template.
    let own_argv = match &step.run {
        Some(Run::Argv { argv }) if bead.pipeline.escalation.is_none() => Some(argv),
        _ => None,
    };
    let prompt = match own_argv {
        Some(_) => section.trim_start().to_string(),
        None => {
            let template_text = super::prompts::template(&rc.store, &spec.step_back_prompt)?;
            render_step_back(&template_text, bead, &step.name, reason)? + &section
        }
    };
    let vars = template::ArgvVars {
        bead: &bead.id,
        step: &step.name,
        attempt: iteration,
        worktree: path,
        holder: &rc.holder,
        run: &rc.run_id,
        model: rc.config.agent.model_for(&step.name),
    };
    let argv = match own_argv {
        Some(argv) => template::command_argv(argv, &vars, None, &paths.prompt_file)?,
        None => template::command_argv(
            &agent_command(rc, bead, &step.name),
            &vars,
            Some(&prompt),
            &paths.prompt_file,
        )?,
    };
    std::fs::write(&paths.prompt_file, &prompt).map_err(|e| Error::io(&paths.prompt_file, e))?;
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let ds = DispatchSpec {
        timeout: Some(Duration::from_secs(step.timeout_s.max(1))),
        usage: exec::usage::Adapter::from(rc.config.agent.usage),
        prices: &rc.config.prices,
        cancel: Some(&cancel),
        env: vec![
            ("SPLICE_STEP_BACK".into(), "1".into()),
            ("SPLICE_ITERATION".into(), iteration.to_string()),
            (
                "SPLICE_LOOP_CONTEXT".into(),
                context_file.display().to_string(),
            ),
        ],
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
    // The analysis may not change the work: whatever it leaves in the worktree is reset to
    // the commit it started from (committed or not).
    let head = worktree::head(path)?;
    let result = exec::dispatch(&ds);
    worktree::reset_hard_clean(path, &head)?;
    let result = result?;
    let from_file = std::fs::read_to_string(&paths.result_file)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| {
            v.get("root_cause")
                .and_then(|r| r.as_str())
                .map(str::to_string)
        });
    let root_cause = from_file
        .or_else(|| result.response.as_ref().map(|r| r.text.clone()))
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| {
            format!(
                "the analysis gave no root cause ({})",
                result
                    .cause
                    .clone()
                    .unwrap_or_else(|| format!("{:?}", result.exit))
            )
        });
    let root_cause: String = root_cause.chars().take(2000).collect();
    let tokens = result
        .usage
        .as_ref()
        .map_or(0, crate::model::Usage::budget_tokens);
    let cost = result
        .usage
        .as_ref()
        .and_then(|u| u.cost_usd)
        .filter(|c| c.is_finite() && *c >= 0.0)
        .unwrap_or(0.0);
    Ok((root_cause, tokens, cost))
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

    #[test]
    fn the_next_iteration_context_carries_scores_failures_and_effects() {
        use crate::model::trajectory::{IterationState, Outcomes, RevisionContext};
        let mut bead = Bead::new("sp-1".into(), "t".into(), String::new(), "now");
        bead.pipeline.step = "work".into();
        assert!(context(&bead, 5).is_none(), "nothing before iteration 1");
        let state = |n, failed| IterationState {
            iteration: n,
            tests: Outcomes {
                passed: 2,
                failed,
                errored: 0,
            },
            change_hash: format!("h{n}"),
            ..IterationState::default()
        };
        let entry = |n, score, effect| Iteration {
            step: "work".into(),
            seq: u64::from(n) + 1,
            attempt: n,
            started_at: "now".into(),
            at: "now".into(),
            state: state(n, 1),
            score: Some(score),
            monitor: serde_json::Value::Null,
            context: RevisionContext {
                failing_tests: vec![format!("t{n}")],
                changed_files: vec!["src/a.rs".into()],
                ..RevisionContext::default()
            },
            snapshot: None,
            effect,
        };
        let rolled = Effect::RolledBack {
            restored: 1,
            snapshot: "refs/splice/snapshots/sp-1/1".into(),
        };
        bead.pipeline.trajectory = vec![entry(1, 12, None), entry(2, 4, Some(rolled))];
        let (md, data) = context(&bead, 5).unwrap();
        assert!(md.contains("iteration 3 of at most 5 on work"), "{md}");
        assert!(md.contains("1: 12, 2: 4"), "{md}");
        assert!(
            md.contains("- t2") && !md.contains("- t1"),
            "the last failures: {md}"
        );
        assert!(md.contains("- src/a.rs"), "{md}");
        assert!(md.contains("rolled back to iteration 1"), "{md}");
        assert_eq!(data["iteration"], 3);
        assert_eq!(data["scores"][1]["score"], 4);
        assert_eq!(data["context"]["failing_tests"][0], "t2");
        assert_eq!(data["effects"][0]["effect"]["effect"], "rolled_back");
    }
}
