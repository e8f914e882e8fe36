//! The CLI's output sink, and printing a verb's typed outcome: JSON on stdout. A refusal goes back
//! to `main`, which prints its reason on stderr and exits 1; a recorded check that refused is
//! printed on stdout first.
//!
//! Nothing here fails or panics on a closed stdout or stderr (`splice … | head`): a verb that
//! committed its write still exits as the verb ran. Every byte goes through [`crate::stdio`].
//!
//! Every JSON object printed carries `schema_version` (`docs/cli.md`): an object whose type
//! records its own (a bead, an envelope, a decision) keeps it; the others get
//! [`OUTPUT_SCHEMA`], first.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::store::Store;

/// Text from files escaped for a terminal ([`crate::model::printable`]): `printable` for one
/// line (a title, a status, a log's line), `printable_message` for a message of several.
pub use crate::model::printable::{printable, printable_message};

/// Stdout and stderr: [`crate::stdio`], the one place output is written (a closed stdout is no
/// failure there).
pub use crate::stdio::{err, out, stdout};

/// The shape of the JSON objects the CLI prints for a verb, `init`, `status --json` and the
/// demo's result: it rises when a field changes meaning or goes away, not when one is added.
pub const OUTPUT_SCHEMA: u32 = 1;

/// `value` as JSON, with `schema_version` first when it is an object that has none.
pub fn versioned<T: Serialize + ?Sized>(value: &T) -> serde_json::Value {
    let value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
    match value {
        serde_json::Value::Object(fields) if !fields.contains_key("schema_version") => {
            let mut out = serde_json::Map::with_capacity(fields.len() + 1);
            out.insert("schema_version".into(), OUTPUT_SCHEMA.into());
            out.extend(fields);
            serde_json::Value::Object(out)
        }
        other => other,
    }
}

/// Print `value` as pretty JSON on stdout, [`versioned`].
pub fn print_json<T: Serialize + ?Sized>(value: &T) {
    let mut text =
        serde_json::to_string_pretty(&versioned(value)).unwrap_or_else(|_| "null".into());
    text.push('\n');
    out(&text);
}

/// Print a verb's outcome: its output (exit 0), or the check a refusal recorded, then the
/// refusal for `main` to report. What recovery repaired before the verb ran is reported first,
/// on stderr, whatever the outcome.
pub fn emit<T: Serialize>(store: &Store, outcome: Result<T>) -> Result<i32> {
    report_repairs(store);
    match outcome {
        Ok(out) => {
            print_json(&out);
            Ok(0)
        }
        Err(Error::Refused(refusal)) => {
            if let Some(checked) = refusal.checked() {
                print_json(checked);
            }
            Err(Error::Refused(refusal))
        }
        Err(e) => Err(e),
    }
}

/// Say on stderr what the writer's recovery repaired, a line each (escaped: a repair names what
/// the journal held).
pub fn report_repairs(store: &Store) {
    for repair in store.take_repairs() {
        err(&format!("splice: {}\n", printable(&repair.to_string())));
    }
}

/// Split a comma-separated list, dropping empty items.
pub fn comma_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// The ids a flag lists, comma-separated (`--scenarios S1,S2`), trimmed. An empty item (`,,`, a
/// trailing comma) is refused, naming the flag: [`comma_list`] would drop it, and the command
/// would run as if fewer ids, or none, were given.
pub fn comma_ids(flag: &str, s: &str) -> Result<Vec<String>> {
    let items: Vec<&str> = s.split(',').map(str::trim).collect();
    if let Some(at) = items.iter().position(|i| i.is_empty()) {
        return Err(Error::Invalid(format!(
            "{flag} {}: item {} of {} is empty (give the ids separated by single commas)",
            crate::model::id::shown(s),
            at + 1,
            items.len()
        )));
    }
    Ok(items.into_iter().map(str::to_string).collect())
}

/// serde_json's pretty output (two spaces a level), byte for byte, with each line's start (the
/// newline and the indent) written in one piece: `PrettyFormatter` writes the indent a level at
/// a time, a write each, and at 100,000 rows `status --json` makes millions of them.
#[derive(Default)]
pub struct Pretty {
    level: usize,
    has_value: bool,
}

impl Pretty {
    /// For a value `level` levels in (an element of an array that is a field of the top
    /// object: 2), written on its own.
    pub fn at_level(level: usize) -> Pretty {
        Pretty {
            level,
            has_value: false,
        }
    }

    /// A new line at this level, after a comma when `comma`: one write.
    fn line<W: ?Sized + std::io::Write>(&self, w: &mut W, comma: bool) -> std::io::Result<()> {
        const SPACES: &[u8; 66] =
            b",\n                                                                ";
        let want = 2 * self.level;
        let start = usize::from(!comma);
        if want <= SPACES.len() - 2 {
            w.write_all(&SPACES[start..2 + want])
        } else {
            w.write_all(&SPACES[start..2])?;
            (0..self.level).try_for_each(|_| w.write_all(b"  "))
        }
    }

    /// An array's or an object's opening `bracket`: one level in.
    fn open<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        bracket: &[u8],
    ) -> std::io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    /// Its closing `bracket`, on a line of its own unless it is empty.
    fn close<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        bracket: &[u8],
    ) -> std::io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.line(w, false)?;
        }
        w.write_all(bracket)
    }
}

impl serde_json::ser::Formatter for Pretty {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.line(w, !first)
    }

    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.line(w, !first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Pretty;
    use serde::Serialize;

    fn pretty(value: &serde_json::Value) -> String {
        let mut out = Vec::new();
        let mut json = serde_json::Serializer::with_formatter(&mut out, Pretty::default());
        value.serialize(&mut json).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn pretty_writes_what_serde_json_s_pretty_printer_writes() {
        // Empty and nested containers, and nesting deeper than the spaces written in one piece.
        let mut deep = serde_json::json!("bottom");
        for i in 0..40 {
            deep = if i % 2 == 0 {
                serde_json::json!([deep, 1, {}])
            } else {
                serde_json::json!({"k": deep, "e": [], "s": "a \"q\"\n"})
            };
        }
        let values = [
            serde_json::json!({}),
            serde_json::json!([]),
            serde_json::json!({"a": [1, {"b": null, "c": [[]]}], "d": {"e": "f"}}),
            deep,
        ];
        for value in values {
            assert_eq!(
                pretty(&value),
                serde_json::to_string_pretty(&value).unwrap()
            );
        }
    }
}
