//! Bead ids: `sp-` + base36 of a sha256, four characters or more, one longer on each collision.
//! Children of a split are `<parent>.N`.

use sha2::{Digest, Sha256};

const ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// The base36 digits of sha256(`seed`), enough for any id length we will need.
pub fn hash36(seed: &str) -> String {
    let digest = Sha256::digest(seed.as_bytes());
    let mut out = String::with_capacity(48);
    // Take the digest five bytes at a time (40 bits), giving 7 base36 digits each.
    for chunk in digest.chunks(5) {
        let mut n: u64 = 0;
        for b in chunk {
            n = (n << 8) | u64::from(*b);
        }
        for _ in 0..7 {
            out.push(ALPHABET[(n % 36) as usize] as char);
            n /= 36;
        }
    }
    out
}

/// Candidate ids for `seed` in order: `sp-` + 4 digits, then 5, … .
pub fn candidates(seed: &str) -> impl Iterator<Item = String> {
    let digits = hash36(seed);
    (4..=digits.len()).map(move |n| format!("sp-{}", &digits[..n]))
}

/// The id of a split's `index`-th child (1-based).
pub fn child_id(parent: &str, index: usize) -> String {
    format!("{parent}.{index}")
}

/// Is `id` safe to use as a file name under `beads/`?
pub fn is_valid(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
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
    fn ids_are_stable_and_grow() {
        let first: Vec<String> = candidates("a title").take(3).collect();
        assert_eq!(first, candidates("a title").take(3).collect::<Vec<_>>());
        assert_eq!(first[0].len(), 7);
        assert!(first[1].starts_with(&first[0]));
        assert_ne!(candidates("a title").next(), candidates("b title").next());
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
