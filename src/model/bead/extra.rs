//! [`Extra`]: the fields of a bead this version does not know, kept and written back. Almost
//! every bead has none, so the map costs one pointer until it holds something (an inline
//! `serde_json::Map` is 72 bytes, three a bead: issue 16's memory at 100,000 beads).

use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A JSON object's fields, `None` while empty. Reads and writes as a [`Map`]
/// (`Deref`/`DerefMut`), and (de)serializes exactly as one, flattened or not.
#[derive(Clone, Debug, Default)]
pub struct Extra(Option<Box<Map<String, Value>>>);

impl Extra {
    pub fn new() -> Extra {
        Extra(None)
    }
}

fn empty() -> &'static Map<String, Value> {
    static EMPTY: OnceLock<Map<String, Value>> = OnceLock::new();
    EMPTY.get_or_init(Map::new)
}

impl Deref for Extra {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Map<String, Value> {
        match &self.0 {
            Some(map) => map,
            None => empty(),
        }
    }
}

impl DerefMut for Extra {
    fn deref_mut(&mut self) -> &mut Map<String, Value> {
        self.0.get_or_insert_with(Box::default)
    }
}

/// Empty is empty, whether it was ever written to or not.
impl PartialEq for Extra {
    fn eq(&self, other: &Extra) -> bool {
        **self == **other
    }
}

impl From<Map<String, Value>> for Extra {
    fn from(map: Map<String, Value>) -> Extra {
        Extra((!map.is_empty()).then(|| Box::new(map)))
    }
}

impl<'a> IntoIterator for &'a Extra {
    type Item = (&'a String, &'a Value);
    type IntoIter = serde_json::map::Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        (**self).iter()
    }
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Extra {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Extra, D::Error> {
        Map::deserialize(deserializer).map(Extra::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_map_costs_a_pointer_and_reads_writes_and_compares_as_a_map() {
        assert_eq!(std::mem::size_of::<Extra>(), std::mem::size_of::<usize>());
        let mut e = Extra::new();
        assert!(e.is_empty() && e.get("x").is_none());
        assert_eq!(serde_json::to_string(&e).unwrap(), "{}");
        e.insert("design".into(), "kept".into());
        assert_eq!(e["design"], "kept");
        let back: Extra = serde_json::from_str(r#"{"design":"kept"}"#).unwrap();
        assert_eq!(back, e);
        e.remove("design");
        assert_eq!(e, Extra::new(), "emptied is empty");
        let none: Extra = serde_json::from_str("{}").unwrap();
        assert!(none.0.is_none());
    }
}
