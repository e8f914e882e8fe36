//! Measuring one iteration of a loop step (issue 13, "Each iteration"; `docs/monitor.md`,
//! "Measuring an iteration"): after the dispatch exits, the verification stages run in the
//! node's worktree and the [`IterationState`] the monitor judges is built, with the
//! [`RevisionContext`] the next dispatch's prompt carries.
//!
//! The stages reuse the floors' readers ([`super::test_results`], [`super::sarif`]) and their
//! one command runner ([`super::run_command`]); the diff facts are [`change`]'s. Nothing here
//! writes state: the loop runtime (not built yet) appends the state through the writer.

pub mod analyzers;
pub mod change;
mod stages;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::model::bead::Acceptance;
pub use crate::model::trajectory::{
    AcceptanceMiss, FindingNote, MAX_FINDINGS, MAX_NAMES, RevisionContext, StageFailure,
};
use crate::model::trajectory::{Findings, IterationState, Outcomes};

pub use change::{Change, change_hash, measure_change};

/// A `tests` stage: the command, and the JUnit file it writes (relative to the worktree), if
/// any. libtest lines (`test name ... ok`) in its output are read too.
#[derive(Clone, Debug, PartialEq)]
pub struct TestsStage {
    pub argv: Vec<String>,
    pub junit: Option<String>,
    pub timeout: Duration,
}

/// Where a `sarif` stage's report comes from: a file in the worktree, or a tool's stdout.
#[derive(Clone, Debug, PartialEq)]
pub enum SarifSource {
    File(String),
    Argv {
        argv: Vec<String>,
        timeout: Duration,
    },
}

/// Everything one measurement needs.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasureInput {
    /// The node's worktree: the stages run there, the change is its `HEAD`.
    pub worktree: PathBuf,
    /// The step's base commit (the `base` recorded at claim).
    pub base: String,
    /// 1-based number of this iteration.
    pub iteration: u32,
    /// Set as `SPLICE_BEAD` for every command, as floors do.
    pub bead_id: String,
    pub tests: Vec<TestsStage>,
    /// The bead's acceptance facts (`pipeline.acceptance`), each run with `acceptance_timeout`.
    pub acceptance: Vec<Acceptance>,
    pub acceptance_timeout: Duration,
    pub lint: Vec<SarifSource>,
    pub security: Vec<SarifSource>,
    /// The agent's confidence, 0..1 (`propose --confidence`, or the result file's); a value
    /// outside 0..1 is an error.
    pub confidence: Option<f64>,
    pub tokens: u64,
    pub cost_usd: f64,
    /// The sandbox the stages run in (`floors::confine`): they run what the agent wrote.
    /// `None`: unconfined (no sandbox here, or it is switched off).
    pub confined: Option<std::sync::Arc<crate::floors::confine::Confined>>,
}

/// One measured iteration: the state for the trajectory and the context for the next prompt.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    pub state: IterationState,
    pub context: RevisionContext,
}

/// Measure one iteration: the change against the base, then the tests, the acceptance facts,
/// lint and security. A test stage that cannot complete (its command cannot start, times out,
/// is killed, or exits non-zero with no failing test read) ends the measurement: the state is
/// `stage_failed` (usage kept, nothing measured) and the failure is in the context. `Err` is a
/// git problem (no repository, an unknown base), a confidence outside 0..1 or a negative cost:
/// nothing about the agent's work.
pub fn measure(input: &MeasureInput) -> Result<Measurement, String> {
    let change = measure_change(&input.worktree, &input.base)?;
    let mut context = RevisionContext {
        changed_files: change.files.clone(),
        ..RevisionContext::default()
    };
    let usage = IterationState {
        iteration: input.iteration,
        tokens: input.tokens,
        cost_usd: input.cost_usd,
        ..IterationState::default()
    };
    if let Some(c) = input.confidence
        && !(c.is_finite() && (0.0..=1.0).contains(&c))
    {
        return Err(format!("the agent's confidence {c} is outside 0..1"));
    }
    if !(input.cost_usd.is_finite() && input.cost_usd >= 0.0) {
        return Err(format!("the cost {} is not a number ≥ 0", input.cost_usd));
    }
    let dir = input.worktree.as_path();
    let env = [("SPLICE_BEAD", input.bead_id.as_str())];
    let mut incomplete = 0u64;
    let confined = input.confined.as_deref();
    let tests = match test_stages(
        &input.tests,
        dir,
        &env,
        confined,
        &mut context,
        &mut incomplete,
    ) {
        Ok(tests) => tests,
        Err(failure) => {
            context.stage_failure = Some(failure);
            let state = IterationState {
                stage_failed: true,
                ..usage
            };
            return Ok(Measurement { state, context });
        }
    };
    let acceptance = stages::run_acceptance(input, dir, &env, &mut context);
    let lint = sarif_stages(
        "lint",
        &input.lint,
        (dir, &env, confined),
        &mut context,
        &mut incomplete,
    );
    let security = sarif_stages(
        "security",
        &input.security,
        (dir, &env, confined),
        &mut context,
        &mut incomplete,
    );
    sort_findings(&mut context.findings);
    Ok(Measurement {
        state: IterationState {
            tests,
            acceptance,
            lint,
            security,
            confidence: input.confidence,
            changed_paths: change.changed_paths,
            lines_added: change.lines_added,
            lines_removed: change.lines_removed,
            code_size_bytes: change.code_size_bytes,
            incomplete_verifications: incomplete,
            change_hash: change.hash,
            ..usage
        },
        context,
    })
}

/// Every tests stage in order; the first that cannot complete ends them.
fn test_stages(
    stages: &[TestsStage],
    dir: &Path,
    env: &[(&str, &str)],
    confined: Option<&crate::floors::confine::Confined>,
    context: &mut RevisionContext,
    incomplete: &mut u64,
) -> Result<Outcomes, StageFailure> {
    let mut tests = Outcomes::default();
    for stage in stages {
        match stages::run_tests(stage, dir, env, confined, context) {
            stages::TestsRun::Counted(o, missing) => {
                add(&mut tests, o);
                if let Some(why) = missing {
                    *incomplete += 1;
                    context.incomplete.push(why);
                }
            }
            stages::TestsRun::Incomplete(why) => {
                *incomplete += 1;
                context.incomplete.push(why);
            }
            stages::TestsRun::Failed(failure) => return Err(failure),
        }
    }
    Ok(tests)
}

fn add(total: &mut Outcomes, o: Outcomes) {
    total.passed += o.passed;
    total.failed += o.failed;
    total.errored += o.errored;
}

fn sarif_stages(
    name: &str,
    sources: &[SarifSource],
    (dir, env, confined): (
        &Path,
        &[(&str, &str)],
        Option<&crate::floors::confine::Confined>,
    ),
    context: &mut RevisionContext,
    incomplete: &mut u64,
) -> Findings {
    let mut total = Findings::default();
    for source in sources {
        let read = stages::read_sarif(name, source, (dir, env, confined), context);
        if let Some(why) = read.incomplete {
            *incomplete += 1;
            context.incomplete.push(why);
        }
        total.critical += read.findings.critical;
        total.high += read.findings.high;
        total.medium += read.findings.medium;
        total.low += read.findings.low;
    }
    total
}

/// Keep the most severe findings when the list is cut: critical, high, medium, low; stable.
fn sort_findings(findings: &mut Vec<FindingNote>) {
    let rank = |s: &str| match s {
        "critical" => 0,
        "high" => 1,
        "medium" => 2,
        _ => 3,
    };
    findings.sort_by_key(|f| rank(&f.severity));
    findings.truncate(MAX_FINDINGS);
}
