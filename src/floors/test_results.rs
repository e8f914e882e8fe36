//! `tests`: runs a test command (`argv`, or `cmd` via `sh -c`) in the workdir and reads per-test
//! results from a JUnit XML file (`junit`) and from libtest output (`test name ... ok`). Any
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
    let mut out = Results::default();
    for line in output.lines() {
        let Some(rest) = line.strip_prefix("test ") else {
            continue;
        };
        let Some((name, status)) = rest.rsplit_once(" ... ") else {
            continue;
        };
        let result = match status.trim() {
            "ok" => TestResult::Passed,
            "FAILED" => TestResult::Failed,
            s if s.starts_with("ignored") => TestResult::Skipped,
            _ => continue,
        };
        out.tests.push((name.trim().to_string(), result));
    }
    out
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
        let mut results = parse_libtest(&ran.combined());
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
}
