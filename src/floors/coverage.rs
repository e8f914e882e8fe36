//! `coverage`: the coverage ledger. Every scenario id the node owns appears on a line that
//! declares a test, inside a test file under the root's `test_paths`: at integrate in a detached
//! checkout of the integration target's tip (`read_in: target`, the default), and for a leaf
//! before it leaves review in its own worktree (`read_in: workdir`; every test file when no
//! `test_paths` are set), so a missing id is caught where it can still be fixed. A refusal's
//! evidence says `covered: false` and its guidance names the missing ids: the step's result
//! branch on `covered` sends the node back (a `back_to` on the floor is read as that branch).
//!
//! Known limits, by design (the seed's, asserted in this file's tests): a trivial test counts, a
//! skipped test still carries its id, and the id counts anywhere on the declaring line.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;
use walkdir::WalkDir;

use super::gherkin::{carries_id, scenarios};
use super::{Ctx, Effect, Floor, Outcome, is_relative_inside, read_inside};
use crate::model::manifest::{FloorKind, FloorSpec};
use crate::safe_read;

pub struct Coverage;

const KIND: FloorKind = FloorKind::Coverage;

/// Does the file's name or a directory on its path mark it as a test?
pub fn is_test_file(rel: &Path) -> bool {
    let in_test_dir = rel.parent().is_some_and(|dir| {
        dir.components()
            .any(|c| matches!(c.as_os_str().to_str(), Some("tests" | "test" | "__tests__")))
    });
    let Some(name) = rel.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let stem = name.split('.').next().unwrap_or_default();
    in_test_dir
        || (stem.ends_with("_test") && name.contains('.'))
        || (name.starts_with("test_") && name.ends_with(".py"))
        || name.contains(".test.")
        || name.contains(".spec.")
        || name.ends_with("_spec.rb")
        || name.ends_with(".feature")
}

/// Is `attr` (a trimmed `#[…]` line) a test attribute: `#[test]`, `#[tokio::test]`, `#[rstest]`,
/// `#[test_case(…)]`, `#[test_log::test]`, …?
fn is_test_attribute(attr: &str) -> bool {
    let Some(inner) = attr.strip_prefix("#[") else {
        return false;
    };
    let path: String = inner
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    let last = path.rsplit("::").next().unwrap_or_default();
    last == "test"
        || last.starts_with("test_")
        || last == "rstest"
        || last == "quickcheck"
        || last == "proptest"
}

fn is_rust_fn(line: &str) -> bool {
    let mut words = line.split_whitespace().peekable();
    while let Some(w) = words.next() {
        if w == "fn" {
            return words.peek().is_some();
        }
        let modifier =
            w.starts_with("pub") || matches!(w, "async" | "unsafe" | "const" | "extern" | "\"C\"");
        if !modifier {
            return false;
        }
    }
    false
}

/// Lines (1-based number, text) of `text` that declare a test, by the file's language.
pub fn declarations(name: &str, text: &str) -> Vec<(usize, String)> {
    let ext = name.rsplit('.').next().unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    match ext {
        "feature" | "md" => gherkin_declarations(text, &lines),
        "rs" => rust_declarations(&lines),
        "java" | "kt" | "kts" | "groovy" | "scala" => jvm_declarations(&lines),
        _ => lines
            .iter()
            .enumerate()
            .filter(|(_, line)| declares(ext, line.trim()))
            .map(|(i, line)| (i + 1, (*line).to_string()))
            .collect(),
    }
}

/// Gherkin scenarios, each with the tag line just before it (where the id may sit).
fn gherkin_declarations(text: &str, lines: &[&str]) -> Vec<(usize, String)> {
    scenarios(text)
        .into_iter()
        .map(|s| {
            let tags = lines[..s.line - 1]
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .filter(|l| l.trim_start().starts_with('@'))
                .map_or(String::new(), |l| format!("{} ", l.trim()));
            (s.line, format!("{tags}{}", lines[s.line - 1].trim()))
        })
        .collect()
}

/// Rust: a test attribute arms the next `fn` line; other attributes, comments and multi-line
/// attribute arguments may sit between; a line of code disarms.
fn rust_declarations(lines: &[&str]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut armed = false;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.starts_with("#[") {
            armed |= is_test_attribute(t);
            if let Some(end) = t.find(']') {
                let rest = t[end + 1..].trim();
                if armed && is_rust_fn(rest) {
                    out.push((i + 1, (*line).to_string()));
                    armed = false;
                }
            }
            continue;
        }
        if !armed || t.is_empty() || t.starts_with("//") {
            continue;
        }
        if is_rust_fn(t) {
            out.push((i + 1, (*line).to_string()));
            armed = false;
        } else if t.contains(['{', '}', ';']) {
            armed = false;
        }
    }
    out
}

/// JVM languages: a JUnit test annotation arms the next declaration with a parameter list.
fn jvm_declarations(lines: &[&str]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut armed = false;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if let Some(after_at) = t.strip_prefix('@') {
            let ann: String = after_at
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '.')
                .collect();
            let last = ann.rsplit('.').next().unwrap_or_default();
            armed |= matches!(
                last,
                "Test" | "ParameterizedTest" | "RepeatedTest" | "TestFactory" | "TestTemplate"
            );
            continue;
        }
        let comment = t.starts_with("//") || t.starts_with("/*") || t.starts_with('*');
        if !armed || t.is_empty() || comment {
            continue;
        }
        if t.contains('(') {
            out.push((i + 1, (*line).to_string()));
        }
        armed = false;
    }
    out
}

/// One-line test declarations: Python, JS/TS, Go, Ruby.
fn declares(ext: &str, t: &str) -> bool {
    let call = |names: &[&str]| {
        names.iter().any(|n| {
            t.strip_prefix(n).is_some_and(|rest| {
                // `it(`, `it.skip(`, `test.each([...])(`, `it "..." do`
                let rest =
                    rest.trim_start_matches(|c: char| c.is_alphanumeric() || c == '.' || c == '_');
                let word_ok = !t[n.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_');
                word_ok && rest.trim_start().starts_with(['(', '`', '"', '\''])
            })
        })
    };
    match ext {
        "py" => {
            let t = t.strip_prefix("async ").unwrap_or(t);
            t.starts_with("def test")
        }
        "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" | "mts" | "cts" => call(&["it", "test"]),
        "go" => t.starts_with("func Test") || t.contains("t.Run("),
        "rb" => t.starts_with("def test_") || call(&["it", "specify", "example", "scenario"]),
        _ => false,
    }
}

/// What a walk of the test paths found.
struct Scan {
    /// Scenario id → `file:line` of each test declaration carrying it.
    found: BTreeMap<String, Vec<String>>,
    /// Test paths that do not exist in the checkout.
    absent_paths: Vec<String>,
    files_scanned: usize,
}

/// Walk each test path under `root` (in file-name order) and note which of `owned` ids appear on
/// test declarations in test files.
fn scan(root: &Path, test_paths: &[String], owned: &[String]) -> Scan {
    let mut out = Scan {
        found: BTreeMap::new(),
        absent_paths: Vec::new(),
        files_scanned: 0,
    };
    for tp in test_paths {
        // A test path with a link on it (one could lead outside the checkout) is as good as
        // absent; below it no link is followed either (walkdir's default, and each file is
        // opened beneath the root with none on its path).
        if safe_read::dir_beneath(root, tp).is_err() {
            out.absent_paths.push(tp.clone());
            continue;
        }
        for entry in WalkDir::new(root.join(tp))
            .sort_by_file_name()
            .into_iter()
            .filter_map(Result::ok)
        {
            let Ok(rel) = entry.path().strip_prefix(root) else {
                continue;
            };
            if !entry.file_type().is_file()
                || rel.components().any(|c| c.as_os_str() == ".git")
                || !is_test_file(rel)
            {
                continue;
            }
            let Some(text) = rel.to_str().and_then(|r| read_inside(root, r).ok()) else {
                continue;
            };
            out.files_scanned += 1;
            let name = rel
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            for (line_no, line) in declarations(&name, &text) {
                for id in owned.iter().filter(|id| carries_id(&line, id)) {
                    out.found
                        .entry(id.clone())
                        .or_default()
                        .push(format!("{}:{line_no}", rel.display()));
                }
            }
        }
    }
    out
}

/// Where the ledger is read, and under which test paths.
struct Ledger {
    /// The directory scanned.
    root: std::path::PathBuf,
    /// What to call it in reasons (`the integration target main`, `the node's worktree`).
    name: String,
    test_paths: Vec<String>,
    /// Extra evidence about where it was read.
    evidence: serde_json::Value,
}

/// `read_in: target` (the default, at integrate): a checkout of the integration target's tip,
/// under the campaign root's `test_paths` (unset escalates). `read_in: workdir` (a leaf before
/// it leaves review): the node's own worktree, under the root's `test_paths`, else everywhere.
fn ledger(spec: &FloorSpec, ctx: &Ctx) -> Result<Ledger, Box<Outcome>> {
    let test_paths = ctx.root().pipeline.test_paths.clone();
    if let Some(bad) = test_paths.iter().find(|p| !is_relative_inside(p)) {
        return Err(Box::new(Outcome::escalate(
            KIND,
            format!(
                "test path `{bad}` is not repository-relative; fix it with `splice transition set-config`"
            ),
            json!({ "test_paths": test_paths }),
        )));
    }
    if spec.str_param("read_in") == Some("workdir") {
        let test_paths = if test_paths.is_empty() {
            vec![".".to_string()]
        } else {
            test_paths.to_vec()
        };
        return Ok(Ledger {
            root: ctx.workdir.clone(),
            name: "the node's worktree".into(),
            test_paths,
            evidence: json!({ "read_in": ctx.workdir }),
        });
    }
    if test_paths.is_empty() {
        return Err(Box::new(Outcome::escalate(
            KIND,
            "test_paths is unset on the campaign root: missing configuration is not incomplete work; run `splice transition set-config`",
            json!({ "root": ctx.root().id }),
        )));
    }
    let checkout = ctx.target_checkout().map_err(|reason| {
        Box::new(Outcome::escalate(
            KIND,
            format!("cannot check out the integration target: {reason}"),
            json!({}),
        ))
    })?;
    Ok(Ledger {
        root: checkout.path.clone(),
        name: checkout.target.clone(),
        test_paths: test_paths.to_vec(),
        evidence: json!({ "read_in": checkout.path, "target": checkout.target, "tip": checkout.tip }),
    })
}

impl Floor for Coverage {
    fn check(&self, spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        let ledger = match ledger(spec, ctx) {
            Ok(l) => l,
            Err(answer) => return *answer,
        };
        let owned = &ctx.bead.pipeline.scenarios;
        let Scan {
            found,
            absent_paths,
            files_scanned,
        } = scan(&ledger.root, &ledger.test_paths, owned);
        let missing: Vec<&String> = owned.iter().filter(|id| !found.contains_key(*id)).collect();
        let mut evidence = ledger.evidence;
        evidence["test_paths"] = json!(ledger.test_paths);
        evidence["absent_test_paths"] = json!(absent_paths);
        evidence["files_scanned"] = json!(files_scanned);
        evidence["found"] = json!(found);
        evidence["missing"] = json!(missing);
        // In the node's own worktree, the ledger says which step wrote each id's test.
        let credited = match spec.str_param("read_in") == Some("workdir") {
            true => super::coverage_credit::credit(&ledger.root, ctx.bead, &found),
            false => BTreeMap::new(),
        };
        let written = super::coverage_credit::describe(&credited);
        if !credited.is_empty() {
            evidence["credited"] = json!(credited);
        }
        let written = match written.is_empty() {
            true => String::new(),
            false => format!(" (written {written})"),
        };
        if owned.is_empty() {
            return Outcome::pass(
                KIND,
                format!("{} owns no scenario ids; nothing to cover", ctx.bead.id),
                evidence,
            );
        }
        if missing.is_empty() {
            return Outcome::pass(
                KIND,
                format!(
                    "all {} scenario id(s) are on test declarations in {}{written}",
                    owned.len(),
                    ledger.name
                ),
                evidence,
            );
        }
        let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
        let reason = format!(
            "no test declaration carries scenario id(s) {} in {}",
            names.join(", "),
            ledger.name
        );
        evidence["covered"] = json!(false);
        let guidance = format!(
            "{reason}: name a test for each owned scenario with its id (e.g. `fn {}_…`)",
            names[0].to_ascii_lowercase()
        );
        Outcome::refuse(KIND, reason, evidence).with_effect(Effect::Guidance(guidance))
    }
}

#[cfg(test)]
#[path = "coverage_tests.rs"]
mod tests;
