//! The snapshot: everything one pass of `decide` may look at, read once (DESIGN §5 step 1).
//!
//! It carries the manifest, every bead in scope, the bead files that could not be read (and why),
//! which nodes have a worktree, the time, this runner's holder identity and run id, the limits and
//! the counters used so far. `decide` reads nothing else, so a snapshot saved to a file replays to
//! the same decision, byte for byte.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::bead::{Bead, DeliveryMethod};
use super::manifest::{Autonomy, Manifest};

/// The snapshot format version.
pub const SNAPSHOT_VERSION: u32 = 1;

/// Caps on one run; unset caps never stop it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most passes the run takes.
    #[serde(default)]
    pub max_passes: Option<u64>,
    /// The most tokens the run spends.
    #[serde(default)]
    pub token_budget: Option<u64>,
    /// The most seconds the run takes.
    #[serde(default)]
    pub wall_time_s: Option<u64>,
    /// Dispatches running at once, in-flight ones included.
    #[serde(default = "one_job")]
    pub jobs: u32,
    /// Seconds to wait after a dispatch that used an attempt before the step's next attempt,
    /// doubling with each attempt ([`backoff_s`](crate::decide::backoff_s)); 0: no wait. A
    /// snapshot without it waits none; a run fills in `[limits] backoff_s`, else
    /// [`DEFAULT_BACKOFF_S`].
    #[serde(default)]
    pub backoff_s: u64,
    /// A run's `--max-turns`: a loop step's iteration limit in place of its `max_iterations`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// No person answers during this run (`splice exec`): a loop node the pass monitor would
    /// ask about is parked instead of resting `awaiting-human`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_person: bool,
}

/// The wait before a retry when no `[limits] backoff_s` is set: seconds, so an agent that fails
/// at once (a rate limit, an outage) is not tried again at once.
pub const DEFAULT_BACKOFF_S: u64 = 10;

fn one_job() -> u32 {
    1
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_passes: None,
            token_budget: None,
            wall_time_s: None,
            jobs: 1,
            backoff_s: 0,
            max_turns: None,
            no_person: false,
        }
    }
}

/// What the run has used so far (all zero outside a run).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Counters {
    /// Passes taken.
    #[serde(default)]
    pub passes: u64,
    /// Tokens spent.
    #[serde(default)]
    pub tokens: u64,
    /// Seconds since the run started.
    #[serde(default)]
    pub wall_s: u64,
    /// Passes in a row, ending with the last one, whose actions all came to nothing (each was
    /// refused or skipped) while no dispatch was in flight.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub idle_passes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How a claim's holder, a runner of this host, was found dead.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Died {
    /// The runner's pid, as its holder names it.
    pub pid: i32,
    /// What shows it is dead.
    pub cause: DeathCause,
}

/// What shows that a runner is dead.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum DeathCause {
    /// No process has its pid.
    Gone,
    /// Its pid names a process that started at another time than the runner (its record under
    /// `.splice/runs/runners/` says when the runner started, in this boot).
    Reused,
}

impl Died {
    /// `pid 41 gone`, `pid 41 now another process`.
    pub fn text(&self) -> String {
        match self.cause {
            DeathCause::Gone => format!("pid {} gone", self.pid),
            DeathCause::Reused => format!("pid {} now another process", self.pid),
        }
    }
}

/// One read of the state, the whole input of `decide`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// The snapshot format ([`SNAPSHOT_VERSION`]).
    #[serde(default = "version")]
    pub version: u32,
    /// RFC 3339 UTC.
    pub now: String,
    /// This runner's holder identity: leases it holds are its own dispatches in flight.
    pub holder: String,
    /// This run's id: a check recorded by another run is re-made (`decide`'s rule 24).
    pub run: String,
    /// The scope root, when the snapshot covers one bead's tree.
    #[serde(default)]
    pub scope: Option<String>,
    /// The run's caps.
    #[serde(default)]
    pub limits: Limits,
    /// What the run has used so far.
    #[serde(default)]
    pub counters: Counters,
    /// `[autonomy] default` from the config.
    #[serde(default)]
    pub autonomy_default: Option<Autonomy>,
    /// `[delivery] target` from the config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_target: Option<String>,
    /// `[delivery] method` from the config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_method: Option<DeliveryMethod>,
    /// The branch checked out in the repository when the snapshot was read: a node's target
    /// when neither it, an ancestor nor the config names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// In a scoped snapshot, the scope root's ancestors, nearest first: read only for what the
    /// scope inherits from them (autonomy, target, delivery), never decided on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ancestors: Vec<Bead>,
    /// Ids of the nodes with a checkout under `.splice/worktrees/` (a worktree `<id>`, or a
    /// target checkout `<id>@target`), sorted.
    #[serde(default)]
    pub worktrees: Vec<String>,
    /// The delivery targets this snapshot's nodes may use (their own, their ancestors', the
    /// config's, the branch checked out) that name no commit in the repository, sorted: a node
    /// about to dispatch to one rests `escalated` (`decide`'s rule 28).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_targets: Vec<String>,
    /// The `optional: true` steps whose command the run cannot find, with why (the program and
    /// where it is set): a node that would dispatch one is moved past it instead (action
    /// `skip`, `decide`'s rule 25). A snapshot without it has none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unavailable: BTreeMap<String, String>,
    /// The holders of claims in this snapshot that were found dead when it was read: runners of
    /// this host whose process is gone, or whose pid now names another process
    /// (`driver::holder::judge`). `decide` says so in the node's `running` rest; a snapshot
    /// without it knows of none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dead_holders: BTreeMap<String, Died>,
    /// The `external:<project>:<capability>` dependencies of this snapshot's beads that are
    /// done, as bd decides it: the project (`[bd] external_projects`) has a closed issue
    /// labelled `provides:<capability>`. One not here blocks as a missing bead does. A snapshot
    /// without it has none.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub shipped: BTreeSet<String>,
    /// Typed and validated as `.splice/manifest.json` is (an older shape is brought up to date).
    #[serde(deserialize_with = "super::manifest::deserialize_checked")]
    pub manifest: Manifest,
    /// Every bead in scope, plain ones included.
    pub beads: Vec<Bead>,
    /// Bead files in scope that could not be read, by id: `decide` rests each `escalated` with
    /// its error, and the nodes below it too (their lineage cannot be known).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<Unreadable>,
}

/// A bead file that could not be read (not JSON, not a bead, a link, another id than its name…).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    /// The file's name without `.json`: the id the bead would have.
    pub id: String,
    /// The file, relative to the repository root (`.splice/beads/<id>.json`).
    pub file: String,
    /// Why it could not be read.
    pub error: String,
}

impl Unreadable {
    /// The reason its node rests: the file (escaped: its name may hold anything), the error,
    /// and what to do.
    pub fn reason(&self) -> String {
        format!(
            "{} could not be read: {}; repair the file or restore it from git (until then, \
             writes to it fail)",
            super::printable::printable(&self.file),
            self.error
        )
    }
}

fn version() -> u32 {
    SNAPSHOT_VERSION
}

impl Snapshot {
    /// `beads` under `manifest` at `now`, for `holder` in `run`, with nothing else set.
    pub fn new(
        manifest: Manifest,
        beads: Vec<Bead>,
        now: &str,
        holder: &str,
        run: &str,
    ) -> Snapshot {
        Snapshot {
            version: SNAPSHOT_VERSION,
            now: now.to_string(),
            holder: holder.to_string(),
            run: run.to_string(),
            scope: None,
            limits: Limits::default(),
            counters: Counters::default(),
            autonomy_default: None,
            delivery_target: None,
            delivery_method: None,
            branch: None,
            ancestors: Vec::new(),
            worktrees: Vec::new(),
            missing_targets: Vec::new(),
            unavailable: BTreeMap::new(),
            dead_holders: BTreeMap::new(),
            shipped: BTreeSet::new(),
            manifest,
            beads,
            unreadable: Vec::new(),
        }
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_pretty_json(&self) -> String {
        let mut out = serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".into());
        out.push('\n');
        out
    }
}
