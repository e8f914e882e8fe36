//! Validating a manifest as it loads: typing every part (so one bad value does not hide the
//! next), bringing a schema-1 file up to this shape, and every cross-field rule, each problem
//! naming its JSON path.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{
    Action, Autonomy, Branch, FloorKind, FloorSpec, Kind, MANIFEST_SCHEMA, MAX_TIMEOUT_S, Manifest,
    ManifestProblems, Match, REQUIRED_ROUTES, Role, Run, Step, When,
};

impl Manifest {
    /// Bring a deserialized manifest up to this shape and validate it.
    pub(super) fn checked(mut self) -> Result<Manifest, ManifestProblems> {
        if self.schema_version > MANIFEST_SCHEMA {
            return Err(ManifestProblems(vec![format!(
                "schema_version: {} is newer than this splice reads ({MANIFEST_SCHEMA}); \
                 upgrade splice",
                self.schema_version
            )]));
        }
        let declared = self.schema_version;
        if declared < 2 {
            self.infer_schema_one();
        }
        if declared < 3 {
            self.migrate_to_three();
        }
        self.coverage_back_to_as_branch();
        self.schema_version = MANIFEST_SCHEMA;
        let mut problems = self.problems();
        if declared >= 3 {
            for route in self.routes.keys() {
                if !self.route_kinds.contains_key(route) {
                    problems.push(format!(
                        "route_kinds.{route}: missing (declare the kind of node that walks route                          {route}: root, compound or leaf)"
                    ));
                }
            }
        }
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
                        "to-issues" => Some(Role::Split),
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
    }

    /// Schema 2 had no route kinds and hard-coded two routings; schema 3 declares them: the
    /// routes named `root`, `compound` and `leaf` get those kinds; a step with a `review` floor
    /// gets the branch that sends a FAIL back (to the floor's `back_to`, default `implement`);
    /// the spec step gets the branch that moves a `compound` verdict to the compound route.
    fn migrate_to_three(&mut self) {
        for kind in [Kind::Root, Kind::Compound, Kind::Leaf] {
            if self.routes.contains_key(kind.route()) {
                self.route_kinds
                    .entry(kind.route().to_string())
                    .or_insert(kind);
            }
        }
        let compound = self.routes.contains_key(Kind::Compound.route());
        for step in &mut self.steps {
            let mut added = Vec::new();
            for floor in step
                .floors
                .iter_mut()
                .filter(|f| f.kind == FloorKind::Review)
            {
                let back = floor.params.remove("back_to");
                let back = back.as_ref().and_then(Value::as_str).unwrap_or("implement");
                added.push(fail_goes_back(back));
            }
            if step.role == Some(Role::Spec) && compound {
                added.push(compound_reroutes());
            }
            if step.on_result.is_empty() {
                step.on_result = added;
            }
        }
    }

    /// A coverage floor's `back_to` (every schema up to 3 accepts it) is the step's result
    /// branch that sends a refusal with missing scenario ids there, after the step's own
    /// branches: the branch is the one way a refusal goes back. A `back_to` that names no step
    /// stays, for [`Manifest::problems`] to name.
    fn coverage_back_to_as_branch(&mut self) {
        let names: BTreeSet<String> = self.steps.iter().map(|s| s.name.clone()).collect();
        for step in &mut self.steps {
            for floor in step
                .floors
                .iter_mut()
                .filter(|f| f.kind == FloorKind::Coverage)
            {
                let Some(back) = floor.str_param("back_to").map(String::from) else {
                    continue;
                };
                if !names.contains(&back) {
                    continue;
                }
                floor.params.remove("back_to");
                step.on_result.push(uncovered_goes_back(&back));
            }
        }
    }

    /// Every validation problem, each naming its JSON path.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
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
        for (i, step) in self.steps.iter().enumerate() {
            param_value_problems(i, step, &names, &mut out);
            self.branch_problems(i, step, &mut out);
        }
        for route in self.route_kinds.keys() {
            if !self.routes.contains_key(route) {
                out.push(format!(
                    "route_kinds.{route}: no route \"{route}\" is declared"
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
        if let Some(tiers) = &self.tiers {
            out.extend(tiers.problems(self));
        }
        out
    }
}

/// Every problem of a manifest's JSON that does not type, each with its path: every step, floor
/// and relax level is typed on its own, so one bad value does not hide the next; then the parts
/// that did type are validated as a whole.
pub(super) fn type_problems(raw: &Value) -> Vec<String> {
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
            } else if let Some(stub) = stand_in(&step) {
                kept.push(stub);
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

/// What stands in for a step that does not type, in the checks of the whole manifest: its name,
/// so routes naming it are not reported as well, and what those checks read of a step besides
/// (`optional`: a route's entry or a tier's route may skip it; its `role`), each when it types
/// on its own. Left out, a default would be checked instead: an optional step with a bad
/// `timeout_s` was then not optional, and a route starting after it was reported too. The rest
/// of the step is not checked until it types.
fn stand_in(step: &Value) -> Option<Value> {
    let name = step.get("name").filter(|n| n.is_string())?;
    let mut stub = serde_json::json!({ "name": name });
    for field in ["optional", "role"] {
        let Some(value) = step.get(field) else {
            continue;
        };
        let mut with = stub.clone();
        with[field] = value.clone();
        if serde_json::from_value::<Step>(with.clone()).is_ok() {
            stub = with;
        }
    }
    Some(stub)
}

/// Deserialize a manifest embedded in another document (a snapshot) with the same typing,
/// upgrade and validation as [`Manifest::parse`].
pub fn deserialize_checked<'de, D: Deserializer<'de>>(d: D) -> Result<Manifest, D::Error> {
    Manifest::deserialize(d)?
        .checked()
        .map_err(|p| serde::de::Error::custom(format!("manifest: {p}")))
}

/// The `{{name}}` variables in a template, trimmed, read the way the renderer
/// (`exec::template::substitute`) reads them; `None` at a `{{` without its `}}`.
pub(super) fn template_names(text: &str) -> Option<Vec<&str>> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let close = after.find("}}")?;
        names.push(after[..close].trim());
        rest = &after[close + 2..];
    }
    Some(names)
}

/// Floor parameters whose values are checked: a `back_to` names a declared step; a coverage
/// floor reads in `target` or `workdir`.
fn param_value_problems(i: usize, step: &Step, names: &BTreeSet<&str>, out: &mut Vec<String>) {
    for (j, floor) in step.floors.iter().enumerate() {
        if let Some(back) = floor.params.get("back_to")
            && !back.as_str().is_some_and(|b| names.contains(b))
        {
            out.push(format!(
                "steps[{i}].floors[{j}].back_to: {back} is not a step of this manifest"
            ));
        }
        if let Some(read_in) = floor.params.get("read_in")
            && !matches!(read_in.as_str(), Some("target" | "workdir"))
        {
            out.push(format!(
                "steps[{i}].floors[{j}].read_in: {read_in} is neither \"target\" nor \"workdir\""
            ));
        }
    }
}

/// The variables an argv step's command may name (`exec::template::command_argv`).
const ARGV_VARIABLES: &[&str] = &[
    "bead", "step", "attempt", "worktree", "holder", "run", "model",
];

/// The problems of an argv step's command at `path` (e.g. a `[agent.steps.<step>] command`
/// replacing its argv): empty, or naming a variable an argv step cannot.
pub fn argv_problems(path: &str, argv: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    if argv.is_empty() {
        out.push(format!("{path}: empty command"));
    }
    for (j, arg) in argv.iter().enumerate() {
        names_known(&format!("{path}[{j}]"), arg, ARGV_VARIABLES, &mut out);
    }
    out
}

/// Every `{{name}}` of `template` is closed and one of `known`; the problems, at `path`.
fn names_known(path: &str, template: &str, known: &[&str], out: &mut Vec<String>) {
    let Some(names) = template_names(template) else {
        out.push(format!("{path}: `{{{{` without a closing `}}}}`"));
        return;
    };
    for name in names.into_iter().filter(|n| !known.contains(n)) {
        out.push(format!(
            "{path}: unknown template variable `{{{{{name}}}}}` (one of {})",
            known.join(", ")
        ));
    }
}

/// The step's templates render: its artifact, its argv, its prompt's name.
fn template_problems(i: usize, step: &Step, out: &mut Vec<String>) {
    if let Some(artifact) = &step.artifact {
        names_known(
            &format!("steps[{i}].artifact"),
            artifact,
            &["bead.id", "root.id", "step"],
            out,
        );
    }
    match &step.run {
        Some(Run::Argv { argv }) if argv.is_empty() => {
            out.push(format!("steps[{i}].run.argv: empty command"));
        }
        Some(Run::Argv { argv }) => {
            for (j, arg) in argv.iter().enumerate() {
                names_known(
                    &format!("steps[{i}].run.argv[{j}]"),
                    arg,
                    ARGV_VARIABLES,
                    out,
                );
            }
        }
        Some(Run::Prompt { prompt }) => {
            let plain = !prompt.is_empty()
                && prompt
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !plain {
                out.push(format!(
                    "steps[{i}].run.prompt: {prompt:?} cannot name a prompt file (letters, digits, \
                     '-' and '_' only)"
                ));
            }
        }
        None => {}
    }
}

/// The problems of one step.
fn step_problems(i: usize, step: &Step, out: &mut Vec<String>) {
    if step.name.is_empty() {
        out.push(format!("steps[{i}].name: empty step name"));
    }
    if let Some(l) = &step.loop_ {
        l.problems(i, out);
        if step.run.is_none() {
            out.push(format!(
                "steps[{i}].loop: a loop step iterates its command; give the step a `run`"
            ));
        }
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
    template_problems(i, step, out);
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

/// The branch schema 2 hard-coded on a review step: a FAIL goes back to `back`, with the
/// review's text as guidance (a stale review carries `stale: true` and no `verdict`, so it
/// never matches).
fn fail_goes_back(back: &str) -> Branch {
    Branch {
        when: When::Refused,
        matcher: Match {
            field: Some("verdict".into()),
            equals: Some(Value::from("FAIL")),
            ..Match::default()
        },
        action: Action {
            goto: Some(back.to_string()),
            guidance: Some("{{ result.text }}".into()),
            ..Action::default()
        },
    }
}

/// The branch a coverage floor's `back_to` stands for: a refusal with scenario ids no test
/// carries (the floor's evidence `covered: false`) enters `back`; the floor's own guidance
/// names the ids.
fn uncovered_goes_back(back: &str) -> Branch {
    Branch {
        when: When::Refused,
        matcher: Match {
            field: Some("covered".into()),
            equals: Some(Value::Bool(false)),
            ..Match::default()
        },
        action: Action {
            goto: Some(back.to_string()),
            ..Action::default()
        },
    }
}

/// The branch schema 2 hard-coded on the spec step: a `compound` verdict moves the node to the
/// compound route.
fn compound_reroutes() -> Branch {
    Branch {
        when: When::Accepted,
        matcher: Match {
            field: Some("verdict".into()),
            equals: Some(Value::from("compound")),
            ..Match::default()
        },
        action: Action {
            route: Some(Kind::Compound.route().to_string()),
            ..Action::default()
        },
    }
}
