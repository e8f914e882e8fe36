//! Issue 16: the derived snapshot cache `.splice/cache/beads`. A read through it must equal a
//! fresh read of the files, byte for byte, whatever happened since it was written: the writer's
//! transitions, bead files edited, added, removed or corrupted by hand, the cache deleted,
//! truncated, corrupted or of another format, the journal's segment closed. Each case compares
//! `splice snapshot` (and `splice list --json`) with the same command under `--no-cache`.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::Repo;

fn cache_file(r: &Repo) -> PathBuf {
    r.state().join("cache").join("beads")
}

fn bead_file(r: &Repo, id: &str) -> PathBuf {
    r.state().join("beads").join(format!("{id}.json"))
}

fn stdout(r: &Repo, args: &[&str]) -> Vec<u8> {
    let out = r.run(args);
    common::no_panic(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "splice {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The cached read and a fresh one agree, for `snapshot` and `list --json`; returns the
/// snapshot.
fn agree(r: &Repo, when: &str) -> String {
    for args in [&["snapshot"][..], &["list", "--all", "--json"][..]] {
        let cached = stdout(r, args);
        let again = stdout(r, args);
        let mut fresh_args = args.to_vec();
        fresh_args.push("--no-cache");
        let fresh = stdout(r, &fresh_args);
        assert_eq!(
            String::from_utf8_lossy(&cached),
            String::from_utf8_lossy(&fresh),
            "{when}: `splice {args:?}` through the cache differs from a fresh read"
        );
        assert_eq!(cached, again, "{when}: a second cached read differs");
    }
    String::from_utf8(stdout(r, &["snapshot"])).unwrap()
}

/// Set a file's mtime.
fn set_mtime(path: &Path, at: SystemTime) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(at).unwrap();
}

/// How long after a file's last change the cache trusts its stamp (`RACY_NS` in
/// `src/store/cache/mod.rs`), and a little more.
const WINDOW: Duration = Duration::from_millis(2_100);

/// Date every bead file an hour back, and wait until each one's last change (its ctime, which
/// setting the mtime moved to now) is older than the cache's window: a file changed within it
/// is always read from disk (its stamp could not tell a later edit in the same tick), so
/// without this the cache would never be used for these fresh files. The wait is bounded: the
/// files' change times are now.
fn age(r: &Repo) {
    use std::os::unix::fs::MetadataExt;
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let mut newest = 0;
    for entry in std::fs::read_dir(r.state().join("beads")).unwrap() {
        let path = entry.unwrap().path();
        set_mtime(&path, hour_ago);
        newest = newest.max(std::fs::symlink_metadata(&path).unwrap().ctime());
    }
    let newest = SystemTime::UNIX_EPOCH + Duration::from_secs(newest.max(0) as u64 + 1);
    if let Ok(left) = (newest + WINDOW).duration_since(SystemTime::now()) {
        std::thread::sleep(left);
    }
}

/// A campaign root and three tasks, aged, and the cache written by a read.
fn store() -> (Repo, Vec<String>) {
    let r = Repo::new();
    let mut ids = vec![r.init(&[])];
    for t in ["one", "two", "three"] {
        ids.push(r.task(t, &[]));
    }
    age(&r);
    agree(&r, "a fresh store");
    assert!(cache_file(&r).is_file(), "a read writes the cache");
    (r, ids)
}

/// Replace `from` by `to` in a bead file, keeping its size, inode and (unless `mtime`) its
/// mtime.
fn edit_in_place(path: &Path, from: &str, to: &str, mtime: Option<SystemTime>) {
    assert_eq!(from.len(), to.len());
    let before = std::fs::metadata(path).unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{text}");
    let text = text.replacen(from, to, 1);
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        .unwrap();
    set_mtime(path, mtime.unwrap_or_else(|| before.modified().unwrap()));
}

#[test]
fn the_writers_changes_are_seen() {
    let (r, ids) = store();
    r.ok(&[
        "transition",
        "set-autonomy",
        "--bead",
        &ids[1],
        "--autonomy",
        "wave",
    ]);
    let snap = agree(&r, "after set-autonomy");
    assert!(snap.contains("\"wave\""), "{snap}");
    r.task("four", &[]);
    age(&r);
    agree(&r, "after init-task, files aged");
    r.ok(&["close", &ids[2], "--reason", "done elsewhere"]);
    agree(&r, "after close");
}

#[test]
fn hand_edits_additions_removals_and_corruption_are_seen() {
    let (r, ids) = store();
    // The same size, a different (old) mtime.
    let path = bead_file(&r, &ids[1]);
    edit_in_place(
        &path,
        "\"one\"",
        "\"ONE\"",
        Some(SystemTime::now() - Duration::from_secs(7200)),
    );
    assert!(agree(&r, "same-size edit").contains("\"ONE\""));
    // A bead added by hand (a copy with its id changed), aged like the rest.
    let text = std::fs::read_to_string(bead_file(&r, &ids[2])).unwrap();
    let copy = text.replace(&ids[2], "zz-hand");
    std::fs::write(bead_file(&r, "zz-hand"), copy).unwrap();
    age(&r);
    assert!(agree(&r, "bead added").contains("zz-hand"));
    // Removed.
    std::fs::remove_file(bead_file(&r, &ids[3])).unwrap();
    assert!(!agree(&r, "bead removed").contains(&format!("\"{}\"", ids[3])));
    // Corrupted: both reads report it unreadable, the same way.
    std::fs::write(bead_file(&r, "zz-hand"), "{ not json").unwrap();
    age(&r);
    let snap = agree(&r, "bead corrupted");
    assert!(
        snap.contains("\"unreadable\"") && snap.contains("zz-hand"),
        "{snap}"
    );
    // A file whose name is not an id.
    std::fs::write(r.state().join("beads").join("bad name.json"), "{}").unwrap();
    agree(&r, "a file named with a space");
}

#[test]
fn a_damaged_cache_is_not_used_and_is_rebuilt() {
    let (r, ids) = store();
    let good = std::fs::read(cache_file(&r)).unwrap();
    // Make the files differ from the cache, so a cache wrongly used would show.
    r.ok(&[
        "transition",
        "set-autonomy",
        "--bead",
        &ids[1],
        "--autonomy",
        "wave",
    ]);
    age(&r);
    let damages: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() / 2].to_vec()),
        ("empty", Vec::new()),
        ("an index byte flipped", {
            let mut b = good.clone();
            let at = b.len() - 10;
            b[at] ^= 0x20;
            b
        }),
        (
            "another format",
            String::from_utf8(good.clone())
                .unwrap()
                .replacen("splice-cache 3 ", "splice-cache 999 ", 1)
                .into_bytes(),
        ),
        ("garbage", b"not a cache\n\x00\x01".to_vec()),
    ];
    for (how, bytes) in damages {
        std::fs::write(cache_file(&r), &bytes).unwrap();
        let snap = agree(&r, how);
        assert!(snap.contains("\"wave\""), "{how}: {snap}");
        let rebuilt = std::fs::read(cache_file(&r)).unwrap();
        assert!(
            rebuilt.starts_with(b"splice-cache 3 "),
            "{how}: the cache was rebuilt"
        );
    }
    std::fs::remove_file(cache_file(&r)).unwrap();
    agree(&r, "cache deleted");
    assert!(cache_file(&r).is_file(), "a deleted cache is rebuilt");
}

#[test]
fn a_bead_whose_cached_json_is_damaged_is_read_from_its_file() {
    let (r, ids) = store();
    let good = std::fs::read(cache_file(&r)).unwrap();
    // The title of one bead, inside its JSON in the body: still valid JSON and a valid bead
    // once changed, so only its checksum can tell.
    let text = String::from_utf8(good.clone()).unwrap();
    let title = text
        .find("\"title\":\"two")
        .expect("the task's title is cached")
        + 10;
    let mut damaged = good;
    damaged[title] = b'T';
    std::fs::write(cache_file(&r), &damaged).unwrap();
    let snap = agree(&r, "a bead's cached JSON damaged");
    assert!(snap.contains("\"title\":\"two"), "{snap}");
    assert!(
        !snap.contains("Two"),
        "the damaged JSON was never used: {snap}"
    );
    let rewritten = std::fs::read(cache_file(&r)).unwrap();
    assert!(
        !String::from_utf8_lossy(&rewritten).contains("Two"),
        "a small store's cache is rewritten from the file: {}",
        ids[2]
    );
}

#[test]
fn a_closed_journal_segment_rebuilds_the_cache() {
    let r = Repo::new();
    r.write(".splice/config.toml", "[journal]\nsegment_bytes = 65536\n");
    let id = r.task("T", &[]);
    let other = r.task("U", &[]);
    age(&r);
    agree(&r, "before churn");
    // Until the writer closes the live segment (a record is a few hundred bytes).
    let closed = r.state().join("journal").join("000001.jsonl");
    for i in 0..5_000 {
        let level = if i % 2 == 0 { "wave" } else { "hitl" };
        r.ok(&[
            "transition",
            "set-autonomy",
            "--bead",
            &id,
            "--autonomy",
            level,
        ]);
        if i % 35 == 0 {
            age(&r);
            agree(&r, &format!("churn {i}"));
        }
        if closed.is_file() {
            break;
        }
    }
    // One write more: the next generation's live segment.
    r.ok(&[
        "transition",
        "set-autonomy",
        "--bead",
        &id,
        "--autonomy",
        "deep",
    ]);
    assert!(
        r.state().join("journal").join("000001.jsonl").is_file(),
        "the live segment was closed"
    );
    // A hand edit hidden from stat (size, inode and mtime kept) after the close: the new
    // generation makes the read ignore the old cache.
    age(&r);
    agree(&r, "after the close");
    edit_in_place(&bead_file(&r, &other), "\"U\"", "\"V\"", None);
    std::fs::rename(
        r.state().join("journal.jsonl"),
        r.state().join("journal").join("000002.jsonl"),
    )
    .unwrap();
    assert!(agree(&r, "a second closed segment").contains("\"V\""));
}

#[test]
fn an_edit_that_restores_the_mtime_is_seen_and_rebuild_writes_the_cache() {
    let (r, ids) = store();
    // Size, inode and mtime kept: the inode's change time still moved.
    edit_in_place(&bead_file(&r, &ids[1]), "\"one\"", "\"ONE\"", None);
    assert!(agree(&r, "an edit restoring its mtime").contains("\"ONE\""));
    std::fs::remove_file(cache_file(&r)).unwrap();
    let rebuilt = r.ok(&["cache", "rebuild", "--json"]);
    assert_eq!(rebuilt["schema_version"], 1);
    assert_eq!(rebuilt["beads"], 4);
    assert_eq!(rebuilt["path"], ".splice/cache/beads");
    assert!(cache_file(&r).is_file());
    let text = String::from_utf8(stdout(&r, &["cache", "rebuild"])).unwrap();
    assert!(text.starts_with("cache rebuilt: 4 beads"), "{text}");
    agree(&r, "after cache rebuild");
}

#[test]
fn the_cache_is_never_committed_and_a_failure_to_write_it_is_no_error() {
    let (r, _) = store();
    // A repository whose .splice/.gitignore predates the cache.
    let ignore = r.state().join(".gitignore");
    let old = std::fs::read_to_string(&ignore)
        .unwrap()
        .replace("cache/\n", "");
    std::fs::write(&ignore, old).unwrap();
    r.git(&["add", "-A"]);
    let staged = r.git(&["diff", "--cached", "--name-only"]);
    assert!(!staged.contains("cache"), "{staged}");
    // `.splice/cache` cannot be a directory: reads still answer, as fresh reads.
    std::fs::remove_dir_all(r.state().join("cache")).unwrap();
    std::fs::write(r.state().join("cache"), "in the way").unwrap();
    agree(&r, "cache unwritable");
    r.fails(2, &["cache", "rebuild"]);
}

#[test]
fn a_directory_in_place_of_the_cache_file_is_named_not_the_temporary_file() {
    // `cache rebuild` named `cache/.beads.<pid>.0.tmp: Is a directory`, a file the user never
    // made, and left that temporary file behind.
    let (r, _) = store();
    std::fs::remove_file(cache_file(&r)).unwrap();
    std::fs::create_dir(cache_file(&r)).unwrap();
    let err = r.fails(2, &["cache", "rebuild"]);
    assert_eq!(
        err.trim(),
        format!(
            "splice: {}: is a directory, not a file",
            cache_file(&r).display()
        )
    );
    let left: Vec<_> = std::fs::read_dir(r.state().join("cache"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    agree(&r, "a directory in place of the cache file");
}

#[test]
fn a_link_in_place_of_the_cache_is_never_written_through() {
    let (r, _) = store();
    // `.splice/cache` committed (or planted) as a link to a directory outside the repository,
    // and a dangling link in place of its .gitignore.
    let outside = tempfile::tempdir().unwrap();
    std::fs::remove_dir_all(r.state().join("cache")).unwrap();
    std::os::unix::fs::symlink(outside.path(), r.state().join("cache")).unwrap();
    agree(&r, "cache is a link");
    let err = r.fails(2, &["cache", "rebuild"]);
    assert!(err.contains("not a directory"), "{err}");
    let written: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
    assert!(written.is_empty(), "written through the link: {written:?}");

    std::fs::remove_file(r.state().join("cache")).unwrap();
    std::fs::create_dir(r.state().join("cache")).unwrap();
    let target = outside.path().join("planted");
    std::os::unix::fs::symlink(&target, r.state().join("cache/.gitignore")).unwrap();
    agree(&r, "a dangling link as the cache's .gitignore");
    assert!(
        !target.exists(),
        "the .gitignore was written through a link"
    );
}

/// `splice status --json`'s title of node `id`.
fn status_title(r: &Repo, id: &str) -> String {
    let status = r.ok(&["status", "--json"]);
    let node = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("{id} in {status}"));
    node["title"].as_str().unwrap().to_string()
}

#[test]
fn a_same_size_edit_keeping_the_mtime_is_seen_by_status_and_snapshot_however_soon() {
    // Issue 38, "the cache exact or gone": an edit in place that keeps the file's size, inode
    // and mtime, made right after a read (within the timestamp tick a stamp could not tell
    // apart), again right after that, and once more after the cache trusts the file again.
    let (r, ids) = store();
    let path = bead_file(&r, &ids[1]);
    for (from, to) in [("\"one\"", "\"ONE\""), ("\"ONE\"", "\"0NE\"")] {
        edit_in_place(&path, from, to, None);
        let want = to.trim_matches('"');
        assert_eq!(
            status_title(&r, &ids[1]),
            want,
            "status after {from} → {to}"
        );
        let snap = agree(&r, &format!("right after {from} → {to}"));
        assert!(snap.contains(&format!("\"title\":{to}")), "{snap}");
    }
    // Past the window the cache trusts the file's stamp again; the edit moves its ctime.
    age(&r);
    agree(&r, "the cache warm again");
    edit_in_place(&path, "\"0NE\"", "\"one\"", None);
    assert_eq!(status_title(&r, &ids[1]), "one");
    assert!(agree(&r, "an edit after the window").contains("\"title\":\"one\""));
}
