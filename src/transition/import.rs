//! `splice import bd FILE`: a bd or br `issues.jsonl` export into the store, as plain beads
//! (`docs/bd-interop.md`). One journaled batch ([`Store::batch`](crate::store::Store::batch)):
//! a crash leaves all of it or none.
//!
//! The plan ([`plan`]) is pure: the file's text and the store as read under the lock in, the
//! after-images and a report out. A record is taken when its line parses
//! ([`bd::parse_line`](crate::model::bd::parse_line)), its id is not already in the file
//! (the first wins), does not differ only by case from another id, is not an unreadable bead
//! file's, and it is not in a parent cycle; a record that fails one of these is a problem,
//! reported with its line. Without `--strict` the taken records are imported and the problems
//! listed; with it, any problem refuses the whole file. A dependency (or a parent) that names
//! no bead in the file or the store — a deleted issue, a wisp bd never exports, an
//! `external:<project>:<id>` reference — is kept as written, as bd keeps it, and listed as
//! *dangling* (a `blocks` one blocks until such a bead is there and closed).
//!
//! A record for a bead already in the store updates it, and one that would change nothing is
//! not written (importing a file twice writes nothing the second time). A bead already started
//! in splice keeps its pipeline state, status and place in the tree, and takes bd's other
//! fields: a *merge*, reported.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::{Map, Value};

use super::{Ctx, Verb, next_seq};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::model::bd::{self, Imported, Layout, Record};
use crate::model::printable::printable;
use crate::refusal::Refusal;
use crate::store::{Change, Scan};

/// The version of [`Report`]'s JSON.
pub const REPORT_SCHEMA: u32 = 1;

/// Fields of a started bead that are splice's, not bd's: a merge keeps them.
pub(super) const KEPT_ON_MERGE: [&str; 4] = ["status", "closed_at", "close_reason", "parent"];

/// A record that was not imported, and why.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// 1-based.
    pub line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub problem: String,
}

/// A dependency, or a parent, that names no bead in the file or the store: kept as written.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Dangling {
    pub line: usize,
    pub id: String,
    /// The id it names, as written.
    pub depends_on: String,
    /// The dependency's type (`parent` for the `parent` field).
    #[serde(rename = "type")]
    pub dep_type: String,
    /// Why nothing is there: the file's line that was not imported, or neither in the file nor
    /// in the store.
    pub note: String,
}

/// A started bead that took bd's fields.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Merge {
    pub line: usize,
    pub id: String,
    pub note: String,
}

/// What an import did.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub schema_version: u32,
    pub file: String,
    /// Non-blank lines read.
    pub records: usize,
    pub created: Vec<String>,
    pub updated: Vec<String>,
    pub merged: Vec<Merge>,
    pub unchanged: usize,
    pub problems: Vec<Problem>,
    /// Dependencies of imported records that name no bead, by line.
    pub dangling: Vec<Dangling>,
    /// Records that carried splice's own keys (`pipeline`, `schema_version`), which an import
    /// never takes: a file cannot set pipeline state.
    pub ignored: Vec<Problem>,
}

/// Import `text` (the file `file`'s contents) as a person.
pub fn import(ctx: &Ctx, file: &str, text: &str, strict: bool) -> Result<Report> {
    ctx.admit(Verb::ImportBd)?;
    let actor = ctx.actor();
    let t = ctx.transition(Verb::ImportBd, &actor);
    ctx.store.batch(&t, |scan| plan(file, text, scan, strict))
}

/// The pure plan: see the module doc.
pub fn plan(file: &str, text: &str, scan: &Scan, strict: bool) -> Result<Change<Report>> {
    let mut report = Report {
        schema_version: REPORT_SCHEMA,
        file: file.to_string(),
        records: 0,
        created: Vec::new(),
        updated: Vec::new(),
        merged: Vec::new(),
        unchanged: 0,
        problems: Vec::new(),
        dangling: Vec::new(),
        ignored: Vec::new(),
    };
    let store: HashMap<&str, &Bead> = scan.beads.iter().map(|b| (b.id.as_str(), b)).collect();
    // A byte-order mark is no part of the first record (bd reads past it too).
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let taken = read_records(text, scan, &store, &mut report);
    let taken = settle(taken, &store, &mut report);
    report.problems.sort_by_key(|p| p.line);
    if strict && !report.problems.is_empty() {
        let listed = report
            .problems
            .iter()
            .map(|p| format!("  line {}: {}", p.line, printable(&p.problem)))
            .collect::<Vec<_>>()
            .join("\n");
        return Err(Refusal::ImportRefused {
            file: file.to_string(),
            count: report.problems.len(),
            listed,
        }
        .into());
    }
    let mut beads = Vec::new();
    for (line, record) in taken {
        let id = record.bead.id.to_string();
        match store.get(id.as_str()) {
            None => {
                beads.push(fresh(record, 0));
                report.created.push(id.to_string());
            }
            Some(old) => match update(old, record)? {
                None => report.unchanged += 1,
                Some((bead, merged)) => {
                    if merged {
                        let note = format!(
                            "started in splice (route {}, at {}): took bd's fields, kept its \
                             pipeline state, status and parent",
                            old.pipeline.route, old.pipeline.step
                        );
                        report.merged.push(Merge {
                            line,
                            id: id.to_string(),
                            note,
                        });
                    } else {
                        report.updated.push(id.to_string());
                    }
                    beads.push(bead);
                }
            },
        }
    }
    let reason = format!(
        "import bd {file}: {} created, {} updated, {} merged, {} unchanged, {} not imported",
        report.created.len(),
        report.updated.len(),
        report.merged.len(),
        report.unchanged,
        report.problems.len()
    );
    Ok(Change {
        beads,
        reason: Some(reason),
        output: report,
    })
}

/// Parse every line; keep the first record of each id that is not an unreadable file's and
/// does not collide by case. In file order.
fn read_records(
    text: &str,
    scan: &Scan,
    store: &HashMap<&str, &Bead>,
    report: &mut Report,
) -> Vec<(usize, Record)> {
    let unreadable: HashSet<&str> = scan.unreadable.iter().map(|u| u.id.as_str()).collect();
    let mut folded: HashMap<String, String> = store
        .keys()
        .chain(unreadable.iter())
        .map(|id| (id.to_ascii_lowercase(), id.to_string()))
        .collect();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    let mut taken = Vec::new();
    for (at, line) in text.lines().enumerate() {
        let line_no = at + 1;
        if line.trim().is_empty() {
            continue;
        }
        report.records += 1;
        let problem = |id: Option<&str>, problem: String| Problem {
            line: line_no,
            id: id.map(str::to_string),
            problem,
        };
        let record = match bd::parse_line(line, line_no) {
            Ok(r) => r,
            Err(e) => {
                report.problems.push(problem(id_of(line).as_deref(), e));
                continue;
            }
        };
        let id = record.bead.id.to_string();
        if !record.ignored.is_empty() {
            let what = format!(
                "carries splice's own {} (ignored: an import never sets pipeline state)",
                record.ignored.join(", ")
            );
            report.ignored.push(problem(Some(&id), what));
        }
        if let Some(first) = first_line.get(&id) {
            let why = format!("id {id} again (first on line {first}); this one is not imported");
            report.problems.push(problem(Some(&id), why));
            continue;
        }
        if unreadable.contains(id.as_str()) {
            let why = format!(
                "the store's file for {id} cannot be read; repair or remove it, then import again"
            );
            report.problems.push(problem(Some(&id), why));
            continue;
        }
        let lower = id.to_ascii_lowercase();
        match folded.get(&lower) {
            Some(other) if *other != id => {
                let why = format!(
                    "id {id} differs from {other} only by case (one file on a case-insensitive \
                     file system)"
                );
                report.problems.push(problem(Some(&id), why));
                continue;
            }
            _ => {}
        }
        folded.insert(lower.to_string(), id.to_string());
        first_line.insert(id.to_string(), line_no);
        taken.push((line_no, record));
    }
    taken
}

/// The id of a line that did not parse as a record, when it has a valid one (for the report).
pub(super) fn id_of(line: &str) -> Option<String> {
    let value: Value = serde_json::from_str(line).ok()?;
    let id = value.get("id")?.as_str()?;
    crate::model::id::is_valid(id).then(|| id.to_string())
}

/// Drop the records on a parent cycle (through the file or the store): each is a problem. List
/// the dependencies and parents of the others that name no bead in the file or the store.
fn settle(
    taken: Vec<(usize, Record)>,
    store: &HashMap<&str, &Bead>,
    report: &mut Report,
) -> Vec<(usize, Record)> {
    let on_cycle: HashMap<String, String> = {
        let parents: HashMap<&str, &str> = store
            .values()
            .filter_map(|b| Some((b.id.as_str(), b.parent.as_deref()?)))
            .chain(
                taken
                    .iter()
                    .filter_map(|(_, r)| Some((r.bead.id.as_str(), r.bead.parent.as_deref()?))),
            )
            .collect();
        cycles(&parents)
            .into_iter()
            .map(|(id, ring)| (id.to_string(), ring))
            .collect()
    };
    let (cut, kept): (Vec<_>, Vec<_>) = taken
        .into_iter()
        .partition(|(_, r)| on_cycle.contains_key(r.bead.id.as_str()));
    for (line, r) in cut {
        report.problems.push(Problem {
            line,
            id: Some(r.bead.id.to_string()),
            problem: format!("parent cycle: {}", on_cycle[r.bead.id.as_str()]),
        });
    }
    let in_file: HashSet<&str> = kept.iter().map(|(_, r)| r.bead.id.as_str()).collect();
    let not_imported: HashMap<&str, usize> = report
        .problems
        .iter()
        .filter_map(|p| Some((p.id.as_deref()?, p.line)))
        .collect();
    let mut dangling = Vec::new();
    for (line, r) in &kept {
        let b = &r.bead;
        let named = b
            .dependencies
            .iter()
            .map(|d| (d.depends_on_id.as_str(), d.dep_type.as_str()))
            .chain(
                b.parent
                    .as_deref()
                    .filter(|p| !b.dependencies.iter().any(|d| d.depends_on_id == *p))
                    .map(|p| (p, "parent")),
            );
        for (to, kind) in named {
            if in_file.contains(to) || store.contains_key(to) {
                continue;
            }
            let note = match not_imported.get(to) {
                Some(at) => format!("its record (line {at}) was not imported"),
                None => "neither in the file nor in the store".to_string(),
            };
            dangling.push(Dangling {
                line: *line,
                id: b.id.to_string(),
                depends_on: to.to_string(),
                dep_type: kind.to_string(),
                note,
            });
        }
    }
    report.dangling = dangling;
    kept
}

/// Every bead on a parent cycle, with the cycle as `a → b → a` (from that bead). Linear: each
/// bead has one parent, so each walk stops at the first bead an earlier walk saw.
pub(super) fn cycles<'a>(parents: &HashMap<&'a str, &'a str>) -> HashMap<&'a str, String> {
    let mut seen: HashSet<&str> = HashSet::with_capacity(parents.len());
    let mut on_cycle = HashMap::new();
    for &start in parents.keys() {
        let mut path: Vec<&str> = Vec::new();
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut at = start;
        while seen.insert(at) {
            index.insert(at, path.len());
            path.push(at);
            match parents.get(at) {
                Some(&p) => at = p,
                None => break,
            }
        }
        // `at` was seen: on this walk (a new cycle from it) or an earlier one (nothing new).
        if let Some(&from) = index.get(at)
            && parents.get(path[path.len() - 1]) == Some(&at)
        {
            let ring = &path[from..];
            for (k, &member) in ring.iter().enumerate() {
                let text: Vec<&str> = ring[k..].iter().chain(&ring[..=k]).copied().collect();
                on_cycle.insert(member, text.join(" → "));
            }
        }
    }
    on_cycle
}

/// A record as a new bead's image (`seq` 0 for a new bead, else the bead's read seq).
pub(super) fn fresh(record: Record, seq: u64) -> Bead {
    let Record {
        mut bead, layout, ..
    } = record;
    bead.pipeline.seq = seq;
    let fields = bd::content(&bead);
    bead.pipeline.imported = Some(Box::new(imported(layout, seq.saturating_add(1), &fields)));
    bead
}

/// What an import records on the bead it writes at `seq`.
pub(super) fn imported(layout: Layout, seq: u64, fields: &Map<String, Value>) -> Imported {
    Imported {
        from: "bd".into(),
        seq,
        fields_sha256: Some(fields_sha256(fields)),
        layout,
    }
}

/// The sha256 of bd's fields ([`bd::content`]'s keys) with every object's keys sorted, so that
/// the same values give the same hash however a writer ordered them.
pub(super) fn fields_sha256(fields: &Map<String, Value>) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&m[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            v => v.clone(),
        }
    }
    crate::authority::credential::sha256_hex(&sorted(&Value::Object(fields.clone())).to_string())
}

/// `old` updated from `record`: `None` when nothing would change; else the image and whether
/// it is a merge (a started bead).
fn update(old: &Bead, record: Record) -> Result<Option<(Bead, bool)>> {
    let merge = old.is_node();
    let mut fields = bd::content(&record.bead);
    if merge {
        let kept = bd::content(old);
        for key in KEPT_ON_MERGE {
            match kept.get(key) {
                Some(v) => fields.insert(key.to_string(), v.clone()),
                None => fields.remove(key),
            };
        }
    }
    let imported = imported(record.layout, next_seq(old), &bd::content(&record.bead));
    let same_import = old
        .pipeline
        .imported
        .as_ref()
        .is_some_and(|i| i.layout == imported.layout);
    if same_import && fields == bd::content(old) {
        return Ok(None);
    }
    Ok(Some((rebuild(old, fields, Some(imported))?, merge)))
}

/// `old` with bd's fields `fields` ([`bd::content`]'s keys) and, when given, a new import
/// record; its pipeline otherwise as it was.
pub(super) fn rebuild(
    old: &Bead,
    mut fields: serde_json::Map<String, Value>,
    imported: Option<Imported>,
) -> Result<Bead> {
    fields.insert(
        "updated_at".into(),
        Value::String(old.updated_at.to_string()),
    );
    fields.insert("schema_version".into(), old.schema_version.into());
    let mut pipeline = old.pipeline.clone();
    if let Some(imported) = imported {
        pipeline.imported = Some(Box::new(imported));
    }
    let pipeline = serde_json::to_value(&pipeline).map_err(|e| Error::Invalid(e.to_string()))?;
    fields.insert("pipeline".into(), pipeline);
    serde_json::from_value(Value::Object(fields))
        .map_err(|e| Error::Invalid(format!("internal: an imported bead: {e}")))
}

#[cfg(test)]
mod tests;
