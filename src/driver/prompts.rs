//! Step prompt templates: `.splice/prompts/<name>.md` when the project has one, else the default
//! from `manifest/prompts/`, embedded in the binary.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::exec::template::substitute;
use crate::model::Step;
use crate::model::bead::DeliveryMethod;
use crate::model::manifest::prompts::DEFAULT_PROMPTS as DEFAULTS;
use crate::store::Store;

/// The template for prompt `name` when the node delivers by `method`: `<name>-<method>` where
/// one exists (the deliver step's pull-request and direct variants), else `<name>`.
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
    match std::fs::read_to_string(&custom) {
        Ok(text) => return Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(&custom, e)),
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
        for (name, text) in DEFAULTS {
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
        assert!(pr.contains("--pr-url") && !pr.contains("update-ref"));
        assert!(direct.contains("update-ref") && !direct.contains("open a pull request"));
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
