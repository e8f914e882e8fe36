//! The kernel sandbox (issue 31): every process splice starts on agent-produced content — an
//! agent's dispatch, and the commands that run what an agent wrote (floors, the suite, a loop's
//! stages) — runs confined by Linux, so what it may touch is enforced, not inferred.
//!
//! A [`Sandbox`] is built in the parent from a [`Policy`] (which paths may be read, which
//! written, which environment variables pass) and entered by the child between `fork` and
//! `exec` ([`Sandbox::entry`], called by [`crate::process`]), with only raw system calls and no
//! allocation:
//!
//! 1. capabilities: a privileged child (root) drops every capability from its bounding,
//!    ambient, inheritable, permitted and effective sets and locks the securebits, so running as
//!    root gives it nothing the kernel checks by capability (`caps.rs`);
//! 2. `PR_SET_NO_NEW_PRIVS`: no set-uid program, file capability or LSM transition gives any back;
//! 3. Landlock (`ruleset.rs`): the file system is deny-by-default — read (and execute) only
//!    beneath [`Policy::read`], write only beneath [`Policy::write`] (never a device node), the
//!    device files of [`Policy::devices`]; from ABI 6, no signal to a process outside the
//!    sandbox and no connection to an abstract UNIX socket made outside it;
//! 4. seccomp (`filter.rs`): `socket(AF_UNIX)` (Landlock ABI 7 cannot stop a connect to a
//!    pathname socket: a docker or tmux server's), namespaces, mounts, `bpf`, module loading,
//!    `kexec`, `reboot`, keyrings and terminal input injection are refused with `EPERM`.
//!
//! The network stays open: agents call their APIs. The domain is inherited by every descendant
//! and cannot be left, so a process that outlives its runner stays confined.
//!
//! [`probe`] says what this kernel offers; a sandbox needs Landlock ABI 6 or newer and seccomp
//! ([`Support::usable`]). Nothing is dropped silently: a ruleset is built for the exact ABI the
//! kernel reports (at most [`MAX_ABI`]) and its creation fails rather than enforce less.
//! Linux only; elsewhere [`probe`] reports no support.

#[cfg(target_os = "linux")]
mod caps;
#[cfg(target_os = "linux")]
mod filter;
pub mod places;
#[cfg(target_os = "linux")]
mod ruleset;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The newest Landlock ABI splice builds rules for.
pub const MAX_ABI: i32 = 7;
/// The oldest Landlock ABI a sandbox is built on: 6 brings the signal and abstract-socket scopes.
pub const MIN_ABI: i32 = 6;

/// What may be touched from inside (as JSON: the policy file of `splice sandbox exec`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Directories (or files) whose contents may be read and executed.
    pub read: Vec<PathBuf>,
    /// Directories (or files) beneath which anything but a device node may be made, written,
    /// renamed or removed (and read).
    pub write: Vec<PathBuf>,
    /// Device files that may be read, written and `ioctl`ed (`/dev/null`, `/dev/tty`…).
    pub devices: Vec<PathBuf>,
    /// The environment variables kept from splice's own environment: exact names, or a prefix
    /// followed by `*` (`SPLICE_*`). Variables a command is given explicitly always pass.
    pub env: Vec<String>,
}

/// What the kernel offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version; 0: none (not built in, or not enabled at boot).
    pub landlock_abi: i32,
    /// seccomp filters can be installed.
    pub seccomp: bool,
}

impl Support {
    /// `Ok` when a sandbox can be built; else why not, in words.
    pub fn usable(&self) -> Result<(), String> {
        if self.landlock_abi == 0 {
            return Err(
                "this kernel has no Landlock (not built in, or not enabled at boot: \
                        add `landlock` to the `lsm=` boot parameter)"
                    .into(),
            );
        }
        if self.landlock_abi < MIN_ABI {
            return Err(format!(
                "this kernel's Landlock is ABI {}; a splice sandbox needs ABI {MIN_ABI} \
                 (Linux 6.12) or newer, for its signal and socket scopes",
                self.landlock_abi
            ));
        }
        if !self.seccomp {
            return Err("this kernel cannot install seccomp filters".into());
        }
        Ok(())
    }

    /// The ABI rules are built for: the kernel's, at most [`MAX_ABI`].
    pub fn enforced_abi(&self) -> i32 {
        self.landlock_abi.min(MAX_ABI)
    }
}

/// The variable a person sets to run one invocation unsandboxed (`off`) without editing
/// `[sandbox] enabled`; `on` or unset: as the config says.
pub const ENV: &str = "SPLICE_SANDBOX";

/// `<splice> sandbox exec --policy <file> -- <argv>`: the command line that, on another host (a
/// Slurm job, a floor sent through `srun`), enters the sandbox the policy file holds and runs
/// `argv` in it; `splice` is the binary's path there.
pub fn exec_argv(splice: &Path, policy_file: &Path, argv: &[String]) -> Vec<String> {
    let mut out = vec![
        splice.display().to_string(),
        "sandbox".into(),
        "exec".into(),
        "--policy".into(),
        policy_file.display().to_string(),
        "--".into(),
    ];
    out.extend(argv.iter().cloned());
    out
}

/// Is the sandbox switched off by [`ENV`]? `Ok(Some(why))`: off; `Err`: a value that is
/// neither `on` nor `off`, named.
pub fn switched_off_by_env() -> Result<Option<String>, String> {
    match std::env::var(ENV).as_deref() {
        Ok("off") => Ok(Some(format!("{ENV}=off in the environment"))),
        Ok("on") | Ok("") | Err(std::env::VarError::NotPresent) => Ok(None),
        Ok(other) => Err(format!("{ENV}={other:?}: expected on or off")),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("{ENV} is not UTF-8")),
    }
}

/// Whether a command runs sandboxed, from `[sandbox] enabled` and `required`, [`ENV`] and
/// this kernel: `Ok(None)` sandboxed; `Ok(Some(why))` unconfined, and why; `Err` it may not
/// run (`required`, and no sandbox), in words.
pub fn choose(enabled: bool, required: bool) -> Result<Option<String>, String> {
    let off = match switched_off_by_env()? {
        Some(why) => Some(why),
        None if !enabled => Some("[sandbox] enabled = false in .splice/config.toml".to_string()),
        None => probe().usable().err(),
    };
    match off {
        Some(why) if required => Err(format!(
            "[sandbox] required = true, and this command cannot be sandboxed: {why}"
        )),
        off => Ok(off),
    }
}

/// What this kernel offers (Linux; elsewhere nothing).
pub fn probe() -> Support {
    #[cfg(target_os = "linux")]
    {
        Support {
            landlock_abi: ruleset::abi(),
            seccomp: filter::available(),
        }
    }
    #[cfg(not(target_os = "linux"))]
    Support {
        landlock_abi: 0,
        seccomp: false,
    }
}

/// A sandbox ready to be entered by children: the Landlock ruleset (a file descriptor), the
/// seccomp program, whether capabilities are dropped, and the environment kept.
pub struct Sandbox {
    #[cfg(target_os = "linux")]
    ruleset: std::os::fd::OwnedFd,
    #[cfg(target_os = "linux")]
    filter: Vec<libc::sock_filter>,
    /// Drop capabilities in the child: splice itself holds some (it runs as root).
    #[cfg(target_os = "linux")]
    caps: caps::Drop,
    env: Vec<String>,
    abi: i32,
    policy: Policy,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("abi", &self.abi)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Build the sandbox `policy` describes. `Err`: why it cannot be built here (no Landlock,
    /// an old ABI, a rule the kernel refused), in words.
    pub fn prepare(policy: &Policy) -> Result<Sandbox, String> {
        let support = probe();
        support.usable()?;
        #[cfg(target_os = "linux")]
        {
            let abi = support.enforced_abi();
            Ok(Sandbox {
                ruleset: ruleset::build(abi, policy)?,
                filter: filter::program()?,
                caps: caps::Drop::for_this_process(),
                env: policy.env.clone(),
                abi,
                policy: policy.clone(),
            })
        }
        #[cfg(not(target_os = "linux"))]
        Err("a splice sandbox needs Linux".into())
    }

    /// The Landlock ABI the rules are enforced at.
    pub fn abi(&self) -> i32 {
        self.abi
    }

    /// What it allows.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Is the variable `name` of splice's own environment kept?
    pub fn keeps(&self, name: &OsStr) -> bool {
        let Some(name) = name.to_str() else {
            return false;
        };
        self.env
            .iter()
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == pattern,
            })
    }

    /// The child's half: a closure for `CommandExt::pre_exec` that enters the sandbox. It
    /// captures plain values only (the ruleset's descriptor, the program's instructions), so
    /// the call between `fork` and `exec` allocates nothing and uses only system calls.
    #[cfg(target_os = "linux")]
    pub fn entry(&self) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
        use std::os::fd::AsRawFd;
        let fd = self.ruleset.as_raw_fd();
        let filter = self.filter.clone();
        let caps = self.caps;
        move || {
            // SAFETY: each call takes plain integers or a pointer into `filter`, which lives
            // as long as the closure; none allocates.
            unsafe {
                caps::drop_all(caps)?;
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                ruleset::restrict_self(fd)?;
                filter::install(&filter)
            }
        }
    }
}

/// The environment variables a sandboxed command keeps by default: what programs need to run
/// and to reach their APIs, never a credential store's socket or a forge token.
pub const DEFAULT_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "SPLICE_*",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
];

#[cfg(test)]
mod tests;
