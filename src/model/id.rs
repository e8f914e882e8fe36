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

/// Natural order of ids, as a person reads them: the dot-separated parts compared one by one
/// (a parent before its children: `sp-x` < `sp-x.1`), and runs of digits inside a part by value,
/// so `sp-x.1.2` comes before `sp-x.1.10`. Ties (`x.01` and `x.1`) fall back to byte order, so
/// the order is total.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = a.split('.').zip(b.split('.'));
    for (x, y) in parts {
        let o = natural_part(x, y);
        if o.is_ne() {
            return o;
        }
    }
    a.split('.')
        .count()
        .cmp(&b.split('.').count())
        .then_with(|| a.cmp(b))
}

/// One part of an id: runs of digits by value, everything else byte by byte.
fn natural_part(a: &str, b: &str) -> std::cmp::Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    while let (Some(&cx), Some(&cy)) = (x.first(), y.first()) {
        let o = if cx.is_ascii_digit() && cy.is_ascii_digit() {
            let (nx, rx) = split_digits(x);
            let (ny, ry) = split_digits(y);
            (x, y) = (rx, ry);
            let (tx, ty) = (trim_zeros(nx), trim_zeros(ny));
            tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty))
        } else {
            (x, y) = (&x[1..], &y[1..]);
            cx.cmp(&cy)
        };
        if o.is_ne() {
            return o;
        }
    }
    x.len().cmp(&y.len())
}

fn split_digits(s: &[u8]) -> (&[u8], &[u8]) {
    let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
    s.split_at(n)
}

fn trim_zeros(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&c| c == b'0').count();
    &s[n..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_reads_numbers_by_value_and_parents_first() {
        let mut ids = vec![
            "sp-x.1.10",
            "sp-x.2",
            "sp-x.1.2",
            "sp-x",
            "sp-x.1",
            "bd-10",
            "bd-9",
            "sp-x-a",
        ];
        ids.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            ids,
            [
                "bd-9",
                "bd-10",
                "sp-x",
                "sp-x.1",
                "sp-x.1.2",
                "sp-x.1.10",
                "sp-x.2",
                "sp-x-a"
            ]
        );
        assert!(natural_cmp("x.01", "x.1").is_ne());
        assert_eq!(natural_cmp("x.1", "x.1"), std::cmp::Ordering::Equal);
    }

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
    fn natural_order_reads_numbers_as_numbers() {
        let mut ids = vec![
            "sp-x.1.10",
            "sp-x.1.2",
            "sp-x.2",
            "sp-x.1",
            "sp-x.01.3",
            "sp-w",
        ];
        ids.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            ids,
            [
                "sp-w",
                "sp-x.1",
                "sp-x.1.2",
                "sp-x.01.3",
                "sp-x.1.10",
                "sp-x.2"
            ]
        );
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
