//! A saved plan (`docs/plan.md`): a campaign's scenarios and its tasks, with their dependencies
//! by id, typed strictly (unknown fields refused) and validated as a whole before anything is
//! written. [`Plan::parse`] is the one entry: bytes in, a plan whose tasks are in topological
//! order out, or a message naming the field (a JSON path such as `tasks[1] (t2).depends_on`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::bead::Acceptance;
use super::bead::Kind;
use super::manifest::Autonomy;
use super::tier::Tier;

/// The plan file shape this build reads and writes.
pub const PLAN_SCHEMA: u32 = 1;

/// The tiers a plan's task may name: leaf tiers (a task is a leaf; `architectural` is a
/// campaign, which the plan itself is). `standard` is accepted here, never chosen by a
/// classifier.
pub fn task_tiers() -> Vec<Tier> {
    Tier::ALL
        .into_iter()
        .filter(|t| t.kind() == Kind::Leaf)
        .collect()
}

fn task_tier_names() -> String {
    task_tiers()
        .iter()
        .map(|t| t.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A saved, typed plan (`docs/plan.md`): a campaign's scenarios and tasks, run by `splice plan
/// approve`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The file's shape ([`PLAN_SCHEMA`]).
    pub schema_version: u32,
    /// The campaign's title.
    pub title: String,
    /// What the campaign is for (the root's description); optional.
    #[serde(default)]
    pub description: String,
    /// The scenarios the campaign must cover.
    pub scenarios: Vec<PlanScenario>,
    /// The campaign's suite command (the root's `suite_cmd`).
    pub suite_cmd: String,
    /// Where the coverage floor looks for scenario ids (the root's `test_paths`).
    pub test_paths: Vec<String>,
    /// The campaign's autonomy level (`hitl`, `wave`, `deep`).
    #[serde(default)]
    pub autonomy: Option<String>,
    /// The campaign's delivery target branch.
    #[serde(default)]
    pub target: Option<String>,
    /// The tasks, each a leaf of the campaign.
    pub tasks: Vec<PlanTask>,
}

/// A scenario the campaign must cover.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlanScenario {
    /// Its id (`S1`).
    pub id: String,
    /// What it is.
    pub title: String,
}

/// A task of the plan: one leaf.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlanTask {
    /// Its id in the plan.
    pub id: String,
    /// Its title.
    pub title: String,
    /// What the work is.
    #[serde(default)]
    pub description: String,
    /// Its request tier (a leaf tier).
    #[serde(default)]
    pub tier: Option<String>,
    /// The scenario ids it owns.
    pub scenarios: Vec<String>,
    /// Its declared file scope.
    #[serde(default)]
    pub files: Vec<String>,
    /// The plan ids of tasks it depends on (`blocks`).
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// The acceptance checks it must pass.
    #[serde(default)]
    pub acceptance: Vec<Acceptance>,
}

/// An id of a plan's scenario, task or acceptance check: letters, digits, `-`, `_`, `.`.
fn good_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A repository-relative path without `..` (the same rule as a split's `files`).
fn relative_inside(p: &str) -> bool {
    let path = std::path::Path::new(p);
    !p.is_empty()
        && path.is_relative()
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

impl Plan {
    /// Parse and validate; the tasks come back in topological order (a task after every task
    /// it depends on; otherwise in the file's order).
    pub fn parse(text: &str) -> Result<Plan, String> {
        let mut de = serde_json::Deserializer::from_str(text);
        let mut plan: Plan = super::deserialize_at(&mut de)?;
        plan.check_top()?;
        let declared = plan.check_scenarios()?;
        plan.check_tasks(&declared)?;
        plan.tasks = plan.ordered()?;
        Ok(plan)
    }

    /// The autonomy named, parsed (checked by [`Plan::parse`]).
    pub fn autonomy_level(&self) -> Option<Autonomy> {
        self.autonomy.as_deref().and_then(Autonomy::parse)
    }

    fn check_top(&self) -> Result<(), String> {
        if self.schema_version != PLAN_SCHEMA {
            return Err(format!(
                "schema_version: {} is not a plan schema this splice reads (expected {PLAN_SCHEMA})",
                self.schema_version
            ));
        }
        if self.title.trim().is_empty() {
            return Err("title: must not be empty".into());
        }
        if self.suite_cmd.trim().is_empty() {
            return Err("suite_cmd: must not be empty (integrate runs it)".into());
        }
        if self.test_paths.is_empty() {
            return Err("test_paths: name at least one".into());
        }
        if let Some((i, p)) = self
            .test_paths
            .iter()
            .enumerate()
            .find(|(_, p)| !relative_inside(p))
        {
            return Err(format!(
                "test_paths[{i}]: {p:?} must be a repository-relative path without `..`"
            ));
        }
        if let Some(a) = &self.autonomy
            && Autonomy::parse(a).is_none()
        {
            return Err(format!("autonomy: {a:?} is not hitl, wave or deep"));
        }
        if self.tasks.is_empty() {
            return Err("tasks: a plan has at least one task".into());
        }
        Ok(())
    }

    /// The declared scenario ids (unique, well-formed, each owned by some task).
    fn check_scenarios(&self) -> Result<BTreeSet<String>, String> {
        let mut declared = BTreeSet::new();
        for (i, s) in self.scenarios.iter().enumerate() {
            if !good_id(&s.id) {
                return Err(format!(
                    "scenarios[{i}].id: {:?} may hold only letters, digits, '-', '_' and '.'",
                    s.id
                ));
            }
            if !declared.insert(s.id.to_ascii_lowercase()) {
                return Err(format!("scenarios[{i}].id: {} is declared twice", s.id));
            }
        }
        if declared.is_empty() {
            return Err("scenarios: a plan declares at least one scenario".into());
        }
        for s in &self.scenarios {
            let owned = self
                .tasks
                .iter()
                .any(|t| t.scenarios.iter().any(|o| o.eq_ignore_ascii_case(&s.id)));
            if !owned {
                return Err(format!(
                    "scenarios: {} is owned by no task (name it in a task's scenarios)",
                    s.id
                ));
            }
        }
        Ok(declared)
    }

    fn check_tasks(&self, declared: &BTreeSet<String>) -> Result<(), String> {
        let mut ids = BTreeSet::new();
        for (i, t) in self.tasks.iter().enumerate() {
            let at = format!("tasks[{i}] ({})", t.id);
            if !good_id(&t.id) {
                return Err(format!(
                    "tasks[{i}].id: {:?} may hold only letters, digits, '-', '_' and '.'",
                    t.id
                ));
            }
            if !ids.insert(t.id.as_str()) {
                return Err(format!("{at}.id: {} is the id of an earlier task", t.id));
            }
            if t.title.trim().is_empty() {
                return Err(format!("{at}.title: must not be empty"));
            }
            check_tier(&at, t.tier.as_deref())?;
            for s in &t.scenarios {
                if !declared.contains(&s.to_ascii_lowercase()) {
                    return Err(format!(
                        "{at}.scenarios: {s} is not declared in the plan's scenarios"
                    ));
                }
            }
            if let Some(f) = t.files.iter().find(|f| !relative_inside(f)) {
                return Err(format!(
                    "{at}.files: {f:?} must be a repository-relative path without `..`"
                ));
            }
            check_acceptance(&at, &t.acceptance)?;
        }
        for (i, t) in self.tasks.iter().enumerate() {
            for d in &t.depends_on {
                if !ids.contains(d.as_str()) {
                    return Err(format!(
                        "tasks[{i}] ({}).depends_on: {d:?} names no task of the plan",
                        t.id
                    ));
                }
                if *d == t.id {
                    return Err(format!(
                        "tasks[{i}] ({}).depends_on: a task cannot depend on itself",
                        t.id
                    ));
                }
            }
        }
        Ok(())
    }

    /// The tasks in topological order (Kahn's, the file's order among the ready), or the tasks
    /// on a dependency cycle.
    fn ordered(&self) -> Result<Vec<PlanTask>, String> {
        let mut waiting: BTreeMap<&str, BTreeSet<&str>> = self
            .tasks
            .iter()
            .map(|t| {
                (
                    t.id.as_str(),
                    t.depends_on.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        let mut out: Vec<PlanTask> = Vec::with_capacity(self.tasks.len());
        while out.len() < self.tasks.len() {
            let next = self
                .tasks
                .iter()
                .find(|t| waiting.get(t.id.as_str()).is_some_and(BTreeSet::is_empty));
            let Some(next) = next else {
                let cycle: Vec<&str> = waiting.keys().copied().collect();
                return Err(format!(
                    "tasks: a dependency cycle among {} (depends_on)",
                    cycle.join(", ")
                ));
            };
            waiting.remove(next.id.as_str());
            for deps in waiting.values_mut() {
                deps.remove(next.id.as_str());
            }
            out.push(next.clone());
        }
        Ok(out)
    }
}

fn check_tier(at: &str, tier: Option<&str>) -> Result<(), String> {
    let Some(t) = tier else {
        return Ok(());
    };
    match t.parse::<Tier>() {
        Ok(tier) if tier.kind() == Kind::Leaf => Ok(()),
        Ok(_) => Err(format!(
            "{at}.tier: {t} is a campaign, not a task (the plan is the campaign; a task's tier \
             is one of {})",
            task_tier_names()
        )),
        Err(_) => Err(format!(
            "{at}.tier: unknown tier {t:?} (one of {})",
            task_tier_names()
        )),
    }
}

fn check_acceptance(at: &str, checks: &[Acceptance]) -> Result<(), String> {
    let mut ids = BTreeSet::new();
    for (j, a) in checks.iter().enumerate() {
        if !good_id(&a.id) {
            return Err(format!("{at}.acceptance[{j}].id: {:?} is not an id", a.id));
        }
        if !ids.insert(a.id.as_str()) {
            return Err(format!("{at}.acceptance[{j}].id: {} is given twice", a.id));
        }
        if a.argv.first().is_none_or(|p| p.trim().is_empty()) {
            return Err(format!(
                "{at}.acceptance[{j}] ({}).argv: name a program",
                a.id
            ));
        }
    }
    Ok(())
}

/// The index of each task id in the (ordered) tasks.
pub fn index_of(tasks: &[PlanTask]) -> BTreeMap<&str, usize> {
    tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(tasks: &str) -> String {
        format!(
            r#"{{"schema_version": 1, "title": "T", "scenarios": [{{"id": "S1", "title": "s"}}],
               "suite_cmd": "true", "test_paths": ["tests"], "tasks": {tasks}}}"#
        )
    }

    fn ids(p: &Plan) -> Vec<&str> {
        p.tasks.iter().map(|t| t.id.as_str()).collect()
    }

    #[test]
    fn tasks_come_in_topological_order_else_in_the_files_order() {
        let p = Plan::parse(&plan(
            r#"[{"id": "c", "title": "c", "scenarios": [], "depends_on": ["a", "b"]},
                {"id": "a", "title": "a", "scenarios": ["S1"], "depends_on": ["b"]},
                {"id": "b", "title": "b", "scenarios": []},
                {"id": "d", "title": "d", "scenarios": []}]"#,
        ))
        .unwrap();
        assert_eq!(ids(&p), ["b", "a", "c", "d"]);
        let p = Plan::parse(&plan(
            r#"[{"id": "x", "title": "x", "scenarios": ["s1"]},
                {"id": "y", "title": "y", "scenarios": []}]"#,
        ))
        .unwrap();
        assert_eq!(ids(&p), ["x", "y"], "scenario ids match case-insensitively");
    }

    #[test]
    fn standard_is_a_task_tier_auto_and_architectural_are_not() {
        let with = |tier: &str| {
            Plan::parse(&plan(&format!(
                r#"[{{"id": "a", "title": "a", "scenarios": ["S1"], "tier": "{tier}"}}]"#
            )))
        };
        for ok in ["trivial", "light", "standard", "substantial"] {
            assert!(with(ok).is_ok(), "{ok}");
        }
        for bad in ["auto", "architectural", "Light"] {
            let err = with(bad).unwrap_err();
            assert!(err.starts_with("tasks[0] (a).tier: "), "{bad}: {err}");
        }
    }

    #[test]
    fn a_missing_required_field_is_named() {
        let err = Plan::parse(r#"{"schema_version": 1, "title": "T"}"#).unwrap_err();
        assert!(err.contains("missing field `scenarios`"), "{err}");
    }
}
