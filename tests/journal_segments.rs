//! Issue 10, item 11: the live journal is bounded. Past `[journal] segment_bytes` the writer
//! closes it into `.splice/journal/<generation>.jsonl` (kept for good), record ids run on across
//! segments, recovery needs only the live one, and the runner's feed follows (generation, offset)
//! across a close.

mod common;

use common::Repo;
use serde_json::Value;
use splice::driver::feed::Feed;
use splice::driver::snapshot::Identity;
use splice::store::Store;

/// A repository whose live journal closes past 64 KiB (the smallest bound allowed).
fn small_segments() -> Repo {
    let r = Repo::new();
    r.write(".splice/config.toml", "[journal]\nsegment_bytes = 65536\n");
    r
}

/// Toggle a bead's autonomy `n` times (one transition each).
fn churn(r: &Repo, id: &str, n: usize) {
    for i in 0..n {
        churn_one(r, id, i);
    }
}

/// Toggle a bead's autonomy until the writer closes the first segment (at most 5,000 times);
/// returns how many transitions that took.
fn churn_until_closed(r: &Repo, id: &str) -> usize {
    let first = r.state().join("journal/000001.jsonl");
    for n in 1..=5_000 {
        churn_one(r, id, n - 1);
        if first.is_file() {
            return n;
        }
    }
    panic!("5,000 transitions closed no segment");
}

fn churn_one(r: &Repo, id: &str, i: usize) {
    let level = if i.is_multiple_of(2) { "wave" } else { "hitl" };
    r.ok(&[
        "transition",
        "set-autonomy",
        "--bead",
        id,
        "--autonomy",
        level,
    ]);
}

/// Every line of every segment, closed ones first, then the live one.
fn all_lines(r: &Repo) -> Vec<(String, Value)> {
    let mut files: Vec<_> = std::fs::read_dir(r.state().join("journal"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files.push(r.state().join("journal.jsonl"));
    files
        .iter()
        .filter(|f| f.is_file())
        .flat_map(|f| {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(|l| (name.clone(), serde_json::from_str(l).unwrap()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn the_live_journal_is_closed_into_kept_segments_and_ids_run_on() {
    let r = small_segments();
    let id = r.task("T", &[]);
    let n = churn_until_closed(&r, &id);
    // Half as many again, an even number in all: the last toggle sets `hitl`.
    let toggles = n + n / 2 + (n + n / 2) % 2;
    for i in n..toggles {
        churn_one(&r, &id, i);
    }
    let closed: Vec<String> = std::fs::read_dir(r.state().join("journal"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(closed.contains(&"000001.jsonl".to_string()), "{closed:?}");
    let live = std::fs::metadata(r.state().join("journal.jsonl")).map_or(0, |m| m.len());
    assert!(
        live < 65536 + 8192,
        "the live segment stays near its bound: {live}"
    );
    // Ids: one more each record, across segments; every segment ends with a commit marker.
    let lines = all_lines(&r);
    let ids: Vec<u64> = lines
        .iter()
        .filter(|(_, v)| v.get("verb").is_some())
        .map(|(_, v)| v["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids.len(), 1 + toggles, "init-task and the toggles");
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    for name in &closed {
        let last = lines.iter().rev().find(|(n, _)| n == name).unwrap();
        assert!(
            last.1.get("commit").is_some(),
            "{name} ends with {}",
            last.1
        );
    }
    // The state reads and writes as before.
    assert_eq!(r.bead(&id)["pipeline"]["autonomy"], "hitl");
    r.ok(&[
        "transition",
        "set-autonomy",
        "--bead",
        &id,
        "--autonomy",
        "deep",
    ]);
    r.ok(&["status", "--json"]);
}

#[test]
fn a_crash_right_after_closing_a_segment_loses_nothing() {
    let r = small_segments();
    let id = r.task("T", &[]);
    // Grow the live segment to just past its bound, then crash as the next write closes it.
    churn(&r, &id, 90);
    let before = all_lines(&r).len();
    let mut crashed = false;
    for i in 0..5_000 {
        let level = if i % 2 == 0 { "wave" } else { "hitl" };
        let out = r
            .cmd(&[
                "transition",
                "set-autonomy",
                "--bead",
                &id,
                "--autonomy",
                level,
            ])
            .env("SPLICE_FAILPOINT", "after-close")
            .output()
            .unwrap();
        if out.status.code().is_none() {
            crashed = true;
            break;
        }
    }
    assert!(crashed, "no write closed a segment");
    assert!(
        !r.state().join("journal.jsonl").exists(),
        "closed, no live one yet"
    );
    // The crashed write had committed before the close: it is kept, and the next write starts
    // the next generation with the next id.
    let out = r.ok(&[
        "transition",
        "set-autonomy",
        "--bead",
        &id,
        "--autonomy",
        "deep",
    ]);
    assert_eq!(out["autonomy"], "deep");
    let lines = all_lines(&r);
    assert!(lines.len() > before);
    let ids: Vec<u64> = lines
        .iter()
        .filter(|(_, v)| v.get("verb").is_some())
        .map(|(_, v)| v["id"].as_u64().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    assert!(r.state().join("journal.jsonl").is_file());
}

#[test]
fn the_feed_follows_the_journal_across_a_closed_segment() {
    let r = small_segments();
    let id = r.task("T", &[]);
    let store = Store::discover(Some(r.path())).unwrap();
    let mut feed = Feed::load(&store, None, Identity::default()).unwrap();
    // Enough writes to close a segment while the feed is not looking (the last sets `wave`).
    let n = churn_until_closed(&r, &id);
    if n.is_multiple_of(2) {
        churn_one(&r, &id, n);
    }
    assert!(r.state().join("journal/000001.jsonl").is_file());
    let changed = feed.refresh().unwrap();
    assert!(changed >= 200, "every committed change is seen: {changed}");
    let bead = feed.bead(&id).unwrap();
    assert_eq!(bead.pipeline.autonomy, Some(splice::model::Autonomy::Wave));
    assert_eq!(
        bead.pipeline.seq,
        r.bead(&id)["pipeline"]["seq"].as_u64().unwrap()
    );
    assert_eq!(
        feed.refresh().unwrap(),
        0,
        "nothing new, nothing read twice"
    );
}
