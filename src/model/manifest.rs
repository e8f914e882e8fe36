//! The manifest: routes, steps, floors, gates, resume policies and attempt limits.
//!
//! The default (`manifest/coding-pipeline.json`) is embedded in the binary; `.splice/manifest.json`
//! replaces it when present. [`Manifest::parse`] validates everything at load and names the JSON
//! path of every problem it finds, so a bad manifest never reaches a pass.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The embedded default manifest.
pub const DEFAULT_MANIFEST: &str = include_str!("../../manifest/coding-pipeline.json");

/// Floor kinds a manifest may name.
pub const FLOOR_KINDS: &[&str] = &[
    "file_exists",
    "headings",
    "scenarios_declared",
    "spec",
    "review",
    "children_conserved",
    "children_finished",
    "coverage",
    "suite",
    "delivered",
    "command",
    "tests",
    "sarif",
];

/// The route families the writer needs to exist.
pub const REQUIRED_ROUTES: &[&str] = &["root", "compound", "leaf"];

/// How much a node may advance without a person.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Autonomy {
    Hitl,
    Wave,
    Deep,
}

impl Autonomy {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "hitl" => Some(Self::Hitl),
            "wave" => Some(Self::Wave),
            "deep" => Some(Self::Deep),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hitl => "hitl",
            Self::Wave => "wave",
            Self::Deep => "deep",
        }
    }
}

/// What a retry does with the worktree.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Resume {
    /// Reset to the step's base and clean.
    #[default]
    Redo,
    /// Keep the tree as the last attempt left it.
    Continue,
}

/// A step's command: the configured agent with a prompt, or an argv template.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum Run {
    Prompt { prompt: String },
    Argv { argv: Vec<String> },
}

/// A declared floor: its kind and the kind's parameters (paths are templates).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FloorSpec {
    pub kind: String,
    #[serde(flatten)]
    pub params: Map<String, Value>,
}

impl FloorSpec {
    pub fn str_param(&self, key: &str) -> Option<&str> {
        self.params.get(key).and_then(Value::as_str)
    }
    pub fn list_param(&self, key: &str) -> Vec<String> {
        match self.params.get(key) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            Some(Value::String(s)) => vec![s.clone()],
            _ => Vec::new(),
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum GateKind {
    Human,
}

fn default_max_attempts() -> u32 {
    3
}

fn default_timeout() -> u64 {
    1800
}

/// One step of a route.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Step {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<Run>,
    #[serde(default)]
    pub floors: Vec<FloorSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateKind>,
    /// Autonomy levels that relax the gate (validated at load).
    #[serde(default)]
    pub relax: Vec<String>,
    /// A relaxed gate of this step also needs a campaign branch target (integration).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub relax_needs_branch: bool,
    /// Planning gates never relax.
    #[serde(default)]
    pub planning: bool,
    #[serde(default)]
    pub resume: Resume,
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    #[serde(default = "default_timeout")]
    pub timeout_s: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    #[serde(default, rename = "loop", skip_serializing_if = "Option::is_none")]
    pub loop_: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_result: Option<Vec<Value>>,
}

impl Step {
    /// Does `level` relax this step's gate? Planning gates never relax.
    pub fn relaxed_by(&self, level: Autonomy) -> bool {
        !self.planning && self.relax.iter().any(|l| l == level.as_str())
    }
}

/// The whole manifest.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Manifest {
    #[serde(default = "one")]
    pub version: u32,
    /// Route name → step names in order.
    pub routes: BTreeMap<String, Vec<String>>,
    /// Route name → the step a new node of that route enters at (default: the first).
    #[serde(default)]
    pub entry: BTreeMap<String, String>,
    pub steps: Vec<Step>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Value>,
}

fn one() -> u32 {
    1
}

/// A manifest failed validation: every problem, each with its JSON path.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestProblems(pub Vec<String>);

impl std::fmt::Display for ManifestProblems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("; "))
    }
}

impl Manifest {
    /// Parse and validate manifest JSON.
    pub fn parse(text: &str) -> Result<Manifest, ManifestProblems> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let manifest: Manifest = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            ManifestProblems(vec![format!("{path}: {}", e.inner())])
        })?;
        let problems = manifest.problems();
        if problems.is_empty() {
            Ok(manifest)
        } else {
            Err(ManifestProblems(problems))
        }
    }

    /// The embedded default manifest.
    pub fn default_manifest() -> Manifest {
        Manifest::parse(DEFAULT_MANIFEST).expect("the embedded manifest is valid")
    }

    /// Every validation problem, each naming its JSON path.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut names = BTreeSet::new();
        for (i, step) in self.steps.iter().enumerate() {
            if step.name.is_empty() {
                out.push(format!("steps[{i}].name: empty step name"));
            }
            if !names.insert(step.name.as_str()) {
                out.push(format!("steps[{i}].name: duplicate step \"{}\"", step.name));
            }
            for (j, floor) in step.floors.iter().enumerate() {
                if !FLOOR_KINDS.contains(&floor.kind.as_str()) {
                    out.push(format!(
                        "steps[{i}].floors[{j}].kind: unknown floor kind \"{}\" (known: {})",
                        floor.kind,
                        FLOOR_KINDS.join(", ")
                    ));
                }
            }
            for (j, level) in step.relax.iter().enumerate() {
                if Autonomy::parse(level).is_none() {
                    out.push(format!(
                        "steps[{i}].relax[{j}]: bad autonomy level \"{level}\" (hitl, wave or deep)"
                    ));
                }
            }
            if step.max_attempts == 0 {
                out.push(format!("steps[{i}].max_attempts: must be at least 1"));
            }
            if let Some(Run::Argv { argv }) = &step.run
                && argv.is_empty()
            {
                out.push(format!("steps[{i}].run.argv: empty command"));
            }
            for (j, branch) in step.on_result.iter().flatten().enumerate() {
                if let Some(pattern) = branch.get("matches").and_then(Value::as_str)
                    && let Err(e) = regex::Regex::new(pattern)
                {
                    out.push(format!("steps[{i}].on_result[{j}].matches: bad regex: {e}"));
                }
            }
        }
        for required in REQUIRED_ROUTES {
            if !self.routes.contains_key(*required) {
                out.push(format!(
                    "routes.{required}: missing (splice needs root, compound and leaf)"
                ));
            }
        }
        for (route, steps) in &self.routes {
            if steps.is_empty() {
                out.push(format!("routes.{route}: route without steps"));
            }
            for (i, s) in steps.iter().enumerate() {
                if !names.contains(s.as_str()) {
                    out.push(format!("routes.{route}[{i}]: unknown step \"{s}\""));
                }
            }
        }
        for (route, step) in &self.entry {
            match self.routes.get(route) {
                None => out.push(format!("entry.{route}: unknown route \"{route}\"")),
                Some(steps) if !steps.contains(step) => out.push(format!(
                    "entry.{route}: step \"{step}\" is not on route {route}"
                )),
                Some(_) => {}
            }
        }
        out
    }

    pub fn step(&self, name: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.name == name)
    }

    pub fn route(&self, name: &str) -> Option<&[String]> {
        self.routes.get(name).map(Vec::as_slice)
    }

    /// The step a new node of `route` starts at.
    pub fn entry_step(&self, route: &str) -> Option<&str> {
        match self.entry.get(route) {
            Some(step) => Some(step.as_str()),
            None => self.route(route)?.first().map(String::as_str),
        }
    }

    /// The step after `step` on `route`, or `None` when `step` is the last.
    pub fn next_step(&self, route: &str, step: &str) -> Option<&str> {
        let steps = self.route(route)?;
        let at = steps.iter().position(|s| s == step)?;
        steps.get(at + 1).map(String::as_str)
    }
}
