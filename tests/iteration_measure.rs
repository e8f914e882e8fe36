//! Measuring one iteration of a loop step (`splice::floors::iteration`, `docs/monitor.md`
//! "Measuring an iteration"): the stages run in a real temporary git repository and the state
//! the monitor judges is built from their results and the diff against the step's base.

mod common;

use std::time::Duration;

use common::Repo;
use splice::floors::iteration::{MeasureInput, Measurement, SarifSource, TestsStage, measure};
use splice::model::bead::Acceptance;
use splice::model::trajectory::{Findings, Outcomes, TrajectoryFile};

fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

fn tests_stage(script: &str, junit: Option<&str>) -> TestsStage {
    TestsStage {
        argv: sh(script),
        junit: junit.map(str::to_string),
        timeout: Duration::from_secs(20),
        baseline: None,
    }
}

fn input(repo: &Repo, base: &str) -> MeasureInput {
    MeasureInput {
        confined: None,
        worktree: repo.path().to_path_buf(),
        base: base.to_string(),
        iteration: 1,
        bead_id: "sp-1".into(),
        tests: Vec::new(),
        acceptance: Vec::new(),
        acceptance_timeout: Duration::from_secs(20),
        lint: Vec::new(),
        security: Vec::new(),
        analyzers: None,
        notes: Vec::new(),
        confidence: None,
        tokens: 0,
        cost_usd: 0.0,
    }
}

fn run(input: &MeasureInput) -> Measurement {
    measure(input).expect("measured")
}

fn commit(repo: &Repo, files: &[(&str, Option<&str>)], msg: &str) {
    for (path, content) in files {
        let p = repo.path().join(path);
        match content {
            Some(c) => {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, c).unwrap();
            }
            None => std::fs::remove_file(p).unwrap(),
        }
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", msg]);
}

#[test]
fn libtest_output_gives_counts_and_failing_names() {
    let repo = Repo::new();
    let base = repo.git(&["rev-parse", "HEAD"]);
    let mut i = input(&repo, &base);
    i.tests = vec![tests_stage(
        "printf 'running 4 tests\\ntest a::ok ... ok\\ntest b ... ok\\ntest c::bad ... FAILED\\ntest d ... ignored\\n'; exit 101",
        None,
    )];
    let m = run(&i);
    assert!(!m.state.stage_failed);
    assert_eq!(
        m.state.tests,
        Outcomes {
            passed: 2,
            failed: 1,
            errored: 0
        }
    );
    assert_eq!(m.context.failing_tests, vec!["c::bad"]);
    assert!(!m.state.succeeded());
}

#[test]
fn junit_file_gives_counts_and_a_missing_file_is_incomplete() {
    let repo = Repo::new();
    let base = repo.git(&["rev-parse", "HEAD"]);
    let xml = r#"<testsuites><testsuite>
<testcase classname="m" name="ok"/>
<testcase name="boom"><failure message="x"/></testcase>
<testcase name="err"><error/></testcase>
<testcase name="skip"><skipped/></testcase>
</testsuite></testsuites>"#;
    std::fs::write(repo.path().join("junit.xml"), xml).unwrap();
    let mut i = input(&repo, &base);
    i.tests = vec![tests_stage("exit 1", Some("junit.xml"))];
    let m = run(&i);
    assert_eq!(
        m.state.tests,
        Outcomes {
            passed: 1,
            failed: 1,
            errored: 1
        }
    );
    assert_eq!(m.context.failing_tests, vec!["boom", "err"]);
    assert_eq!(m.state.incomplete_verifications, 0);

    i.tests = vec![tests_stage("true", Some("missing.xml"))];
    let m = run(&i);
    assert!(!m.state.stage_failed);
    assert_eq!(m.state.tests, Outcomes::default());
    assert_eq!(m.state.incomplete_verifications, 1);
    assert!(
        m.context.incomplete[0].contains("missing.xml"),
        "{:?}",
        m.context
    );
    assert!(
        m.state.succeeded(),
        "incomplete verification is not a failure"
    );
}

#[test]
fn a_test_stage_that_cannot_complete_gives_the_stage_failed_state() {
    let repo = Repo::new();
    let base = repo.git(&["rev-parse", "HEAD"]);
    let mut i = input(&repo, &base);
    i.tokens = 900;
    i.cost_usd = 0.02;
    i.confidence = Some(0.7);
    i.acceptance = vec![Acceptance {
        id: "never-run".into(),
        argv: vec!["true".into()],
    }];
    i.tests = vec![TestsStage {
        argv: vec!["splice-no-such-program-xyz".into()],
        junit: None,
        timeout: Duration::from_secs(5),
        baseline: None,
    }];
    let m = run(&i);
    assert!(m.state.stage_failed);
    assert_eq!((m.state.tokens, m.state.cost_usd), (900, 0.02));
    assert_eq!(m.state.change_hash, "");
    assert_eq!(
        m.state.acceptance,
        Outcomes::default(),
        "later stages do not run"
    );
    assert_eq!(m.state.confidence, None);
    let f = m.context.stage_failure.expect("the failure is recorded");
    assert_eq!(f.stage, "tests");
    assert!(f.reason.contains("cannot run"), "{}", f.reason);

    // A build error: non-zero exit and no failing test read.
    i.tests = vec![tests_stage(
        "echo 'error[E0425]: cannot find value' >&2; exit 101",
        None,
    )];
    let m = run(&i);
    assert!(m.state.stage_failed);
    let f = m.context.stage_failure.unwrap();
    assert!(f.reason.contains("exited 101"), "{}", f.reason);
    assert!(f.output_tail.contains("E0425"));

    // A timeout.
    i.tests = vec![TestsStage {
        timeout: Duration::from_secs(1),
        baseline: None,
        ..tests_stage("sleep 10", None)
    }];
    let m = run(&i);
    assert!(m.state.stage_failed);
    assert!(
        m.context
            .stage_failure
            .unwrap()
            .reason
            .contains("ran past 1s")
    );
}

#[test]
fn acceptance_facts_pass_fail_and_error() {
    let repo = Repo::new();
    let base = repo.git(&["rev-parse", "HEAD"]);
    let mut i = input(&repo, &base);
    i.acceptance_timeout = Duration::from_secs(1);
    let fact = |id: &str, argv: Vec<String>| Acceptance {
        id: id.into(),
        argv,
    };
    i.acceptance = vec![
        fact("passes", vec!["true".into()]),
        fact("in-worktree", sh("test -f README.md")),
        fact("fails", sh("echo nope; exit 3")),
        fact("missing", vec!["splice-no-such-program-xyz".into()]),
        fact("hangs", sh("sleep 10")),
    ];
    let m = run(&i);
    assert_eq!(
        m.state.acceptance,
        Outcomes {
            passed: 2,
            failed: 1,
            errored: 2
        }
    );
    let misses: Vec<(&str, &str)> = m
        .context
        .acceptance
        .iter()
        .map(|a| (a.id.as_str(), a.outcome.as_str()))
        .collect();
    assert_eq!(
        misses,
        vec![
            ("fails", "failed"),
            ("missing", "errored"),
            ("hangs", "errored")
        ]
    );
    assert!(m.context.acceptance[0].reason.contains("exited 3"));
    assert!(m.context.acceptance[0].reason.contains("nope"));
    assert!(m.context.acceptance[2].reason.contains("ran past 1s"));
}

fn sarif(results: serde_json::Value, incomplete: bool) -> String {
    let mut run = serde_json::json!({
        "tool": {"driver": {"name": "x", "rules": [
            {"id": "SEC", "properties": {"security-severity": "9.1"}}
        ]}},
        "results": results,
    });
    if incomplete {
        run["invocations"] = serde_json::json!([{"executionSuccessful": false}]);
    }
    serde_json::json!({"version": "2.1.0", "runs": [run]}).to_string()
}

#[test]
fn sarif_findings_by_severity_and_incomplete_reports() {
    let repo = Repo::new();
    let base = repo.git(&["rev-parse", "HEAD"]);
    let lint = sarif(
        serde_json::json!([
            {"ruleId": "L1", "level": "error", "message": {"text": "bad"}},
            {"ruleId": "L2", "level": "warning"},
            {"ruleId": "L3", "level": "warning"},
            {"ruleId": "L4", "level": "note"},
            {"ruleId": "L5", "level": "none"}
        ]),
        false,
    );
    let security = sarif(
        serde_json::json!([
            {"ruleId": "SEC", "level": "warning"},
            {"ruleId": "S2", "properties": {"security-severity": 7.5}},
            {"ruleId": "S3", "properties": {"security-severity": "4.0"}}
        ]),
        true,
    );
    std::fs::write(repo.path().join("lint.sarif"), lint).unwrap();
    std::fs::write(repo.path().join("sec.sarif"), security).unwrap();
    let mut i = input(&repo, &base);
    i.lint = vec![
        SarifSource::File("lint.sarif".into()),
        SarifSource::File("absent.sarif".into()),
    ];
    i.security = vec![SarifSource::Argv {
        argv: sh("cat sec.sarif; exit 1"),
        timeout: Duration::from_secs(10),
    }];
    let m = run(&i);
    assert_eq!(
        m.state.lint,
        Findings {
            critical: 0,
            high: 1,
            medium: 2,
            low: 1
        }
    );
    assert_eq!(
        m.state.security,
        Findings {
            critical: 1,
            high: 1,
            medium: 1,
            low: 0
        }
    );
    // The missing lint file and the security run marked unfinished.
    assert_eq!(
        m.state.incomplete_verifications, 2,
        "{:?}",
        m.context.incomplete
    );
    let first: Vec<(&str, &str)> = m
        .context
        .findings
        .iter()
        .take(3)
        .map(|f| (f.stage.as_str(), f.severity.as_str()))
        .collect();
    assert_eq!(
        first,
        vec![
            ("security", "critical"),
            ("lint", "high"),
            ("security", "high")
        ]
    );
    assert!(!m.state.succeeded());
}

#[test]
fn diff_counts_against_the_base() {
    let repo = Repo::new();
    commit(&repo, &[("old.txt", Some("gone\n"))], "old");
    let base = repo.git(&["rev-parse", "HEAD"]);
    commit(
        &repo,
        &[
            ("src/a.txt", Some("1\n2\n3\n")),
            ("README.md", Some("changed\n")),
            ("old.txt", None),
        ],
        "change",
    );
    std::fs::write(repo.path().join("scratch.txt"), "uncommitted\n").unwrap();
    let m = run(&input(&repo, &base));
    let s = &m.state;
    assert_eq!((s.changed_paths, s.lines_added, s.lines_removed), (3, 4, 2));
    assert_eq!(
        s.code_size_bytes, 14,
        "new content of src/a.txt and README.md"
    );
    assert_eq!(
        m.context.changed_files,
        vec!["README.md", "old.txt", "src/a.txt"]
    );
    assert!(s.succeeded(), "no stage declared: nothing failed");
    // The state is one the monitor's trajectory file accepts.
    let file = serde_json::json!({"schema_version": 1, "trajectory": [s]});
    TrajectoryFile::parse(&file.to_string()).expect("a valid trajectory entry");
}

#[test]
fn the_change_hash_is_the_change_not_the_workspace() {
    let repo = Repo::new();
    let base = repo.git(&["rev-parse", "HEAD"]);
    commit(&repo, &[("a.txt", Some("A\n"))], "a");
    let i = input(&repo, &base);
    let first = run(&i).state.change_hash;
    assert_eq!(first.len(), 64);
    assert_eq!(run(&i).state.change_hash, first, "stable across runs");

    std::fs::create_dir_all(repo.path().join("target/debug")).unwrap();
    std::fs::write(repo.path().join("target/debug/out.o"), "junk").unwrap();
    std::fs::write(repo.path().join("a.txt"), "uncommitted edit\n").unwrap();
    assert_eq!(
        run(&i).state.change_hash,
        first,
        "untracked output and uncommitted edits are not the change"
    );
    repo.git(&["checkout", "--", "a.txt"]);

    commit(&repo, &[("a.txt", Some("B\n"))], "b");
    assert_ne!(
        run(&i).state.change_hash,
        first,
        "other content, other hash"
    );
}

#[test]
fn identical_changes_on_two_bases_of_the_same_tree_hash_alike() {
    let repo = Repo::new();
    let base_a = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["commit", "-q", "--allow-empty", "-m", "same tree"]);
    let base_b = repo.git(&["rev-parse", "HEAD"]);
    assert_ne!(base_a, base_b);
    let change = [("x/y.rs", Some("fn y() {}\n")), ("README.md", None)];

    repo.git(&["checkout", "-q", "-b", "on-a", &base_a]);
    commit(&repo, &change, "on a");
    let on_a = run(&input(&repo, &base_a)).state;

    repo.git(&["checkout", "-q", "-b", "on-b", &base_b]);
    commit(&repo, &change, "on b");
    let on_b = run(&input(&repo, &base_b)).state;

    assert_eq!(on_a.change_hash, on_b.change_hash);
    assert_eq!(on_a.changed_paths, 2);
}

#[test]
fn an_unknown_base_is_an_error_not_a_state() {
    let repo = Repo::new();
    let err = measure(&input(&repo, "0123456789012345678901234567890123456789")).unwrap_err();
    assert!(err.contains("base"), "{err}");
}

#[test]
fn usage_and_confidence_are_carried_and_a_bad_confidence_is_refused() {
    let repo = Repo::new();
    let base = repo.git(&["rev-parse", "HEAD"]);
    let mut i = input(&repo, &base);
    i.iteration = 3;
    i.tokens = 1200;
    i.cost_usd = 0.05;
    i.confidence = Some(0.6);
    let s = run(&i).state;
    assert_eq!((s.iteration, s.tokens, s.cost_usd), (3, 1200, 0.05));
    assert_eq!(s.confidence, Some(0.6));
    assert_eq!(s.changed_paths, 0);
    i.confidence = Some(1.5);
    assert!(measure(&i).unwrap_err().contains("confidence 1.5"));
}
