//! A no-op write is no write: a verb whose after-images equal what it read answers as it would,
//! and appends no journal record (no sync) and rewrites no bead file.

mod common;

use common::Repo;

#[must_use]
fn set_autonomy(r: &Repo, id: &str, level: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "transition",
        "set-autonomy",
        "--bead",
        id,
        "--autonomy",
        level,
    ];
    args.extend_from_slice(extra);
    r.run(&args)
}

#[test]
fn setting_the_autonomy_already_set_answers_the_same_and_writes_nothing() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let first = set_autonomy(&r, &id, "wave", &["--json"]);
    assert_eq!(first.status.code(), Some(0));
    let journal = std::fs::read(r.state().join("journal.jsonl")).unwrap();
    let beads = r.beads_bytes();
    let seq = r.bead(&id)["pipeline"]["seq"].clone();

    let again = set_autonomy(&r, &id, "wave", &["--json"]);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(again.stdout, first.stdout, "it answers as it would");
    assert_eq!(
        std::fs::read(r.state().join("journal.jsonl")).unwrap(),
        journal,
        "no journal record"
    );
    assert_eq!(r.beads_bytes(), beads, "no bead file rewritten");
    assert_eq!(r.bead(&id)["pipeline"]["seq"], seq, "no seq bump");
    // The text answer too.
    let text = set_autonomy(&r, &id, "wave", &[]);
    assert_eq!(text.status.code(), Some(0));
    assert_eq!(r.beads_bytes(), beads);
}

#[test]
fn a_real_change_still_journals_and_bumps() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    assert_eq!(set_autonomy(&r, &id, "wave", &[]).status.code(), Some(0));
    let journal = r.journal();
    let seq = r.bead(&id)["pipeline"]["seq"].as_u64().unwrap();
    assert_eq!(set_autonomy(&r, &id, "deep", &[]).status.code(), Some(0));
    let added = &r.journal()[journal.len()..];
    assert!(added.contains("\"set-autonomy\""), "{added}");
    assert!(added.contains("\"commit\""), "{added}");
    assert_eq!(r.bead(&id)["pipeline"]["seq"], seq + 1);
    assert_eq!(r.bead(&id)["pipeline"]["autonomy"], "deep");
}

#[test]
fn a_no_op_with_a_stale_expected_seq_is_still_refused() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    assert_eq!(set_autonomy(&r, &id, "wave", &[]).status.code(), Some(0));
    let seq = r.bead(&id)["pipeline"]["seq"].as_u64().unwrap();
    let journal = r.journal();
    // The compare-and-swap comes before the plan: a stale caller is told so even when its
    // change would be a no-op.
    let stale = (seq - 1).to_string();
    let out = set_autonomy(&r, &id, "wave", &["--expect-seq", &stale]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("seq"));
    let current = seq.to_string();
    let out = set_autonomy(&r, &id, "wave", &["--expect-seq", &current]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(r.journal(), journal);
}
