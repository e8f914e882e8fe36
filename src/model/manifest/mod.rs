//! The manifest: routes, steps, floors, gates, resume policies and attempt limits.
//!
//! The default (`manifest/coding-pipeline.json`) is embedded in the binary; `.splice/manifest.json`
//! replaces it when present. [`Manifest::parse`] types and validates everything at load and names
//! the JSON path of every problem it finds, so a bad manifest never reaches a pass.
//!
//! Steps say what they are for with a `role` (`spec`, `split`, `delegate`, `integrate`,
//! `deliver`), so no code outside this module names a step. A manifest of schema 1 (no
//! `schema_version`) has no roles and no artifacts: they are inferred when it loads (a step with a
//! `spec` floor is the spec step; steps named `to-issues`, `delegate`, `integrate` and `deliver`
//! take the roles `split`, `delegate`, `integrate` and `deliver`; a step's artifact is its first
//! floor's `path`). Schema 3 added `route_kinds` and steps' result branches (`on_result`,
//! [`Branch`]); a schema 1 or 2 file gets the kinds of its `root`, `compound` and `leaf` routes and
//! the two routings splice used to hard-code as branches (`docs/manifest.md`).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::Kind;

mod branch;
mod check;
mod floor;
mod looping;
pub mod prompts;
mod tiers;

pub use branch::{Action, Branch, Directive, Match, Matcher, When, compile as compile_regex};
use check::type_problems;
pub use check::{argv_problems, deserialize_checked};
pub use floor::{FloorKind, FloorSpec};
pub use looping::{LoopSpec, MAX_ITERATIONS, SarifUse, Stage};
pub use tiers::{TierRuleSpec, Tiers, words_of};

/// How much a node may advance without a person.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Autonomy {
    /// Every gate waits for a person.
    Hitl,
    /// Spec and implement gates relax.
    Wave,
    /// Fan-out and integration gates relax too (integration only with a campaign branch target).
    Deep,
}

impl Autonomy {
    /// The level its word names; `None` for any other.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "hitl" => Some(Self::Hitl),
            "wave" => Some(Self::Wave),
            "deep" => Some(Self::Deep),
            _ => None,
        }
    }
    /// Its word in files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hitl => "hitl",
            Self::Wave => "wave",
            Self::Deep => "deep",
        }
    }
}

/// The embedded default manifest.
pub const DEFAULT_MANIFEST: &str = include_str!("../../../manifest/coding-pipeline.json");

/// The manifest shape this build writes and reads; older shapes are still read.
pub const MANIFEST_SCHEMA: u32 = 3;

/// The route families the writer needs to exist, one per [`super::Kind`].
pub const REQUIRED_ROUTES: &[&str] = &["root", "compound", "leaf"];

/// What a step is for, when the machinery needs to find it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Writes the spec: its verdict may move a leaf onto the compound route, and its gate never
    /// relaxes without a verdict.
    Spec,
    /// The step at which a root or compound node splits into children (`transition split` is
    /// refused at any other step).
    Split,
    /// A container waits here for its sanctioned children; children wait until it gets here.
    Delegate,
    /// `transition integrate` completes this step.
    Integrate,
    /// `transition deliver` completes this step.
    Deliver,
}

impl Role {
    /// Its word in the manifest.
    pub fn name(self) -> &'static str {
        match self {
            Role::Spec => "spec",
            Role::Split => "split",
            Role::Delegate => "delegate",
            Role::Integrate => "integrate",
            Role::Deliver => "deliver",
        }
    }
}

impl<'de> Deserialize<'de> for Autonomy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let level = String::deserialize(d)?;
        Autonomy::parse(&level).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "bad autonomy level \"{level}\" (hitl, wave or deep)"
            ))
        })
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
#[serde(untagged, deny_unknown_fields)]
pub enum Run {
    /// The configured agent, with a prompt template.
    Prompt {
        /// The prompt's name (`manifest/prompts/<name>.md`).
        prompt: String,
    },
    /// This argv template.
    Argv {
        /// The program and its arguments (templates).
        argv: Vec<String>,
    },
}

/// Who passes a step's gate.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum GateKind {
    /// A person (`transition approve`), unless autonomy relaxes it.
    Human,
}

fn default_max_attempts() -> u32 {
    3
}

fn default_timeout() -> u64 {
    1800
}

/// The longest `timeout_s` a step or floor may declare (one week): longer is a typo, and a
/// deadline that far out cannot overflow the clock.
pub const MAX_TIMEOUT_S: u64 = 7 * 24 * 3600;

/// One step of a route.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Its name, unique in the manifest.
    pub name: String,
    /// What the writer does on its passing, when it has a role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// Its command; none: a person does the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<Run>,
    /// The artifact the step is expected to produce (a template: `specs/{{bead.id}}.md`, or a
    /// handle such as `HEAD`), for the prompt's `{{artifact}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    /// The deterministic checks a proposal must pass.
    #[serde(default)]
    pub floors: Vec<FloorSpec>,
    /// Its gate, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateKind>,
    /// Autonomy levels that relax the gate.
    #[serde(default)]
    pub relax: Vec<Autonomy>,
    /// A relaxed gate of this step also needs a campaign branch target (integration).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub relax_needs_branch: bool,
    /// Planning gates never relax.
    #[serde(default)]
    pub planning: bool,
    /// What a retry does with the worktree.
    #[serde(default)]
    pub resume: Resume,
    /// The most dispatches on the step before the node is parked.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// A dispatch's time limit, in seconds.
    #[serde(default = "default_timeout")]
    pub timeout_s: u64,
    /// A route's `entry` may start after this step (and only after optional steps).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// A loop step: each iteration one dispatch, measured and judged by the pass monitor
    /// (`docs/monitor.md`).
    #[serde(default, rename = "loop", skip_serializing_if = "Option::is_none")]
    pub loop_: Option<LoopSpec>,
    /// Result branches, tried in order when the step's check refuses or the step is accepted
    /// (see `docs/manifest.md`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on_result: Vec<Branch>,
}

impl Step {
    /// Does `level` relax this step's gate? Planning gates never relax.
    pub fn relaxed_by(&self, level: Autonomy) -> bool {
        !self.planning && self.relax.contains(&level)
    }

    /// Does it have `role`?
    pub fn has_role(&self, role: Role) -> bool {
        self.role == Some(role)
    }

    /// The step's dispatch limit: its loop's iterations (under a run's `--max-turns`), else
    /// `max_attempts`.
    pub fn dispatch_limit(&self, max_turns: Option<u32>) -> u32 {
        self.loop_
            .as_ref()
            .map_or(self.max_attempts, |l| l.iterations(max_turns))
    }
}

/// The whole manifest.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The shape of this file; `version` in schema 1.
    #[serde(default = "schema_one", alias = "version")]
    pub schema_version: u32,
    /// Route name → step names in order.
    pub routes: BTreeMap<String, Vec<String>>,
    /// Route name → the kind of node that walks it (schema 3 declares one per route; older
    /// files get `root`, `compound` and `leaf` from those routes' names).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub route_kinds: BTreeMap<String, Kind>,
    /// Route name → the step a new node of that route enters at (default: the first).
    #[serde(default)]
    pub entry: BTreeMap<String, String>,
    /// Every step any route names.
    pub steps: Vec<Step>,
    /// Request tiers: the classifier's rules and each tier's route (absent: [`Manifest::tiers`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Tiers>,
}

fn schema_one() -> u32 {
    1
}

/// A manifest failed validation: every problem, each with its JSON path.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestProblems(pub Vec<String>);

impl fmt::Display for ManifestProblems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join("; "))
    }
}

impl Manifest {
    /// Parse, type and validate manifest JSON. An older shape is brought up to this one.
    pub fn parse(text: &str) -> Result<Manifest, ManifestProblems> {
        let mut de = serde_json::Deserializer::from_str(text);
        match serde_path_to_error::deserialize::<_, Manifest>(&mut de) {
            // The typed parse stops after the first value: anything after it is refused too.
            Ok(manifest) => match de.end() {
                Ok(()) => manifest.checked(),
                Err(e) => Err(ManifestProblems(vec![format!(
                    "not one JSON document: {e}"
                )])),
            },
            Err(first) => {
                // Typing stops at the first error; list every one, part by part, when the text
                // is at least JSON.
                let all = serde_json::from_str::<Value>(text)
                    .map(|raw| type_problems(&raw))
                    .unwrap_or_default();
                if all.is_empty() {
                    Err(ManifestProblems(vec![format!(
                        "{}: {}",
                        first.path(),
                        first.inner()
                    )]))
                } else {
                    Err(ManifestProblems(all))
                }
            }
        }
    }

    /// The embedded default manifest.
    pub fn default_manifest() -> Manifest {
        Manifest::parse(DEFAULT_MANIFEST).expect("the embedded manifest is valid")
    }

    /// The step named `name`.
    pub fn step(&self, name: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.name == name)
    }

    /// The step that has `role`, if the manifest declares one.
    pub fn step_with(&self, role: Role) -> Option<&Step> {
        self.steps.iter().find(|s| s.role == Some(role))
    }

    /// Does step `name` have `role`?
    pub fn is(&self, name: &str, role: Role) -> bool {
        self.step(name).is_some_and(|s| s.has_role(role))
    }

    /// Route `name`'s steps, in order.
    pub fn route(&self, name: &str) -> Option<&[String]> {
        self.routes.get(name).map(Vec::as_slice)
    }

    /// Does some step of route `route` run a node's acceptance facts (a loop step with a
    /// `command` stage)? Facts on a node whose route has none never run.
    pub fn runs_acceptance(&self, route: &str) -> bool {
        self.route(route).is_some_and(|steps| {
            steps.iter().filter_map(|s| self.step(s)).any(|s| {
                s.loop_.as_ref().is_some_and(|l| {
                    l.stages
                        .iter()
                        .any(|st| matches!(st, looping::Stage::Command { .. }))
                })
            })
        })
    }

    /// The declared routes' names, for a message listing the valid ones (`leaf, root, …`).
    pub fn route_names(&self) -> String {
        self.routes.keys().cloned().collect::<Vec<_>>().join(", ")
    }

    /// The step a new node of `route` starts at.
    pub fn entry_step(&self, route: &str) -> Option<&str> {
        match self.entry.get(route) {
            Some(step) => Some(step.as_str()),
            None => self.route(route)?.first().map(String::as_str),
        }
    }

    /// The kind of node that walks `route`, when the manifest declares one.
    pub fn route_kind(&self, route: &str) -> Option<Kind> {
        self.route_kinds.get(route).copied()
    }

    /// The step after `step` on `route`, or `None` when `step` is the last.
    pub fn next_step(&self, route: &str, step: &str) -> Option<&str> {
        let steps = self.route(route)?;
        let at = steps.iter().position(|s| s == step)?;
        steps.get(at + 1).map(String::as_str)
    }
}

#[cfg(test)]
mod tests;
