//! What a journal record carries for a bead it changes (issue 38): the change, not a copy of
//! the bead. A [`Patch`](super::journal::Patch) holds the operations that turn the image the
//! writer read into the one it wrote, and the hash of each, so that whoever applies it (recovery,
//! the runner's feed) can check it starts from the right image and ends at the right one.
//!
//! The operations work on the bead's JSON: `{"set": PATH, "v": VALUE}` puts a value (a new key,
//! or one that changed), `{"del": PATH}` removes a key, `{"push": PATH, "v": [VALUES]}` appends to
//! an array (the histories a bead keeps grow at their end). A path is a list of object keys and
//! array indices from the bead's root. [`diff`] makes the shortest it finds: objects key by key,
//! arrays element by element when the old array is a prefix of the new one's length, anything
//! else whole.
//!
//! The hash ([`value_sha`]) is over the bead's JSON with every object's keys sorted, so that a
//! key put in another place gives the same hash: 128 bits of sha256, as hex.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// One step of a path: an object's key or an array's index.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(untagged)]
pub enum Step {
    Index(usize),
    Key(String),
}

/// One operation of a patch.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum Op {
    /// Put `v` at `set` (replacing what is there, or adding a key).
    Set { set: Vec<Step>, v: Value },
    /// Append `v` to the array at `push`.
    Push { push: Vec<Step>, v: Vec<Value> },
    /// Remove the key at `del`.
    Del { del: Vec<Step> },
}

/// The operations that turn `before` into `after` (both objects).
pub fn diff(before: &Value, after: &Value) -> Vec<Op> {
    let mut ops = Vec::new();
    walk(before, after, &mut Vec::new(), &mut ops);
    ops
}

fn walk(before: &Value, after: &Value, path: &mut Vec<Step>, ops: &mut Vec<Op>) {
    if before == after {
        return;
    }
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            for (key, value) in a {
                path.push(Step::Key(key.clone()));
                match b.get(key) {
                    Some(old) => walk(old, value, path, ops),
                    None => ops.push(Op::Set {
                        set: path.clone(),
                        v: value.clone(),
                    }),
                }
                path.pop();
            }
            for key in b.keys().filter(|k| !a.contains_key(*k)) {
                let mut del = path.clone();
                del.push(Step::Key(key.clone()));
                ops.push(Op::Del { del });
            }
        }
        (Value::Array(b), Value::Array(a)) if !b.is_empty() && a.len() >= b.len() => {
            let mut inner = Vec::new();
            for (i, (old, new)) in b.iter().zip(a).enumerate() {
                path.push(Step::Index(i));
                walk(old, new, path, &mut inner);
                path.pop();
            }
            if a.len() > b.len() {
                inner.push(Op::Push {
                    push: path.clone(),
                    v: a[b.len()..].to_vec(),
                });
            }
            // Element by element only when that is shorter than the array whole.
            let whole = Op::Set {
                set: path.clone(),
                v: after.clone(),
            };
            if size(&inner) < size(std::slice::from_ref(&whole)) {
                ops.extend(inner);
            } else {
                ops.push(whole);
            }
        }
        _ => ops.push(Op::Set {
            set: path.clone(),
            v: after.clone(),
        }),
    }
}

/// The bytes `ops` take in a journal line.
pub fn size(ops: &[Op]) -> usize {
    serde_json::to_vec(ops).map_or(usize::MAX, |v| v.len())
}

/// Apply `ops` to `doc`; the error says which operation does not fit it.
pub fn apply(doc: &mut Value, ops: &[Op]) -> Result<(), String> {
    for (n, op) in ops.iter().enumerate() {
        let fail = |what: &str| format!("operation {} of the patch: {what}", n + 1);
        match op {
            Op::Set { set, v } => {
                let Some((last, parent)) = set.split_last() else {
                    *doc = v.clone();
                    continue;
                };
                let at = find(doc, parent).ok_or_else(|| fail("its path is not in the image"))?;
                match (at, last) {
                    (Value::Object(m), Step::Key(k)) => {
                        m.insert(k.clone(), v.clone());
                    }
                    (Value::Array(a), Step::Index(i)) if *i < a.len() => a[*i] = v.clone(),
                    _ => return Err(fail("its path is not in the image")),
                }
            }
            Op::Push { push, v } => match find(doc, push) {
                Some(Value::Array(a)) => a.extend(v.iter().cloned()),
                _ => return Err(fail("it appends to what is not an array")),
            },
            Op::Del { del } => {
                let (last, parent) = del.split_last().ok_or_else(|| fail("an empty path"))?;
                match (find(doc, parent), last) {
                    (Some(Value::Object(m)), Step::Key(k)) if m.contains_key(k) => {
                        m.shift_remove(k);
                    }
                    _ => return Err(fail("it removes a key the image does not have")),
                }
            }
        }
    }
    Ok(())
}

fn find<'a>(doc: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    path.iter().try_fold(doc, |at, step| match (at, step) {
        (Value::Object(m), Step::Key(k)) => m.get_mut(k),
        (Value::Array(a), Step::Index(i)) => a.get_mut(*i),
        _ => None,
    })
}

/// The hash a patch names an image by: sha256 of its JSON, keys sorted at every depth, 128 bits
/// as hex.
pub fn value_sha(value: &Value) -> String {
    let mut h = Sha256::new();
    canonical(value, &mut h);
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Feed `v` to `h` with every object's keys sorted (each key and scalar as its JSON text).
fn canonical(v: &Value, h: &mut Sha256) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            h.update(b"{");
            for k in keys {
                h.update(Value::String(k.clone()).to_string().as_bytes());
                h.update(b":");
                canonical(&m[k], h);
                h.update(b",");
            }
            h.update(b"}");
        }
        Value::Array(a) => {
            h.update(b"[");
            for x in a {
                canonical(x, h);
                h.update(b",");
            }
            h.update(b"]");
        }
        scalar => h.update(scalar.to_string().as_bytes()),
    }
}

/// A map's keys in order, for tests and messages.
#[cfg(test)]
fn keys(m: &serde_json::Map<String, Value>) -> Vec<&str> {
    m.keys().map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn a_patch_turns_the_old_image_into_the_new_and_is_small() {
        let before = json!({
            "id": "sp-a", "title": "T", "gone": 1,
            "pipeline": {"seq": 3, "history": [{"step": "a"}, {"step": "b"}],
                         "lease": {"holder": "h"}, "nulls": null}
        });
        let after = json!({
            "id": "sp-a", "title": "T", "new": null,
            "pipeline": {"seq": 4, "history": [{"step": "a"}, {"step": "b"}, {"step": "c"}],
                         "nulls": null}
        });
        let ops = diff(&before, &after);
        let mut doc = before.clone();
        apply(&mut doc, &ops).unwrap();
        assert_eq!(doc, after);
        assert_eq!(value_sha(&doc), value_sha(&after));
        let text = serde_json::to_string(&ops).unwrap();
        assert!(
            text.contains(r#"{"push":["pipeline","history"],"v":[{"step":"c"}]}"#),
            "{text}"
        );
        assert!(text.contains(r#"{"del":["gone"]}"#), "{text}");
        assert!(
            text.contains(r#"{"set":["new"],"v":null}"#),
            "a null is kept: {text}"
        );
        // Read back from its JSON, the same operations.
        let back: Vec<Op> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, ops);
        assert_eq!(
            keys(doc.as_object().unwrap()),
            ["id", "title", "pipeline", "new"]
        );
    }

    #[test]
    fn a_patch_that_does_not_fit_the_image_says_so() {
        let mut doc = json!({"a": {"b": [1]}});
        let err = |doc: &mut Value, ops: &str| {
            apply(doc, &serde_json::from_str::<Vec<Op>>(ops).unwrap()).unwrap_err()
        };
        assert!(err(&mut doc, r#"[{"set":["x","y"],"v":1}]"#).contains("operation 1"));
        assert!(err(&mut doc, r#"[{"push":["a"],"v":[1]}]"#).contains("not an array"));
        assert!(err(&mut doc, r#"[{"del":["z"]}]"#).contains("does not have"));
        assert!(err(&mut doc, r#"[{"set":["a","b",5],"v":1}]"#).contains("not in the image"));
    }

    #[test]
    fn the_hash_does_not_depend_on_key_order_but_on_every_value() {
        let a = json!({"x": 1, "y": {"p": [1, "2"], "q": null}});
        let b = json!({"y": {"q": null, "p": [1, "2"]}, "x": 1});
        assert_eq!(value_sha(&a), value_sha(&b));
        assert_ne!(
            value_sha(&a),
            value_sha(&json!({"x": 1, "y": {"p": [1, 2], "q": null}}))
        );
        assert_eq!(value_sha(&a).len(), 32);
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-5i64..5).prop_map(Value::from),
            "[a-c]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-d]", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever the two images, the patch between them turns one into the other.
        #[test]
        fn every_patch_applies_to_its_base(a in value(), b in value()) {
            let (a, b) = (json!({"k": a}), json!({"k": b}));
            let mut doc = a.clone();
            apply(&mut doc, &diff(&a, &b)).unwrap();
            prop_assert_eq!(doc, b);
        }
    }
}
