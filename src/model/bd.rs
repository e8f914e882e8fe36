//! bd and br interop: one line of a `.beads/issues.jsonl` export as a bead, and a bead as such
//! a line (`docs/bd-interop.md`). Pure: the importer and exporter do the I/O.
//!
//! A bead's top-level fields are bd's (`model::bead`): `id`, `title`, `description`,
//! `status`, `priority`, `issue_type`, `labels`, `parent`, `dependencies`, `created_at`,
//! `updated_at`, `closed_at`, `close_reason`, `metadata`. Every other key of a record (`design`,
//! `acceptance_criteria`, `notes`, `assignee`, `owner`, `comments`, and the many bd adds:
//! `ephemeral`, `agent_state`, `hook_bead`, `pinned`, `wisp_type`, …) is kept verbatim in the
//! bead's `extra`, as is every unknown status and dependency type. How the record was written
//! is kept on the bead ([`Layout`]: its keys in order, its dependencies' key order, Go's
//! escaping, the keys it gave as `null`, a `metadata` written as a string), so an export of a
//! bead splice did not change gives back the line the file had, byte for byte; when the layout
//! cannot, the line itself is kept (checked at import).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Bead;
use super::bead::{Dependency, Extra};

/// The dependency type that builds the tree: the child depends on its parent.
pub const PARENT_CHILD: &str = "parent-child";

/// Keys of a record that are splice's, never bd's: an imported record's are ignored.
const SPLICE_KEYS: [&str; 2] = ["pipeline", "schema_version"];

/// The typed fields a record may give as `null`, read as their empty value (bd and br write
/// `"labels":null`): `(key, the value a bead holds for it)`.
const NULL_AS_EMPTY: [&str; 8] = [
    "description",
    "status",
    "priority",
    "issue_type",
    "labels",
    "dependencies",
    "created_at",
    "metadata",
];

/// bd's order of an issue's keys (its `Issue` type): where an export puts a key a record did
/// not have (splice set it since the import).
const BD_ORDER: [&str; 33] = [
    "id",
    "title",
    "description",
    "design",
    "acceptance_criteria",
    "notes",
    "spec_id",
    "status",
    "priority",
    "issue_type",
    "assignee",
    "owner",
    "estimated_minutes",
    "created_at",
    "created_by",
    "updated_at",
    "started_at",
    "closed_at",
    "close_reason",
    "closed_by_session",
    "due_at",
    "defer_until",
    "external_ref",
    "source_system",
    "metadata",
    "compaction_level",
    "compacted_at",
    "compacted_at_commit",
    "original_size",
    "labels",
    "dependencies",
    "comments",
    "parent",
];

/// On a bead imported from bd (`pipeline.imported`): what its export needs to give the record
/// back as it was.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Imported {
    /// Where it came from: `bd` (a bd or br export).
    pub from: String,
    /// The seq of the import that last wrote the bead: a later seq means splice changed it.
    pub seq: u64,
    /// The sha256 of bd's fields as that import (or `sync bd`) wrote them, keys sorted: a later
    /// sync with no base tells by it which side changed since (`docs/bd-interop.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields_sha256: Option<String>,
    /// How the record was written, for the export.
    #[serde(flatten)]
    pub layout: Layout,
}

/// How a record was written, beyond its values: what an export needs to write the same line.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Layout {
    /// The record's keys, in its order.
    pub keys: Vec<String>,
    /// The record's `updated_at` (the bead's is the import's time, as for every write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// The targets of the record's dependencies that had no `type` (read as `blocks`, written
    /// back without one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untyped: Vec<String>,
    /// The record's line in the file it was last imported from (1-based): an export writes
    /// imported beads in this order, as the file had them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub line: usize,
    /// The keys of its dependency entries, in their order (bd: `issue_id`, `depends_on_id`,
    /// `type`, `created_at`, `created_by`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dep_keys: Vec<String>,
    /// The line escapes `<`, `>`, `&`, U+2028 and U+2029 as `\u003c`… (bd, written in Go).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub go_escape: bool,
    /// The line puts a space after each `,` and `:` (a file a script rewrote: Python's
    /// `json.dumps`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spaced: bool,
    /// The typed keys the record gave as `null` ([`NULL_AS_EMPTY`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nulls: Vec<String>,
    /// The record's `metadata` when it was not an object: newer bd writes it as a JSON string
    /// (`"{}"`). The bead holds the object it spells (or none); an export gives this back while
    /// the bead's metadata is still that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// The line itself, kept only when the layout above cannot give it back byte for byte (a
    /// number written another way, keys of dependencies in differing orders, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbatim: Option<String>,
}

impl Layout {
    fn style(&self) -> Style {
        Style {
            go: self.go_escape,
            spaced: self.spaced,
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One record read from a line: the bead it becomes, how it was written, and what was left out.
#[derive(Clone, Debug)]
pub struct Record {
    /// The bead it becomes.
    pub bead: Bead,
    /// How it was written.
    pub layout: Layout,
    /// splice's own keys the record carried (`pipeline`, …), which an import does not take.
    pub ignored: Vec<String>,
}

/// Read one line of an export (its number `line_no`, 1-based). The error says what is wrong
/// (the field's JSON path for a value of the wrong type); the caller adds the line number.
pub fn parse_line(line: &str, line_no: usize) -> Result<Record, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(mut map) = value else {
        return Err("not a JSON object".into());
    };
    let mut ignored = Vec::new();
    for key in SPLICE_KEYS {
        if map.remove(key).is_some() {
            ignored.push(key.to_string());
        }
    }
    match map.get("id") {
        Some(Value::String(id)) if super::id::is_valid(id) => {}
        Some(Value::String(id)) => {
            return Err(format!(
                "id {}: not a bead id (letters, digits, `.`, `-`, `_`; no leading `.`, no `..`, \
                 at most {} bytes)",
                super::id::shown(id),
                super::id::MAX_LEN
            ));
        }
        Some(_) => return Err("id: not a string".into()),
        None => return Err("no id".into()),
    }
    if !matches!(map.get("title"), Some(Value::String(_))) {
        return Err("title: missing or not a string".into());
    }
    let keys: Vec<String> = map.keys().cloned().collect();
    let parent_given = map.contains_key("parent");
    let mut nulls = Vec::new();
    for key in NULL_AS_EMPTY {
        if map.get(key).is_some_and(Value::is_null) {
            map.remove(key);
            nulls.push(key.to_string());
        }
    }
    let metadata = match map.get("metadata") {
        Some(Value::Object(_)) | None => None,
        Some(other) => {
            let other = other.clone();
            match metadata_object(&other) {
                Some(object) => map.insert("metadata".into(), Value::Object(object)),
                None => map.remove("metadata"),
            };
            Some(other)
        }
    };
    let deps: &[Value] = match map.get("dependencies") {
        Some(Value::Array(deps)) => deps,
        _ => &[],
    };
    let untyped: Vec<String> = deps
        .iter()
        .filter(|d| d.get("type").is_none())
        .filter_map(|d| d.get("depends_on_id")?.as_str().map(str::to_string))
        .collect();
    let mut dep_keys: Vec<String> = Vec::new();
    for key in deps.iter().filter_map(Value::as_object).flat_map(Map::keys) {
        if !dep_keys.contains(key) {
            dep_keys.push(key.clone());
        }
    }
    let updated_at = map
        .get("updated_at")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut bead: Bead = serde_path_to_error::deserialize(Value::Object(map)).map_err(|e| {
        let path = e.path().to_string();
        format!("{path}: {}", e.into_inner())
    })?;
    if !parent_given {
        bead.parent = bead
            .dependencies
            .iter()
            .find(|d| d.dep_type == PARENT_CHILD)
            .map(|d| d.depends_on_id.clone());
    }
    bead.schema_version = 0;
    let mut layout = Layout {
        keys,
        updated_at,
        untyped,
        line: line_no,
        dep_keys,
        go_escape: !line.contains(GO_ESCAPED) && GO_ESCAPES.iter().any(|e| line.contains(e)),
        spaced: false,
        nulls,
        metadata,
        verbatim: None,
    };
    // The export is checked here, once: a line the layout cannot give back is kept whole (but
    // one carrying splice's keys, which an export leaves out).
    let record = imported_record(&bead, &layout, false);
    if ignored.is_empty() && render(&record, layout.style()) != line {
        layout.spaced = true;
        if render(&record, layout.style()) != line {
            layout.spaced = false;
            layout.verbatim = Some(line.to_string());
        }
    }
    Ok(Record {
        bead,
        layout,
        ignored,
    })
}

/// The object a non-object `metadata` stands for: a JSON string spelling an object (newer bd),
/// or nothing.
fn metadata_object(raw: &Value) -> Option<Map<String, Value>> {
    match serde_json::from_str(raw.as_str()?) {
        Ok(Value::Object(object)) => Some(object),
        _ => None,
    }
}

/// The bd fields of `bead` as a record: the whole bead but `pipeline` and `schema_version`.
fn fields_of(bead: &Bead) -> Map<String, Value> {
    let Ok(Value::Object(mut map)) = serde_json::to_value(bead) else {
        unreachable!("a bead serializes to an object")
    };
    for key in SPLICE_KEYS {
        map.remove(key);
    }
    map
}

/// `beads` as a bd export: a line each, the imported ones in their file's order (the line each
/// was last imported from), then the others in id order.
pub fn export(beads: &[Bead], with_pipeline: bool) -> String {
    let mut order: Vec<&Bead> = beads.iter().collect();
    order.sort_by_key(|b| match &b.pipeline.imported {
        Some(imp) => (0, imp.layout.line),
        None => (1, 0),
    });
    let mut text = String::new();
    for bead in order {
        text.push_str(&to_line(bead, with_pipeline));
        text.push('\n');
    }
    text
}

/// `bead` as a line of a bd export (no newline). A bead imported from bd and not changed since
/// gives the line its record had, byte for byte; one splice changed gives the record's keys in
/// its order and escaping, plus what splice set since (`status`, `updated_at`, its close
/// fields, a key it added, each where bd puts it); a bead made in splice is written as bd
/// writes an issue. `with_pipeline` adds splice's `pipeline` object.
pub fn to_line(bead: &Bead, with_pipeline: bool) -> String {
    let imported = bead.pipeline.imported.as_deref();
    if let Some(imp) = imported
        && !with_pipeline
        && bead.pipeline.seq == imp.seq
        && let Some(line) = &imp.layout.verbatim
    {
        return line.clone();
    }
    let style = imported.map_or(Style::default(), |i| i.layout.style());
    render(&to_record(bead, with_pipeline), style)
}

/// `bead` as a bd record (see [`to_line`]): the values, in the order the line gives them.
pub fn to_record(bead: &Bead, with_pipeline: bool) -> Map<String, Value> {
    let mut out = match &bead.pipeline.imported {
        Some(imp) => imported_record(bead, &imp.layout, bead.pipeline.seq != imp.seq),
        None => native(bead, fields_of(bead)),
    };
    if with_pipeline {
        let pipeline = serde_json::to_value(&bead.pipeline).unwrap_or(Value::Null);
        out.insert("pipeline".into(), pipeline);
    }
    out
}

/// An imported bead's record: its layout's keys, and when `changed`, what splice set since.
fn imported_record(bead: &Bead, layout: &Layout, changed: bool) -> Map<String, Value> {
    let mut fields = fields_of(bead);
    let mut keys: Vec<String> = layout.keys.clone();
    if changed {
        let parent_dep = bead
            .dependencies
            .iter()
            .any(|d| d.dep_type == PARENT_CHILD && Some(&d.depends_on_id) == bead.parent.as_ref());
        let added: Vec<String> = fields
            .iter()
            .filter(|(key, value)| {
                !keys.contains(key)
                    && match key.as_str() {
                        "status" | "updated_at" => true,
                        "parent" => !parent_dep && !value.is_null(),
                        key => Some(*value) != absent(key).as_ref(),
                    }
            })
            .map(|(key, _)| key.clone())
            .collect();
        for key in added {
            // After the last key bd puts before it (at the front when there is none).
            let rank = bd_rank(&key);
            let at = keys
                .iter()
                .rposition(|k| bd_rank(k) < rank)
                .map_or(0, |at| at + 1);
            keys.insert(at, key);
        }
    }
    let mut out = Map::new();
    for key in keys {
        if out.contains_key(&key) {
            continue;
        }
        let mut value = match key.as_str() {
            "updated_at" if !changed => {
                layout.updated_at.clone().map_or(Value::Null, Value::String)
            }
            "metadata" => metadata_value(fields.remove(&key), layout),
            _ => match fields.remove(&key) {
                Some(value) => value,
                // A kept key splice removed since (`update --notes ""`): bd leaves it out.
                None if changed => continue,
                None => Value::Null,
            },
        };
        if layout.nulls.contains(&key) && Some(&value) == absent(&key).as_ref() {
            value = Value::Null;
        }
        if key == "dependencies" {
            shape_dependencies(&mut value, layout);
        }
        out.insert(key, value);
    }
    out
}

/// Where bd puts `key` ([`BD_ORDER`]); a key bd does not name goes after them.
fn bd_rank(key: &str) -> usize {
    BD_ORDER
        .iter()
        .position(|k| *k == key)
        .unwrap_or(BD_ORDER.len())
}

/// The value a bead holds for a typed key a record does not have (a key the bead does not type:
/// none, `null`).
fn absent(key: &str) -> Option<Value> {
    Some(match key {
        "description" | "created_at" => Value::String(String::new()),
        "status" => Value::String("open".into()),
        "priority" => Value::from(2),
        "issue_type" => Value::String("task".into()),
        "labels" | "dependencies" => Value::Array(Vec::new()),
        "metadata" => Value::Object(Map::new()),
        _ => Value::Null,
    })
}

/// The record's `metadata`: as it was written (a string, for newer bd) while the bead's is
/// still the object that spells, else the bead's object (a string again when it was one).
fn metadata_value(ours: Option<Value>, layout: &Layout) -> Value {
    let ours = ours.unwrap_or_else(|| Value::Object(Map::new()));
    let Some(raw) = &layout.metadata else {
        return ours;
    };
    let spelled = Value::Object(metadata_object(raw).unwrap_or_default());
    if spelled == ours {
        raw.clone()
    } else if raw.is_string() {
        Value::String(ours.to_string())
    } else {
        ours
    }
}

/// The dependency entries as the record wrote them: its keys' order, and no `type` on those
/// that had none.
fn shape_dependencies(deps: &mut Value, layout: &Layout) {
    for dep in deps.as_array_mut().into_iter().flatten() {
        let Some(d) = dep.as_object_mut() else {
            continue;
        };
        let to = d.get("depends_on_id").and_then(Value::as_str);
        if to.is_some_and(|t| layout.untyped.iter().any(|u| u == t))
            && d.get("type").and_then(Value::as_str) == Some("blocks")
        {
            d.remove("type");
        }
        if layout.dep_keys.is_empty() {
            continue;
        }
        let mut ordered = Map::new();
        for key in &layout.dep_keys {
            if let Some(v) = d.remove(key) {
                ordered.insert(key.clone(), v);
            }
        }
        ordered.append(d);
        *d = ordered;
    }
}

/// The escapes by which a line shows bd's (Go's) escaping, and the characters Go escapes.
const GO_ESCAPES: [&str; 5] = ["\\u003c", "\\u003e", "\\u0026", "\\u2028", "\\u2029"];
const GO_ESCAPED: [char; 5] = ['<', '>', '&', '\u{2028}', '\u{2029}'];

/// How a line is written, beyond its values.
#[derive(Clone, Copy, Debug, Default)]
pub struct Style {
    /// Go's escaping ([`Layout::go_escape`]).
    pub go: bool,
    /// A space after `,` and `:` ([`Layout::spaced`]).
    pub spaced: bool,
}

/// `record` as one line of JSON in `style` (serde_json's compact output otherwise).
pub fn render(record: &Map<String, Value>, style: Style) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, style);
    record.serialize(&mut ser).expect("a JSON value serializes");
    String::from_utf8(out).expect("JSON is UTF-8")
}

impl serde_json::ser::Formatter for Style {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        if !self.go {
            return writer.write_all(fragment.as_bytes());
        }
        let mut from = 0;
        for (at, c) in fragment.char_indices() {
            let escape = match c {
                '<' => "\\u003c",
                '>' => "\\u003e",
                '&' => "\\u0026",
                '\u{2028}' => "\\u2028",
                '\u{2029}' => "\\u2029",
                _ => continue,
            };
            writer.write_all(&fragment.as_bytes()[from..at])?;
            writer.write_all(escape.as_bytes())?;
            from = at + c.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[from..])
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.separator(writer, first)
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.separator(writer, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(if self.spaced { b": " } else { b":" })
    }
}

impl Style {
    fn separator<W: ?Sized + std::io::Write>(
        &self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        match (first, self.spaced) {
            (true, _) => Ok(()),
            (false, true) => writer.write_all(b", "),
            (false, false) => writer.write_all(b","),
        }
    }
}

/// A bead made in splice as bd writes an issue: empty and null fields left out, the parent a
/// `parent-child` dependency, each dependency naming its issue and when it was made.
fn native(bead: &Bead, mut fields: Map<String, Value>) -> Map<String, Value> {
    fields.retain(|_, v| match v {
        Value::Null => false,
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    });
    fields.remove("parent");
    let mut deps: Vec<Dependency> = bead.dependencies.clone();
    if let Some(parent) = &bead.parent
        && !deps
            .iter()
            .any(|d| d.dep_type == PARENT_CHILD && d.depends_on_id == *parent)
    {
        deps.push(Dependency {
            depends_on_id: parent.clone(),
            dep_type: PARENT_CHILD.into(),
            extra: Extra::new(),
        });
    }
    if !deps.is_empty() {
        let deps: Vec<Value> = deps
            .into_iter()
            .map(|d| {
                let mut m = Map::new();
                m.insert("issue_id".into(), Value::String(bead.id.to_string()));
                if let Ok(Value::Object(rest)) = serde_json::to_value(&d) {
                    m.extend(rest);
                }
                // bd writes when each was made (br refuses one without): the bead's own
                // creation, when the link was made with it, unless it says otherwise.
                m.entry("created_at")
                    .or_insert_with(|| Value::String(bead.created_at.to_string()));
                Value::Object(m)
            })
            .collect();
        fields.insert("dependencies".into(), Value::Array(deps));
    }
    fields
}

/// An `external:<project>:<capability>` dependency target, as bd writes one: its project and
/// capability (both non-empty; the capability may hold `:`).
pub fn external_ref(target: &str) -> Option<(&str, &str)> {
    let rest = target.strip_prefix("external:")?;
    let (project, capability) = rest.split_once(':')?;
    (!project.is_empty() && !capability.is_empty()).then_some((project, capability))
}

/// The bd fields of `bead` that an import compares and takes: everything but `pipeline`,
/// `schema_version` and `updated_at` (the writer stamps that).
pub fn content(bead: &Bead) -> Map<String, Value> {
    let mut fields = fields_of(bead);
    fields.remove("updated_at");
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_keeps_every_key_and_unknown_status() {
        let line = r#"{"id":"bd-a1.2","title":"T","status":"hooked","agent_state":{"x":[1,2.5]},"dependencies":[{"issue_id":"bd-a1.2","depends_on_id":"bd-a1","type":"parent-child","created_by":"me"}],"updated_at":"2025-10-01T10:00:00.123-07:00"}"#;
        let r = parse_line(line, 1).unwrap();
        assert_eq!(r.bead.parent.as_deref(), Some("bd-a1"));
        assert_eq!(r.bead.status.as_str(), "hooked");
        assert_eq!(
            r.layout.keys,
            [
                "id",
                "title",
                "status",
                "agent_state",
                "dependencies",
                "updated_at"
            ]
        );
        assert_eq!(r.layout.verbatim, None, "the layout gives the line back");
        let mut bead = r.bead;
        bead.pipeline.imported = Some(Box::new(Imported {
            from: "bd".into(),
            seq: 0,
            fields_sha256: None,
            layout: r.layout,
        }));
        bead.updated_at = "2026-01-01T00:00:00Z".into();
        assert_eq!(to_line(&bead, false), line);
    }

    /// A record splice changed is written as bd would: its own keys in its order and escaping, a
    /// key splice added after the last key bd puts before it, a kept key splice removed left out.
    #[test]
    fn a_changed_record_keeps_its_layout_and_places_what_splice_set_where_bd_would() {
        let line = r#"{"id":"bd-1","title":"a <b>","notes":"n","status":"open","priority":2,"issue_type":"task","created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-01T00:00:00Z"}"#;
        let line = line.replace("<b>", "\\u003cb\\u003e");
        let r = parse_line(&line, 3).unwrap();
        assert!(
            r.layout.go_escape && r.layout.verbatim.is_none(),
            "{:?}",
            r.layout
        );
        let mut bead = r.bead;
        bead.pipeline.imported = Some(Box::new(Imported {
            from: "bd".into(),
            seq: 1,
            fields_sha256: None,
            layout: r.layout,
        }));
        bead.pipeline.seq = 1;
        assert_eq!(to_line(&bead, false), line, "unchanged: the line");
        bead.pipeline.seq = 2;
        bead.updated_at = "2026-02-02T00:00:00Z".into();
        bead.labels = vec!["ui".into()];
        bead.extra.remove("notes");
        bead.extra.insert("assignee".into(), "ana".into());
        let expected = concat!(
            r#"{"id":"bd-1","title":"a \u003cb\u003e","status":"open","priority":2,"#,
            r#""issue_type":"task","assignee":"ana","created_at":"2025-01-01T00:00:00Z","#,
            r#""updated_at":"2026-02-02T00:00:00Z","labels":["ui"]}"#
        );
        assert_eq!(to_line(&bead, false), expected);
    }

    /// bd writes each dependency with the time it was made, and br refuses a record whose
    /// dependency has none: a bead made in splice gives its own creation time, the time its
    /// split made its parent link. One that has a time keeps it.
    #[test]
    fn a_native_bead_s_dependencies_carry_a_creation_time_as_bd_writes_them() {
        let mut bead = Bead::new(
            "sp-a.1".into(),
            "T".into(),
            String::new(),
            "2025-03-04T05:06:07Z",
        );
        bead.parent = Some("sp-a".into());
        let dep = |on: &str, at: Option<&str>| {
            let mut extra = Extra::new();
            if let Some(at) = at {
                extra.insert("created_at".into(), at.into());
            }
            Dependency {
                depends_on_id: on.into(),
                dep_type: "blocks".into(),
                extra,
            }
        };
        bead.dependencies = vec![dep("sp-b", None), dep("sp-c", Some("2025-05-05T00:00:00Z"))];
        let record = to_record(&bead, false);
        let deps: Vec<(&str, &str, &str, &str)> = record["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let field = |k: &str| d[k].as_str().unwrap_or("(none)");
                (
                    field("issue_id"),
                    field("depends_on_id"),
                    field("type"),
                    field("created_at"),
                )
            })
            .collect();
        assert_eq!(
            deps,
            [
                ("sp-a.1", "sp-b", "blocks", "2025-03-04T05:06:07Z"),
                ("sp-a.1", "sp-c", "blocks", "2025-05-05T00:00:00Z"),
                ("sp-a.1", "sp-a", "parent-child", "2025-03-04T05:06:07Z"),
            ]
        );
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        let err = |l: &str| parse_line(l, 1).unwrap_err();
        assert!(err("{").starts_with("not JSON"));
        assert_eq!(err("[1]"), "not a JSON object");
        assert_eq!(err(r#"{"title":"t"}"#), "no id");
        assert!(err(r#"{"id":"../x","title":"t"}"#).contains("not a bead id"));
        assert!(err(r#"{"id":"a","title":"t","priority":"P1"}"#).starts_with("priority: "));
        assert!(err(r#"{"id":"a"}"#).starts_with("title"));
    }
}
