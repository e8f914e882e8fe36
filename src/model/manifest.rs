//! The manifest: routes, steps, floors, gates, resume policies and attempt limits.
//!
//! The default (`manifest/coding-pipeline.json`) is embedded in the binary; `.splice/manifest.json`
//! replaces it when present. [`Manifest::parse`] types and validates everything at load and names
//! the JSON path of every problem it finds, so a bad manifest never reaches a pass.
//!
//! Steps say what they are for with a `role` (`spec`, `delegate`, `integrate`, `deliver`), so no
//! code outside this module names a step. A manifest of schema 1 (no `schema_version`) has no
//! roles and no artifacts: they are inferred when it loads (a step with a `spec` floor is the spec
//! step; steps named `delegate`, `integrate` and `deliver` take those roles; a step's artifact is
//! its first floor's `path`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// How much a node may advance without a person.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

/// The embedded default manifest.
pub const DEFAULT_MANIFEST: &str = include_str!("../../manifest/coding-pipeline.json");

/// The manifest shape this build writes and reads; older shapes are still read.
pub const MANIFEST_SCHEMA: u32 = 2;

/// The route families the writer needs to exist, one per [`super::Kind`].
pub const REQUIRED_ROUTES: &[&str] = &["root", "compound", "leaf"];

/// The floor kinds, each with its name and the parameters it reads. One list: the enum, its
/// names, its parameters and [`FloorKind::ALL`] all come from it.
macro_rules! floor_kinds {
    ($($(#[$doc:meta])* $variant:ident => $name:literal [$($param:literal),*],)*) => {
        /// A kind of floor a manifest may declare.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum FloorKind { $($(#[$doc])* $variant,)* }

        impl FloorKind {
            /// Every kind, in declaration order.
            pub const ALL: &[FloorKind] = &[$(FloorKind::$variant,)*];

            /// The name a manifest uses.
            pub fn name(self) -> &'static str {
                match self { $(FloorKind::$variant => $name,)* }
            }

            /// The parameters a floor of this kind reads (besides `kind`).
            pub fn params(self) -> &'static [&'static str] {
                match self { $(FloorKind::$variant => &[$($param),*],)* }
            }
        }
    };
}

floor_kinds! {
    /// The artifact at `path` exists.
    FileExists => "file_exists" ["path"],
    /// The markdown at `path` has every heading in `headings`.
    Headings => "headings" ["path", "headings"],
    /// The PRP at `path` declares scenario ids (recorded on the campaign root).
    ScenariosDeclared => "scenarios_declared" ["path"],
    /// The spec at `path` is complete; its verdict and files are recorded.
    Spec => "spec" ["path"],
    /// The latest review at `path` passes against the current HEAD.
    Review => "review" ["path", "back_to"],
    /// The split's children conserve the parent's scenarios, with provenance.
    ChildrenConserved => "children_conserved" [],
    /// Every sanctioned child is closed.
    ChildrenFinished => "children_finished" [],
    /// Every scenario id is carried by a test under the root's `test_paths`.
    Coverage => "coverage" [],
    /// One green run of the root's `suite_cmd` on the integration target.
    Suite => "suite" ["timeout_s"],
    /// The node's work landed on its target (ancestry or a merged PR).
    Delivered => "delivered" [],
    /// `argv` exits with `expect_exit`.
    Command => "command" ["argv", "expect_exit", "timeout_s"],
    /// A test run (`cmd` or `argv`, or a `junit` file) has no failures.
    Tests => "tests" ["cmd", "argv", "junit", "timeout_s"],
    /// SARIF findings (`file` or `argv`) below the `fail_on` levels.
    Sarif => "sarif" ["file", "argv", "fail_on", "timeout_s"],
}

impl fmt::Display for FloorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for FloorKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for FloorKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        FloorKind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = FloorKind::ALL.iter().map(|k| k.name()).collect();
                serde::de::Error::custom(format!(
                    "unknown floor kind \"{name}\" (known: {})",
                    known.join(", ")
                ))
            })
    }
}

/// What a step is for, when the machinery needs to find it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Writes the spec: its verdict may move a leaf onto the compound route, and its gate never
    /// relaxes without a verdict.
    Spec,
    /// A container waits here for its sanctioned children; children wait until it gets here.
    Delegate,
    /// `transition integrate` completes this step.
    Integrate,
    /// `transition deliver` completes this step.
    Deliver,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Spec => "spec",
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
    Prompt { prompt: String },
    Argv { argv: Vec<String> },
}

/// A declared floor: its kind and the kind's parameters (paths are templates).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FloorSpec {
    pub kind: FloorKind,
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

/// The longest `timeout_s` a step or floor may declare (one week): longer is a typo, and a
/// deadline that far out cannot overflow the clock.
pub const MAX_TIMEOUT_S: u64 = 7 * 24 * 3600;

/// One step of a route.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<Run>,
    /// The artifact the step is expected to produce (a template: `specs/{{bead.id}}.md`, or a
    /// handle such as `HEAD`), for the prompt's `{{artifact}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    #[serde(default)]
    pub floors: Vec<FloorSpec>,
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
    #[serde(default)]
    pub resume: Resume,
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    #[serde(default = "default_timeout")]
    pub timeout_s: u64,
    /// A route's `entry` may start after this step (and only after optional steps).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// Refused at load until the pass monitor gives it a runtime.
    #[serde(default, rename = "loop", skip_serializing_if = "Option::is_none")]
    pub loop_: Option<Value>,
    /// Refused at load until result routing gives it a runtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_result: Option<Value>,
}

impl Step {
    /// Does `level` relax this step's gate? Planning gates never relax.
    pub fn relaxed_by(&self, level: Autonomy) -> bool {
        !self.planning && self.relax.contains(&level)
    }

    pub fn has_role(&self, role: Role) -> bool {
        self.role == Some(role)
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
    /// Route name → the step a new node of that route enters at (default: the first).
    #[serde(default)]
    pub entry: BTreeMap<String, String>,
    pub steps: Vec<Step>,
    /// Refused at load until request tiers give it a runtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Value>,
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
        let de = &mut serde_json::Deserializer::from_str(text);
        match serde_path_to_error::deserialize::<_, Manifest>(de) {
            Ok(manifest) => manifest.checked(),
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

    /// Bring a deserialized manifest up to this shape and validate it.
    fn checked(mut self) -> Result<Manifest, ManifestProblems> {
        if self.schema_version > MANIFEST_SCHEMA {
            return Err(ManifestProblems(vec![format!(
                "schema_version: {} is newer than this splice reads ({MANIFEST_SCHEMA}); \
                 upgrade splice",
                self.schema_version
            )]));
        }
        if self.schema_version < MANIFEST_SCHEMA {
            self.infer_schema_one();
        }
        let problems = self.problems();
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(ManifestProblems(problems))
        }
    }

    /// Schema 1 had no roles and no artifacts: infer them (see the module doc).
    fn infer_schema_one(&mut self) {
        for step in &mut self.steps {
            if step.role.is_none() {
                step.role = if step.floors.iter().any(|f| f.kind == FloorKind::Spec) {
                    Some(Role::Spec)
                } else {
                    match step.name.as_str() {
                        "delegate" => Some(Role::Delegate),
                        "integrate" => Some(Role::Integrate),
                        "deliver" => Some(Role::Deliver),
                        _ => None,
                    }
                };
            }
            if step.artifact.is_none() {
                step.artifact = step
                    .floors
                    .iter()
                    .find_map(|f| f.str_param("path"))
                    .map(String::from);
            }
        }
        self.schema_version = MANIFEST_SCHEMA;
    }

    /// The embedded default manifest.
    pub fn default_manifest() -> Manifest {
        Manifest::parse(DEFAULT_MANIFEST).expect("the embedded manifest is valid")
    }

    /// Every validation problem, each naming its JSON path.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.tiers.is_some() {
            out.push(not_yet("tiers", "request tiers"));
        }
        let mut names = BTreeSet::new();
        let mut roles: BTreeMap<Role, &str> = BTreeMap::new();
        for (i, step) in self.steps.iter().enumerate() {
            step_problems(i, step, &mut out);
            if !names.insert(step.name.as_str()) {
                out.push(format!("steps[{i}].name: duplicate step \"{}\"", step.name));
            }
            if let Some(role) = step.role
                && let Some(other) = roles.insert(role, &step.name)
            {
                out.push(format!(
                    "steps[{i}].role: \"{}\" is already the role of step \"{other}\"; a role \
                     belongs to one step",
                    role.name()
                ));
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
            let Some(steps) = self.routes.get(route) else {
                out.push(format!("entry.{route}: unknown route \"{route}\""));
                continue;
            };
            let Some(at) = steps.iter().position(|s| s == step) else {
                out.push(format!(
                    "entry.{route}: step \"{step}\" is not on route {route}"
                ));
                continue;
            };
            for skipped in &steps[..at] {
                if self.step(skipped).is_some_and(|s| !s.optional) {
                    out.push(format!(
                        "entry.{route}: starting at \"{step}\" skips \"{skipped}\", which is not \
                         `optional: true`"
                    ));
                }
            }
        }
        out
    }

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

/// Every problem of a manifest's JSON that does not type, each with its path: every step, floor
/// and relax level is typed on its own, so one bad value does not hide the next; then the parts
/// that did type are validated as a whole.
fn type_problems(raw: &Value) -> Vec<String> {
    fn typed<T: serde::de::DeserializeOwned>(v: &Value, at: &str, out: &mut Vec<String>) -> bool {
        let Err(e) = serde_path_to_error::deserialize::<_, T>(v) else {
            return true;
        };
        let inner = e.path().to_string();
        let path = match (at.is_empty(), inner.as_str()) {
            (true, p) => p.to_string(),
            (false, ".") => at.to_string(),
            (false, p) => format!("{at}.{p}"),
        };
        out.push(format!("{path}: {}", e.inner()));
        false
    }
    let mut out = Vec::new();
    let mut rest = raw.clone();
    let mut kept = Vec::new();
    if let Some(Value::Array(steps)) = rest.as_object_mut().and_then(|o| o.remove("steps")) {
        for (i, mut step) in steps.into_iter().enumerate() {
            if let Some(obj) = step.as_object_mut() {
                if let Some(Value::Array(floors)) = obj.get_mut("floors") {
                    let mut j = 0;
                    floors.retain(|f| {
                        j += 1;
                        typed::<FloorSpec>(f, &format!("steps[{i}].floors[{}]", j - 1), &mut out)
                    });
                }
                if let Some(Value::Array(levels)) = obj.get_mut("relax") {
                    let mut j = 0;
                    levels.retain(|l| {
                        j += 1;
                        typed::<Autonomy>(l, &format!("steps[{i}].relax[{}]", j - 1), &mut out)
                    });
                }
            }
            if typed::<Step>(&step, &format!("steps[{i}]"), &mut out) {
                kept.push(step);
            } else if let Some(name) = step.get("name").filter(|n| n.is_string()) {
                // Keep the name, so routes naming it are not reported as well.
                kept.push(serde_json::json!({ "name": name }));
            }
        }
    }
    if let Some(o) = rest.as_object_mut() {
        o.insert("steps".into(), Value::Array(kept));
    }
    if typed::<Manifest>(&rest, "", &mut out)
        && let Ok(partial) = serde_json::from_value::<Manifest>(rest)
        && let Err(more) = partial.checked()
    {
        out.extend(more.0);
    }
    out
}

/// Deserialize a manifest embedded in another document (a snapshot) with the same typing,
/// upgrade and validation as [`Manifest::parse`].
pub fn deserialize_checked<'de, D: Deserializer<'de>>(d: D) -> Result<Manifest, D::Error> {
    Manifest::deserialize(d)?
        .checked()
        .map_err(|p| serde::de::Error::custom(format!("manifest: {p}")))
}

fn not_yet(path: &str, what: &str) -> String {
    format!(
        "{path}: not supported yet ({what} have no runtime in this splice, so the field would \
         do nothing); remove it"
    )
}

/// The `{{name}}` variables in a template, trimmed.
fn template_names(text: &str) -> Vec<&str> {
    text.split("{{")
        .skip(1)
        .filter_map(|part| part.split_once("}}").map(|(name, _)| name.trim()))
        .collect()
}

/// The problems of one step.
fn step_problems(i: usize, step: &Step, out: &mut Vec<String>) {
    if step.name.is_empty() {
        out.push(format!("steps[{i}].name: empty step name"));
    }
    if step.loop_.is_some() {
        out.push(not_yet(&format!("steps[{i}].loop"), "loop steps"));
    }
    if step.on_result.is_some() {
        out.push(not_yet(&format!("steps[{i}].on_result"), "result branches"));
    }
    if step.max_attempts == 0 {
        out.push(format!("steps[{i}].max_attempts: must be at least 1"));
    }
    if step.timeout_s == 0 || step.timeout_s > MAX_TIMEOUT_S {
        out.push(format!(
            "steps[{i}].timeout_s: {} is outside 1..={MAX_TIMEOUT_S} seconds",
            step.timeout_s
        ));
    }
    if let Some(artifact) = &step.artifact {
        for name in template_names(artifact) {
            if !["bead.id", "root.id", "step"].contains(&name) {
                out.push(format!(
                    "steps[{i}].artifact: unknown template variable `{{{{{name}}}}}` (bead.id, \
                     root.id or step)"
                ));
            }
        }
    }
    if let Some(Run::Argv { argv }) = &step.run
        && argv.is_empty()
    {
        out.push(format!("steps[{i}].run.argv: empty command"));
    }
    if !step.relax.is_empty() && step.gate.is_none() {
        out.push(format!(
            "steps[{i}].relax: the step has no gate to relax; add `\"gate\": \"human\"` or drop relax"
        ));
    }
    for (j, floor) in step.floors.iter().enumerate() {
        let known = floor.kind.params();
        for key in floor.params.keys() {
            if !known.contains(&key.as_str()) {
                let hint = if known.is_empty() {
                    "it takes none".to_string()
                } else {
                    format!("it takes {}", known.join(", "))
                };
                out.push(format!(
                    "steps[{i}].floors[{j}].{key}: a `{}` floor has no parameter \"{key}\" ({hint})",
                    floor.kind
                ));
            }
        }
        if let Some(t) = floor.params.get("timeout_s")
            && !t.as_u64().is_some_and(|t| (1..=MAX_TIMEOUT_S).contains(&t))
        {
            out.push(format!(
                "steps[{i}].floors[{j}].timeout_s: {t} is not a whole number of seconds in \
                 1..={MAX_TIMEOUT_S}"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems_of(text: &str) -> String {
        Manifest::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn the_default_manifest_declares_its_roles() {
        let m = Manifest::default_manifest();
        assert_eq!(m.schema_version, MANIFEST_SCHEMA);
        assert_eq!(m.step_with(Role::Spec).unwrap().name, "generate-spec");
        assert_eq!(m.step_with(Role::Delegate).unwrap().name, "delegate");
        assert!(m.is("integrate", Role::Integrate));
        assert!(m.is("deliver", Role::Deliver));
    }

    #[test]
    fn a_schema_one_manifest_gets_roles_and_artifacts_inferred() {
        let old = DEFAULT_MANIFEST
            .replace("\"schema_version\": 2", "\"version\": 1")
            .lines()
            .filter(|l| !l.contains("\"role\"") && !l.contains("\"artifact\""))
            .collect::<Vec<_>>()
            .join("\n");
        let m = Manifest::parse(&old).unwrap();
        let new = Manifest::default_manifest();
        assert_eq!(m.step_with(Role::Spec).unwrap().name, "generate-spec");
        assert!(m.is("delegate", Role::Delegate));
        assert_eq!(
            m.step("review").unwrap().artifact,
            new.step("review").unwrap().artifact
        );
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let newer = DEFAULT_MANIFEST.replace("\"schema_version\": 2", "\"schema_version\": 9");
        assert!(problems_of(&newer).contains("newer than this splice reads"));
    }

    #[test]
    fn unknown_kinds_fields_and_params_are_named() {
        let bad = DEFAULT_MANIFEST.replace("\"kind\": \"review\"", "\"kind\": \"revue\"");
        let p = problems_of(&bad);
        assert!(
            p.contains("steps[6].floors[0].kind") && p.contains("known: file_exists"),
            "{p}"
        );
        let bad = DEFAULT_MANIFEST.replace(
            "\"max_attempts\": 3,\n      \"timeout_s\": 3600",
            "\"max_attempt\": 3,\n      \"timeout_s\": 3600",
        );
        assert!(problems_of(&bad).contains("unknown field `max_attempt`"));
        let bad = DEFAULT_MANIFEST.replace(
            "{ \"kind\": \"children_conserved\" }\n      ],\n      \"gate\"",
            "{ \"kind\": \"children_conserved\", \"path\": \"x\" }\n      ],\n      \"gate\"",
        );
        assert!(problems_of(&bad).contains("has no parameter \"path\" (it takes none)"));
        let bad = DEFAULT_MANIFEST.replace(
            "\"relax\": [\"deep\"],\n      \"resume\": \"redo\"",
            "\"relax\": [\"deeper\"],\n      \"resume\": \"redo\"",
        );
        assert!(problems_of(&bad).contains("bad autonomy level \"deeper\""));
    }

    #[test]
    fn fields_without_a_runtime_are_refused() {
        let with = |field: &str| {
            DEFAULT_MANIFEST.replace(
                "\"name\": \"implement\",",
                &format!("\"name\": \"implement\", {field},"),
            )
        };
        assert!(problems_of(&with("\"loop\": {}")).contains("steps[5].loop: not supported yet"));
        assert!(
            problems_of(&with("\"on_result\": []"))
                .contains("steps[5].on_result: not supported yet")
        );
        let tiers = DEFAULT_MANIFEST.replacen('{', "{ \"tiers\": {},", 1);
        assert!(problems_of(&tiers).contains("tiers: not supported yet"));
    }

    #[test]
    fn timeouts_are_bounded_and_entries_skip_only_optional_steps() {
        let huge =
            DEFAULT_MANIFEST.replace("\"timeout_s\": 60", "\"timeout_s\": 18446744073709551615");
        assert!(problems_of(&huge).contains("timeout_s: 18446744073709551615 is outside"));
        let skip = DEFAULT_MANIFEST.replace("\"leaf\": \"generate-spec\"", "\"leaf\": \"review\"");
        assert!(
            problems_of(&skip).contains("skips \"generate-spec\", which is not `optional: true`")
        );
        let twice = DEFAULT_MANIFEST.replace(
            "\"name\": \"review\",",
            "\"name\": \"review\", \"role\": \"spec\",",
        );
        assert!(problems_of(&twice).contains("already the role of step"));
    }

    #[test]
    fn floor_kinds_round_trip_by_name() {
        for kind in FloorKind::ALL {
            let text = serde_json::to_string(kind).unwrap();
            assert_eq!(text, format!("\"{}\"", kind.name()));
            assert_eq!(serde_json::from_str::<FloorKind>(&text).unwrap(), *kind);
        }
    }
}
