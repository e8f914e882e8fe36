//! [`Few`]: a list almost every bead leaves empty (exits, a loop's trajectory, acceptance checks,
//! routing records…), one pointer wide until it holds something. A `Vec` is three words even
//! when empty, and a pipeline has several of these lists (issue 16's memory at 100,000 beads).

use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A list, `None` while empty. Reads and writes as a [`Vec`] (`Deref`/`DerefMut`), and
/// (de)serializes exactly as one.
#[derive(Clone, Debug)]
#[allow(clippy::box_collection)] // the point: one word while empty, where a `Vec` is three
pub struct Few<T>(Option<Box<Vec<T>>>);

impl<T> Few<T> {
    pub const fn new() -> Few<T> {
        Few(None)
    }

    /// Empty, whether it was ever written to or not.
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|v| v.is_empty())
    }

    /// Give back spare room; an empty list gives back its box too.
    pub fn shrink_to_fit(&mut self) {
        match &mut self.0 {
            Some(v) if v.is_empty() => self.0 = None,
            Some(v) => v.shrink_to_fit(),
            None => {}
        }
    }

    /// Empty the list (no box kept).
    pub fn clear(&mut self) {
        self.0 = None;
    }

    /// The list as a `Vec`, taken out.
    pub fn into_vec(self) -> Vec<T> {
        self.0.map(|v| *v).unwrap_or_default()
    }
}

impl<T> Default for Few<T> {
    fn default() -> Few<T> {
        Few::new()
    }
}

impl<T> Deref for Few<T> {
    type Target = Vec<T>;

    fn deref(&self) -> &Vec<T> {
        match &self.0 {
            Some(v) => v,
            None => const { &Vec::new() },
        }
    }
}

impl<T> DerefMut for Few<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        self.0.get_or_insert_with(Box::default)
    }
}

/// Compared as the lists they hold: empty is empty.
impl<T: PartialEq> PartialEq for Few<T> {
    fn eq(&self, other: &Few<T>) -> bool {
        **self == **other
    }
}

impl<T: PartialEq<U>, U, const N: usize> PartialEq<[U; N]> for Few<T> {
    fn eq(&self, other: &[U; N]) -> bool {
        **self == *other
    }
}

impl<T> From<Vec<T>> for Few<T> {
    fn from(v: Vec<T>) -> Few<T> {
        Few((!v.is_empty()).then(|| Box::new(v)))
    }
}

impl<T> FromIterator<T> for Few<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Few<T> {
        Few::from(iter.into_iter().collect::<Vec<T>>())
    }
}

impl<'a, T> IntoIterator for &'a Few<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        (**self).iter()
    }
}

impl<T> IntoIterator for Few<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

impl<T: Serialize> Serialize for Few<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Few<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Few<T>, D::Error> {
        Vec::deserialize(deserializer).map(Few::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
