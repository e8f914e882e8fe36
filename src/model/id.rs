//! The one id grammar: what a bead id may be, for every id splice creates, reads from a bead
//! file, or imports (bd and br ids: `bd-a3f8`, mixed prefixes, hierarchical `x-abc.1.2`). The
//! store's path checks use it: an id is a file name under `.splice/beads/`, so nothing it
//! accepts can name a path outside that directory, a hidden file, or a temporary file of the
//! writer's (those start with `.`).
//!
//! An id is 1 to [`MAX_LEN`] bytes of ASCII letters, digits, `.`, `-` and `_`; it does not start
//! with `.` and holds no `..`. Letters keep their case: on a case-insensitive file system `bd-A`
//! and `bd-a` would share a file, so the importer refuses a second id that differs from one in
//! the store only by case.

/// The longest id, in bytes.
pub const MAX_LEN: usize = 200;

/// Is `id` safe to use as a file name under `beads/`?
pub fn is_valid(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_LEN
        && !id.starts_with('.')
        && !id.contains("..")
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
}

/// `id` as a message may show it when it may not be an id at all (read from a file someone else
/// wrote): quoted, control characters escaped, cut to 64 characters.
pub fn shown(id: &str) -> String {
    const MAX: usize = 64;
    let cut: String = id.chars().take(MAX).collect();
    let more = if id.chars().nth(MAX).is_some() {
        format!("… ({} characters)", id.chars().count())
    } else {
        String::new()
    };
    format!("{cut:?}{more}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_bd_and_br_produce() {
        for id in [
            "bd-a3f8e9",
            "bd-a3f8e9.1.2",
            "beads_rust-x1",
            "x-abc.1.10",
            "Proj-7",
            "a",
        ] {
            assert!(is_valid(id), "{id}");
        }
        for id in [
            "bd-a..b",
            "bd-a/b",
            "bd-a\\b",
            "bd a",
            "bd-\u{e9}",
            "bd-a\0",
            ".",
        ] {
            assert!(!is_valid(id), "{id:?}");
        }
    }

    #[test]
    fn rejects_paths() {
        assert!(is_valid("sp-4k2x.1"));
        assert!(!is_valid("../x"));
        assert!(!is_valid("a/b"));
        assert!(!is_valid(".hidden"));
        assert!(!is_valid(""));
        assert!(!is_valid(&"a".repeat(201)));
    }

    #[test]
    fn shown_quotes_escapes_and_cuts() {
        assert_eq!(shown("sp-a"), "\"sp-a\"");
        assert_eq!(shown("a\u{1b}[2J"), "\"a\\u{1b}[2J\"");
        let long = shown(&"a".repeat(300));
        assert!(
            long.ends_with("… (300 characters)") && long.len() < 100,
            "{long}"
        );
    }
}
