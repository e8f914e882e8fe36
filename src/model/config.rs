//! `.splice/config.toml`: project settings. Every section and key is optional.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::bead::DeliveryMethod;
use super::manifest::Autonomy;

/// The default agent: Claude Code, headless, streaming JSON so usage can be read.
pub fn default_agent_command() -> Vec<String> {
    [
        "claude",
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
    ]
    .into_iter()
    .map(String::from)
    .collect()
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub agent: AgentConfig,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub autonomy: AutonomyConfig,
    #[serde(default)]
    pub delivery: DeliveryConfig,
    /// Model name → per-million-token prices.
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The agent's argv; the rendered prompt is appended unless the template names `{{prompt}}`
    /// or `{{prompt_file}}`. Unset: Claude Code headless.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// Usage adapter: `claude-stream-json`, `file` or `none`.
    #[serde(default)]
    pub usage: Option<String>,
    #[serde(default)]
    pub escalation_command: Option<Vec<String>>,
    /// Per-step overrides, e.g. a reviewer on another model.
    #[serde(default)]
    pub steps: BTreeMap<String, StepAgent>,
}

impl AgentConfig {
    /// The argv for `step`: its override, else the agent command, else Claude Code.
    pub fn command_for(&self, step: &str) -> Vec<String> {
        self.steps
            .get(step)
            .and_then(|s| s.command.clone())
            .or_else(|| self.command.clone())
            .unwrap_or_else(default_agent_command)
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct StepAgent {
    #[serde(default)]
    pub command: Option<Vec<String>>,
    #[serde(default)]
    pub model: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    #[serde(default)]
    pub max_passes: Option<u64>,
    #[serde(default)]
    pub wall_time_s: Option<u64>,
    #[serde(default)]
    pub token_budget: Option<u64>,
    #[serde(default)]
    pub jobs: Option<u32>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct AutonomyConfig {
    #[serde(default)]
    pub default: Option<Autonomy>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct DeliveryConfig {
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default)]
    pub method: Option<DeliveryMethod>,
    /// Prints `{"merged": bool, "merge_commit": sha}` for a PR URL given as its last argument.
    #[serde(default)]
    pub forge_command: Option<Vec<String>>,
}

/// Per-million-token prices in US dollars.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Price {
    #[serde(default)]
    pub input: f64,
    #[serde(default)]
    pub output: f64,
    #[serde(default)]
    pub cache_read: f64,
    #[serde(default)]
    pub cache_write: f64,
    #[serde(default)]
    pub reasoning: Option<f64>,
}

impl Config {
    pub fn parse(text: &str) -> Result<Config, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }
}
