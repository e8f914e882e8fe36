//! `set-acceptance`: a person sets the acceptance facts of a node (`pipeline.acceptance:
//! [{id, argv}]`), which a loop step's `command` stage runs each iteration (`docs/monitor.md`).
//! A saved plan sets them at creation (`docs/plan.md`); this verb sets or replaces them later.

use serde::{Deserialize, Serialize};

use super::{Caller, Ctx, Refusal, Verb, require_open};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::model::bead::Acceptance;
use crate::store::{Change, Reads};

/// The most facts a node may have.
pub const MAX_FACTS: usize = 100;

/// One fact as a facts file gives it (unknown fields refused).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fact {
    id: String,
    argv: Vec<String>,
}

/// The facts set.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct AcceptanceSet {
    pub bead: String,
    pub acceptance: Vec<Acceptance>,
    /// What a person should know: facts set on a node whose route runs none.
    pub warnings: Vec<String>,
}

/// The warning for facts on a node whose route has no step that runs them, if it has none.
pub fn unrun_warning(manifest: &crate::model::Manifest, bead: &Bead) -> Option<String> {
    let route = &bead.pipeline.route;
    (!bead.pipeline.acceptance.is_empty() && !manifest.runs_acceptance(route)).then(|| {
        format!(
            "{} has acceptance facts, but no step of its route {route} runs them (a loop step \
             with a `command` stage, as the default manifest's implement): they will never run \
             and cannot keep it from done",
            bead.id
        )
    })
}

/// Parse and check a facts file's text (`[{"id": "…", "argv": ["…"]}]`); `from` names it.
pub fn parse_facts(text: &str, from: &str) -> Result<Vec<Acceptance>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let facts: Vec<Fact> = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| Error::Invalid(format!("{from}: {}: {}", e.path(), e.inner())))?;
    de.end()
        .map_err(|e| Error::Invalid(format!("{from}: after the list: {e}")))?;
    if facts.len() > MAX_FACTS {
        return Err(Error::Invalid(format!(
            "{from}: {} facts; at most {MAX_FACTS}",
            facts.len()
        )));
    }
    let mut out: Vec<Acceptance> = Vec::with_capacity(facts.len());
    for (i, f) in facts.into_iter().enumerate() {
        let bad = |why: &str| Error::Invalid(format!("{from}: [{i}]: {why}"));
        if f.id.trim().is_empty() || f.id.len() > 100 || f.id.chars().any(char::is_control) {
            return Err(bad("`id` must be 1..=100 printable characters"));
        }
        if out.iter().any(|a| a.id == f.id) {
            return Err(bad(&format!("the id {:?} is given twice", f.id)));
        }
        if f.argv.first().is_none_or(|a| a.is_empty()) {
            return Err(bad("`argv` must name a command"));
        }
        out.push(Acceptance {
            id: f.id,
            argv: f.argv,
        });
    }
    Ok(out)
}

/// Replace the acceptance facts of node `id` with `facts` (none: clear them).
pub fn set_acceptance(ctx: &Ctx, id: &str, facts: Vec<Acceptance>) -> Result<AcceptanceSet> {
    let manifest = ctx.store.manifest()?;
    ctx.apply(Verb::SetAcceptance, &Reads::subject(id), |fresh, who| {
        let mut change = plan(facts, who, &fresh.subject)?;
        if let Some(after) = change.beads.first() {
            change
                .output
                .warnings
                .extend(unrun_warning(&manifest, after));
        }
        Ok(change)
    })
}

pub fn plan(
    facts: Vec<Acceptance>,
    who: Caller,
    bead: &Bead,
) -> Result<Change<AcceptanceSet>, Refusal> {
    who.admit(Verb::SetAcceptance)?;
    require_open(bead)?;
    let ids: Vec<&str> = facts.iter().map(|f| f.id.as_str()).collect();
    let reason = match ids.is_empty() {
        true => "acceptance facts cleared".to_string(),
        false => format!("acceptance facts {}", ids.join(", ")),
    };
    let mut after = bead.clone();
    after.pipeline.acceptance = facts.clone().into();
    let output = AcceptanceSet {
        bead: bead.id.to_string(),
        acceptance: facts,
        warnings: Vec::new(),
    };
    Ok(Change::one(after, Some(reason), output))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_facts_file_is_checked_and_named_in_every_error() {
        let ok = parse_facts(r#"[{"id": "a1", "argv": ["test", "-f", "x"]}]"#, "f.json").unwrap();
        assert_eq!(ok[0].id, "a1");
        for (bad, says) in [
            ("{}", "f.json"),
            (
                r#"[{"id": "a", "argv": []}]"#,
                "[0]: `argv` must name a command",
            ),
            (r#"[{"id": "", "argv": ["x"]}]"#, "[0]: `id`"),
            (
                r#"[{"id": "a", "argv": ["x"]}, {"id": "a", "argv": ["y"]}]"#,
                "given twice",
            ),
            (
                r#"[{"id": "a", "argv": ["x"], "cmd": "x"}]"#,
                "unknown field `cmd`",
            ),
            (r#"[] []"#, "after the list"),
        ] {
            let e = parse_facts(bad, "f.json").unwrap_err().to_string();
            assert!(e.contains("f.json") && e.contains(says), "{bad}: {e}");
        }
    }
}
