//! Integer arithmetic.

/// The sum of `a` and `b`, or `None` on overflow.
pub fn add(a: i64, b: i64) -> Option<i64> {
    a.checked_add(b)
}

/// `a` minus `b`, or `None` on overflow.
pub fn sub(a: i64, b: i64) -> Option<i64> {
    a.checked_sub(b)
}
