//! `.splice/config.toml`: project settings. Every section and key is optional; every value is
//! typed when the file loads, so a typo is an error naming the file, the line and the valid
//! values, never a surprise in the middle of a run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::bead::DeliveryMethod;
use super::manifest::Autonomy;

/// The default agent: Claude Code, headless, streaming JSON so usage can be read, with its own
/// permission checks off — the dispatch runs in splice's sandbox (`AgentKind::default_command`).
pub fn default_agent_command() -> Vec<String> {
    AgentKind::Claude.default_command(true)
}

/// The config shape this build reads; a newer one is refused.
pub const CONFIG_SCHEMA: u32 = 1;

/// Which adapter reads a dispatch's usage (unset: the usage file if the agent wrote one, else
/// what the log holds: Claude Code's result event, Codex's `turn.completed`, Gemini's stats;
/// `crate::exec::usage`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum UsageAdapter {
    /// Claude Code's `{"type":"result"}` event in the dispatch log.
    ClaudeStreamJson,
    /// Codex CLI's `codex exec --json` events: the last `turn.completed` usage.
    CodexJson,
    /// Gemini CLI's `--output-format json` object: its `stats.models`.
    GeminiJson,
    /// The JSON file at `SPLICE_USAGE_FILE`.
    File,
    /// No usage is read.
    None,
}

/// `.splice/config.toml`: the project's settings.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The shape of this file (absent: 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u32>,
    /// `[agent]`: which agent runs the steps, and how.
    #[serde(default)]
    pub agent: AgentConfig,
    /// `[limits]`: a run's bounds.
    #[serde(default)]
    pub limits: Limits,
    /// `[autonomy]`: the default level.
    #[serde(default)]
    pub autonomy: AutonomyConfig,
    /// `[delivery]`: where and how work lands.
    #[serde(default)]
    pub delivery: DeliveryConfig,
    /// Model name → per-million-token prices.
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
    /// The writer's lock.
    #[serde(default)]
    pub lock: LockConfig,
    /// What is kept out of committed files.
    #[serde(default)]
    pub security: SecurityConfig,
    /// `[journal]`: the live journal's bound.
    #[serde(default)]
    pub journal: JournalConfig,
    /// `[runs]`: how many run directories are kept.
    #[serde(default)]
    pub runs: RunsConfig,
    /// The guard on dispatched agents.
    #[serde(default)]
    pub guard: GuardConfig,
    /// `splice plan crystallize`: the design agent and the critic.
    #[serde(default)]
    pub plan: PlanConfig,
    /// `[executor]`: where dispatches run (local, or a Slurm cluster).
    #[serde(default)]
    pub executor: super::executor::ExecutorConfig,
    /// `[sandbox]`: the kernel sandbox dispatches run in (`docs/security.md`).
    #[serde(default)]
    pub sandbox: SandboxConfig,
    /// `[bd]`: living with bd (`docs/bd-interop.md`).
    #[serde(default)]
    pub bd: BdConfig,
}

/// `[bd]`: what bd's own configuration says that splice needs too.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct BdConfig {
    /// Project name → its directory (relative to the directory holding `.splice/`, or
    /// absolute), as bd's `external_projects`: an `external:<project>:<capability>` dependency
    /// is done when that project's `.beads/issues.jsonl` has a closed issue labelled
    /// `provides:<capability>` (bd's `ship`).
    #[serde(default)]
    pub external_projects: BTreeMap<String, String>,
}

/// `[sandbox]`: every dispatch, and every command run on what an agent wrote, runs in a kernel
/// sandbox (Landlock, seccomp, no capabilities) where this kernel offers one
/// (`docs/security.md`, "The sandbox").
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Unset: true. `false` runs dispatches unsandboxed even where the kernel could confine
    /// them (the writer then tells agents by descent and credential alone).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Refuse to run a dispatch unsandboxed: where the kernel offers no sandbox, `splice run`
    /// stops before dispatching, saying why. Unset: false (run, and say so loudly).
    #[serde(default)]
    pub required: Option<bool>,
    /// More paths a sandboxed command may read (`~/` is the home directory).
    #[serde(default)]
    pub read: Vec<String>,
    /// More paths beneath which it may write.
    #[serde(default)]
    pub write: Vec<String>,
    /// More environment variables it keeps (exact names, or a prefix and `*`).
    #[serde(default)]
    pub env: Vec<String>,
}

impl SandboxConfig {
    /// Sandbox dispatches where the kernel can?
    pub fn enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// Refuse to dispatch unsandboxed?
    pub fn required(&self) -> bool {
        self.required.unwrap_or(false)
    }
}

/// `[plan]`: how `splice plan crystallize` turns notes into a plan (`docs/plan.md`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct PlanConfig {
    /// The design agent's argv (the crystallize prompt appended), in place of `[agent]
    /// command`. It runs in a scratch directory and writes the plan to `$SPLICE_PLAN_FILE`.
    #[serde(default)]
    pub designer: Option<Vec<String>>,
    /// A critic's argv, the plan file's path appended; it prints typed findings or a verdict
    /// (`docs/plan.md`, "The critic"). When set, `plan approve` stands on its recorded verdict
    /// on the plan's current bytes.
    #[serde(default)]
    pub critic: Option<Vec<String>>,
    /// A distiller's argv, the request file's path appended; what it prints is the intent the
    /// request's steps receive (`{{intent}}`, `docs/plan.md` "Intent"). Without it, seed
    /// 000's deterministic cut.
    #[serde(default)]
    pub distiller: Option<Vec<String>>,
}

/// `[guard]`: whether a dispatched Claude Code agent is started with the guard registered
/// (`--settings FILE`, `docs/agents.md`). On unless switched off: an agent is guarded by
/// default, and a person opts out in the config, where the choice is reviewed.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct GuardConfig {
    /// Unset: true.
    #[serde(default)]
    pub dispatch: Option<bool>,
}

impl GuardConfig {
    /// Start a dispatched `claude` with the guard's settings?
    pub fn dispatch(&self) -> bool {
        self.dispatch.unwrap_or(true)
    }
}

/// The environment variables whose values are redacted when no `[security] redact_env` is set:
/// names ending in `_KEY`, `_TOKEN` or `_SECRET`, or holding `PASSWORD` (case-insensitive).
pub const DEFAULT_REDACT_ENV: [&str; 4] = ["*_KEY", "*_TOKEN", "*_SECRET", "*PASSWORD*"];

/// `[security]`: redaction before anything is recorded in bead files and the journal.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct SecurityConfig {
    /// Names of environment variables whose values are redacted (`*` matches any run of
    /// characters; case-insensitive). Replaces [`DEFAULT_REDACT_ENV`]; `[]` redacts none.
    #[serde(default)]
    pub redact_env: Option<Vec<String>>,
}

impl SecurityConfig {
    /// The name patterns in force.
    pub fn redact_env(&self) -> Vec<String> {
        match &self.redact_env {
            Some(list) => list.clone(),
            None => DEFAULT_REDACT_ENV.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// How long a writer waits for the lock when no `[lock] timeout_s` is set.
pub const DEFAULT_LOCK_TIMEOUT_S: u64 = 30;

/// `[lock]`: how long a writer waits for `.splice/lock` before it gives up (exit 2) naming the
/// holder.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct LockConfig {
    /// Seconds; unset: [`DEFAULT_LOCK_TIMEOUT_S`]; 0: try once.
    #[serde(default)]
    pub timeout_s: Option<u64>,
}

/// `[journal]`: how far the live journal grows before the writer closes it into a segment.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct JournalConfig {
    /// Bytes; unset: [`DEFAULT_SEGMENT_BYTES`]; at least [`MIN_SEGMENT_BYTES`].
    #[serde(default)]
    pub segment_bytes: Option<u64>,
}

/// The live journal's default bound (4 MiB: a few thousand transitions).
pub const DEFAULT_SEGMENT_BYTES: u64 = 4 << 20;
/// The smallest bound `[journal] segment_bytes` may set.
pub const MIN_SEGMENT_BYTES: u64 = 64 << 10;

impl JournalConfig {
    /// The live journal's bound, in bytes.
    pub fn segment_bytes(&self) -> u64 {
        self.segment_bytes.unwrap_or(DEFAULT_SEGMENT_BYTES)
    }
}

/// `[runs]`: how many run directories (`.splice/runs/<run>/`: pass envelopes, events, dispatch
/// logs) are kept; the oldest beyond that are removed when a run starts.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct RunsConfig {
    /// Unset: [`DEFAULT_RUNS_KEPT`]; at least 1.
    #[serde(default)]
    pub keep: Option<u32>,
}

/// Run directories kept by default.
pub const DEFAULT_RUNS_KEPT: u32 = 50;

impl RunsConfig {
    /// How many run directories are kept.
    pub fn keep(&self) -> usize {
        self.keep.unwrap_or(DEFAULT_RUNS_KEPT) as usize
    }
}

impl LockConfig {
    /// How long a verb waits for the writer's lock.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_s.unwrap_or(DEFAULT_LOCK_TIMEOUT_S))
    }
}

/// `[agent]`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Which agent CLI runs the prompt steps: `claude`, `codex` or `gemini`. With no `command`,
    /// splice runs that CLI with its own built-in options (`AgentKind::default_command`); with
    /// one, the kind must be the one its program names. Unset: the kind `command`'s program
    /// names (`claude`, `codex`, `gemini`), else Claude Code.
    #[serde(default)]
    pub kind: Option<AgentKind>,
    /// The agent's argv; the rendered prompt is appended unless the template names `{{prompt}}`
    /// or `{{prompt_file}}`. Unset: the kind's built-in command.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// The model of every step without its own `[agent.steps.<step>] model`, for the command's
    /// `{{model}}` (the default agent gets `--model <model>`).
    #[serde(default)]
    pub model: Option<String>,
    /// Usage adapter: `claude-stream-json`, `codex-json`, `gemini-json`, `file` or `none`.
    #[serde(default)]
    pub usage: Option<UsageAdapter>,
    /// The command a loop step's node switches to when its monitor escalates (once per node).
    #[serde(default)]
    pub escalation_command: Option<Vec<String>>,
    /// Per-step overrides, e.g. a reviewer on another model.
    #[serde(default)]
    pub steps: BTreeMap<String, StepAgent>,
}

/// An agent CLI splice knows how to run headless (`[agent] kind`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    /// Claude Code (`claude`).
    Claude,
    /// OpenAI's Codex CLI (`codex`).
    Codex,
    /// Google's Gemini CLI (`gemini`).
    Gemini,
}

/// `[agent.steps.<step>]`: how one step runs, over what the manifest says.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct StepAgent {
    /// The command the step runs: for a prompt step the agent's argv (the prompt appended
    /// unless named), for an argv step its argv in place of the manifest's.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// The step's model, for the command's `{{model}}`.
    #[serde(default)]
    pub model: Option<String>,
    /// The step's `timeout_s` in place of the manifest's.
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// The step's `max_attempts` in place of the manifest's.
    #[serde(default)]
    pub max_attempts: Option<u32>,
}

/// Why 0 dispatches at once is refused, in `[limits] jobs` and in `--jobs` alike.
pub const ZERO_JOBS: &str = "0 would never dispatch; use at least 1";

/// Parse `--jobs` (run, pass, drive, demo) as `[limits] jobs` is checked: 0 is refused.
pub fn parse_jobs(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(0) => Err(ZERO_JOBS.into()),
        Ok(jobs) => Ok(jobs),
        Err(e) => Err(e.to_string()),
    }
}

/// `[limits]`: a run's bounds (command-line flags override them).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// The most passes a run takes.
    #[serde(default)]
    pub max_passes: Option<u64>,
    /// The most seconds a run takes.
    #[serde(default)]
    pub wall_time_s: Option<u64>,
    /// The most tokens a run spends.
    #[serde(default)]
    pub token_budget: Option<u64>,
    /// How many dispatches run at once.
    #[serde(default)]
    pub jobs: Option<u32>,
    /// Seconds to wait after a failed attempt before the step's next, doubling with each
    /// attempt (at most an hour); unset: 10; 0: no wait.
    #[serde(default)]
    pub backoff_s: Option<u64>,
    /// Seconds a local dispatch may go without progress — no output, and next to no CPU time or
    /// bytes read and written by its processes — before it is stopped as stalled (a hang is
    /// not left to the step's timeout); unset: [`DEFAULT_STALL_S`]; 0: never.
    #[serde(default)]
    pub stall_s: Option<u64>,
    /// Every run releases the claims of runners found dead on this host (their process gone, or
    /// their pid reused), as `splice run --reclaim-dead` does: a person's standing choice
    /// (`driver::reclaim`). Unset: `false`.
    #[serde(default)]
    pub reclaim_dead: Option<bool>,
}

/// `[limits] stall_s` unset: five minutes (a long build, a long streamed answer are progress).
pub const DEFAULT_STALL_S: u64 = 300;

impl Limits {
    /// How long a dispatch may go without progress (`None`: forever).
    pub fn stall(&self) -> Option<std::time::Duration> {
        match self.stall_s.unwrap_or(DEFAULT_STALL_S) {
            0 => None,
            s => Some(std::time::Duration::from_secs(s)),
        }
    }
}

/// `[autonomy]`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct AutonomyConfig {
    /// The level of a node with none of its own or from an ancestor.
    #[serde(default)]
    pub default: Option<Autonomy>,
}

/// `[delivery]`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct DeliveryConfig {
    /// The delivery target branch of a node with none from its lineage.
    #[serde(default)]
    pub target: Option<String>,
    /// `pr` or `direct`.
    #[serde(default)]
    pub method: Option<DeliveryMethod>,
    /// Prints `{"merged": bool, "merge_commit": sha}` for a PR URL given as its last argument.
    /// Unset: a GitHub pull request is asked about with `gh` when it is on `PATH`
    /// (`floors::github`).
    #[serde(default)]
    pub forge_command: Option<Vec<String>>,
    /// Opens a pull request and prints its URL (`transition::pr`, the `SPLICE_PR_*` variables).
    /// Unset: `gh pr create` for a remote on a GitHub host when `gh` is on `PATH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr_command: Option<Vec<String>>,
    /// Branches splice never moves without a person's approval recorded before the move
    /// (issue 33), besides the main line (`main`, `master`, a remote's default branch).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected: Vec<String>,
}

/// Per-million-token prices in US dollars.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million input tokens.
    #[serde(default)]
    pub input: f64,
    /// Per million output tokens.
    #[serde(default)]
    pub output: f64,
    /// Per million cache-read tokens.
    #[serde(default)]
    pub cache_read: f64,
    /// Per million cache-write tokens.
    #[serde(default)]
    pub cache_write: f64,
    /// Per million reasoning tokens; unset: reasoning is priced as output.
    #[serde(default)]
    pub reasoning: Option<f64>,
}

impl Config {
    /// Parse and type the whole file. The error names the line and, for an enum, the valid
    /// values.
    pub fn parse(text: &str) -> Result<Config, String> {
        let config: Config = toml::from_str(text).map_err(|e| e.to_string())?;
        if let Some(v) = config.schema_version
            && v > CONFIG_SCHEMA
        {
            return Err(format!(
                "schema_version = {v} is newer than this splice reads ({CONFIG_SCHEMA}); upgrade splice"
            ));
        }
        config.check()?;
        Ok(config)
    }

    /// Values that type but would do nothing, or harm: named with their key.
    fn check(&self) -> Result<(), String> {
        let empty = |c: &Option<Vec<String>>| c.as_ref().is_some_and(Vec::is_empty);
        for (project, dir) in &self.bd.external_projects {
            if project.is_empty() || project.contains(':') {
                return Err(format!(
                    "[bd] external_projects: {project:?} is not a project name (no `:`, not empty)"
                ));
            }
            if dir.trim().is_empty() {
                return Err(format!(
                    "[bd] external_projects.{project}: an empty path names no project"
                ));
            }
        }
        if empty(&self.agent.command) {
            return Err(
                "[agent] command: an empty argv runs nothing; remove the key to use the \
                        default agent"
                    .into(),
            );
        }
        if empty(&self.agent.escalation_command) {
            return Err("[agent] escalation_command: an empty argv runs nothing".into());
        }
        if empty(&self.plan.designer) {
            return Err("[plan] designer: an empty argv runs nothing".into());
        }
        if empty(&self.plan.critic) {
            return Err("[plan] critic: an empty argv runs nothing".into());
        }
        if empty(&self.plan.distiller) {
            return Err("[plan] distiller: an empty argv runs nothing".into());
        }
        if empty(&self.delivery.forge_command) {
            return Err(
                "[delivery] forge_command: an empty argv runs nothing; remove the key to ask `gh` \
                 about GitHub pull requests"
                    .into(),
            );
        }
        if empty(&self.delivery.pr_command) {
            return Err(
                "[delivery] pr_command: an empty argv runs nothing; remove the key to open \
                 GitHub pull requests with `gh`"
                    .into(),
            );
        }
        if let Some(bad) = self
            .delivery
            .protected
            .iter()
            .find(|b| b.trim().is_empty() || b.starts_with("refs/") || b.contains(['*', ' ']))
        {
            return Err(format!(
                "[delivery] protected: {bad:?} is not a branch name (write local branch names, \
                 such as \"release\", without `refs/heads/` or patterns)"
            ));
        }
        for (step, agent) in &self.agent.steps {
            if empty(&agent.command) {
                return Err(format!(
                    "[agent.steps.{step}] command: an empty argv runs nothing"
                ));
            }
        }
        if self
            .journal
            .segment_bytes
            .is_some_and(|b| b < MIN_SEGMENT_BYTES)
        {
            return Err(format!(
                "[journal] segment_bytes: at least {MIN_SEGMENT_BYTES} (64 KiB); a smaller \
                 segment would close after every few transitions"
            ));
        }
        if self.runs.keep == Some(0) {
            return Err("[runs] keep: at least 1 (the run in progress is always kept)".into());
        }
        self.agent.model_problems()?;
        self.agent.kind_problems()?;
        self.executor.check()?;
        if self.limits.jobs == Some(0) {
            return Err(format!("[limits] jobs: {ZERO_JOBS}"));
        }
        for (model, p) in &self.prices {
            let all = [p.input, p.output, p.cache_read, p.cache_write];
            let bad = all
                .into_iter()
                .chain(p.reasoning)
                .find(|x| !x.is_finite() || *x < 0.0);
            if let Some(bad) = bad {
                return Err(format!(
                    "[prices.{model}]: {bad} is not a price (a finite number, 0 or more, in US \
                     dollars per million tokens)"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_are_typed_at_load_with_the_line_and_the_valid_values() {
        let e = Config::parse("[agent]\nusage = \"claude\"\n").unwrap_err();
        assert!(
            e.contains("line 2") && e.contains("claude-stream-json"),
            "{e}"
        );
        let e = Config::parse("[autonomy]\ndefault = \"deeper\"\n").unwrap_err();
        assert!(
            e.contains("line 2") && e.contains("hitl, wave or deep"),
            "{e}"
        );
        let e = Config::parse("[delivery]\nmethod = \"merge\"\n").unwrap_err();
        assert!(e.contains("`pr`") && e.contains("`direct`"), "{e}");
        let ok = Config::parse("[agent]\nusage = \"file\"\n").unwrap();
        assert_eq!(ok.agent.usage, Some(UsageAdapter::File));
        for (name, adapter) in [
            ("codex-json", UsageAdapter::CodexJson),
            ("gemini-json", UsageAdapter::GeminiJson),
        ] {
            let ok = Config::parse(&format!("[agent]\nusage = \"{name}\"\n")).unwrap();
            assert_eq!(ok.agent.usage, Some(adapter));
        }
    }

    #[test]
    fn values_that_would_do_nothing_are_refused_by_key() {
        let e = |t: &str| Config::parse(t).unwrap_err();
        assert!(e("[agent]\ncommand = []\n").contains("[agent] command"));
        assert!(e("[agent.steps.review]\ncommand = []\n").contains("[agent.steps.review]"));
        assert!(e("[limits]\njobs = 0\n").contains("[limits] jobs"));
        assert!(e("[delivery]\nforge_command = []\n").contains("[delivery] forge_command"));
        assert!(e("[delivery]\npr_command = []\n").contains("[delivery] pr_command"));
        assert!(e("[delivery]\nprotected = [\"refs/heads/x\"]\n").contains("[delivery] protected"));
        assert!(e("[delivery]\nprotected = [\"\"]\n").contains("[delivery] protected"));
        assert!(e("[prices.m]\ninput = nan\n").contains("[prices.m]"));
        assert!(e("[prices.m]\noutput = -1.0\n").contains("is not a price"));
        assert!(Config::parse("[prices.m]\ninput = 0.0\n").is_ok());
    }

    #[test]
    fn the_guard_on_dispatches_is_on_unless_switched_off_by_a_typed_key() {
        assert!(Config::parse("").unwrap().guard.dispatch());
        assert!(
            !Config::parse("[guard]\ndispatch = false\n")
                .unwrap()
                .guard
                .dispatch()
        );
        let e = Config::parse("[guard]\ndispatch = \"no\"\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        let e = Config::parse("[guard]\ndispach = false\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("dispatch"), "{e}");
    }

    #[test]
    fn a_newer_schema_is_refused() {
        assert!(
            Config::parse("schema_version = 2\n")
                .unwrap_err()
                .contains("newer")
        );
        assert!(Config::parse("schema_version = 1\n").is_ok());
    }
}
