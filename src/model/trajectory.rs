//! A loop step's trajectory (issue 13, seed 000 "Trajectory state"): one measured state per
//! iteration, the loop's settings and score weights, and the replay file `splice monitor`
//! reads. The monitor itself is pure policy (`crate::policy::monitor`); the format is
//! documented in `docs/monitor.md`.

use serde::{Deserialize, Serialize};

/// The trajectory file's shape (`{"schema_version", "settings", "budget", "trajectory"}`).
pub const TRAJECTORY_SCHEMA: u32 = 1;
/// The monitor decision's shape, as `splice monitor` prints it.
pub const MONITOR_SCHEMA: u32 = 1;

/// Findings by severity (SARIF lint or security findings, mapped to four levels).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Findings {
    /// Critical findings.
    pub critical: u64,
    /// High findings.
    pub high: u64,
    /// Medium findings.
    pub medium: u64,
    /// Low findings.
    pub low: u64,
}

impl Findings {
    /// A high or critical finding blocks success.
    pub fn blocking(&self) -> bool {
        self.critical > 0 || self.high > 0
    }
}

/// Passed, failed and errored counts of tests or acceptance facts.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Outcomes {
    /// How many passed.
    pub passed: u64,
    /// How many failed.
    pub failed: u64,
    /// How many errored (could not run to a result).
    pub errored: u64,
}

/// What one iteration of a loop step measured. An iteration whose stage failed before it
/// completed (`stage_failed`) counts towards the iteration limit and the budget, but carries
/// no measured state: the score, hash and confidence rules skip it.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IterationState {
    /// 1-based; the file's entries are numbered 1, 2, 3… in order.
    pub iteration: u32,
    /// A stage failed before the iteration completed: nothing below was measured.
    #[serde(default)]
    pub stage_failed: bool,
    /// The tests' outcomes.
    #[serde(default)]
    pub tests: Outcomes,
    /// The acceptance facts' outcomes.
    #[serde(default)]
    pub acceptance: Outcomes,
    /// Lint findings.
    #[serde(default)]
    pub lint: Findings,
    /// Security findings.
    #[serde(default)]
    pub security: Findings,
    /// The agent's confidence, 0..1; absent when it gave none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Tokens the iteration's dispatch used.
    #[serde(default)]
    pub tokens: u64,
    /// What the iteration's dispatch cost, in USD.
    #[serde(default)]
    pub cost_usd: f64,
    /// How many paths the change touched.
    #[serde(default)]
    pub changed_paths: u64,
    /// Lines the change added.
    #[serde(default)]
    pub lines_added: u64,
    /// Lines the change removed.
    #[serde(default)]
    pub lines_removed: u64,
    /// Bytes of the proposed files' content (deletions excluded).
    #[serde(default)]
    pub code_size_bytes: u64,
    /// Verification stages that could not finish (recorded, not a failure).
    #[serde(default)]
    pub incomplete_verifications: u64,
    /// A stable hash of the proposed change (sorted (path, content) entries of the diff), lowercase
    /// hex; required unless `stage_failed`.
    #[serde(default)]
    pub change_hash: String,
}

impl IterationState {
    /// Seed 000 "Pass success": it completed, no test or acceptance fact failed or errored, and
    /// no lint or security finding is high or critical. Incomplete verification does not count.
    pub fn succeeded(&self) -> bool {
        !self.stage_failed
            && self.tests.failed == 0
            && self.tests.errored == 0
            && self.acceptance.failed == 0
            && self.acceptance.errored == 0
            && !self.lint.blocking()
            && !self.security.blocking()
    }
}

/// Score weights: integers, so two scores compare exactly (no rounding). Defaults are the
/// issue's (seed 000's plus acceptance errored, which the upstream counts as failed).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Weights {
    /// Per passed test.
    pub tests_passed: i64,
    /// Per failed test.
    pub tests_failed: i64,
    /// Per errored test.
    pub tests_errored: i64,
    /// Per passed acceptance fact.
    pub acceptance_passed: i64,
    /// Per failed acceptance fact.
    pub acceptance_failed: i64,
    /// Per errored acceptance fact.
    pub acceptance_errored: i64,
    /// Per critical lint finding.
    pub lint_critical: i64,
    /// Per high lint finding.
    pub lint_high: i64,
    /// Per medium lint finding.
    pub lint_medium: i64,
    /// Per low lint finding.
    pub lint_low: i64,
    /// Per critical security finding.
    pub security_critical: i64,
    /// Per high security finding.
    pub security_high: i64,
    /// Per medium security finding.
    pub security_medium: i64,
    /// Per low security finding.
    pub security_low: i64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            tests_passed: 10,
            tests_failed: -8,
            tests_errored: -12,
            acceptance_passed: 10,
            acceptance_failed: -12,
            acceptance_errored: -12,
            lint_critical: 0,
            lint_high: -3,
            lint_medium: -1,
            lint_low: 0,
            security_critical: -50,
            security_high: -20,
            security_medium: 0,
            security_low: 0,
        }
    }
}

fn default_max_iterations() -> u32 {
    5
}

/// A loop step's limits and weights.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LoopSettings {
    /// The most iterations before the loop stops.
    #[serde(default = "default_max_iterations")]
    pub max_iterations: u32,
    /// The most tokens the loop may spend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    /// The most the loop may cost, in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_budget_usd: Option<f64>,
    /// The score weights.
    #[serde(default)]
    pub weights: Weights,
}

impl Default for LoopSettings {
    fn default() -> Self {
        LoopSettings {
            max_iterations: default_max_iterations(),
            token_budget: None,
            cost_budget_usd: None,
            weights: Weights::default(),
        }
    }
}

/// What the loop step spent outside its iterations' own records: step-back analyses (which
/// cost no iteration) and usage recorded before the first iteration. The budget rule adds the
/// trajectory's own tokens and cost to these.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Spent {
    /// Tokens spent.
    pub tokens: u64,
    /// Cost spent, in USD.
    pub cost_usd: f64,
}

/// Everything the monitor decides from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MonitorInput {
    /// The step's limits and weights.
    pub settings: LoopSettings,
    /// What was spent outside the iterations.
    pub spent: Spent,
    /// The iterations judged, in order.
    pub trajectory: Vec<IterationState>,
}

/// The replay file of `splice monitor --trajectory FILE`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TrajectoryFile {
    /// The file's shape ([`TRAJECTORY_SCHEMA`]).
    pub schema_version: u32,
    /// The loop's limits and weights.
    #[serde(default)]
    pub settings: LoopSettings,
    /// What was spent outside the iterations.
    #[serde(default)]
    pub budget: Spent,
    /// The iterations, in order.
    pub trajectory: Vec<IterationState>,
}

impl TrajectoryFile {
    /// Parse and check; an error names the JSON path (`trajectory[2].confidence: …`).
    pub fn parse(text: &str) -> Result<MonitorInput, String> {
        let mut de = serde_json::Deserializer::from_str(text);
        let file: TrajectoryFile = super::deserialize_at(&mut de)?;
        de.end().map_err(|e| format!("after the object: {e}"))?;
        file.check()?;
        Ok(MonitorInput {
            settings: file.settings,
            spent: file.budget,
            trajectory: file.trajectory,
        })
    }

    fn check(&self) -> Result<(), String> {
        if self.schema_version != TRAJECTORY_SCHEMA {
            return Err(format!(
                "schema_version: {} is not a trajectory schema this splice reads (expected {TRAJECTORY_SCHEMA})",
                self.schema_version
            ));
        }
        if self.settings.max_iterations == 0 {
            return Err("settings.max_iterations: must be at least 1".into());
        }
        if let Some(c) = self.settings.cost_budget_usd {
            non_negative("settings.cost_budget_usd", c)?;
        }
        non_negative("budget.cost_usd", self.budget.cost_usd)?;
        if self.trajectory.is_empty() {
            return Err("trajectory: must hold at least one iteration".into());
        }
        for (i, s) in self.trajectory.iter().enumerate() {
            check_state(i, s)?;
        }
        Ok(())
    }
}

fn non_negative(path: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(format!("{path}: {v} must be a finite number ≥ 0"))
    }
}

fn check_state(i: usize, s: &IterationState) -> Result<(), String> {
    let at = format!("trajectory[{i}]");
    if u64::from(s.iteration) != i as u64 + 1 {
        return Err(format!(
            "{at}.iteration: {} is out of order (expected {}: iterations are numbered 1, 2, 3…)",
            s.iteration,
            i + 1
        ));
    }
    if let Some(c) = s.confidence
        && !(c.is_finite() && (0.0..=1.0).contains(&c))
    {
        return Err(format!("{at}.confidence: {c} is outside 0..1"));
    }
    non_negative(&format!("{at}.cost_usd"), s.cost_usd)?;
    if !s.stage_failed && s.change_hash.trim().is_empty() {
        return Err(format!(
            "{at}.change_hash: a completed iteration needs the hash of its change"
        ));
    }
    Ok(())
}

/// A stage that failed before the iteration completed.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct StageFailure {
    /// `tests`.
    pub stage: String,
    /// Why it failed.
    pub reason: String,
    /// The end of the command's output, when it ran.
    pub output_tail: String,
}

/// An acceptance fact that did not pass.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct AcceptanceMiss {
    /// The fact's id.
    pub id: String,
    /// `failed` (ran, wrong exit) or `errored` (could not start, or timed out).
    pub outcome: String,
    /// Why it did not pass.
    pub reason: String,
}

/// A lint or security finding, for the next prompt.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FindingNote {
    /// `lint` or `security`.
    pub stage: String,
    /// critical, high, medium or low.
    pub severity: String,
    /// The analyzer's rule id.
    pub rule: Option<String>,
    /// Where, as the analyzer names it (file and line).
    pub location: Option<String>,
    /// The analyzer's message.
    pub message: Option<String>,
}

/// What the next dispatch's prompt carries besides the scores (bounded lists).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct RevisionContext {
    /// The stage that failed before the iteration completed, if one did.
    pub stage_failure: Option<StageFailure>,
    /// Failed, then errored test names (at most [`MAX_NAMES`]).
    pub failing_tests: Vec<String>,
    /// The acceptance facts that did not pass (at most [`MAX_NAMES`]).
    pub acceptance: Vec<AcceptanceMiss>,
    /// High and critical findings first (at most [`MAX_FINDINGS`]).
    pub findings: Vec<FindingNote>,
    /// Changed paths, sorted (at most 50).
    pub changed_files: Vec<String>,
    /// Why a verification is incomplete, one line each.
    pub incomplete: Vec<String>,
    /// Tests failing now that failed at the step's base too: reported, not counted (at most
    /// [`MAX_NAMES`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub known_failures: Vec<String>,
    /// Which stages ran, in order, and what each found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageReport>,
}

/// One verification stage of an iteration, as `splice status` and `show` report it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StageReport {
    /// `tests`, `acceptance`, `lint` or `security`.
    pub stage: String,
    /// The command, file or analyzer it read.
    pub tool: String,
    /// `passed`, `failed` (it found what blocks the iteration), `incomplete`, `not-applicable` (an
    /// optional scanner not installed) or `stage-failed`.
    pub status: String,
    /// What it found, in words (`3 passed, 1 failed`, `2 findings: 1 high`, why it is
    /// incomplete).
    pub found: String,
}

/// How many test names, findings and acceptance misses the context keeps.
pub const MAX_NAMES: usize = 50;
/// How many findings the context keeps.
pub const MAX_FINDINGS: usize = 20;

/// One iteration of a loop step on a node, as the writer's `iterate` appends it to
/// `pipeline.trajectory` (journaled): what it measured, the monitor's decision then, the
/// context the next dispatch's prompt carries, and what the runner or a person did about the
/// decision (`effect`). `decide` judges the entries since the node entered the step (`seq`
/// above `pipeline.entered`) and recomputes the decision from them; `monitor` is a record.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Iteration {
    /// The loop step.
    pub step: String,
    /// The bead's seq when it was recorded.
    pub seq: u64,
    /// The dispatch's attempt on the step.
    pub attempt: u32,
    /// When the iteration's dispatch started (the wall-time limit counts from the first).
    pub started_at: String,
    /// When it was recorded.
    pub at: String,
    /// What it measured.
    pub state: IterationState,
    /// Its score under the step's weights (absent for a stage failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<i64>,
    /// The monitor's decision after it, with the rule's evidence (a record: `decide` judges the
    /// states themselves).
    #[serde(default)]
    pub monitor: serde_json::Value,
    /// What the next dispatch's prompt carries.
    #[serde(default)]
    pub context: RevisionContext,
    /// The git ref holding the worktree after this iteration (`refs/splice/snapshots/<id>/<n>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// What was done about the monitor's decision after this iteration, when it needed doing
    /// (escalate, roll back, step back, a person's guidance): the next iteration may start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<Effect>,
}

/// What was done about an iteration's monitor decision.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "effect", rename_all = "snake_case", deny_unknown_fields)]
pub enum Effect {
    /// The node switched to `[agent] escalation_command` (once per node).
    Escalated {
        /// The monitor's rule that escalated.
        rule: String,
        /// The command its dispatches use from now on.
        command: Vec<String>,
    },
    /// A cycle or oscillation with no escalation left (none configured, or the node already
    /// escalated): the command is kept and the next prompt carries recovery context.
    Recovery {
        /// The monitor's rule.
        rule: String,
        /// Why no escalation was left.
        why: String,
    },
    /// The worktree was restored to the snapshot of iteration `restored`.
    RolledBack {
        /// The iteration restored.
        restored: u32,
        /// Its snapshot's git ref.
        snapshot: String,
    },
    /// A step-back analysis ran; its root cause is revision context.
    SteppedBack {
        /// The analysis's root cause.
        root_cause: String,
        /// Tokens the analysis used.
        #[serde(default)]
        tokens: u64,
        /// What the analysis cost, in USD.
        #[serde(default)]
        cost_usd: f64,
    },
    /// A person answered the monitor's question (`transition guide`).
    Guided {
        /// The guidance, for the next prompt.
        text: String,
        /// The person who gave it.
        by: String,
    },
}

impl Effect {
    /// Its `effect` tag.
    pub fn name(&self) -> &'static str {
        match self {
            Effect::Escalated { .. } => "escalated",
            Effect::Recovery { .. } => "recovery",
            Effect::RolledBack { .. } => "rolled_back",
            Effect::SteppedBack { .. } => "stepped_back",
            Effect::Guided { .. } => "guided",
        }
    }
}

/// The node's escalation (`pipeline.escalation`): at most one per node, so a later cycle, or a
/// new run, does not escalate again.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Escalation {
    /// The step it escalated on.
    pub step: String,
    /// The iteration after which it escalated.
    pub iteration: u32,
    /// The monitor's rule that escalated it.
    pub rule: String,
    /// The command the node's dispatches use from now on.
    pub command: Vec<String>,
    /// When (RFC 3339 UTC).
    pub at: String,
}

/// The most trajectory entries a bead keeps (the oldest go first; a step's monitor judges at
/// most its `max_iterations`, itself bounded).
pub const MAX_TRAJECTORY: usize = 200;

/// The entries of `trajectory` for `step` recorded since the node entered it (`seq` above
/// `entered`), in order.
pub fn since_entry<'a>(
    trajectory: &'a [Iteration],
    step: &'a str,
    entered: u64,
) -> impl Iterator<Item = &'a Iteration> + 'a {
    trajectory
        .iter()
        .filter(move |i| i.step == step && i.seq > entered)
}
