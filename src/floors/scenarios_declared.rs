//! `scenarios_declared`: the PRP at `path` states Gherkin scenarios, each with an id, the ids
//! unique (case-insensitively), at least one. The ids are recorded on the campaign root.

use std::collections::BTreeMap;

use serde_json::json;

use super::gherkin::{Scenario, scenarios};
use super::{Ctx, Effect, Floor, Outcome};
use crate::model::manifest::{FloorKind, FloorSpec};

pub struct ScenariosDeclared;

const KIND: FloorKind = FloorKind::ScenariosDeclared;

/// Judge the scenarios of a PRP's text: the ids, or the refusal reason and evidence.
pub fn judge(text: &str) -> Result<Vec<String>, (String, serde_json::Value)> {
    let found: Vec<Scenario> = scenarios(text);
    if found.is_empty() {
        return Err((
            "no Gherkin scenario (`Scenario: S1 …`) found".into(),
            json!({ "scenarios": 0 }),
        ));
    }
    let without: Vec<usize> = found
        .iter()
        .filter(|s| s.id.is_none())
        .map(|s| s.line)
        .collect();
    if !without.is_empty() {
        let lines: Vec<String> = without.iter().map(usize::to_string).collect();
        return Err((
            format!(
                "scenario(s) without an id on line(s) {}: write `Scenario: S1 …` or a tag line `@S1` before it",
                lines.join(", ")
            ),
            json!({ "without_id": without }),
        ));
    }
    let mut seen: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for s in &found {
        let id = s.id.as_deref().unwrap_or_default().to_ascii_uppercase();
        seen.entry(id).or_default().push(s.line);
    }
    let dupes: BTreeMap<&String, &Vec<usize>> =
        seen.iter().filter(|(_, lines)| lines.len() > 1).collect();
    if !dupes.is_empty() {
        let names: Vec<&str> = dupes.keys().map(|k| k.as_str()).collect();
        return Err((
            format!("duplicate scenario id(s): {}", names.join(", ")),
            json!({ "duplicates": dupes }),
        ));
    }
    Ok(found.into_iter().filter_map(|s| s.id).collect())
}

impl Floor for ScenariosDeclared {
    fn check(&self, spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        let (rel, text) = match ctx.read_artifact(spec, KIND) {
            Ok(found) => found,
            Err(answer) => return *answer,
        };
        match judge(&text) {
            Ok(ids) => Outcome::pass(
                KIND,
                format!("{rel} declares {} scenario(s)", ids.len()),
                json!({ "path": rel, "ids": ids }),
            )
            .with_effect(Effect::SetScenarios(ids)),
            Err((reason, mut evidence)) => {
                evidence["path"] = json!(rel);
                Outcome::refuse(KIND, format!("{rel}: {reason}"), evidence)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::judge;

    #[test]
    fn passes_with_unique_ids() {
        let ids = judge("Scenario: S1 adds\n@S2\nScenario: subtracts\n").unwrap();
        assert_eq!(ids, vec!["S1", "S2"]);
    }

    #[test]
    fn refuses_missing_id_duplicates_and_none() {
        assert!(
            judge("no scenarios here")
                .unwrap_err()
                .0
                .contains("no Gherkin")
        );
        let (reason, _) = judge("Scenario: S1 a\nScenario: adds things\n").unwrap_err();
        assert!(reason.contains("line(s) 2"), "{reason}");
        let (reason, _) = judge("Scenario: S1 a\nScenario: s1 b\n").unwrap_err();
        assert!(
            reason.contains("duplicate") && reason.contains("S1"),
            "{reason}"
        );
    }
}
