//! Step prompt templates: `.splice/prompts/<name>.md` when the project has one, else the default
//! from `manifest/prompts/`, embedded in the binary.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::exec::template::substitute;
use crate::model::Step;
use crate::model::bead::DeliveryMethod;
use crate::model::manifest::prompts::DEFAULT_PROMPTS as DEFAULTS;
use crate::store::Store;

/// The template for prompt `name` when the node delivers by `method`, the most specific that
/// exists (a project's file or a default): `<name>-<method>` (the deliver step's pull-request
/// and direct variants), else `<name>`. No variant lets an agent merge: a pull request is opened
/// by splice and merged by a person or the forge (issue 33).
pub fn template_for(store: &Store, name: &str, method: DeliveryMethod) -> Result<String> {
    let variant = format!("{name}-{}", method.as_str());
    let custom = store.dir().join("prompts").join(format!("{variant}.md"));
    if custom.is_file() || DEFAULTS.iter().any(|(n, _)| *n == variant) {
        return template(store, &variant);
    }
    template(store, name)
}

/// The template named `name`.
pub fn template(store: &Store, name: &str) -> Result<String> {
    if !crate::store::ids::is_valid(name) {
        return Err(Error::Invalid(format!(
            "prompt name {name:?} cannot name a file"
        )));
    }
    let custom = store.dir().join("prompts").join(format!("{name}.md"));
    // A committed file: a regular one, no link followed, not blocking, bounded.
    if let Some(text) = crate::safe_read::read_text_optional(&custom, crate::safe_read::SETTINGS)? {
        return Ok(text);
    }
    DEFAULTS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| t.to_string())
        .ok_or_else(|| {
            Error::Invalid(format!(
                "no prompt template {name:?}: add {} or use one of the defaults",
                custom.display()
            ))
        })
}

/// The artifact `step` is expected to produce (its manifest `artifact`, rendered), for the
/// prompt's `{{artifact}}`; empty when the step declares none.
pub fn artifact_for(step: &Step, bead_id: &str, root_id: &str) -> Result<String> {
    let Some(template) = step.artifact.as_deref() else {
        return Ok(String::new());
    };
    substitute(template, &format!("steps.{}.artifact", step.name), |name| {
        Some(Cow::Borrowed(match name {
            "bead.id" => bead_id,
            "root.id" => root_id,
            "step" => step.name.as_str(),
            _ => return None,
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::prompt::{PromptVars, render};

    #[test]
    fn every_default_prompt_renders() {
        let manifest = crate::model::Manifest::default_manifest();
        // The step-back analysis's prompt is not a step's (`looping::render_step_back`).
        for (name, text) in DEFAULTS.iter().filter(|(n, _)| *n != "step-back") {
            let step = name.trim_end_matches("-pr").trim_end_matches("-direct");
            let step = manifest.step(step).expect("a prompt names a step");
            let vars = PromptVars {
                bead_id: "sp-1".into(),
                step: name.to_string(),
                artifact: artifact_for(step, "sp-1", "sp-1").unwrap(),
                ..PromptVars::default()
            };
            let out = render(text, &vars).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                out.contains("splice transition propose --bead sp-1"),
                "{name}"
            );
        }
    }

    #[test]
    fn the_deliver_prompt_follows_the_delivery_method() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".splice/beads")).unwrap();
        let store = Store::discover(Some(dir.path())).unwrap();
        let pr = template_for(&store, "deliver", DeliveryMethod::Pr).unwrap();
        let direct = template_for(&store, "deliver", DeliveryMethod::Direct).unwrap();
        // Issue 33: splice opens the pull request; the agent holds no forge credential.
        assert!(
            pr.contains("splice pushed") && pr.contains("Do not push"),
            "{pr}"
        );
        assert!(!pr.contains("--pr-url"), "{pr}");
        // Issue 10: splice lands a direct delivery; the agent never moves the target.
        assert!(direct.contains("never move") && direct.contains("splice itself merges"));
        assert!(!direct.contains("open a pull request"));
        // Steps without variants use their one template; a project's own file wins.
        assert_eq!(
            template_for(&store, "review", DeliveryMethod::Pr).unwrap(),
            template(&store, "review").unwrap()
        );
        std::fs::create_dir_all(store.dir().join("prompts")).unwrap();
        std::fs::write(
            store.dir().join("prompts/deliver-pr.md"),
            "ours {{bead.id}}",
        )
        .unwrap();
        assert_eq!(
            template_for(&store, "deliver", DeliveryMethod::Pr).unwrap(),
            "ours {{bead.id}}"
        );
    }
}
