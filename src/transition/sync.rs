//! `splice sync bd`: a bd export and the store kept in step both ways (`docs/bd-interop.md`,
//! "Living with bd"), so a team can go on typing `bd` while splice drives the work.
//!
//! A sync compares three states of each issue's bd fields ([`bd::content`]): the bd file's, the
//! store's, and the **base**, what both had at the last sync (`.splice/sync/bd.jsonl`, written
//! by the sync alone). Field by field: a field only one side changed since the base goes to the
//! other side; one both sides changed to the same value is settled; one both changed to
//! different values is a **conflict**, reported and left as each side has it (the base keeps
//! its old value, so it is reported again until a person settles it: by making the two sides
//! agree, or with `--take bd|splice`). Nothing is resolved silently.
//!
//! The rules a person's verb keeps hold here too: a bead a holder has claimed takes nothing
//! from bd (*held*, taken at a later sync: the agent working on it would not see the change),
//! and on a started bead (a node) `status`, `closed_at`, `close_reason` and `parent` are the
//! route's: a change bd made to one is a conflict, never taken (`--take splice` writes
//! splice's back to bd).
//!
//! An issue on one side only: new on that side when the base does not know it (created in the
//! store, or added to the file); when the base knows it, the other side removed it, which is a
//! conflict (splice never deletes a bead, and does not write back what bd removed unless
//! `--take splice`). An issue with no base yet (a first sync) whose fields on one side are
//! still those `import bd` (or a sync) recorded (their hash is on the bead) has them as its
//! base, so the other side's change goes through; any other difference on a first sync is a
//! conflict.
//!
//! The store's side is one journaled batch; the bd file and the base are written after it,
//! under the same lock, atomically. A line of the file that does not parse is kept as it is
//! and reported (its id is left alone on both sides); an unchanged record keeps its line byte
//! for byte, a changed one is written as bd would ([`bd::to_line`]), new ones are appended.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use super::import::{self, KEPT_ON_MERGE, Problem};
use super::{Ctx, Verb, next_seq};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::model::bd::{self, Imported, Record};
use crate::model::id as ids;
use crate::store::{Change, Scan, atomic};

/// The version of [`Report`]'s JSON.
pub const REPORT_SCHEMA: u32 = 1;

/// The version of the base file's format (its first line says it).
pub const BASE_SCHEMA: u32 = 1;

/// The base's file, under the state directory.
pub const BASE_FILE: &str = "sync/bd.jsonl";

/// The side whose value settles a conflict (`--take`).
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Take {
    Bd,
    Splice,
}

/// The last synced state: the bd file it was synced with, and each issue's fields then.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Base {
    /// The bd file, as the command line named it.
    pub file: String,
    pub issues: BTreeMap<String, Known>,
}

/// One issue's fields at the last sync.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Known {
    /// bd's fields both sides had ([`bd::content`]'s keys); a key not here was absent on both.
    pub fields: Map<String, Value>,
    /// Keys with no agreed value: the sides differed at the first sync and still do.
    pub unsettled: BTreeSet<String>,
}

impl Known {
    /// The base's value of `key`: `None` when the base does not know it, `Some(None)` when it
    /// was absent on both sides.
    fn get(&self, key: &str) -> Option<Option<&Value>> {
        (!self.unsettled.contains(key)).then(|| self.fields.get(key))
    }

    /// Keep what this base knew of `key` in `into` (a conflict or a held change: the base
    /// stays as it was, so the change is seen again).
    fn keep_into(base: Option<&Known>, key: &str, into: &mut Known) {
        match base.and_then(|b| b.get(key)) {
            Some(Some(v)) => {
                into.fields.insert(key.to_string(), v.clone());
            }
            Some(None) => {}
            None => {
                into.unsettled.insert(key.to_string());
            }
        }
    }
}

/// The head line of the base file.
#[derive(Serialize, serde::Deserialize)]
struct BaseHead {
    splice_sync_base: u32,
    file: String,
}

/// One issue's line of the base file.
#[derive(Serialize, serde::Deserialize)]
struct BaseLine {
    id: String,
    fields: Map<String, Value>,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    unsettled: BTreeSet<String>,
}

impl Base {
    /// Read the base file's text (`shown` names it in errors). Every line is checked: the file
    /// is committed, so it may have been written by anyone.
    pub fn parse(text: &str, shown: &Path) -> Result<Base> {
        let bad =
            |line: usize, what: String| Error::bad_file(shown, format!("line {line}: {what}"));
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let Some((_, head)) = lines.next() else {
            return Ok(Base::default());
        };
        let head: BaseHead = serde_json::from_str(head)
            .map_err(|e| bad(1, format!("not the head of a sync base: {e}")))?;
        if head.splice_sync_base != BASE_SCHEMA {
            return Err(bad(
                1,
                format!(
                    "a sync base of version {} (this splice reads {BASE_SCHEMA})",
                    head.splice_sync_base
                ),
            ));
        }
        let mut issues = BTreeMap::new();
        for (at, line) in lines {
            let entry: BaseLine =
                serde_json::from_str(line).map_err(|e| bad(at + 1, format!("not JSON: {e}")))?;
            if !ids::is_valid(&entry.id) {
                return Err(bad(
                    at + 1,
                    format!("{}: not a bead id", ids::shown(&entry.id)),
                ));
            }
            let known = Known {
                fields: entry.fields,
                unsettled: entry.unsettled,
            };
            if issues.insert(entry.id.clone(), known).is_some() {
                return Err(bad(at + 1, format!("{} again", entry.id)));
            }
        }
        Ok(Base {
            file: head.file,
            issues,
        })
    }

    /// The base file's text: its head, then an issue a line in id order.
    pub fn render(&self) -> String {
        let head = BaseHead {
            splice_sync_base: BASE_SCHEMA,
            file: self.file.clone(),
        };
        let mut out = serde_json::to_string(&head).unwrap_or_default();
        out.push('\n');
        for (id, known) in &self.issues {
            let line = BaseLine {
                id: id.clone(),
                fields: known.fields.clone(),
                unsettled: known.unsettled.clone(),
            };
            out.push_str(&serde_json::to_string(&line).unwrap_or_default());
            out.push('\n');
        }
        out
    }
}

/// An issue that went from one side to the other.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Moved {
    pub id: String,
    /// `created` (a new bead in the store), `added` (a new line in the file) or `updated`.
    pub change: &'static str,
    /// The fields that changed (empty for a new issue).
    pub fields: Vec<String>,
}

/// A field both sides changed (or a record one side removed), left as each side has it.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Conflict {
    pub id: String,
    /// The field; `null` for the whole record.
    pub field: Option<String>,
    pub why: String,
    /// The value at the last sync (`null` when absent or unknown).
    pub base: Option<Value>,
    pub bd: Option<Value>,
    pub splice: Option<Value>,
    /// The side `--take` settled it for; `null`: still a conflict.
    pub taken: Option<Take>,
}

/// bd's changes to a bead a holder has claimed: not taken yet.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub id: String,
    pub holder: String,
    pub fields: Vec<String>,
}

/// What a sync did (or, with `--dry-run`, would do).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Report {
    pub schema_version: u32,
    pub file: String,
    /// The base's file.
    pub base: String,
    pub dry_run: bool,
    /// Non-blank lines of the bd file.
    pub records: usize,
    /// Issues bd changed, now in the store.
    pub to_splice: Vec<Moved>,
    /// Issues splice changed, now in the file.
    pub to_bd: Vec<Moved>,
    /// Issues in step already.
    pub unchanged: usize,
    pub conflicts: Vec<Conflict>,
    pub held: Vec<Held>,
    /// Lines of the file that could not be taken (kept in it as they are).
    pub problems: Vec<Problem>,
}

impl Report {
    /// Anything left for a person: an unsettled conflict or a line not taken.
    pub fn left_over(&self) -> bool {
        !self.problems.is_empty() || self.conflicts.iter().any(|c| c.taken.is_none())
    }
}

/// What the plan computed: the report, the file's new text, the base's.
#[derive(Clone, Debug, PartialEq)]
pub struct Synced {
    pub report: Report,
    pub text: String,
    pub base: Base,
}

/// What a sync reads besides the store.
#[derive(Clone, Debug)]
pub struct Input<'a> {
    /// The bd file as the command line named it.
    pub file: &'a str,
    pub text: &'a str,
    /// The base file as shown in the report.
    pub base_file: &'a str,
    /// The last sync's base; `None`: never synced.
    pub base: Option<Base>,
    pub take: Option<Take>,
}

/// Sync the bd file at `path` (named `file`) with the store, as a person: read the file and the
/// base under the lock, commit the store's side, then write the file and the base.
pub fn sync(ctx: &Ctx, path: &Path, file: &str, take: Option<Take>) -> Result<Report> {
    ctx.admit(Verb::SyncBd)?;
    let actor = ctx.actor();
    let t = ctx.transition(Verb::SyncBd, &actor);
    let base_path = ctx.store.dir().join(BASE_FILE);
    let base_shown = shown_base(&base_path);
    // The file as the plan read it (under the lock), for the check before it is replaced.
    let read = std::cell::OnceCell::new();
    let synced = ctx.store.batch_then(
        &t,
        |scan| {
            let text = read_text(path)?;
            let text: &String = read.get_or_init(|| text);
            let base = read_base(&base_path)?;
            let input = Input {
                file,
                text,
                base_file: &base_shown,
                base,
                take,
            };
            plan(&input, scan)
        },
        |synced| {
            let read = read.get().map(String::as_str).unwrap_or_default();
            if synced.text != read {
                // bd may have written it since: then its change would be lost.
                if read_text(path)? != read {
                    return Err(Error::Invalid(format!(
                        "{file} changed while splice synced it (bd wrote it?): the store's side \
                         is committed and the file left as bd wrote it; run `splice sync bd` \
                         again"
                    )));
                }
                atomic::replace_file(path, synced.text.as_bytes())?;
            }
            let base = synced.base.render();
            let old = std::fs::read(&base_path).ok();
            if old.as_deref() != Some(base.as_bytes()) {
                let dir = base_path.parent().unwrap_or(ctx.store.dir());
                // `sync/` must be a directory of splice's own: a link there (committed by
                // someone hostile) is never followed, so the base is never written elsewhere.
                match std::fs::symlink_metadata(dir) {
                    Ok(m) if m.is_dir() => {}
                    Ok(_) => {
                        return Err(Error::bad_file(
                            dir,
                            "not a directory (a link or a file): the sync base is not written \
                             there; the store's side is committed; remove it and sync again",
                        ));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        std::fs::create_dir(dir).map_err(|e| Error::io(dir, e))?;
                    }
                    Err(e) => return Err(Error::io(dir, e)),
                }
                atomic::replace_file(&base_path, base.as_bytes())?;
            }
            Ok(())
        },
    )?;
    Ok(synced.report)
}

/// What a sync would do, reading the store without its lock and writing nothing.
pub fn dry_run(ctx: &Ctx, path: &Path, file: &str, take: Option<Take>) -> Result<Report> {
    ctx.admit(Verb::SyncBd)?;
    let base_path = ctx.store.dir().join(BASE_FILE);
    let text = read_text(path)?;
    let input = Input {
        file,
        text: &text,
        base_file: &shown_base(&base_path),
        base: read_base(&base_path)?,
        take,
    };
    let scan = ctx.store.scan()?;
    let mut report = plan(&input, &scan)?.output.report;
    report.dry_run = true;
    Ok(report)
}

fn shown_base(path: &Path) -> String {
    path.display().to_string()
}

fn read_text(path: &Path) -> Result<String> {
    let bytes = crate::safe_read::read(path, crate::safe_read::INPUT)?;
    String::from_utf8(bytes).map_err(|e| Error::bad_file(path, format!("not UTF-8: {e}")))
}

fn read_base(path: &Path) -> Result<Option<Base>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    let bytes = crate::safe_read::read(path, crate::safe_read::INPUT)?;
    let text =
        String::from_utf8(bytes).map_err(|e| Error::bad_file(path, format!("not UTF-8: {e}")))?;
    Base::parse(&text, path).map(Some)
}

/// The file's lines as read: how to write them back, and the records among them.
struct Lines<'a> {
    bom: bool,
    crlf: bool,
    /// Every line, without its end.
    raw: Vec<&'a str>,
    /// The records taken, by id: the line's index and the record.
    records: HashMap<String, (usize, Record)>,
    /// The ids in the file's order.
    order: Vec<String>,
    /// Ids of lines that were not taken: left alone on both sides.
    untaken: HashSet<String>,
}

fn read_lines<'a>(text: &'a str, scan: &Scan, report: &mut Report) -> Lines<'a> {
    let bom = text.starts_with('\u{feff}');
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let crlf = body.contains("\r\n");
    let mut raw: Vec<&str> = body
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if raw.last() == Some(&"") {
        raw.pop();
    }
    let mut folded: HashMap<String, String> = scan
        .beads
        .iter()
        .map(|b| (b.id.as_str().to_ascii_lowercase(), b.id.to_string()))
        .collect();
    let mut lines = Lines {
        bom,
        crlf,
        raw: Vec::new(),
        records: HashMap::new(),
        order: Vec::new(),
        untaken: HashSet::new(),
    };
    for (at, line) in raw.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        report.records += 1;
        let mut problem = |id: Option<String>, problem: String| {
            if let Some(id) = &id {
                lines.untaken.insert(id.clone());
            }
            report.problems.push(Problem {
                line: at + 1,
                id,
                problem,
            });
        };
        let record = match bd::parse_line(line, at + 1) {
            Ok(r) => r,
            Err(e) => {
                problem(import::id_of(line), e);
                continue;
            }
        };
        let id = record.bead.id.to_string();
        if let Some((first, _)) = lines.records.get(&id) {
            let why = format!("id {id} again (first on line {}): left alone", first + 1);
            problem(Some(id), why);
            continue;
        }
        let lower = id.to_ascii_lowercase();
        if let Some(other) = folded.get(&lower)
            && *other != id
        {
            let why = format!(
                "id {id} differs from {other} only by case (one file on a case-insensitive \
                 file system)"
            );
            problem(Some(id), why);
            continue;
        }
        folded.insert(lower, id.clone());
        lines.order.push(id.clone());
        lines.records.insert(id, (at, record));
    }
    lines.raw = raw;
    lines
}

/// One issue's outcome.
#[derive(Default)]
struct Outcome {
    /// The store's new image, when it changes.
    write: Option<Bead>,
    /// The file's new line, when it changes or is added.
    line: Option<String>,
    /// The base's new entry; `None` drops it.
    base: Option<Known>,
}

/// The pure plan: see the module doc.
pub fn plan(input: &Input, scan: &Scan) -> Result<Change<Synced>> {
    if let Some(u) = scan.unreadable.first() {
        return Err(Error::bad_file(
            &u.path,
            format!("cannot be read ({}): the sync would lose it", u.error),
        ));
    }
    if let Some(base) = &input.base
        && base.file != input.file
    {
        return Err(Error::Invalid(format!(
            "{} is the base of a sync with {}, not {}: sync that file, or remove {} to start \
             again (a first sync takes what both sides agree on)",
            input.base_file, base.file, input.file, input.base_file
        )));
    }
    let mut report = Report {
        schema_version: REPORT_SCHEMA,
        file: input.file.to_string(),
        base: input.base_file.to_string(),
        dry_run: false,
        records: 0,
        to_splice: Vec::new(),
        to_bd: Vec::new(),
        unchanged: 0,
        conflicts: Vec::new(),
        held: Vec::new(),
        problems: Vec::new(),
    };
    let lines = read_lines(input.text, scan, &mut report);
    let store: HashMap<&str, &Bead> = scan.beads.iter().map(|b| (b.id.as_str(), b)).collect();
    let empty = Base::default();
    let base = input.base.as_ref().unwrap_or(&empty);
    // Every id once: the file's order, then the store's, then the base's.
    let mut seen: HashSet<&str> = HashSet::new();
    let ids: Vec<&str> = lines
        .order
        .iter()
        .map(String::as_str)
        .chain(scan.beads.iter().map(|b| b.id.as_str()))
        .chain(base.issues.keys().map(String::as_str))
        .filter(|id| seen.insert(id))
        .collect();
    let mut writes = Vec::new();
    let mut replaced: HashMap<usize, String> = HashMap::new();
    let mut added = Vec::new();
    let mut issues = BTreeMap::new();
    for id in ids {
        if lines.untaken.contains(id) {
            if let Some(known) = base.issues.get(id) {
                issues.insert(id.to_string(), known.clone());
            }
            continue;
        }
        let record = lines.records.get(id);
        let bead = store.get(id).copied();
        let known = base.issues.get(id);
        let outcome = match (record, bead) {
            (Some((at, record)), Some(bead)) => {
                merge(id, *at, record, bead, known, input, &mut report)?
            }
            (Some((_, record)), None) => only_in_file(id, record, known, input, &mut report),
            (None, Some(bead)) => only_in_store(id, bead, known, input, &mut report),
            (None, None) => Outcome::default(),
        };
        if let Some(known) = outcome.base {
            issues.insert(id.to_string(), known);
        }
        if let Some(bead) = outcome.write {
            writes.push(bead);
        }
        if let Some(line) = outcome.line {
            match record {
                Some((at, _)) => {
                    replaced.insert(*at, line);
                }
                None => added.push(line),
            }
        }
    }
    refuse_cycles(&writes, &store)?;
    let end = if lines.crlf { "\r\n" } else { "\n" };
    let mut text = String::new();
    if lines.bom {
        text.push('\u{feff}');
    }
    for (at, raw) in lines.raw.iter().enumerate() {
        text.push_str(replaced.get(&at).map_or(*raw, String::as_str));
        text.push_str(end);
    }
    for line in added {
        text.push_str(&line);
        text.push_str(end);
    }
    let reason = format!(
        "sync bd {}: {} to splice, {} to bd, {} conflict(s), {} held",
        input.file,
        report.to_splice.len(),
        report.to_bd.len(),
        report
            .conflicts
            .iter()
            .filter(|c| c.taken.is_none())
            .count(),
        report.held.len()
    );
    Ok(Change {
        beads: writes,
        reason: Some(reason),
        output: Synced {
            report,
            text,
            base: Base {
                file: input.file.to_string(),
                issues,
            },
        },
    })
}

/// Where a field's change goes.
enum Way {
    /// The same on both sides.
    Same,
    /// bd's value to the store.
    ToSplice,
    /// splice's value to the file.
    ToBd,
    /// Left as each side has it, and why.
    Conflict(String),
}

/// An issue on both sides: field by field (see the module doc).
fn merge(
    id: &str,
    at: usize,
    record: &Record,
    bead: &Bead,
    known: Option<&Known>,
    input: &Input,
    report: &mut Report,
) -> Result<Outcome> {
    let theirs = bd::content(&record.bead);
    let ours = bd::content(bead);
    // Not synced yet (no base): the fields the last import (or sync) wrote, when one side
    // still has them, are the base; then the other side is the one that changed. A bead
    // imported before that was recorded: the store's, while splice has not written it since.
    let recorded = bead.pipeline.imported.as_ref();
    let at_import = |fields: &Map<String, Value>| {
        recorded.is_some_and(|i| match &i.fields_sha256 {
            Some(sha) => *sha == import::fields_sha256(fields),
            None => std::ptr::eq(fields, &ours) && i.seq == bead.pipeline.seq,
        })
    };
    let fallback = if known.is_some() {
        None
    } else if at_import(&ours) {
        Some(ours.clone())
    } else if at_import(&theirs) {
        Some(theirs.clone())
    } else {
        None
    }
    .map(|fields| Known {
        fields,
        unsettled: BTreeSet::new(),
    });
    let known = known.or(fallback.as_ref());
    let owned: &[&str] = if bead.is_node() { &KEPT_ON_MERGE } else { &[] };
    let holder = bead.pipeline.lease.as_ref().map(|l| l.holder.clone());
    let mut to_store = ours.clone();
    let mut to_file = theirs.clone();
    let mut new_base = Known::default();
    let (mut to_splice, mut to_bd, mut held) = (Vec::new(), Vec::new(), Vec::new());
    let conflicts_before = report.conflicts.len();
    let mut keys: Vec<&String> = ours.keys().collect();
    keys.extend(theirs.keys().filter(|k| !ours.contains_key(*k)));
    for key in keys {
        let (b, s) = (theirs.get(key), ours.get(key));
        let was = known.and_then(|k| k.get(key));
        let mut way = match was {
            _ if b == s => Way::Same,
            Some(o) if o == s => Way::ToSplice,
            Some(o) if o == b => Way::ToBd,
            Some(_) => Way::Conflict("changed on both sides since the last sync".into()),
            None => Way::Conflict("differs, and no sync has seen it agree".into()),
        };
        if matches!(way, Way::ToSplice) && owned.contains(&key.as_str()) {
            way = Way::Conflict(format!(
                "bd changed it, but on a started bead the route sets {key}"
            ));
        }
        if let Way::Conflict(why) = way {
            let taken = match input.take {
                Some(Take::Bd) if !owned.contains(&key.as_str()) => Some(Take::Bd),
                Some(Take::Splice) => Some(Take::Splice),
                _ => None,
            };
            report.conflicts.push(Conflict {
                id: id.to_string(),
                field: Some(key.clone()),
                why,
                base: was.flatten().cloned(),
                bd: b.cloned(),
                splice: s.cloned(),
                taken,
            });
            way = match taken {
                Some(Take::Bd) => Way::ToSplice,
                Some(Take::Splice) => Way::ToBd,
                None => {
                    Known::keep_into(known, key, &mut new_base);
                    continue;
                }
            };
        }
        match way {
            Way::ToSplice if holder.is_some() => {
                held.push(key.clone());
                Known::keep_into(known, key, &mut new_base);
                continue;
            }
            Way::ToSplice => {
                set(&mut to_store, key, b);
                to_splice.push(key.clone());
            }
            Way::ToBd => {
                set(&mut to_file, key, s);
                to_bd.push(key.clone());
            }
            Way::Same | Way::Conflict(_) => {}
        }
        if let Some(v) = to_store
            .get(key)
            .filter(|_| to_store.get(key) == to_file.get(key))
        {
            new_base.fields.insert(key.clone(), v.clone());
        }
    }
    // The file's line: as bd wrote it while its fields stand, else written as bd would.
    let line = if to_file == theirs {
        record_line(input.text, at)
    } else {
        let mut written = import::rebuild(
            &record.bead,
            to_file.clone(),
            Some(Imported {
                from: "bd".into(),
                seq: 0,
                fields_sha256: None,
                layout: record.layout.clone(),
            }),
        )?;
        written.pipeline.seq = 1;
        written.updated_at = bead.updated_at.clone();
        bd::to_line(&written, false)
    };
    // The store's image: what bd changed, and (when the two sides agree) the line's layout, so
    // that `export bd` gives the synced line back.
    let in_step = to_store == to_file;
    // A line carrying splice's own keys (`pipeline`, …) is one no export gives back: no layout
    // would make it, so none is written for it.
    let relayout = in_step && record.ignored.is_empty() && bd::to_line(bead, false) != line;
    let write = if holder.is_none() && (to_store != ours || relayout) {
        let imported = match in_step {
            true => Some(Imported {
                from: "bd".into(),
                seq: next_seq(bead),
                fields_sha256: Some(import::fields_sha256(&to_store)),
                layout: bd::parse_line(&line, at + 1)
                    .map_err(|e| Error::Invalid(format!("internal: a synced line: {e}")))?
                    .layout,
            }),
            false => None,
        };
        Some(import::rebuild(bead, to_store.clone(), imported)?)
    } else {
        None
    };
    if !to_splice.is_empty() {
        report.to_splice.push(Moved {
            id: id.to_string(),
            change: "updated",
            fields: to_splice,
        });
    }
    if !to_bd.is_empty() {
        report.to_bd.push(Moved {
            id: id.to_string(),
            change: "updated",
            fields: to_bd,
        });
    }
    if let Some(holder) = holder.filter(|_| !held.is_empty()) {
        report.held.push(Held {
            id: id.to_string(),
            holder,
            fields: held,
        });
    }
    if to_store == ours && to_file == theirs && report.conflicts.len() == conflicts_before {
        report.unchanged += 1;
    }
    Ok(Outcome {
        write,
        line: (to_file != theirs).then_some(line),
        base: Some(new_base),
    })
}

/// The line at index `at` of `text` as read (its end and a byte-order mark left out).
fn record_line(text: &str, at: usize) -> String {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let line = body.split('\n').nth(at).unwrap_or_default();
    line.strip_suffix('\r').unwrap_or(line).to_string()
}

fn set(fields: &mut Map<String, Value>, key: &str, value: Option<&Value>) {
    match value {
        Some(v) => fields.insert(key.to_string(), v.clone()),
        None => fields.remove(key),
    };
}

/// An issue only the file has: new in bd, or one whose bead file was removed since the last
/// sync.
fn only_in_file(
    id: &str,
    record: &Record,
    known: Option<&Known>,
    input: &Input,
    report: &mut Report,
) -> Outcome {
    let theirs = bd::content(&record.bead);
    if let Some(known) = known {
        let taken = (input.take == Some(Take::Bd)).then_some(Take::Bd);
        report.conflicts.push(Conflict {
            id: id.to_string(),
            field: None,
            why: "synced before, and its bead file is gone from the store: `--take bd` \
                  imports it again"
                .into(),
            base: None,
            bd: Some(Value::Object(theirs.clone())),
            splice: None,
            taken,
        });
        if taken.is_none() {
            return Outcome {
                base: Some(known.clone()),
                ..Outcome::default()
            };
        }
    }
    report.to_splice.push(Moved {
        id: id.to_string(),
        change: "created",
        fields: Vec::new(),
    });
    Outcome {
        write: Some(import::fresh(record.clone(), 0)),
        line: None,
        base: Some(Known {
            fields: theirs,
            unsettled: BTreeSet::new(),
        }),
    }
}

/// An issue only the store has: new in splice, or one bd removed from its file since the last
/// sync.
fn only_in_store(
    id: &str,
    bead: &Bead,
    known: Option<&Known>,
    input: &Input,
    report: &mut Report,
) -> Outcome {
    let ours = bd::content(bead);
    if let Some(known) = known {
        let taken = (input.take == Some(Take::Splice)).then_some(Take::Splice);
        report.conflicts.push(Conflict {
            id: id.to_string(),
            field: None,
            why: "synced before, and bd's file no longer has it: splice keeps the bead; \
                  `--take splice` writes it back to the file"
                .into(),
            base: None,
            bd: None,
            splice: Some(Value::Object(ours.clone())),
            taken,
        });
        if taken.is_none() {
            return Outcome {
                base: Some(known.clone()),
                ..Outcome::default()
            };
        }
    }
    report.to_bd.push(Moved {
        id: id.to_string(),
        change: "added",
        fields: Vec::new(),
    });
    Outcome {
        write: None,
        line: Some(bd::to_line(bead, false)),
        base: Some(Known {
            fields: ours,
            unsettled: BTreeSet::new(),
        }),
    }
}

/// A parent cycle through a bead the sync writes would make the tree endless: refused whole
/// (bd refuses one too, so only a hand-edited file has it).
fn refuse_cycles(writes: &[Bead], store: &HashMap<&str, &Bead>) -> Result<()> {
    if writes.is_empty() {
        return Ok(());
    }
    let written: HashMap<&str, &Bead> = writes.iter().map(|b| (b.id.as_str(), b)).collect();
    let parents: HashMap<&str, &str> = store
        .iter()
        .filter(|(id, _)| !written.contains_key(*id))
        .map(|(id, b)| (*id, *b))
        .chain(written.iter().map(|(id, b)| (*id, *b)))
        .filter_map(|(id, b)| Some((id, b.parent.as_deref()?)))
        .collect();
    let on_cycle = import::cycles(&parents);
    match written.keys().find_map(|id| on_cycle.get(id)) {
        Some(ring) => Err(Error::Invalid(format!(
            "the file's parents make a cycle ({ring}): nothing synced; fix the parent in bd \
             (`bd update`) or in splice, then sync again"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
