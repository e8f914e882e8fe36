//! Hooks that keep agents away from splice's state where splice cannot stand between them: the
//! Claude Code `PreToolUse` registration of `splice guard`, and a git `pre-commit` hook that
//! refuses a dispatched session's commit touching `.splice/` (issue 11; `docs/security.md`,
//! "Hooks").
//!
//! The canonical files live in the repository's `hooks/` directory and are embedded here, so
//! `splice hooks install` works from wherever the binary is installed. The git hook (in `.git`,
//! never committed) names the absolute path of the splice that installed it, so it runs the
//! same splice the person ran; the Claude Code settings file is committed, so it names `splice`
//! on `PATH` ([`PORTABLE_GUARD`]) and works on every clone.
//!
//! | module | what it holds |
//! |---|---|
//! | [`claude`] | the settings fragment, merging it into `.claude/settings.json`, reading it back |
//! | [`git`] | where git looks for hooks (`core.hooksPath`, the common git dir), installing and chaining `pre-commit` |
//! | [`precommit`] | the check the installed `pre-commit` delegates to (`splice hooks pre-commit`) |
//!
//! Installing plans every file first and writes only when every plan succeeded: a bad settings
//! file or a directory where a hook should be changes nothing. Every write is atomic (temp file,
//! fsync, rename, fsync the directory: [`crate::store::atomic`]). Nothing here prints.

pub mod claude;
pub mod git;
pub mod precommit;

use std::fs::{self, Permissions};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::store::atomic;

/// `hooks/claude/settings.json`: the Claude Code settings fragment registering the guard, with
/// the bare command `splice guard` (installing names the absolute path instead).
pub const CLAUDE_SETTINGS: &str = include_str!("../../hooks/claude/settings.json");

/// `hooks/git/pre-commit`: the git hook script, naming the bare `splice` (installing names the
/// absolute path instead).
pub const GIT_PRE_COMMIT: &str = include_str!("../../hooks/git/pre-commit");

/// The running splice binary, as hooks should name it: its absolute path, else the bare name
/// `splice`, found on `PATH` when the hook runs.
pub fn splice_exe() -> PathBuf {
    std::env::current_exe()
        .ok()
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| PathBuf::from("splice"))
}

/// `path` as one word of a POSIX shell command line: as it is when it holds only safe
/// characters, else in single quotes.
pub fn shell_word(path: &Path) -> String {
    let s = path.to_string_lossy();
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if safe {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The guard's command in the committed `.claude/settings.json` (`splice hooks install`): it
/// works on every clone, finding `splice` on `PATH` (a dispatch puts the runner's own first),
/// and where splice is missing it blocks the tool call saying so (exit 2: Claude Code shows the
/// message) instead of letting the guard be silently off.
pub const PORTABLE_GUARD: &str = "command -v splice >/dev/null 2>&1 || { echo 'splice is not on PATH, so the guard of this repository (splice guard) cannot run: install splice (docs/security.md, Hooks)' >&2; exit 2; }; splice guard";

/// The command line a hook runs to reach the guard: `<splice> guard`.
pub fn guard_command(splice: &Path) -> String {
    format!("{} guard", shell_word(splice))
}

/// Which hooks `splice hooks install` installs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Which {
    pub claude: bool,
    pub git: bool,
}

/// What installing did to one file.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// The file did not exist.
    Created,
    /// It existed and was changed.
    Updated,
    /// It already held what installing would write: nothing was written.
    Unchanged,
}

/// One hook installed.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Installed {
    /// `claude` or `git`.
    pub hook: &'static str,
    /// The file written (or left as it was).
    pub path: PathBuf,
    pub action: Action,
    /// What the hook runs: `<splice> guard`, or the splice `pre-commit` calls.
    pub command: String,
    /// The git hooks directory came from `core.hooksPath`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hooks_path_config: bool,
    /// A pre-commit hook that was there before was moved here, and runs first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chained: Option<PathBuf>,
}

/// A file to write, planned before anything is written.
#[derive(Debug)]
struct Write {
    path: PathBuf,
    bytes: Vec<u8>,
    /// Unix permissions of the new file.
    mode: u32,
    /// Move the file at `path` here first (a foreign pre-commit hook kept and chained).
    keep_old_as: Option<PathBuf>,
}

/// Install the hooks `which` names for the repository whose working tree is `root`, naming
/// `splice` as the binary to run. Every file is planned first; a problem with any of them
/// changes nothing.
pub fn install(root: &Path, which: Which, splice: &Path) -> Result<Vec<Installed>> {
    let mut plans: Vec<(Installed, Option<Write>)> = Vec::new();
    if which.claude {
        plans.push(claude::plan_install(root, splice)?);
    }
    if which.git {
        plans.push(git::plan_install(root, splice)?);
    }
    let mut done = Vec::new();
    for (installed, write) in plans {
        if let Some(write) = write {
            apply(&write)?;
        }
        done.push(installed);
    }
    Ok(done)
}

/// Carry out one planned write.
fn apply(w: &Write) -> Result<()> {
    let dir = w
        .path
        .parent()
        .ok_or_else(|| Error::bad_file(&w.path, "has no parent directory"))?;
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    if let Some(keep) = &w.keep_old_as {
        fs::rename(&w.path, keep).map_err(|e| Error::io(&w.path, e))?;
    }
    let tmp = atomic::write_tmp(&w.path, &w.bytes)?;
    fs::set_permissions(&tmp, Permissions::from_mode(w.mode)).map_err(|e| Error::io(&tmp, e))?;
    atomic::publish(&w.path)?;
    atomic::sync_dir(dir)
}

/// What a file at `path` is, read without following a link: `None` when nothing is there. A
/// directory, a link or anything else but a regular file is refused, naming the file, since
/// installing replaces the file by rename.
fn read_existing(path: &Path) -> Result<Option<Vec<u8>>> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
        Ok(meta) if meta.is_file() => {
            crate::safe_read::read(path, crate::safe_read::SETTINGS).map(Some)
        }
        Ok(meta) if meta.is_dir() => Err(Error::bad_file(
            path,
            "is a directory, where splice would install a file; move it away and install again",
        )),
        Ok(_) => Err(Error::bad_file(
            path,
            "is not a regular file (a symbolic link, a FIFO or a device); splice writes hooks by \
             rename and would replace it: replace it with the file itself, or remove it",
        )),
    }
}

/// Where a hook's splice stands: the path it names, and whether an executable is there (a bare
/// name is looked up on `PATH`).
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Binary {
    /// As the hook names it.
    pub path: String,
    /// An executable file is there (or on `PATH`, for a bare name).
    pub exists: bool,
}

impl Binary {
    /// Look `named` up as a shell would.
    pub fn look_up(named: &str) -> Binary {
        let executable = |p: &Path| {
            fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        };
        let exists = if named.contains('/') {
            executable(Path::new(named))
        } else {
            std::env::var_os("PATH")
                .is_some_and(|p| std::env::split_paths(&p).any(|d| executable(&d.join(named))))
        };
        Binary {
            path: named.to_string(),
            exists,
        }
    }
}

/// `splice hooks status`: what is installed where.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub claude: claude::Status,
    pub git: git::Status,
}

/// Read, never write, what is installed for the repository whose working tree is `root`.
pub fn status(root: &Path) -> Status {
    Status {
        claude: claude::status(root),
        git: git::status(root),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_one_shell_word() {
        assert_eq!(shell_word(Path::new("/usr/bin/splice")), "/usr/bin/splice");
        assert_eq!(shell_word(Path::new("/a b/splice")), "'/a b/splice'");
        assert_eq!(shell_word(Path::new("/it's/splice")), r"'/it'\''s/splice'");
        assert_eq!(guard_command(Path::new("splice")), "splice guard");
    }
}
