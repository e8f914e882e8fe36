//! Issue 36 item 5: `splice sync bd` keeps a bd export and the store in step both ways, with
//! the last synced state as the base and conflicts reported, never resolved silently. Against
//! the built binary, in temporary git repositories, at a fixed clock, on a real bd export
//! (`tests/fixtures/bd/organice.jsonl`).

mod common;

use common::Repo;
use serde_json::Value;

const FIXTURE: &str = include_str!("fixtures/bd/organice.jsonl");
const FILE: &str = ".beads/issues.jsonl";

/// A repository whose bd file is the fixture, imported into the store.
fn imported() -> Repo {
    let r = Repo::new();
    r.write(FILE, FIXTURE);
    let out = r.run(&["import", "bd", FILE]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    r
}

fn bd_file(r: &Repo) -> String {
    std::fs::read_to_string(r.path().join(FILE)).unwrap()
}

fn base(r: &Repo) -> String {
    std::fs::read_to_string(r.state().join("sync/bd.jsonl")).unwrap()
}

/// `splice sync bd --json` with `extra`, exiting `code`: the report.
fn sync(r: &Repo, code: i32, extra: &[&str]) -> Value {
    let mut args = vec!["sync", "bd", "--json"];
    args.extend_from_slice(extra);
    let out = r.run(&args);
    common::no_panic(&out);
    assert_eq!(
        out.status.code(),
        Some(code),
        "sync {extra:?}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the report is JSON")
}

/// The file's line for `id`.
fn line_of(text: &str, id: &str) -> String {
    let key = format!("\"id\":\"{id}\"");
    text.lines()
        .find(|l| l.contains(&key))
        .unwrap_or_else(|| panic!("no line for {id}"))
        .to_string()
}

/// The file with `id`'s line edited by `edit` (as bd would rewrite one line).
fn edit_line(r: &Repo, id: &str, edit: impl Fn(&str) -> String) {
    let text = bd_file(r);
    let old = line_of(&text, id);
    let new = edit(&old);
    assert_ne!(old, new, "the edit changes the line");
    r.write(FILE, &text.replace(&old, &new));
}

fn moved(report: &Value, side: &str) -> Vec<(String, String, Vec<String>)> {
    report[side]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let fields = m["fields"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap().to_string())
                .collect();
            (
                m["id"].as_str().unwrap().to_string(),
                m["change"].as_str().unwrap().to_string(),
                fields,
            )
        })
        .collect()
}

fn snapshot(r: &Repo) -> (Vec<(String, Vec<u8>)>, String, String, String) {
    (r.beads_bytes(), r.journal(), bd_file(r), base(r))
}

#[test]
fn each_side_gets_what_the_other_changed_and_a_second_sync_writes_nothing() {
    let r = imported();
    // The first sync right after the import: in step, the file untouched, the base recorded.
    let first = sync(&r, 0, &[]);
    assert_eq!(first["records"], 23, "{first}");
    assert_eq!(first["unchanged"], 23, "{first}");
    assert_eq!(
        bd_file(&r),
        FIXTURE,
        "the file is byte for byte as bd wrote it"
    );
    assert!(base(&r).lines().count() == 24, "a head and a line an issue");

    // splice changes one issue, bd another.
    r.ok(&[
        "update",
        "organice-6ic",
        "--title",
        "Research <faces> & colors",
    ]);
    edit_line(&r, "organice-b5e", |l| {
        l.replace("\"priority\":1", "\"priority\":0")
    });
    let report = sync(&r, 0, &[]);
    assert_eq!(
        moved(&report, "to_splice"),
        [(
            "organice-b5e".to_string(),
            "updated".to_string(),
            vec!["priority".to_string()]
        )],
        "{report}"
    );
    assert_eq!(
        moved(&report, "to_bd"),
        [(
            "organice-6ic".to_string(),
            "updated".to_string(),
            vec!["title".to_string()]
        )],
        "{report}"
    );
    assert_eq!(r.bead("organice-b5e")["priority"], 0);
    let text = bd_file(&r);
    let changed = line_of(&text, "organice-6ic");
    let record: Value = serde_json::from_str(&changed).unwrap();
    assert_eq!(record["title"], "Research <faces> & colors");
    // Every other line is the line bd wrote; the changed one keeps its keys' order.
    let edited = FIXTURE.replace(
        &line_of(FIXTURE, "organice-b5e"),
        &line_of(FIXTURE, "organice-b5e").replace("\"priority\":1", "\"priority\":0"),
    );
    for (was, now) in edited.lines().zip(text.lines()) {
        if !was.contains("organice-6ic\",\"title") {
            assert_eq!(was, now);
        }
    }
    let keys = |l: &str| {
        let v: serde_json::Map<String, Value> = serde_json::from_str(l).unwrap();
        v.keys().cloned().collect::<Vec<_>>()
    };
    assert_eq!(
        keys(&changed)[..4],
        keys(&line_of(FIXTURE, "organice-6ic"))[..4]
    );

    // In step: nothing is written, on either side or in the base.
    let before = snapshot(&r);
    let again = sync(&r, 0, &[]);
    assert_eq!(again["unchanged"], 23, "{again}");
    assert!(snapshot(&r) == before, "a second sync writes nothing");
    // And `export bd` gives the synced file back.
    let out = r.run(&["export", "bd"]);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), bd_file(&r));
}

#[test]
fn a_field_both_sides_changed_is_a_conflict_left_as_each_side_has_it_until_settled() {
    let r = imported();
    sync(&r, 0, &[]);
    r.ok(&["update", "organice-6ic", "--title", "Splice's title"]);
    edit_line(&r, "organice-6ic", |l| {
        l.replace(
            "\"title\":\"Research correct Emacs",
            "\"title\":\"bd's: Research correct Emacs",
        )
    });
    let bd_before = bd_file(&r);
    let report = sync(&r, 3, &[]);
    let conflicts = report["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{report}");
    let c = &conflicts[0];
    assert_eq!(c["id"], "organice-6ic");
    assert_eq!(c["field"], "title");
    assert_eq!(c["splice"], "Splice's title");
    assert!(c["bd"].as_str().unwrap().starts_with("bd's: "), "{c}");
    assert!(
        c["base"].as_str().unwrap().starts_with("Research correct"),
        "{c}"
    );
    assert_eq!(c["taken"], Value::Null);
    assert_eq!(bd_file(&r), bd_before, "bd's side is left as it is");
    assert_eq!(r.bead("organice-6ic")["title"], "Splice's title");
    // Reported again, not settled by having been reported.
    let before = snapshot(&r);
    sync(&r, 3, &[]);
    assert!(snapshot(&r) == before, "nothing written while it stands");
    // The words say what to do.
    let out = r.run(&["sync", "bd"]);
    let words = String::from_utf8_lossy(&out.stdout);
    assert!(words.contains("conflict organice-6ic title"), "{words}");
    assert!(words.contains("--take bd|splice"), "{words}");
    // `--take bd` settles it for bd's value, and then the two are in step.
    let settled = sync(&r, 0, &["--take", "bd"]);
    assert_eq!(settled["conflicts"][0]["taken"], "bd", "{settled}");
    assert!(
        r.bead("organice-6ic")["title"]
            .as_str()
            .unwrap()
            .starts_with("bd's: ")
    );
    let before = snapshot(&r);
    sync(&r, 0, &[]);
    assert!(snapshot(&r) == before, "nothing written");
}

#[test]
fn sides_that_agree_settle_a_conflict_and_take_splice_writes_splices_value() {
    let r = imported();
    sync(&r, 0, &[]);
    r.ok(&["update", "organice-b5e", "-p", "3"]);
    edit_line(&r, "organice-b5e", |l| {
        l.replace("\"priority\":1", "\"priority\":4")
    });
    sync(&r, 3, &[]);
    // `--dry-run` says what `--take splice` would do and writes nothing.
    let before = snapshot(&r);
    let dry = sync(&r, 0, &["--take", "splice", "--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["conflicts"][0]["taken"], "splice", "{dry}");
    assert!(snapshot(&r) == before, "a dry run writes nothing");
    sync(&r, 0, &["--take", "splice"]);
    let record: Value = serde_json::from_str(&line_of(&bd_file(&r), "organice-b5e")).unwrap();
    assert_eq!(record["priority"], 3);
    // A conflict on another field, settled by making the sides agree.
    r.ok(&["update", "organice-b5e", "-p", "1"]);
    edit_line(&r, "organice-b5e", |l| {
        l.replace("\"priority\":3", "\"priority\":1")
    });
    let agreed = sync(&r, 0, &[]);
    assert!(
        agreed["conflicts"].as_array().unwrap().is_empty(),
        "{agreed}"
    );
}

#[test]
fn new_issues_go_to_the_other_side_and_a_removed_one_is_a_conflict_not_a_deletion() {
    let r = imported();
    sync(&r, 0, &[]);
    // A bead made in splice is appended to the file; a line bd added becomes a bead.
    let out = r.run(&["create", "Made in splice", "-p", "P1"]);
    let made = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let mut text = bd_file(&r);
    text.push_str(
        r#"{"id":"organice-new","title":"Made in bd","status":"open","priority":2,"issue_type":"bug","created_at":"2026-01-02T00:00:00Z","updated_at":"2026-01-02T00:00:00Z"}"#,
    );
    text.push('\n');
    r.write(FILE, &text);
    let report = sync(&r, 0, &[]);
    assert_eq!(
        moved(&report, "to_splice"),
        [("organice-new".to_string(), "created".to_string(), vec![])]
    );
    assert_eq!(
        moved(&report, "to_bd"),
        [(made.clone(), "added".to_string(), vec![])]
    );
    assert_eq!(r.bead("organice-new")["issue_type"], "bug");
    let record: Value = serde_json::from_str(bd_file(&r).lines().last().unwrap()).unwrap();
    assert_eq!(record["id"], made.as_str());
    assert_eq!(record["priority"], 1);
    assert!(
        bd_file(&r).starts_with(FIXTURE),
        "appended after bd's lines"
    );

    // bd drops a line (a hard delete): splice keeps the bead and says so, every time.
    let text = bd_file(&r);
    let gone = line_of(&text, "organice-2zi");
    r.write(FILE, &text.replace(&format!("{gone}\n"), ""));
    let report = sync(&r, 3, &[]);
    let c = &report["conflicts"][0];
    assert_eq!(c["id"], "organice-2zi", "{report}");
    assert_eq!(c["field"], Value::Null);
    assert!(r.state().join("beads/organice-2zi.json").exists());
    assert!(!bd_file(&r).contains("organice-2zi"));
    sync(&r, 3, &[]);
    // `--take splice` writes it back.
    sync(&r, 0, &["--take", "splice"]);
    assert_eq!(line_of(&bd_file(&r), "organice-2zi"), gone);
}

#[test]
fn a_claimed_bead_takes_nothing_from_bd_and_a_started_beads_status_is_its_routes() {
    let r = imported();
    sync(&r, 0, &[]);
    let out = r.run(&["start", "organice-b5e"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    sync(&r, 0, &[]);
    // bd closes a started bead: its status is the route's, a conflict.
    edit_line(&r, "organice-b5e", |l| {
        l.replace("\"status\":\"open\"", "\"status\":\"closed\"")
    });
    let report = sync(&r, 3, &[]);
    let c = &report["conflicts"][0];
    assert_eq!(
        (c["id"].as_str(), c["field"].as_str()),
        (Some("organice-b5e"), Some("status"))
    );
    assert!(c["why"].as_str().unwrap().contains("route"), "{c}");
    assert_ne!(r.bead("organice-b5e")["status"], "closed");
    // `--take bd` cannot settle it; the status stays the route's.
    sync(&r, 3, &["--take", "bd"]);
    assert_ne!(r.bead("organice-b5e")["status"], "closed");
    edit_line(&r, "organice-b5e", |l| {
        l.replace("\"status\":\"closed\"", "\"status\":\"open\"")
    });
    // A claimed bead: bd's title waits for the claim to end.
    r.ok(&[
        "transition",
        "claim",
        "organice-b5e",
        "--holder",
        "run:elsewhere:1:r",
    ]);
    edit_line(&r, "organice-b5e", |l| {
        l.replace("\"title\":\"Fix habit", "\"title\":\"bd: Fix habit")
    });
    let beads = r.beads_bytes();
    let report = sync(&r, 0, &[]);
    assert_eq!(report["held"][0]["id"], "organice-b5e", "{report}");
    assert_eq!(report["held"][0]["fields"], serde_json::json!(["title"]));
    assert_eq!(r.beads_bytes(), beads, "a claimed bead is not written");
    r.ok(&[
        "transition",
        "release",
        "organice-b5e",
        "--holder",
        "run:elsewhere:1:r",
    ]);
    let report = sync(&r, 0, &[]);
    assert_eq!(
        moved(&report, "to_splice"),
        [(
            "organice-b5e".to_string(),
            "updated".to_string(),
            vec!["title".to_string()]
        )]
    );
    assert!(
        r.bead("organice-b5e")["title"]
            .as_str()
            .unwrap()
            .starts_with("bd: ")
    );
}

#[test]
fn bad_input_leaves_every_file_as_it_was() {
    let r = imported();
    sync(&r, 0, &[]);
    // A line that does not parse is kept, reported, and its issue left alone.
    let text = bd_file(&r);
    let broken = line_of(&text, "organice-6ic").replace("\"title\":", "\"title\":[");
    r.write(
        FILE,
        &text.replace(&line_of(&text, "organice-6ic"), &broken),
    );
    r.ok(&["update", "organice-6ic", "--title", "Changed meanwhile"]);
    let before = snapshot(&r);
    let report = sync(&r, 3, &[]);
    assert_eq!(report["problems"][0]["line"], 8, "{report}");
    assert!(
        snapshot(&r) == before,
        "the line and its issue are left alone"
    );
    r.write(FILE, &text);

    // A base someone edited by hand: refused, naming the file and the line.
    let good = base(&r);
    r.write(
        ".splice/sync/bd.jsonl",
        &good.replacen("{\"id\"", "{\"id\":\"../x\",\"i\"", 1),
    );
    let before = snapshot(&r);
    let err = r.fails(2, &["sync", "bd"]);
    assert!(err.contains("sync/bd.jsonl: line 2"), "{err}");
    assert!(snapshot(&r) == before, "nothing written");
    r.write(".splice/sync/bd.jsonl", &good);
    let before = snapshot(&r);

    // A base kept for another file.
    r.write("other.jsonl", FIXTURE);
    let err = r.fails(2, &["sync", "bd", "--path", "other.jsonl"]);
    assert!(
        err.contains("is the base of a sync with .beads/issues.jsonl"),
        "{err}"
    );
    // A missing file names itself; a dispatched session is refused.
    let err = r.fails(2, &["sync", "bd", "--path", "nowhere.jsonl"]);
    assert!(err.contains("nowhere.jsonl"), "{err}");
    let out = r
        .cmd(&["sync", "bd"])
        .env("SPLICE_DISPATCHED", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(snapshot(&r) == before, "refusals write nothing");
}

/// Every real export kept as a fixture: after `import bd`, a sync leaves the file byte for
/// byte as bd wrote it; a title changed in splice changes that one line only; and then the
/// file, the store and `export bd` agree, and a further sync writes nothing.
#[test]
fn every_real_export_stays_byte_for_byte_and_one_change_changes_one_line() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bd");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    names.sort();
    assert!(names.len() >= 7, "{names:?}");
    for name in names {
        let original = std::fs::read_to_string(dir.join(&name)).unwrap();
        let r = Repo::new();
        r.write(FILE, &original);
        let out = r.run(&["import", "bd", FILE]);
        assert_eq!(out.status.code(), Some(0), "{name}: {out:?}");
        let first = sync(&r, 0, &[]);
        assert_eq!(first["unchanged"], first["records"], "{name}: {first}");
        assert_eq!(
            bd_file(&r),
            original,
            "{name}: a first sync changes no byte"
        );
        let first_line: Value = serde_json::from_str(original.lines().next().unwrap()).unwrap();
        let id = first_line["id"].as_str().unwrap();
        r.ok(&["update", id, "--title", "Changed <in> splice & \"quoted\""]);
        let report = sync(&r, 0, &[]);
        assert_eq!(report["to_bd"][0]["id"], id, "{name}: {report}");
        let text = bd_file(&r);
        let differ: Vec<usize> = original
            .lines()
            .zip(text.lines())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .map(|(n, _)| n)
            .collect();
        assert_eq!(differ, [0], "{name}: only the changed issue's line");
        assert_eq!(text.lines().count(), original.lines().count(), "{name}");
        let changed: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(
            changed["title"], "Changed <in> splice & \"quoted\"",
            "{name}"
        );
        let before = snapshot(&r);
        sync(&r, 0, &[]);
        assert!(
            snapshot(&r) == before,
            "{name}: a further sync writes nothing"
        );
        let out = r.run(&["export", "bd"]);
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            text,
            "{name}: export agrees"
        );
    }
}

/// A first sync (no base yet) after both sides changed an issue since `import bd` took it: a
/// conflict, however the file's `updated_at` reads (a hand edit may leave it); a change on one
/// side only goes through, as the hash the import recorded shows which side it was.
#[test]
fn a_first_sync_tells_which_side_changed_since_the_import_and_never_guesses() {
    let r = imported();
    r.ok(&["update", "organice-6ic", "--title", "Mine"]);
    edit_line(&r, "organice-6ic", |l| {
        l.replace(
            "\"title\":\"Research correct",
            "\"title\":\"Theirs: Research correct",
        )
    });
    r.ok(&["update", "organice-b5e", "--title", "Only splice's"]);
    edit_line(&r, "organice-35c", |l| {
        l.replace("\"priority\":2", "\"priority\":0")
    });
    let report = sync(&r, 3, &[]);
    let conflicts: Vec<(&str, &str)> = report["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap(), c["field"].as_str().unwrap()))
        .collect();
    assert_eq!(conflicts, [("organice-6ic", "title")], "{report}");
    assert_eq!(r.bead("organice-6ic")["title"], "Mine");
    assert!(line_of(&bd_file(&r), "organice-6ic").contains("Theirs: Research"));
    assert_eq!(moved(&report, "to_bd")[0].0, "organice-b5e", "{report}");
    assert_eq!(moved(&report, "to_splice")[0].0, "organice-35c", "{report}");
    assert_eq!(r.bead("organice-35c")["priority"], 0);
}

/// `.splice/sync` is committed, so it may be a link someone planted: the base is never written
/// through it.
#[test]
fn a_link_in_place_of_the_sync_directory_is_not_followed() {
    let r = imported();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), r.state().join("sync")).unwrap();
    let err = r.fails(2, &["sync", "bd"]);
    assert!(err.contains("not a directory"), "{err}");
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).unwrap().count(),
        0,
        "nothing written through the link"
    );
}
