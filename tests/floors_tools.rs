//! The `tests` and `sarif` floors: test results from libtest output and JUnit XML, findings
//! from SARIF by severity.

#[path = "floors_common/mod.rs"]
mod common;

use common::{Repo, assert_verdict, bead};
use serde_json::{Value, json};
use splice::floors::Outcome;

fn check(repo: &Repo, spec: Value) -> Outcome {
    let b = bead("sp-a", "implement");
    repo.check(spec, &b, &b, "implement", None)
}

const LIBTEST_OK: &str =
    "printf 'running 2 tests\\ntest a ... ok\\ntest b ... ignored\\n\\ntest result: ok.\\n'";

#[test]
fn tests_pass_with_counts() {
    let repo = Repo::new();
    let o = check(&repo, json!({"kind": "tests", "cmd": LIBTEST_OK}));
    assert_verdict(&o, "pass");
    assert_eq!(
        (o.evidence["passed"].clone(), o.evidence["skipped"].clone()),
        (json!(1), json!(1))
    );
}

#[test]
fn tests_refuse_on_a_failure_from_libtest_or_junit() {
    let repo = Repo::new();
    let o = check(
        &repo,
        json!({"kind": "tests", "cmd": "echo 'test s1_adds ... FAILED'; exit 101"}),
    );
    assert_verdict(&o, "refuse");
    assert_eq!(o.evidence["failed_tests"], json!(["s1_adds"]));

    repo.write(
        "out/junit.xml",
        "<testsuite><testcase name=\"ok\"/><testcase name=\"bad\"><error message=\"x\"/></testcase></testsuite>",
    );
    // The command itself succeeds; the report says a test errored.
    let o = check(
        &repo,
        json!({"kind": "tests", "argv": ["true"], "junit": "out/junit.xml"}),
    );
    assert_verdict(&o, "refuse");
    assert_eq!(
        (o.evidence["passed"].clone(), o.evidence["errored"].clone()),
        (json!(1), json!(1))
    );
}

#[test]
fn tests_junit_pass_and_non_zero_exit() {
    let repo = Repo::new();
    repo.write(
        "junit-sp-a.xml",
        "<testsuite><testcase name=\"ok\"></testcase></testsuite>",
    );
    assert_verdict(
        &check(
            &repo,
            json!({"kind": "tests", "argv": ["true"], "junit": "junit-{{bead.id}}.xml"}),
        ),
        "pass",
    );
    // No failing test parsed, but the command failed (e.g. it did not compile).
    assert_verdict(
        &check(
            &repo,
            json!({"kind": "tests", "cmd": "echo error: cannot compile; exit 101"}),
        ),
        "refuse",
    );
}

#[test]
fn tests_escalate_when_they_cannot_check() {
    let repo = Repo::new();
    let o = check(
        &repo,
        json!({"kind": "tests", "argv": ["/nonexistent/runner"]}),
    );
    assert_verdict(&o, "escalate");
    assert_verdict(
        &check(&repo, json!({"kind": "tests", "argv": ["true"]})),
        "escalate",
    );
    assert_verdict(&check(&repo, json!({"kind": "tests"})), "escalate");
}

fn sarif(results: Value) -> String {
    json!({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "lint"}}, "results": results}]}).to_string()
}

#[test]
fn sarif_counts_and_fail_on() {
    let repo = Repo::new();
    repo.write(
        "lint.sarif",
        &sarif(json!([{"ruleId": "W1", "level": "warning"}, {"ruleId": "N1", "level": "note"}])),
    );
    let o = check(&repo, json!({"kind": "sarif", "file": "lint.sarif"}));
    assert_verdict(&o, "pass");
    assert_eq!(o.evidence["counts"]["warning"], json!(1));
    assert_eq!(o.evidence["status"], json!("complete"));

    let o = check(
        &repo,
        json!({"kind": "sarif", "file": "lint.sarif", "fail_on": ["warning"]}),
    );
    assert_verdict(&o, "refuse");

    repo.write("sec.sarif", &sarif(json!([{"ruleId": "S1", "level": "warning", "properties": {"security-severity": "7.5"}}])));
    let o = check(&repo, json!({"kind": "sarif", "file": "sec.sarif"}));
    assert_verdict(&o, "refuse");
    assert!(o.reason.contains("1 high"), "{}", o.reason);
}

#[test]
fn sarif_from_a_tools_stdout() {
    let repo = Repo::new();
    repo.write(
        "report.json",
        &sarif(json!([{"ruleId": "E1", "level": "error"}])),
    );
    // Linters exit non-zero when they find something; the findings decide.
    let o = check(
        &repo,
        json!({"kind": "sarif", "argv": ["sh", "-c", "cat report.json; exit 1"]}),
    );
    assert_verdict(&o, "refuse");
    assert_eq!(o.evidence["counts"]["error"], json!(1));
}

#[test]
fn sarif_missing_is_never_a_silent_pass() {
    let repo = Repo::new();
    let o = check(&repo, json!({"kind": "sarif", "file": "absent.sarif"}));
    assert_verdict(&o, "escalate");
    assert_eq!(o.evidence["status"], json!("incomplete"));
    let o = check(
        &repo,
        json!({"kind": "sarif", "argv": ["/nonexistent/linter"]}),
    );
    assert_verdict(&o, "escalate");
    assert_eq!(o.evidence["status"], json!("incomplete"));
    let o = check(
        &repo,
        json!({"kind": "sarif", "file": "absent.sarif", "optional": true}),
    );
    assert_verdict(&o, "pass");
    assert_eq!(o.evidence["status"], json!("not-applicable"));
    repo.write("broken.sarif", "{ not json");
    assert_verdict(
        &check(&repo, json!({"kind": "sarif", "file": "broken.sarif"})),
        "escalate",
    );
}

#[test]
fn command_passes_on_the_expected_exit_and_is_bounded_in_time() {
    let repo = Repo::new();
    let o = check(
        &repo,
        json!({"kind": "command", "argv": ["sh", "-c", "exit 3"], "expect_exit": 3}),
    );
    assert_verdict(&o, "pass");
    let o = check(
        &repo,
        json!({"kind": "command", "argv": ["sh", "-c", "echo nope; exit 1"]}),
    );
    assert_verdict(&o, "refuse");
    assert!(o.evidence["output_tail"].as_str().unwrap().contains("nope"));
    let started = std::time::Instant::now();
    let o = check(
        &repo,
        json!({"kind": "command", "argv": ["sleep", "30"], "timeout_s": 1}),
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert_verdict(&o, "refuse");
    assert!(o.reason.contains("killed after 1s"), "{}", o.reason);
    let o = check(&repo, json!({"kind": "command", "argv": ["/no/such/tool"]}));
    assert_verdict(&o, "escalate");
}

#[test]
fn command_returns_when_the_leader_exits_though_a_background_job_lingers() {
    let repo = Repo::new();
    let started = std::time::Instant::now();
    // The background `sleep` holds the output pipes open after `sh` exits.
    let o = check(
        &repo,
        json!({"kind": "command", "argv": ["sh", "-c", "sleep 30 & echo hi; exit 4"], "expect_exit": 4, "timeout_s": 60}),
    );
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(10), "took {took:?}");
    assert_verdict(&o, "pass");
    assert_eq!(o.evidence["exit_code"], json!(4));
    assert!(
        o.evidence["output_tail"].as_str().unwrap().contains("hi"),
        "{}",
        o.evidence
    );
}

#[test]
fn command_whose_leader_runs_past_its_timeout_is_killed() {
    let repo = Repo::new();
    let started = std::time::Instant::now();
    let o = check(
        &repo,
        json!({"kind": "command", "argv": ["sh", "-c", "echo begun; sleep 30 & sleep 30"], "timeout_s": 1}),
    );
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(10), "took {took:?}");
    assert_verdict(&o, "refuse");
    assert_eq!(o.evidence["exit_code"], json!(null));
    assert!(o.reason.contains("killed after 1s"), "{}", o.reason);
    assert!(
        o.evidence["output_tail"]
            .as_str()
            .unwrap()
            .contains("begun"),
        "{}",
        o.evidence
    );
}
