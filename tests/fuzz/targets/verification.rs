//! The parsers of a leaf's default verification: a test command's output as the runners splice
//! detects print it (`test_results::parse_output`), and the built-in analyzers' reports
//! (`iteration::analyzers::read_output`), both written by tools run on an agent's repository.

use std::collections::BTreeMap;
use std::path::Path;

use splice::floors::iteration::analyzers::{Format, read_output};
use splice::floors::test_results::{self, Results, TestResult};

use super::{Format as Shape, Target, files_in, parts, repo_root};

fn fixtures(dir: &str) -> Vec<(String, Vec<u8>)> {
    files_in(&repo_root().join("tests/fixtures").join(dir), |_| true)
}

fn test_output_seeds() -> Vec<(String, Vec<u8>)> {
    fixtures("test_output")
}

fn analyzer_seeds() -> Vec<(String, Vec<u8>)> {
    fixtures("analyzers")
}

/// `test-output`: each line is read by at most one reader, so the combined reading is exactly
/// libtest's (less a nameless line), pytest's summary and go's together; each name is non-empty and from the text.
pub const TEST_OUTPUT: Target = Target {
    name: "test-output",
    run: test_output,
    corpus: "test-output",
    cases: 40_000,
    format: Shape::Text,
    dict: &[
        "=========================== short test summary info ============================\n",
        "PASSED t.py::a\n",
        "FAILED t.py::b[x - y] - AssertionError\n",
        "ERROR t.py\n",
        "SKIPPED [2] t.py:3: why\n",
        "XFAIL t.py::c\n",
        "--- PASS: TestA (0.00s)\n",
        "    --- FAIL: TestA/sub (0.01s)\n",
        "--- SKIP: TestB\n",
        "test a::b ... ok\n",
    ],
    seeds: test_output_seeds,
};

fn tally(r: &Results) -> BTreeMap<(String, u8), usize> {
    let mut out = BTreeMap::new();
    for (name, result) in &r.tests {
        *out.entry((name.clone(), *result as u8)).or_default() += 1;
    }
    out
}

fn test_output(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let all = test_results::parse_output(&text);
    let mut libtest = test_results::parse_libtest(&text);
    libtest.tests.retain(|(name, _)| !name.is_empty());
    let pytest = test_results::parse_pytest_summary(&text);
    let go = test_results::parse_go_test(&text);
    assert_eq!(
        all.tests.len(),
        libtest.tests.len() + pytest.tests.len() + go.tests.len()
    );
    let whole = tally(&all);
    for part in [&libtest, &pytest, &go] {
        for (key, n) in tally(part) {
            assert!(whole.get(&key).copied().unwrap_or(0) >= n, "{key:?}");
        }
    }
    assert!(all.tests.len() <= text.lines().count());
    for (name, _) in &all.tests {
        assert!(!name.is_empty() && text.contains(name.as_str()), "{name:?}");
    }
    let kinds = [
        TestResult::Passed,
        TestResult::Failed,
        TestResult::Errored,
        TestResult::Skipped,
    ];
    assert_eq!(
        kinds.iter().map(|k| all.count(*k)).sum::<usize>(),
        all.tests.len()
    );
    !all.tests.is_empty()
}

/// `analyzer-output`: stdout, NUL, stderr read as every analyzer format; an accepted report's
/// findings are each at a SARIF level and at most one security bucket, each once, with bounded
/// messages.
pub const ANALYZER_OUTPUT: Target = Target {
    name: "analyzer-output",
    run: analyzer_output,
    corpus: "analyzer-output",
    cases: 4000,
    format: Shape::Text,
    dict: &[
        "{\"reason\":\"compiler-message\",\"message\":{\"level\":\"error\",\"spans\":[{\"is_primary\":true,\"file_name\":\"a.rs\",\"line_start\":1}]}}\n",
        "{\"file\": \"a.py\", \"line\": 1, \"message\": \"m\"}\n{\"checked\": 1}\n",
        "[{\"code\":\"F401\",\"filename\":\"/r/a.py\",\"location\":{\"row\":1}}]",
        "{\"results\":[{\"issue_severity\":\"HIGH\",\"filename\":\"./a.py\"}],\"errors\":[]}",
        "[{\"filePath\":\"/r/a.js\",\"messages\":[{\"severity\":2,\"fatal\":true}]}]",
        "a.ts(1,2): error TS2322: m\n",
        "a.go:1:2: expected 'package'\n",
        "{\"runs\":[{\"results\":[{\"level\":\"error\"}]}]}",
        "\u{0}",
    ],
    seeds: analyzer_seeds,
};

fn analyzer_output(data: &[u8]) -> bool {
    let parts = parts(data);
    let stdout = parts.first().map_or("", String::as_str);
    let stderr = parts.get(1).map_or("", String::as_str);
    let mut any = false;
    for format in Format::ALL {
        let Ok((findings, _incomplete)) = read_output(format, stdout, stderr, Path::new("/r"))
        else {
            continue;
        };
        any |= !findings.is_empty();
        let mut keys = std::collections::BTreeSet::new();
        for f in &findings {
            assert!(
                matches!(f.level, "error" | "warning" | "note" | "none"),
                "{f:?}"
            );
            assert!(
                matches!(
                    f.security,
                    None | Some("critical" | "high" | "medium" | "low")
                ),
                "{f:?}"
            );
            assert!(f.message.as_ref().is_none_or(|m| m.len() <= 320), "{f:?}");
            let key = format!("{f:?}");
            assert!(keys.insert(key), "a finding twice: {f:?}");
        }
    }
    any
}
