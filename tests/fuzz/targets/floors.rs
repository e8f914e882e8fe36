//! The floors' parsers: the evidence agents and tools leave (specs, reviews, test reports,
//! SARIF, Gherkin, test files, a forge's answer).

use std::path::Path;

use serde_json::Value;
use splice::floors::test_results::{Results, TestResult};
use splice::floors::{
    coverage, delivered, gherkin, github, headings, is_full_sha, is_relative_inside, review, sarif,
    scenarios_declared, spec, test_results,
};

use super::{Format, Target, no_seeds, parts, utf8};

const NODE: &str = "sp-blcu.1";

/// `spec`: a spec passes only with its bead, a full base commit and relative files; text with
/// no front matter, or refused, says why.
pub const SPEC: Target = Target {
    name: "spec",
    run: spec_target,
    corpus: "spec",
    cases: 40_000,
    format: Format::Text,
    dict: &[
        "---\n",
        "bead: sp-blcu.1\n",
        "base_commit: ",
        "ca9fda25450a70ca666e69bf0ce1a7a844e41cff",
        "files:\n",
        "  - ",
        "files: [a, b]\n",
        "verdict: compound\n",
        "Scenario: S1 x\n",
        "'",
        "\"",
    ],
    seeds: no_seeds,
};

fn spec_target(data: &[u8]) -> bool {
    let Some(text) = utf8(data) else { return false };
    let front = spec::front_matter(text);
    let judged = spec::judge(text, NODE, NODE);
    if front.is_none() {
        assert!(judged.is_err(), "a spec without front matter passed");
    }
    match judged {
        Ok(d) => {
            assert_eq!(d.bead, NODE);
            assert!(is_full_sha(&d.base_commit), "{:?}", d.base_commit);
            assert!(!d.files.is_empty());
            assert!(
                d.files.iter().all(|f| is_relative_inside(f)),
                "{:?}",
                d.files
            );
            true
        }
        Err(problems) => {
            assert!(!problems.is_empty(), "refused without a reason");
            front.is_some()
        }
    }
}

/// `review`: every section opens on a `##` line of the input and holds whole input lines;
/// verdicts are named once each, from the four, as upper-case words; the SHA is lower-case.
pub const REVIEW: Target = Target {
    name: "review",
    run: review_target,
    corpus: "review",
    cases: 40_000,
    format: Format::Text,
    dict: &[
        "## Review\n",
        "## review 2\n",
        "# Other\n",
        "Reviewed-SHA: ",
        "Standards: PASS\n",
        "Spec: FAIL\n",
        "- **Architecture:** WARNING\n",
        "Evidence: pass\n",
        "`",
        "**",
    ],
    seeds: no_seeds,
};

fn review_target(data: &[u8]) -> bool {
    let Some(text) = utf8(data) else { return false };
    let sections = review::sections(text);
    let headings = text.lines().filter(|l| l.starts_with("## ")).count();
    assert!(sections.len() <= headings, "more sections than `## ` lines");
    let lines: Vec<&str> = text.lines().collect();
    for s in &sections {
        let first = s.text.lines().next().expect("a section holds its heading");
        assert!(first.starts_with("## "), "a section opens on {first:?}");
        assert!(s.text.ends_with('\n'));
        // (`lines` keeps a lone `\r` at the very end that the section's `\n` turns into a
        // line ending, so compare without it.)
        let bare = |l: &str| l.trim_end_matches('\r').to_string();
        assert!(
            s.text
                .lines()
                .all(|l| lines.iter().any(|x| bare(x) == bare(l))),
            "a section holds a line that is not the input's"
        );
        let mut names: Vec<&str> = s.verdicts.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.iter().all(|n| review::VERDICTS.contains(n)));
        names.sort();
        names.dedup();
        assert_eq!(names.len(), s.verdicts.len(), "a verdict named twice");
        for (_, word) in &s.verdicts {
            assert!(word.bytes().all(|b| b.is_ascii_uppercase()), "{word:?}");
        }
        if let Some(sha) = &s.sha {
            assert_eq!(sha, &sha.to_ascii_lowercase());
            assert!(!sha.contains(char::is_whitespace));
        }
    }
    !sections.is_empty()
}

fn counts_add_up(r: &Results) {
    let total: usize = [
        TestResult::Passed,
        TestResult::Failed,
        TestResult::Errored,
        TestResult::Skipped,
    ]
    .iter()
    .map(|k| r.count(*k))
    .sum();
    assert_eq!(total, r.tests.len());
}

/// `junit`: one result per `<testcase` element at most, the counts adding up.
pub const JUNIT: Target = Target {
    name: "junit",
    run: junit,
    corpus: "junit",
    cases: 60_000,
    format: Format::Text,
    dict: &[
        "<testcase",
        "<testcase name=\"a\" classname=\"c\">",
        "<testcase name='b'/>",
        "</testcase>",
        "<failure message=\"x\"/>",
        "<error/>",
        "<skipped/>",
        "&lt;",
        "&amp;",
        "/>",
    ],
    seeds: no_seeds,
};

fn junit(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let r = test_results::parse_junit(&text);
    assert!(r.tests.len() <= text.matches("<testcase").count());
    counts_add_up(&r);
    !r.tests.is_empty()
}

/// `libtest`: one result per `test … ... <status>` line at most, each name from its line.
pub const LIBTEST: Target = Target {
    name: "libtest",
    run: libtest,
    corpus: "libtest",
    cases: 60_000,
    format: Format::Text,
    dict: &[
        "test ",
        " ... ok\n",
        " ... FAILED\n",
        " ... ignored\n",
        "running 3 tests\n",
    ],
    seeds: no_seeds,
};

fn libtest(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let r = test_results::parse_libtest(&text);
    let lines = text.lines().filter(|l| l.starts_with("test ")).count();
    assert!(r.tests.len() <= lines);
    for (name, _) in &r.tests {
        assert!(text.contains(name.as_str()));
    }
    counts_add_up(&r);
    !r.tests.is_empty()
}

/// `sarif`: a log is refused unless it is JSON with a `runs` array; every result is counted at
/// exactly one level and at most one security bucket; at most 20 findings are listed.
pub const SARIF: Target = Target {
    name: "sarif",
    run: sarif_target,
    corpus: "sarif",
    cases: 6000,
    format: Format::Json,
    dict: &[
        "\"security-severity\": \"9.5\"",
        "\"level\": \"error\"",
        "\"ruleIndex\": 18446744073709551615",
    ],
    seeds: no_seeds,
};

fn sarif_target(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let counted = sarif::count(&text);
    let log = serde_json::from_str::<Value>(&text).ok();
    let runs = log.as_ref().and_then(|l| l.get("runs")?.as_array());
    let Ok((counts, findings)) = counted else {
        assert!(runs.is_none(), "a SARIF log with a runs array was refused");
        return false;
    };
    let runs = runs.expect("an accepted log has a runs array");
    let results: u64 = runs
        .iter()
        .map(|r| {
            r.get("results")
                .and_then(Value::as_array)
                .map_or(0, Vec::len) as u64
        })
        .sum();
    let at = |k: &str| counts.get(k).copied().unwrap_or(0);
    let levels: u64 = ["error", "warning", "note", "none"]
        .iter()
        .map(|k| at(k))
        .sum();
    let buckets: u64 = ["critical", "high", "medium", "low"]
        .iter()
        .map(|k| at(k))
        .sum();
    assert_eq!(levels, results, "{counts:?}");
    assert!(buckets <= results, "{counts:?}");
    assert!(findings.len() as u64 <= results.min(20));
    true
}

/// `gherkin`: scenarios sit on increasing lines of the input; an id found is id-like and is
/// carried by the text; a PRP's declared ids are unique and non-empty.
pub const GHERKIN: Target = Target {
    name: "gherkin",
    run: gherkin_target,
    corpus: "gherkin",
    cases: 40_000,
    format: Format::Text,
    dict: &[
        "Scenario: ",
        "Scenario Outline: ",
        "@S1 ",
        "S12",
        "AUTH-3",
        "[S1]",
        "- **Scenario:** ",
        "```gherkin\n",
    ],
    seeds: no_seeds,
};

fn gherkin_target(data: &[u8]) -> bool {
    let Some(text) = utf8(data) else { return false };
    let found = gherkin::scenarios(text);
    let lines = text.lines().count();
    let mut last = 0;
    for s in &found {
        assert!(s.line > last && s.line <= lines, "line {}", s.line);
        last = s.line;
        if let Some(id) = &s.id {
            assert!(gherkin::looks_like_id(id), "{id:?}");
            assert!(
                gherkin::carries_id(text, id),
                "the text does not carry {id:?}"
            );
        }
    }
    match scenarios_declared::judge(text) {
        Ok(ids) => {
            assert!(!ids.is_empty());
            let mut upper: Vec<String> = ids.iter().map(|i| i.to_ascii_uppercase()).collect();
            upper.sort();
            upper.dedup();
            assert_eq!(upper.len(), ids.len(), "duplicate ids declared: {ids:?}");
            true
        }
        Err((reason, _)) => {
            assert!(!reason.is_empty());
            false
        }
    }
}

/// Names whose extension picks each language's scanner.
const NAMES: &[&str] = &[
    "tests/a.rs",
    "a_test.py",
    "test_a.py",
    "a.test.ts",
    "a_test.go",
    "ATest.java",
    "a.kt",
    "a_spec.rb",
    "a.feature",
    "a.md",
    "x",
];

/// `coverage`: declarations sit on increasing lines of the input and (Gherkin aside) are the
/// input's lines. The second NUL-separated part, if any, is one more file name to try.
pub const COVERAGE: Target = Target {
    name: "coverage",
    run: coverage_target,
    corpus: "coverage",
    cases: 30_000,
    format: Format::Text,
    dict: &[
        "#[test]\n",
        "#[tokio::test]\n",
        "#[cfg(test)]\n",
        "fn s1_adds() {}\n",
        "pub async fn ",
        "@Test\n",
        "def test_",
        "it(\"",
        "func Test",
        "t.Run(",
        "Scenario: S1\n",
        "// ",
        "/*",
        "\0",
    ],
    seeds: test_files,
};

/// The example campaign's test files, each with its name after a NUL.
fn test_files() -> Vec<(String, Vec<u8>)> {
    let state = super::repo_root().join("state");
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(&state).sort_by_file_name() {
        let Ok(entry) = entry else { continue };
        let rel = entry.path().strip_prefix(&state).unwrap_or(entry.path());
        if entry.file_type().is_file() && coverage::is_test_file(rel) {
            let mut bytes = std::fs::read(entry.path()).expect("a state file reads");
            bytes.push(0);
            bytes.extend_from_slice(rel.to_string_lossy().as_bytes());
            out.push((entry.path().display().to_string(), bytes));
        }
    }
    out
}

fn coverage_target(data: &[u8]) -> bool {
    let p = parts(data);
    let text = p[0].as_str();
    let lines: Vec<&str> = text.lines().collect();
    let mut any = false;
    for name in NAMES.iter().copied().chain(p.get(1).map(String::as_str)) {
        let _ = coverage::is_test_file(Path::new(name));
        let found = coverage::declarations(name, text);
        let mut last = 0;
        for (line, decl) in &found {
            assert!(*line > last && *line <= lines.len(), "{name}: line {line}");
            last = *line;
            let gherkin = name.ends_with(".feature") || name.ends_with(".md");
            if !gherkin {
                assert_eq!(decl, lines[line - 1], "{name}: line {line}");
            }
        }
        any |= !found.is_empty();
    }
    any
}

/// `forge`: an answer is read only from a JSON object saying `merged` as a boolean; `gh pr
/// view`'s only from one JSON object whose `state` is OPEN, MERGED or CLOSED.
pub const FORGE: Target = Target {
    name: "forge",
    run: forge,
    corpus: "forge",
    cases: 40_000,
    format: Format::Json,
    dict: &[
        "\"merged\": true",
        "\"merge_commit\": \"abc\"",
        "\"state\": \"MERGED\"",
        "\"mergeCommit\": {\"oid\": \"abc\"}",
        "\n",
    ],
    seeds: no_seeds,
};

fn forge(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let gh = github_pr_view(&text);
    let Some(answer) = delivered::parse_forge(&text) else {
        return gh;
    };
    let says = |v: &Value| v.get("merged").and_then(Value::as_bool) == Some(answer.merged);
    let whole = serde_json::from_str::<Value>(text.trim()).ok();
    assert!(
        whole.as_ref().is_some_and(says)
            || text
                .lines()
                .any(|l| serde_json::from_str::<Value>(l.trim()).is_ok_and(|v| says(&v))),
        "an answer from text that does not say it"
    );
    true
}

/// `gh pr view`'s answer, when there is one, comes from the whole text as one JSON object with
/// that state.
fn github_pr_view(text: &str) -> bool {
    let Some(state) = github::parse_pr_view(text) else {
        return false;
    };
    let whole: Value =
        serde_json::from_str(text.trim()).expect("an answer from text that is not JSON");
    let named = match state {
        github::PrState::Open => "OPEN",
        github::PrState::Closed => "CLOSED",
        github::PrState::Merged { .. } => "MERGED",
    };
    assert_eq!(whole["state"], named, "a state the text does not say");
    true
}

/// `headings`: every heading found is on a `#` line of the input, outside fences.
pub const HEADINGS: Target = Target {
    name: "headings",
    run: headings_target,
    corpus: "headings",
    cases: 40_000,
    format: Format::Text,
    dict: &[
        "# ",
        "## Problem\n",
        "####### x\n",
        "```\n",
        "~~~\n",
        " ##\n",
        "#\n",
    ],
    seeds: no_seeds,
};

fn headings_target(data: &[u8]) -> bool {
    let Some(text) = utf8(data) else { return false };
    let found = headings::headings_of(text);
    let lines = text
        .lines()
        .filter(|l| l.trim_start().starts_with('#'))
        .count();
    assert!(found.len() <= lines, "more headings than `#` lines");
    for h in &found {
        assert!(text.contains(h.as_str()), "{h:?} is not in the input");
        assert_eq!(h, h.trim(), "an untrimmed heading");
    }
    !found.is_empty()
}
