//! [`ThinText`]: a text most beads lack, one pointer wide. A `Box<str>` is two words (pointer
//! and length), so `Option<Box<str>>` is 16 bytes in every bead whether it holds a text or not;
//! `Option<ThinText>` is 8. A scan holds every bead at once (100,000 in a big campaign, issue 16).

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::model::Text;

/// A text behind one pointer. Reads as a `&str` (`Deref`), so `Option<ThinText>::as_deref()`
/// gives an `Option<&str>`, and (de)serializes exactly as a JSON string.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(clippy::box_collection)] // the point: one word, where `Text` is three
pub struct ThinText(Box<Text>);

impl Deref for ThinText {
    type Target = str;

    fn deref(&self) -> &str {
        self.0.as_str()
    }
}

impl AsRef<str> for ThinText {
    fn as_ref(&self) -> &str {
        self
    }
}

impl fmt::Debug for ThinText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl fmt::Display for ThinText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl From<&str> for ThinText {
    fn from(s: &str) -> ThinText {
        ThinText(Box::new(Text::from(s)))
    }
}

impl From<String> for ThinText {
    fn from(s: String) -> ThinText {
        ThinText(Box::new(Text::from(s)))
    }
}

impl From<&String> for ThinText {
    fn from(s: &String) -> ThinText {
        ThinText::from(s.as_str())
    }
}

impl From<Box<str>> for ThinText {
    fn from(s: Box<str>) -> ThinText {
        ThinText::from(String::from(s))
    }
}

impl PartialEq<str> for ThinText {
    fn eq(&self, other: &str) -> bool {
        **self == *other
    }
}

impl PartialEq<&str> for ThinText {
    fn eq(&self, other: &&str) -> bool {
        **self == **other
    }
}

impl Serialize for ThinText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self)
    }
}

/// Read as a `String` is read, so a value that is not a string fails with the same message.
impl<'de> Deserialize<'de> for ThinText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ThinText, D::Error> {
        String::deserialize(deserializer).map(ThinText::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Holder {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        skipped: Option<ThinText>,
        #[serde(default)]
        kept: Option<ThinText>,
    }

    #[test]
    fn a_thin_text_is_a_pointer_and_reads_and_writes_as_a_string() {
        assert_eq!(
            std::mem::size_of::<Option<ThinText>>(),
            std::mem::size_of::<usize>()
        );
        // Absent: the skipped field stays absent, the other is written as `null`.
        let absent: Holder = serde_json::from_str("{}").unwrap();
        assert_eq!(
            (absent.skipped.as_deref(), absent.kept.as_deref()),
            (None, None)
        );
        assert_eq!(serde_json::to_string(&absent).unwrap(), r#"{"kept":null}"#);
        // `null` reads as absent.
        let null: Holder = serde_json::from_str(r#"{"skipped":null,"kept":null}"#).unwrap();
        assert_eq!(null, absent);
        // Present, long enough to leave `Text`'s inline room, and with escapes: the same bytes
        // back.
        let json =
            r#"{"skipped":"a \"quoted\" line\nand a tab\t and \u00e9 past 24 bytes","kept":"x"}"#;
        let present: Holder = serde_json::from_str(json).unwrap();
        assert_eq!(
            present.skipped.as_deref(),
            Some("a \"quoted\" line\nand a tab\t and é past 24 bytes")
        );
        assert_eq!(present.kept.as_deref(), Some("x"));
        assert_eq!(
            serde_json::to_string(&present).unwrap(),
            serde_json::to_string(&serde_json::json!({
                "skipped": "a \"quoted\" line\nand a tab\t and é past 24 bytes",
                "kept": "x",
            }))
            .unwrap()
        );
        assert_eq!(format!("{:?}", present.kept.unwrap()), r#""x""#);
    }

    #[test]
    fn a_thin_text_given_anything_but_a_string_fails_as_a_string_does() {
        for bad in [
            r#"{"kept":5}"#,
            r#"{"kept":["x"]}"#,
            r#"{"kept":{}}"#,
            r#"{"kept":true}"#,
        ] {
            let thin = serde_json::from_str::<Holder>(bad).unwrap_err().to_string();
            let boxed = serde_json::from_str::<Option<Box<str>>>(&bad[8..bad.len() - 1])
                .unwrap_err()
                .to_string();
            assert!(thin.contains("expected a string"), "{bad}: {thin}");
            assert_eq!(
                thin.split(" at line").next(),
                boxed.split(" at line").next(),
                "{bad}"
            );
        }
    }
}
