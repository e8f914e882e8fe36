//! How long the agent's API asked to be left alone after a transient end (issue 32): the
//! `retry-after` its error carried, read from what the agent reported. Rule 27 of `decide`
//! waits at least that long before the retry, within its cap ([`crate::decide::MAX_BACKOFF_S`]).
//!
//! | where | what is read |
//! |---|---|
//! | the end's cause (the agent's error, its last line) | `retry-after: 30`, `retry after 30s`, `try again in 1m30s`, `retry in 20 seconds`, `try again in 6ms` |
//! | Claude Code's last `{"type":"system","subtype":"api_retry","retry_delay_ms":D}` event | `D` ms: the wait Claude Code chose for its own last retry, the API's `retry-after` when it sent one |
//!
//! A number without a unit is seconds (as the HTTP header is); fractions round up; what does not
//! parse is no wait.

use serde_json::Value;

/// The words a wait follows, lowercase.
const LEADS: &[&str] = &["retry-after", "retry after", "try again in", "retry in"];

/// The seconds the agent's API asked it to wait, by its end's `cause` and its log: the cause's
/// own words first, else Claude Code's last `api_retry` event.
pub fn retry_after_s(cause: Option<&str>, log: &str) -> Option<u64> {
    cause.and_then(in_words).or_else(|| claude_retry(log))
}

/// A wait named in `text` after one of [`LEADS`].
fn in_words(text: &str) -> Option<u64> {
    let lower = text.to_lowercase();
    LEADS
        .iter()
        .flat_map(|lead| lower.match_indices(lead).map(|(i, l)| i + l.len()))
        .find_map(|end| duration_s(&lower[end..]))
}

/// The duration at the start of `text` (after `:`, `=` and spaces), in whole seconds rounded up:
/// one or more `<number>[unit]` parts, `1m30s`, `20 seconds`, `6ms`, `30`.
fn duration_s(text: &str) -> Option<u64> {
    let mut rest = text.trim_start_matches([':', '=', ' ', '"']);
    let mut ms: f64 = 0.0;
    let mut parts = 0;
    loop {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let Ok(n) = rest[..digits].parse::<f64>() else {
            break;
        };
        let after = rest[digits..].trim_start();
        let word = after
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after.len());
        let scale = match &after[..word] {
            "ms" | "millisecond" | "milliseconds" => 1.0,
            "" | "s" | "sec" | "secs" | "second" | "seconds" => 1_000.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60_000.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000.0,
            _ => break,
        };
        ms += n * scale;
        parts += 1;
        rest = &after[word..];
        // `1m30s` goes on; `30 seconds, request id …` ends.
        if !rest.starts_with(|c: char| c.is_ascii_digit()) {
            break;
        }
    }
    (parts > 0 && !ms.is_nan()).then(|| {
        // Bounded before the cast: a hostile number saturates at a day, decide caps it further.
        let s = (ms / 1_000.0).ceil().min(86_400.0);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let s = s as u64;
        s
    })
}

/// The `retry_delay_ms` of Claude Code's last `api_retry` event, in seconds rounded up.
fn claude_retry(log: &str) -> Option<u64> {
    log.lines().rev().map(str::trim).find_map(|line| {
        if !line.starts_with('{') || !line.contains("api_retry") {
            return None;
        }
        let event: Value = serde_json::from_str(line).ok()?;
        (event.get("subtype").and_then(Value::as_str) == Some("api_retry"))
            .then(|| event.get("retry_delay_ms").and_then(Value::as_u64))
            .flatten()
            .map(|ms| ms.div_ceil(1_000).min(86_400))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_waits_an_api_names_are_read_in_seconds() {
        let read = |t: &str| retry_after_s(Some(t), "");
        assert_eq!(read("429 Too Many Requests; retry-after: 30"), Some(30));
        assert_eq!(read("Rate limited. Retry after 45s."), Some(45));
        assert_eq!(read("Please try again in 1m30s."), Some(90));
        assert_eq!(
            read("Rate limit reached. Please try again in 6ms."),
            Some(1)
        );
        assert_eq!(read("try again in 2 hours"), Some(7_200));
        assert_eq!(read("retry in 20 seconds, request id abc"), Some(20));
        assert_eq!(read("retry-after=1.5"), Some(2));
    }

    #[test]
    fn no_wait_is_read_where_none_is_named() {
        let read = |t: &str| retry_after_s(Some(t), "");
        assert_eq!(read("API Error: 529 overloaded"), None);
        assert_eq!(read("retry after a while"), None);
        assert_eq!(read("try again in 5 fortnights"), None);
        assert_eq!(retry_after_s(None, "plain output"), None);
        // A hostile number is bounded.
        assert_eq!(
            read(&format!("retry after {}", "9".repeat(400))),
            Some(86_400)
        );
    }

    #[test]
    fn claudes_last_api_retry_is_read_when_the_words_name_none() {
        let log = concat!(
            r#"{"type":"system","subtype":"api_retry","attempt":1,"retry_delay_ms":500}"#,
            "\n",
            r#"{"type":"system","subtype":"api_retry","attempt":2,"retry_delay_ms":12001}"#,
            "\n",
            r#"{"type":"result","is_error":true,"result":"API Error: 429"}"#,
        );
        assert_eq!(retry_after_s(Some("API Error: 429"), log), Some(13));
        assert_eq!(
            retry_after_s(Some("retry after 5s"), log),
            Some(5),
            "the words first"
        );
    }
}
