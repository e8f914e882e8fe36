//! The cache's own checks: that a warm cache is used, and what makes a bead read from its file.

use super::text::compact;
use super::*;
use crate::model::Bead;
use crate::store::journal::{Record, StepChange};

fn aged_store(ids: &[&str]) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let beads = dir.path().join(".splice/beads");
    fs::create_dir_all(&beads).unwrap();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for id in ids {
        let bead = Bead::new(
            (*id).into(),
            format!("{id} title"),
            String::new(),
            "2026-01-01T00:00:00Z",
        );
        let path = beads.join(format!("{id}.json"));
        fs::write(&path, bead.to_file_bytes()).unwrap();
        touch(&path, hour_ago);
    }
    let store = Store::at(dir.path().join(".splice"));
    (dir, store)
}

fn touch(path: &Path, at: std::time::SystemTime) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(at)
        .unwrap();
}

/// A time past the racy window of files changed now: a read begun then may trust their stamps
/// (the files' ctimes are now, whatever their mtimes say).
fn later() -> i64 {
    now_ns() + RACY_NS + 1_000_000_000
}

/// A read through the cache begun [`later`].
fn read(store: &Store) -> Through {
    store.read_through_at(true, later()).unwrap()
}

fn same(a: &Scan, b: &Scan) {
    let json = |s: &Scan| serde_json::to_string(&s.beads).unwrap();
    assert_eq!(json(a), json(b));
    assert_eq!(a.unreadable.len(), b.unreadable.len());
}

#[test]
fn a_warm_cache_reads_no_bead_file_and_a_changed_stat_reads_that_one() {
    let (_dir, store) = aged_store(&["sp-a", "sp-b", "sp-c"]);
    let first = read(&store);
    assert_eq!(first.from_files, 3);
    assert!(first.written.is_some_and(|w| w.is_ok()));
    let warm = read(&store);
    assert_eq!(warm.from_files, 0, "every bead came from the cache");
    assert!(
        warm.written.is_none(),
        "nothing changed: the cache is not rewritten"
    );
    same(&warm.scan, &store.scan().unwrap());
    touch(
        &store.bead_path("sp-b"),
        std::time::SystemTime::now() - std::time::Duration::from_secs(60),
    );
    let after = read(&store);
    assert_eq!(after.from_files, 1);
    same(&after.scan, &store.scan().unwrap());
}

#[test]
fn a_bead_the_journal_names_since_the_stamp_is_read_from_its_file() {
    let (_dir, store) = aged_store(&["sp-a", "sp-b"]);
    read(&store);
    let bead = store.read_bead("sp-b").unwrap();
    let mut record = Record {
        tx: 0,
        id: 1,
        verb: "set-autonomy".into(),
        actor: "person".into(),
        reason: None,
        at: "2026-01-01T00:00:00Z".into(),
        changes: vec![StepChange {
            bead: "sp-b".into(),
            from: None,
            to: "x".into(),
            seq: 1,
        }],
        beads: vec![bead],
        patches: Vec::new(),
    };
    let live = store.journal_path();
    let tx = journal::append_record(&live, &mut record).unwrap();
    journal::append_marker(&live, tx, 1).unwrap();
    let read = read(&store);
    assert_eq!(
        read.from_files, 1,
        "sp-b's stat is unchanged, but the journal names it"
    );
}

#[test]
fn compact_keeps_strings_whole() {
    let json = br#"{ "a" : "x \" y\\", "b" :	[1, 2 ] }"#;
    assert_eq!(compact(json), br#"{"a":"x \" y\\","b":[1,2]}"#.to_vec());
}

#[test]
fn checksum_sees_one_byte() {
    assert_ne!(checksum(b"abcdefgh12"), checksum(b"abcdefgh13"));
    assert_ne!(checksum(b"abcdefgh"), checksum(b"abcdefgi"));
}

#[test]
fn a_write_removes_the_temporary_files_a_crashed_write_left_and_no_others() {
    let (_dir, store) = aged_store(&["sp-a"]);
    let cache = store.cache_dir();
    fs::create_dir_all(&cache).unwrap();
    // A process that has exited: its pid names no running writer.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let now = std::time::SystemTime::now();
    let old = now - std::time::Duration::from_secs(120);
    let file = |name: String, at| {
        let path = cache.join(name);
        fs::write(&path, b"half a cache").unwrap();
        touch(&path, at);
        path
    };
    let crashed = file(format!(".beads.{dead}.0.tmp"), old);
    let recent = file(format!(".beads.{dead}.1.tmp"), now);
    let live = file(format!(".beads.{}.99.tmp", std::process::id()), old);
    let other = file(".beads.notes".into(), old);
    store.rebuild_cache_at(later()).unwrap();
    assert!(
        !crashed.exists(),
        "an old temporary file of a dead writer is removed"
    );
    assert!(recent.exists(), "a recent one may be a write under way");
    assert!(live.exists(), "a running writer's is never removed");
    assert!(
        other.exists(),
        "a file that is not a temporary file is not splice's to remove"
    );
    same(&read(&store).scan, &store.scan().unwrap());
}

#[test]
fn the_checksum_fed_in_pieces_is_the_checksum_of_the_whole() {
    let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
    for cut in [0, 1, 7, 8, 9, 500, 999, 1000] {
        let mut sum = text::Sum::new(bytes.len() as u64);
        sum.update(&bytes[..cut]);
        sum.update(&[]);
        sum.update(&bytes[cut..]);
        assert_eq!(sum.finish(), checksum(&bytes), "cut at {cut}");
    }
}

#[test]
fn a_read_over_several_blocks_of_the_cache_equals_the_files() {
    // Blocks read on several threads, each its cached JSON in one piece.
    const LAST: usize = 8 * crate::store::par::BLOCK;
    let names: Vec<String> = (0..LAST + 300).map(|i| format!("sp-w.{i}")).collect();
    let ids: Vec<&str> = names.iter().map(String::as_str).collect();
    let (_dir, store) = aged_store(&ids);
    assert_eq!(read(&store).from_files, ids.len());
    let warm = read(&store);
    assert_eq!(warm.from_files, 0);
    same(&warm.scan, &store.scan().unwrap());
    // One file changed in the last block, one gone in the first (the files are read in id
    // order): each read as the files are.
    let mut in_order = names.clone();
    in_order.sort();
    let changed = store.bead_path(&in_order[LAST + 10]);
    let mut bead = store.read_bead(&in_order[LAST + 10]).unwrap();
    bead.title = "changed".into();
    fs::write(&changed, bead.to_file_bytes()).unwrap();
    touch(
        &changed,
        std::time::SystemTime::now() - std::time::Duration::from_secs(60),
    );
    fs::remove_file(store.bead_path(&in_order[5])).unwrap();
    let after = read(&store);
    assert_eq!(after.from_files, 1);
    same(&after.scan, &store.scan().unwrap());
    assert_eq!(after.scan.beads.len(), ids.len() - 1);
}

#[test]
fn a_rewrite_from_the_old_cache_writes_what_a_rebuild_from_the_files_writes() {
    // The body is streamed: entries copied from the old cache's file, changed beads from their
    // files, the header written last. Byte for byte what reading every file writes.
    let (_dir, store) = aged_store(&["sp-a", "sp-b", "sp-c", "sp-d"]);
    read(&store);
    let mut bead: Bead =
        serde_json::from_slice(&fs::read(store.bead_path("sp-c")).unwrap()).unwrap();
    bead.title = "changed by hand, a longer title than before".into();
    fs::write(store.bead_path("sp-c"), bead.to_file_bytes()).unwrap();
    touch(
        &store.bead_path("sp-c"),
        std::time::SystemTime::now() - std::time::Duration::from_secs(60),
    );
    fs::remove_file(store.bead_path("sp-a")).unwrap();
    let rewrite = read(&store);
    assert_eq!(rewrite.from_files, 1, "only the changed file was read");
    let written = rewrite
        .written
        .expect("a change under 1,000 beads rewrites")
        .unwrap();
    assert_eq!(written.beads, 3);
    let from_old = fs::read(store.cache_path()).unwrap();
    assert_eq!(from_old.len() as u64, written.bytes);
    let rebuilt = store.rebuild_cache_at(later()).unwrap();
    assert_eq!(fs::read(store.cache_path()).unwrap(), from_old);
    assert_eq!(rebuilt.bytes, written.bytes);
    let text = String::from_utf8(from_old).unwrap();
    assert!(text.contains("changed by hand") && !text.contains("\"sp-a\""));
    let warm = read(&store);
    assert_eq!(warm.from_files, 0, "the rewritten cache is used");
    same(&warm.scan, &store.scan().unwrap());
}

#[test]
fn an_index_naming_a_length_past_any_file_is_refused_not_trusted() {
    // The index's checksum is no secret: a hostile cache can carry a valid one. A length whose
    // end overflows must make the cache unusable, never panic.
    let (_dir, store) = aged_store(&["sp-a", "sp-b"]);
    store.rebuild_cache_at(later()).unwrap();
    let text = String::from_utf8(fs::read(store.cache_path()).unwrap()).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let words: Vec<&str> = header.split(' ').collect();
    let body_len: usize = words[5].parse().unwrap();
    let (body, index) = rest.split_at(body_len);
    for len in [u64::MAX.to_string(), (u64::MAX - 1).to_string()] {
        let mut lines: Vec<String> = index.lines().map(str::to_string).collect();
        let mut fields: Vec<&str> = lines[0].split('\t').collect();
        fields[5] = &len;
        lines[0] = fields.join("\t");
        let index = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
        let mut head = words.clone();
        let (index_len, sum) = (index.len().to_string(), checksum(index.as_bytes()));
        head[6] = &index_len;
        head[7] = &sum;
        fs::write(
            store.cache_path(),
            format!("{}\n{body}{index}", head.join(" ")),
        )
        .unwrap();
        let read = read(&store);
        assert_eq!(read.from_files, 2, "length {len}: the cache is not used");
        same(&read.scan, &store.scan().unwrap());
    }
}

#[test]
fn the_stamps_read_again_are_the_stamps_loaded_and_a_changed_index_gives_none() {
    // A read drops the stamps before it parses; a rewrite reads them again from the index,
    // which must still pass its checksum.
    let (_dir, store) = aged_store(&["sp-a", "sp-b", "sp-c"]);
    store.rebuild_cache_at(later()).unwrap();
    let mut loaded = load::load(&store.cache_path()).unwrap();
    let stamps = loaded.take_stamps();
    assert_eq!(stamps.len(), 3);
    assert!(loaded.stamps.is_empty(), "taken out");
    assert_eq!(loaded.stamps_again(), Some(stamps));
    // Changed in place under the open file (splice never does: it renames a new one over it).
    use std::os::unix::fs::FileExt;
    let file = fs::OpenOptions::new()
        .write(true)
        .open(store.cache_path())
        .unwrap();
    let text = fs::read(store.cache_path()).unwrap();
    let last = text.len() - 2; // the last digit of the last entry's checksum
    let other = if text[last] == b'0' { b"1" } else { b"0" };
    file.write_all_at(other, last as u64).unwrap();
    assert_eq!(loaded.stamps_again(), None);
}

#[test]
fn a_file_changed_within_the_window_is_never_trusted_whatever_its_mtime() {
    // The files' mtimes are an hour back, but they were written (their ctime) just now: a read
    // now cannot trust their stamps, and stamps them to match nothing.
    let (_dir, store) = aged_store(&["sp-a", "sp-b"]);
    let now = store.read_through(true).unwrap();
    assert_eq!(now.from_files, 2);
    let stamps = load::load(&store.cache_path()).unwrap().take_stamps();
    assert_eq!(stamps, vec![NEVER, NEVER], "stamped to match nothing");
    assert_eq!(
        store.read_through(true).unwrap().from_files,
        2,
        "read from the files again while within the window"
    );
    // Past the window, the stamps are taken, and trusted by the read after.
    assert_eq!(read(&store).from_files, 2);
    assert_eq!(read(&store).from_files, 0);
}

/// Give the cache's entry for `id` its file's present stat, the index's and the header's
/// checksums made good: what the cache would hold had an edit of the file kept every number of
/// its stamp (an edit in the same timestamp tick as the read that stamped it).
fn stamp_as_now(store: &Store, id: &str) {
    let text = String::from_utf8(fs::read(store.cache_path()).unwrap()).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let mut words: Vec<String> = header.split(' ').map(str::to_string).collect();
    let body_len: usize = words[5].parse().unwrap();
    let (body, index) = rest.split_at(body_len);
    let meta = fs::symlink_metadata(store.bead_path(id)).unwrap();
    let s = Stamp::of(&meta);
    let index: String = index
        .lines()
        .map(|line| {
            let mut fields: Vec<String> = line.split('\t').map(str::to_string).collect();
            if fields[0] == id {
                fields[1] = s.size.to_string();
                fields[2] = s.mtime_ns.to_string();
                fields[3] = s.ctime_ns.to_string();
                fields[4] = s.ino.to_string();
            }
            fields.join("\t") + "\n"
        })
        .collect();
    words[6] = index.len().to_string();
    words[7] = checksum(index.as_bytes());
    fs::write(
        store.cache_path(),
        format!("{}\n{body}{index}", words.join(" ")),
    )
    .unwrap();
}

#[test]
fn a_same_size_edit_whose_stamp_collides_within_the_tick_is_still_seen() {
    // A stamp cannot tell two contents apart when an edit keeps its size, inode, mtime (set back)
    // and ctime (the same tick of the kernel's clock). No test can make the kernel give two
    // writes one ctime, so the cache is made to hold the stamp such an edit would keep: the
    // edited file's present stat, over the old JSON.
    let (_dir, store) = aged_store(&["sp-a", "sp-b"]);
    read(&store);
    assert_eq!(read(&store).from_files, 0, "the cache is used");
    let path = store.bead_path("sp-a");
    let old = fs::read_to_string(&path).unwrap();
    let new = old.replacen("sp-a title", "SP-A TITLE", 1);
    assert_eq!(old.len(), new.len());
    let mtime = fs::metadata(&path).unwrap().modified().unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|mut f| f.write_all(new.as_bytes()))
        .unwrap();
    touch(&path, mtime);
    stamp_as_now(&store, "sp-a");
    // Read now, within the window of the edit: its stamp is not trusted, the file is read.
    let through = store.read_through(true).unwrap();
    let title = |t: &Through| {
        t.scan
            .beads
            .iter()
            .find(|b| b.id == "sp-a")
            .map(|b| b.title.to_string())
    };
    assert_eq!(title(&through).as_deref(), Some("SP-A TITLE"));
    same(&through.scan, &store.scan().unwrap());
}
