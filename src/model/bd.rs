//! bd and br interop: one line of a `.beads/issues.jsonl` export as a bead, and a bead as such
//! a line (`docs/bd-interop.md`). Pure: the importer and exporter do the I/O.
//!
//! A bead's top-level fields are bd's (`model::bead`): `id`, `title`, `description`,
//! `status`, `priority`, `issue_type`, `labels`, `parent`, `dependencies`, `created_at`,
//! `updated_at`, `closed_at`, `close_reason`, `metadata`. Every other key of a record (`design`,
//! `acceptance_criteria`, `notes`, `assignee`, `owner`, `comments`, and the many bd adds:
//! `ephemeral`, `agent_state`, `hook_bead`, `pinned`, `wisp_type`, …) is kept verbatim in the
//! bead's `extra`, as is every unknown status and dependency type. The record's keys are kept
//! on the bead ([`Imported`]), so an export writes the keys the record had and no others: import
//! then export gives the same records, key order and whitespace aside.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Bead;
use super::bead::{Dependency, Extra};

/// The dependency type that builds the tree: the child depends on its parent.
pub const PARENT_CHILD: &str = "parent-child";

/// Keys of a record that are splice's, never bd's: an imported record's are ignored.
const SPLICE_KEYS: [&str; 2] = ["pipeline", "schema_version"];

/// On a bead imported from bd (`pipeline.imported`): what its export needs to give the record
/// back as it was.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Imported {
    /// Where it came from: `bd` (a bd or br export).
    pub from: String,
    /// The record's keys, in its order.
    pub keys: Vec<String>,
    /// The record's `updated_at` (the bead's is the import's time, as for every write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// The seq of the import that last wrote the bead: a later seq means splice changed it.
    pub seq: u64,
    /// The targets of the record's dependencies that had no `type` (read as `blocks`, written
    /// back without one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untyped: Vec<String>,
}

/// One record read from a line: the bead it becomes, its keys, and what was left out.
#[derive(Clone, Debug)]
pub struct Record {
    pub bead: Bead,
    pub keys: Vec<String>,
    /// The record's `updated_at`, when it had one.
    pub updated_at: Option<String>,
    /// splice's own keys the record carried (`pipeline`, …), which an import does not take.
    pub ignored: Vec<String>,
    /// The targets of its dependencies that had no `type` ([`Imported::untyped`]).
    pub untyped: Vec<String>,
}

/// Read one line of an export. The error says what is wrong (the field's JSON path for a value
/// of the wrong type); the caller adds the line number.
pub fn parse_line(line: &str) -> Result<Record, String> {
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
    let untyped: Vec<String> = match map.get("dependencies") {
        Some(Value::Array(deps)) => deps
            .iter()
            .filter(|d| d.get("type").is_none())
            .filter_map(|d| d.get("depends_on_id")?.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
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
    Ok(Record {
        bead,
        keys,
        updated_at,
        ignored,
        untyped,
    })
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

/// `bead` as a line of a bd export (no newline). An imported bead gives the keys its record
/// had, plus, when splice changed it since, `status`, `updated_at` and its close fields; a bead
/// made in splice gives bd's usual fields (its parent as a `parent-child` dependency, as bd
/// writes it). `with_pipeline` adds splice's `pipeline` object.
pub fn to_record(bead: &Bead, with_pipeline: bool) -> Map<String, Value> {
    let mut fields = fields_of(bead);
    let mut out = match &bead.pipeline.imported {
        Some(imp) => {
            let changed = bead.pipeline.seq != imp.seq;
            let mut keys: Vec<&str> = imp.keys.iter().map(String::as_str).collect();
            if changed {
                keys.extend(["status", "updated_at"]);
                if bead.closed_at.is_some() {
                    keys.push("closed_at");
                }
                if bead.close_reason.is_some() {
                    keys.push("close_reason");
                }
            }
            let mut out = Map::new();
            for key in keys {
                if out.contains_key(key) {
                    continue;
                }
                let mut value = if key == "updated_at" && !changed {
                    imp.updated_at.clone().map_or(Value::Null, Value::String)
                } else {
                    fields.remove(key).unwrap_or(Value::Null)
                };
                if key == "dependencies" && !imp.untyped.is_empty() {
                    untype(&mut value, &imp.untyped);
                }
                out.insert(key.to_string(), value);
            }
            out
        }
        None => native(bead, fields),
    };
    if with_pipeline {
        let pipeline = serde_json::to_value(&bead.pipeline).unwrap_or(Value::Null);
        out.insert("pipeline".into(), pipeline);
    }
    out
}

/// Take `type: blocks` off the dependencies to `untyped` (they had no type when imported).
fn untype(deps: &mut Value, untyped: &[String]) {
    for dep in deps.as_array_mut().into_iter().flatten() {
        let Some(d) = dep.as_object_mut() else {
            continue;
        };
        let to = d.get("depends_on_id").and_then(Value::as_str);
        if to.is_some_and(|t| untyped.iter().any(|u| u == t))
            && d.get("type").and_then(Value::as_str) == Some("blocks")
        {
            d.remove("type");
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
        let r = parse_line(line).unwrap();
        assert_eq!(r.bead.parent.as_deref(), Some("bd-a1"));
        assert_eq!(r.bead.status.as_str(), "hooked");
        assert_eq!(
            r.keys,
            [
                "id",
                "title",
                "status",
                "agent_state",
                "dependencies",
                "updated_at"
            ]
        );
        let mut bead = r.bead;
        bead.pipeline.imported = Some(Box::new(Imported {
            from: "bd".into(),
            keys: r.keys,
            updated_at: r.updated_at,
            seq: 0,
            untyped: r.untyped,
        }));
        bead.updated_at = "2026-01-01T00:00:00Z".into();
        let back = to_record(&bead, false);
        let original: Value = serde_json::from_str(line).unwrap();
        assert_eq!(Value::Object(back), original);
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
        let err = |l: &str| parse_line(l).unwrap_err();
        assert!(err("{").starts_with("not JSON"));
        assert_eq!(err("[1]"), "not a JSON object");
        assert_eq!(err(r#"{"title":"t"}"#), "no id");
        assert!(err(r#"{"id":"../x","title":"t"}"#).contains("not a bead id"));
        assert!(err(r#"{"id":"a","title":"t","priority":"P1"}"#).starts_with("priority: "));
        assert!(err(r#"{"id":"a"}"#).starts_with("title"));
    }
}
