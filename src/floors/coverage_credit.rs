//! The coverage ledger's credit (issue 34): which of the node's steps wrote the test line that
//! carries each scenario id. Each line is blamed at the worktree's `HEAD`; the commit that last
//! changed it belongs to the latest step the node had entered before that commit (the `head`
//! recorded on each of its `pipeline.history` entries). A line older than every entry is the
//! base's (`base`), a test that was there before the node started.
//!
//! Best effort, and never a verdict: an entry's head that is no commit here (a hostile or stale
//! bead file), a file git cannot blame, or a line past the file's end credits nothing for that id.

use std::collections::BTreeMap;
use std::path::Path;

use git2::{BlameOptions, Oid, Repository};

use crate::model::Bead;

/// What a line older than every step's entry is credited to.
pub const BASE: &str = "base";

/// The most files blamed for one check.
const MAX_FILES: usize = 50;

/// Scenario id → the step that wrote its first declaring line (`found`'s `path:line` entries),
/// or [`BASE`]. Ids that cannot be credited are left out.
pub fn credit(
    dir: &Path,
    bead: &Bead,
    found: &BTreeMap<String, Vec<String>>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(repo) = Repository::open(dir) else {
        return out;
    };
    // The node's entries, latest first, with the commit each began at.
    let entries: Vec<(&str, Oid)> = bead
        .pipeline
        .history
        .iter()
        .rev()
        .filter_map(|e| {
            let head = e.head.as_deref()?;
            let oid = Oid::from_str(head).ok()?;
            repo.find_commit(oid).ok()?;
            Some((e.step.as_str(), oid))
        })
        .collect();
    let mut blamed: BTreeMap<String, Option<git2::Blame<'_>>> = BTreeMap::new();
    for (id, locations) in found {
        let Some((path, line)) = locations
            .first()
            .and_then(|l| l.rsplit_once(':'))
            .and_then(|(p, n)| Some((p.to_string(), n.parse::<usize>().ok()?)))
        else {
            continue;
        };
        if !blamed.contains_key(&path) && blamed.len() >= MAX_FILES {
            continue;
        }
        let blame = blamed.entry(path.clone()).or_insert_with(|| {
            let mut opts = BlameOptions::new();
            repo.blame_file(Path::new(&path), Some(&mut opts)).ok()
        });
        let Some(commit) = blame
            .as_ref()
            .and_then(|b| b.get_line(line))
            .map(|h| h.final_commit_id())
        else {
            continue;
        };
        let step = entries
            .iter()
            .find(|(_, began)| {
                commit != *began && repo.graph_descendant_of(commit, *began).unwrap_or(false)
            })
            .map_or(BASE, |(step, _)| step);
        out.insert(id.clone(), step.to_string());
    }
    out
}

/// `written at generate-tests: S1, S2; at implement: S3` (steps in the order first credited),
/// or empty when nothing was credited to a step.
pub fn describe(credited: &BTreeMap<String, String>) -> String {
    let mut by_step: Vec<(&str, Vec<&str>)> = Vec::new();
    for (id, step) in credited.iter().filter(|(_, s)| s.as_str() != BASE) {
        match by_step.iter_mut().find(|(s, _)| s == step) {
            Some((_, ids)) => ids.push(id),
            None => by_step.push((step, vec![id])),
        }
    }
    by_step
        .iter()
        .map(|(step, ids)| format!("at {step}: {}", ids.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::bead::StepEntry;

    fn commit(repo: &Repository, path: &str, text: &str) -> String {
        let root = repo.workdir().unwrap().to_path_buf();
        std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
        std::fs::write(root.join(path), text).unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new(path)).unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        repo.commit(Some("HEAD"), &sig, &sig, "c", &tree, &parents)
            .unwrap()
            .to_string()
    }

    fn entered(step: &str, head: &str) -> StepEntry {
        StepEntry {
            step: step.into(),
            seq: 1,
            at: "t".into(),
            head: Some(head.into()),
            attempts_before: None,
        }
    }

    #[test]
    fn each_line_is_credited_to_the_step_that_wrote_it_or_the_base() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let base = commit(&repo, "tests/a.rs", "fn s0_old() {}\n");
        let implement_began = base.clone();
        let tests_began = commit(&repo, "tests/a.rs", "fn s0_old() {}\nfn s1_new() {}\n");
        commit(
            &repo,
            "tests/a.rs",
            "fn s0_old() {}\nfn s1_new() {}\nfn s2_gen() {}\n",
        );
        let mut b = Bead::new("sp-1".into(), "t".into(), String::new(), "t");
        b.pipeline.history = vec![
            entered("implement", &implement_began),
            entered("generate-tests", &tests_began),
            // A hostile entry: no commit here.
            entered("review", &"f".repeat(40)),
        ];
        let found: BTreeMap<String, Vec<String>> = [
            ("S0", "tests/a.rs:1"),
            ("S1", "tests/a.rs:2"),
            ("S2", "tests/a.rs:3"),
            ("S9", "tests/a.rs:99"),
            ("S8", "no-line"),
        ]
        .iter()
        .map(|(id, at)| (id.to_string(), vec![at.to_string()]))
        .collect();
        let got = credit(dir.path(), &b, &found);
        let want: BTreeMap<String, String> =
            [("S0", BASE), ("S1", "implement"), ("S2", "generate-tests")]
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect();
        assert_eq!(got, want);
        assert_eq!(describe(&got), "at implement: S1; at generate-tests: S2");
    }
}
