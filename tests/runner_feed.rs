//! The runner's in-memory snapshot follows the journal: a person's verbs between passes, new
//! children of a split, and nothing from outside the scope; and `splice pass --dry-run` changes
//! nothing.

mod common;

use common::Repo;
use splice::driver::feed::Feed;
use splice::driver::snapshot::Identity;
use splice::store::Store;

#[test]
fn the_feed_applies_what_the_journal_committed_since_its_last_read() {
    let r = Repo::new();
    let root = r.init(&["--scenarios", "S1"]);
    let other = r.task("Outside the scope", &[]);
    // The root splits at to-issues.
    r.ok(&[
        "transition",
        "route",
        "--bead",
        &root,
        "--to",
        "root",
        "--at",
        "to-issues",
    ]);
    let store = Store::discover(Some(r.path())).unwrap();
    let mut feed = Feed::load(&store, Some(&root), Identity::default()).unwrap();
    assert_eq!(feed.snapshot.beads.len(), 1);
    assert_eq!(feed.refresh().unwrap(), 0, "nothing new");

    // A person's verbs, made by other processes.
    r.ok(&[
        "transition",
        "set-autonomy",
        "--bead",
        &root,
        "--level",
        "wave",
    ]);
    r.write("children.json", r#"[{"title": "A", "scenarios": ["S1"]}]"#);
    r.ok(&[
        "transition",
        "split",
        "--bead",
        &root,
        "--children",
        "children.json",
    ]);
    r.ok(&[
        "transition",
        "claim",
        "--bead",
        &other,
        "--holder",
        "someone",
    ]);

    let changed = feed.refresh().unwrap();
    assert_eq!(
        changed, 3,
        "the root twice and the new child; the out-of-scope claim is not applied"
    );
    let ids: Vec<&str> = feed.snapshot.beads.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(ids, [root.as_str(), &format!("{root}.1")]);
    let fresh = store.read_bead(&root).unwrap();
    assert_eq!(
        feed.bead(&root),
        Some(&fresh),
        "the in-memory bead equals the file"
    );
    assert_eq!(feed.refresh().unwrap(), 0);
}

#[test]
fn a_dry_run_pass_decides_and_changes_nothing() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let before = r.beads_bytes();
    let journal = r.journal();
    let env = r.ok(&["pass", "--dry-run"]);
    assert_eq!(env["status"], "ready");
    assert_eq!(
        env["nodes"][&id]["rest"],
        serde_json::Value::Null,
        "it would act on the task"
    );
    assert_eq!(r.beads_bytes(), before);
    assert_eq!(r.journal(), journal);
}
