//! What a run does once before its first pass, besides checking its commands
//! ([`super::commands`]): prune old run directories, warn about uncommitted changes the
//! agents will not see and about the optional steps it will skip.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::store::Store;

use super::events::{Event, Events};

/// Keep the newest `keep` run directories (the current one among them) and remove the older
/// ones: their envelopes, events and dispatch logs (`[runs] keep`). Only directories named like
/// a run id (`<stamp>-<pid>-<n>`, which sort by time) are touched.
pub(super) fn prune_runs(runs: &std::path::Path, keep: usize, current: &str) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(runs) else {
        return Ok(());
    };
    let mut dirs: Vec<(std::time::SystemTime, String)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let modified = e.metadata().and_then(|m| m.modified()).ok()?;
            Some((modified, e.file_name().into_string().ok()?))
        })
        .filter(|(_, name)| is_run_id(name))
        .collect();
    // Oldest first: by when each was last written, then by name.
    dirs.sort();
    let dirs: Vec<String> = dirs.into_iter().map(|(_, name)| name).collect();
    let excess = dirs.len().saturating_sub(keep.max(1));
    for name in dirs.iter().take(excess).filter(|n| *n != current) {
        let dir = runs.join(name);
        std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    }
    Ok(())
}

/// `20261130T105300Z-1234-0`: what [`super::holder::identity`] names a run.
fn is_run_id(name: &str) -> bool {
    let mut parts = name.split('-');
    let stamp = parts.next().unwrap_or_default();
    let numbers =
        parts.clone().count() == 2 && parts.all(|p| p.bytes().all(|b| b.is_ascii_digit()));
    numbers && stamp.len() == 16 && stamp.ends_with('Z') && stamp.as_bytes()[8] == b'T'
}

/// Agents branch from committed work: say so when the main checkout has changes they will not see.
pub(super) fn warn_uncommitted(store: &Store, events: &Events) {
    let Some(paths) = crate::worktree::uncommitted(store.repo()).filter(|p| !p.is_empty()) else {
        return;
    };
    let shown: Vec<&str> = paths.iter().take(5).map(String::as_str).collect();
    let more = paths.len().saturating_sub(shown.len());
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    events.emit(&Event::Warning {
        text: format!(
            "the main checkout has uncommitted changes ({}{more}); agents work from committed \
             commits and will not see them: commit them first if they belong to the work",
            shown.join(", ")
        ),
    });
}

/// Say once which optional steps this run skips, because their command cannot be found.
pub(super) fn warn_unavailable(unavailable: &BTreeMap<String, String>, events: &Events) {
    if unavailable.is_empty() {
        return;
    }
    let why: Vec<&str> = unavailable.values().map(String::as_str).collect();
    events.emit(&Event::Warning {
        text: format!(
            "optional step(s) {} will be skipped, recorded as not applicable: {}; install the \
             command to run them",
            unavailable.keys().cloned().collect::<Vec<_>>().join(", "),
            why.join("; ")
        ),
    });
}
