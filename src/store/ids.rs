//! Bead ids: `sp-` + base36 of a sha256, four characters or more, one longer on each collision.
//! Children of a split are `<parent>.N`. What an id may be is [`crate::model::id`]'s grammar.

pub use crate::model::id::{is_valid, shown};

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
}
