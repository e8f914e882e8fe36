//! Issue 36 items 3 and 4: the bd verbs people type — `update`, `dep add/rm/tree`, `reopen`,
//! `label add/rm/list`, several ids for `show` and `close`, `list`'s defaults and sorting,
//! `P0`–`P4` priorities, bd-shaped JSON arrays, `init` with no title — and `start` of an epic
//! with children. Against the built binary, in temporary git repositories, at a fixed clock.

mod common;

use common::Repo;
use serde_json::{Value, json};

/// `splice create` with `args`; returns the new id.
fn created(r: &Repo, args: &[&str]) -> String {
    let mut all = vec!["create"];
    all.extend_from_slice(args);
    let out = r.run(&all);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The journal's records (not their commit markers).
fn records(r: &Repo) -> Vec<Value> {
    r.journal()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("verb").is_some())
        .collect()
}

fn ids_of(array: &Value) -> Vec<String> {
    array
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {array}"))
        .iter()
        .map(|b| b["id"].as_str().unwrap().to_string())
        .collect()
}

/// A plain bead file with `fields` (for a status or a claim `splice` would not give it).
fn edit_file(r: &Repo, id: &str, change: impl FnOnce(&mut Value)) {
    let mut b = r.bead(id);
    change(&mut b);
    r.write(
        &format!(".splice/beads/{id}.json"),
        &serde_json::to_string_pretty(&b).unwrap(),
    );
}

/// Nothing under `.splice/beads/` and nothing in the journal changed since `before`.
fn unchanged(r: &Repo, before: &(Vec<(String, Vec<u8>)>, String), what: &str) {
    assert_eq!(r.beads_bytes(), before.0, "{what}: a bead file changed");
    assert_eq!(r.journal(), before.1, "{what}: the journal changed");
}

fn snapshot(r: &Repo) -> (Vec<(String, Vec<u8>)>, String) {
    (r.beads_bytes(), r.journal())
}

#[test]
fn init_without_a_title_makes_an_empty_store_that_create_writes_to() {
    let r = Repo::new();
    // Without `.splice/`, `create` has nowhere to write.
    r.fails(2, &["create", "Too early"]);
    let made = r.ok(&["init"]);
    assert_eq!(made["created"], true, "{made}");
    assert!(r.state().join("beads").is_dir());
    assert!(r.beads_bytes().is_empty(), "nothing started");
    assert_eq!(
        r.ok(&["init"])["created"],
        false,
        "a second init changes nothing"
    );
    let id = created(&r, &["First", "-p", "P1"]);
    assert_eq!(r.bead(&id)["priority"], 1);
    // A campaign's flag without a title is bad input, not an empty store.
    let err = r.fails(2, &["init", "--autonomy", "wave"]);
    assert!(
        err.contains("--autonomy") && err.contains("--title"),
        "{err}"
    );
    // `init --title` still creates a campaign root.
    let root = r.init(&[]);
    assert_eq!(r.bead(&root)["pipeline"]["step"], "create-prp");
}

#[test]
fn priorities_are_taken_as_digits_or_p_and_a_digit() {
    let r = Repo::new();
    r.ok(&["init"]);
    for (given, n) in [("P0", 0), ("p3", 3), ("4", 4)] {
        let id = created(&r, &[&format!("Prio {given}"), "-p", given]);
        assert_eq!(r.bead(&id)["priority"], n, "{given}");
    }
    for bad in ["P5", "high", "-1", "p"] {
        let err = r.fails(2, &["create", "x", "-p", bad]);
        assert!(err.contains("0-4 or P0-P4"), "{bad}: {err}");
    }
    let listed = r.ok(&["list", "--priority", "P0,p4", "--json"]);
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    r.fails(2, &["list", "--priority", "P9"]);
}

#[test]
fn update_changes_the_named_fields_of_every_bead_given_in_one_journal_record() {
    let r = Repo::new();
    r.ok(&["init"]);
    let a = created(&r, &["Alpha", "-l", "old"]);
    let b = created(&r, &["Beta", "-p", "1"]);
    let journaled = records(&r).len();
    let out = r.ok(&[
        "update",
        &a,
        &b,
        "-p",
        "P1",
        "--status",
        "in_progress",
        "--assignee",
        "ann",
        "--add-label",
        "ui,backend",
        "--remove-label",
        "old",
        "--design",
        "Use a queue.",
        "--notes",
        "see thread",
        "--acceptance",
        "It works.",
    ]);
    assert_eq!(out["verb"], "update");
    assert_eq!(out["updated"], json!([a, b]));
    for id in [&a, &b] {
        let bead = r.bead(id);
        assert_eq!(bead["priority"], 1, "{bead}");
        assert_eq!(bead["status"], "in_progress");
        assert_eq!(bead["assignee"], "ann");
        assert_eq!(bead["labels"], json!(["ui", "backend"]));
        assert_eq!(bead["design"], "Use a queue.");
        assert_eq!(bead["notes"], "see thread");
        assert_eq!(bead["acceptance_criteria"], "It works.");
        assert_eq!(bead["pipeline"]["route"], "", "still a plain bead");
    }
    let recs = records(&r);
    assert_eq!(recs.len(), journaled + 1, "one record for both beads");
    let last = recs.last().unwrap();
    assert_eq!(
        (&last["verb"], &last["actor"]),
        (&json!("update"), &json!("person"))
    );
    // Both as patches; a plain bead has no step to move, so `changes` names neither.
    assert_eq!(last["patches"].as_array().unwrap().len(), 2, "{last}");
    assert!(last.get("changes").is_none(), "{last}");

    // The title and description; the same values again write nothing.
    r.ok(&["update", &a, "--title", "Alpha 2", "-d", "Now with words."]);
    assert_eq!(r.bead(&a)["title"], "Alpha 2");
    assert_eq!(r.bead(&a)["description"], "Now with words.");
    let before = snapshot(&r);
    let again = r.ok(&["update", &a, "--title", "Alpha 2"]);
    assert_eq!(again["updated"], json!([]));
    assert_eq!(again["unchanged"], json!([a]));
    unchanged(&r, &before, "an update to what is already there");
    // An empty value clears a kept field.
    r.ok(&["update", &a, "--assignee", ""]);
    assert!(r.bead(&a).get("assignee").is_none());
}

#[test]
fn bad_input_to_update_names_the_field_and_changes_nothing() {
    let r = Repo::new();
    r.ok(&["init"]);
    let a = created(&r, &["Alpha"]);
    let before = snapshot(&r);
    for (args, says) in [
        (vec!["update", &a, "--title", " "], "--title"),
        (vec!["update", &a, "--title", "two\nlines"], "--title"),
        (vec!["update", &a, "-p", "P7"], "0-4 or P0-P4"),
        (vec!["update", &a, "--add-label", "bad\u{7}label"], "label"),
        (vec!["update", &a, "--status", "closed"], "splice close"),
        (vec!["update", &a, "--status", "nonsense"], "--status"),
        (vec!["update", &a, "--type", "two words"], "--type"),
        (vec!["update", &a], "nothing to update"),
        (vec!["update", "sp-none", "--title", "x"], "sp-none"),
        (vec!["update", "../x", "--title", "x"], "not a bead id"),
        (vec!["update", &a, &a, "--title", "x"], "twice"),
    ] {
        let err = r.fails(2, &args);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    unchanged(&r, &before, "bad input");
}

#[test]
fn every_person_edit_refuses_a_claimed_bead_and_a_dispatched_session() {
    let r = Repo::new();
    let node = r.task("Claimed", &[]);
    let free = r.task("Free", &[]);
    r.ok(&[
        "transition",
        "claim",
        &node,
        "--holder",
        "run:elsewhere:1:r",
    ]);
    let before = snapshot(&r);
    for args in [
        vec!["update", &node, "--title", "Mine now"],
        vec!["update", &free, &node, "-p", "0"],
        vec!["label", "add", &node, "ui"],
        vec!["label", "rm", &node, "ui"],
        vec!["dep", "add", &node, &free],
    ] {
        let err = r.fails(1, &args);
        assert!(
            err.contains(&format!("bead {node} is claimed by run:elsewhere:1:r")),
            "{args:?}: {err}"
        );
    }
    unchanged(&r, &before, "a claimed bead");
    // A node's status follows its route.
    let err = r.fails(1, &["update", &free, "--status", "blocked"]);
    assert!(err.contains("pipeline node"), "{err}");
    // A dispatched session is not a person.
    let out = r
        .cmd(&["update", &free, "--title", "Agent's"])
        .env("SPLICE_DISPATCHED", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    unchanged(&r, &before, "refusals");
    // What depends on a claimed bead is another bead's business.
    r.ok(&["dep", "add", &free, &node, "--type", "related"]);
}

#[test]
fn dep_add_records_the_time_refuses_a_cycle_and_dep_rm_takes_it_away() {
    let r = Repo::new();
    r.ok(&["init"]);
    let a = created(&r, &["A"]);
    let b = created(&r, &["B"]);
    let c = created(&r, &["C"]);
    let added = r.ok(&["dep", "add", &a, &b]);
    assert_eq!(
        (&added["type"], &added["change"]),
        (&json!("blocks"), &json!("added"))
    );
    r.ok(&["dep", "add", &b, &c]);
    let dep = &r.bead(&a)["dependencies"][0];
    assert_eq!(dep["depends_on_id"], b.as_str());
    assert_eq!(dep["type"], "blocks");
    assert_eq!(dep["created_at"], common::NOW, "{dep}");
    assert_eq!(records(&r).last().unwrap()["verb"], "dep add");
    // `a` waits on `b` waits on `c`: `c` on `a` would close the cycle.
    let before = snapshot(&r);
    let err = r.fails(1, &["dep", "add", &c, &a]);
    assert!(
        err.contains("for ever") && err.contains(&format!("{a} → {b} → {c}")),
        "{err}"
    );
    let err = r.fails(2, &["dep", "add", &a, &a]);
    assert!(err.contains("itself"), "{err}");
    r.fails(2, &["dep", "add", &a, "sp-none"]);
    r.fails(2, &["dep", "add", &a, &b, "--type", "parent-child"]);
    r.fails(2, &["dep", "rm", &c, &a]);
    unchanged(&r, &before, "refused dependencies");
    // A type that does not block may go round.
    r.ok(&["dep", "add", &c, &a, "--type", "related"]);
    // The blocking one keeps `a` from being ready; removing it frees `a`.
    let ready = ids_of(&r.ok(&["ready", "--json"]));
    assert!(!ready.contains(&a) && ready.contains(&c), "{ready:?}");
    let gone = r.ok(&["dep", "rm", &a, &b]);
    assert_eq!(gone["change"], "removed");
    assert_eq!(r.bead(&a)["dependencies"], json!([]));
    assert!(ids_of(&r.ok(&["ready", "--json"])).contains(&a));
}

#[test]
fn dep_tree_shows_what_a_bead_waits_on() {
    let r = Repo::new();
    r.ok(&["init"]);
    let a = created(&r, &["Top"]);
    let b = created(&r, &["Middle"]);
    let c = created(&r, &["Bottom"]);
    r.ok(&["dep", "add", &a, &b]);
    r.ok(&["dep", "add", &b, &c]);
    r.ok(&["dep", "add", &a, &c, "--type", "related"]);
    let tree = r.ok(&["dep", "tree", &a, "--json"]);
    let rows: Vec<(String, u64, Value, Value)> = tree
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["id"].as_str().unwrap().to_string(),
                n["depth"].as_u64().unwrap(),
                n["parent_id"].clone(),
                n["dep_type"].clone(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (a.clone(), 0, Value::Null, Value::Null),
            (b.clone(), 1, json!(a), json!("blocks")),
            (c.clone(), 2, json!(b), json!("blocks")),
            (c.clone(), 1, json!(a), json!("related")),
        ]
    );
    assert_eq!(
        tree[3]["seen"], true,
        "a bead met again is not walked again"
    );
    let out = r.run(&["dep", "tree", &a]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("└─ (blocks) {b}")), "{text}");
    assert!(text.contains("Bottom"), "{text}");
    r.fails(2, &["dep", "tree", "sp-none"]);
}

#[test]
fn reopen_and_close_take_several_ids() {
    let r = Repo::new();
    r.ok(&["init"]);
    let a = created(&r, &["A"]);
    let b = created(&r, &["B"]);
    let closed = r.ok(&["close", &a, &b, "--reason", "done in bd"]);
    assert_eq!(closed["beads"][0]["bead"], a.as_str());
    assert_eq!(closed["beads"][1]["bead"], b.as_str());
    for id in [&a, &b] {
        assert_eq!(r.bead(id)["status"], "closed");
    }
    // A typo among the ids closes nothing.
    let c = created(&r, &["C"]);
    let before = snapshot(&r);
    r.fails(2, &["close", &c, "sp-none", "--reason", "x"]);
    unchanged(&r, &before, "close with an unknown id");

    let out = r.ok(&["reopen", &a, &b, "--reason", "not done after all"]);
    assert_eq!(out["updated"], json!([a, b]));
    for id in [&a, &b] {
        let bead = r.bead(id);
        assert_eq!(bead["status"], "open");
        assert_eq!(bead["closed_at"], Value::Null);
        assert_eq!(bead["close_reason"], Value::Null);
    }
    let rec = records(&r).pop().unwrap();
    assert_eq!(rec["verb"], "reopen");
    assert!(
        rec["reason"]
            .as_str()
            .unwrap()
            .contains("not done after all")
    );
    let before = snapshot(&r);
    let err = r.fails(1, &["reopen", &a]);
    assert!(err.contains("not closed"), "{err}");
    unchanged(&r, &before, "reopen of an open bead");
    // A node's close is its route's (or a person's close): it is not reopened.
    let node = r.task("Node", &[]);
    r.ok(&["close", &node, "--reason", "done"]);
    let err = r.fails(1, &["reopen", &node]);
    assert!(err.contains("pipeline node"), "{err}");
}

#[test]
fn label_add_and_rm_take_the_ids_then_the_label() {
    let r = Repo::new();
    r.ok(&["init"]);
    let a = created(&r, &["A"]);
    let b = created(&r, &["B", "-l", "ui"]);
    let out = r.ok(&["label", "add", &a, &b, "ui"]);
    assert_eq!(out["updated"], json!([a]));
    assert_eq!(out["unchanged"], json!([b]));
    assert_eq!(r.ok(&["label", "list", &a, "--json"]), json!(["ui"]));
    r.ok(&["label", "rm", &a, &b, "ui"]);
    assert_eq!(r.bead(&b)["labels"], json!([]));
    assert_eq!(records(&r).last().unwrap()["verb"], "label rm");
    let before = snapshot(&r);
    r.fails(2, &["label", "add", &a, "two\nlines"]);
    r.fails(2, &["label", "add", "ui"]);
    r.fails(2, &["label", "add", "sp-none", "ui"]);
    unchanged(&r, &before, "bad labels");
}

#[test]
fn list_hides_closed_and_tombstones_unless_asked_and_sorts_and_limits() {
    let r = Repo::new();
    r.ok(&["init"]);
    let a = created(&r, &["Charlie", "-p", "2"]);
    let b = created(&r, &["Alpha", "-p", "0"]);
    let c = created(&r, &["Bravo", "-p", "1"]);
    let gone = created(&r, &["Deleted"]);
    edit_file(&r, &gone, |v| v["status"] = json!("tombstone"));
    let done = created(&r, &["Finished"]);
    r.ok(&["close", &done, "--reason", "done"]);

    let shown = ids_of(&r.ok(&["list", "--json"]));
    assert_eq!(shown.len(), 3, "{shown:?}");
    assert!(!shown.contains(&gone) && !shown.contains(&done));
    assert_eq!(ids_of(&r.ok(&["list", "--all", "--json"])).len(), 5);
    assert_eq!(
        ids_of(&r.ok(&["list", "--status", "closed", "--json"])),
        std::slice::from_ref(&done)
    );
    assert_eq!(
        ids_of(&r.ok(&["list", "--status", "tombstone", "--json"])),
        std::slice::from_ref(&gone)
    );
    let text = String::from_utf8(r.run(&["list"]).stdout).unwrap();
    assert!(
        text.contains("2 closed or tombstoned not shown: --all shows them"),
        "{text}"
    );

    let by = |args: &[&str]| {
        let mut all = vec!["list", "--json"];
        all.extend_from_slice(args);
        ids_of(&r.ok(&all))
    };
    assert_eq!(
        by(&["--sort", "priority"]),
        [b.clone(), c.clone(), a.clone()]
    );
    assert_eq!(by(&["--sort", "title"]), [b.clone(), c.clone(), a.clone()]);
    assert_eq!(
        by(&["--sort", "priority", "--reverse"]),
        [a.clone(), c.clone(), b.clone()]
    );
    assert_eq!(
        by(&["--sort", "priority", "--limit", "2"]),
        [b.clone(), c.clone()]
    );
    r.fails(2, &["list", "--sort", "colour"]);
}

#[test]
fn json_is_an_array_where_bd_gives_one_and_the_envelope_is_asked_for() {
    let r = Repo::new();
    let node = r.task("A node", &[]);
    let plain = created(&r, &["Plain", "-p", "P1"]);

    let list = r.ok(&["list", "--json"]);
    let item = list
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == plain.as_str())
        .unwrap();
    for key in [
        "title",
        "status",
        "priority",
        "issue_type",
        "labels",
        "created_at",
    ] {
        assert!(item.get(key).is_some(), "{key} in {item}");
    }
    let env = r.ok(&["list", "--json", "--envelope"]);
    assert_eq!(env["schema_version"], 1);
    assert_eq!(ids_of(&env["beads"]), ids_of(&list));
    assert!(env["unreadable"].is_array());

    let ready = r.ok(&["ready", "--json"]);
    let rows = ready.as_array().unwrap();
    assert_eq!(rows[0]["id"], node.as_str());
    assert_eq!(rows[0]["action"], "check");
    assert_eq!(rows[1]["id"], plain.as_str());
    assert_eq!(rows[1]["command"], format!("splice start {plain}"));
    let env = r.ok(&["ready", "--json", "--envelope"]);
    assert_eq!(env["schema_version"], 1);
    assert_eq!(env["startable"][0]["id"], plain.as_str());

    let shown = r.ok(&["show", &plain, &node, "--json"]);
    assert_eq!(ids_of(&shown), [plain.clone(), node.clone()]);
    assert_eq!(shown[0]["decision"], Value::Null);
    assert_eq!(shown[1]["decision"]["action"]["action"], "check");
    let env = r.ok(&["show", &plain, "--json", "--envelope"]);
    assert_eq!(env["schema_version"], 1);
    assert_eq!(env["beads"][0]["id"], plain.as_str());
    // `--envelope` belongs to `--json`.
    r.fails(2, &["list", "--envelope"]);
    // Text of several beads: each shown.
    let text = String::from_utf8(r.run(&["show", &plain, &node]).stdout).unwrap();
    assert!(text.contains("Plain") && text.contains("A node"), "{text}");
}

#[test]
fn an_epic_with_children_is_started_as_a_campaign_not_made_a_leaf() {
    let r = Repo::new();
    r.ok(&["init"]);
    let epic = created(&r, &["Epic", "-t", "epic"]);
    created(&r, &["Child one", "--parent", &epic]);
    created(&r, &["Child two", "--parent", &epic]);
    let lone = created(&r, &["Lone"]);

    let ready = r.ok(&["ready", "--json"]);
    let command = |id: &str| {
        ready
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["id"] == id)
            .map(|b| b["command"].clone())
    };
    assert_eq!(
        command(&epic),
        Some(json!(format!("splice start {epic} --campaign")))
    );
    assert_eq!(command(&lone), Some(json!(format!("splice start {lone}"))));
    let text = String::from_utf8(r.run(&["ready"]).stdout).unwrap();
    assert!(
        text.contains(&format!("→ splice start {epic} --campaign")),
        "{text}"
    );

    let before = snapshot(&r);
    let err = r.fails(1, &["start", &epic]);
    assert!(
        err.contains(&format!("splice start {epic} --campaign")) && err.contains("2 child"),
        "{err}"
    );
    unchanged(&r, &before, "start of an epic as a task");
    let started = r.ok(&["start", &epic, "--campaign"]);
    assert_eq!(started["kind"], "root");
    assert_eq!(started["adopted"].as_array().unwrap().len(), 2);
    // A bead without children starts as a task, as before.
    assert_eq!(r.ok(&["start", &lone])["kind"], "leaf");
}
