//! `splice doctor`: read-only checks of a splice repository, each finding with a severity and
//! what fixes it (issue 15, §5; `docs/cli.md`, "`splice doctor`").
//!
//! Doctor never takes the lock, never recovers and never writes: it reads the state directory,
//! the repository and the hooks, and runs the agent's `--version` (and, for a Slurm executor,
//! Slurm's client commands). Every check reuses the code
//! the rest of splice decides with — the runner's target and command checks, its holder test,
//! `decide`'s cleanup, the hooks' status, the store's journal — so doctor cannot disagree with
//! what a run would do.
//!
//! The checks are one list, [`CHECKS`], run in order; a new check is a function from the
//! [`Ctx`] to its findings and a line in the list.
//!
//! | module | checks |
//! |---|---|
//! | [`repo`] | `repository` (a git work tree whose HEAD resolves), `targets` (the configured and the open nodes' targets name commits) |
//! | [`agent`] | `agent` (the agent command on `PATH`, its `--version`, every other command a step runs) |
//! | [`state`] | `config`, `manifest` (they load), `claims` (none held by a dead runner), `worktrees` (each owned by an open node) |
//! | [`journal`] | `journal` (the live segment's size), `recovery` (an uncommitted or torn last line) |
//! | [`hooks`] | `hooks` (Claude Code's guard and git's pre-commit hook installed) |
//! | [`slurm`] | `slurm` (with `[executor] kind = "slurm"`: `sbatch`, `squeue` and `sacct` answer) |
//! | [`sandbox`] | `sandbox` (the kernel sandbox agents run in: Landlock ABI, seccomp, `[sandbox]`) |

pub mod agent;
pub mod hooks;
pub mod journal;
pub mod repo;
pub mod sandbox;
pub mod slurm;
pub mod state;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::driver::snapshot::{self, Identity};
use crate::error::{Error, Result};
use crate::model::{Config, Manifest, Snapshot};
use crate::store::Store;

/// How much a finding matters.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// Nothing to do.
    Ok,
    /// Worth fixing; splice works meanwhile.
    Warn,
    /// splice cannot go on (or would lose work) until a person acts.
    NeedsPerson,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Warn => "warn",
            Severity::NeedsPerson => "needs-person",
        }
    }
}

/// One thing a check found.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The check's name ([`Check::name`]).
    pub check: &'static str,
    pub severity: Severity,
    /// What was found, in words.
    pub message: String,
    /// What fixes it: a command to run, or what to edit. `None` for `ok`, and for a warning
    /// that splice settles by itself.
    pub fix: Option<String>,
}

impl Finding {
    pub fn ok(check: &'static str, message: impl Into<String>) -> Finding {
        Finding {
            check,
            severity: Severity::Ok,
            message: message.into(),
            fix: None,
        }
    }

    pub fn warn(check: &'static str, message: impl Into<String>, fix: Option<String>) -> Finding {
        Finding {
            check,
            severity: Severity::Warn,
            message: message.into(),
            fix,
        }
    }

    pub fn needs_person(
        check: &'static str,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding {
            check,
            severity: Severity::NeedsPerson,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }

    /// A check that could not look, because what it reads did not load (another finding says
    /// why).
    pub fn not_checked(check: &'static str, why: impl std::fmt::Display) -> Finding {
        Finding::warn(check, format!("not checked: {why}"), None)
    }
}

/// What the checks read, loaded once.
pub struct Ctx {
    pub store: Store,
    pub config: Result<Config>,
    pub manifest: Result<Manifest>,
    /// Every bead, as a run's first pass would read them.
    pub snapshot: Result<Snapshot>,
}

impl Ctx {
    /// Read the state of `store` (nothing is written, no lock is taken).
    pub fn load(store: Store) -> Ctx {
        let config = store.config();
        let manifest = store.manifest();
        let snapshot = snapshot::build(&store, None, Identity::default());
        Ctx {
            store,
            config,
            manifest,
            snapshot,
        }
    }
}

impl Ctx {
    /// The snapshot, or the finding of `check` that could not look without it (saying which
    /// file did not load when another check reports it).
    pub fn snapshot_for(&self, check: &'static str) -> std::result::Result<&Snapshot, Finding> {
        match (&self.snapshot, &self.config, &self.manifest) {
            (Ok(s), _, _) => Ok(s),
            (Err(_), Err(_), _) => Err(Finding::not_checked(check, "config.toml does not load")),
            (Err(_), _, Err(_)) => Err(Finding::not_checked(check, "the manifest does not load")),
            (Err(e), _, _) => Err(Finding::warn(
                check,
                format!("not checked: the state could not be read: {e}"),
                None,
            )),
        }
    }
}

/// One check: its name (the `check` of its findings) and the function that runs it.
pub struct Check {
    pub name: &'static str,
    pub run: fn(&Ctx) -> Vec<Finding>,
}

/// Every check, in the order they run and print.
pub const CHECKS: &[Check] = &[
    Check {
        name: repo::REPOSITORY,
        run: repo::repository,
    },
    Check {
        name: state::CONFIG,
        run: state::config,
    },
    Check {
        name: state::MANIFEST,
        run: state::manifest,
    },
    Check {
        name: repo::TARGETS,
        run: repo::targets,
    },
    Check {
        name: agent::AGENT,
        run: agent::agent,
    },
    Check {
        name: state::BEADS,
        run: state::beads,
    },
    Check {
        name: state::CLAIMS,
        run: state::claims,
    },
    Check {
        name: state::WORKTREES,
        run: state::worktrees,
    },
    Check {
        name: journal::JOURNAL,
        run: journal::journal,
    },
    Check {
        name: journal::RECOVERY,
        run: journal::recovery,
    },
    Check {
        name: hooks::HOOKS,
        run: hooks::hooks,
    },
    Check {
        name: slurm::SLURM,
        run: slurm::slurm,
    },
    Check {
        name: sandbox::SANDBOX,
        run: sandbox::sandbox,
    },
];

/// The check reported when there is no splice state to check.
pub const STATE: &str = "state";

/// What doctor found.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The state directory checked, when there is one.
    pub state_dir: Option<PathBuf>,
    /// Some finding needs a person (the exit code is 1).
    pub needs_person: bool,
    pub findings: Vec<Finding>,
}

/// Run every check on the state directory `dir` would open (`--dir`, `SPLICE_DIR`, else the
/// nearest `.splice/`). Outside a splice repository that is the one finding.
pub fn run(dir: Option<&Path>) -> Report {
    let store = match Store::discover(dir) {
        Ok(store) => store,
        Err(e) => {
            // Where `splice init` would create the state: is that a repository it can use?
            let mut findings = vec![no_state(&e)];
            if let Ok(planned) = Store::open_or_plan(dir) {
                findings.extend(repo::repository(&Ctx::load(planned)));
            }
            return report(None, findings);
        }
    };
    let cx = Ctx::load(store);
    let findings = CHECKS.iter().flat_map(|c| (c.run)(&cx)).collect();
    report(Some(cx.store.dir().to_path_buf()), findings)
}

fn report(state_dir: Option<PathBuf>, findings: Vec<Finding>) -> Report {
    Report {
        state_dir,
        needs_person: findings.iter().any(|f| f.severity == Severity::NeedsPerson),
        findings,
    }
}

fn no_state(e: &Error) -> Finding {
    Finding::needs_person(
        STATE,
        format!("not a splice repository: {e}"),
        "splice init --title \"TITLE\" (a campaign) or splice init-task --title \"TITLE\" (a \
         lone task), in the git repository's root",
    )
}

/// `path` relative to the repository root when it is inside it, for commands a person types
/// there.
pub fn shown(cx: &Ctx, path: &Path) -> String {
    path.strip_prefix(cx.store.repo())
        .unwrap_or(path)
        .display()
        .to_string()
}
