//! `find -name`/`-iname` patterns, read as `fnmatch(3)` reads them with no flags: `*` any run of
//! characters (a leading `.` too), `?` one character, `[…]` one of a set (`[!…]`/`[^…]` none
//! of it, ranges, `]` first taken literally), `\` escaping the next character.
//!
//! Only what can be read for certain is read: a character class (`[:alpha:]`), an equivalence
//! class or collating symbol, a range whose ends are not two digits or two ASCII letters of the
//! same case (its members depend on the locale), an unclosed `[` or a trailing `\` make the
//! pattern unreadable, and the caller assumes it may match anything. A name is matched both as
//! characters (a UTF-8 locale) and as bytes (the C locale), so either locale's answer counts.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// One position of a pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    /// This character.
    Char(char),
    /// `?`
    One,
    /// `*`
    Any,
    /// `[…]`: inclusive ranges (a lone character is a range of one); `negated` for `[!…]`.
    Set {
        ranges: Vec<(char, char)>,
        negated: bool,
    },
}

/// A pattern read for matching.
#[derive(Clone, Debug)]
pub(super) struct Glob {
    /// The pattern over its characters.
    chars: Vec<Tok>,
    /// The pattern over its bytes, each taken as a character.
    bytes: Vec<Tok>,
    /// `-iname`: case is ignored.
    fold: bool,
}

impl Glob {
    /// Read `pattern`; `None` when it holds what the guard does not read (the module's list).
    /// With `fold`, case is ignored (`-iname`).
    pub(super) fn new(pattern: &str, fold: bool) -> Option<Glob> {
        let bytes: String = pattern.bytes().map(char::from).collect();
        Some(Glob {
            chars: parse(pattern)?,
            bytes: parse(&bytes)?,
            fold,
        })
    }

    /// Does `name` (one file name) match?
    pub(super) fn matches(&self, name: &OsStr) -> bool {
        let raw = name.as_bytes();
        let as_bytes: Vec<char> = raw.iter().map(|&b| char::from(b)).collect();
        if matches(&self.bytes, &as_bytes, self.fold) {
            return true;
        }
        std::str::from_utf8(raw).is_ok_and(|s| {
            let chars: Vec<char> = s.chars().collect();
            matches(&self.chars, &chars, self.fold)
        })
    }
}

fn parse(pattern: &str) -> Option<Vec<Tok>> {
    let mut out = Vec::new();
    let mut it = pattern.chars().peekable();
    while let Some(c) = it.next() {
        out.push(match c {
            '*' => Tok::Any,
            '?' => Tok::One,
            '\\' => Tok::Char(it.next()?),
            '[' => set(&mut it)?,
            c => Tok::Char(c),
        });
    }
    Some(out)
}

/// The rest of a `[…]` after its `[`.
fn set(it: &mut std::iter::Peekable<std::str::Chars>) -> Option<Tok> {
    let negated = it.next_if(|&c| c == '!' || c == '^').is_some();
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let c = match it.next()? {
            ']' if !first => return Some(Tok::Set { ranges, negated }),
            '[' if it.peek().is_some_and(|n| matches!(n, ':' | '.' | '=')) => return None,
            '\\' => it.next()?,
            c => c,
        };
        first = false;
        let mut ahead = it.clone();
        let is_range = ahead.next() == Some('-') && ahead.peek().is_some_and(|&e| e != ']');
        if !is_range {
            ranges.push((c, c));
            continue;
        }
        it.next();
        let end = match it.next()? {
            '\\' => it.next()?,
            '[' => return None,
            e => e,
        };
        let same_kind = (c.is_ascii_digit() && end.is_ascii_digit())
            || (c.is_ascii_lowercase() && end.is_ascii_lowercase())
            || (c.is_ascii_uppercase() && end.is_ascii_uppercase());
        if !same_kind || c > end {
            return None;
        }
        ranges.push((c, end));
    }
}

/// `c` in its case variants when folding.
fn variants(c: char, fold: bool) -> impl Iterator<Item = char> {
    let lower = c.to_lowercase().next().filter(|_| fold);
    let upper = c.to_uppercase().next().filter(|_| fold);
    std::iter::once(c).chain(lower).chain(upper)
}

impl Tok {
    /// Does this position (not `*`) take `c`?
    fn takes(&self, c: char, fold: bool) -> bool {
        match self {
            Tok::Char(p) => variants(c, fold).any(|v| variants(*p, fold).any(|q| q == v)),
            Tok::One => true,
            Tok::Any => false,
            Tok::Set { ranges, negated } => {
                let inside = ranges
                    .iter()
                    .any(|&(lo, hi)| variants(c, fold).any(|v| lo <= v && v <= hi));
                inside != *negated
            }
        }
    }
}

/// Match with backtracking to the last `*` only: linear in the pattern times the name.
fn matches(pat: &[Tok], name: &[char], fold: bool) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pat.get(p) {
            Some(Tok::Any) => {
                star = Some((p, n));
                p += 1;
                continue;
            }
            Some(t) if t.takes(name[n], fold) => {
                p += 1;
                n += 1;
                continue;
            }
            _ => {}
        }
        let Some((sp, sn)) = star else {
            return false;
        };
        star = Some((sp, sn + 1));
        p = sp + 1;
        n = sn + 1;
    }
    pat[p..].iter().all(|t| *t == Tok::Any)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, name: &str) -> bool {
        Glob::new(pattern, false).unwrap().matches(OsStr::new(name))
    }

    fn mi(pattern: &str, name: &str) -> bool {
        Glob::new(pattern, true).unwrap().matches(OsStr::new(name))
    }

    #[test]
    fn stars_and_question_marks_match_like_fnmatch_without_flags() {
        assert!(m("*.o", "a.o") && m("*.o", ".o") && !m("*.o", "a.rs"));
        assert!(
            m("*", ".splice"),
            "a star takes a leading dot, as find's -name does"
        );
        assert!(m("journal*", "journal.jsonl") && m("*.jsonl", "journal.jsonl"));
        assert!(m("a*b*c", "axxbxxc") && !m("a*b*c", "axxc") && !m("ab*ba", "aba"));
        assert!(m("?.json", "x.json") && !m("?.json", "xy.json"));
        assert!(m("**", "") && !m("?", ""));
        assert!(m(".splice", ".splice") && !m(".splice", ".splicex"));
    }

    #[test]
    fn sets_ranges_and_escapes() {
        assert!(m("[abc].o", "b.o") && !m("[abc].o", "d.o"));
        assert!(m("[!abc].o", "d.o") && !m("[^abc].o", "a.o"));
        assert!(m("[a-z]*", "journal") && !m("[a-z]*", ".splice"));
        assert!(m("[0-9]", "7") && m("[]x]", "]") && m("[!]x]", "a") && m("[a-]", "-"));
        assert!(m("\\*.o", "*.o") && !m("\\*.o", "a.o"));
        assert!(m("[\\]]", "]"));
        assert!(m("*.[oa]", "x.a") && !m("*.[oa]", "x.rs"));
    }

    #[test]
    fn iname_ignores_case() {
        assert!(mi("JOURNAL.JSONL", "journal.jsonl") && !m("JOURNAL.JSONL", "journal.jsonl"));
        assert!(mi("[A-C]*", "beads") && !m("[A-C]*", "beads"));
        assert!(mi("*.JSON", "X.json"));
    }

    #[test]
    fn a_name_matches_as_characters_or_as_bytes() {
        assert!(m("?", "é"), "one character in UTF-8");
        assert!(m("??", "é"), "two bytes in the C locale");
        let raw = OsStr::from_bytes(b"\xff.json");
        assert!(Glob::new("?.json", false).unwrap().matches(raw));
        assert!(!Glob::new("*.o", false).unwrap().matches(raw));
    }

    #[test]
    fn what_the_guard_does_not_read_is_unreadable() {
        for p in [
            "[",
            "[a",
            "x\\",
            "[[:alpha:]]",
            "[[.a.]]",
            "[[=a=]]",
            "[a-Z]",
            "[z-a]",
            "[ -~]",
            "[]",
        ] {
            assert!(Glob::new(p, false).is_none(), "{p}");
        }
    }
}
