//! Why a verb said no: one enum, matched by kind, printed as the reason a person reads.
//!
//! A refusal is never a fault (exit 1, not 2) and travels one way only: as
//! [`Error::Refused`](crate::Error::Refused). Every kind but two writes nothing. The two that do,
//! [`Refusal::FloorRefused`] and [`Refusal::FloorEscalated`], are a `complete` whose check was
//! recorded: they carry that check's output, so a caller can tell "the check was recorded and
//! said no" from "a precondition said no and nothing was written".

use std::path::PathBuf;

use crate::model::check::Checked;

/// A verb's refusal. [`Refusal::kind`] is stable for matching; `Display` is the reason.
#[derive(thiserror::Error, Clone, Debug, PartialEq)]
pub enum Refusal {
    /// The bead is closed.
    #[error("bead {bead} is closed")]
    Closed { bead: String },
    /// The bead is at another step than the caller named.
    #[error("bead {bead} is at step {at}, not {asked}")]
    WrongStep {
        bead: String,
        at: String,
        asked: String,
    },
    /// The bead's `seq` moved: not the `--expect-seq` the caller gave, or changed while its
    /// floors ran.
    #[error("{}", stale(bead, *seq, *expected, *while_checking))]
    StaleSeq {
        bead: String,
        seq: u64,
        expected: u64,
        while_checking: bool,
    },
    /// Another holder has the bead.
    #[error(
        "bead {bead} is claimed by {holder} since {since}; wait for it, or clear it with \
         `splice transition release --bead {bead} --clear --reason R`"
    )]
    ForeignLease {
        bead: String,
        holder: String,
        since: String,
    },
    /// The caller names a holder, but nobody holds the bead any more.
    #[error("bead {bead} is not claimed by {holder} (its claim was released or cleared)")]
    ClaimLost { bead: String, holder: String },
    /// `record-exit` by a holder that does not hold the bead.
    #[error("bead {bead} is not claimed by {holder}")]
    NotClaimedBy { bead: String, holder: String },
    /// `release` by a holder other than the one holding the bead.
    #[error("bead {bead} is claimed by {holder}, not {asker}")]
    HeldByOther {
        bead: String,
        holder: String,
        asker: String,
    },
    /// `record-exit` with no dispatch by that holder to record.
    #[error("bead {bead} has no dispatch by {holder} to record an exit for")]
    NoDispatch { bead: String, holder: String },
    /// A person's verb called by someone else: a dispatched session (recognized by descent from
    /// a live runner or by its environment), or the runner.
    #[error("`{verb}` is a person's verb; a dispatched session cannot run it")]
    NotAPerson { verb: String },
    /// The runner's verb called from a dispatched session.
    #[error("`{verb}` is the runner's or a person's verb; a dispatched session cannot run it")]
    NotForAgents { verb: String },
    /// An agent's verb from a dispatched session that presented no credential.
    #[error(
        "`{verb}`: this dispatched session has no credential (SPLICE_CREDENTIAL), so it can \
         only read"
    )]
    NoCredential { verb: String },
    /// An agent's verb on a bead its dispatch's credential does not hold.
    #[error(
        "`{verb}` on bead {bead}: this dispatched session's credential does not hold its claim; \
         a dispatch acts only on its own bead, while its claim lasts"
    )]
    NotYourBead { verb: String, bead: String },
    /// `record-job` or `adopt-job` on a claim that is not the job's (issue 17): another holder's,
    /// another job's, or a job whose name is not this claim's dispatch.
    #[error("bead {bead}: {why}")]
    NotTheJob { bead: String, why: String },
    /// `approve` with no gate pending on the step.
    #[error(
        "no gate is pending on {step} of bead {bead}; a gate is pending only after \
         `complete` passed its floors"
    )]
    NothingPending { bead: String, step: String },
    /// `approve` or `reject` without `--step` on a bead no gate is pending on.
    #[error(
        "no gate is pending on bead {bead} (at step {at}), so there is none to choose; name the \
         step with --step ({at}), or see `splice status`"
    )]
    NoGatePending { bead: String, at: String },
    /// `park` on a parked bead.
    #[error("bead {bead} is already parked: {reason}")]
    AlreadyParked { bead: String, reason: String },
    /// `unpark` on a bead that is not parked.
    #[error("bead {bead} is not parked")]
    NotParked { bead: String },
    /// A dispatch claim on a parked bead.
    #[error("bead {bead} is parked ({reason}); unpark it first")]
    Parked { bead: String, reason: String },
    /// A dispatch claim with every attempt on the step spent.
    #[error("bead {bead}: attempts on {step} exhausted ({spent} of {max})")]
    AttemptsExhausted {
        bead: String,
        step: String,
        spent: u32,
        max: u32,
    },
    /// `split` on a leaf.
    #[error(
        "bead {bead} is a leaf; only a root or compound node splits (a spec with \
         `verdict: compound` makes a leaf compound)"
    )]
    LeafSplit { bead: String },
    /// `split` on a node at a step that does not split.
    #[error("{}", not_a_split_step(bead, step, split_step.as_deref()))]
    NotASplitStep {
        bead: String,
        step: String,
        /// The manifest's step with role `split`, if it has one.
        split_step: Option<String>,
    },
    /// `split` on a node that split already.
    #[error(
        "bead {bead} was already split into {joined} (at seq {seq}); a node splits once",
        joined = children.join(", ")
    )]
    AlreadySplit {
        bead: String,
        children: Vec<String>,
        seq: u64,
    },
    /// `resplit` on a node that has not split.
    #[error(
        "bead {bead} has not split: `splice transition split` makes its first split; `resplit` \
         only redoes one"
    )]
    NotSplit { bead: String },
    /// `close` or `cancel` of a bead whose children are open, without `--recursive`.
    #[error(
        "bead {bead} has open children: {joined}; `splice {verb} {bead} --recursive --reason R` \
         {verb}s them too, or close or cancel them first",
        joined = children.join(", ")
    )]
    OpenChildren {
        bead: String,
        verb: String,
        children: Vec<String>,
    },
    /// `close`/`cancel` raced a split: a child appeared after the descendants were read.
    #[error("bead {bead} was split meanwhile (into {child}, among others); run the command again")]
    SplitMeanwhile { bead: String, child: String },
    /// A split's child id is taken.
    #[error("bead {child} already exists")]
    ChildExists { child: String },
    /// `set-config --test-paths` names no directory.
    #[error(
        "--test-paths {path:?} names no existing directory under {}",
        repo.display()
    )]
    NoSuchDirectory { path: String, repo: PathBuf },
    /// `set-target main` on a node at deep autonomy (supplied by a node, `config` or `default`).
    #[error(
        "bead {bead} runs at deep autonomy (from {supplied_by}); deep work lands on a campaign \
         branch, never on {target}"
    )]
    DeepOnMainline {
        bead: String,
        supplied_by: String,
        target: String,
    },
    /// `init`/`init-task` where there is no git repository to branch from.
    #[error(
        "{} is not in a git repository: splice's agents work in git worktrees branched from a \
         delivery target; run `git init` and commit something (`git commit --allow-empty -m \
         start`), then try again",
        dir.display()
    )]
    NoRepository { dir: PathBuf },
    /// `init`/`init-task` in a repository with no commit to branch from.
    #[error(
        "the git repository at {} has no commits yet: agents branch their worktrees from a \
         commit on the delivery target; commit something first (`git commit --allow-empty -m \
         start`)",
        repo.display()
    )]
    NoCommits { repo: PathBuf },
    /// `init`/`init-task` with nothing naming a target and HEAD detached.
    #[error(
        "no delivery target: HEAD in {} is detached and neither --target nor `[delivery] \
         target` names a branch; pass --target BRANCH",
        repo.display()
    )]
    NoTarget { repo: PathBuf },
    /// A delivery target (`--target`, `[delivery] target`, `set-target`) that names no commit.
    #[error(
        "delivery target `{target}` does not exist in {}: create it (`git branch {target}`), or \
         name an existing branch",
        repo.display()
    )]
    NoSuchTarget { target: String, repo: PathBuf },
    /// `route --to` a route the manifest does not declare.
    #[error("unknown route {route:?} (the manifest has: {known})", known = known.join(", "))]
    UnknownRoute { route: String, known: Vec<String> },
    /// `route --at` a step that is not on the route.
    #[error("step {step:?} is not on route {route}")]
    StepNotOnRoute { step: String, route: String },
    /// `skip` of a step the manifest does not mark `optional: true`.
    #[error(
        "step {step} of bead {bead} is required (not `optional: true` in the manifest): a \
         required step is never skipped"
    )]
    RequiredStep { bead: String, step: String },
    /// `skip` while a gate is pending on the step: a person settles it first.
    #[error(
        "a gate is pending on step {step} of bead {bead}: approve or reject it (`splice \
         transition approve|reject`) instead of skipping the step"
    )]
    GatePending { bead: String, step: String },
    /// `complete`'s floors refused; the check is recorded.
    #[error("{}", .0.reason)]
    FloorRefused(Box<Checked>),
    /// `complete`'s floors could not check; the check is recorded.
    #[error("{}", .0.reason)]
    FloorEscalated(Box<Checked>),
    /// A loop verb on a step that is not a loop step.
    #[error("bead {bead} is at {step}, which is not a loop step (no `loop` in the manifest)")]
    NotALoop { bead: String, step: String },
    /// A loop verb about an iteration that is not the node's latest, or whose decision was
    /// already carried out.
    #[error("bead {bead}: {why}")]
    StaleIteration { bead: String, why: String },
    /// `guide` on a node the monitor is not asking about.
    #[error("bead {bead}: the pass monitor is not asking about it ({why}); nothing to guide")]
    NotAsking { bead: String, why: String },
    /// `import --strict` of a file with problems: nothing was imported.
    #[error(
        "{count} record(s) of {file} cannot be imported and --strict was given, so nothing was \
         imported:\n{listed}"
    )]
    ImportRefused {
        file: String,
        count: usize,
        listed: String,
    },
    /// `start` on a bead that is already a pipeline node.
    #[error(
        "bead {bead} is already on route {route} (at {step}); `splice start` puts a plain bead \
         (imported, or made by `splice create`) on a route"
    )]
    AlreadyStarted {
        bead: String,
        route: String,
        step: String,
    },
    /// `create --parent` a pipeline node: its children come from its split.
    #[error(
        "bead {parent} is a pipeline node (at step {step}): a node's children come from its \
         split, not from `splice create`; give a plain bead as --parent, or none"
    )]
    ParentIsNode { parent: String, step: String },
    /// A writing verb from a dispatch running as a cluster job (issue 17): the job records its
    /// verbs in its proposal file and never takes `.splice/`'s lock, which may not be shared
    /// across hosts. `proposals`: the caller has `SPLICE_PROPOSALS` set (and asked for a verb
    /// that is not recorded); else its bead's claim names a job.
    #[error("{}", cluster_dispatch(bead, *proposals))]
    ClusterDispatch { bead: String, proposals: bool },
    /// A writing verb from inside a splice sandbox (issue 31): the kernel keeps `.splice/`
    /// read-only there. `path`: the file it would not let the process open for writing.
    #[error("{}", sandboxed(path))]
    Sandboxed { path: String },
    /// `plan approve` (or `exec --plan`) with a critic configured, on a plan the critic has not
    /// judged in its current form (its bytes' sha256).
    #[error(
        "the critic ([plan] critic) has not judged {file} in its current form (sha256 \
         {sha256}); run `splice plan critique {file}` first"
    )]
    PlanUnjudged { file: String, sha256: String },
    /// `plan approve` on a plan whose verdict holds must-fix findings, without an override.
    #[error(
        "the critic's verdict on {file} holds {count} must-fix finding(s): {listed}; fix the \
         plan and run `splice plan critique {file}`, or approve it over them with \
         --override-critic REASON"
    )]
    PlanMustFix {
        file: String,
        count: usize,
        listed: String,
    },
    /// A turn or a command on a design session that has ended (approved or aborted).
    #[error(
        "design session {session} is {status}: it takes no more turns or commands; start another"
    )]
    DesignEnded { session: String, status: String },
    /// `update --status` or `reopen` on a pipeline node: its status follows its route.
    #[error(
        "bead {bead} is a pipeline node (at step {step}): its status follows its route; \
         `splice close` or `splice cancel` ends it, and a node is not reopened"
    )]
    NodeStatus { bead: String, step: String },
    /// `reopen` of a bead that is not closed.
    #[error("bead {bead} is not closed (its status is {status}): there is nothing to reopen")]
    NotClosed { bead: String, status: String },
    /// `dep add` of a `blocks` dependency that would close a cycle (bd refuses it too).
    #[error(
        "{bead} cannot depend on {on} (blocks): {on} already waits on {bead} through \
         {path}, so each would wait for the other for ever"
    )]
    DependencyCycle {
        bead: String,
        on: String,
        path: String,
    },
    /// `start` without `--campaign` on a bead that has children: it would become a leaf task
    /// and its children be left out of its run.
    #[error(
        "bead {bead} has {count} child(ren) ({listed}): started as a task it would be one leaf \
         and its children left out; start it as what it is with `splice start {bead} \
         --campaign`"
    )]
    HasChildren {
        bead: String,
        count: usize,
        listed: String,
    },
}

impl Refusal {
    /// A stable kebab-case name for the kind of refusal.
    pub fn kind(&self) -> &'static str {
        match self {
            Refusal::Closed { .. } => "closed",
            Refusal::WrongStep { .. } => "wrong-step",
            Refusal::StaleSeq { .. } => "stale-seq",
            Refusal::ForeignLease { .. } => "foreign-lease",
            Refusal::ClaimLost { .. } => "claim-lost",
            Refusal::NotClaimedBy { .. } => "not-claimed-by-you",
            Refusal::HeldByOther { .. } => "held-by-other",
            Refusal::NoDispatch { .. } => "no-dispatch",
            Refusal::NotAPerson { .. } => "not-a-person",
            Refusal::NotForAgents { .. } => "not-for-agents",
            Refusal::NoCredential { .. } => "no-credential",
            Refusal::NotYourBead { .. } => "not-your-bead",
            Refusal::NotTheJob { .. } => "not-the-job",
            Refusal::NothingPending { .. } | Refusal::NoGatePending { .. } => "nothing-pending",
            Refusal::AlreadyParked { .. } => "already-parked",
            Refusal::NotParked { .. } => "not-parked",
            Refusal::Parked { .. } => "parked",
            Refusal::AttemptsExhausted { .. } => "attempts-exhausted",
            Refusal::LeafSplit { .. } => "leaf-split",
            Refusal::NotASplitStep { .. } => "not-a-split-step",
            Refusal::AlreadySplit { .. } => "already-split",
            Refusal::NotSplit { .. } => "not-split",
            Refusal::OpenChildren { .. } => "open-children",
            Refusal::SplitMeanwhile { .. } => "split-meanwhile",
            Refusal::ChildExists { .. } => "child-exists",
            Refusal::NoSuchDirectory { .. } => "no-such-directory",
            Refusal::DeepOnMainline { .. } => "deep-on-mainline",
            Refusal::NoRepository { .. } => "no-repository",
            Refusal::NoCommits { .. } => "no-commits",
            Refusal::NoTarget { .. } => "no-target",
            Refusal::NoSuchTarget { .. } => "no-such-target",
            Refusal::UnknownRoute { .. } => "unknown-route",
            Refusal::StepNotOnRoute { .. } => "step-not-on-route",
            Refusal::RequiredStep { .. } => "required-step",
            Refusal::GatePending { .. } => "gate-pending",
            Refusal::FloorRefused(_) => "floor-refused",
            Refusal::FloorEscalated(_) => "floor-escalated",
            Refusal::NotALoop { .. } => "not-a-loop",
            Refusal::StaleIteration { .. } => "stale-iteration",
            Refusal::NotAsking { .. } => "not-asking",
            Refusal::ImportRefused { .. } => "import-refused",
            Refusal::AlreadyStarted { .. } => "already-started",
            Refusal::ParentIsNode { .. } => "parent-is-node",
            Refusal::ClusterDispatch { .. } => "cluster-dispatch",
            Refusal::Sandboxed { .. } => "sandboxed",
            Refusal::PlanUnjudged { .. } => "plan-unjudged",
            Refusal::PlanMustFix { .. } => "plan-must-fix",
            Refusal::DesignEnded { .. } => "design-ended",
            Refusal::NodeStatus { .. } => "node-status",
            Refusal::NotClosed { .. } => "not-closed",
            Refusal::DependencyCycle { .. } => "dependency-cycle",
            Refusal::HasChildren { .. } => "has-children",
        }
    }

    /// The word a person reads before the reason: `escalated` when a floor could not check,
    /// else `refused`.
    pub fn headline(&self) -> &'static str {
        match self {
            Refusal::FloorEscalated(_) => "escalated",
            _ => "refused",
        }
    }

    /// The recorded check, when the refusal is a `complete` whose floors said no.
    pub fn checked(&self) -> Option<&Checked> {
        match self {
            Refusal::FloorRefused(c) | Refusal::FloorEscalated(c) => Some(c),
            _ => None,
        }
    }

    /// Did this refusal write something (a recorded check)?
    pub fn recorded(&self) -> bool {
        self.checked().is_some()
    }
}

/// Why a node at `step` may not split, and where it may.
fn not_a_split_step(bead: &str, step: &str, split_step: Option<&str>) -> String {
    match split_step {
        Some(at) => {
            format!("bead {bead} is at {step}, which does not split; a node splits at {at}")
        }
        None => format!(
            "bead {bead} is at {step}, and the manifest has no step that splits; give the \
             splitting step `\"role\": \"split\"`"
        ),
    }
}

/// The reason a stale `seq` gives: a compare-and-swap that failed, or floors that raced a change.
fn stale(bead: &str, seq: u64, expected: u64, while_checking: bool) -> String {
    if while_checking {
        format!(
            "bead {bead} changed while its floors ran (seq {expected} → {seq}); run the check again"
        )
    } else {
        format!("bead {bead} changed: its seq is {seq}, expected {expected}")
    }
}

/// Why a sandboxed process may not run a writing verb.
fn sandboxed(path: &str) -> String {
    format!(
        "cannot run here: this process is inside a splice sandbox (a dispatched agent's \
         session), where the kernel keeps .splice/ read-only (it refused to open {path} for \
         writing). Person and runner verbs cannot run inside a sandbox, whatever the process tree \
         or the environment says; an agent ends its step with `splice transition propose` (or \
         `split`, `resplit`), which reaches its runner through the dispatch's inbox \
         (SPLICE_INBOX, docs/agents.md)"
    )
}

/// Why a cluster dispatch may not run a verb here: it records propose/split/resplit in its
/// proposal file, and the runner does the rest.
fn cluster_dispatch(bead: &str, proposals: bool) -> String {
    if proposals {
        format!(
            "bead {bead}: in a cluster dispatch (SPLICE_PROPOSALS is set) only propose, split and \
             resplit are recorded, in the proposal file; the runner does the rest"
        )
    } else {
        format!(
            "bead {bead} is in a cluster dispatch: its agent records its verbs in its proposal \
             file (SPLICE_PROPOSALS), and the runner applies them when the job ends; a job never \
             takes .splice/'s lock"
        )
    }
}
