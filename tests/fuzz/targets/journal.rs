//! The journal: its tail as recovery reads it, its committed records as the runner's feed
//! reads them, and recovery itself in a sandbox whose whole tree is compared before and after.

use std::path::Path;

use splice::store::journal::{self, Record, Tail};
use splice::store::{Change, Repair};

use super::store::{Sandbox, transition};
use super::{Format, Target, changed, scratch, tree};

/// A journal's tail, comparable.
#[derive(Debug, PartialEq)]
enum TailIs {
    Clean,
    Uncommitted { record: Box<Record>, at: u64 },
    Torn { keep: u64, dropped: u64 },
    Garbled { at: u64, len: u64 },
}

fn tail_of(path: &Path) -> TailIs {
    match journal::read_tail(path).expect("reading a file's tail never fails") {
        Tail::Clean => TailIs::Clean,
        Tail::Uncommitted { record, at } => TailIs::Uncommitted { record, at },
        Tail::Torn { keep, dropped } => TailIs::Torn { keep, dropped },
        Tail::Garbled { at, len } => TailIs::Garbled { at, len },
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
    let parses = |line: &[u8]| journal::Line::parse(&String::from_utf8_lossy(line));
    // Torn: unless the line before it does not parse either.
    let before = line_start.checked_sub(1).map(|end| {
        (
            data[..end]
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1),
            end,
        )
    });
    let torn = match before {
        Some((start, end)) if parses(&data[start..end]).is_none() => TailIs::Garbled {
            at: start as u64,
            len: (line_start - start) as u64,
        },
        _ => TailIs::Torn {
            keep: line_start as u64,
            dropped: len - line_start as u64,
        },
    };
    if !ends_clean {
        return torn;
    }
    match parses(&body[line_start..]) {
        None => torn,
        Some(journal::Line::Marker(_) | journal::Line::Void(_)) => TailIs::Clean,
        Some(journal::Line::Record(record)) => TailIs::Uncommitted {
            record,
            at: line_start as u64,
        },
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
    cases: 600,
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
            TailIs::Garbled { at, len } => TailIs::Garbled {
                at: at + shift,
                len: *len,
            },
            TailIs::Clean => TailIs::Clean,
            TailIs::Uncommitted { record, at } => TailIs::Uncommitted {
                record: record.clone(),
                at: at + shift,
            },
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
                TailIs::Garbled { at, len } => TailIs::Garbled { at: *at, len: *len },
                TailIs::Clean => TailIs::Clean,
                TailIs::Uncommitted { record, at } => TailIs::Uncommitted {
                    record: record.clone(),
                    at: *at,
                },
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
    cases: 2000,
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
/// a record or a marker ends the file) on a copy; `Err` when it would refuse the journal (a torn
/// line after another line that does not parse).
fn to_roll_forward(data: &[u8], scratch: &Path) -> Result<Option<Box<Record>>, ()> {
    let copy = scratch.join("copy.jsonl");
    std::fs::write(&copy, data).expect("write");
    loop {
        match journal::read_tail(&copy).expect("read") {
            Tail::Clean => return Ok(None),
            Tail::Torn { keep, .. } => journal::truncate(&copy, keep).expect("truncate"),
            Tail::Uncommitted { record, .. } => return Ok(Some(record)),
            Tail::Garbled { .. } => return Err(()),
        }
    }
}

/// A journal no crash could leave (a torn line after another that does not parse): the writer
/// refuses it, naming it, and neither the journal nor a bead file changes.
fn refused(sb: &Sandbox, data: &[u8]) -> bool {
    let journal = sb.store.journal_path();
    std::fs::write(&journal, data).expect("write");
    std::fs::write(sb.store.bead_path("sp-kept"), KEPT).expect("write");
    let before = tree(sb.root());
    let out = sb
        .store
        .create(&transition(None), &[], |_| Ok(Change::nothing(())));
    let err = out.expect_err("a garbled journal is refused").to_string();
    assert!(err.contains("is not a journal line"), "{err}");
    let after = tree(sb.root());
    let touched: Vec<_> = changed(&before, &after)
        .into_iter()
        .filter(|c| {
            c.components().any(|p| p.as_os_str() == "beads") || c.ends_with("journal.jsonl")
        })
        .collect();
    assert!(touched.is_empty(), "a refused recovery wrote {touched:?}");
    true
}

/// A bead that was there before recovery: it may change only through a record naming it.
const KEPT: &str = "{\"id\": \"sp-kept\", \"title\": \"kept\"}\n";

/// `recovery`: recovery on any journal a crash could leave (a torn line after one that does
/// not parse is refused, changing nothing: [`refused`]) succeeds and writes nothing outside `.splice/beads/`
/// and the journal; it leaves a clean tail; a pending last record is either rolled forward (each
/// image's file then holds that image, or already held its seq; the record is the last
/// committed) or voided (no bead file touched); no temp file is left; a second recovery finds
/// nothing to do.
pub const RECOVERY: Target = Target {
    name: "recovery",
    run: recovery,
    corpus: "journal",
    cases: 2400,
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
    let Ok(pending) = to_roll_forward(data, scratch.path()) else {
        return refused(&sb, data);
    };
    if let Some(r) = &pending
        && r.written().any(|(id, _)| sb.escapes(id))
    {
        // Not run: were recovery to publish this image (it must not, its id is not a bead id),
        // it would write outside the sandbox. Ids that climb out of `.splice/beads/` but stay
        // in the sandbox are run, and the tree comparison checks them.
        return false;
    }
    std::fs::write(sb.store.journal_path(), data).expect("write");
    std::fs::write(sb.store.bead_path("sp-kept"), KEPT).expect("write");
    let before = tree(sb.root());
    let out = sb
        .store
        .create(&transition(None), &[], |_| Ok(Change::nothing(())));
    let after = tree(sb.root());
    let changes = changed(&before, &after);
    let outside = sb.outside_state(&changes);
    assert!(
        outside.is_empty(),
        "recovery wrote outside .splice/beads/ and the journal: {outside:?}"
    );
    out.unwrap_or_else(|e| panic!("recovery failed, so every writer would: {e}"));
    let journal = sb.store.journal_path();
    assert_eq!(
        tail_of(&journal),
        TailIs::Clean,
        "recovery left a dirty tail"
    );
    let repairs = sb.store.take_repairs();
    let settled = repairs
        .iter()
        .find(|r| matches!(r, Repair::RolledForward { .. } | Repair::Voided { .. }));
    assert_eq!(settled.is_some(), pending.is_some(), "repairs: {repairs:?}");
    match (settled, &pending) {
        (Some(Repair::RolledForward { .. }), Some(r)) => {
            for image in &r.beads {
                let path = sb.store.bead_path(&image.id);
                let rel = path.strip_prefix(sb.root()).unwrap_or(&path).to_path_buf();
                let now = std::fs::read(&path).expect("a rolled-forward bead has a file");
                let untouched = !changes
                    .iter()
                    .any(|c| rel.ends_with(c) || c.ends_with(&rel));
                let at_seq = sb
                    .store
                    .read_bead(&image.id)
                    .is_ok_and(|b| b.pipeline.seq == image.pipeline.seq);
                assert!(
                    now == image.to_file_bytes() || (untouched && at_seq),
                    "{} holds neither its image nor its seq",
                    image.id
                );
            }
            for patch in &r.patches {
                let at = sb.store.read_bead(&patch.id).map(|b| b.pipeline.seq);
                assert_eq!(
                    at.ok(),
                    Some(patch.seq),
                    "{} is not at its patch's seq",
                    patch.id
                );
            }
            let (committed, _) = journal::read_committed(&journal, 0).expect("read");
            assert_eq!(
                committed.last().map(|c| c.tx),
                Some(r.tx),
                "the rolled-forward record is not the last committed one"
            );
        }
        (Some(Repair::Voided { .. }), _) => {
            let touched: Vec<_> = changes
                .iter()
                .filter(|c| c.components().any(|p| p.as_os_str() == "beads"))
                .collect();
            assert!(touched.is_empty(), "a voided record wrote {touched:?}");
        }
        _ => {}
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
    pending.is_some()
}
