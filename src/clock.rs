//! The one place splice reads the wall clock. `SPLICE_NOW` (RFC 3339) fixes it for tests and
//! replays; `decide` never calls this: time reaches it inside the snapshot.
//!
//! A fixed clock stands still, except in a run that waits before a retry: a run's clock
//! ([`now_after`]) is `SPLICE_NOW` plus the time the run has slept for backoffs, so a test's
//! retries come due. With the real clock the time slept is already in it.

use chrono::{DateTime, SecondsFormat, Utc};

use crate::error::{Error, Result};

/// The current time, from `SPLICE_NOW` when set.
pub fn now() -> Result<DateTime<Utc>> {
    match std::env::var("SPLICE_NOW") {
        Ok(text) if !text.is_empty() => DateTime::parse_from_rfc3339(&text)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| Error::Invalid(format!("SPLICE_NOW={text:?} is not RFC 3339: {e}"))),
        _ => Ok(Utc::now()),
    }
}

/// The current time of a run that has slept `slept` for backoffs: the real time, or under a
/// fixed clock `SPLICE_NOW` + `slept`.
pub fn now_after(slept: std::time::Duration) -> Result<DateTime<Utc>> {
    let now = now()?;
    match std::env::var("SPLICE_NOW") {
        Ok(text) if !text.is_empty() => {
            Ok(now + chrono::TimeDelta::from_std(slept).unwrap_or(chrono::TimeDelta::zero()))
        }
        _ => Ok(now),
    }
}

/// The current time as the RFC 3339 string stored in beads.
pub fn now_string() -> Result<String> {
    Ok(format(now()?))
}

pub fn format(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}
