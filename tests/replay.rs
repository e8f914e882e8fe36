//! Replay the golden corpus in `snapshots/`: through the built binary (`--expect`) and the library.

use std::path::{Path, PathBuf};
use std::process::Command;

use splice::decide::decide;
use splice::model::Snapshot;

fn corpus() -> Vec<(String, PathBuf, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .expect("snapshots/ exists")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".json") && !name.ends_with(".expected.json")
        })
        .map(|p| {
            let name = p
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("")
                .to_string();
            let expected = dir.join(format!("{name}.expected.json"));
            (name, p, expected)
        })
        .collect();
    cases.sort();
    cases
}

fn case(name: &str) -> (PathBuf, PathBuf) {
    let (_, snap, expected) = corpus().into_iter().find(|c| c.0 == name).unwrap();
    (snap, expected)
}

#[test]
fn corpus_is_large_enough_and_indexed() {
    let cases = corpus();
    assert!(cases.len() >= 30, "only {} cases", cases.len());
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots/README.md"))
            .expect("snapshots/README.md");
    for (name, _, expected) in &cases {
        assert!(expected.is_file(), "{name}: no {name}.expected.json");
        assert!(
            readme.contains(&format!("`{name}`")),
            "{name}: not described in README.md"
        );
    }
}

#[test]
fn corpus_replays_through_the_library() {
    for (name, snap, expected) in corpus() {
        let text = std::fs::read_to_string(&snap).unwrap();
        let snapshot: Snapshot =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let actual = decide(&snapshot).to_pretty_json();
        let want = std::fs::read_to_string(&expected).unwrap();
        assert_eq!(
            actual, want,
            "{name}: decision differs from {name}.expected.json"
        );
    }
}

#[test]
fn corpus_replays_through_the_binary() {
    for (name, snap, expected) in corpus() {
        let out = Command::new(env!("CARGO_BIN_EXE_splice"))
            .args(["decide", "--snapshot"])
            .arg(&snap)
            .arg("--expect")
            .arg(&expected)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn decide_prints_the_expected_bytes_every_time() {
    let (snap, expected) = case("campaign-mixed");
    let want = std::fs::read(&expected).unwrap();
    for _ in 0..3 {
        let out = Command::new(env!("CARGO_BIN_EXE_splice"))
            .args(["decide", "--snapshot"])
            .arg(&snap)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(out.stdout, want);
    }
}

#[test]
fn decide_reads_stdin() {
    use std::io::Write;
    let (snap, expected) = case("jobs-queued");
    let mut child = Command::new(env!("CARGO_BIN_EXE_splice"))
        .args(["decide", "--snapshot", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&std::fs::read(&snap).unwrap())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, std::fs::read(&expected).unwrap());
}

#[test]
fn expect_mismatch_exits_1_with_a_line_diff() {
    let tmp = tempfile::tempdir().unwrap();
    let (snap, expected) = case("dispatch-fresh");
    let wrong = tmp.path().join("wrong.json");
    let text = std::fs::read_to_string(&expected)
        .unwrap()
        .replace("\"attempt\": 1", "\"attempt\": 2");
    std::fs::write(&wrong, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_splice"))
        .args(["decide", "--snapshot"])
        .arg(&snap)
        .arg("--expect")
        .arg(&wrong)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"attempt\": 2"), "{err}");
    assert!(err.contains("\"attempt\": 1"), "{err}");
    assert!(err.lines().any(|l| l.starts_with('-')) && err.lines().any(|l| l.starts_with('+')));
}

#[test]
fn bad_snapshot_exits_2_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, body) in [("bad.json", "{ not json"), ("wrong.json", "{\"beads\": 3}")] {
        let path = tmp.path().join(name);
        std::fs::write(&path, body).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_splice"))
            .args(["decide", "--snapshot"])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(name), "{err}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_splice"))
        .args(["decide", "--snapshot"])
        .arg(tmp.path().join("missing.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("missing.json") && err.contains("No such file"),
        "{err}"
    );
}
