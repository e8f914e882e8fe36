//! The sandbox of one dispatch (issue 31, `docs/security.md`): what an agent — and every
//! command run on what it wrote — may read, write and inherit.
//!
//! - **Writes**: the node's worktree; the dispatch's own directory (`runs/<run>/<dispatch>/`:
//!   result, usage, inbox, temp directory); the agents' homes splice owns
//!   (`runs/agent-home/`: `CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `XDG_*`, `CARGO_HOME`, the npm
//!   cache); and, for
//!   git, the node's quarantine (`worktree::quarantine`). `$HOME`, `~/.gitconfig`, `.splice/`,
//!   the main checkout and the repository's `.git` are never writable.
//! - **Reads**: the system (`/usr`, `/etc`, `/proc`…), the repository (but other dispatches'
//!   directories under `runs/`), the toolchains under `$HOME` (`.cargo`, `.rustup`, …),
//!   the splice binary, the command's program and the files splice wrote for the dispatch
//!   (its prompt, settings, loop context); never `~/.ssh`, `~/.config/gh`, keyrings or other
//!   agents' configuration.
//! - **Environment**: [`crate::sandbox::DEFAULT_ENV`] and `[sandbox] env`; no
//!   `SSH_AUTH_SOCK`, no forge token.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::model::config::SandboxConfig;
use crate::sandbox::{Policy, places};

use super::DispatchPaths;

pub use crate::sandbox::places::AGENT_HOME;

/// Where a dispatch runs and what it was handed.
#[derive(Clone, Debug)]
pub struct Place<'a> {
    /// The repository's main checkout.
    pub repo: &'a Path,
    /// `.splice/`.
    pub splice_dir: &'a Path,
    /// The repository's git directory (its common directory when the main checkout is itself
    /// a linked worktree).
    pub git_dir: &'a Path,
    /// The node's id: its worktree's admin directory is `<git_dir>/worktrees/<node>`.
    pub node: &'a str,
    /// The node's worktree: the command's working directory.
    pub worktree: &'a Path,
    pub paths: &'a DispatchPaths,
    /// The command's argv: its program, and every argument that names a file, are readable.
    pub argv: &'a [String],
    pub config: &'a SandboxConfig,
}

/// The policy and the variables the dispatch gets on top of its `SPLICE_*` environment (its
/// temp directory, the agents' homes, git's settings): the directories named are made here.
pub fn for_dispatch(place: &Place) -> Result<(Policy, Vec<(String, OsString)>)> {
    let paths = place.paths;
    for dir in [&paths.private_dir, &paths.inbox, &paths.tmp] {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let (home_root, mut env) = homes_and_tmp(place.splice_dir, &paths.tmp)?;
    env.push(("SPLICE_INBOX".into(), paths.inbox.clone().into()));
    // No gc or maintenance from inside: they would rewrite what the sandbox keeps read-only.
    for (i, (k, v)) in [("gc.auto", "0"), ("maintenance.auto", "false")]
        .iter()
        .enumerate()
    {
        env.push((format!("GIT_CONFIG_KEY_{i}"), k.into()));
        env.push((format!("GIT_CONFIG_VALUE_{i}"), v.into()));
    }
    env.push(("GIT_CONFIG_COUNT".into(), "2".into()));

    let mut read = programs(place.argv, place.worktree);
    for file in [&paths.prompt_file, &paths.settings_file] {
        read.push(file.clone());
    }
    read.push(paths.log.with_extension("context.json"));
    let mut write = vec![
        place.worktree.to_path_buf(),
        paths.private_dir.clone(),
        home_root,
    ];
    write.extend(git_writes(place)?);
    let policy = places::content(&places::Content {
        repo: place.repo,
        splice_dir: place.splice_dir,
        write,
        read,
        extra_read: &place.config.read,
        extra_write: &place.config.write,
        extra_env: &place.config.env,
    })
    .map_err(Error::Invalid)?;
    Ok((policy, env))
}

/// The logins an agent CLI keeps under `$HOME`, copied into its splice-owned home when that has
/// none yet, so a logged-in CLI still authenticates inside the sandbox (which cannot read
/// `$HOME`): `(home under runs/agent-home, file under $HOME, file in the home)`. An API key in
/// the environment (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`) needs no copy and is preferred.
const LOGINS: &[(&str, &str, &str)] = &[
    ("claude", ".claude/.credentials.json", ".credentials.json"),
    ("codex", ".codex/auth.json", "auth.json"),
];

/// Copy each login of [`LOGINS`] the agents' homes lack (mode 0600, never through a link).
fn seed_logins(root: &Path) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return Ok(());
    };
    for (dir, from, to) in LOGINS {
        let (from, to) = (home.join(from), root.join(dir).join(to));
        if to.symlink_metadata().is_ok() {
            continue;
        }
        let Ok(bytes) = crate::safe_read::read(&from, 1 << 20) else {
            continue;
        };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&to)
            .map_err(|e| Error::io(&to, e))?;
        std::io::Write::write_all(&mut file, &bytes).map_err(|e| Error::io(&to, e))?;
    }
    Ok(())
}

/// The sandbox of an agent that is not a node's dispatch — `plan crystallize`'s design agent
/// and critic: it may write `scratch` (its temp directory too) and the agents' homes, and read
/// what a dispatch reads plus `read`; `.splice/` and the main checkout stay read-only.
pub fn for_agent(
    repo: &Path,
    splice_dir: &Path,
    scratch: &Path,
    read: &[PathBuf],
    argv: &[String],
    config: &SandboxConfig,
) -> Result<(Policy, Vec<(String, OsString)>)> {
    let (home_root, env) = homes_and_tmp(splice_dir, scratch)?;
    let mut reads = programs(argv, scratch);
    reads.extend(read.iter().cloned());
    let policy = places::content(&places::Content {
        repo,
        splice_dir,
        write: vec![scratch.to_path_buf(), home_root],
        read: reads,
        extra_read: &config.read,
        extra_write: &config.write,
        extra_env: &config.env,
    })
    .map_err(Error::Invalid)?;
    Ok((policy, env))
}

/// The agents' homes (made when missing, logins seeded) and the variables naming them and the
/// temp directory `tmp`: the root of the homes, and the variables.
fn homes_and_tmp(splice_dir: &Path, tmp: &Path) -> Result<(PathBuf, Vec<(String, OsString)>)> {
    let root = splice_dir.join("runs").join(AGENT_HOME);
    let homes = agent_homes(&root)?;
    seed_logins(&root)?;
    let mut env: Vec<(String, OsString)> = homes
        .into_iter()
        .map(|(k, dir)| (k.to_string(), dir.into_os_string()))
        .collect();
    let cargo = places::cargo_home(&root).map_err(Error::Invalid)?;
    env.push(("CARGO_HOME".into(), cargo.into_os_string()));
    for k in ["TMPDIR", "TMP", "TEMP"] {
        env.push((k.into(), tmp.into()));
    }
    Ok((root, env))
}

/// The agents' homes, made when missing: `(variable, directory)`.
fn agent_homes(root: &Path) -> Result<Vec<(&'static str, PathBuf)>> {
    let homes = [
        ("CLAUDE_CONFIG_DIR", "claude"),
        ("CODEX_HOME", "codex"),
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_STATE_HOME", "state"),
        ("npm_config_cache", "npm"),
    ];
    homes
        .into_iter()
        .map(|(k, name)| {
            let dir = root.join(name);
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            Ok((k, dir))
        })
        .collect()
}

/// The program of `argv` and every argument naming an existing file, as files to read and
/// execute (a script's interpreter is found on `PATH`, under the system directories).
fn programs(argv: &[String], worktree: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Some(program) = argv.first()
        && let super::dispatch::Found::At(path) = super::dispatch::find_program(program)
    {
        found.extend(places::program_dir(&path));
        found.extend(std::fs::canonicalize(&path).ok());
        found.push(path);
    }
    for arg in argv.iter().skip(1) {
        let path = worktree.join(arg);
        if arg.len() < 4096 && path.is_file() {
            found.push(path);
        }
    }
    found
}

/// What git in the worktree may write: the node's quarantine (`worktree::quarantine`), when
/// the worktree's `.git` names it (a dispatch); nothing when it names the admin directory splice
/// made for the node (`<git dir>/worktrees/<node>`: a command that only reads, as the step-back
/// analysis). A `.git` that names anything else (an agent pointed it at the repository's own
/// `.git`, or elsewhere) is refused, naming the file.
fn git_writes(place: &Place) -> Result<Vec<PathBuf>> {
    let dot_git = place.worktree.join(".git");
    let admin = place.git_dir.join("worktrees").join(place.node);
    let quarantine =
        crate::worktree::quarantine::gitdir(&place.splice_dir.join("worktrees"), place.node);
    let named = crate::safe_read::read_text(&dot_git, 4096)
        .ok()
        .and_then(|t| {
            t.strip_prefix("gitdir:")
                .map(|s| place.worktree.join(s.trim()))
        });
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    match named {
        Some(n) if same(&n, &quarantine) => Ok(vec![quarantine]),
        Some(n) if same(&n, &admin) => Ok(Vec::new()),
        _ => Err(Error::bad_file(
            &dot_git,
            format!(
                "does not name the git directory splice made for this worktree ({}): \
                 it was changed; the dispatch does not start",
                quarantine.display()
            ),
        )),
    }
}
