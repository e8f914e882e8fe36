//! State files written by someone hostile (bead files and the journal are committed to git):
//! nothing in them becomes a write path, a bad file or record locks no writer out, links are
//! never followed, and `seq` never goes backwards. Each refusal names the file and writes nothing.

mod common;

use std::path::Path;

use common::Repo;
use serde_json::Value;

fn bead_path(r: &Repo, id: &str) -> std::path::PathBuf {
    r.state().join("beads").join(format!("{id}.json"))
}

/// Rewrite a bead file by hand.
fn edit_bead(r: &Repo, id: &str, edit: impl FnOnce(&mut Value)) {
    let mut v = r.bead(id);
    edit(&mut v);
    let mut text = serde_json::to_string_pretty(&v).unwrap();
    text.push('\n');
    std::fs::write(bead_path(r, id), text).unwrap();
}

fn journal_lines(r: &Repo) -> Vec<Value> {
    r.journal()
        .lines()
        .map(|l| serde_json::from_str(l).expect("journal line parses"))
        .collect()
}

/// Append a record for `id` (copied from its `init-task` record) with no commit marker, as a
/// crash after the journal write would leave it; `edit` makes it hostile.
fn append_uncommitted(r: &Repo, id: &str, edit: impl FnOnce(&mut Value)) {
    let path = r.state().join("journal.jsonl");
    let len = std::fs::metadata(&path).unwrap().len();
    let mut record = journal_lines(r)
        .into_iter()
        .find(|v| v["verb"] == "init-task" && v["beads"][0]["id"] == id)
        .expect("the bead's init-task record");
    let seq = r.bead(id)["pipeline"]["seq"].as_u64().unwrap();
    record["tx"] = len.into();
    record["verb"] = "park".into();
    record["beads"][0]["pipeline"]["seq"] = (seq + 1).into();
    record["changes"][0]["seq"] = (seq + 1).into();
    edit(&mut record);
    let mut text = r.journal();
    text.push_str(&serde_json::to_string(&record).unwrap());
    text.push('\n');
    std::fs::write(&path, text).unwrap();
}

#[must_use]
fn park(r: &Repo, id: &str) -> std::process::Output {
    r.run(&["transition", "park", "--bead", id, "--reason", "r"])
}

fn assert_ok(out: &std::process::Output) {
    common::no_panic(out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_bead_file_whose_id_is_a_path_is_refused_and_writes_nothing() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let victim = r.path().join("victim");
    edit_bead(&r, &id, |v| {
        v["id"] = victim.to_string_lossy().as_ref().into()
    });
    let (beads, journal) = (r.beads_bytes(), r.journal());
    let err = r.fails(2, &["transition", "park", "--bead", &id, "--reason", "r"]);
    assert!(err.contains(&format!("{id}.json")), "{err}");
    assert!(err.contains("\"id\""), "names the field: {err}");
    assert!(!victim.with_extension("json").exists(), "no file outside");
    assert_eq!((r.beads_bytes(), r.journal()), (beads, journal));
}

#[test]
fn an_uncommitted_record_naming_a_path_is_not_replayed() {
    let r = Repo::new();
    let a = r.task("A", &[]);
    let b = r.task("B", &[]);
    let victim = r.path().join("victim");
    let victim_id = victim.to_string_lossy().into_owned();
    append_uncommitted(&r, &a, |rec| {
        rec["beads"][0]["id"] = victim_id.as_str().into();
        rec["changes"][0]["bead"] = victim_id.as_str().into();
    });
    let a_before = std::fs::read(bead_path(&r, &a)).unwrap();
    let out = park(&r, &b);
    assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not applied") && err.contains("not a bead id"),
        "{err}"
    );
    assert!(!victim.with_extension("json").exists(), "no file outside");
    assert_eq!(std::fs::read(bead_path(&r, &a)).unwrap(), a_before);
    assert!(r.bead(&b)["pipeline"]["dead_letter"].is_object());
}

#[test]
fn an_overlong_or_nested_id_faults_before_the_journal_and_locks_nobody_out() {
    for bad in ["a".repeat(300), "missing/x".to_string()] {
        let r = Repo::new();
        let id = r.task("T", &[]);
        let other = r.task("O", &[]);
        let original = std::fs::read(bead_path(&r, &id)).unwrap();
        edit_bead(&r, &id, |v| v["id"] = bad.as_str().into());
        let journal = r.journal();
        let err = r.fails(2, &["transition", "park", "--bead", &id, "--reason", "r"]);
        assert!(err.contains(&format!("{id}.json")), "{err}");
        assert_eq!(r.journal(), journal, "nothing journaled");
        assert_ok(&park(&r, &other));
        std::fs::write(bead_path(&r, &id), original).unwrap();
        assert_ok(&park(&r, &id));
    }
}

#[test]
fn an_uncommitted_record_with_an_overlong_id_locks_nobody_out() {
    let r = Repo::new();
    let a = r.task("A", &[]);
    let long = "a".repeat(300);
    append_uncommitted(&r, &a, |rec| {
        rec["beads"][0]["id"] = long.as_str().into();
        rec["changes"][0]["bead"] = long.as_str().into();
    });
    let out = park(&r, &a);
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not applied"));
    // Reported once: the record is marked void, so the next write finds a clean journal.
    let next = r.run(&["transition", "unpark", "--bead", &a, "--reason", "r"]);
    assert_ok(&next);
    assert!(!String::from_utf8_lossy(&next.stderr).contains("recovered"));
}

#[test]
fn a_symlinked_temp_file_is_not_followed() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let victim = r.path().join("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    let tmp = r.state().join("beads").join(format!(".{id}.json.tmp"));
    std::os::unix::fs::symlink(&victim, &tmp).unwrap();
    r.ok(&[
        "transition",
        "set-autonomy",
        "--bead",
        &id,
        "--autonomy",
        "wave",
    ]);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let meta = std::fs::symlink_metadata(bead_path(&r, &id)).unwrap();
    assert!(meta.file_type().is_file(), "the bead file is a plain file");
    assert_eq!(r.bead(&id)["pipeline"]["autonomy"], "wave");
}

#[test]
fn a_symlinked_bead_file_or_journal_is_refused_not_followed() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let victim = r.path().join("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    // The journal: appending would write JSON into whatever it points at.
    let journal = r.state().join("journal.jsonl");
    std::fs::remove_file(&journal).unwrap();
    std::os::unix::fs::symlink(&victim, &journal).unwrap();
    let err = r.fails(2, &["transition", "park", "--bead", &id, "--reason", "r"]);
    assert!(
        err.contains("journal.jsonl") && err.contains("link"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    std::fs::remove_file(&journal).unwrap();
    // A bead file: reading through a link could read anything (a device, another repository).
    let path = bead_path(&r, &id);
    std::fs::rename(&path, r.path().join("moved.json")).unwrap();
    std::os::unix::fs::symlink(r.path().join("moved.json"), &path).unwrap();
    let err = r.fails(2, &["transition", "park", "--bead", &id, "--reason", "r"]);
    assert!(
        err.contains(&format!("{id}.json")) && err.contains("link"),
        "{err}"
    );
    assert!(!journal.exists(), "nothing journaled");
}

/// A directory of the state that is a link (committed, or made by hand) would carry every write
/// into it wherever it points: each is refused, naming it, and nothing is written there.
#[test]
fn a_symlinked_state_directory_is_refused_not_followed() {
    // (A link in place of `cache/` is read past, never written through: `snapshot_cache.rs`.)
    for dir in [".", "beads", "journal", "runs", "worktrees"] {
        let r = Repo::new();
        r.task("T", &[]);
        let outside = r.path().join("outside");
        let linked = if dir == "." {
            r.state()
        } else {
            r.state().join(dir)
        };
        if linked.exists() {
            std::fs::rename(&linked, &outside).unwrap();
        } else {
            std::fs::create_dir(&outside).unwrap();
        }
        std::os::unix::fs::symlink(&outside, &linked).unwrap();
        let listing = |d: &Path| {
            let mut names: Vec<_> = walk(d);
            names.sort();
            names
        };
        let before = listing(&outside);
        for args in [&["create", "x"][..], &["status"], &["list"]] {
            let err = r.fails(2, args);
            let name = linked.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                err.contains(&name) && err.contains("link"),
                "{dir} {args:?}: {err}"
            );
        }
        assert_eq!(
            listing(&outside),
            before,
            "{dir}: nothing written through the link"
        );
    }
}

/// Every file under `d`, relative to it.
fn walk(d: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(
                walk(&p)
                    .into_iter()
                    .map(|n| format!("{}/{n}", e.file_name().to_string_lossy())),
            );
        } else {
            out.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    out
}

#[test]
fn a_replayed_old_record_is_reported_and_not_applied() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    for level in ["wave", "deep", "hitl", "wave"] {
        r.ok(&[
            "transition",
            "set-autonomy",
            "--bead",
            &id,
            "--autonomy",
            level,
        ]);
    }
    assert_eq!(r.bead(&id)["pipeline"]["seq"], 5);
    // `head -1 journal.jsonl >> journal.jsonl`
    let path = r.state().join("journal.jsonl");
    let first = r.journal().lines().next().unwrap().to_string();
    let offset = std::fs::metadata(&path).unwrap().len();
    let mut text = r.journal();
    text.push_str(&first);
    text.push('\n');
    std::fs::write(&path, text).unwrap();
    let out = r.run(&[
        "transition",
        "set-autonomy",
        "--bead",
        &id,
        "--autonomy",
        "deep",
    ]);
    assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("byte {offset}")) && err.contains("not applied"),
        "names the record: {err}"
    );
    assert!(err.contains("init-task"), "names its verb: {err}");
    let bead = r.bead(&id);
    assert_eq!(bead["pipeline"]["seq"], 6, "seq never goes backwards");
    assert_eq!(bead["pipeline"]["autonomy"], "deep");
}

#[test]
fn an_uncommitted_record_whose_seq_skips_is_not_applied() {
    let r = Repo::new();
    let a = r.task("A", &[]);
    append_uncommitted(&r, &a, |rec| {
        rec["beads"][0]["pipeline"]["seq"] = 7.into();
        rec["changes"][0]["seq"] = 7.into();
        rec["beads"][0]["title"] = "replayed".into();
    });
    let out = park(&r, &a);
    assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("seq 7") && err.contains("not applied"),
        "{err}"
    );
    let bead = r.bead(&a);
    assert_eq!(bead["title"], "A");
    assert_eq!(bead["pipeline"]["seq"], 2);
}

#[test]
fn a_genuine_interrupted_record_still_rolls_forward() {
    // The checks must not reject what a crash really leaves: the record before any rename.
    let r = Repo::new();
    let a = r.task("A", &[]);
    append_uncommitted(&r, &a, |rec| rec["beads"][0]["title"] = "rolled".into());
    let out = r.run(&["transition", "claim", "--bead", &a, "--holder", "h"]);
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("rolled forward"));
    let bead = r.bead(&a);
    assert_eq!(
        (bead["title"].as_str(), bead["pipeline"]["seq"].as_u64()),
        (Some("rolled"), Some(3))
    );
}

#[test]
fn a_seq_at_its_maximum_is_a_fault_and_never_wraps() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    edit_bead(&r, &id, |v| v["pipeline"]["seq"] = u64::MAX.into());
    let (beads, journal) = (r.beads_bytes(), r.journal());
    let err = r.fails(2, &["transition", "park", "--bead", &id, "--reason", "r"]);
    assert!(err.contains(&id) && err.contains("seq"), "{err}");
    assert_eq!((r.beads_bytes(), r.journal()), (beads, journal));
}

#[test]
fn a_state_file_that_is_not_regular_is_refused_without_blocking() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let path = bead_path(&r, &id);
    std::fs::remove_file(&path).unwrap();
    mkfifo(&path);
    let out = within(
        &r,
        20,
        &["transition", "park", "--bead", &id, "--reason", "r"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{id}.json")) && err.contains("not a regular file"),
        "{err}"
    );
}

/// Run splice, failing the test (and killing it) if it does not end within `secs`.
#[must_use]
fn within(r: &Repo, secs: u64, args: &[&str]) -> std::process::Output {
    let mut child = r
        .cmd(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("splice {args:?} blocked for more than {secs}s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    common::no_panic(&out);
    out
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}
