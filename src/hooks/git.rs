//! git's side: the `pre-commit` hook (`splice hooks install --git`), installed where git runs
//! it for every checkout of the repository — `core.hooksPath` when it is set, else the common
//! git directory's `hooks/` (the same from the main checkout and from a linked worktree, where
//! `.git` is a file).
//!
//! A pre-commit hook that is not splice's is never overwritten: it is moved to
//! `pre-commit.local` once, and splice's hook runs it first. Installing again finds splice's own
//! hook (by its first comment line) and rewrites it only if it differs.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Action, Binary, Installed, Write, read_existing, shell_word};
use crate::error::{Error, Result};

/// The line that tells splice's pre-commit hook from another: its first comment.
const MARKER: &str = "# splice pre-commit hook";

/// The canonical script's line naming the splice to run; installing replaces its value.
const BIN_LINE: &str = "splice_bin=splice";

/// Where a hook it replaces is kept, beside it, and run first.
pub const LOCAL: &str = "pre-commit.local";

/// The script installed for `splice`: the canonical one with the splice to run named.
pub fn render(splice: &Path) -> String {
    let line = format!("splice_bin={}", shell_word(splice));
    super::GIT_PRE_COMMIT.replacen(&format!("\n{BIN_LINE}\n"), &format!("\n{line}\n"), 1)
}

/// Is this hook script splice's?
fn is_ours(script: &[u8]) -> bool {
    String::from_utf8_lossy(script)
        .lines()
        .take(3)
        .any(|l| l.starts_with(MARKER))
}

/// The splice an installed script runs (its `splice_bin=` line, unquoted).
fn named_splice(script: &str) -> Option<String> {
    let value = script.lines().find_map(|l| l.strip_prefix("splice_bin="))?;
    Some(
        match value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
            Some(inner) => inner.replace(r"'\''", "'"),
            None => value.to_string(),
        },
    )
}

/// The directory git runs hooks from for the repository holding `root`, and whether it came
/// from `core.hooksPath`.
pub fn hooks_dir(root: &Path) -> Result<(PathBuf, bool)> {
    let repo = git2::Repository::discover(root).map_err(|e| {
        Error::Invalid(format!(
            "{}: not in a git repository ({}); the pre-commit hook is installed into a \
             repository's hooks",
            root.display(),
            e.message()
        ))
    })?;
    let configured = repo
        .config()
        .ok()
        .and_then(|c| c.get_path("core.hooksPath").ok());
    if let Some(path) = configured {
        // git runs hooks from the top of the working tree: a relative path is taken from there.
        let base = repo.workdir().unwrap_or_else(|| repo.commondir());
        return Ok((base.join(path), true));
    }
    Ok((repo.commondir().join("hooks"), false))
}

/// Plan `splice hooks install --git` for the repository holding `root`.
pub(super) fn plan_install(root: &Path, splice: &Path) -> Result<(Installed, Option<Write>)> {
    let (dir, from_config) = hooks_dir(root)?;
    if dir.exists() && !dir.is_dir() {
        return Err(Error::bad_file(
            &dir,
            "is not a directory, where git looks for hooks; move it away (or fix core.hooksPath)",
        ));
    }
    let path = dir.join("pre-commit");
    let local = dir.join(LOCAL);
    let script = render(splice);
    let existing = read_existing(&path)?;
    let mut keep_old_as = None;
    let action = match &existing {
        None => Action::Created,
        Some(bytes) if is_ours(bytes) => {
            let executable =
                std::fs::metadata(&path).is_ok_and(|m| m.permissions().mode() & 0o111 == 0o111);
            if *bytes == script.as_bytes() && executable {
                Action::Unchanged
            } else {
                Action::Updated
            }
        }
        Some(_) => {
            if std::fs::symlink_metadata(&local).is_ok() {
                return Err(Error::bad_file(
                    &local,
                    format!(
                        "exists already, and {} is not splice's hook: splice keeps the hook it \
                         replaces as {LOCAL} and will not overwrite one; merge the two by hand \
                         (or remove one), then install again",
                        path.display()
                    ),
                ));
            }
            keep_old_as = Some(local.clone());
            Action::Updated
        }
    };
    let write = (action != Action::Unchanged).then(|| Write {
        path: path.clone(),
        bytes: script.into_bytes(),
        mode: 0o755,
        keep_old_as: keep_old_as.clone(),
    });
    let chained =
        keep_old_as.or_else(|| std::fs::symlink_metadata(&local).is_ok().then_some(local));
    let installed = Installed {
        hook: "git",
        path,
        action,
        command: format!("{} hooks pre-commit", shell_word(splice)),
        hooks_path_config: from_config,
        chained,
    };
    Ok((installed, write))
}

/// Is splice's pre-commit hook installed, and with which splice?
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// Where git runs the pre-commit hook from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// The hooks directory is `core.hooksPath`.
    pub hooks_path_config: bool,
    /// splice's hook is there.
    pub installed: bool,
    /// Another hook is there instead.
    pub foreign: bool,
    /// The splice it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub splice: Option<Binary>,
    /// The earlier hook it runs first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chained: Option<PathBuf>,
    /// Why it could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Read the repository's pre-commit hook; never writes.
pub(super) fn status(root: &Path) -> Status {
    let mut status = Status {
        path: None,
        hooks_path_config: false,
        installed: false,
        foreign: false,
        splice: None,
        chained: None,
        problem: None,
    };
    let (dir, from_config) = match hooks_dir(root) {
        Ok(found) => found,
        Err(e) => {
            status.problem = Some(e.to_string());
            return status;
        }
    };
    let path = dir.join("pre-commit");
    status.hooks_path_config = from_config;
    status.path = Some(path.clone());
    match read_existing(&path) {
        Ok(None) => {}
        Ok(Some(bytes)) if is_ours(&bytes) => {
            status.installed = true;
            let script = String::from_utf8_lossy(&bytes);
            status.splice = named_splice(&script).map(|s| Binary::look_up(&s));
            let local = dir.join(LOCAL);
            status.chained = std::fs::symlink_metadata(&local).is_ok().then_some(local);
        }
        Ok(Some(_)) => status.foreign = true,
        Err(e) => status.problem = Some(e.to_string()),
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_installed_script_names_its_splice_once() {
        let canonical = super::super::GIT_PRE_COMMIT;
        assert_eq!(canonical.matches(&format!("\n{BIN_LINE}\n")).count(), 1);
        assert!(is_ours(canonical.as_bytes()));
        let script = render(Path::new("/opt/my tools/splice"));
        assert!(script.contains("\nsplice_bin='/opt/my tools/splice'\n"));
        assert_eq!(
            named_splice(&script).as_deref(),
            Some("/opt/my tools/splice")
        );
        assert_eq!(named_splice(canonical).as_deref(), Some("splice"));
        assert!(!is_ours(b"#!/bin/sh\nexec lint\n"));
    }
}
