//! [`Counts`]: a node's attempts per step. A node has counts for a few steps at most, so they
//! are a sorted list, not a `BTreeMap` (whose first node is about 330 bytes even for one entry:
//! issue 16's memory at 100,000 beads). It reads and writes as a JSON object in key order, as
//! the map did, so the file format is unchanged.

use serde::de::{Deserialize, Deserializer};
use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::model::Text;

/// Step name → count, sorted by name, one entry per name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts(Vec<(Text, u32)>);

impl Counts {
    /// No counts.
    pub fn new() -> Counts {
        Counts(Vec::new())
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    /// `key`'s count.
    pub fn get(&self, key: &str) -> Option<&u32> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    /// `key`'s count, to change.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut u32> {
        self.find(key).ok().map(|i| &mut self.0[i].1)
    }

    /// Has `key` a count?
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Set `key`'s count; the count it had, if any.
    pub fn insert(&mut self, key: impl Into<Text>, value: u32) -> Option<u32> {
        let key = key.into();
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (key, value));
                None
            }
        }
    }

    /// Remove `key`; the count it had, if any.
    pub fn remove(&mut self, key: &str) -> Option<u32> {
        self.find(key).ok().map(|i| self.0.remove(i).1)
    }

    /// No counts at all?
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many steps have a count.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// (step, count) in step order.
    pub fn iter(&self) -> impl Iterator<Item = (&Text, &u32)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// The counts in step order.
    pub fn values(&self) -> impl Iterator<Item = &u32> {
        self.0.iter().map(|(_, v)| v)
    }
}

impl<K: Into<Text>> FromIterator<(K, u32)> for Counts {
    fn from_iter<I: IntoIterator<Item = (K, u32)>>(iter: I) -> Counts {
        let mut counts = Counts::new();
        for (k, v) in iter {
            counts.insert(k, v);
        }
        counts
    }
}

impl Serialize for Counts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Counts {
    /// As a map reads it: a key given twice keeps its last count.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Counts, D::Error> {
        let map = std::collections::BTreeMap::<Text, u32>::deserialize(deserializer)?;
        Ok(Counts(map.into_iter().collect()))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn counts_read_write_and_order_as_the_map_they_replace() {
        let text = r#"{"review":2,"implement":1,"generate-spec":3}"#;
        let counts: Counts = serde_json::from_str(text).unwrap();
        let map: BTreeMap<String, u32> = serde_json::from_str(text).unwrap();
        assert_eq!(
            serde_json::to_string(&counts).unwrap(),
            serde_json::to_string(&map).unwrap()
        );
        let mut c = counts.clone();
        assert_eq!(c.get("implement"), Some(&1));
        assert_eq!(c.insert("implement", 5), Some(1));
        assert_eq!(c.insert("deliver", 1), None);
        *c.get_mut("review").unwrap() += 1;
        assert_eq!(c.remove("generate-spec"), Some(3));
        assert!(!c.contains_key("generate-spec"));
        let keys: Vec<&Text> = c.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["deliver", "implement", "review"]);
        assert_eq!(c.values().sum::<u32>(), 9);
        let twice: Counts = serde_json::from_str(r#"{"a":1,"a":2}"#).unwrap();
        assert_eq!(twice.get("a"), Some(&2));
        assert!(serde_json::from_str::<Counts>(r#"{"a":-1}"#).is_err());
    }
}
