//! The store: reading a bead file, a transition through the shell on a hostile bead, the
//! journal's tail and committed records, and recovery, each in a sandbox directory whose whole
//! tree is compared before and after.

use std::path::{Path, PathBuf};

use splice::model::Bead;
use splice::model::bead::BEAD_SCHEMA;
use splice::store::journal::{self, Record, Tail};
use splice::store::{Change, Reads, Repair, Store, Transition, ids};

use super::{
    Format, Target, changed, files_in, has_lossy_float, json_then_garbage, normalize, scratch,
    strict, tree,
};

/// The bead every case's file is named for.
pub const ID: &str = "sp-fuzz";
const NOW: &str = "2026-01-01T00:00:00Z";

/// Beads for the corpus: the checked-in files, and every bead of every replay snapshot.
fn bead_seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let dir = super::repo_root().join("snapshots");
    for (name, bytes) in files_in(&dir, |n| n.ends_with(".json") && !n.contains(".expected")) {
        let Ok(snap) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
            continue;
        };
        for (i, bead) in snap["beads"].as_array().into_iter().flatten().enumerate() {
            let text = serde_json::to_vec_pretty(bead).expect("a value serializes");
            out.push((format!("{name}#beads[{i}]"), text));
        }
    }
    out
}

/// `.splice/` in a repository three directories below a scratch root, so a path that climbs out
/// of the state directory still lands in the sandbox where the tree comparison sees it.
pub struct Sandbox {
    dir: tempfile::TempDir,
    pub store: Store,
}

/// The state directory, relative to the sandbox root.
const STATE: &str = "a/b/repo/.splice";

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = scratch();
        std::fs::create_dir_all(dir.path().join(STATE).join("beads")).expect("mkdir");
        let store = Store::discover(Some(&dir.path().join(STATE))).expect("the sandbox opens");
        Sandbox { dir, store }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Would writing bead `id` (its file or its temp file) land outside the sandbox?
    fn escapes(&self, id: &str) -> bool {
        let root = self
            .root()
            .canonicalize()
            .unwrap_or(self.root().to_path_buf());
        id.contains('\0') || !normalize(&self.store.bead_path(id)).starts_with(root)
    }

    /// Changes to the tree other than `beads/<file>`, `journal.jsonl` and `lock`.
    fn outside_state(&self, changes: &[PathBuf]) -> Vec<PathBuf> {
        changes
            .iter()
            .filter(|p| {
                let Ok(rest) = p.strip_prefix(STATE) else {
                    return true;
                };
                let parts: Vec<_> = rest.components().collect();
                let in_beads = parts.len() == 2 && parts[0].as_os_str() == "beads";
                !(in_beads || rest == Path::new("journal.jsonl") || rest == Path::new("lock"))
            })
            .cloned()
            .collect()
    }
}

fn transition(expect_seq: Option<u64>) -> Transition<'static> {
    Transition {
        verb: "fuzz",
        actor: "fuzz",
        now: NOW,
        expect_seq,
    }
}

thread_local! {
    static READER: Sandbox = Sandbox::new();
}

/// `bead`: a bead file is read or refused (never a default), `read_bead` and `read_all` agree,
/// and what splice writes back it reads back equal, the file form a fixed point.
pub const BEAD: Target = Target {
    name: "bead",
    run: bead,
    corpus: "bead",
    cases: 2000,
    format: Format::Json,
    dict: &[
        "\"schema_version\": 2",
        "\"pipeline\": {}",
        "\"id\": \"../x\"",
    ],
    seeds: bead_seeds,
};

fn bead(data: &[u8]) -> bool {
    READER.with(|sb| {
        let path = sb.store.bead_path(ID);
        std::fs::write(&path, data).expect("write the bead file");
        let one = sb.store.read_bead(ID);
        let all = sb.store.read_all();
        match (&one, &all) {
            (Ok(b), Ok(all)) => assert_eq!(
                all.as_slice(),
                std::slice::from_ref(b),
                "read_all and read_bead read one file differently"
            ),
            (Err(_), Err(_)) => {}
            _ => panic!("read_bead ({one:?}) and read_all ({all:?}) disagree"),
        }
        let Ok(bead) = one else { return false };
        if serde_json::from_slice::<serde_json::Value>(data).is_err() {
            // Known bug (tests/fuzz.rs, a_bead_file_with_trailing_garbage_is_refused): the
            // slow parse that names the field stops after the first JSON value.
            if !strict() && json_then_garbage(data) {
                return false;
            }
            panic!("a bead was read from bytes that are not JSON");
        }
        assert!(
            bead.schema_version <= BEAD_SCHEMA,
            "a bead of a newer schema was read"
        );
        if !strict() && has_lossy_float(data) {
            // Known bug (tests/fuzz.rs, a_float_in_a_bead_survives_a_rewrite): serde_json's
            // default float parsing is not exact, so such a number changes when rewritten.
            return true;
        }
        let bytes = bead.to_file_bytes();
        std::fs::write(&path, &bytes).expect("write the bead file");
        let again = sb
            .store
            .read_bead(ID)
            .unwrap_or_else(|e| panic!("splice cannot read the bead it wrote: {e}"));
        assert_eq!(again, bead, "a bead changed in a write and a read");
        assert_eq!(
            again.to_file_bytes(),
            bytes,
            "the file form is not a fixed point"
        );
        true
    })
}

/// `bead-write`: a transition through the store's shell on a bead splice could read changes
/// only that bead's file and the journal, bumps its seq, and journals the image it wrote.
pub const BEAD_WRITE: Target = Target {
    name: "bead-write",
    run: bead_write,
    corpus: "bead",
    cases: 2000,
    format: Format::Json,
    dict: &["\"id\": \"../x\"", "\"id\": \"sp-other\""],
    seeds: bead_seeds,
};

/// The file name a case's bead gets: mostly the id it says (when that is a file name), one
/// case in four a different one.
fn file_name_for(data: &[u8]) -> String {
    let said = serde_json::from_slice::<serde_json::Value>(data)
        .ok()
        .and_then(|v| v.get("id")?.as_str().map(String::from))
        .filter(|id| ids::is_valid(id));
    match said {
        Some(id) if data.iter().fold(0u8, |h, b| h.wrapping_add(*b)) % 4 != 0 => id,
        _ => ID.to_string(),
    }
}

fn bead_write(data: &[u8]) -> bool {
    let sb = Sandbox::new();
    let name = file_name_for(data);
    std::fs::write(sb.store.bead_path(&name), data).expect("write the bead file");
    let Ok(read) = sb.store.read_bead(&name) else {
        return false;
    };
    if read.id != name {
        // Known bug (tests/fuzz.rs, a_bead_whose_id_is_not_its_file_name_is_written_elsewhere):
        // the shell writes the image to the file its `id` names, not the file it was read from.
        if !strict() {
            return false;
        }
        assert!(
            !sb.escapes(&read.id),
            "a transition on {name} would write {} (the bead's id is {:?}), outside the sandbox: not run",
            sb.store.bead_path(&read.id).display(),
            read.id
        );
    }
    if !strict() && has_lossy_float(data) {
        // Known bug (tests/fuzz.rs, a_float_in_a_bead_survives_a_rewrite).
        return false;
    }
    let before = tree(sb.root());
    let out = sb.store.apply(
        &transition(Some(read.pipeline.seq)),
        &Reads::subject(&name),
        |fresh| {
            Ok(Change::one(
                fresh.subject.clone(),
                Some("fuzz".to_string()),
                (),
            ))
        },
    );
    let outside = sb.outside_state(&changed(&before, &tree(sb.root())));
    assert!(
        outside.is_empty(),
        "a transition wrote outside .splice/beads/ and the journal: {outside:?}"
    );
    out.unwrap_or_else(|e| panic!("a transition on a bead splice read failed: {e}"));
    let now = sb
        .store
        .read_bead(&name)
        .expect("the bead reads after the transition");
    let mut expect: Bead = read.clone();
    expect.bump(NOW);
    assert_eq!(
        now, expect,
        "the file holds the bumped image of the bead read"
    );
    let (records, _) = journal::read_committed(&sb.store.journal_path(), 0).expect("journal");
    assert_eq!(records.len(), 1, "one committed record");
    assert_eq!(
        records[0].beads,
        vec![now],
        "the record holds the image written"
    );
    true
}

/// A journal's tail, comparable.
#[derive(Debug, PartialEq)]
enum TailIs {
    Clean,
    Uncommitted(Box<Record>),
    Torn { keep: u64, dropped: u64 },
}

fn tail_of(path: &Path) -> TailIs {
    match journal::read_tail(path).expect("reading a file's tail never fails") {
        Tail::Clean => TailIs::Clean,
        Tail::Uncommitted(r) => TailIs::Uncommitted(r),
        Tail::Torn { keep, dropped } => TailIs::Torn { keep, dropped },
    }
}

/// The tail as a reading of the whole file sees it.
fn whole_file_tail(data: &[u8]) -> TailIs {
    let len = data.len() as u64;
    let Some((&last, body)) = data.split_last() else {
        return TailIs::Clean;
    };
    let (line_start, ends_clean) = if last == b'\n' {
        (
            body.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1),
            true,
        )
    } else {
        (
            data.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1),
            false,
        )
    };
    let torn = TailIs::Torn {
        keep: line_start as u64,
        dropped: len - line_start as u64,
    };
    if !ends_clean {
        return torn;
    }
    match journal::Line::parse(&String::from_utf8_lossy(&body[line_start..])) {
        None => torn,
        Some(journal::Line::Marker(_)) => TailIs::Clean,
        Some(journal::Line::Record(r)) => TailIs::Uncommitted(r),
    }
}

thread_local! {
    static FILES: tempfile::TempDir = scratch();
}

fn journal_seeds() -> Vec<(String, Vec<u8>)> {
    Vec::new()
}

/// `journal-tail`: `read_tail` (which reads backwards in growing chunks) agrees with a reading
/// of the whole file, also behind a 70 KB committed line and with a 70 KB last line.
pub const JOURNAL_TAIL: Target = Target {
    name: "journal-tail",
    run: journal_tail,
    corpus: "journal",
    cases: 300,
    format: Format::JsonLines,
    dict: &["{\"commit\":0}\n", "{\"commit\":", "\"tx\":0,", "\n\n"],
    seeds: journal_seeds,
};

fn journal_tail(data: &[u8]) -> bool {
    FILES.with(|dir| {
        let path = dir.path().join("tail.jsonl");
        std::fs::write(&path, data).expect("write");
        let want = whole_file_tail(data);
        assert_eq!(
            tail_of(&path),
            want,
            "read_tail disagrees with a whole-file reading"
        );

        let mut padded = b"{\"commit\":0}".to_vec();
        padded.extend(std::iter::repeat_n(b' ', 70_000));
        padded.push(b'\n');
        let shift = padded.len() as u64;
        padded.extend_from_slice(data);
        std::fs::write(&path, &padded).expect("write");
        let shifted = match &want {
            TailIs::Torn { keep, dropped } => TailIs::Torn {
                keep: keep + shift,
                dropped: *dropped,
            },
            TailIs::Clean => TailIs::Clean,
            TailIs::Uncommitted(r) => TailIs::Uncommitted(r.clone()),
        };
        assert_eq!(tail_of(&path), shifted, "behind a 70 KB line");

        if !data.is_empty() {
            let body = data.strip_suffix(b"\n").unwrap_or(data);
            let start = body.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            let mut long = data.to_vec();
            long.splice(start..start, std::iter::repeat_n(b' ', 70_000));
            std::fs::write(&path, &long).expect("write");
            let longer = match &want {
                TailIs::Torn { keep, dropped } => TailIs::Torn {
                    keep: *keep,
                    dropped: dropped + 70_000,
                },
                TailIs::Clean => TailIs::Clean,
                TailIs::Uncommitted(r) => TailIs::Uncommitted(r.clone()),
            };
            assert_eq!(tail_of(&path), longer, "with a 70 KB last line");
        }
        !matches!(want, TailIs::Torn { .. }) && !data.is_empty()
    })
}

/// `journal-committed`: `read_committed` stops after its last marker, and a feed that reads a
/// growing file in pieces (from where the last reading stopped) sees exactly the records of one
/// reading of the whole.
pub const JOURNAL_COMMITTED: Target = Target {
    name: "journal-committed",
    run: journal_committed,
    corpus: "journal",
    cases: 1000,
    format: Format::JsonLines,
    dict: &["{\"commit\":0}\n", "{\"commit\":", "\"tx\":0,", "\n\n"],
    seeds: journal_seeds,
};

fn journal_committed(data: &[u8]) -> bool {
    FILES.with(|dir| {
        let path = dir.path().join("committed.jsonl");
        std::fs::write(&path, data).expect("write");
        let (records, consumed) = journal::read_committed(&path, 0).expect("read");
        let len = data.len() as u64;
        assert!(consumed <= len, "consumed {consumed} of {len} bytes");
        assert!(
            consumed == 0 || data[consumed as usize - 1] == b'\n',
            "consumed {consumed} is not at a line's end"
        );
        let (rest, again) = journal::read_committed(&path, consumed).expect("read");
        assert!(rest.is_empty(), "records after the last marker");
        assert_eq!(again, consumed);

        let prefix_path = dir.path().join("prefix.jsonl");
        let first_line = data.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
        for cut in [
            first_line,
            data.len() / 3,
            data.len() / 2,
            data.len() * 3 / 4,
        ] {
            std::fs::write(&prefix_path, &data[..cut]).expect("write");
            let (mut seen, stopped) = journal::read_committed(&prefix_path, 0).expect("read");
            let (more, end) = journal::read_committed(&path, stopped).expect("read");
            seen.extend(more);
            assert_eq!(
                seen, records,
                "a reading in two pieces (cut at {cut}) differs"
            );
            assert_eq!(end, consumed, "a reading in two pieces stops elsewhere");
        }
        !records.is_empty()
    })
}

/// The record recovery would roll forward, found by running its loop (truncate torn lines until
/// a record or a marker ends the file) on a copy.
fn to_roll_forward(data: &[u8], scratch: &Path) -> Option<Box<Record>> {
    let copy = scratch.join("copy.jsonl");
    std::fs::write(&copy, data).expect("write");
    loop {
        match journal::read_tail(&copy).expect("read") {
            Tail::Clean => return None,
            Tail::Torn { keep, .. } => journal::truncate(&copy, keep).expect("truncate"),
            Tail::Uncommitted(r) => return Some(r),
        }
    }
}

/// A bead that was there before recovery: it may change only through a record naming it.
const KEPT: &str = "{\"id\": \"sp-kept\", \"title\": \"kept\"}\n";

/// `recovery`: recovery on any journal writes nothing outside `.splice/beads/` and the journal,
/// leaves a clean tail, publishes exactly the rolled-forward images and commits them, leaves no
/// temp file, and a second recovery finds nothing to do.
pub const RECOVERY: Target = Target {
    name: "recovery",
    run: recovery,
    corpus: "journal",
    cases: 1200,
    format: Format::JsonLines,
    dict: &[
        "{\"commit\":0}\n",
        "\"id\":\"sp-kept\"",
        "\"id\":\"../x\"",
        "\"tx\":0,",
    ],
    seeds: journal_seeds,
};

fn recovery(data: &[u8]) -> bool {
    let sb = Sandbox::new();
    let scratch = scratch();
    let rolled = to_roll_forward(data, scratch.path());
    if let Some(r) = &rolled
        && let Some(bad) = r.beads.iter().find(|b| !ids::is_valid(&b.id))
    {
        // Known bug (tests/fuzz.rs, recovery_rolls_forward_a_bead_id_that_is_not_a_file_name):
        // recovery publishes every image of the last record under its id, a path or not.
        if !strict() {
            return false;
        }
        assert!(
            !sb.escapes(&bad.id),
            "recovery would write {} (a journal image's id is {:?}), outside the sandbox: not run",
            sb.store.bead_path(&bad.id).display(),
            bad.id
        );
    }
    std::fs::write(sb.store.journal_path(), data).expect("write");
    std::fs::write(sb.store.bead_path("sp-kept"), KEPT).expect("write");
    let before = tree(sb.root());
    let out = sb
        .store
        .create(&transition(None), &[], |_| Ok(Change::nothing(())));
    let after = tree(sb.root());
    let outside = sb.outside_state(&changed(&before, &after));
    assert!(
        outside.is_empty(),
        "recovery wrote outside .splice/beads/ and the journal: {outside:?}"
    );
    if let Err(e) = out {
        // A record recovery cannot publish (one naming a bead twice, say) is a fault, not a
        // panic; the journal keeps it for a person to look at.
        let _ = e.to_string();
        return false;
    }
    let journal = sb.store.journal_path();
    assert_eq!(
        tail_of(&journal),
        TailIs::Clean,
        "recovery left a dirty tail"
    );
    let repairs = sb.store.take_repairs();
    let rolled_forward = repairs
        .iter()
        .any(|r| matches!(r, Repair::RolledForward { .. }));
    assert_eq!(rolled_forward, rolled.is_some(), "repairs: {repairs:?}");
    if let Some(r) = &rolled {
        for bead in &r.beads {
            let last = r.beads.iter().rfind(|b| b.id == bead.id).expect("itself");
            let on_disk = std::fs::read(sb.store.bead_path(&bead.id)).expect("published");
            assert_eq!(
                on_disk,
                last.to_file_bytes(),
                "{} is not its image",
                bead.id
            );
        }
        let (committed, _) = journal::read_committed(&journal, 0).expect("read");
        assert_eq!(
            committed.last().map(|c| c.tx),
            Some(r.tx),
            "the rolled-forward record is not the last committed one"
        );
    }
    let temp: Vec<_> = after
        .keys()
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(temp.is_empty(), "temp files left: {temp:?}");
    sb.store
        .create(&transition(None), &[], |_| Ok(Change::nothing(())))
        .unwrap_or_else(|e| panic!("a second recovery failed: {e}"));
    assert_eq!(
        sb.store.take_repairs(),
        vec![],
        "a second recovery repaired"
    );
    assert!(
        changed(&after, &tree(sb.root())).is_empty(),
        "a second recovery changed files"
    );
    rolled.is_some()
}
