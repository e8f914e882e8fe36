//! Which paths a sandboxed command on agent-produced content reads and writes, whoever starts
//! it (a dispatch: `crate::exec::sandbox`; a floor's command: `crate::floors`).

use std::path::{Path, PathBuf};

use super::Policy;

/// The system directories a sandboxed command reads.
pub const SYSTEM: &[&str] = &[
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
pub const DEVICES: &[&str] = &[
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
pub const HOME_TOOLS: &[&str] = &[
    // Not `.cargo` whole: `credentials.toml` there holds a registry's publish token.
    ".cargo/bin",
    ".cargo/registry",
    ".cargo/git",
    ".cargo/config.toml",
    ".cargo/config",
    ".cargo/env",
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
    // Not `.config/git` whole: git's credential store may be `credentials` there.
    ".config/git/config",
    ".config/git/ignore",
    ".config/git/attributes",
];

/// The agents' homes and the floors' temp directory, under `.splice/runs/`: kept across
/// dispatches (an agent's login, caches), never in the repository's history (`runs/` is
/// ignored).
pub const AGENT_HOME: &str = "agent-home";

/// Where a command on agent-produced content runs.
#[derive(Clone, Debug)]
pub struct Content<'a> {
    /// The repository's main checkout: read, but `.splice/runs/`.
    pub repo: &'a Path,
    /// `.splice/`.
    pub splice_dir: &'a Path,
    /// Where it may write (its checkout, its temp directory…).
    pub write: Vec<PathBuf>,
    /// More it may read (its program, files splice wrote for it).
    pub read: Vec<PathBuf>,
    /// `[sandbox] read`, `write` and `env` (`~/` is `$HOME`).
    pub extra_read: &'a [String],
    pub extra_write: &'a [String],
    pub extra_env: &'a [String],
}

/// The git configuration files the environment names (`GIT_CONFIG_GLOBAL`, `GIT_CONFIG_SYSTEM`,
/// which the sandbox passes on): git fails on a file it is told to read and cannot ("unknown
/// error occurred while reading the configuration files"), so what it is told to read it may
/// read, as it may `~/.gitconfig`. Only an absolute path; never written.
fn git_config_files() -> Vec<PathBuf> {
    ["GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .collect()
}

/// The policy for `c`.
pub fn content(c: &Content) -> Result<Policy, String> {
    let mut read: Vec<PathBuf> = SYSTEM.iter().map(PathBuf::from).collect();
    read.extend(repository(c.repo, c.splice_dir)?);
    if let Some(home) = home() {
        read.extend(HOME_TOOLS.iter().map(|t| home.join(t)));
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        read.push(dir);
    }
    read.extend(c.read.iter().cloned());
    read.extend(c.extra_read.iter().map(|p| expand(p)));
    read.extend(git_config_files());
    let mut write = c.write.clone();
    write.push(PathBuf::from("/dev/shm"));
    write.extend(c.extra_write.iter().map(|p| expand(p)));
    let mut env: Vec<String> = super::DEFAULT_ENV.iter().map(|s| s.to_string()).collect();
    env.extend(c.extra_env.iter().cloned());
    Ok(Policy {
        read,
        write,
        devices: DEVICES.iter().map(PathBuf::from).collect(),
        env,
    })
}

/// The cargo home sandboxed commands share, `<agent homes>/cargo` (made when missing): a
/// build may fetch crates into it, where the user's `~/.cargo` stays read-only (an agent that
/// could write it could change the sources the person's own builds compile). The user's cargo
/// config (`~/.cargo/config.toml`, `config`) is copied in once — never `credentials.toml`.
pub fn cargo_home(agent_homes: &Path) -> Result<PathBuf, String> {
    let dir = agent_homes.join("cargo");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if let Some(home) = home() {
        for name in ["config.toml", "config"] {
            let to = dir.join(name);
            if to.symlink_metadata().is_ok() {
                continue;
            }
            if let Some(bytes) = small_file(&home.join(".cargo").join(name)) {
                std::fs::write(&to, bytes).map_err(|e| format!("{}: {e}", to.display()))?;
            }
        }
    }
    Ok(dir)
}

/// A regular file's bytes, at most 1 MiB, opened without following a link or blocking.
fn small_file(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > 1 << 20 {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(1 << 20).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// A program's own directory, read with it (a script beside the helpers it runs), unless that
/// directory is one a person keeps other things in (`/`, `$HOME`, a temp directory's root).
/// A program installed by npm (its file under a `node_modules` directory) reads the outermost
/// such directory whole: node resolves its packages there, and a CLI's native binary is a
/// package of its own (`@openai/codex` starts `@openai/codex-linux-x64`'s).
pub fn program_dir(program: &Path) -> Option<PathBuf> {
    let file = std::fs::canonicalize(program).ok()?;
    let packages = file
        .ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .last();
    let dir = match packages {
        Some(p) => p.to_path_buf(),
        None => file.parent()?.to_path_buf(),
    };
    let broad = [
        Path::new("/"),
        Path::new("/tmp"),
        Path::new("/var/tmp"),
        Path::new("/root"),
    ];
    let is_home = home().is_some_and(|h| std::fs::canonicalize(h).is_ok_and(|h| h == dir));
    (!broad.contains(&dir.as_path()) && !is_home).then_some(dir)
}

/// The repository, less `.splice/runs/` (other dispatches' directories): each entry of the
/// main checkout but `.splice`, each entry of `.splice` but `runs`.
fn repository(repo: &Path, splice_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = |dir: &Path, skip: &Path| -> Result<Vec<PathBuf>, String> {
        let listing = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
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

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// `~/x` as `$HOME/x`; anything else as it is.
fn expand(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), home()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(p),
    }
}

#[cfg(test)]
mod tests {
    use super::program_dir;

    #[test]
    fn an_npm_installed_program_reads_its_node_modules_whole() {
        let dir = tempfile::tempdir().unwrap();
        let modules = dir.path().join("cli/node_modules");
        let bin = modules.join("@scope/cli/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(modules.join("@scope/cli-linux-x64/vendor")).unwrap();
        std::fs::write(bin.join("cli.js"), "#!/usr/bin/env node\n").unwrap();
        std::fs::create_dir_all(modules.join(".bin")).unwrap();
        let link = modules.join(".bin/cli");
        std::os::unix::fs::symlink("../@scope/cli/bin/cli.js", &link).unwrap();
        let modules = std::fs::canonicalize(&modules).unwrap();
        assert_eq!(program_dir(&link), Some(modules.clone()));
        // Not npm's: its own directory.
        let plain = dir.path().join("cli/tools");
        std::fs::create_dir_all(&plain).unwrap();
        std::fs::write(plain.join("agent.sh"), "#!/bin/sh\n").unwrap();
        let plain = std::fs::canonicalize(&plain).unwrap();
        assert_eq!(program_dir(&plain.join("agent.sh")), Some(plain));
    }
}
