//! What a run works out once before its first pass, besides checking its commands
//! ([`super::commands`]): prune old run directories, warn about uncommitted changes the
//! agents will not see and about the optional steps it will skip; its config and limits.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::model::{Config, Limits};
use crate::store::Store;

use super::events::{Event, Events};
use super::runner::Options;

/// The run's config: `config.toml`, with the agent its options name instead (`exec --agent
/// sim`), which is never written back.
pub(super) fn config(store: &Store, opts: &Options) -> Result<Config> {
    let mut config = store.config()?;
    if let Some(agent) = &opts.agent {
        config.agent = agent.clone();
    }
    Ok(config)
}

/// The run's limits: its options over `config.toml`'s `[limits]`; the backoff as the snapshot
/// has it already.
pub(super) fn limits(opts: &Options, config: &Config, backoff_s: u64) -> Limits {
    Limits {
        max_passes: opts.max_passes.or(config.limits.max_passes),
        token_budget: opts.token_budget.or(config.limits.token_budget),
        wall_time_s: opts.wall_time_s.or(config.limits.wall_time_s),
        jobs: opts.jobs.or(config.limits.jobs).unwrap_or(1).max(1),
        backoff_s,
        max_turns: opts.max_turns.filter(|n| *n > 0),
        no_person: opts.no_person,
    }
}

/// Remove the records of dead runners (`.splice/runs/runners/`) whose holders no claim names
/// any more; a record is kept while one does, since it proves the runner dead once its pid is
/// reused (`super::holder::judge`). A scoped run sees only its scope's claims, so it leaves the
/// records to an unscoped one.
pub(super) fn sweep_records(store: &Store, scope: Option<&str>, snapshot: &crate::model::Snapshot) {
    if scope.is_some() {
        return;
    }
    let claimed: std::collections::BTreeSet<&str> = snapshot
        .beads
        .iter()
        .filter_map(|b| b.pipeline.lease.as_deref())
        .map(|l| l.holder.as_str())
        .collect();
    crate::authority::presence::sweep(store.dir(), |h| claimed.contains(h));
}

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

/// Say loudly when the run's agents are not confined by the kernel (issue 31).
pub(super) fn warn_unsandboxed(sandbox: &std::result::Result<i32, String>, events: &Events) {
    if let Err(why) = sandbox {
        events.emit(&Event::Warning {
            text: format!(
                "UNSANDBOXED: this run's agents are not confined by the kernel ({why}); the \
                 writer tells them apart by process descent and credential alone, and they can \
                 write anywhere you can (docs/security.md); set [sandbox] required = true to \
                 refuse such runs"
            ),
        });
    }
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

/// A Slurm run's repository must lie under `[executor] shared_root`: its worktrees and dispatch
/// logs are read and written by the compute nodes through that shared file system.
pub(super) fn shared_root(store: &Store, config: &Config) -> Result<()> {
    let Some(root) = &config.executor.shared_root else {
        return Err(Error::Invalid(
            "[executor] kind = \"slurm\" needs shared_root".into(),
        ));
    };
    let root_c = std::fs::canonicalize(root).map_err(|e| {
        Error::Invalid(format!(
            "[executor] shared_root {} cannot be resolved ({e}): it must be a directory this \
             host and the compute nodes mount",
            root.display()
        ))
    })?;
    let repo = store.repo();
    let repo_c = std::fs::canonicalize(repo).map_err(|e| Error::io(repo, e))?;
    if !repo_c.starts_with(&root_c) {
        return Err(Error::Invalid(format!(
            "[executor] shared_root is {}, but the repository {} is not under it: compute nodes \
             could not reach its worktrees and logs (see docs/scale-out.md)",
            root.display(),
            repo_c.display()
        )));
    }
    Ok(())
}
