//! The cache's text: bead JSON made compact, and the body's checksum.

/// JSON text without the whitespace between tokens (never inside a string). The result holds
/// no newline: a valid JSON string holds none raw.
pub(super) fn compact(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for &b in json {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
            continue;
        } else if b == b'"' {
            in_string = true;
        }
        out.push(b);
    }
    out
}

/// A 64-bit checksum of the cache's body (not cryptographic: it catches a torn or damaged
/// file), as 16 hex digits.
pub(super) fn checksum(bytes: &[u8]) -> String {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let word = u64::from_le_bytes(c.try_into().expect("eight bytes"));
        h = (h ^ word).wrapping_mul(PRIME).rotate_left(29);
    }
    for &b in chunks.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(PRIME);
    }
    format!("{h:016x}")
}
