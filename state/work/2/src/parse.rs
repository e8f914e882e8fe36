//! Evaluate one binary operation written as text: `a + b` or `a - b`.

use crate::arith::{add, sub};

/// Evaluate `text`, or say what is wrong with it.
pub fn eval(text: &str) -> Result<i64, String> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [a, op, b] = parts.as_slice() else {
        return Err(format!("expected `a + b` or `a - b`, got {text:?}"));
    };
    let a: i64 = a.parse().map_err(|_| format!("{a:?} is not a number"))?;
    let b: i64 = b.parse().map_err(|_| format!("{b:?} is not a number"))?;
    let value = match *op {
        "+" => add(a, b),
        "-" => sub(a, b),
        other => return Err(format!("unknown operator {other:?}")),
    };
    value.ok_or_else(|| "overflow".to_string())
}
