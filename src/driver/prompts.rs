//! Step prompt templates: `.splice/prompts/<name>.md` when the project has one, else the default
//! from `manifest/prompts/`, embedded in the binary.

use crate::error::{Error, Result};
use crate::store::Store;

const DEFAULTS: &[(&str, &str)] = &[
    (
        "generate-design",
        include_str!("../../manifest/prompts/generate-design.md"),
    ),
    (
        "create-prp",
        include_str!("../../manifest/prompts/create-prp.md"),
    ),
    (
        "refine-design",
        include_str!("../../manifest/prompts/refine-design.md"),
    ),
    (
        "to-issues",
        include_str!("../../manifest/prompts/to-issues.md"),
    ),
    (
        "generate-spec",
        include_str!("../../manifest/prompts/generate-spec.md"),
    ),
    (
        "implement",
        include_str!("../../manifest/prompts/implement.md"),
    ),
    ("review", include_str!("../../manifest/prompts/review.md")),
    ("deliver", include_str!("../../manifest/prompts/deliver.md")),
    (
        "integrate",
        include_str!("../../manifest/prompts/integrate.md"),
    ),
];

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

/// The artifact a step is expected to produce, for the prompt's `{{artifact}}`.
pub fn artifact_for(step: &str, bead_id: &str, root_id: &str) -> String {
    match step {
        "generate-design" => format!("docs/design/{root_id}.md"),
        "create-prp" | "refine-design" => format!("docs/prp/{root_id}.md"),
        "to-issues" => "split".into(),
        "generate-spec" => format!("specs/{bead_id}.md"),
        "implement" => "HEAD".into(),
        "review" => format!("reviews/{bead_id}.md"),
        "deliver" => "HEAD".into(),
        "integrate" => format!("docs/reconcile/{bead_id}.md"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::prompt::{PromptVars, render};

    #[test]
    fn every_default_prompt_renders() {
        for (name, text) in DEFAULTS {
            let vars = PromptVars {
                bead_id: "sp-1".into(),
                step: name.to_string(),
                artifact: artifact_for(name, "sp-1", "sp-1"),
                ..PromptVars::default()
            };
            let out = render(text, &vars).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                out.contains("splice transition propose --bead sp-1"),
                "{name}"
            );
        }
    }
}
