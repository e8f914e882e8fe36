//! The sync plan on hand-made files and stores, without a file system.

use super::*;

const AT: &str = "2026-01-01T00:00:00Z";

fn scan(beads: Vec<Bead>) -> Scan {
    Scan {
        beads,
        unreadable: Vec::new(),
    }
}

/// `text` imported, as the writer leaves the beads (seq 1, the import's).
fn imported(text: &str) -> Vec<Bead> {
    let change = import::plan("f", text, &scan(vec![]), false).unwrap();
    change
        .beads
        .into_iter()
        .map(|mut b| {
            b.pipeline.seq = 1;
            b
        })
        .collect()
}

fn run(text: &str, base: Option<Base>, beads: Vec<Bead>, take: Option<Take>) -> Change<Synced> {
    let input = Input {
        file: "f",
        text,
        base_file: "base",
        base,
        take,
    };
    plan(&input, &scan(beads)).unwrap()
}

#[test]
fn the_base_reads_back_what_it_wrote_and_refuses_what_it_did_not() {
    let mut issues = BTreeMap::new();
    let mut fields = Map::new();
    fields.insert("title".into(), Value::String("T <b>".into()));
    issues.insert(
        "bd-1".to_string(),
        Known {
            fields,
            unsettled: ["priority".to_string()].into(),
        },
    );
    let base = Base {
        file: ".beads/issues.jsonl".into(),
        issues,
    };
    let text = base.render();
    assert_eq!(Base::parse(&text, Path::new("b")).unwrap(), base);
    let err = |t: &str| Base::parse(t, Path::new("b")).unwrap_err().to_string();
    assert!(err("[]").contains("line 1: not the head"), "{}", err("[]"));
    let head = r#"{"splice_sync_base":1,"file":"f"}"#;
    let e = err(&format!("{head}\n{{\"id\":\"a/b\",\"fields\":{{}}}}"));
    assert!(e.contains("line 2: ") && e.contains("not a bead id"), "{e}");
    let e = err(r#"{"splice_sync_base":9,"file":"f"}"#);
    assert!(e.contains("version 9"), "{e}");
    let twice =
        format!("{head}\n{{\"id\":\"a\",\"fields\":{{}}}}\n{{\"id\":\"a\",\"fields\":{{}}}}");
    assert!(err(&twice).contains("line 3: a again"));
}

/// With no base, a bead splice made and a record bd wrote under the same id differ: a conflict
/// whose field stays unsettled in the base until the two agree.
#[test]
fn a_first_difference_with_no_base_stays_a_conflict_until_the_sides_agree() {
    let bead = Bead::new("bd-1".into(), "Ours".into(), String::new(), AT);
    let text = "{\"id\":\"bd-1\",\"title\":\"Theirs\",\"created_at\":\"2026-01-01T00:00:00Z\"}\n";
    let c = run(text, None, vec![bead.clone()], None);
    let r = &c.output.report;
    let fields: Vec<&str> = r
        .conflicts
        .iter()
        .filter_map(|c| c.field.as_deref())
        .collect();
    assert!(fields.contains(&"title"), "{:?}", r.conflicts);
    assert!(c.beads.is_empty(), "nothing taken");
    assert_eq!(c.output.text, text, "nothing given");
    let base = c.output.base;
    assert!(base.issues["bd-1"].unsettled.contains("title"));
    // The sides agree: settled, and the base learns the value.
    let text = text.replace("Theirs", "Ours");
    let c = run(&text, Some(base), vec![bead], None);
    assert!(
        !c.output
            .report
            .conflicts
            .iter()
            .any(|c| c.field.as_deref() == Some("title"))
    );
    assert_eq!(c.output.base.issues["bd-1"].fields["title"], "Ours");
}

/// A file written with CRLF and a byte-order mark keeps both when a line changes; the other
/// lines stay as they were.
#[test]
fn a_changed_line_keeps_the_files_line_ends_and_byte_order_mark() {
    let one = r#"{"id":"a-1","title":"One","updated_at":"2025-01-01T00:00:00Z"}"#;
    let two = r#"{"id":"a-2","title":"Two","updated_at":"2025-01-01T00:00:00Z"}"#;
    let text = format!("\u{feff}{one}\r\n{two}\r\n");
    let mut beads = imported(&text);
    beads[1].title = "Deux".into();
    beads[1].pipeline.seq = 2;
    let c = run(&text, None, beads, None);
    let out = &c.output.text;
    let body = out.strip_prefix('\u{feff}').expect("the mark kept");
    let lines: Vec<&str> = body.split_terminator("\r\n").collect();
    assert_eq!(lines.len(), 2, "{out:?}");
    assert!(!body.replace("\r\n", "").contains('\n'), "{out:?}");
    assert_eq!(lines[0], one, "the other line as it was");
    let changed: Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(changed["title"], "Deux");
    // splice changed it since the import, and bd did not (the record's `updated_at` is the one
    // the import read): no conflict although there is no base yet.
    assert!(
        c.output.report.conflicts.is_empty(),
        "{:?}",
        c.output.report
    );
    assert_eq!(c.output.report.to_bd[0].fields, ["title"]);
}

/// A bd change that would put a bead under its own child is refused whole.
#[test]
fn a_parent_cycle_from_the_file_refuses_the_sync() {
    let text = "{\"id\":\"a-1\",\"title\":\"One\"}\n{\"id\":\"a-2\",\"title\":\"Two\",\"parent\":\"a-1\"}\n";
    let beads = imported(text);
    let looped = text.replace(
        "{\"id\":\"a-1\",\"title\":\"One\"}",
        "{\"id\":\"a-1\",\"title\":\"One\",\"parent\":\"a-2\"}",
    );
    let input = Input {
        file: "f",
        text: &looped,
        base_file: "base",
        base: None,
        take: None,
    };
    let err = plan(&input, &scan(beads)).unwrap_err().to_string();
    assert!(err.contains("parents make a cycle"), "{err}");
}
