//! Crash safety: the writer aborted at each failpoint leaves a transition that is either fully
//! visible after the next writing verb's recovery or not at all, and every transition that exited
//! 0 before it is intact.

mod common;

use common::Repo;
use serde_json::Value;

const FAILPOINTS: [&str; 3] = ["after-journal", "after-tmp", "after-rename"];

/// Build some acknowledged history, then crash a split of `n` children (a multi-bead
/// transition: up to 64 beads sync each file, more make them durable in one flush).
fn crash_split(r: &Repo, failpoint: &str, n: usize) -> (String, Vec<(String, Vec<u8>)>) {
    let root = r.init(&["--scenarios", "S1,S2"]);
    // The root splits at to-issues.
    r.ok(&[
        "transition",
        "route",
        "--bead",
        &root,
        "--to",
        "root",
        "--at",
        "to-issues",
    ]);
    let other = r.task("bystander", &[]);
    r.ok(&["transition", "claim", "--bead", &other, "--holder", "h"]);
    r.ok(&["transition", "release", "--bead", &other, "--holder", "h"]);
    let acknowledged = r.beads_bytes();
    let children: Vec<Value> = (0..n)
        .map(|i| {
            let scenario = ["S1", "S2"][i % 2];
            serde_json::json!({"title": format!("child {i}"), "scenarios": [scenario]})
        })
        .collect();
    r.write("children.json", &Value::Array(children).to_string());
    let out = r
        .cmd(&[
            "transition",
            "split",
            "--bead",
            &root,
            "--children",
            "children.json",
        ])
        .env("SPLICE_FAILPOINT", failpoint)
        .output()
        .unwrap();
    assert_ne!(
        out.status.code(),
        Some(0),
        "{failpoint}: the writer must have aborted"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(failpoint));
    (root, acknowledged)
}

#[test]
fn an_aborted_transition_is_rolled_forward_whole_by_the_next_writer() {
    for fp in FAILPOINTS {
        rolled_forward_whole(fp, 2);
    }
}

#[test]
fn an_aborted_split_of_a_thousand_children_made_durable_in_one_flush_is_rolled_forward_whole() {
    for fp in FAILPOINTS {
        rolled_forward_whole(fp, 1000);
    }
}

/// Crash a split of `n` children at `fp`; the next writer rolls it forward whole.
fn rolled_forward_whole(fp: &str, n: usize) {
    let r = Repo::new();
    let (root, acknowledged) = crash_split(&r, fp, n);
    if fp == "after-tmp" {
        // Every temp file was written (and made durable) before the abort; none renamed.
        let tmp = std::fs::read_dir(r.state().join("beads"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .count();
        assert_eq!(tmp, n + 1, "the children's and the parent's temp files");
    }
    // A read-only verb neither recovers nor locks.
    r.ok(&["transition", "show", "--bead", &root]);
    // The next writing verb recovers first.
    let out = r.run(&["transition", "claim", "--bead", &root, "--holder", "next"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{fp}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("rolled forward"),
        "{fp}"
    );
    // The journal record was durable, so the split is fully visible: parent and every child,
    // each file a whole bead at seq 1.
    let parent = r.bead(&root);
    let listed = parent["pipeline"]["split"]["children"].as_array().unwrap();
    assert_eq!(listed.len(), n, "{fp}");
    for i in 1..=n {
        let child = r.bead(&format!("{root}.{i}"));
        assert_eq!(child["parent"], root.as_str(), "{fp}: child {i}");
        assert_eq!(
            child["title"],
            format!("child {}", i - 1),
            "{fp}: child {i}"
        );
        assert_eq!(child["pipeline"]["seq"], 1, "{fp}: child {i}");
        assert_eq!(listed[i - 1], format!("{root}.{i}").as_str(), "{fp}");
    }
    assert_eq!(
        parent["pipeline"]["lease"]["holder"], "next",
        "{fp}: the new verb ran after recovery"
    );
    // Nothing acknowledged was lost.
    for (name, bytes) in &acknowledged {
        if !name.starts_with(&root) {
            assert_eq!(
                &std::fs::read(r.state().join("beads").join(name)).unwrap(),
                bytes,
                "{fp}: {name}"
            );
        }
    }
    // No temp file is left, and every record is committed.
    let leftovers: Vec<String> = std::fs::read_dir(r.state().join("beads"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{fp}: {leftovers:?}");
    assert_committed(&r);
}

#[test]
fn a_torn_last_journal_line_is_truncated_and_reported() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    r.ok(&["transition", "claim", "--bead", &id, "--holder", "a"]);
    let acknowledged = r.beads_bytes();
    let journal = r.state().join("journal.jsonl");
    let mut text = std::fs::read(&journal).unwrap();
    text.extend_from_slice(br#"{"tx": 99999, "verb": "claim", "beads": [{"id": "#);
    std::fs::write(&journal, &text).unwrap();
    let out = r.run(&["transition", "release", "--bead", &id, "--holder", "a"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("torn"));
    assert_committed(&r);
    assert_ne!(r.beads_bytes(), acknowledged, "the release itself landed");
    assert!(r.bead(&id)["pipeline"]["lease"].is_null());
}

/// Only the last line can be torn by a crash (each append is made durable before the next): a
/// line before it that does not parse was written by something else (junk appended, a merge's
/// conflict markers), and recovery refuses it, naming its byte, instead of cutting line after line.
#[test]
fn lines_that_do_not_parse_before_the_last_are_refused_not_cut() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let journal = r.state().join("journal.jsonl");
    let committed = std::fs::read(&journal).unwrap();
    // The junk, and where the line before its last starts within it (the line refused).
    for (junk, before_last) in [
        (&b"x\ny\nz\n"[..], 2),
        (b"<<<<<<< HEAD\n{\"torn", 0),
        (b"junk\n\n", 0),
    ] {
        let mut text = committed.clone();
        text.extend_from_slice(junk);
        std::fs::write(&journal, &text).unwrap();
        let beads = r.beads_bytes();
        let err = r.fails(2, &["transition", "claim", "--bead", &id, "--holder", "a"]);
        assert!(
            err.contains("journal.jsonl")
                && err.contains(&format!("byte {}", committed.len() + before_last)),
            "{err}"
        );
        assert_eq!(std::fs::read(&journal).unwrap(), text, "nothing cut");
        assert_eq!(r.beads_bytes(), beads, "nothing written");
    }
    // Put back as it was, the next write goes on.
    std::fs::write(&journal, &committed).unwrap();
    r.ok(&["transition", "claim", "--bead", &id, "--holder", "a"]);
    assert_committed(&r);
}

#[test]
fn a_committed_record_is_never_replayed_over_later_edits() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    r.ok(&["transition", "claim", "--bead", &id, "--holder", "a"]);
    r.ok(&["transition", "release", "--bead", &id, "--holder", "a"]);
    r.ok(&[
        "transition",
        "set-autonomy",
        "--bead",
        &id,
        "--autonomy",
        "wave",
    ]);
    // Lose the claim's commit marker (line 4: init-task, marker, claim, marker, …). Recovery
    // looks only at the journal's end, so that older record must not come back over later edits.
    let path = r.state().join("journal.jsonl");
    let lines: Vec<String> = r.journal().lines().map(str::to_string).collect();
    assert!(lines[3].contains("\"commit\""), "{}", lines[3]);
    let kept: Vec<&String> = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3)
        .map(|(_, l)| l)
        .collect();
    let text: String = kept.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    // Had the claim by `a` been replayed, this claim by `b` would be refused.
    r.ok(&["transition", "claim", "--bead", &id, "--holder", "b"]);
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["lease"]["holder"], "b");
    assert_eq!(b["pipeline"]["autonomy"], "wave");
    assert_eq!(b["pipeline"]["seq"], 5);
}

fn assert_committed(r: &Repo) {
    let lines: Vec<Value> = r
        .journal()
        .lines()
        .map(|l| serde_json::from_str(l).expect("journal line parses"))
        .collect();
    let mut open: Option<u64> = None;
    for v in &lines {
        if let Some(tx) = v.get("tx") {
            assert!(
                open.is_none(),
                "a record without a marker before another record"
            );
            open = tx.as_u64();
        } else {
            assert_eq!(
                v["commit"].as_u64(),
                open.take(),
                "marker matches its record"
            );
        }
    }
    assert!(open.is_none(), "the last record is committed");
}
