//! The verification stages of one iteration, each run through the floors' command runner and
//! read with the floors' parsers.

use std::path::Path;

use super::{
    AcceptanceMiss, Baseline, FindingNote, MAX_NAMES, MeasureInput, RevisionContext, SarifSource,
    StageFailure, TestsStage,
};
use crate::floors::confine::Confined;
use crate::floors::sarif::{self, Finding};
use crate::floors::test_results::{TestResult, parse_junit, parse_output};
use crate::floors::{OUTPUT_CAP, read_inside, run_in, tail};
use crate::model::trajectory::{Findings, Outcomes};
use crate::process::Exit;

/// How much of a command's output a failure keeps.
const TAIL_BYTES: usize = 2000;

/// What a tests stage gave.
pub(super) enum TestsRun {
    /// Results were read (and, when a declared JUnit file is missing, why that is incomplete).
    Counted(Outcomes, Option<String>),
    /// The command exited 0 and no result could be read.
    Incomplete(String),
    /// The stage could not complete.
    Failed(StageFailure),
}

fn failure(reason: String, output: &str) -> TestsRun {
    TestsRun::Failed(StageFailure {
        stage: "tests".into(),
        reason,
        output_tail: tail(output, TAIL_BYTES),
    })
}

/// What one run of a tests stage's command gave: its results, or why it could not complete.
struct Executed {
    cmd: String,
    results: crate::floors::test_results::Results,
    /// Why a declared JUnit file gave nothing.
    missing: Option<String>,
}

fn execute(
    stage: &TestsStage,
    dir: &Path,
    env: &[(&str, &str)],
    confined: Option<&Confined>,
) -> Result<Executed, TestsRun> {
    if stage.argv.is_empty() {
        return Err(failure("the tests stage declares no command".into(), ""));
    }
    let cmd = stage.argv.join(" ");
    let ran = match run_in(&stage.argv, dir, env, stage.timeout, OUTPUT_CAP, confined) {
        Ok(ran) => ran,
        Err(e) => return Err(failure(format!("cannot run `{cmd}`: {e}"), "")),
    };
    let output = ran.combined();
    let mut results = parse_output(&output);
    let mut missing = None;
    if let Some(rel) = &stage.junit {
        match read_inside(dir, rel) {
            Ok(xml) => results.tests.extend(parse_junit(&xml).tests),
            Err(e) => missing = Some(format!("tests `{cmd}`: no JUnit report: {e}")),
        }
    }
    let bad = results.count(TestResult::Failed) + results.count(TestResult::Errored);
    if bad == 0 {
        let ended = match &ran.ran.exit {
            Exit::Code(0) => None,
            Exit::Code(c) => Some(format!("exited {c} with no failing test read")),
            Exit::TimedOut => Some(format!("ran past {}s", stage.timeout.as_secs())),
            Exit::Signal(s) => Some(format!("was killed by signal {s}")),
            other => Some(format!("ended: {other:?}")),
        };
        if let Some(ended) = ended {
            return Err(failure(format!("`{cmd}` {ended}"), &output));
        }
        if results.count(TestResult::Passed) + results.count(TestResult::Skipped) == 0 {
            let why = missing.unwrap_or_else(|| format!("tests `{cmd}`: no test result read"));
            return Err(TestsRun::Incomplete(why));
        }
    }
    Ok(Executed {
        cmd,
        results,
        missing,
    })
}

/// Run a tests stage at the step's base: the tests failing there, or why the whole command
/// failed there (it could not start, or exited non-zero with no failing test read).
pub(super) fn baseline_of(
    stage: &TestsStage,
    dir: &Path,
    env: &[(&str, &str)],
    confined: Option<&Confined>,
) -> Baseline {
    match execute(stage, dir, env, confined) {
        Ok(done) => {
            let mut failing: Vec<String> = done
                .results
                .tests
                .into_iter()
                .filter(|(_, r)| matches!(r, TestResult::Failed | TestResult::Errored))
                .map(|(name, _)| name)
                .collect();
            failing.sort();
            failing.dedup();
            Baseline {
                failing,
                suite_failed: None,
            }
        }
        Err(TestsRun::Failed(f)) => Baseline {
            failing: Vec::new(),
            suite_failed: Some(f.reason),
        },
        Err(_) => Baseline::default(),
    }
}

pub(super) fn run_tests(
    stage: &TestsStage,
    dir: &Path,
    env: &[(&str, &str)],
    confined: Option<&Confined>,
    context: &mut RevisionContext,
) -> TestsRun {
    let done = match execute(stage, dir, env, confined) {
        Ok(done) => done,
        Err(TestsRun::Failed(f)) => {
            if let Some(then) = stage
                .baseline
                .as_ref()
                .and_then(|b| b.suite_failed.as_ref())
            {
                // Broken before the agent began: reported, not the agent's failure.
                return TestsRun::Incomplete(format!(
                    "tests: {}; it failed at the base too ({then}), so it is not counted",
                    f.reason
                ));
            }
            return TestsRun::Failed(f);
        }
        Err(other) => return other,
    };
    let known = |name: &str| {
        stage
            .baseline
            .as_ref()
            .is_some_and(|b| b.failing.binary_search_by(|n| n.as_str().cmp(name)).is_ok())
    };
    let mut outcomes = Outcomes::default();
    for (name, result) in &done.results.tests {
        let counted = match result {
            TestResult::Passed => &mut outcomes.passed,
            TestResult::Failed | TestResult::Errored if known(name) => {
                if context.known_failures.len() < MAX_NAMES {
                    context.known_failures.push(name.clone());
                }
                continue;
            }
            TestResult::Failed => &mut outcomes.failed,
            TestResult::Errored => &mut outcomes.errored,
            TestResult::Skipped => continue,
        };
        *counted += 1;
    }
    for r in [TestResult::Failed, TestResult::Errored] {
        for name in done.results.names(r) {
            if !known(name) && context.failing_tests.len() < MAX_NAMES {
                context.failing_tests.push(name.to_string());
            }
        }
    }
    let _ = &done.cmd;
    TestsRun::Counted(outcomes, done.missing)
}

pub(super) fn run_acceptance(
    input: &MeasureInput,
    dir: &Path,
    env: &[(&str, &str)],
    context: &mut RevisionContext,
) -> Outcomes {
    let mut out = Outcomes::default();
    for fact in &input.acceptance {
        let miss = |outcome: &str, reason: String| AcceptanceMiss {
            id: fact.id.clone(),
            outcome: outcome.into(),
            reason,
        };
        let cmd = fact.argv.join(" ");
        let missed = if fact.argv.is_empty() {
            out.errored += 1;
            Some(miss("errored", "no command".into()))
        } else {
            match run_in(
                &fact.argv,
                dir,
                env,
                input.acceptance_timeout,
                OUTPUT_CAP,
                input.confined.as_deref(),
            ) {
                Err(e) => {
                    out.errored += 1;
                    Some(miss("errored", format!("cannot run `{cmd}`: {e}")))
                }
                Ok(ran) if ran.timed_out() => {
                    out.errored += 1;
                    let secs = input.acceptance_timeout.as_secs();
                    Some(miss("errored", format!("`{cmd}` ran past {secs}s")))
                }
                Ok(ran) if ran.code() == Some(0) => {
                    out.passed += 1;
                    None
                }
                Ok(ran) => {
                    out.failed += 1;
                    let how = ran
                        .code()
                        .map_or_else(|| format!("{:?}", ran.ran.exit), |c| format!("exited {c}"));
                    let text = tail(&ran.combined(), 500);
                    Some(miss("failed", format!("`{cmd}` {how}: {text}")))
                }
            }
        };
        if let Some(m) = missed
            && context.acceptance.len() < MAX_NAMES
        {
            context.acceptance.push(m);
        }
    }
    out
}

/// A SARIF stage's findings and, when incomplete, why.
pub(super) struct SarifRead {
    pub findings: Findings,
    pub incomplete: Option<String>,
}

/// The four-level severity of a finding: its `security-severity` bucket when it has one, else
/// its level (error → high, warning → medium, note → low; `none` is not counted).
pub(super) fn severity(f: &Finding) -> Option<&'static str> {
    f.security.or(match f.level {
        "error" => Some("high"),
        "warning" => Some("medium"),
        "note" => Some("low"),
        _ => None,
    })
}

fn report(
    source: &SarifSource,
    (dir, env, confined): (&Path, &[(&str, &str)], Option<&Confined>),
) -> Result<String, String> {
    match source {
        SarifSource::File(rel) => read_inside(dir, rel).map_err(|e| format!("no report: {e}")),
        SarifSource::Argv { argv, timeout } => {
            let cmd = argv.join(" ");
            match run_in(argv, dir, env, *timeout, OUTPUT_CAP, confined) {
                Ok(ran) if ran.timed_out() => {
                    Err(format!("`{cmd}` ran past {}s", timeout.as_secs()))
                }
                // Linters exit non-zero when they find something: the exit is not the verdict.
                Ok(ran) => Ok(ran.stdout),
                Err(e) => Err(format!("cannot run `{cmd}`: {e}")),
            }
        }
    }
}

pub(super) fn read_sarif(
    stage: &str,
    source: &SarifSource,
    (dir, env, confined): (&Path, &[(&str, &str)], Option<&Confined>),
    context: &mut RevisionContext,
) -> SarifRead {
    let mut findings = Findings::default();
    let log = match report(source, (dir, env, confined)).and_then(|t| sarif::read_log(&t)) {
        Ok(log) => log,
        Err(e) => {
            return SarifRead {
                findings,
                incomplete: Some(format!("{stage}: {e}")),
            };
        }
    };
    findings = count_findings(stage, &log.findings, context);
    let incomplete = log
        .incomplete
        .then(|| format!("{stage}: the SARIF log says its tool did not finish"));
    SarifRead {
        findings,
        incomplete,
    }
}

/// Count `found` by severity and note each for the next prompt, as `stage` (lint or security).
pub(super) fn count_findings(
    stage: &str,
    found: &[Finding],
    context: &mut RevisionContext,
) -> Findings {
    let mut findings = Findings::default();
    for f in found {
        let Some(sev) = severity(f) else { continue };
        match sev {
            "critical" => findings.critical += 1,
            "high" => findings.high += 1,
            "medium" => findings.medium += 1,
            _ => findings.low += 1,
        }
        context.findings.push(FindingNote {
            stage: stage.into(),
            severity: sev.into(),
            rule: f.rule.clone(),
            location: f.location.clone(),
            message: f.message.clone(),
        });
    }
    findings
}
