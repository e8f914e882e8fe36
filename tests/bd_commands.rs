//! Issue 15 §2: the commands bd users type first — `list`, `ready`, `show`, `create`, `logs` —
//! against the built binary, in temporary git repositories, at a fixed clock.

mod common;

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use common::Repo;
use serde_json::{Value, json};

/// A bead file written directly: only for fields `splice create` cannot set (dependencies,
/// labels, a status, bd's fields splice does not know). Plain: no `pipeline`.
fn plain_file(r: &Repo, id: &str, fields: Value) {
    let mut bead = json!({"id": id, "title": format!("bead {id}"), "status": "open"});
    bead.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    r.write(
        &format!(".splice/beads/{id}.json"),
        &serde_json::to_string_pretty(&bead).unwrap(),
    );
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Run and require exit 0; returns stdout as text.
fn ok_text(r: &Repo, args: &[&str]) -> String {
    let out = r.run(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "splice {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    text(&out)
}

fn created(r: &Repo, args: &[&str]) -> String {
    let mut all = vec!["create"];
    all.extend_from_slice(args);
    ok_text(r, &all).trim().to_string()
}

fn ids(listing: &Value) -> Vec<String> {
    listing["beads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn create_makes_a_plain_bead_through_the_writer() {
    let r = Repo::new();
    let node = r.task("A node", &[]);
    let id = created(
        &r,
        &["Fix the login", "-d", "It crashes", "-p", "1", "-t", "bug"],
    );
    assert!(
        id.starts_with("sp-") && id.len() >= 7,
        "a hash id as init gives: {id}"
    );
    let bead = r.bead(&id);
    assert_eq!(bead["title"], "Fix the login");
    assert_eq!(bead["description"], "It crashes");
    assert_eq!(
        (&bead["priority"], &bead["issue_type"]),
        (&json!(1), &json!("bug"))
    );
    assert_eq!(bead["pipeline"]["route"], "", "plain: on no route");
    assert!(r.journal().contains(&format!("\"{id}\"")), "journaled");
    // Plain beads get no decision: the run status is about the node.
    let status = r.ok(&["status", "--json"]);
    let rows: Vec<&str> = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(rows, [node.as_str()]);
    // --json prints the bead as written.
    let b = r.ok(&[
        "create",
        "Another",
        "-l",
        "ui,backend",
        "--label",
        "p1",
        "--json",
    ]);
    assert_eq!(b["labels"], json!(["ui", "backend", "p1"]));
    assert_eq!(b["schema_version"], 1);
    assert_eq!(b["title"], "Another");
    assert_eq!(b, r.bead(b["id"].as_str().unwrap()));
}

#[test]
fn create_with_a_parent_numbers_its_children_and_refuses_what_it_cannot_be() {
    let r = Repo::new();
    let node = r.task("A node", &[]);
    let epic = created(&r, &["Epic", "-t", "epic"]);
    let kids: Vec<String> = (1..=3)
        .map(|i| created(&r, &[&format!("child {i}"), "--parent", &epic]))
        .collect();
    assert_eq!(kids, [1, 2, 3].map(|i| format!("{epic}.{i}")));
    assert_eq!(r.bead(&kids[0])["parent"], json!(epic));
    let grandchild = created(&r, &["deeper", "--parent", &kids[1]]);
    assert_eq!(grandchild, format!("{epic}.2.1"));

    let before = r.beads_bytes();
    let journal = r.journal();
    let err = r.fails(2, &["create", "x", "--parent", "sp-nope"]);
    assert!(err.contains("no bead sp-nope"), "{err}");
    let err = r.fails(1, &["create", "x", "--parent", &node]);
    assert!(
        err.contains(&format!("bead {node} is a pipeline node"))
            && err.contains("children come from its split"),
        "{err}"
    );
    for bad in [
        &["create", "x", "-p", "5"][..],
        &["create", "x", "-p", "-1"],
        &["create", "x", "-p", "high"],
        &["create", "  "],
        &["create", "x", "-t", "two words"],
        &["create", "x", "--parent", "../etc"],
    ] {
        r.fails(2, bad);
    }
    let err = r.fails(2, &["create", "x", "-p", "9"]);
    assert!(err.contains("0-4 or P0-P4"), "{err}");
    assert_eq!(r.beads_bytes(), before, "a refusal writes nothing");
    assert_eq!(r.journal(), journal);
}

#[test]
fn a_dispatched_session_may_read_but_not_create() {
    let r = Repo::new();
    let node = r.task("A node", &[]);
    let before = r.beads_bytes();
    let as_agent = |args: &[&str]| {
        let out = r.cmd(args).env("SPLICE_DISPATCHED", "1").output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = as_agent(&["create", "Sneaky"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("create"), "{err}");
    assert_eq!(r.beads_bytes(), before, "nothing written");
    for read in [
        &["list"][..],
        &["ready"],
        &["show", &node],
        &["logs", &node],
    ] {
        let (code, err) = as_agent(read);
        assert_eq!(code, Some(0), "{read:?}: {err}");
    }
}

#[test]
fn list_shows_every_bead_in_natural_order_and_each_filter_works() {
    let r = Repo::new();
    let node = r.task("A node", &[]);
    let p = created(&r, &["Parent"]);
    for i in 1..=11 {
        created(&r, &[&format!("child {i}"), "--parent", &p]);
    }
    r.ok(&["close", &format!("{p}.3"), "--reason", "done in bd"]);
    plain_file(
        &r,
        "bd-9",
        json!({"status": "deferred", "issue_type": "bug", "labels": ["ui", "urgent"]}),
    );
    plain_file(&r, "bd-10", json!({"status": "hooked", "labels": ["ui"]}));
    plain_file(
        &r,
        "bd-11",
        json!({"status": "\u{1b}[2Jwiped", "title": "evil\u{1b}]0;title\u{7}\nnext"}),
    );

    // `--envelope`: splice's versioned object; `--all`: closed beads too.
    let all = r.ok(&["list", "--all", "--json", "--envelope"]);
    assert_eq!(all["schema_version"], 1);
    let got = ids(&all);
    let mut expected = vec![
        "bd-9".to_string(),
        "bd-10".into(),
        "bd-11".into(),
        p.clone(),
    ];
    expected.extend((1..=11).map(|i| format!("{p}.{i}")));
    expected.push(node.clone());
    expected.sort_by(|a, b| splice::model::id::natural_cmp(a, b));
    assert_eq!(got, expected);
    let at = |id: &str| got.iter().position(|g| g == id).unwrap();
    assert!(at("bd-9") < at("bd-10"), "numbers by value");
    assert!(at(&format!("{p}.2")) < at(&format!("{p}.10")), "{got:?}");
    assert!(
        at(&p) < at(&format!("{p}.1")),
        "a parent before its children"
    );
    let n = &all["beads"][at(&node)];
    assert_eq!(n["step"], "generate-spec");
    assert_eq!(
        all["beads"][at(&p)]["step"],
        Value::Null,
        "a plain bead has none"
    );

    let only = |args: &[&str]| {
        let mut a = vec!["list", "--all", "--json", "--envelope"];
        a.extend_from_slice(args);
        ids(&r.ok(&a))
    };
    assert_eq!(only(&["--status", "closed"]), [format!("{p}.3")]);
    assert_eq!(
        only(&["--status", "deferred,hooked"]),
        only(&["--status", "deferred", "--status", "hooked"])
    );
    assert_eq!(only(&["--status", "deferred,hooked"]), ["bd-9", "bd-10"]);
    assert_eq!(only(&["--type", "bug"]), ["bd-9"]);
    assert_eq!(only(&["--label", "ui"]), ["bd-9", "bd-10"]);
    assert_eq!(only(&["--label", "ui", "--label", "urgent"]), ["bd-9"]);
    assert_eq!(only(&["--parent", &p]).len(), 11);
    assert!(only(&["--status", "blocked"]).is_empty());

    // Text: one line a bead, the step or `-`, and nothing from a file reaches the terminal raw.
    let out = ok_text(&r, &["list", "--all"]);
    assert_eq!(out.lines().count(), expected.len(), "{out}");
    let line = |id: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap()
            .to_string()
    };
    assert!(line(&node).contains("generate-spec"), "{out}");
    assert!(line(&format!("{p}.3")).contains(" closed "), "{out}");
    assert!(line(&p).contains(" - "), "{out}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert!(line("bd-11").contains("\\u{1b}[2Jwiped"), "{out}");
    assert!(line("bd-11").contains("\\nnext"), "{out}");
}

#[test]
fn list_refuses_a_parent_that_is_not_an_id() {
    // `list --parent ../x` printed "no beads" and exited 0; `show ../x` says it is no id.
    let r = Repo::new();
    r.task("T", &[]);
    let cache = r.state().join("cache");
    if cache.exists() {
        std::fs::remove_dir_all(&cache).unwrap();
    }
    let before = r.beads_bytes();
    let journal = r.journal();
    for bad in ["../x", "", ".hidden", "a/b"] {
        for json in [&[][..], &["--json"]] {
            let mut args = vec!["list", "--parent", bad];
            args.extend_from_slice(json);
            let err = r.fails(2, &args);
            assert_eq!(
                err.trim(),
                format!("splice: --parent {bad:?}: not a bead id"),
                "{args:?}"
            );
        }
    }
    assert!(!cache.exists(), "nothing else changes: not even the cache");
    assert_eq!(r.beads_bytes(), before);
    assert_eq!(r.journal(), journal);
    // A well-formed id with no children (or no bead) is an empty list, as bd's.
    let listing = r.ok(&["list", "--parent", "sp-none", "--json", "--envelope"]);
    assert!(ids(&listing).is_empty(), "{listing}");
}

#[test]
fn ready_is_the_decisions_actions_and_the_plain_beads_nothing_blocks() {
    let r = Repo::new();
    let node = r.task("A node", &[]);
    plain_file(&r, "bd-a", json!({"priority": 1}));
    plain_file(
        &r,
        "bd-b",
        json!({"dependencies": [{"depends_on_id": "bd-a", "type": "blocks"}]}),
    );
    plain_file(&r, "bd-done", json!({"status": "closed"}));
    plain_file(
        &r,
        "bd-c",
        json!({"priority": 0, "dependencies": [
            {"depends_on_id": "bd-done", "type": "blocks"},
            {"depends_on_id": "bd-a", "type": "related"}]}),
    );
    plain_file(&r, "bd-busy", json!({"status": "in_progress"}));
    // A node waiting on a plain bead rests blocked: no action for it.
    let blocked = r.task("Waits on bd-a", &[]);
    let mut b = r.bead(&blocked);
    b["dependencies"] = json!([{"depends_on_id": "bd-a", "type": "blocks"}]);
    r.write(
        &format!(".splice/beads/{blocked}.json"),
        &serde_json::to_string_pretty(&b).unwrap(),
    );

    let ready = r.ok(&["ready", "--json", "--envelope"]);
    assert_eq!(ready["schema_version"], 1);
    assert_eq!(ready["status"], "ready");
    // The actions are the pure decision's, one for one.
    std::fs::write(
        r.path().join("snap.json"),
        serde_json::to_vec(&r.ok(&["snapshot"])).unwrap(),
    )
    .unwrap();
    let decision = r.ok(&["decide", "--snapshot", "snap.json"]);
    let actions: Vec<Value> = ready["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].clone())
        .collect();
    assert_eq!(json!(actions), decision["actions"]);
    let a = &ready["actions"][0];
    assert_eq!(
        (&a["bead"], &a["step"], &a["kind"]),
        (&json!(node), &json!("generate-spec"), &json!("check"))
    );
    assert_eq!(a["reason"], "check: run the floors");
    assert_eq!(ready["actions"].as_array().unwrap().len(), 1);
    // Plain beads: open and unblocked, by priority; a cancelled or open blocker blocks.
    let startable: Vec<&str> = ready["startable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(startable, ["bd-c", "bd-a"]);
    assert_eq!(ready["startable"][1]["command"], "splice start bd-a");

    let out = ok_text(&r, &["ready"]);
    assert!(
        out.contains(&format!("{node}  generate-spec  check: run the floors")),
        "{out}"
    );
    assert!(
        out.contains("bd-a") && out.contains("→ splice start bd-a"),
        "{out}"
    );
    assert!(!out.contains("bd-b") && !out.contains("bd-busy"), "{out}");
    assert!(
        !out.contains(&blocked),
        "a blocked node has no action: {out}"
    );
}

#[test]
fn show_prints_a_plain_beads_kept_fields_and_a_nodes_step_and_decision() {
    let r = Repo::new();
    let node = r.task("A node", &[]);
    plain_file(
        &r,
        "bd-x1",
        json!({
            "title": "Imported \u{1b}[31mred",
            "description": "What to do.",
            "design": "Use a queue.",
            "acceptance_criteria": "It works.",
            "notes": "see thread",
            "assignee": "ana",
            "labels": ["ui"],
            "dependencies": [{"depends_on_id": "bd-y", "type": "discovered-from"}],
            "ephemeral": true
        }),
    );
    let plain = &r.ok(&["show", "bd-x1", "--json"])[0];
    let envelope = r.ok(&["show", "bd-x1", "--json", "--envelope"]);
    assert_eq!(envelope["schema_version"], 1);
    assert_eq!(
        &envelope["beads"][0], plain,
        "the same bead, in splice's envelope"
    );
    for (k, v) in [
        ("design", "Use a queue."),
        ("acceptance_criteria", "It works."),
        ("notes", "see thread"),
        ("assignee", "ana"),
    ] {
        assert_eq!(plain[k], v, "{k} kept");
    }
    assert_eq!(plain["ephemeral"], true);
    assert_eq!(
        plain["decision"],
        Value::Null,
        "a plain bead gets no decision"
    );
    assert_eq!(plain["dependencies"][0]["type"], "discovered-from");

    let out = ok_text(&r, &["show", "--bead", "bd-x1"]);
    for part in [
        "design:\n  Use a queue.",
        "acceptance_criteria:\n  It works.",
        "notes:\n  see thread",
        "assignee:\n  ana",
        "description:\n  What to do.",
        "bd-y (discovered-from)",
        "a plain bead",
    ] {
        assert!(out.contains(part), "{part:?} in {out}");
    }
    assert!(
        !out.contains('\u{1b}') && out.contains("\\u{1b}[31mred"),
        "{out:?}"
    );

    let shown = &r.ok(&["show", &node, "--json"])[0];
    assert_eq!(shown["pipeline"]["step"], "generate-spec");
    assert_eq!(shown["decision"]["action"]["action"], "check");
    assert_eq!(shown["decision"]["rest"], Value::Null);
    assert_eq!(shown["decision"]["reason"], "check: run the floors");
    let out = ok_text(&r, &["show", &node]);
    assert!(out.contains("generate-spec (route leaf, leaf)"), "{out}");
    assert!(
        out.contains("check: run the floors") && out.contains("claim"),
        "{out}"
    );

    r.fails(2, &["show", "bd-none"]);
    r.fails(2, &["show", "../x"]);
}

/// A dispatch log at `.splice/runs/<run>/<name>`, last written at `age_s` seconds ago.
fn log(r: &Repo, run: &str, name: &str, body: &str, age_s: u64) -> std::path::PathBuf {
    let path = r.state().join("runs").join(run).join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, body).unwrap();
    let when = SystemTime::now() - Duration::from_secs(age_s);
    let f = std::fs::File::options().write(true).open(&path).unwrap();
    f.set_modified(when).unwrap();
    let dir = std::fs::File::open(path.parent().unwrap()).unwrap();
    dir.set_modified(when).unwrap();
    path
}

const OLD_RUN: &str = "20260101T000000Z-11-0";
const NEW_RUN: &str = "20260101T010000Z-12-0";

#[test]
fn logs_lists_a_nodes_dispatch_logs_newest_first() {
    let r = Repo::new();
    let node = r.task("A node", &[]);
    let other = r.task("Another", &[]);
    log(
        &r,
        OLD_RUN,
        &format!("{node}-generate-spec-1.log"),
        "first try\n",
        300,
    );
    log(
        &r,
        OLD_RUN,
        &format!("{node}-generate-spec-1.usage.json"),
        "{}",
        300,
    );
    log(
        &r,
        NEW_RUN,
        &format!("{other}-generate-spec-1.log"),
        "other\n",
        20,
    );
    log(
        &r,
        NEW_RUN,
        &format!("{node}-generate-spec-2.log"),
        "second try \u{1b}[2J\n",
        10,
    );

    let listed = r.ok(&["logs", &node, "--json"]);
    assert_eq!(listed["schema_version"], 1);
    let paths: Vec<&str> = listed["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            format!(".splice/runs/{NEW_RUN}/{node}-generate-spec-2.log"),
            format!(".splice/runs/{OLD_RUN}/{node}-generate-spec-1.log"),
        ]
    );
    assert_eq!(listed["logs"][0]["attempt"], 2);
    assert_eq!(listed["logs"][0]["step"], "generate-spec");

    let out = ok_text(&r, &["logs", &node]);
    let second = out.find("second try").unwrap();
    assert!(
        second < out.find("first try").unwrap(),
        "newest first: {out}"
    );
    assert!(!out.contains("other") && !out.contains('\u{1b}'), "{out:?}");
    assert!(out.contains("\\u{1b}[2J"), "{out}");

    // Without an id: every dispatch of the latest run.
    let latest = r.ok(&["logs", "--json"]);
    let beads: Vec<&str> = latest["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["bead"].as_str().unwrap())
        .collect();
    assert_eq!(beads, [node.as_str(), other.as_str()]);
    r.fails(2, &["logs", "sp-none"]);
    r.fails(2, &["logs", &node, "--follow", "--json"]);
}

/// `splice logs` prints the latest run's dispatches. When that run dispatched nothing (it found
/// the node at its gate) it says so and names the run that did — not "no run has dispatched yet".
#[test]
fn logs_of_a_latest_run_that_dispatched_nothing_name_the_run_that_did() {
    let r = Repo::unconfined();
    let node = r.task("A node", &[]);
    assert_eq!(
        ok_text(&r, &["logs"]),
        "no dispatch logs: no run is kept in .splice/runs\n"
    );
    let sim = env!("CARGO_BIN_EXE_splice");
    r.write(
        ".splice/config.toml",
        &format!("[agent]\ncommand = [\"{sim}\", \"sim-agent\"]\nusage = \"none\"\n"),
    );
    // The first run dispatches the spec and stops at its gate; the second finds the gate.
    for _ in 0..2 {
        let env = r.ok(&["run", "--output", "json"]);
        assert_eq!(env["status"], "suspended-human", "{env:#}");
    }
    let listed = r.ok(&["logs", &node, "--json"]);
    let logs = listed["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 1, "one dispatch: {listed:#}");
    let dispatched = logs[0]["run"].as_str().unwrap();

    let out = ok_text(&r, &["logs"]);
    assert!(
        out.starts_with("no dispatch logs in the latest run, ")
            && out.contains("dispatched nothing"),
        "{out}"
    );
    assert!(
        out.contains(&format!("the latest run that dispatched is {dispatched}")),
        "{out}"
    );
    assert!(!out.contains(&format!("latest run, {dispatched}")), "{out}");
}

/// How long a follower may take to print what the test waits for, or to end: generous, so a slow
/// machine is no failure; a follower that never gets there fails the test, saying what it had.
const BOUND: Duration = Duration::from_secs(30);

/// `splice logs … --follow` in the background, its stdout gathered as it comes: the test waits
/// on what it has printed, never on a timing.
struct Follower {
    child: std::process::Child,
    stdout: Arc<Mutex<Vec<u8>>>,
    /// Taken when joined: once the follower has ended, its stdout is all read.
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Follower {
    fn start(r: &Repo, args: &[&str]) -> Follower {
        let mut c: Command = r.cmd(args);
        let mut child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut pipe = child.stdout.take().unwrap();
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let into = Arc::clone(&stdout);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                into.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Follower {
            child,
            stdout,
            reader: Some(reader),
        }
    }

    fn printed(&self) -> String {
        String::from_utf8_lossy(&self.stdout.lock().unwrap()).into_owned()
    }

    /// Wait until the follower has printed `text`; fails the test after [`BOUND`], or when it
    /// ended without printing it.
    fn printed_soon(&mut self, text: &str) {
        let start = Instant::now();
        while !self.printed().contains(text) {
            if let Some(status) = self.child.try_wait().unwrap() {
                // It ended: what it printed is all there will be, once the reader has it all.
                self.read_all();
                assert!(
                    self.printed().contains(text),
                    "the follower ended ({status}) without printing {text:?}: {:?}",
                    self.printed()
                );
                return;
            }
            if start.elapsed() > BOUND {
                let _ = self.child.kill();
                panic!(
                    "the follower has not printed {text:?} after {BOUND:?}: {:?}",
                    self.printed()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Wait for the reader to reach the end of stdout (the follower has ended).
    fn read_all(&mut self) {
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
    }

    /// Its exit code, stdout and stderr once it ends, within [`BOUND`].
    fn finish(mut self) -> (Option<i32>, String, String) {
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if start.elapsed() > BOUND {
                let _ = self.child.kill();
                panic!("still following after {BOUND:?}: {:?}", self.printed());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let status = self.child.wait().unwrap();
        self.read_all();
        let mut stderr = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        (status.code(), self.printed(), stderr)
    }
}

#[test]
fn follow_ends_at_once_on_a_dispatch_that_ended() {
    let r = Repo::new();
    let node = r.task("A node", &[]);
    log(
        &r,
        OLD_RUN,
        &format!("{node}-generate-spec-1.log"),
        "done\nno newline",
        5,
    );
    let (code, out, err) = Follower::start(&r, &["logs", &node, "--follow"]).finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("done\nno newline\n"), "{out}");
}

/// A person's editor may write the bead in place while `--follow` polls it: a bead caught half
/// written is read again at the next poll, not refused at once.
#[test]
fn follow_reads_again_a_bead_caught_half_written() {
    let r = Repo::new();
    let InFlight {
        node,
        log: path,
        file,
        unclaimed,
        claimed,
    } = in_flight(&r);

    let mut follower = Follower::start(&r, &["logs", &node, "-f"]);
    follower.printed_soon("start\n");
    // Half of it, written in place. Each poll reads the bead, then the log: once the second
    // line below is printed, a poll has read the bead after the first was, so half written.
    std::fs::write(&file, &claimed[..claimed.len() / 2]).unwrap();
    let mut f = std::fs::File::options().append(true).open(&path).unwrap();
    f.write_all(b"half\n").unwrap();
    follower.printed_soon("half\n");
    f.write_all(b"written\n").unwrap();
    follower.printed_soon("written\n");
    std::fs::write(&file, &claimed).unwrap();
    f.write_all(b"working\n").unwrap();
    follower.printed_soon("working\n");
    replace(&file, &unclaimed);
    let (code, out, err) = follower.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("start\nhalf\nwritten\nworking\n"), "{out}");
}

/// A bead that stays unreadable is refused, naming the file, once it has stayed so for a while.
#[test]
fn follow_refuses_a_bead_that_stays_unreadable() {
    let r = Repo::new();
    let InFlight { node, file, .. } = in_flight(&r);

    let mut follower = Follower::start(&r, &["logs", &node, "-f"]);
    follower.printed_soon("start\n");
    std::fs::write(&file, "{ not a bead").unwrap();
    let (code, out, err) = follower.finish();
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("{node}.json")), "{err}");
    assert!(out.contains("start\n"), "{out}");
}

/// A node whose dispatch is in flight: its log (`start` so far) and its claim, which names the
/// log's run.
struct InFlight {
    node: String,
    log: std::path::PathBuf,
    /// Its bead file, and the bead's text without and with the claim (as written).
    file: std::path::PathBuf,
    unclaimed: String,
    claimed: String,
}

fn in_flight(r: &Repo) -> InFlight {
    let node = r.task("A node", &[]);
    let log = log(
        r,
        NEW_RUN,
        &format!("{node}-generate-spec-1.log"),
        "start\n",
        0,
    );
    let file = r.state().join("beads").join(format!("{node}.json"));
    let unclaimed = std::fs::read_to_string(&file).unwrap();
    let mut b: Value = serde_json::from_str(&unclaimed).unwrap();
    b["pipeline"]["lease"] = json!({"holder": format!("run:host:12:{NEW_RUN}"), "since": "t"});
    b["pipeline"]["attempts"] = json!({"generate-spec": 1});
    let claimed = serde_json::to_string_pretty(&b).unwrap();
    replace(&file, &claimed);
    InFlight {
        node,
        log,
        file,
        unclaimed,
        claimed,
    }
}

/// Replace `file` whole, as the writer does (a temporary file renamed over it): the follower
/// polls the bead while the test edits it, and an edit in place can be read half written.
fn replace(file: &std::path::Path, text: &str) {
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, file).unwrap();
}

#[test]
fn follow_prints_what_is_appended_until_the_dispatch_ends() {
    let r = Repo::new();
    // The node's claim names the log's run: its dispatch is in flight.
    let InFlight {
        node,
        log: path,
        file,
        unclaimed,
        ..
    } = in_flight(&r);

    let mut follower = Follower::start(&r, &["logs", &node, "-f"]);
    follower.printed_soon("start\n");
    let mut f = std::fs::File::options().append(true).open(&path).unwrap();
    f.write_all(b"working\n").unwrap();
    follower.printed_soon("working\n");
    f.write_all(b"finished").unwrap();
    // The dispatch ends: its claim is released, and the rest is printed.
    replace(&file, &unclaimed);
    let (code, out, err) = follower.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("start\nworking\nfinished\n"), "{out}");
}
