//! `tests`: runs a test command (`argv`, or `cmd` via `sh -c`) in the workdir and reads per-test
//! results from a JUnit XML file (`junit`) and from its output ([`parse_output`]: libtest's
//! `test name ... ok`, pytest's `-rA` short summary, `go test -v`'s `--- PASS: TestX`). Any
//! failed or errored test refuses; the counts are the evidence. A command that cannot start, or
//! a run from which no result can be read, escalates.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Ctx, Floor, OUTPUT_CAP, Outcome, tail, timeout_for};
use crate::model::manifest::{FloorKind, FloorSpec};
use crate::process::{Captured, Exit};

pub struct Tests;

const KIND: FloorKind = FloorKind::Tests;

/// How many failing test names the evidence lists.
const MAX_NAMES: usize = 50;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestResult {
    Passed,
    Failed,
    Errored,
    Skipped,
}

/// Per-test results found in some output.
#[derive(Debug, Default, PartialEq)]
pub struct Results {
    pub tests: Vec<(String, TestResult)>,
}

impl Results {
    pub fn count(&self, r: TestResult) -> usize {
        self.tests.iter().filter(|(_, x)| *x == r).count()
    }
    /// The first names with result `r` (at most 50).
    pub fn names(&self, r: TestResult) -> Vec<&str> {
        self.tests
            .iter()
            .filter(|(_, x)| *x == r)
            .map(|(n, _)| n.as_str())
            .take(MAX_NAMES)
            .collect()
    }
}

/// `test name ... ok|FAILED|ignored` lines of libtest (`cargo test`) output.
pub fn parse_libtest(output: &str) -> Results {
    Results {
        tests: output.lines().filter_map(libtest_line).collect(),
    }
}

/// One libtest result line.
fn libtest_line(line: &str) -> Option<(String, TestResult)> {
    let rest = line.strip_prefix("test ")?;
    let (name, status) = rest.rsplit_once(" ... ")?;
    let result = match status.trim() {
        "ok" => TestResult::Passed,
        "FAILED" => TestResult::Failed,
        s if s.starts_with("ignored") => TestResult::Skipped,
        _ => return None,
    };
    Some((name.trim().to_string(), result))
}

/// Per-test results of a test command's output, whichever of the runners splice detects wrote
/// it (`policy::verification`): libtest's `test name ... ok` lines, the short summary of
/// pytest's `-rA` ([`parse_pytest_summary`]) and `go test -v`'s `--- PASS: TestX (0.00s)` lines
/// ([`parse_go_test`]). Each line is read by at most one of them, so one result line is one
/// test (a libtest line with no name is none). Names are kept as the runner prints them: a
/// suite that runs a test twice, or two Go packages with a test of the same name, count it
/// twice, as the runner reported it.
pub fn parse_output(output: &str) -> Results {
    let mut out = Results::default();
    let mut in_summary = false;
    for line in output.lines() {
        if is_pytest_summary_header(line) {
            in_summary = true;
            continue;
        }
        if in_summary {
            match pytest_line(line) {
                Some(test) => {
                    out.tests.push(test);
                    continue;
                }
                None => in_summary = false,
            }
        }
        let libtest = libtest_line(line).filter(|(name, _)| !name.is_empty());
        if let Some(test) = libtest.or_else(|| go_line(line)) {
            out.tests.push(test);
        }
    }
    out
}

/// pytest's `===== short test summary info =====`, after which `-rA` lists every test.
fn is_pytest_summary_header(line: &str) -> bool {
    line.starts_with('=') && line.contains(" short test summary info ")
}

/// The `-rA` short summary of pytest: after its `short test summary info` header, one line per
/// test until the first line that is none (the closing counts). `PASSED id` and `XPASS id` (an
/// expected failure that passed; a strict one is reported `FAILED`) pass; `FAILED id - why`
/// fails; `ERROR id - why` errors (a fixture, or a module that cannot be collected); `XFAIL id`
/// (an expected failure) and `SKIPPED [n] file:line: why` are skipped. Limit: pytest groups
/// skips by place, so one `SKIPPED [3] …` line is one entry, named by its place.
pub fn parse_pytest_summary(output: &str) -> Results {
    let mut out = Results::default();
    let mut in_summary = false;
    for line in output.lines() {
        if is_pytest_summary_header(line) {
            in_summary = true;
        } else if in_summary {
            match pytest_line(line) {
                Some(test) => out.tests.push(test),
                None => in_summary = false,
            }
        }
    }
    out
}

/// One line of pytest's short summary.
fn pytest_line(line: &str) -> Option<(String, TestResult)> {
    let (word, rest) = line.split_once(' ')?;
    let result = match word {
        "PASSED" | "XPASS" => TestResult::Passed,
        "FAILED" => TestResult::Failed,
        "ERROR" => TestResult::Errored,
        "XFAIL" | "SKIPPED" => TestResult::Skipped,
        _ => return None,
    };
    let name = if word == "SKIPPED" {
        // `[n] place: reason`
        let place = rest
            .trim_start()
            .strip_prefix('[')
            .and_then(|r| r.split_once("] "))
            .map_or(rest, |(_, place)| place);
        place.split_once(": ").map_or(place, |(p, _)| p)
    } else {
        node_id(rest)
    };
    let name = name.trim();
    (!name.is_empty()).then(|| (name.to_string(), result))
}

/// A pytest node id before its ` - reason`: the first ` - ` outside the brackets of a
/// parametrized id (`test_x[a - b] - AssertionError`).
fn node_id(rest: &str) -> &str {
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ' ' if depth <= 0 && rest[i..].starts_with(" - ") => return &rest[..i],
            _ => {}
        }
    }
    rest
}

/// `go test -v`'s result lines of tests and subtests, indented or not: `--- PASS: TestX
/// (0.00s)`, `--- FAIL: TestX/sub (0.01s)`, `--- SKIP: TestX (0.00s)`. A parent is a test of its
/// own, as go counts it.
pub fn parse_go_test(output: &str) -> Results {
    Results {
        tests: output.lines().filter_map(go_line).collect(),
    }
}

/// One line of [`parse_go_test`].
fn go_line(line: &str) -> Option<(String, TestResult)> {
    let rest = line.trim_start().strip_prefix("--- ")?;
    let (word, rest) = rest.split_once(": ")?;
    let result = match word {
        "PASS" => TestResult::Passed,
        "FAIL" => TestResult::Failed,
        "SKIP" => TestResult::Skipped,
        _ => return None,
    };
    let name = rest.split_whitespace().next()?;
    Some((name.to_string(), result))
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=");
    let start = tag.find(&key)? + key.len();
    let quote = tag[start..]
        .chars()
        .next()
        .filter(|c| *c == '"' || *c == '\'')?;
    let value_start = start + 1;
    let end = tag[value_start..].find(quote)? + value_start;
    Some(
        tag[value_start..end]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

/// `<testcase>` elements of a JUnit XML report, with `<failure>`, `<error>` or `<skipped>`
/// children deciding the result.
pub fn parse_junit(xml: &str) -> Results {
    let mut out = Results::default();
    let mut rest = xml;
    while let Some(at) = rest.find("<testcase") {
        rest = &rest[at..];
        let after_name = rest.as_bytes().get("<testcase".len()).copied();
        if !matches!(after_name, Some(b' ' | b'\t' | b'\n' | b'\r' | b'>' | b'/')) {
            rest = &rest["<testcase".len()..];
            continue;
        }
        let Some(tag_end) = rest.find('>') else { break };
        let tag = &rest[..tag_end];
        let name = match (attr(tag, "classname"), attr(tag, "name")) {
            (Some(c), Some(n)) => format!("{c}.{n}"),
            (None, Some(n)) => n,
            (c, None) => c.unwrap_or_else(|| "?".into()),
        };
        let (body, next) = if tag.ends_with('/') {
            ("", &rest[tag_end + 1..])
        } else {
            match rest[tag_end..].find("</testcase>") {
                Some(close) => (
                    &rest[tag_end + 1..tag_end + close],
                    &rest[tag_end + close..],
                ),
                None => (&rest[tag_end + 1..], ""),
            }
        };
        let result = if body.contains("<failure") {
            TestResult::Failed
        } else if body.contains("<error") {
            TestResult::Errored
        } else if body.contains("<skipped") {
            TestResult::Skipped
        } else {
            TestResult::Passed
        };
        out.tests.push((name, result));
        rest = next;
    }
    out
}

impl Floor for Tests {
    fn check(&self, spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        let argv: Vec<String> = match spec.str_param("cmd") {
            Some(cmd) => vec!["sh".into(), "-c".into(), ctx.render(cmd)],
            None => ctx.argv_param(spec),
        };
        if argv.is_empty() {
            return Outcome::escalate(
                KIND,
                "the floor declares neither `argv` nor `cmd`",
                json!({}),
            );
        }
        let timeout = timeout_for(spec, ctx.step.timeout_s);
        let ran = match ctx.run_floor(
            &argv,
            &ctx.workdir,
            &[("SPLICE_BEAD", &ctx.bead.id)],
            timeout,
            OUTPUT_CAP,
        ) {
            Ok(r) => r,
            Err(e) => {
                return Outcome::escalate(
                    KIND,
                    format!("cannot run `{}`: {e}", argv.join(" ")),
                    json!({ "argv": argv }),
                );
            }
        };
        let mut results = parse_output(&ran.combined());
        let junit = spec.str_param("junit").map(|p| ctx.render(p));
        let mut junit_read = None;
        if let Some(rel) = &junit {
            let read = ctx.read_inside(rel);
            junit_read = Some(read.is_ok());
            if let Ok(xml) = read {
                results.tests.extend(parse_junit(&xml).tests);
            }
        }
        let (passed, failed, errored, skipped) = (
            results.count(TestResult::Passed),
            results.count(TestResult::Failed),
            results.count(TestResult::Errored),
            results.count(TestResult::Skipped),
        );
        let evidence = json!({
            "argv": argv,
            "exit_code": ran.code(),
            "timed_out": ran.timed_out(),
            "junit": junit,
            "junit_read": junit_read,
            "passed": passed,
            "failed": failed,
            "errored": errored,
            "skipped": skipped,
            "failed_tests": results.names(TestResult::Failed),
            "errored_tests": results.names(TestResult::Errored),
            "output_tail": tail(&ran.combined(), 2000),
        });
        verdict(&argv.join(" "), &results, &ran, timeout, evidence)
    }
}

/// The answer from the parsed results first, then from how the command ended.
fn verdict(
    cmd: &str,
    results: &Results,
    ran: &Captured,
    timeout: Duration,
    evidence: Value,
) -> Outcome {
    let (passed, failed, errored, skipped) = (
        results.count(TestResult::Passed),
        results.count(TestResult::Failed),
        results.count(TestResult::Errored),
        results.count(TestResult::Skipped),
    );
    if failed + errored > 0 {
        return Outcome::refuse(
            KIND,
            format!("`{cmd}`: {failed} failed, {errored} errored, {passed} passed"),
            evidence,
        );
    }
    let ended = match &ran.ran.exit {
        Exit::Code(0) => None,
        Exit::Code(c) => Some(format!("exited {c}")),
        Exit::TimedOut => {
            let reason = format!("`{cmd}` ran past {}s and was killed", timeout.as_secs());
            return Outcome::refuse(KIND, reason, evidence);
        }
        Exit::Signal(s) => Some(format!("was killed by signal {s}")),
        other => Some(format!("ended: {other:?}")),
    };
    if let Some(ended) = ended {
        return Outcome::refuse(KIND, format!("`{cmd}` {ended} ({passed} passed)"), evidence);
    }
    if passed + skipped == 0 {
        return Outcome::escalate(
            KIND,
            format!("`{cmd}` exited 0 but no test result could be read"),
            evidence,
        );
    }
    Outcome::pass(
        KIND,
        format!("`{cmd}`: {passed} passed, {skipped} skipped"),
        evidence,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libtest_lines() {
        let out = "running 3 tests\ntest a::b ... ok\ntest c ... FAILED\ntest d ... ignored, slow\ntest result: FAILED. 1 passed; 1 failed\n";
        let r = parse_libtest(out);
        assert_eq!(
            (
                r.count(TestResult::Passed),
                r.count(TestResult::Failed),
                r.count(TestResult::Skipped)
            ),
            (1, 1, 1)
        );
        assert_eq!(r.names(TestResult::Failed), vec!["c"]);
    }

    #[test]
    fn junit_cases() {
        let xml = r#"<?xml version="1.0"?><testsuites><testsuite name="s" tests="4">
<testcase classname="m" name="ok1"/>
<testcase name="fail &amp; more" time="0.1"><failure message="boom">trace</failure></testcase>
<testcase name='err'><error/></testcase>
<testcase name="skip"><skipped/></testcase>
<testcases-not-a-case/>
</testsuite></testsuites>"#;
        let r = parse_junit(xml);
        assert_eq!(r.tests.len(), 4);
        assert_eq!(r.tests[0], ("m.ok1".to_string(), TestResult::Passed));
        assert_eq!(r.tests[1], ("fail & more".to_string(), TestResult::Failed));
        assert_eq!(r.count(TestResult::Errored), 1);
        assert_eq!(r.count(TestResult::Skipped), 1);
        assert!(parse_junit("<testcase name=\"x\"").tests.is_empty());
    }

    const PYTEST: &str = include_str!("../../tests/fixtures/test_output/pytest-rA.txt");
    const PYTEST_COLLECTION: &str =
        include_str!("../../tests/fixtures/test_output/pytest-collection-error.txt");
    const GO: &str = include_str!("../../tests/fixtures/test_output/go-test-v.txt");

    fn pairs(r: &Results) -> Vec<(&str, TestResult)> {
        r.tests.iter().map(|(n, t)| (n.as_str(), *t)).collect()
    }

    #[test]
    fn pytest_short_summary_of_a_real_run() {
        use TestResult::*;
        let r = parse_pytest_summary(PYTEST);
        assert_eq!(
            pairs(&r),
            [
                ("tests/test_a.py::test_one", Passed),
                ("tests/test_a.py::test_param[a b]", Passed),
                ("tests/test_a.py::test_param[c - d]", Passed),
                ("tests/test_a.py:4", Skipped),
                ("tests/test_a.py::test_xfail", Skipped),
                ("tests/test_a.py::test_xpass", Passed),
                ("tests/test_a.py::test_err", Errored),
                ("tests/test_a.py::test_two", Failed),
                ("tests/test_a.py::test_xpass_strict", Failed),
                ("tests/test_a.py::test_param[1]", Failed),
            ]
        );
        assert_eq!(
            parse_output(PYTEST),
            r,
            "nothing else in it reads as a result"
        );
        let collection = parse_pytest_summary(PYTEST_COLLECTION);
        assert_eq!(pairs(&collection), [("tests/test_b.py", Errored)]);
    }

    #[test]
    fn pytest_lines_count_only_inside_the_summary() {
        let out = "FAILED printed by a test\n\
=========================== short test summary info ============================\n\
FAILED t.py::a[x - y] - boom - more\n\
SKIPPED [3] t.py: module skipped\n\
SKIPPED [oops\n\
PASSED \n\
1 failed in 0.1s\n\
PASSED after.py::late\n";
        let r = parse_output(out);
        assert_eq!(
            pairs(&r),
            [
                ("t.py::a[x - y]", TestResult::Failed),
                ("t.py", TestResult::Skipped),
                ("[oops", TestResult::Skipped),
            ],
            "the summary ends at its first other line"
        );
    }

    #[test]
    fn go_test_verbose_lines_with_subtests() {
        use TestResult::*;
        let r = parse_go_test(GO);
        assert_eq!(
            pairs(&r),
            [
                ("TestParse", Passed),
                ("TestTable", Failed),
                ("TestTable/empty", Passed),
                ("TestTable/one_item", Failed),
                ("TestTable/unicode_ü", Passed),
                ("TestSlow", Skipped),
                ("TestParallel", Passed),
                ("TestOther", Passed),
            ]
        );
        assert_eq!(parse_output(GO), r);
        for not_a_result in [
            "--- BENCH: X",
            "---- PASS: X",
            "--- PASS:",
            "--- PASS: ",
            "--- FAIL:X",
        ] {
            assert!(
                parse_go_test(not_a_result).tests.is_empty(),
                "{not_a_result}"
            );
        }
    }

    #[test]
    fn one_output_read_by_all_readers_counts_each_line_once() {
        let libtest = "running 2 tests\ntest a::b ... ok\ntest c ... FAILED\n";
        let mixed = format!("{libtest}{GO}{PYTEST}");
        let r = parse_output(&mixed);
        assert_eq!(r.tests.len(), 2 + 8 + 10);
        assert_eq!(r.count(TestResult::Failed), 1 + 2 + 3);
        assert_eq!(r.count(TestResult::Errored), 1);
        assert_eq!(
            parse_libtest(&mixed).tests.len(),
            2,
            "parse_libtest is unchanged"
        );
        assert_eq!(
            parse_output("test x ... ok\n--- PASS: TestX (0.00s)\n--- PASS: TestX (0.00s)\n")
                .tests
                .len(),
            3,
            "a test the runner reports twice counts twice"
        );
    }

    #[test]
    fn hostile_output_never_panics() {
        let mut inputs = vec![
            String::new(),
            "= short test summary info =\nSKIPPED [\nSKIPPED []\nSKIPPED [1]\nERROR  - x\nFAILED ]]] - [[[\n"
                .to_string(),
            "--- PASS: \u{0}\n   --- FAIL: é (\n\r\n".to_string(),
            format!("= short test summary info =\nFAILED {}\n", "[".repeat(100_000)),
        ];
        for fixture in [PYTEST, GO, PYTEST_COLLECTION] {
            let mut at = 0;
            while at < fixture.len() {
                if fixture.is_char_boundary(at) {
                    inputs.push(fixture[..at].to_string());
                    inputs.push(fixture[at..].to_string());
                }
                at += 13;
            }
        }
        for text in &inputs {
            let r = parse_output(text);
            for (name, _) in &r.tests {
                assert!(!name.is_empty() && text.contains(name.as_str()));
            }
        }
    }
}
