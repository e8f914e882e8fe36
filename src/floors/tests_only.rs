//! `tests_only`: the step's committed change (the step's base, [`crate::worktree::step_base`],
//! to the worktree's `HEAD`) touches at least one test file and nothing else. The test
//! generator's floor (issue 34): it writes tests, never the code they test, so a test that fails
//! because the code is wrong stays failing instead of being "fixed" by changing what it tests.
//!
//! A test file is what the coverage ledger reads ([`super::coverage::is_test_file`]): a file under
//! a `tests`, `test` or `__tests__` directory, or named `*_test.*`, `test_*.py`, `*.test.*`,
//! `*.spec.*`, `*_spec.rb`, `*.feature`. A Rust unit test inside a source file's
//! `#[cfg(test)]` module is not in one: a generator writes Rust tests under `tests/`.
//! Uncommitted changes are not the step's work (the step's artifact is `HEAD`) and are not read.

use git2::{Delta, Repository};
use serde_json::json;

use super::coverage::is_test_file;
use super::{Ctx, Floor, Outcome};
use crate::model::manifest::{FloorKind, FloorSpec};

pub struct TestsOnly;

const KIND: FloorKind = FloorKind::TestsOnly;

/// How many paths a reason names.
const NAMED: usize = 10;

/// The paths changed from `base` to `HEAD` in the repository at `dir`, split into test files and
/// the rest, each sorted.
fn changed(dir: &std::path::Path, base: &str) -> Result<(Vec<String>, Vec<String>), String> {
    let repo = Repository::open(dir)
        .map_err(|e| format!("{} is not a git worktree: {}", dir.display(), e.message()))?;
    let tree_of = |rev: &str| {
        repo.revparse_single(rev)
            .and_then(|o| o.peel_to_tree())
            .map_err(|e| format!("`{rev}` is not a commit here: {}", e.message()))
    };
    let (from, to) = (tree_of(base)?, tree_of("HEAD")?);
    let diff = repo
        .diff_tree_to_tree(Some(&from), Some(&to), None)
        .map_err(|e| format!("cannot diff against the base: {}", e.message()))?;
    let (mut tests, mut others) = (Vec::new(), Vec::new());
    for delta in diff.deltas() {
        let file = match delta.status() {
            Delta::Deleted => delta.old_file(),
            _ => delta.new_file(),
        };
        let Some(path) = file.path() else { continue };
        let shown = path.to_string_lossy().into_owned();
        if is_test_file(path) {
            tests.push(shown);
        } else {
            others.push(shown);
        }
    }
    tests.sort();
    others.sort();
    Ok((tests, others))
}

fn named(paths: &[String]) -> String {
    let mut out = paths
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > NAMED {
        out.push_str(&format!(" and {} more", paths.len() - NAMED));
    }
    out
}

impl Floor for TestsOnly {
    fn check(&self, _spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        let Some(base) = crate::worktree::step_base(ctx.bead) else {
            return Outcome::escalate(
                KIND,
                format!(
                    "the commit {} started step {} from is not recorded, so its change cannot be read",
                    ctx.bead.id, ctx.step.name
                ),
                json!({}),
            );
        };
        let (tests, others) = match changed(&ctx.workdir, base) {
            Ok(split) => split,
            Err(why) => {
                return Outcome::escalate(
                    KIND,
                    format!("cannot read the step's change: {why}"),
                    json!({ "base": base, "read_in": ctx.workdir }),
                );
            }
        };
        let evidence = json!({
            "base": base,
            "read_in": ctx.workdir,
            "test_files": tests,
            "other_files": others,
        });
        if !others.is_empty() {
            return Outcome::refuse(
                KIND,
                format!(
                    "step {} may change test files only, and its commits since {} change {}: \
                     put the tests in test files and leave the code they test as it is",
                    ctx.step.name,
                    &base[..base.len().min(12)],
                    named(&others)
                ),
                evidence,
            );
        }
        if tests.is_empty() {
            return Outcome::refuse(
                KIND,
                format!(
                    "step {} committed no test file since {}: write the tests and commit them",
                    ctx.step.name,
                    &base[..base.len().min(12)]
                ),
                evidence,
            );
        }
        Outcome::pass(
            KIND,
            format!("{} test file(s) changed, nothing else", tests.len()),
            evidence,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(repo: &Repository, files: &[(&str, &str)], message: &str) -> String {
        let root = repo.workdir().unwrap().to_path_buf();
        let mut index = repo.index().unwrap();
        for (path, text) in files {
            let full = root.join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(&full, text).unwrap();
            index.add_path(std::path::Path::new(path)).unwrap();
        }
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let parents: Vec<git2::Commit> = repo
            .head()
            .ok()
            .and_then(|h| h.peel_to_commit().ok())
            .into_iter()
            .collect();
        let parents: Vec<&git2::Commit> = parents.iter().collect();
        repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .unwrap()
            .to_string()
    }

    #[test]
    fn the_change_is_split_into_test_files_and_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let base = commit(&repo, &[("src/lib.rs", "fn a() {}\n")], "base");
        assert_eq!(changed(dir.path(), &base).unwrap(), (vec![], vec![]));
        commit(
            &repo,
            &[
                ("tests/parse.rs", "#[test] fn s1() {}\n"),
                ("pkg/parse_test.go", "package pkg\n"),
                ("test_cli.py", "def test_s1(): pass\n"),
            ],
            "tests",
        );
        let (tests, others) = changed(dir.path(), &base).unwrap();
        assert_eq!(
            tests,
            ["pkg/parse_test.go", "test_cli.py", "tests/parse.rs"],
            "sorted"
        );
        assert!(others.is_empty());
        commit(&repo, &[("src/lib.rs", "fn a() { 1; }\n")], "code");
        let (_, others) = changed(dir.path(), &base).unwrap();
        assert_eq!(others, ["src/lib.rs"]);
        assert!(
            changed(dir.path(), "0000000").is_err(),
            "a base that is no commit"
        );
    }

    #[test]
    fn a_long_list_of_paths_is_cut() {
        let paths: Vec<String> = (0..13).map(|i| format!("src/{i}.rs")).collect();
        let said = named(&paths);
        assert!(said.ends_with("src/9.rs and 3 more"), "{said}");
        assert_eq!(named(&paths[..1]), "src/0.rs");
    }
}
