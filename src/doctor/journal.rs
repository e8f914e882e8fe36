//! The `journal` and `recovery` checks: how big the live journal is, and whether its last line
//! waits for recovery. Read without the lock; doctor never recovers (the next write does).

use super::{Ctx, Finding};
use crate::model::config::DEFAULT_SEGMENT_BYTES;
use crate::store::Pending;

pub const JOURNAL: &str = "journal";
pub const RECOVERY: &str = "recovery";

/// The live journal is within `[journal] segment_bytes` (the writer closes it into a segment
/// once it passes, right after a commit): past it means no write closed it yet, or the bound
/// was lowered since.
pub fn journal(cx: &Ctx) -> Vec<Finding> {
    let size = match cx.store.journal_size() {
        Ok(s) => s,
        // The writer opens the live journal the same way: every write fails until it is mended.
        Err(e) => return vec![unusable(JOURNAL, e)],
    };
    let limit = cx
        .config
        .as_ref()
        .map_or(DEFAULT_SEGMENT_BYTES, |c| c.journal.segment_bytes());
    let about = format!(
        "the live journal is {} bytes ([journal] segment_bytes {limit}); {} closed segment(s), \
         {} bytes",
        size.live_bytes, size.closed_segments, size.closed_bytes
    );
    let foreign = match crate::store::journal::foreign_lines(&cx.store.journal_path()) {
        Ok(lines) => lines,
        Err(e) => return vec![unusable(JOURNAL, e)],
    };
    if let Some(&(at, len)) = foreign.first() {
        return vec![Finding::warn(
            JOURNAL,
            format!(
                "{about}; {} line(s) of it are not journal lines, the first at byte {at} ({len} \
                 bytes): every reader passes them by, and only something other than splice \
                 writes them (an edit, a merge's conflict markers)",
                foreign.len()
            ),
            Some(
                "look at .splice/journal.jsonl from that byte (`git diff .splice/journal.jsonl`) \
                 and remove what splice did not write"
                    .to_string(),
            ),
        )];
    }
    vec![match size.live_bytes > limit {
        false => Finding::ok(JOURNAL, about),
        true => Finding::warn(
            JOURNAL,
            format!(
                "{about}: past the bound, so a reader replays more than it should; the writer \
                 closes it into .splice/journal/ at its next write"
            ),
            None,
        ),
    }]
}

/// The journal cannot be read as the writer reads it (a link, a FIFO, a directory, an I/O
/// error): recovery runs before every write, so no write goes on until a person mends it.
fn unusable(check: &'static str, e: crate::error::Error) -> Finding {
    Finding::needs_person(
        check,
        format!("{e}; no splice command can write until it is mended"),
        "make .splice/journal.jsonl a regular file again: a link's target copied in its place, \
         or the last committed journal (`git show HEAD:.splice/journal.jsonl`)",
    )
}

/// The journal's last line is committed. A torn line or a record without its commit marker is
/// what a crash mid-write leaves; the next write's recovery settles it under the lock.
pub fn recovery(cx: &Ctx) -> Vec<Finding> {
    let pending = match cx.store.pending_recovery() {
        Ok(p) => p,
        Err(e) => return vec![unusable(RECOVERY, e)],
    };
    vec![match pending {
        Pending::Nothing => Finding::ok(RECOVERY, "nothing pending: the journal ends committed"),
        Pending::Torn { at, dropped } => Finding::warn(
            RECOVERY,
            format!(
                "the journal's last line (byte {at}, {dropped} bytes) is torn, as a crash \
                 mid-append leaves it: nothing acknowledged is in it, and the next splice \
                 command that writes cuts it first"
            ),
            None,
        ),
        Pending::Garbled { at, len } => Finding::needs_person(
            RECOVERY,
            format!(
                "the journal's last line is torn, and the line before it (byte {at}, {len} \
                 bytes) is not a journal line either: a crash tears only the last line, so \
                 something else wrote it, and the next write refuses the journal until it is \
                 mended"
            ),
            format!(
                "look at .splice/journal.jsonl from byte {at} (`git diff .splice/journal.jsonl`) \
                 and put it back as it was"
            ),
        ),
        Pending::Uncommitted {
            id,
            at,
            verb,
            beads,
            void: None,
        } => Finding::warn(
            RECOVERY,
            format!(
                "record {id} (`{verb}` on {}, byte {at}) has no commit marker: the next splice \
                 command that writes rolls it forward first",
                beads.join(", ")
            ),
            None,
        ),
        Pending::Uncommitted {
            id,
            at,
            verb,
            beads,
            void: Some(why),
        } => Finding::needs_person(
            RECOVERY,
            format!(
                "record {id} (`{verb}` on {}, byte {at}) has no commit marker, and recovery \
                 will not apply it: {why}; the next write voids it and its change is lost",
                beads.join(", ")
            ),
            format!(
                "read the record in .splice/journal.jsonl; once a write has voided it, run \
                 `{verb}` again if its change is still wanted"
            ),
        ),
    }]
}
