//! The store: reading a bead file, and a transition through the shell on a hostile one, in a
//! sandbox directory whose whole tree is compared before and after.

use std::path::{Path, PathBuf};

use splice::model::Bead;
use splice::model::bead::BEAD_SCHEMA;
use splice::store::journal;
use splice::store::{Change, Reads, Store, Transition, ids};

use super::{Format, Target, changed, files_in, normalize, scratch, tree};

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
    pub fn escapes(&self, id: &str) -> bool {
        let root = self
            .root()
            .canonicalize()
            .unwrap_or(self.root().to_path_buf());
        id.contains('\0') || !normalize(&self.store.bead_path(id)).starts_with(root)
    }

    /// Changes to the tree other than `beads/<file>`, `journal.jsonl` and `lock`.
    pub fn outside_state(&self, changes: &[PathBuf]) -> Vec<PathBuf> {
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

pub fn transition(expect_seq: Option<u64>) -> Transition<'static> {
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

/// `bead`: a bead file is read or refused (never a default): refused unless it is JSON, of a
/// schema this build reads, with its file's id; `read_bead` and `read_all` agree; what splice
/// writes back it reads back equal, the file form a fixed point.
pub const BEAD: Target = Target {
    name: "bead",
    run: bead,
    corpus: "bead",
    cases: 4000,
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
        let name = file_name_for(data);
        let path = sb.store.bead_path(&name);
        std::fs::write(&path, data).expect("write the bead file");
        let accepted = read_and_rewrite(sb, &name, data);
        std::fs::remove_file(&path).expect("remove the bead file");
        accepted
    })
}

fn read_and_rewrite(sb: &Sandbox, name: &str, data: &[u8]) -> bool {
    let path = sb.store.bead_path(name);
    let one = sb.store.read_bead(name);
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
    assert!(
        serde_json::from_slice::<serde_json::Value>(data).is_ok(),
        "a bead was read from bytes that are not JSON"
    );
    assert_eq!(
        bead.id, name,
        "a bead was read from a file named for another id"
    );
    assert!(
        bead.schema_version <= BEAD_SCHEMA,
        "a bead of a newer schema was read"
    );
    let bytes = bead.to_file_bytes();
    std::fs::write(&path, &bytes).expect("write the bead file");
    let again = sb
        .store
        .read_bead(name)
        .unwrap_or_else(|e| panic!("splice cannot read the bead it wrote: {e}"));
    assert_eq!(again, bead, "a bead changed in a write and a read");
    assert_eq!(
        again.to_file_bytes(),
        bytes,
        "the file form is not a fixed point"
    );
    true
}

/// `bead-write`: a transition through the store's shell on a bead splice could read changes
/// only that bead's file and the journal, bumps its seq, and journals the image it wrote.
pub const BEAD_WRITE: Target = Target {
    name: "bead-write",
    run: bead_write,
    corpus: "bead",
    cases: 4000,
    format: Format::Json,
    dict: &["\"id\": \"../x\"", "\"id\": \"sp-other\""],
    seeds: bead_seeds,
};

/// The file name a case's bead gets: mostly the id it says (when that is a file name), one
/// case in four another (which the store must refuse to read).
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
    assert_eq!(
        read.id, name,
        "a bead was read from a file named for another id"
    );
    let before = tree(sb.root());
    let out = sb.store.apply(
        &transition(Some(read.pipeline.seq)),
        &Reads::subject(&name),
        |fresh| {
            // A real change: an image equal to the one read is no write (no bump, no record).
            let mut after = fresh.subject.clone();
            after.title.push_str(" (written)");
            Ok(Change::one(after, Some("fuzz".to_string()), ()))
        },
    );
    let changes = changed(&before, &tree(sb.root()));
    let outside = sb.outside_state(&changes);
    assert!(
        outside.is_empty(),
        "a transition wrote outside .splice/beads/ and the journal: {outside:?}"
    );
    if let Err(e) = out {
        // The shell may refuse (a seq that cannot grow, say); then it writes nothing.
        let written: Vec<_> = changes.iter().filter(|c| !c.ends_with("lock")).collect();
        assert!(
            written.is_empty(),
            "a refused transition ({e}) wrote {written:?}"
        );
        return false;
    }
    let now = sb
        .store
        .read_bead(&name)
        .expect("the bead reads after the transition");
    let mut expect: Bead = read.clone();
    expect.title.push_str(" (written)");
    expect.bump(NOW);
    assert_eq!(
        now, expect,
        "the file holds the bumped image of the bead read"
    );
    let (records, _) = journal::read_committed(&sb.store.journal_path(), 0).expect("journal");
    assert_eq!(records.len(), 1, "one committed record");
    // The record holds the image written: whole, or as the patch from the image read.
    let held: Vec<Bead> = match (&records[0].beads[..], &records[0].patches[..]) {
        ([b], []) => vec![b.clone()],
        ([], [p]) => vec![
            p.apply(&read, &records[0].at)
                .expect("the patch applies to the image read"),
        ],
        _ => Vec::new(),
    };
    assert_eq!(held, vec![now], "the record holds the image written");
    true
}
