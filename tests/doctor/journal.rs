//! The journal's checks: its size, and a last line waiting for recovery (doctor reports it and
//! leaves it to the next write).

use super::{doctor, healthy, others_ok, the};

#[test]
fn a_torn_journal_tail_is_reported_and_left_for_the_next_write() {
    let (r, id) = healthy();
    let journal = r.state().join("journal.jsonl");
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes.extend_from_slice(b"{\"id\": 99, \"to");
    std::fs::write(&journal, &bytes).unwrap();
    let (code, report) = doctor(&r);
    assert_eq!(code, 0, "{report:#}");
    let f = the(&report, "recovery", "warn");
    assert!(f["message"].as_str().unwrap().contains("torn"), "{f:#}");
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        bytes,
        "doctor does not recover"
    );
    others_ok(&report, &["recovery"]);
    // The next write cuts it.
    r.ok(&["transition", "claim", &id, "--holder", "h"]);
    the(&doctor(&r).1, "recovery", "ok");
}

/// A line before the last that does not parse is no crash's: the next write refuses it, so a
/// person must look.
#[test]
fn junk_before_the_journal_s_last_line_needs_a_person() {
    let (r, _) = healthy();
    let journal = r.state().join("journal.jsonl");
    let mut bytes = std::fs::read(&journal).unwrap();
    let at = bytes.len();
    bytes.extend_from_slice(b"x\ny\n");
    std::fs::write(&journal, &bytes).unwrap();
    let (code, report) = doctor(&r);
    assert_eq!(code, 1, "{report:#}");
    let f = the(&report, "recovery", "needs-person");
    let message = f["message"].as_str().unwrap();
    assert!(message.contains(&format!("byte {at}")), "{message}");
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        bytes,
        "doctor writes nothing"
    );
}

/// A live journal that is a directory, a FIFO or a link stops every write (the writer opens
/// nothing else): doctor says a person must mend it, naming it, and does not report its size.
#[test]
fn a_journal_that_is_no_regular_file_needs_a_person() {
    for kind in ["directory", "fifo", "link"] {
        let (r, _) = healthy();
        let journal = r.state().join("journal.jsonl");
        let kept = r.path().join("kept.jsonl");
        std::fs::rename(&journal, &kept).unwrap();
        match kind {
            "directory" => std::fs::create_dir(&journal).unwrap(),
            "fifo" => {
                let path = std::ffi::CString::new(journal.to_str().unwrap()).unwrap();
                // SAFETY: a NUL-terminated path.
                assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
            }
            _ => std::os::unix::fs::symlink(&kept, &journal).unwrap(),
        }
        let (code, report) = doctor(&r);
        assert_eq!(code, 1, "{kind}: {report:#}");
        for check in ["journal", "recovery"] {
            let f = the(&report, check, "needs-person");
            let message = f["message"].as_str().unwrap();
            assert!(
                message.contains("journal.jsonl"),
                "{kind} {check}: {message}"
            );
        }
    }
}

/// A line in the middle of the live journal that is not a journal line (an edit, a merge's
/// conflict marker) is read past by every reader; doctor points at it, and writes nothing.
#[test]
fn a_foreign_line_inside_the_journal_is_a_warning_naming_its_byte() {
    let (r, _) = healthy();
    let journal = r.state().join("journal.jsonl");
    let mut bytes = std::fs::read(&journal).unwrap();
    // After the first line, so it is not the last.
    let at = bytes.iter().position(|b| *b == b'\n').unwrap() + 1;
    bytes.splice(at..at, b"<<<<<<< HEAD\n".iter().copied());
    std::fs::write(&journal, &bytes).unwrap();
    let (code, report) = doctor(&r);
    assert_eq!(code, 0, "{report:#}");
    let f = the(&report, "journal", "warn");
    let message = f["message"].as_str().unwrap();
    assert!(message.contains(&format!("byte {at}")), "{message}");
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        bytes,
        "doctor writes nothing"
    );
    the(&report, "recovery", "ok");
}

#[test]
fn an_uncommitted_record_is_reported_as_recovery_would_settle_it() {
    let (r, id) = healthy();
    let out = r
        .cmd(&["transition", "claim", &id, "--holder", "h"])
        .env("SPLICE_FAILPOINT", "after-journal")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let (code, report) = doctor(&r);
    assert_eq!(code, 0, "rolled forward by the next write: {report:#}");
    let f = the(&report, "recovery", "warn");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("`claim`") && message.contains("rolls it forward"),
        "{message}"
    );

    // A bead file that moved on meanwhile: recovery would void the record, losing its change.
    let path = r.state().join("beads").join(format!("{id}.json"));
    let mut bead = r.bead(&id);
    let seq = bead["pipeline"]["seq"].as_u64().unwrap();
    bead["pipeline"]["seq"] = (seq + 5).into();
    std::fs::write(&path, serde_json::to_vec_pretty(&bead).unwrap()).unwrap();
    let (code, report) = doctor(&r);
    assert_eq!(code, 1, "{report:#}");
    let f = the(&report, "recovery", "needs-person");
    assert!(
        f["message"].as_str().unwrap().contains("will not apply it"),
        "{f:#}"
    );
    assert!(f["fix"].as_str().unwrap().contains("claim"), "{f:#}");
}

#[test]
fn a_live_journal_past_segment_bytes_is_a_warning_until_the_next_write_closes_it() {
    let (r, _) = healthy();
    // One record of about 70 KiB, written while the bound was the default 4 MiB.
    let long = "x".repeat(70 * 1024);
    let id = r.task("Long", &["--description", &long]);
    let config = std::fs::read_to_string(r.state().join("config.toml")).unwrap();
    r.write(
        ".splice/config.toml",
        &format!("{config}[journal]\nsegment_bytes = 65536\n"),
    );
    let (code, report) = doctor(&r);
    assert_eq!(code, 0, "{report:#}");
    let f = the(&report, "journal", "warn");
    let message = f["message"].as_str().unwrap();
    assert!(message.contains("segment_bytes 65536"), "{message}");
    assert!(message.contains("0 closed segment(s)"), "{message}");
    others_ok(&report, &["journal"]);

    r.ok(&["transition", "claim", &id, "--holder", "h"]);
    let (_, report) = doctor(&r);
    let f = the(&report, "journal", "ok");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("1 closed segment(s)"),
        "{f:#}"
    );
}
