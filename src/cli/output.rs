//! Printing a verb's outcome: JSON on stdout; a refusal or escalation also on stderr, exit 1.

use serde_json::Value;

use crate::transition::{Outcome, Status};

/// Print `json` pretty on stdout.
pub fn print_json(json: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(json).unwrap_or_else(|_| "null".into())
    );
}

/// Print an outcome and return its exit code.
pub fn emit(outcome: &Outcome) -> i32 {
    print_json(&outcome.json);
    match &outcome.status {
        Status::Ok => 0,
        Status::Refused(reason) => {
            eprintln!("splice: refused: {reason}");
            1
        }
        Status::Escalated(reason) => {
            eprintln!("splice: escalated: {reason}");
            1
        }
    }
}

/// Split a comma-separated list, dropping empty items.
pub fn comma_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}
