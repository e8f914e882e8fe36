//! Real bd and br exports (`tests/fixtures/bd/`, where each comes from): every record imports,
//! `export bd` gives the file back byte for byte, and a second import writes nothing (issue 36,
//! `docs/bd-interop.md`). Then the forms bd writes that splice once refused: dependencies on
//! issues not in the file, `metadata` as a string, `null` lists, a byte-order mark, and text
//! that looks like a secret, which an import must not alter.

mod common;

use std::path::Path;

use common::Repo;
use serde_json::{Value, json};

fn fixtures() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bd");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    files.sort();
    assert!(files.len() >= 7, "the fixtures are there: {files:?}");
    files
}

fn export(r: &Repo) -> String {
    let out = r.run(&["export", "bd"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn import(r: &Repo, file: &str) -> Value {
    r.ok(&["import", "bd", file, "--json"])
}

#[test]
fn every_real_export_imports_whole_and_exports_byte_for_byte() {
    for (name, text) in fixtures() {
        let r = Repo::new();
        r.write("issues.jsonl", &text);
        let report = import(&r, "issues.jsonl");
        let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
        assert_eq!(report["problems"], json!([]), "{name}: {report:#}");
        assert_eq!(report["created"].as_array().unwrap().len(), lines, "{name}");
        assert_eq!(
            export(&r),
            text,
            "{name}: the export is the file, byte for byte"
        );

        let journal = r.journal();
        let beads = r.beads_bytes();
        let again = import(&r, "issues.jsonl");
        assert_eq!(again["unchanged"], lines, "{name}: {again:#}");
        assert_eq!(
            r.journal(),
            journal,
            "{name}: a second import appends nothing"
        );
        assert_eq!(r.beads_bytes(), beads, "{name}: and writes no bead");
    }
}

/// bd keeps a dependency on an issue it deleted or never exports (a wisp), and cross-project
/// `external:` references: so does splice. A `blocks` one on a missing bead blocks, and the
/// status says why; a `tracks` one never blocks.
#[test]
fn dependencies_on_issues_not_in_the_file_are_kept_and_only_blocks_ones_block() {
    let (_, text) = fixtures()
        .into_iter()
        .find(|(n, _)| n == "beads-dolt-dangling.jsonl")
        .unwrap();
    let r = Repo::new();
    r.write("issues.jsonl", &text);
    let report = import(&r, "issues.jsonl");
    let dangling = report["dangling"].as_array().unwrap();
    let named = |id: &str, on: &str| {
        dangling
            .iter()
            .any(|d| d["id"] == id && d["depends_on"] == on)
    };
    assert!(
        named("hq-cv-ivmue", "external:gastown:gt-nek89"),
        "{report:#}"
    );
    assert!(named("bd-wisp-5xon7z", "bd-wisp-7k9ztg"), "{report:#}");
    assert!(
        dangling
            .iter()
            .all(|d| d["note"] == "neither in the file nor in the store"),
        "{report:#}"
    );
    let human = String::from_utf8(r.run(&["import", "bd", "issues.jsonl"]).stdout).unwrap();
    assert!(
        human.contains("kept its tracks dependency on \"external:gastown:gt-nek89\""),
        "{human}"
    );
    let bead = r.bead("hq-cv-ivmue");
    assert_eq!(
        bead["dependencies"][0]["depends_on_id"],
        "external:gastown:gt-nek89"
    );

    r.ok(&["start", "hq-cv-ivmue", "--tier", "light"]);
    r.ok(&["start", "bd-wisp-5xon7z", "--tier", "light"]);
    let status = r.ok(&["status", "--json"]);
    let node = |id: &str| {
        status["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} in {status:#}"))
    };
    let blocked = node("bd-wisp-5xon7z");
    assert_eq!(blocked["rest"]["kind"], "blocked", "{blocked:#}");
    let reason = blocked["reason"].as_str().unwrap();
    assert!(
        reason.contains("blocked by bd-wisp-7k9ztg") && reason.contains("not in the store"),
        "{reason}"
    );
    assert_ne!(node("hq-cv-ivmue")["rest"]["kind"], "blocked", "{status:#}");
    let dry = r.ok(&["pass", "--dry-run"]);
    let acts: Vec<&str> = dry["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["bead"].as_str())
        .collect();
    assert_eq!(acts, ["hq-cv-ivmue"], "{dry:#}");
}

/// A real record in the forms bd and br also write: a byte-order mark before line 1,
/// `"labels":null`, `metadata` as a JSON string, and a description holding what looks like a
/// token. Each reads as bd reads it; nothing is altered, on import or on a later transition.
#[test]
fn bd_s_other_forms_are_read_as_bd_reads_them_and_text_is_never_altered() {
    let token = "ghp_0123456789abcdefghijABCDEFGHIJ0123456789";
    let first = format!(
        r#"{{"id":"fx-1","title":"Rotate the key","description":"old one was {token}","status":"open","priority":1,"issue_type":"task","labels":null,"metadata":"{{\"k\":[1,2]}}","created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}}"#
    );
    let second = r#"{"id":"fx-2","title":"Second","status":"open","priority":2,"issue_type":"bug","dependencies":null,"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}"#;
    let body = format!("{first}\n{second}\n");
    let r = Repo::new();
    r.write("issues.jsonl", &format!("\u{feff}{body}"));
    let report = import(&r, "issues.jsonl");
    assert_eq!(report["problems"], json!([]), "{report:#}");
    let bead = r.bead("fx-1");
    assert_eq!(
        bead["description"],
        format!("old one was {token}"),
        "not redacted"
    );
    assert_eq!(bead["metadata"], json!({"k": [1, 2]}));
    assert_eq!(bead["labels"], json!([]));
    assert_eq!(export(&r), body, "the same lines (without the mark)");
    let journal = r.journal();
    assert!(journal.contains(token), "the journal keeps bd's text too");
    let again = import(&r, "issues.jsonl");
    assert_eq!(again["unchanged"], 2, "{again:#}");
    assert_eq!(r.journal(), journal);

    // A change splice makes: the record is written as bd would write it, its forms kept.
    r.ok(&["close", "fx-1", "--reason", "rotated"]);
    assert_eq!(
        r.bead("fx-1")["description"],
        format!("old one was {token}")
    );
    let line = export(&r).lines().next().unwrap().to_string();
    let back: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(back["status"], "closed");
    assert_eq!(back["close_reason"], "rotated");
    assert_eq!(back["labels"], Value::Null, "{line}");
    assert_eq!(back["metadata"], "{\"k\":[1,2]}", "{line}");
    let keys: Vec<&str> = back
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "id",
            "title",
            "description",
            "status",
            "priority",
            "issue_type",
            "labels",
            "metadata",
            "created_at",
            "updated_at",
            "closed_at",
            "close_reason"
        ],
        "the record's order, the close fields where bd puts them"
    );
}
