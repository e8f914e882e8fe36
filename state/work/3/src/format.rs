//! Render a value for display.

/// `= value`, the way the calculator prints a result.
pub fn format_result(value: i64) -> String {
    format!("= {value}")
}
