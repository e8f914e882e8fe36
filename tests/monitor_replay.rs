//! Replay the monitor corpus in `snapshots/monitor/` through the library and the built binary
//! (`splice monitor --trajectory NAME.json --expect NAME.expected.json`); any difference fails.
//!
//! To regenerate the expected files after an intended change (then review the diff):
//! `SPLICE_BLESS=1 cargo test --test monitor_replay`.

use std::path::{Path, PathBuf};
use std::process::Command;

use splice::model::trajectory::TrajectoryFile;
use splice::policy::monitor::report;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots/monitor")
}

fn corpus() -> Vec<(String, PathBuf, PathBuf)> {
    let dir = dir();
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .expect("snapshots/monitor/ exists")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            let stem = name.strip_suffix(".json")?;
            (!stem.ends_with(".expected")).then(|| stem.to_string())
        })
        .map(|name| {
            let input = dir.join(format!("{name}.json"));
            let expected = dir.join(format!("{name}.expected.json"));
            (name, input, expected)
        })
        .collect();
    cases.sort();
    cases
}

fn library(input: &Path) -> String {
    let text = std::fs::read_to_string(input).unwrap();
    let parsed =
        TrajectoryFile::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
    report(&parsed).to_pretty_json()
}

#[test]
fn corpus_is_large_enough_and_indexed() {
    let cases = corpus();
    assert!(cases.len() >= 20, "only {} cases", cases.len());
    let readme = std::fs::read_to_string(dir().join("README.md")).expect("README.md");
    for (name, _, _) in &cases {
        assert!(
            readme.contains(&format!("`{name}`")),
            "{name}: not described in snapshots/monitor/README.md"
        );
    }
    // Every decision name is exercised.
    let all: String = cases.iter().map(|(_, input, _)| library(input)).collect();
    for name in [
        "success",
        "stop_iteration_limit",
        "stop_budget",
        "escalate_oscillation",
        "escalate_repeated",
        "rollback",
        "step_back",
        "ask_user",
        "continue",
    ] {
        assert!(
            all.contains(&format!("\"decision\": \"{name}\"")),
            "no case decides {name}"
        );
    }
}

#[test]
fn every_case_replays_through_the_library() {
    let bless = std::env::var_os("SPLICE_BLESS").is_some();
    let mut failures = Vec::new();
    for (name, input, expected) in corpus() {
        let actual = library(&input);
        if bless {
            std::fs::write(&expected, &actual).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&expected)
            .unwrap_or_else(|e| panic!("{name}: no {name}.expected.json ({e})"));
        if want != actual {
            failures.push(format!("{name}:\n{actual}"));
        }
    }
    assert!(failures.is_empty(), "differs:\n{}", failures.join("\n"));
}

#[test]
fn every_case_replays_through_the_binary_byte_for_byte() {
    if std::env::var_os("SPLICE_BLESS").is_some() {
        return;
    }
    for (name, input, expected) in corpus() {
        let out = Command::new(env!("CARGO_BIN_EXE_splice"))
            .args(["monitor", "--trajectory"])
            .arg(&input)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}: {out:?}");
        let want = std::fs::read(&expected).unwrap();
        assert_eq!(out.stdout, want, "{name}: printed output differs");
        let check = Command::new(env!("CARGO_BIN_EXE_splice"))
            .args(["monitor", "--trajectory"])
            .arg(&input)
            .arg("--expect")
            .arg(&expected)
            .output()
            .unwrap();
        assert_eq!(check.status.code(), Some(0), "{name}: {check:?}");
    }
}

#[test]
fn a_different_expectation_exits_1_with_a_diff() {
    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("wrong.json");
    std::fs::write(&wrong, "{\n  \"decision\": \"continue\"\n}\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_splice"))
        .args(["monitor", "--trajectory"])
        .arg(self::dir().join("rollback-latest-below-first.json"))
        .arg("--expect")
        .arg(&wrong)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("+ "), "{err}");
    assert!(err.contains("rollback"), "{err}");
}

/// Bad input exits 2 and names the file and the JSON path; nothing is printed on stdout.
#[test]
fn bad_trajectories_exit_2_naming_file_and_path() {
    let dir = tempfile::tempdir().unwrap();
    let ok_state = r#"{"iteration": 1, "change_hash": "a"}"#;
    let cases: &[(&str, String, &str)] = &[
        ("not-json", "{ nope".into(), "not a splice trajectory"),
        (
            "unknown-field",
            format!(r#"{{"schema_version": 1, "trajectory": [{ok_state}], "extra": 1}}"#),
            "extra",
        ),
        (
            "unknown-state-field",
            r#"{"schema_version": 1, "trajectory": [{"iteration": 1, "change_hash": "a", "tokenz": 3}]}"#
                .into(),
            "trajectory[0]",
        ),
        (
            "confidence",
            r#"{"schema_version": 1, "trajectory": [{"iteration": 1, "change_hash": "a", "confidence": 1.5}]}"#
                .into(),
            "trajectory[0].confidence",
        ),
        (
            "negative",
            r#"{"schema_version": 1, "trajectory": [{"iteration": 1, "change_hash": "a", "tests": {"failed": -1}}]}"#
                .into(),
            "trajectory[0].tests.failed",
        ),
        (
            "empty",
            r#"{"schema_version": 1, "trajectory": []}"#.into(),
            "trajectory: must hold at least one iteration",
        ),
        (
            "order",
            format!(r#"{{"schema_version": 1, "trajectory": [{ok_state}, {ok_state}]}}"#),
            "trajectory[1].iteration",
        ),
        (
            "no-hash",
            r#"{"schema_version": 1, "trajectory": [{"iteration": 1}]}"#.into(),
            "trajectory[0].change_hash",
        ),
        (
            "version",
            format!(r#"{{"schema_version": 2, "trajectory": [{ok_state}]}}"#),
            "schema_version",
        ),
        (
            "zero-limit",
            format!(
                r#"{{"schema_version": 1, "settings": {{"max_iterations": 0}}, "trajectory": [{ok_state}]}}"#
            ),
            "settings.max_iterations",
        ),
    ];
    for (name, text, needle) in cases {
        let file = dir.path().join(format!("{name}.json"));
        std::fs::write(&file, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_splice"))
            .args(["monitor", "--trajectory"])
            .arg(&file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(out.stdout.is_empty(), "{name}");
        assert!(err.contains(&format!("{name}.json")), "{name}: {err}");
        assert!(err.contains(needle), "{name}: {err}");
    }
}
