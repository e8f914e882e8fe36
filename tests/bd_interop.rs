//! bd / br interop through the built binary: `import bd`, `export bd`, `start` (issue 15,
//! `docs/bd-interop.md`). The corpus is generated here: every field bd writes, mixed prefixes,
//! hierarchical ids, every status, unknown fields and dependency types.

mod common;

use std::collections::BTreeMap;

use common::Repo;
use proptest::prelude::*;
use serde_json::{Value, json};

const TYPES: [&str; 6] = ["task", "bug", "feature", "epic", "chore", "molecule"];

/// A bd export with every field and odd case: `n` records in epics of five.
fn corpus(n: usize) -> Vec<Value> {
    let statuses = [
        "open",
        "in_progress",
        "blocked",
        "deferred",
        "closed",
        "tombstone",
        "hooked",
        "pinned",
        "someday",
    ];
    let mut out: Vec<Value> = Vec::with_capacity(n);
    for i in 0..n {
        let prefix = if i % 3 == 0 { "bd" } else { "br_x" };
        let epic = i / 5 * 5;
        let id = if i % 5 == 0 {
            format!("{prefix}-e{epic}")
        } else {
            let ep = if epic % 3 == 0 { "bd" } else { "br_x" };
            format!("{ep}-e{epic}.{}", i % 5)
        };
        let status = statuses[i % statuses.len()];
        let mut r = json!({
            "id": id,
            "title": format!("Issue {i}: ünïcode \"quoted\" \\ tab\t"),
            "description": "line one\nline two",
            "design": "## Design\n- a",
            "acceptance_criteria": "- [ ] it works",
            "notes": "",
            "status": status,
            "priority": (i % 5) as i64,
            "issue_type": TYPES[i % TYPES.len()],
            "assignee": "alice",
            "owner": "bob@example.com",
            "labels": ["area:core", format!("l{}", i % 4)],
            "created_at": "2025-10-27T10:12:33.123456-07:00",
            "updated_at": format!("2025-11-0{}T00:00:00Z", 1 + i % 9),
            "comments": [{"id": i, "author": "c", "text": "hi", "created_at": "2025-11-01T00:00:00Z"}],
            "ephemeral": i % 2 == 0,
            "agent_state": {"phase": "x", "n": 1.5, "nested": [null, true]},
            "hook_bead": null,
            "pinned": false,
            "wisp_type": "w",
            "compaction_level": 0,
        });
        let obj = r.as_object_mut().unwrap();
        if status == "closed" {
            obj.insert("closed_at".into(), json!("2025-11-02T00:00:00Z"));
            obj.insert("close_reason".into(), json!("done"));
        }
        if status == "tombstone" {
            obj.insert("deleted_at".into(), json!("2025-11-03T00:00:00Z"));
        }
        let mut deps = Vec::new();
        if i % 5 != 0 {
            let ep = if epic % 3 == 0 { "bd" } else { "br_x" };
            deps.push(json!({"issue_id": id, "depends_on_id": format!("{ep}-e{epic}"), "type": "parent-child", "created_at": "2025-10-27T10:12:33Z", "created_by": "alice"}));
        }
        if i % 5 == 2 {
            let prev = out[i - 1]["id"].clone();
            deps.push(json!({"issue_id": id, "depends_on_id": prev, "type": "blocks"}));
        }
        if i % 7 == 3 && i > 0 {
            let other = out[i - 1]["id"].clone();
            let kind = ["related", "discovered-from", "tracks"][i % 3];
            deps.push(json!({"issue_id": id, "depends_on_id": other, "type": kind}));
        }
        if !deps.is_empty() {
            obj.insert("dependencies".into(), Value::Array(deps));
        }
        out.push(r);
    }
    out
}

fn jsonl(records: &[Value]) -> String {
    records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect()
}

/// Records by id, parsed from an export.
fn by_id(text: &str) -> BTreeMap<String, Value> {
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["id"].as_str().unwrap().to_string(), v))
        .collect()
}

fn export(r: &Repo, extra: &[&str]) -> String {
    let mut args = vec!["export", "bd"];
    args.extend_from_slice(extra);
    let out = r.run(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn import(r: &Repo, file: &str, extra: &[&str]) -> Value {
    let mut args = vec!["import", "bd", file, "--json"];
    args.extend_from_slice(extra);
    r.ok(&args)
}

#[test]
fn import_then_export_gives_the_same_records_and_a_second_import_writes_nothing() {
    let r = Repo::new();
    let records = corpus(60);
    r.write("issues.jsonl", &jsonl(&records));
    let report = import(&r, "issues.jsonl", &[]);
    assert_eq!(
        report["created"].as_array().unwrap().len(),
        60,
        "{report:#}"
    );
    assert!(report["problems"].as_array().unwrap().is_empty());

    let back = by_id(&export(&r, &[]));
    let want = by_id(&jsonl(&records));
    assert_eq!(back, want);

    let journal = r.journal();
    let beads = r.beads_bytes();
    let again = import(&r, "issues.jsonl", &[]);
    assert_eq!(again["unchanged"], 60);
    assert_eq!(r.journal(), journal, "a second import appends no record");
    assert_eq!(r.beads_bytes(), beads);
    // One journaled batch.
    assert_eq!(
        journal
            .lines()
            .filter(|l| l.contains("\"import bd\""))
            .count(),
        1
    );
}

#[test]
fn imported_issues_are_not_nodes_until_a_person_starts_one() {
    let r = Repo::new();
    r.write("issues.jsonl", &jsonl(&corpus(40)));
    import(&r, "issues.jsonl", &[]);
    let status = r.ok(&["status", "--json"]);
    assert_eq!(
        status["nodes"].as_array().map_or(0, Vec::len),
        0,
        "{status:#}"
    );
    let dry = r.ok(&["pass", "--dry-run"]);
    assert!(dry["actions"].as_array().unwrap().is_empty(), "{dry:#}");

    // An open, unblocked leaf: bd-e0 epic's child .1 (i = 1: in_progress, no blocker).
    let started = r.ok(&["start", "bd-e0.1", "--tier", "light"]);
    assert_eq!(started["route"], "light");
    assert_eq!(started["step"], "generate-spec");
    let bead = r.bead("bd-e0.1");
    assert_eq!(bead["design"], "## Design\n- a", "its bd fields stay");
    let dry = r.ok(&["pass", "--dry-run"]);
    let actions = dry["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 1, "{dry:#}");
    assert_eq!(actions[0]["bead"], "bd-e0.1");

    // Starting it twice is refused.
    let err = r.fails(1, &["start", "bd-e0.1"]);
    assert!(err.contains("already on route light"), "{err}");

    // Its export now says what splice changed (updated_at), the rest as imported.
    let back = by_id(&export(&r, &[]));
    assert_eq!(back["bd-e0.1"]["updated_at"], common::NOW);
    assert!(back["bd-e0.1"].get("pipeline").is_none());
    let with = by_id(&export(&r, &["--with-pipeline"]));
    assert_eq!(with["bd-e0.1"]["pipeline"]["step"], "generate-spec");
}

/// Imported issues that block each other in a cycle, once started, wait for each other for
/// ever: the run says so (escalated, naming the cycle) instead of looking idle.
#[test]
fn started_issues_blocking_each_other_in_a_cycle_are_escalated() {
    let r = Repo::new();
    let issue = |id: &str, on: &str| {
        serde_json::json!({"id": id, "title": id, "status": "open",
            "dependencies": [{"issue_id": id, "depends_on_id": on, "type": "blocks"}]})
    };
    r.write(
        "c.jsonl",
        &jsonl(&[issue("bd-a", "bd-b"), issue("bd-b", "bd-a")]),
    );
    import(&r, "c.jsonl", &[]);
    r.ok(&["start", "bd-a"]);
    r.ok(&["start", "bd-b"]);
    let status = r.ok(&["status", "--json"]);
    assert_eq!(status["status"], "escalated", "{status:#}");
    for node in status["nodes"].as_array().unwrap() {
        assert_eq!(node["rest"]["kind"], "escalated", "{node:#}");
        let reason = node["rest"]["reason"].as_str().unwrap();
        assert!(
            reason.contains("cycle") && reason.contains("bd-a, bd-b"),
            "{reason}"
        );
    }
}

#[test]
fn a_reimport_updates_changed_records_and_merges_into_started_ones() {
    let r = Repo::new();
    let mut records = corpus(10);
    r.write("issues.jsonl", &jsonl(&records));
    import(&r, "issues.jsonl", &[]);
    r.ok(&["start", "bd-e0.1"]);
    records[1]["title"] = json!("renamed in bd");
    records[1]["status"] = json!("closed");
    records[3]["notes"] = json!("new notes");
    r.write("issues.jsonl", &jsonl(&records));
    let report = import(&r, "issues.jsonl", &[]);
    assert_eq!(report["updated"], json!([records[3]["id"]]));
    assert_eq!(report["merged"][0]["id"], "bd-e0.1");
    assert_eq!(report["unchanged"], 8);
    let started = r.bead("bd-e0.1");
    assert_eq!(started["title"], "renamed in bd");
    assert_eq!(
        started["status"], "in_progress",
        "a started bead keeps its status"
    );
    assert_eq!(started["pipeline"]["step"], "generate-spec");
}

#[test]
fn bad_records_are_listed_by_line_and_strict_imports_nothing() {
    let r = Repo::new();
    let good = r#"{"id":"bd-1","title":"one"}"#;
    let text = [
        good,
        "{not json",
        r#"{"id":"bd-1","title":"dup"}"#,
        r#"{"id":"bd-2","title":"t","dependencies":[{"depends_on_id":"bd-404","type":"blocks"}]}"#,
        r#"{"id":"bd-3","title":"t","parent":"bd-4"}"#,
        r#"{"id":"bd-4","title":"t","parent":"bd-3"}"#,
        r#"{"id":"../../etc/passwd","title":"t"}"#,
        r#"{"id":"bd-5","title":"t","priority":"high"}"#,
    ]
    .join("\n");
    r.write("bad.jsonl", &text);
    r.init(&[]);
    let before = r.beads_bytes();
    let journal = r.journal();
    let err = r.fails(1, &["import", "bd", "bad.jsonl", "--strict"]);
    assert!(err.contains("6 record(s) of bad.jsonl"), "{err}");
    assert!(err.contains("line 2: not JSON"), "{err}");
    assert_eq!(r.beads_bytes(), before, "--strict: nothing written");
    assert_eq!(r.journal(), journal);

    let out = r.run(&["import", "bd", "bad.jsonl"]);
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "line 2: not JSON",
        "line 3 bd-1: id bd-1 again (first on line 1)",
        "line 4 bd-2: kept its blocks dependency on \"bd-404\": neither in the file nor in the store",
        "line 5 bd-3: parent cycle: bd-3 → bd-4 → bd-3",
        "line 7: id \"../../etc/passwd\": not a bead id",
        "line 8 bd-5: priority: invalid type",
    ] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
    assert!(r.state().join("beads/bd-1.json").exists());
    assert!(!r.path().join("etc").exists());
    // The campaign that was there is untouched.
    let after = r.beads_bytes();
    assert!(before.iter().all(|b| after.contains(b)));
}

#[test]
fn a_missing_file_is_named_and_nothing_is_created() {
    let r = Repo::new();
    let err = r.fails(2, &["import", "bd", "nope.jsonl"]);
    assert!(err.contains("nope.jsonl"), "{err}");
    assert!(!r.state().exists());
    r.init(&[]);
    let err = r.fails(2, &["start", "bd-1"]);
    assert!(err.contains("no bead \"bd-1\""), "{err}");
}

#[test]
fn a_crash_mid_import_leaves_all_or_none() {
    for fp in ["after-journal", "after-tmp", "after-rename"] {
        let r = Repo::new();
        r.write("issues.jsonl", &jsonl(&corpus(25)));
        let out = r
            .cmd(&["import", "bd", "issues.jsonl"])
            .env("SPLICE_FAILPOINT", fp)
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0), "{fp}");
        // The next writer recovers: the journal record was durable, so all 25 are there.
        let again = import(&r, "issues.jsonl", &[]);
        assert_eq!(again["unchanged"], 25, "{fp}: {again:#}");
        assert_eq!(by_id(&export(&r, &[])).len(), 25, "{fp}");
    }
}

#[test]
fn an_epic_starts_as_a_campaign_adopting_its_children() {
    let r = Repo::new();
    let records: Vec<Value> = corpus(5)
        .into_iter()
        .map(|mut v| {
            v["status"] = json!("open");
            v.as_object_mut().unwrap().remove("closed_at");
            v
        })
        .collect();
    r.write("issues.jsonl", &jsonl(&records));
    import(&r, "issues.jsonl", &[]);
    r.write(
        "scen.json",
        r#"{"bd-e0.1": ["S1"], "bd-e0.2": ["S2", "S3"]}"#,
    );
    let out = r.run(&["start", "bd-e0", "--campaign", "--scenarios", "scen.json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let started: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(started["step"], "to-issues");
    assert_eq!(
        started["adopted"],
        json!(["bd-e0.1", "bd-e0.2", "bd-e0.3", "bd-e0.4"])
    );
    let epic = r.bead("bd-e0");
    assert_eq!(epic["pipeline"]["scenarios"], json!(["S1", "S2", "S3"]));
    let child = r.bead("bd-e0.2");
    assert_eq!(child["pipeline"]["provenance"]["split_by"], "bd-e0");
    // The split step's evidence is checked next, as after a split; the children wait for it.
    let dry = r.ok(&["pass", "--dry-run"]);
    assert_eq!(
        dry["actions"],
        json!([{"action": "check", "bead": "bd-e0", "step": "to-issues", "result": "dry-run"}])
    );
    // bd-e0.2 waits on bd-e0.1 first (its `blocks` dependency).
    assert_eq!(dry["reasons"]["waiting-parent"], 3, "{dry:#}");
    assert_eq!(dry["reasons"]["blocked"], 1, "{dry:#}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// Any records of bd's shape, with arbitrary extra fields and values, come back as they
    /// went in.
    #[test]
    fn any_export_round_trips(
        extra in proptest::collection::vec(
            ("[a-z_]{1,8}", prop_oneof![
                any::<i64>().prop_map(Value::from),
                any::<bool>().prop_map(Value::from),
                "[ -~]{0,12}".prop_map(Value::from),
                Just(Value::Null),
                Just(json!({"k": [1, "x"]})),
            ]),
            0..6,
        ),
        n in 1usize..12,
        status in "[a-z_]{1,10}",
    ) {
        let r = Repo::new();
        let mut records = corpus(n);
        for rec in &mut records {
            rec["status"] = json!(status.clone());
            for (k, v) in &extra {
                let reserved = ["id", "title", "status", "dependencies", "parent", "pipeline",
                    "schema_version", "priority", "labels", "description", "issue_type",
                    "created_at", "updated_at", "closed_at", "close_reason", "metadata"];
                if !reserved.contains(&k.as_str()) {
                    rec[k.as_str()] = v.clone();
                }
            }
        }
        r.write("issues.jsonl", &jsonl(&records));
        import(&r, "issues.jsonl", &[]);
        prop_assert_eq!(by_id(&export(&r, &[])), by_id(&jsonl(&records)));
    }
}

#[test]
fn status_lists_children_in_natural_order() {
    let r = Repo::new();
    let mut text = String::from("{\"id\":\"bd-e\",\"title\":\"epic\"}\n");
    for i in 1..=11 {
        text.push_str(&format!(
            "{{\"id\":\"bd-e.{i}\",\"title\":\"c{i}\",\"parent\":\"bd-e\"}}\n"
        ));
    }
    r.write("issues.jsonl", &text);
    import(&r, "issues.jsonl", &[]);
    r.ok(&["start", "bd-e", "--campaign"]);
    let status = r.ok(&["status", "--json"]);
    let ids: Vec<&str> = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    let want: Vec<String> = std::iter::once("bd-e".to_string())
        .chain((1..=11).map(|i| format!("bd-e.{i}")))
        .collect();
    assert_eq!(ids, want);
}

#[test]
fn export_to_a_file_named_relative_to_the_working_directory() {
    // Found by the bench: `-o out.jsonl` wrote the file, then failed syncing the directory "".
    let r = Repo::new();
    r.write("issues.jsonl", &jsonl(&corpus(7)));
    import(&r, "issues.jsonl", &[]);
    let out = r.run(&["export", "bd", "-o", "out.jsonl"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    let written = std::fs::read_to_string(r.path().join("out.jsonl")).unwrap();
    assert_eq!(written, export(&r, &[]));
    assert_eq!(by_id(&written), by_id(&jsonl(&corpus(7))));
}

#[test]
fn export_to_a_missing_directory_names_the_file_asked_for() {
    // It named the temporary file beside it (`/…/d/.x.tmp`), which the user never asked for.
    let r = Repo::new();
    r.write("issues.jsonl", &jsonl(&corpus(3)));
    import(&r, "issues.jsonl", &[]);
    let out = r.path().join("no-such-dir").join("x");
    let err = r.fails(2, &["export", "bd", "-o", out.to_str().unwrap()]);
    assert_eq!(
        err.trim(),
        format!("splice: {}: its directory does not exist", out.display())
    );

    // A directory where the file goes: named, and no temporary file left beside it.
    std::fs::create_dir(r.path().join("out")).unwrap();
    let err = r.fails(2, &["export", "bd", "-o", "out"]);
    assert_eq!(err.trim(), "splice: out: is a directory, not a file");
    let left: Vec<_> = std::fs::read_dir(r.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// bd's `external:<project>:<capability>` dependency blocks until that project ships the
/// capability (a closed issue labelled `provides:<capability>` in its `.beads/issues.jsonl`,
/// the project's directory named in `[bd] external_projects`), and says what would ship it.
#[test]
fn an_external_dependency_blocks_until_the_other_project_ships_it() {
    let r = Repo::new();
    r.write(
        ".beads/issues.jsonl",
        concat!(
            r#"{"id":"t-1","title":"Needs api","status":"open","dependencies":[{"issue_id":"t-1","depends_on_id":"external:other:api","type":"blocks"}]}"#,
            "\n",
            r#"{"id":"t-2","title":"Unrelated","status":"open","dependencies":[{"issue_id":"t-2","depends_on_id":"external:other:ui","type":"related"}]}"#,
            "\n"
        ),
    );
    r.ok(&["import", "bd", ".beads/issues.jsonl", "--json"]);
    let startable = |r: &Repo| -> Vec<String> {
        let ready = r.ok(&["ready", "--json"]);
        ready
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(startable(&r), ["t-2"], "a non-blocking type never blocks");
    r.ok(&["start", "t-1", "--json"]);
    let out = r.run(&["status"]);
    let words = String::from_utf8_lossy(&out.stdout);
    assert!(
        words.contains("external:other:api is not shipped")
            && words.contains("`provides:api`")
            && words.contains("[bd] external_projects"),
        "{words}"
    );
    // Configured, but not shipped yet: an open issue labelled so does not ship it.
    r.write(
        ".splice/config.toml",
        "[bd]\nexternal_projects = { other = \"vendor/other\" }\n",
    );
    let other = r.path().join("vendor/other/.beads");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("issues.jsonl"),
        "{\"id\":\"o-1\",\"title\":\"API\",\"status\":\"open\",\"labels\":[\"provides:api\"]}\n",
    )
    .unwrap();
    let status = r.ok(&["status", "--json"]);
    assert!(
        status.to_string().contains("external:other:api"),
        "{status}"
    );
    std::fs::write(
        other.join("issues.jsonl"),
        "{\"id\":\"o-1\",\"title\":\"API\",\"status\":\"closed\",\"labels\":[\"provides:api\"]}\n",
    )
    .unwrap();
    let status = r.ok(&["status", "--json"]);
    assert!(
        !status.to_string().contains("external:other:api"),
        "shipped: no longer blocking: {status}"
    );
    // A project name with `:` in it names nothing: refused with the key.
    r.write(
        ".splice/config.toml",
        "[bd]\nexternal_projects = { \"a:b\" = \"x\" }\n",
    );
    let err = r.fails(2, &["status"]);
    assert!(err.contains("[bd] external_projects"), "{err}");
}

/// `ready` names the open plain beads a `blocks` dependency on a missing bead holds, and how to
/// go on, as `status` does for nodes.
#[test]
fn ready_says_which_plain_beads_wait_on_a_bead_that_is_not_there() {
    let r = Repo::new();
    r.write(
        "f.jsonl",
        concat!(
            r#"{"id":"t-3","title":"Gone dep","status":"open","dependencies":[{"issue_id":"t-3","depends_on_id":"x-9","type":"blocks"}]}"#,
            "\n",
            r#"{"id":"t-5","title":"Free","status":"open"}"#,
            "\n"
        ),
    );
    r.ok(&["import", "bd", "f.jsonl", "--json"]);
    let out = r.run(&["ready"]);
    let words = String::from_utf8_lossy(&out.stdout);
    assert!(
        words.contains("t-3  x-9 is not in the store") && words.contains("splice dep rm t-3 x-9"),
        "{words}"
    );
    let envelope = r.ok(&["ready", "--json", "--envelope"]);
    assert_eq!(envelope["held"][0]["id"], "t-3", "{envelope}");
    assert_eq!(envelope["held"][0]["waits_on"], json!(["x-9"]));
    // bd's array keeps its shape: the startable bead only.
    let array = r.ok(&["ready", "--json"]);
    assert_eq!(array.as_array().unwrap().len(), 1, "{array}");
}
