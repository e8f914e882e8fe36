//! `spec`: the spec at `path` identifies its bead, carries a full base commit that exists, declares
//! a non-empty list of repository-relative files, and has a Gherkin scenario; an optional
//! `verdict` is `leaf` or `compound`.
//!
//! A node that owns no scenario (a lone task made without `--scenarios`, a child given none) has
//! its scenarios defined by its spec: then each `Scenario:` must carry its own id (`Scenario: S1
//! …` or a tag line `@S1`), the ids unique, and the ids are recorded on the node when the check
//! passes.
//!
//! The front matter is the small YAML subset specs use, parsed by hand: `key: value` lines and
//! `key:` followed by `- item` lines (or an inline `[a, b]` list), between two `---` lines.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;

use super::gherkin::scenarios;
use super::{Ctx, Effect, Floor, Outcome, is_full_sha, is_relative_inside};
use crate::model::bead::SpecVerdict;
use crate::model::manifest::{FloorKind, FloorSpec};

pub struct Spec;

const KIND: FloorKind = FloorKind::Spec;

/// A front-matter value: a scalar or a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Scalar(String),
    List(Vec<String>),
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    let quoted = s.len() >= 2
        && ((s.starts_with('"') && s.ends_with('"')) || (s.starts_with('\'') && s.ends_with('\'')));
    if quoted {
        s[1..s.len() - 1].to_string()
    } else {
        s.to_string()
    }
}

/// Split `text` into its front matter and body; `None` when it does not open with `---`.
pub fn front_matter(text: &str) -> Option<(BTreeMap<String, Value>, String)> {
    let mut lines = text.lines();
    if lines.next()?.trim_end() != "---" {
        return None;
    }
    let mut map: BTreeMap<String, Value> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut closed = false;
    let mut body = String::new();
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) = trimmed
            .strip_prefix("- ")
            .or(trimmed.strip_prefix('-').filter(|r| r.is_empty()))
        {
            if let Some(key) = &current {
                let entry = map.entry(key.clone()).or_insert(Value::List(Vec::new()));
                match entry {
                    Value::List(items) => items.push(unquote(item)),
                    Value::Scalar(_) => *entry = Value::List(vec![unquote(item)]),
                }
            }
            continue;
        }
        if let Some((key, value)) = trimmed.split_once(':') {
            let key = key.trim().to_string();
            let value = value.trim();
            if value.is_empty() {
                map.insert(key.clone(), Value::List(Vec::new()));
            } else if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                let items = inner
                    .split(',')
                    .map(unquote)
                    .filter(|s| !s.is_empty())
                    .collect();
                map.insert(key.clone(), Value::List(items));
            } else {
                map.insert(key.clone(), Value::Scalar(unquote(value)));
            }
            current = Some(key);
        }
    }
    if !closed {
        return None;
    }
    for line in lines {
        body.push_str(line);
        body.push('\n');
    }
    Some((map, body))
}

/// What a valid spec declares.
#[derive(Debug, PartialEq)]
pub struct Declared {
    pub bead: String,
    pub base_commit: String,
    pub files: Vec<String>,
    pub verdict: Option<SpecVerdict>,
}

/// Check the spec text against the node id and the file's stem; the commit's existence is the
/// caller's (it needs the repository). `Err` holds every problem found.
pub fn judge(text: &str, node: &str, stem: &str) -> Result<Declared, Vec<String>> {
    let Some((fm, body)) = front_matter(text) else {
        return Err(vec![
            "no front matter: the file must open with a `---` block".into(),
        ]);
    };
    let scalar = |k: &str| match fm.get(k) {
        Some(Value::Scalar(s)) => Some(s.clone()),
        _ => None,
    };
    let mut problems = Vec::new();
    let bead = scalar("bead").unwrap_or_default();
    if bead.is_empty() {
        problems.push("front matter has no `bead:`".to_string());
    } else {
        if bead != node {
            problems.push(format!(
                "front matter says bead `{bead}`, the node is `{node}`"
            ));
        }
        if bead != stem {
            problems.push(format!(
                "front matter says bead `{bead}`, the file is named `{stem}`"
            ));
        }
    }
    let base_commit = scalar("base_commit").unwrap_or_default();
    if !is_full_sha(&base_commit) {
        problems.push(format!(
            "`base_commit: {base_commit}` is not a full 40-hex commit sha"
        ));
    }
    let files = match fm.get("files") {
        Some(Value::List(items)) => items.clone(),
        Some(Value::Scalar(s)) => vec![s.clone()],
        None => Vec::new(),
    };
    if files.is_empty() {
        problems.push("`files:` is missing or empty".into());
    }
    for f in &files {
        if !is_relative_inside(f) {
            problems.push(format!(
                "file `{f}` is not a repository-relative path (absolute or `..`)"
            ));
        }
    }
    let verdict = scalar("verdict").and_then(|v| {
        let parsed = SpecVerdict::parse(&v);
        if parsed.is_none() {
            problems.push(format!("`verdict: {v}` must be `leaf` or `compound`"));
        }
        parsed
    });
    if scenarios(&body).is_empty() {
        problems.push("no Gherkin `Scenario:` in the body".into());
    }
    if problems.is_empty() {
        Ok(Declared {
            bead,
            base_commit: base_commit.to_ascii_lowercase(),
            files,
            verdict,
        })
    } else {
        Err(problems)
    }
}

impl Floor for Spec {
    fn check(&self, spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        let (rel, text) = match ctx.read_artifact(spec, KIND) {
            Ok(found) => found,
            Err(answer) => return *answer,
        };
        let stem = Path::new(&rel)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let declared = match judge(&text, &ctx.bead.id, &stem) {
            Ok(d) => d,
            Err(problems) => {
                return Outcome::refuse(
                    KIND,
                    format!("{rel}: {}", problems.join("; ")),
                    json!({ "path": rel, "problems": problems }),
                );
            }
        };
        let repo = match git2::Repository::discover(&ctx.workdir) {
            Ok(r) => r,
            Err(e) => {
                return Outcome::escalate(
                    KIND,
                    format!(
                        "cannot open the repository at {}: {}",
                        ctx.workdir.display(),
                        e.message()
                    ),
                    json!({ "path": rel }),
                );
            }
        };
        let exists = git2::Oid::from_str(&declared.base_commit)
            .ok()
            .is_some_and(|oid| repo.find_commit(oid).is_ok());
        let evidence = json!({
            "path": rel,
            "bead": declared.bead,
            "base_commit": declared.base_commit,
            "files": declared.files,
            "verdict": declared.verdict,
        });
        if !exists {
            return Outcome::refuse(
                KIND,
                format!(
                    "{rel}: base_commit {} is not a commit in this repository",
                    declared.base_commit
                ),
                evidence,
            );
        }
        let defined = match defined_scenarios(ctx, &rel, &text) {
            Ok(ids) => ids,
            Err(refusal) => return *refusal,
        };
        let mut out = Outcome::pass(KIND, format!("{rel} is a complete spec"), evidence)
            .with_effect(Effect::SetFiles(declared.files));
        if let Some(ids) = defined {
            out = out.with_effect(Effect::DefineScenarios(ids));
        }
        if let Some(v) = declared.verdict {
            out = out.with_effect(Effect::SetVerdict(v));
        }
        out
    }
}

/// For a node that owns no scenario: the ids its spec defines (each scenario named, the ids
/// unique), or the refusal saying which are not. `None` when the node owns scenarios already.
fn defined_scenarios(
    ctx: &Ctx,
    rel: &str,
    text: &str,
) -> Result<Option<Vec<String>>, Box<Outcome>> {
    if !ctx.bead.pipeline.scenarios.is_empty() {
        return Ok(None);
    }
    match super::scenarios_declared::judge(text) {
        Ok(ids) => Ok(Some(ids)),
        Err((reason, mut evidence)) => {
            evidence["path"] = json!(rel);
            Err(Box::new(Outcome::refuse(
                KIND,
                format!(
                    "{rel}: {} owns no scenario, so its spec defines them, each with its own id \
                     (`Scenario: S1 …`): {reason}",
                    ctx.bead.id
                ),
                evidence,
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    fn spec(extra: &str, body: &str) -> String {
        format!(
            "---\nbead: sp-1\nbase_commit: {SHA}\nfiles:\n  - src/a.rs\n  - \"src/b.rs\"\n{extra}---\n# Spec\n{body}"
        )
    }

    #[test]
    fn parses_a_good_spec() {
        let d = judge(&spec("verdict: leaf\n", "Scenario: S1 x\n"), "sp-1", "sp-1").unwrap();
        assert_eq!(d.files, vec!["src/a.rs", "src/b.rs"]);
        assert_eq!(d.verdict, Some(SpecVerdict::Leaf));
        let inline = format!(
            "---\nbead: sp-1\nbase_commit: {SHA}\nfiles: [a.rs, 'b.rs']\n---\nScenario: x\n"
        );
        assert_eq!(
            judge(&inline, "sp-1", "sp-1").unwrap().files,
            vec!["a.rs", "b.rs"]
        );
    }

    #[test]
    fn refusals() {
        let body = "Scenario: S1 x\n";
        let bad = |text: &str, node: &str| judge(text, node, "sp-1").unwrap_err().join("; ");
        assert!(bad(&spec("", body), "sp-2").contains("the node is `sp-2`"));
        assert!(bad(&spec("", body).replace(SHA, "0123456"), "sp-1").contains("full 40-hex"));
        assert!(bad(&spec("", ""), "sp-1").contains("no Gherkin"));
        assert!(bad(&spec("verdict: maybe\n", body), "sp-1").contains("leaf` or `compound"));
        let abs = spec("", body).replace("src/a.rs", "/etc/passwd");
        assert!(bad(&abs, "sp-1").contains("/etc/passwd"));
        let up = spec("", body).replace("src/a.rs", "../x.rs");
        assert!(bad(&up, "sp-1").contains("../x.rs"));
        let empty = format!("---\nbead: sp-1\nbase_commit: {SHA}\nfiles:\n---\n{body}");
        assert!(bad(&empty, "sp-1").contains("missing or empty"));
        assert!(bad("no front matter", "sp-1").contains("no front matter"));
        assert!(bad("---\nbead: sp-1\n", "sp-1").contains("no front matter"));
        assert!(judge(&spec("", body), "sp-1", "sp-9").unwrap_err()[0].contains("named `sp-9`"));
    }
}
