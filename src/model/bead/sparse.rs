//! [`Sparse`]: a container almost every bead leaves empty, one pointer wide until it holds
//! something. A scan holds every bead at once (100,000 in a big campaign, issue 16), and an empty
//! `Vec` is three words, an empty `serde_json::Map` 72 bytes inline.
//!
//! - [`Extra`]: the fields of a bead this version does not know, kept and written back.
//! - [`Few`]: a list most beads leave empty (exits, a loop's trajectory, acceptance checks,
//!   routing records…).
//! - a `BTreeMap` most beads leave empty (a node's step responses): 24 bytes inline.

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A container, `None` while empty. Reads and writes as the container it holds
/// (`Deref`/`DerefMut`), and (de)serializes exactly as one, flattened or not.
#[derive(Clone, Debug)]
#[allow(clippy::box_collection)] // the point: one word while empty
pub struct Sparse<C>(Option<Box<C>>);

/// The fields of a JSON object this version does not know.
pub type Extra = Sparse<Map<String, Value>>;

/// A list most beads leave empty.
pub type Few<T> = Sparse<Vec<T>>;

/// What [`Sparse`] can hold: a container with an empty value to show while it holds none.
pub trait Container: Default + 'static {
    /// An empty container, shared.
    fn none() -> &'static Self;
    fn holds_nothing(&self) -> bool;
}

impl<T: 'static> Container for Vec<T> {
    fn none() -> &'static Vec<T> {
        const { &Vec::new() }
    }

    fn holds_nothing(&self) -> bool {
        self.is_empty()
    }
}

impl<K: 'static, V: 'static> Container for BTreeMap<K, V> {
    fn none() -> &'static BTreeMap<K, V> {
        const { &BTreeMap::new() }
    }

    fn holds_nothing(&self) -> bool {
        self.is_empty()
    }
}

impl Container for Map<String, Value> {
    fn none() -> &'static Map<String, Value> {
        static EMPTY: OnceLock<Map<String, Value>> = OnceLock::new();
        EMPTY.get_or_init(Map::new)
    }

    fn holds_nothing(&self) -> bool {
        self.is_empty()
    }
}

impl<C: Container> Sparse<C> {
    /// Empty, holding nothing.
    pub const fn new() -> Sparse<C> {
        Sparse(None)
    }

    /// Empty, whether it was ever written to or not.
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|c| c.holds_nothing())
    }

    /// Empty it (no box kept).
    pub fn clear(&mut self) {
        self.0 = None;
    }
}

impl<T: 'static> Few<T> {
    /// Give back spare room; an empty list gives back its box too.
    pub fn shrink_to_fit(&mut self) {
        match &mut self.0 {
            Some(v) if v.is_empty() => self.0 = None,
            Some(v) => v.shrink_to_fit(),
            None => {}
        }
    }

    /// The list as a `Vec`, taken out.
    pub fn into_vec(self) -> Vec<T> {
        self.0.map(|v| *v).unwrap_or_default()
    }
}

impl<C: Container> Default for Sparse<C> {
    fn default() -> Sparse<C> {
        Sparse::new()
    }
}

impl<C: Container> Deref for Sparse<C> {
    type Target = C;

    fn deref(&self) -> &C {
        match &self.0 {
            Some(c) => c,
            None => C::none(),
        }
    }
}

impl<C: Container> DerefMut for Sparse<C> {
    fn deref_mut(&mut self) -> &mut C {
        self.0.get_or_insert_with(Box::default)
    }
}

/// Compared as the containers they hold: empty is empty.
impl<C: Container + PartialEq> PartialEq for Sparse<C> {
    fn eq(&self, other: &Sparse<C>) -> bool {
        **self == **other
    }
}

impl<T: PartialEq<U> + 'static, U, const N: usize> PartialEq<[U; N]> for Few<T> {
    fn eq(&self, other: &[U; N]) -> bool {
        **self == *other
    }
}

impl<C: Container> From<C> for Sparse<C> {
    fn from(c: C) -> Sparse<C> {
        Sparse((!c.holds_nothing()).then(|| Box::new(c)))
    }
}

impl<T: 'static> FromIterator<T> for Few<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Few<T> {
        Few::from(iter.into_iter().collect::<Vec<T>>())
    }
}

impl<'a, T: 'static> IntoIterator for &'a Few<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        (**self).iter()
    }
}

impl<T: 'static> IntoIterator for Few<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

impl<'a> IntoIterator for &'a Extra {
    type Item = (&'a String, &'a Value);
    type IntoIter = serde_json::map::Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        (**self).iter()
    }
}

impl<C: Container + Serialize> Serialize for Sparse<C> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de, C: Container + Deserialize<'de>> Deserialize<'de> for Sparse<C> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Sparse<C>, D::Error> {
        C::deserialize(deserializer).map(Sparse::from)
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

    #[test]
    fn an_empty_list_costs_a_pointer_and_reads_writes_and_compares_as_a_vec() {
        assert_eq!(
            std::mem::size_of::<Few<String>>(),
            std::mem::size_of::<usize>()
        );
        let mut f: Few<String> = Few::new();
        assert!(f.is_empty() && f.iter().next().is_none() && f.as_slice() == [] as [String; 0]);
        assert_eq!(serde_json::to_string(&f).unwrap(), "[]");
        f.push("a".into());
        f.push("b".into());
        assert_eq!(f.len(), 2);
        assert_eq!(serde_json::to_string(&f).unwrap(), r#"["a","b"]"#);
        let back: Few<String> = serde_json::from_str(r#"["a","b"]"#).unwrap();
        assert_eq!(back, f);
        f.retain(|s| s == "z");
        assert_eq!(f, Few::new(), "emptied is empty");
        f.shrink_to_fit();
        assert!(f.0.is_none(), "an empty list gives its box back");
        let none: Few<String> = serde_json::from_str("[]").unwrap();
        assert!(none.0.is_none());
        assert!(serde_json::from_str::<Few<u32>>(r#"["x"]"#).is_err());
        let v: Vec<u32> = Few::from(vec![1, 2]).into_iter().collect();
        assert_eq!(v, [1, 2]);
    }
}
