//! The table, each reader on output captured from the real tool (`tests/fixtures/analyzers/`,
//! paths rewritten), hostile output, and the runner's edges on `sh` stand-ins.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use super::reports::{Report, read};
use super::*;

const CLIPPY_WARNINGS: &str =
    include_str!("../../../../tests/fixtures/analyzers/clippy-warnings.jsonl");
const CLIPPY_ERROR: &str = include_str!("../../../../tests/fixtures/analyzers/clippy-error.jsonl");
const RUFF: &str = include_str!("../../../../tests/fixtures/analyzers/ruff.json");
const BANDIT: &str = include_str!("../../../../tests/fixtures/analyzers/bandit.json");
const ESLINT: &str = include_str!("../../../../tests/fixtures/analyzers/eslint.json");
const SEMGREP: &str = include_str!("../../../../tests/fixtures/analyzers/semgrep.sarif");
const SEMGREP_BAD_RULES: &str =
    include_str!("../../../../tests/fixtures/analyzers/semgrep-bad-rules.sarif");

const TSC: &str = "src/m.ts(1,7): error TS2322: Type 'string' is not assignable to type 'number'.\n\
src/m.ts(2,19): error TS7006: Parameter 'a' implicitly has an 'any' type.\n\
src/dir (old)/x.ts(3,13): error TS1109: Expression expected.\n";

fn repo() -> &'static Path {
    Path::new("/work/repo")
}

fn ok(format: Format, stdout: &str, stderr: &str) -> Report {
    read(format, stdout, stderr, repo()).expect("readable")
}

fn summary(r: &Report) -> Vec<(String, &'static str, Option<&'static str>, String)> {
    r.findings
        .iter()
        .map(|f| {
            (
                f.rule.clone().unwrap_or_default(),
                f.level,
                f.security,
                f.location.clone().unwrap_or_default(),
            )
        })
        .collect()
}

fn row(
    rule: &str,
    level: &'static str,
    security: Option<&'static str>,
    location: &str,
) -> (String, &'static str, Option<&'static str>, String) {
    (rule.into(), level, security, location.into())
}

fn names(langs: &[Language]) -> Vec<&'static str> {
    let set: BTreeSet<Language> = langs.iter().copied().collect();
    analyzers_for(&set).iter().map(|a| a.name).collect()
}

#[test]
fn the_table_is_per_language_in_a_fixed_order_then_the_scanners() {
    assert_eq!(names(&[]), ["semgrep", "trivy"]);
    assert_eq!(names(&[Language::Rust]), ["clippy", "semgrep", "trivy"]);
    assert_eq!(
        names(&[
            Language::TypeScript,
            Language::Go,
            Language::Python,
            Language::Rust,
            Language::JavaScript
        ]),
        [
            "clippy",
            "python-syntax",
            "ruff",
            "bandit",
            "gofmt",
            "gosec",
            "eslint",
            "tsc",
            "semgrep",
            "trivy"
        ]
    );
    assert_eq!(
        names(&[Language::JavaScript, Language::TypeScript]),
        ["eslint", "tsc", "semgrep", "trivy"],
        "eslint runs once for both"
    );
    let all: BTreeSet<Language> = [Language::Python, Language::Go].into_iter().collect();
    for a in analyzers_for(&all) {
        let security = matches!(a.name, "bandit" | "gosec" | "semgrep" | "trivy");
        let want = if security {
            SarifUse::Security
        } else {
            SarifUse::Lint
        };
        assert_eq!(a.counts_as, want, "{}", a.name);
        assert_eq!(a.optional, matches!(a.name, "semgrep" | "trivy"));
        assert_eq!(a.fetches.is_some(), a.optional, "{}", a.name);
    }
}

#[test]
fn clippy_warnings_are_read_once_though_cargo_reports_them_per_target() {
    let r = ok(Format::CargoJson, CLIPPY_WARNINGS, "");
    assert_eq!(r.seen, 6);
    assert_eq!(
        summary(&r),
        [
            row("unused_variables", "warning", None, "src/lib.rs:2"),
            row("clippy::ptr_arg", "warning", None, "src/lib.rs:1"),
            row("clippy::len_zero", "warning", None, "src/lib.rs:3"),
        ]
    );
    assert_eq!(
        r.findings[0].message.as_deref(),
        Some("unused variable: `x`")
    );
}

#[test]
fn a_compile_error_is_an_error_and_rustcs_notes_are_not_findings() {
    let r = ok(Format::CargoJson, CLIPPY_ERROR, "");
    assert_eq!(summary(&r), [row("E0308", "error", None, "src/lib.rs:2")]);
    let aborting = r#"{"reason":"compiler-message","message":{"level":"error","message":"aborting due to 1 previous error","spans":[],"code":null}}"#;
    let ice = r#"{"reason":"compiler-message","message":{"level":"error: internal compiler error","message":"boom","spans":[],"code":null}}"#;
    let r = ok(Format::CargoJson, &format!("{aborting}\n{ice}\n"), "");
    assert_eq!(summary(&r), [row("", "error", None, "")]);
    assert!(read(Format::CargoJson, "error: not json\n", "", repo()).is_err());
    assert_eq!(ok(Format::CargoJson, "", "").seen, 0);
}

#[test]
fn ruff_rules_are_warnings_and_its_syntax_errors_left_to_the_syntax_check() {
    let r = ok(Format::RuffJson, RUFF, "");
    assert_eq!(r.seen, 5, "the two syntax diagnostics were read");
    assert_eq!(
        summary(&r),
        [
            row("I001", "warning", None, "a.py:1"),
            row("F401", "warning", None, "a.py:1"),
            row("F841", "warning", None, "a.py:7"),
        ]
    );
    let e902 = r#"[{"code":"E902","filename":"/work/repo/x.py","message":"Permission denied","location":{"row":1}}]"#;
    let r = ok(Format::RuffJson, e902, "");
    assert!(r.findings.is_empty());
    assert_eq!(r.incomplete, ["ruff could not read 1 file(s): x.py"]);
    assert_eq!(ok(Format::RuffJson, "[]", "").seen, 0);
}

#[test]
fn bandit_severity_is_the_security_bucket_and_unscanned_files_are_incomplete() {
    let r = ok(Format::BanditJson, BANDIT, "");
    assert_eq!(
        summary(&r),
        [
            row("B404", "note", Some("low"), "a.py:2"),
            row("B403", "note", Some("low"), "a.py:3"),
            row("B602", "error", Some("high"), "a.py:6"),
            row("B307", "warning", Some("medium"), "a.py:8"),
            row("B105", "note", Some("low"), "a.py:10"),
            row("B301", "warning", Some("medium"), "a.py:12"),
        ]
    );
    assert_eq!(
        r.incomplete,
        ["bandit could not scan 1 file(s): ./bad.py (syntax error while parsing AST from file)"]
    );
    let odd = r#"{"results":[{"issue_severity":"UNDEFINED"},{"issue_severity":7}]}"#;
    assert_eq!(
        summary(&ok(Format::BanditJson, odd, "")),
        [row("", "note", None, "")],
        "two identical findings of no severity are one"
    );
}

#[test]
fn eslint_severity_two_is_an_error_and_a_parse_failure_is_fatal() {
    let r = ok(Format::EslintJson, ESLINT, "");
    assert_eq!(
        summary(&r),
        [
            row("no-unused-vars", "error", None, "app.js:1"),
            row("no-console", "warning", None, "app.js:2"),
            row("no-undef", "error", None, "app.js:2"),
            row("parse-error", "error", None, "broken.js:1"),
        ]
    );
}

#[test]
fn tsc_lines_are_errors_and_a_project_error_is_incomplete() {
    let r = ok(Format::TscText, TSC, "");
    assert_eq!(
        summary(&r),
        [
            row("TS2322", "error", None, "src/m.ts:1"),
            row("TS7006", "error", None, "src/m.ts:2"),
            row("TS1109", "error", None, "src/dir (old)/x.ts:3"),
        ]
    );
    let none = "error TS18003: No inputs were found in config file '/x/tsconfig.json'.\n";
    let r = ok(Format::TscText, none, "");
    assert!(r.findings.is_empty());
    assert_eq!(r.incomplete.len(), 1);
    assert!(r.incomplete[0].contains("TS18003"));
}

#[test]
fn gofmt_parse_errors_are_errors_unformatted_files_warnings_vendored_ignored() {
    let stdout = "main.go\nvendor/x/y.go\npkg/_gen/z.go\n";
    let stderr = "bad.go:3:1: expected declaration, found foo\nbad.go:9:2: expected '}', found 'EOF'\n\
testdata/broken.go:1:1: expected 'package', found x\nweird:name.go:2:5: illegal character\n";
    let r = ok(Format::GofmtList, stdout, stderr);
    assert_eq!(
        summary(&r),
        [
            row("syntax-error", "error", None, "bad.go:3"),
            row("syntax-error", "error", None, "weird:name.go:2"),
            row("gofmt", "warning", None, "main.go"),
        ]
    );
    assert!(r.incomplete.is_empty());
    let r = ok(Format::GofmtList, "", "open x.go: permission denied\n");
    assert_eq!(r.incomplete, ["gofmt: open x.go: permission denied"]);
}

#[test]
fn semgrep_sarif_levels_and_invalid_rules_are_incomplete() {
    let r = ok(Format::Sarif, SEMGREP, "");
    assert_eq!(
        summary(&r),
        [
            row("no-eval", "error", None, "a.py:8"),
            row("pickle-loads", "warning", None, "a.py:12"),
        ]
    );
    assert!(r.incomplete.is_empty());
    let r = ok(Format::Sarif, SEMGREP_BAD_RULES, "");
    assert_eq!((r.seen, r.incomplete.len()), (0, 1));
    assert!(
        r.incomplete[0].contains("Invalid YAML"),
        "{:?}",
        r.incomplete
    );
}

#[test]
fn the_syntax_checks_lines_and_its_missing_end() {
    let out = r#"{"file": "pkg/bad.py", "line": 3, "message": "SyntaxError: invalid syntax"}
{"unread": "deep.py", "why": "RecursionError: maximum recursion depth exceeded"}
{"checked": 4}
"#;
    let r = ok(Format::PythonSyntax, out, "");
    assert_eq!(
        summary(&r),
        [row("syntax-error", "error", None, "pkg/bad.py:3")]
    );
    assert_eq!(r.incomplete.len(), 1);
    assert!(r.incomplete[0].contains("deep.py (RecursionError"));
    let cut = ok(Format::PythonSyntax, "", "");
    assert_eq!(
        cut.incomplete,
        ["the Python syntax check did not finish its walk"]
    );
    assert!(
        read(
            Format::PythonSyntax,
            "Traceback (most recent call last):\n",
            "",
            repo()
        )
        .is_err()
    );
}

#[test]
fn hostile_output_never_panics_any_reader() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let mut inputs: Vec<String> = [
        "",
        "\u{0}",
        "{",
        "[",
        "null",
        "42",
        "\"x\"",
        "[null, 1, {}]",
        "{\"results\": [null, {\"issue_severity\": []}], \"errors\": [1]}",
        "[{\"messages\": [{\"severity\": 2, \"line\": -1}, null]}]",
        "[{\"code\": 7, \"location\": {\"row\": \"x\"}}]",
        "{\"runs\": [{\"results\": [{\"locations\": [1]}], \"invocations\": [{\"toolExecutionNotifications\": [{\"level\": \"error\"}]}]}]}",
        "{\"reason\":\"compiler-message\",\"message\":{\"level\":\"error\",\"spans\":[{\"is_primary\":true,\"file_name\":5}]}}",
        "{\"checked\": \"many\"}\n{\"file\": 1}",
        "(): error TS\n): error TS1: \nx(: error TSé\n",
        ":::: \n:1:2: m\nfile:é:1: m\n",
        "é\u{1F600}\r\n\r\n",
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    inputs.push(deep);
    inputs.push("x".repeat(1 << 20));
    for fixture in [
        CLIPPY_WARNINGS,
        CLIPPY_ERROR,
        RUFF,
        BANDIT,
        ESLINT,
        SEMGREP,
        SEMGREP_BAD_RULES,
        TSC,
    ] {
        // Every cut of a real report: a tool killed mid-write.
        let mut at = 0;
        while at < fixture.len() {
            if fixture.is_char_boundary(at) {
                inputs.push(fixture[..at].to_string());
            }
            at += 97;
        }
    }
    for input in &inputs {
        for format in Format::ALL {
            let _ = read(format, input, input, repo());
        }
    }
}

fn sh(name: &'static str, script: &str, format: Format) -> Analyzer {
    analyzer(name, SarifUse::Lint, &["sh", "-c", script], format)
}

fn run_sh(a: &Analyzer, dir: &Path, cap: usize) -> AnalyzerRun {
    run_capped(a, dir, &[], Duration::from_secs(20), None, cap)
}

#[test]
fn output_over_the_cap_is_unreadable_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let big = sh(
        "big",
        "printf '['; i=0; while [ $i -lt 400 ]; do printf '{\"code\":\"F1\",\"message\":\"m\"},'; i=$((i+1)); done; printf '{}]'",
        Format::RuffJson,
    );
    let r = run_sh(&big, dir.path(), 4096);
    let why = r.incomplete.expect("incomplete");
    assert!(why.contains("printed more than 4096 bytes"), "{why}");
    assert!(r.findings.is_empty());
    let fits = run_sh(&big, dir.path(), 1 << 20);
    assert_eq!((fits.incomplete, fits.findings.len()), (None, 1));
}

#[test]
fn exits_and_quiet_tools() {
    let dir = tempfile::tempdir().unwrap();
    let failed = run_sh(
        &sh("f", "echo 'config broken' >&2; exit 2", Format::TscText),
        dir.path(),
        1 << 20,
    );
    assert_eq!(
        failed.incomplete.as_deref(),
        Some(
            "`sh -c echo 'config broken' >&2; exit 2` exited 2 with no finding read: config broken"
        )
    );
    let findings_and_exit = run_sh(
        &sh(
            "t",
            &format!("printf '{}'; exit 2", "a.ts(1,1): error TS1: m"),
            Format::TscText,
        ),
        dir.path(),
        1 << 20,
    );
    assert_eq!(
        (
            findings_and_exit.incomplete,
            findings_and_exit.findings.len()
        ),
        (None, 1),
        "linters exit non-zero on findings"
    );
    let quiet = Analyzer {
        silent_when_clean: true,
        ..sh("q", "true", Format::Sarif)
    };
    assert_eq!(run_sh(&quiet, dir.path(), 1 << 20).incomplete, None);
    let mute = run_sh(&sh("m", "true", Format::Sarif), dir.path(), 1 << 20);
    assert!(
        mute.incomplete.unwrap().contains("printed no report"),
        "a SARIF tool that prints nothing gave no evidence"
    );
    let killed = run_sh(&sh("k", "kill -9 $$", Format::Sarif), dir.path(), 1 << 20);
    assert!(killed.incomplete.unwrap().contains("killed by signal 9"));
}

#[test]
fn a_needed_file_is_looked_for_and_passed_after_its_flag() {
    let dir = tempfile::tempdir().unwrap();
    let langs = BTreeSet::new();
    let semgrep = analyzers_for(&langs).remove(0);
    assert_eq!(semgrep.name, "semgrep");
    let why = argv_in(&semgrep, dir.path()).unwrap_err();
    assert!(
        why.contains(".semgrep.yml, .semgrep.yaml, .semgrep"),
        "{why}"
    );
    std::fs::create_dir(dir.path().join(".semgrep")).unwrap();
    let argv = argv_in(&semgrep, dir.path()).unwrap();
    assert_eq!(&argv[argv.len() - 2..], ["--config", ".semgrep"]);
    let r = run_sh(&semgrep, tempfile::tempdir().unwrap().path(), 1 << 20);
    let why = r.incomplete.unwrap();
    assert!(why.contains("registry rules"), "the offline hint: {why}");
}
