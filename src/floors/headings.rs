//! `headings`: the markdown file at `path` has every required heading (any level, matched
//! case-insensitively on the heading's text).

use serde_json::json;

use super::{Ctx, Floor, Outcome};
use crate::model::manifest::{FloorKind, FloorSpec};

pub struct Headings;

/// The text of every ATX heading (`# Title`, `## Title ##`) outside fenced code blocks.
pub fn headings_of(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced || !trimmed.starts_with('#') {
            continue;
        }
        let hashes = trimmed.chars().take_while(|c| *c == '#').count();
        let rest = &trimmed[hashes..];
        if hashes <= 6 && (rest.is_empty() || rest.starts_with(' ')) {
            out.push(rest.trim().trim_end_matches('#').trim().to_string());
        }
    }
    out
}

impl Floor for Headings {
    fn check(&self, spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        const KIND: FloorKind = FloorKind::Headings;
        let required = spec.list_param("headings");
        let (rel, text) = match ctx.read_artifact(spec, KIND) {
            Ok(found) => found,
            Err(answer) => return *answer,
        };
        let found = headings_of(&text);
        let missing: Vec<&String> = required
            .iter()
            .filter(|r| !found.iter().any(|f| f.eq_ignore_ascii_case(r)))
            .collect();
        let evidence = json!({ "path": rel, "required": required, "missing": missing });
        if missing.is_empty() {
            Outcome::pass(KIND, format!("{rel} has every required heading"), evidence)
        } else {
            let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
            Outcome::refuse(
                KIND,
                format!("{rel} is missing the heading(s): {}", names.join(", ")),
                evidence,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::headings_of;

    #[test]
    fn finds_atx_headings_outside_code() {
        let md = "# Problem\ntext\n## Approach ##\n```\n# Risks\n```\n#NotAHeading\n### Risks\n";
        assert_eq!(headings_of(md), vec!["Problem", "Approach", "Risks"]);
    }
}
