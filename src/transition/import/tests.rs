//! The import plan on hand-made files, without a file system.

use super::*;
use crate::model::Status;

const AT: &str = "2026-01-01T00:00:00Z";

fn store(beads: Vec<Bead>) -> Scan {
    Scan {
        beads,
        unreadable: Vec::new(),
    }
}

fn run(text: &str, scan: &Scan) -> Change<Report> {
    plan("issues.jsonl", text, scan, false).unwrap()
}

#[test]
fn every_problem_is_reported_with_its_line_and_the_good_records_are_taken() {
    let text = r#"{"id":"bd-1","title":"one"}

{"id":"bd-2","title":"two","dependencies":[{"issue_id":"bd-2","depends_on_id":"bd-9","type":"blocks"}]}
{"id":"bd-1","title":"again"}
not json
{"id":"bd-3","title":"three","parent":"bd-4"}
{"id":"bd-4","title":"four","parent":"bd-3"}
{"id":"bd-5","title":"five","dependencies":[{"depends_on_id":"bd-2","type":"related"}]}
{"id":"BD-1","title":"case"}
{"id":"../x","title":"escape"}
{"id":"bd-6","title":"six","parent":"bd-1","status":"tombstone"}
"#;
    let c = run(text, &store(vec![]));
    let r = &c.output;
    assert_eq!(r.records, 10);
    assert_eq!(r.created, ["bd-1", "bd-2", "bd-5", "bd-6"]);
    let lines: Vec<(usize, &str)> = r
        .problems
        .iter()
        .map(|p| (p.line, p.problem.as_str()))
        .collect();
    assert_eq!(lines.len(), 6, "{lines:#?}");
    let at = |n: usize| lines.iter().find(|(l, _)| *l == n).unwrap().1;
    // A dependency on an issue not in the file is kept, as bd keeps it, and listed.
    let dangling: Vec<(usize, &str, &str, &str)> = r
        .dangling
        .iter()
        .map(|d| {
            (
                d.line,
                d.id.as_str(),
                d.depends_on.as_str(),
                d.dep_type.as_str(),
            )
        })
        .collect();
    assert_eq!(dangling, [(3, "bd-2", "bd-9", "blocks")]);
    assert!(
        r.dangling[0]
            .note
            .contains("neither in the file nor in the store")
    );
    assert!(at(4).contains("first on line 1"));
    assert!(at(5).starts_with("not JSON"));
    assert!(
        at(6).contains("parent cycle: bd-3 → bd-4 → bd-3"),
        "{}",
        at(6)
    );
    assert!(at(7).contains("parent cycle: bd-4 → bd-3 → bd-4"));
    assert!(at(9).contains("only by case"));
    assert!(at(10).contains("not a bead id"));
    assert_eq!(c.beads.len(), 4);
    assert_eq!(c.beads[3].status, Status::Tombstone);
    assert_eq!(c.beads[1].dependencies[0].depends_on_id, "bd-9");
    assert!(c.beads.iter().all(|b| !b.is_node() && b.pipeline.seq == 0));

    let strict = plan("issues.jsonl", text, &store(vec![]), true).unwrap_err();
    assert!(strict.to_string().contains("6 record(s)"), "{strict}");
}

#[test]
fn a_second_import_of_the_same_file_changes_nothing() {
    let text = r#"{"id":"bd-1","title":"one","notes":"n","updated_at":"2025-01-01T00:00:00Z"}"#;
    let first = run(text, &store(vec![]));
    let mut beads = first.beads;
    // As the shell commits them.
    for b in &mut beads {
        b.bump(AT);
    }
    let again = run(text, &store(beads.clone()));
    assert!(again.beads.is_empty());
    assert_eq!(again.output.unchanged, 1);

    let changed = run(&text.replace("\"n\"", "\"m\""), &store(beads));
    assert_eq!(changed.output.updated, ["bd-1"]);
    assert_eq!(changed.beads[0].extra["notes"], "m");
    assert_eq!(changed.beads[0].pipeline.seq, 1);
}

#[test]
fn a_started_bead_keeps_its_pipeline_status_and_parent_and_takes_bds_fields() {
    let mut node = Bead::new("bd-1".into(), "old".into(), String::new(), AT);
    node.pipeline.route = "leaf".into();
    node.pipeline.step = "implement".into();
    node.pipeline.seq = 7;
    node.status = Status::InProgress;
    let text = r#"{"id":"bd-1","title":"new title","status":"closed","priority":0,"labels":["x"]}"#;
    let c = run(text, &store(vec![node]));
    assert_eq!(c.output.merged.len(), 1);
    assert!(c.output.merged[0].note.contains("at implement"));
    let b = &c.beads[0];
    assert_eq!((b.title.as_str(), b.priority), ("new title", 0));
    assert_eq!(b.labels, ["x"]);
    assert_eq!(b.status, Status::InProgress);
    assert_eq!((b.pipeline.step.as_str(), b.pipeline.seq), ("implement", 7));
}

#[test]
fn a_record_cannot_set_pipeline_state() {
    let text = r#"{"id":"bd-1","title":"t","pipeline":{"seq":3,"route":"leaf","step":"deliver","lease":{"holder":"x","since":"y"}}}"#;
    let c = run(text, &store(vec![]));
    assert!(!c.beads[0].is_node());
    assert!(c.beads[0].pipeline.lease.is_none());
    assert_eq!(c.output.ignored.len(), 1);
}

#[test]
fn parent_cycles_are_found_in_linear_time_through_the_store_too() {
    let mut a = Bead::new("bd-a".into(), "a".into(), String::new(), AT);
    a.parent = Some("bd-b".into());
    let text = r#"{"id":"bd-b","title":"b","parent":"bd-a"}
{"id":"bd-c","title":"c","parent":"bd-b"}"#;
    let c = run(text, &store(vec![a]));
    assert_eq!(c.output.problems.len(), 1, "{:#?}", c.output.problems);
    assert!(c.output.problems[0].problem.contains("bd-b → bd-a → bd-b"));
    // Its child is taken, its parent named as written and listed: the record that gives it
    // was not imported.
    assert_eq!(c.output.created, ["bd-c"]);
    assert_eq!(c.output.dangling[0].depends_on, "bd-b");
    assert_eq!(
        c.output.dangling[0].note,
        "its record (line 1) was not imported"
    );
}
