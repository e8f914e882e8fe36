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
    StageReport,
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
    /// What the command gave at the step's base, when this stage compares with it: tests
    /// failing there too are reported (`known_failures`), not counted.
    pub baseline: Option<Baseline>,
}

/// A tests stage's command at the step's base commit (issue 34): the tests failing there, and
/// why the whole command failed there, if it did. Derived, kept by the runner between
/// iterations (`driver::looping::baseline`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// Sorted, unique.
    pub failing: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite_failed: Option<String>,
}

/// Run a tests stage at the step's base (the worktree before the agent's first iteration):
/// what [`TestsStage::baseline`] then holds.
pub fn baseline(
    stage: &TestsStage,
    dir: &Path,
    bead_id: &str,
    confined: Option<&crate::floors::confine::Confined>,
) -> Baseline {
    stages::baseline_of(stage, dir, &[("SPLICE_BEAD", bead_id)], confined)
}

/// The built-in analyzers stage: the languages present, and each tool's time bound.
#[derive(Clone, Debug, PartialEq)]
pub struct AnalyzersStage {
    pub languages: std::collections::BTreeSet<crate::policy::verification::Language>,
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
    /// The built-in analyzers, when the loop has an `analyzers` stage.
    pub analyzers: Option<AnalyzersStage>,
    /// Verifications known to be incomplete before anything runs (no test command detected, a
    /// baseline that could not be read), one line each: each counts as incomplete.
    pub notes: Vec<StageReport>,
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
    for note in &input.notes {
        incomplete += 1;
        context
            .incomplete
            .push(format!("{}: {}", note.stage, note.found));
        context.stages.push(note.clone());
    }
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
            context.stages.push(report(
                "tests",
                &failure.reason,
                "stage-failed",
                failure.reason.clone(),
            ));
            context.stage_failure = Some(failure);
            let state = IterationState {
                stage_failed: true,
                ..usage
            };
            return Ok(Measurement { state, context });
        }
    };
    let acceptance = stages::run_acceptance(input, dir, &env, &mut context);
    if !input.acceptance.is_empty() {
        let bad = acceptance.failed + acceptance.errored;
        context.stages.push(report(
            "acceptance",
            &format!("{} fact(s)", input.acceptance.len()),
            if bad > 0 { "failed" } else { "passed" },
            counts(&acceptance),
        ));
    }
    let mut lint = sarif_stages(
        "lint",
        &input.lint,
        (dir, &env, confined),
        &mut context,
        &mut incomplete,
    );
    let mut security = sarif_stages(
        "security",
        &input.security,
        (dir, &env, confined),
        &mut context,
        &mut incomplete,
    );
    if let Some(stage) = &input.analyzers {
        analyzer_stage(
            stage,
            (dir, &env, confined),
            (&mut lint, &mut security),
            &mut context,
            &mut incomplete,
        );
    }
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
        let tool = stage.argv.join(" ");
        let known_before = context.known_failures.len();
        match stages::run_tests(stage, dir, env, confined, context) {
            stages::TestsRun::Counted(o, missing) => {
                add(&mut tests, o);
                let mut found = counts(&o);
                let known = context.known_failures.len() - known_before;
                if known > 0 {
                    found.push_str(&format!(", {known} failing at the base too (not counted)"));
                }
                if let Some(why) = &missing {
                    found.push_str(&format!("; {why}"));
                }
                let status = match (o.failed + o.errored > 0, missing.is_some()) {
                    (true, _) => "failed",
                    (false, true) => "incomplete",
                    (false, false) => "passed",
                };
                context.stages.push(report("tests", &tool, status, found));
                if let Some(why) = missing {
                    *incomplete += 1;
                    context.incomplete.push(why);
                }
            }
            stages::TestsRun::Incomplete(why) => {
                *incomplete += 1;
                context
                    .stages
                    .push(report("tests", &tool, "incomplete", why.clone()));
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
        let tool = match source {
            SarifSource::File(f) => f.clone(),
            SarifSource::Argv { argv, .. } => argv.join(" "),
        };
        let read = stages::read_sarif(name, source, (dir, env, confined), context);
        record_findings(
            (name, &tool),
            read.findings,
            read.incomplete,
            (&mut total, context, incomplete),
        );
    }
    total
}

/// Add one tool's findings to the stage's total, with its report and its incompleteness.
fn record_findings(
    (stage, tool): (&str, &str),
    found: Findings,
    why_incomplete: Option<String>,
    (total, context, incomplete): (&mut Findings, &mut RevisionContext, &mut u64),
) {
    total.critical += found.critical;
    total.high += found.high;
    total.medium += found.medium;
    total.low += found.low;
    let mut words = findings_words(&found);
    let status = if found.blocking() {
        "failed"
    } else if why_incomplete.is_some() {
        "incomplete"
    } else {
        "passed"
    };
    if let Some(why) = why_incomplete {
        words = match found == Findings::default() {
            true => why.clone(),
            false => format!("{words}; {why}"),
        };
        *incomplete += 1;
        context.incomplete.push(why);
    }
    context.stages.push(report(stage, tool, status, words));
}

/// The built-in analyzers of the languages present, each counted as lint or security.
fn analyzer_stage(
    stage: &AnalyzersStage,
    (dir, env, confined): (
        &Path,
        &[(&str, &str)],
        Option<&crate::floors::confine::Confined>,
    ),
    (lint, security): (&mut Findings, &mut Findings),
    context: &mut RevisionContext,
    incomplete: &mut u64,
) {
    for analyzer in analyzers::analyzers_for(&stage.languages) {
        let ran = analyzers::run(&analyzer, dir, env, stage.timeout, confined);
        let (name, total) = match ran.counts_as {
            crate::model::manifest::SarifUse::Lint => ("lint", &mut *lint),
            crate::model::manifest::SarifUse::Security => ("security", &mut *security),
        };
        let found = stages::count_findings(name, &ran.findings, context);
        if let Some(why) = &ran.not_applicable {
            // An optional scanner that is not installed: reported, not incomplete.
            context
                .stages
                .push(report(name, &ran.name, "not-applicable", why.clone()));
            continue;
        }
        let why = ran.incomplete.map(|w| format!("{name} {}: {w}", ran.name));
        record_findings((name, &ran.name), found, why, (total, context, incomplete));
    }
}

fn report(stage: &str, tool: &str, status: &str, found: String) -> StageReport {
    StageReport {
        stage: stage.into(),
        tool: tool.into(),
        status: status.into(),
        found,
    }
}

fn counts(o: &Outcomes) -> String {
    let mut out = format!("{} passed, {} failed", o.passed, o.failed);
    if o.errored > 0 {
        out.push_str(&format!(", {} errored", o.errored));
    }
    out
}

fn findings_words(f: &Findings) -> String {
    let n = f.critical + f.high + f.medium + f.low;
    if n == 0 {
        return "no findings".into();
    }
    let parts: Vec<String> = [
        ("critical", f.critical),
        ("high", f.high),
        ("medium", f.medium),
        ("low", f.low),
    ]
    .iter()
    .filter(|(_, c)| *c > 0)
    .map(|(s, c)| format!("{c} {s}"))
    .collect();
    format!("{n} finding(s): {}", parts.join(", "))
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
