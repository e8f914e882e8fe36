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

/// Ids in natural order: runs of digits compare as numbers, so `sp-x.1.2` comes before
/// `sp-x.1.10`; the rest byte by byte.
pub fn natural(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) if p.is_ascii_digit() && q.is_ascii_digit() => {
                let run = |s: &[u8]| s.iter().take_while(|c| c.is_ascii_digit()).count();
                let (m, n) = (run(x), run(y));
                let (dx, dy) = (&x[..m], &y[..n]);
                // Without leading zeros, a longer run is a larger number.
                let tx = trim_zeros(dx);
                let ty = trim_zeros(dy);
                let by_value = tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty));
                if by_value != Ordering::Equal {
                    return by_value;
                }
                x = &x[m..];
                y = &y[n..];
            }
            (Some(p), Some(q)) => {
                if p != q {
                    return p.cmp(q);
                }
                x = &x[1..];
                y = &y[1..];
            }
        }
    }
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let zeros = digits.iter().take_while(|d| **d == b'0').count();
    &digits[zeros..]
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
    fn natural_order_reads_numbers_as_numbers() {
        let mut ids = vec![
            "sp-x.1.10",
            "sp-x.1.2",
            "sp-x.2",
            "sp-x.1",
            "sp-x.01.3",
            "sp-w",
        ];
        ids.sort_by(|a, b| natural(a, b));
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
