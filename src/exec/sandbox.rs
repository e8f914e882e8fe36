//! The sandbox of one dispatch (issue 31, `docs/security.md`): what an agent — and every
//! command run on what it wrote — may read, write and inherit.
//!
//! - **Writes**: the node's worktree; the dispatch's own directory (`runs/<run>/<dispatch>/`:
//!   result, usage, inbox, temp directory); the agents' homes splice owns
//!   (`runs/agent-home/`: `CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `XDG_*`, the npm cache); and, for
//!   its commits, the worktree's own git admin directory, the object store and the directory of
//!   `splice/*` branches. `$HOME`, `~/.gitconfig`, `.splice/` and the main checkout, `.git`'s
//!   config, hooks and every other ref are never writable.
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
use crate::sandbox::Policy;

use super::DispatchPaths;

/// The system directories a sandboxed command reads.
const SYSTEM: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
    "/dev",
    "/nix",
    "/snap",
    "/run/systemd/resolve",
];
/// The device files it may read, write and `ioctl`.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];
/// Toolchains and tools under `$HOME`, read (and executed) in place.
const HOME_TOOLS: &[&str] = &[
    ".cargo",
    ".rustup",
    ".pyenv",
    ".nvm",
    ".volta",
    ".bun",
    ".deno",
    ".local/bin",
    ".local/lib",
    ".local/share/claude",
    ".local/share/pnpm",
    ".npm-global",
    "go",
    ".gitconfig",
    ".config/git",
];
/// The agents' homes under `runs/`: one per kind of state, kept across dispatches (an agent's
/// login, caches), never in the repository's history (`runs/` is ignored).
pub const AGENT_HOME: &str = "agent-home";

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
    let home_root = place.splice_dir.join("runs").join(AGENT_HOME);
    let homes = agent_homes(&home_root)?;
    let mut env: Vec<(String, OsString)> = homes
        .iter()
        .map(|(k, dir)| (k.to_string(), dir.clone().into_os_string()))
        .collect();
    for k in ["TMPDIR", "TMP", "TEMP"] {
        env.push((k.into(), paths.tmp.clone().into()));
    }
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

    let mut read: Vec<PathBuf> = SYSTEM.iter().map(PathBuf::from).collect();
    read.extend(repository_reads(place.repo, place.splice_dir)?);
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        read.extend(HOME_TOOLS.iter().map(|t| home.join(t)));
    }
    let exe = crate::hooks::splice_exe();
    read.extend(exe.parent().map(Path::to_path_buf));
    read.extend(programs(place.argv, place.worktree));
    for file in [&paths.prompt_file, &paths.settings_file] {
        read.push(file.clone());
    }
    read.push(paths.log.with_extension("context.json"));
    read.extend(place.config.read.iter().map(|p| expand(p)));

    let mut write = vec![
        place.worktree.to_path_buf(),
        paths.private_dir.clone(),
        home_root,
        PathBuf::from("/dev/shm"),
    ];
    write.extend(git_writes(place.worktree, place.git_dir, place.node)?);
    write.extend(place.config.write.iter().map(|p| expand(p)));

    let mut names: Vec<String> = crate::sandbox::DEFAULT_ENV
        .iter()
        .map(|s| s.to_string())
        .collect();
    names.extend(place.config.env.iter().cloned());
    let policy = Policy {
        read,
        write,
        devices: DEVICES.iter().map(PathBuf::from).collect(),
        env: names,
    };
    Ok((policy, env))
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

/// The repository, less `.splice/runs/` (other dispatches' directories): each entry of the
/// main checkout but `.splice`, each entry of `.splice` but `runs`.
fn repository_reads(repo: &Path, splice_dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = |dir: &Path, skip: &Path| -> Result<Vec<PathBuf>> {
        let listing = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
        Ok(listing
            .flatten()
            .map(|e| e.path())
            .filter(|p| p != skip)
            .collect())
    };
    let mut read = entries(repo, splice_dir)?;
    read.extend(entries(splice_dir, &splice_dir.join("runs"))?);
    Ok(read)
}

/// The program of `argv` and every argument naming an existing file, as files to read and
/// execute (a script's interpreter is found on `PATH`, under the system directories).
fn programs(argv: &[String], worktree: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Some(program) = argv.first()
        && let super::dispatch::Found::At(path) = super::dispatch::find_program(program)
    {
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

/// What a commit in the worktree writes: its own admin directory (`HEAD`, index, logs), the
/// object store, and the `splice/` branches' directory and its reflogs. The admin directory is
/// the one splice made for the node (`<git dir>/worktrees/<node>`); a worktree whose `.git`
/// file names another (an agent pointed it at the repository's own `.git`, or elsewhere) is
/// refused, naming the file.
fn git_writes(worktree: &Path, git_dir: &Path, node: &str) -> Result<Vec<PathBuf>> {
    let dot_git = worktree.join(".git");
    let admin = git_dir.join("worktrees").join(node);
    let named = std::fs::read_to_string(&dot_git)
        .ok()
        .and_then(|t| t.strip_prefix("gitdir:").map(|s| worktree.join(s.trim())));
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !named.as_deref().is_some_and(|n| same(n, &admin)) {
        return Err(Error::bad_file(
            &dot_git,
            format!(
                "does not name the git directory splice made for this worktree ({}): \
                 it was changed; the dispatch does not start",
                admin.display()
            ),
        ));
    }
    let branches = git_dir.join("refs/heads/splice");
    let reflogs = git_dir.join("logs/refs/heads/splice");
    for dir in [&branches, &reflogs] {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    Ok(vec![admin, git_dir.join("objects"), branches, reflogs])
}

/// `~/x` as `$HOME/x`; anything else as it is.
fn expand(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(p),
    }
}
