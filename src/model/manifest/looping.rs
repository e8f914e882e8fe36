//! A loop step (`"loop": {…}` on a step; issue 13, `docs/monitor.md`): each iteration is one
//! dispatch, measured by the step's verification stages and judged by the pass monitor.

use serde::{Deserialize, Serialize};

use crate::model::trajectory::{LoopSettings, Weights};

fn five() -> u32 {
    5
}

fn step_back_prompt() -> String {
    "step-back".into()
}

/// The most iterations a loop step may declare: more is a typo, and the trajectory is bounded.
pub const MAX_ITERATIONS: u32 = 100;

/// The floor of a loop step's default wall time, seconds.
pub(super) const MIN_DEFAULT_WALL_S: u64 = 600;

/// A step's `loop`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LoopSpec {
    /// Iterations (dispatches) at most; replaces the step's `max_attempts`.
    #[serde(default = "five")]
    pub max_iterations: u32,
    /// Seconds from the first iteration's start after which no iteration starts (default: the
    /// larger of 600 and the step's `timeout_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time_s: Option<u64>,
    /// Tokens the step's iterations and step-back analyses may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    /// Dollars they may cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_budget_usd: Option<f64>,
    /// Score weights; any left out keep their default.
    #[serde(default)]
    pub weights: Weights,
    /// The verification stages, run in this order after each iteration.
    #[serde(default)]
    pub stages: Vec<Stage>,
    /// The step-back analysis's prompt (`manifest/prompts/<name>.md`, or the project's
    /// `.splice/prompts/<name>.md`).
    #[serde(default = "step_back_prompt")]
    pub step_back_prompt: String,
}

/// Which findings a `sarif` stage counts.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SarifUse {
    /// Lint findings.
    Lint,
    /// Security findings.
    Security,
}

/// A verification stage: a floor kind used as a stage.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Stage {
    /// A test command run in the worktree: per-test results from its output (libtest, pytest
    /// `-rA`, `go test -v` lines) and its JUnit file (`junit`, relative to the worktree), if
    /// declared. Exactly one of `argv` and `detect: true` (the repository's own test command,
    /// `policy::verification`). With `baseline` (the default when detected), tests already
    /// failing at the step's base commit are reported, not counted.
    Tests {
        /// The test command.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        argv: Vec<String>,
        /// Run the repository's own test command instead.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        detect: bool,
        /// Report, not count, tests already failing at the step's base.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        baseline: Option<bool>,
        /// The JUnit file the command writes, relative to the worktree.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        junit: Option<String>,
        /// The stage's time limit, in seconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_s: Option<u64>,
    },
    /// The built-in analyzers for the languages present (`floors::iteration::analyzers`), each
    /// counted as lint or security; a tool that is not installed is incomplete evidence.
    Analyzers {
        /// The stage's time limit, in seconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_s: Option<u64>,
    },
    /// The bead's acceptance facts (`pipeline.acceptance`), each command run in the worktree.
    Command {
        /// Each command's time limit, in seconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_s: Option<u64>,
    },
    /// A SARIF report, a file in the worktree or a tool's stdout, counted as lint or security.
    Sarif {
        /// What its findings count as (`as`).
        #[serde(rename = "as")]
        counts_as: SarifUse,
        /// The report file, relative to the worktree.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file: Option<String>,
        /// The tool that prints the report.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        argv: Option<Vec<String>>,
        /// The stage's time limit, in seconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_s: Option<u64>,
    },
}

impl LoopSpec {
    /// The monitor's settings, `max_turns` (a run's `--max-turns`, when positive) in place of
    /// `max_iterations`.
    pub fn settings(&self, max_turns: Option<u32>) -> LoopSettings {
        LoopSettings {
            max_iterations: self.iterations(max_turns),
            token_budget: self.token_budget,
            cost_budget_usd: self.cost_budget_usd,
            weights: self.weights.clone(),
        }
    }

    /// The iteration limit under a run's `--max-turns`.
    pub fn iterations(&self, max_turns: Option<u32>) -> u32 {
        max_turns.filter(|n| *n > 0).unwrap_or(self.max_iterations)
    }

    /// The wall-time limit of a step whose `timeout_s` is `timeout_s`.
    pub fn wall_time_s(&self, timeout_s: u64) -> u64 {
        self.wall_time_s
            .unwrap_or_else(|| MIN_DEFAULT_WALL_S.max(timeout_s))
    }

    /// The problems of the loop of step `i`.
    pub(super) fn problems(&self, i: usize, out: &mut Vec<String>) {
        let at = format!("steps[{i}].loop");
        if self.max_iterations == 0 || self.max_iterations > MAX_ITERATIONS {
            out.push(format!(
                "{at}.max_iterations: {} is outside 1..={MAX_ITERATIONS}",
                self.max_iterations
            ));
        }
        if self.wall_time_s == Some(0) || self.wall_time_s > Some(super::MAX_TIMEOUT_S) {
            out.push(format!(
                "{at}.wall_time_s: outside 1..={} seconds",
                super::MAX_TIMEOUT_S
            ));
        }
        if let Some(c) = self.cost_budget_usd
            && !(c.is_finite() && c >= 0.0)
        {
            out.push(format!("{at}.cost_budget_usd: {c} must be a number ≥ 0"));
        }
        if !plain(&self.step_back_prompt) {
            out.push(format!(
                "{at}.step_back_prompt: {:?} cannot name a prompt file (letters, digits, '-' and \
                 '_' only)",
                self.step_back_prompt
            ));
        }
        for (j, stage) in self.stages.iter().enumerate() {
            stage.problems(&format!("{at}.stages[{j}]"), out);
        }
    }
}

fn plain(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl Stage {
    /// Does this tests stage compare with the base (explicit `baseline`, else when detected)?
    pub fn baseline(&self) -> bool {
        match self {
            Stage::Tests {
                detect, baseline, ..
            } => baseline.unwrap_or(*detect),
            _ => false,
        }
    }

    fn problems(&self, at: &str, out: &mut Vec<String>) {
        let timeout = match self {
            Stage::Tests {
                argv,
                detect,
                timeout_s,
                ..
            } => {
                match (*detect, argv.is_empty()) {
                    (true, false) => out.push(format!(
                        "{at}: a tests stage has exactly one of `argv` and `detect: true`"
                    )),
                    (false, true) => out.push(format!(
                        "{at}.argv: an empty argv runs nothing (or set `detect: true` for the \
                         repository's own test command)"
                    )),
                    _ if !argv.is_empty() && argv[0].is_empty() => {
                        out.push(format!("{at}.argv: an empty argv runs nothing"));
                    }
                    _ => {}
                }
                timeout_s
            }
            Stage::Command { timeout_s } | Stage::Analyzers { timeout_s } => timeout_s,
            Stage::Sarif {
                file,
                argv,
                timeout_s,
                ..
            } => {
                match (file, argv) {
                    (Some(_), Some(_)) | (None, None) => out.push(format!(
                        "{at}: a sarif stage reads exactly one of `file` and `argv`"
                    )),
                    (None, Some(a)) if a.is_empty() || a[0].is_empty() => {
                        out.push(format!("{at}.argv: an empty argv runs nothing"));
                    }
                    _ => {}
                }
                timeout_s
            }
        };
        if *timeout == Some(0) || *timeout > Some(super::MAX_TIMEOUT_S) {
            out.push(format!(
                "{at}.timeout_s: outside 1..={} seconds",
                super::MAX_TIMEOUT_S
            ));
        }
    }
}
