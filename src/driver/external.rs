//! `external:<project>:<capability>` dependencies, resolved as bd resolves them
//! (`docs/bd-interop.md`, "References to issues not in the file"): the project is named in
//! `[bd] external_projects` (its directory), and the capability is done when that project's
//! bd export, `.beads/issues.jsonl`, has a closed issue labelled `provides:<capability>` (what
//! `bd ship` adds). Read when a snapshot is built; `decide` sees only the result
//! ([`Snapshot::shipped`](crate::model::Snapshot::shipped)).
//!
//! The other project's file is read as every file splice reads (no link followed, bounded);
//! one that cannot be read, or a project not configured, ships nothing, so what depends on it
//! stays blocked — as bd's does.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use serde_json::Value;

use crate::model::bd::external_ref;

/// Of `targets` (dependency targets; others are passed by), the external references whose
/// capability is shipped. `root` is the directory holding `.splice/`, against which a relative
/// project directory is read.
pub fn shipped<'a>(
    root: &Path,
    projects: &BTreeMap<String, String>,
    targets: impl IntoIterator<Item = &'a str>,
) -> BTreeSet<String> {
    let refs: BTreeSet<&str> = targets
        .into_iter()
        .filter(|t| external_ref(t).is_some())
        .collect();
    let mut provided: BTreeMap<&str, HashSet<String>> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for target in refs {
        let Some((project, capability)) = external_ref(target) else {
            continue;
        };
        let Some(dir) = projects.get(project) else {
            continue;
        };
        let caps = provided
            .entry(project)
            .or_insert_with(|| provides(&root.join(dir).join(".beads/issues.jsonl")));
        if caps.contains(capability) {
            out.insert(target.to_string());
        }
    }
    out
}

/// The capabilities a bd export ships: `provides:<capability>` labels of its closed issues.
/// Nothing when it cannot be read.
fn provides(file: &Path) -> HashSet<String> {
    let Ok(bytes) = crate::safe_read::read(file, crate::safe_read::INPUT) else {
        return HashSet::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|issue| issue.get("status").and_then(Value::as_str) == Some("closed"))
        .flat_map(|issue| match issue.get("labels") {
            Some(Value::Array(labels)) => labels
                .iter()
                .filter_map(|l| l.as_str()?.strip_prefix("provides:").map(str::to_string))
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capability_ships_with_a_closed_issue_labelled_provides_it() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other/.beads");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(
            other.join("issues.jsonl"),
            concat!(
                r#"{"id":"o-1","title":"a","status":"closed","labels":["provides:api","x"]}"#,
                "\n",
                r#"{"id":"o-2","title":"b","status":"open","labels":["provides:ui"]}"#,
                "\nnot json\n"
            ),
        )
        .unwrap();
        let projects: BTreeMap<String, String> = [("other".to_string(), "other".to_string())]
            .into_iter()
            .collect();
        let got = shipped(
            dir.path(),
            &projects,
            [
                "external:other:api",
                "external:other:ui",
                "external:nowhere:api",
                "bd-1",
                "external:other:",
            ],
        );
        assert_eq!(got, BTreeSet::from(["external:other:api".to_string()]));
        assert_eq!(external_ref("external:p:a:b"), Some(("p", "a:b")));
    }
}
