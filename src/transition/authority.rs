//! The authority rule (issue 9), written once: who may run which verb. `docs/security.md` says
//! the same in prose; every feature that runs agents (the runner today; hooks and a cluster
//! executor later) uses this rule and adds none of its own.
//!
//! **The caller** ([`Who`]) is recognized, never taken from its word:
//!
//! - the runner's own calls are in-process ([`Who::Runner`]); no command-line caller is ever the
//!   runner;
//! - a command-line caller is *dispatched* when it descends from a live runner of this state
//!   directory, or when its environment says so ([`crate::authority`]); the environment can only
//!   narrow authority, never widen it;
//! - any other caller is a person ([`Who::Person`]).
//!
//! **The verb's actor class** ([`Actor`], one `match` in [`Verb::actor`]):
//!
//! | class | who may run it |
//! |---|---|
//! | `person` | a person only |
//! | `runner` | the runner, or a person; never a dispatched session |
//! | `agent` | a dispatched session on its own bead (its credential's hash is on the bead's claim), the runner, or a person |
//! | `read-only` | anyone, a dispatched session without a credential too |
//!
//! A dispatched session without a valid credential can do nothing but read. The holder an agent
//! acts as is its claim's holder; a `--holder` or `SPLICE_HOLDER` it passes can only narrow
//! that (a different one is refused).

use serde::Serialize;

use super::Refusal;
use crate::authority::{self, Dispatched};
use crate::model::{Bead, Role};

/// Who may run a verb.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Actor {
    Person,
    Runner,
    Agent,
    ReadOnly,
}

impl Actor {
    pub fn name(self) -> &'static str {
        match self {
            Actor::Person => "person",
            Actor::Runner => "runner",
            Actor::Agent => "agent",
            Actor::ReadOnly => "read-only",
        }
    }
}

/// Every verb: each `splice transition` subcommand, the modes of one that have a class of their
/// own (`release --clear`, `pass --dry-run`), the commands that create beads or drive a
/// runner, and those that install or read the hooks watching agents (`hooks …`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verb {
    Propose,
    Split,
    Resplit,
    Complete,
    Integrate,
    Deliver,
    Claim,
    Release,
    Park,
    Skip,
    RecordExit,
    RecordJob,
    AdoptJob,
    RecordRun,
    Route,
    Approve,
    Reject,
    Unpark,
    SetConfig,
    SetAutonomy,
    SetTarget,
    ReleaseClear,
    Close,
    Cancel,
    Init,
    InitTask,
    Run,
    Pass,
    PassDryRun,
    Show,
    Step,
    Kind,
    Autonomy,
    Target,
    Delivery,
    Manifest,
    HooksInstall,
    HooksStatus,
    HooksPreCommit,
    Guard,
    /// `splice sandbox exec`: run a command inside the kernel sandbox (a Slurm job's agent).
    SandboxExec,
    Classify,
    Exec,
    PlanCrystallize,
    PlanCritique,
    PlanApprove,
    Design,
    DesignShow,
    Monitor,
    Iterate,
    LoopEffect,
    Guide,
    SetAcceptance,
    Drive,
    ImportBd,
    ExportBd,
    Start,
    Completions,
    Man,
    Doctor,
    Create,
    List,
    Ready,
    Logs,
    CacheRebuild,
    Update,
    Reopen,
    LabelAdd,
    LabelRemove,
    LabelList,
    DepAdd,
    DepRemove,
    DepTree,
    SyncBd,
}

impl Verb {
    /// Every verb, in the table's order.
    pub const ALL: &[Verb] = &[
        Verb::Propose,
        Verb::Split,
        Verb::Resplit,
        Verb::Complete,
        Verb::Integrate,
        Verb::Deliver,
        Verb::Claim,
        Verb::Release,
        Verb::Park,
        Verb::Skip,
        Verb::RecordExit,
        Verb::RecordJob,
        Verb::AdoptJob,
        Verb::RecordRun,
        Verb::Route,
        Verb::Approve,
        Verb::Reject,
        Verb::Unpark,
        Verb::SetConfig,
        Verb::SetAutonomy,
        Verb::SetTarget,
        Verb::ReleaseClear,
        Verb::Close,
        Verb::Cancel,
        Verb::Init,
        Verb::InitTask,
        Verb::Run,
        Verb::Pass,
        Verb::PassDryRun,
        Verb::Show,
        Verb::Step,
        Verb::Kind,
        Verb::Autonomy,
        Verb::Target,
        Verb::Delivery,
        Verb::Manifest,
        Verb::HooksInstall,
        Verb::HooksStatus,
        Verb::HooksPreCommit,
        Verb::Guard,
        Verb::SandboxExec,
        Verb::Classify,
        Verb::Exec,
        Verb::PlanCrystallize,
        Verb::PlanCritique,
        Verb::PlanApprove,
        Verb::Design,
        Verb::DesignShow,
        Verb::Monitor,
        Verb::Iterate,
        Verb::LoopEffect,
        Verb::Guide,
        Verb::SetAcceptance,
        Verb::Drive,
        Verb::ImportBd,
        Verb::ExportBd,
        Verb::Start,
        Verb::Completions,
        Verb::Man,
        Verb::Doctor,
        Verb::Create,
        Verb::List,
        Verb::Ready,
        Verb::Logs,
        Verb::CacheRebuild,
        Verb::Update,
        Verb::Reopen,
        Verb::LabelAdd,
        Verb::LabelRemove,
        Verb::LabelList,
        Verb::DepAdd,
        Verb::DepRemove,
        Verb::DepTree,
        Verb::SyncBd,
    ];

    /// The table: who may run this verb.
    pub const fn actor(self) -> Actor {
        match self {
            Verb::Propose | Verb::Split | Verb::Resplit => Actor::Agent,
            Verb::Complete
            | Verb::Integrate
            | Verb::Deliver
            | Verb::Claim
            | Verb::Release
            | Verb::Park
            | Verb::Skip
            | Verb::RecordExit
            // A claim's Slurm job, and a dead runner's job taken over (issue 17).
            | Verb::RecordJob
            | Verb::AdoptJob
            | Verb::RecordRun
            | Verb::Route
            // A loop step's measured iteration and what was done about the monitor's decision.
            | Verb::Iterate
            | Verb::LoopEffect => Actor::Runner,
            Verb::Approve
            | Verb::Reject
            | Verb::Unpark
            | Verb::SetConfig
            | Verb::SetAutonomy
            | Verb::SetTarget
            | Verb::ReleaseClear
            | Verb::Close
            | Verb::Cancel
            | Verb::Init
            | Verb::InitTask
            | Verb::Run
            | Verb::Pass
            // A dispatched agent must not rewrite the hooks that watch it.
            | Verb::HooksInstall
            // They create and run work; a plan's run approves planning gates that never relax.
            | Verb::Exec
            | Verb::PlanCrystallize
            // Its verdict is what `plan approve` stands on.
            | Verb::PlanCritique
            | Verb::PlanApprove
            // Starts the design agent and crystallizes; its approval is `plan approve`'s.
            | Verb::Design
            // The answer to the pass monitor's question.
            | Verb::Guide
            // What a loop step's acceptance stage checks.
            | Verb::SetAcceptance
            // The cockpit starts runs and approves gates.
            | Verb::Drive
            // Many beads at once, from a file; and a plain bead put on a route.
            | Verb::ImportBd
            | Verb::Start => Actor::Person,
            // A plain bead (no route), as bd's `create` makes one.
            | Verb::Create
            // bd's edits of a bead's own fields (never `pipeline`; a claimed bead is refused).
            | Verb::Update
            | Verb::Reopen
            | Verb::LabelAdd
            | Verb::LabelRemove
            | Verb::DepAdd
            | Verb::DepRemove
            // A bd file and the store kept in step: bd's fields both ways, never `pipeline`.
            | Verb::SyncBd => Actor::Person,
            Verb::PassDryRun
            | Verb::Show
            | Verb::Step
            | Verb::Kind
            | Verb::Autonomy
            | Verb::Target
            | Verb::Delivery
            | Verb::Manifest
            | Verb::HooksStatus
            | Verb::HooksPreCommit
            | Verb::Guard
            | Verb::SandboxExec
            | Verb::Classify
            | Verb::Monitor
            // A design session's conversation, and the list of them.
            | Verb::DesignShow
            | Verb::ExportBd
            // Generated from the command line; they read no state.
            | Verb::Completions
            | Verb::Man
            // Reads the state and the repository; never locks or writes.
            | Verb::Doctor => Actor::ReadOnly,
            // bd's read commands (`show` is the verb above).
            | Verb::List
            | Verb::Ready
            | Verb::Logs
            | Verb::LabelList
            | Verb::DepTree => Actor::ReadOnly,
            // Writes only a derived file, `.splice/cache/`, rebuilt at will from the state.
            Verb::CacheRebuild => Actor::ReadOnly,
        }
    }

    /// The verb as a person types it (`transition` subcommands without the prefix).
    pub fn name(self) -> &'static str {
        match self {
            Verb::Propose => "propose",
            Verb::Split => "split",
            Verb::Resplit => "resplit",
            Verb::Complete => "complete",
            // `integrate` and `deliver` complete the steps with those roles, and are named so.
            Verb::Integrate => Role::Integrate.name(),
            Verb::Deliver => Role::Deliver.name(),
            Verb::Claim => "claim",
            Verb::Release => "release",
            Verb::Park => "park",
            Verb::Skip => "skip",
            Verb::RecordExit => "record-exit",
            Verb::RecordJob => "record-job",
            Verb::AdoptJob => "adopt-job",
            Verb::RecordRun => "record-run",
            Verb::Route => "route",
            Verb::Approve => "approve",
            Verb::Reject => "reject",
            Verb::Unpark => "unpark",
            Verb::SetConfig => "set-config",
            Verb::SetAutonomy => "set-autonomy",
            Verb::SetTarget => "set-target",
            Verb::ReleaseClear => "release --clear",
            Verb::Close => "close",
            Verb::Cancel => "cancel",
            Verb::Init => "init",
            Verb::InitTask => "init-task",
            Verb::Run => "run",
            Verb::Pass => "pass",
            Verb::PassDryRun => "pass --dry-run",
            Verb::Show => "show",
            Verb::Step => "step",
            Verb::Kind => "kind",
            Verb::Autonomy => "autonomy",
            Verb::Target => "target",
            Verb::Delivery => "delivery",
            Verb::Manifest => "manifest",
            Verb::HooksInstall => "hooks install",
            Verb::HooksStatus => "hooks status",
            Verb::HooksPreCommit => "hooks pre-commit",
            // The Claude Code hook: it judges a tool call and changes nothing.
            Verb::Guard => "guard",
            // Confines a command and execs it; it changes no state.
            Verb::SandboxExec => "sandbox exec",
            Verb::Classify => "classify",
            Verb::Exec => "exec",
            Verb::PlanCrystallize => "plan crystallize",
            Verb::PlanCritique => "plan critique",
            Verb::PlanApprove => "plan approve",
            Verb::Design => "design",
            // `design show` and `design list`.
            Verb::DesignShow => "design show",
            // Replays a trajectory file through the pure monitor.
            Verb::Monitor => "monitor",
            Verb::Iterate => "iterate",
            Verb::LoopEffect => "loop-effect",
            Verb::Guide => "guide",
            Verb::SetAcceptance => "set-acceptance",
            Verb::Drive => "drive",
            Verb::ImportBd => "import bd",
            Verb::ExportBd => "export bd",
            Verb::Start => "start",
            Verb::Completions => "completions",
            Verb::Man => "man",
            Verb::Doctor => "doctor",
            Verb::Create => "create",
            Verb::List => "list",
            Verb::Ready => "ready",
            Verb::Logs => "logs",
            Verb::CacheRebuild => "cache rebuild",
            Verb::Update => "update",
            Verb::Reopen => "reopen",
            Verb::LabelAdd => "label add",
            Verb::LabelRemove => "label rm",
            Verb::LabelList => "label list",
            Verb::DepAdd => "dep add",
            Verb::DepRemove => "dep rm",
            Verb::DepTree => "dep tree",
            Verb::SyncBd => "sync bd",
        }
    }

    /// A `splice transition` subcommand (or a top-level command) has a place in the table?
    pub fn named(name: &str) -> Option<Verb> {
        Verb::ALL.iter().copied().find(|v| v.name() == name)
    }
}

/// Who the writer serves, as recognized.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Who {
    /// A person: an in-process caller acting for one (the demo), or a command-line caller that
    /// is not dispatched.
    #[default]
    Person,
    /// The runner's own in-process call.
    Runner,
    /// A dispatched session.
    Dispatched {
        /// The sha256 of the credential it presented.
        credential: Option<String>,
        /// The holder of the live runner it descends from, when descent found it.
        runner_holder: Option<String>,
    },
    /// A line of a cluster dispatch's proposal file, applied by the runner when the job ended
    /// ([`super::proposals`]): admitted as a dispatched session that presented this credential
    /// (its sha256), and held to its claim the same way.
    Proposed {
        /// The sha256 of the credential the line carries.
        credential: String,
    },
}

impl Who {
    /// A command-line caller as [`authority::recognize`] found it.
    pub fn from_recognized(r: &authority::Recognized) -> Who {
        match &r.dispatched {
            None => Who::Person,
            Some(how) => Who::Dispatched {
                credential: r.credential.clone(),
                runner_holder: match how {
                    Dispatched::Descent(runner) => Some(runner.holder.clone()),
                    Dispatched::Environment => None,
                },
            },
        }
    }

    /// This process, calling the writer of the state directory `state_dir` from the command
    /// line.
    pub fn command_line(state_dir: &std::path::Path) -> Who {
        Who::from_recognized(&authority::recognize(state_dir))
    }

    /// A dispatched session, here or (its proposal applied) in a cluster job.
    pub fn is_dispatched(&self) -> bool {
        matches!(self, Who::Dispatched { .. } | Who::Proposed { .. })
    }
}

/// Before anything is read: may `who` run `verb` at all?
pub fn admit(verb: Verb, who: &Who) -> Result<(), Refusal> {
    let standing = match who {
        Who::Person => Standing::Person,
        Who::Runner => Standing::Runner,
        Who::Dispatched { credential, .. } => Standing::Agent {
            credential: credential.is_some(),
        },
        Who::Proposed { .. } => Standing::Agent { credential: true },
    };
    rule(verb, standing)
}

/// [`admit`] for a plan's [`Caller`](super::Caller): a dispatched caller that reached a plan
/// through [`super::Ctx::apply`] had its credential checked against the claim already.
pub fn admit_caller(verb: Verb, dispatched: bool) -> Result<(), Refusal> {
    let standing = match dispatched {
        true => Standing::Agent { credential: true },
        false => Standing::Person,
    };
    rule(verb, standing)
}

/// A caller's standing, as the table reads it.
#[derive(Clone, Copy)]
enum Standing {
    Person,
    Runner,
    Agent { credential: bool },
}

/// The rule: the verb's class against the caller's standing.
fn rule(verb: Verb, standing: Standing) -> Result<(), Refusal> {
    let name = verb.name().to_string();
    match (verb.actor(), standing) {
        (Actor::ReadOnly, _) | (_, Standing::Person) => Ok(()),
        (Actor::Person, _) => Err(Refusal::NotAPerson { verb: name }),
        (_, Standing::Runner) => Ok(()),
        (Actor::Runner, Standing::Agent { .. }) => Err(Refusal::NotForAgents { verb: name }),
        (Actor::Agent, Standing::Agent { credential: true }) => Ok(()),
        (Actor::Agent, Standing::Agent { credential: false }) => {
            Err(Refusal::NoCredential { verb: name })
        }
    }
}

/// Under the lock, on the verb's subject as it is now: a dispatched session acts only on the
/// bead whose claim carries its credential's hash, and never on one whose claim names a cluster
/// job (that job's verbs arrive as proposals, [`Who::Proposed`], which the runner applies).
/// Returns the holder it acts as (its claim's), `None` for everyone else.
pub fn admit_on(verb: Verb, who: &Who, subject: &Bead) -> Result<Option<String>, Refusal> {
    admit(verb, who)?;
    refuse_cluster_dispatch(who, subject)?;
    let hash = match who {
        Who::Dispatched {
            credential: Some(hash),
            ..
        }
        | Who::Proposed { credential: hash } => hash,
        _ => return Ok(None),
    };
    match &subject.pipeline.lease {
        Some(lease) if lease.credential_sha256.as_deref() == Some(hash.as_str()) => {
            Ok(Some(lease.holder.clone()))
        }
        _ => Err(Refusal::NotYourBead {
            verb: verb.name().to_string(),
            bead: subject.id.to_string(),
        }),
    }
}

/// A command-line dispatched session on a bead whose claim names a cluster job is refused: the
/// job records its verbs in its proposal file, so an agent that unset `SPLICE_PROPOSALS` still
/// takes no lock that may not be shared across hosts. The runner, persons and the proposals the
/// runner applies are unaffected.
pub fn refuse_cluster_dispatch(who: &Who, subject: &Bead) -> Result<(), Refusal> {
    let job = subject.pipeline.lease.as_ref().and_then(|l| l.job.as_ref());
    match (who, job) {
        (Who::Dispatched { .. }, Some(_)) => Err(Refusal::ClusterDispatch {
            bead: subject.id.to_string(),
            proposals: false,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::bead::Lease;

    fn agent(credential: Option<&str>) -> Who {
        Who::Dispatched {
            credential: credential.map(str::to_string),
            runner_holder: Some("run:h:1:r".into()),
        }
    }

    fn claimed(hash: Option<&str>) -> Bead {
        let mut b = Bead::new("sp-a".into(), "a".into(), String::new(), "t");
        b.pipeline.lease = Some(Box::new(Lease {
            holder: "run:h:1:r".into(),
            since: "t".into(),
            credential_sha256: hash.map(str::to_string),
            job: None,
        }));
        b
    }

    #[test]
    fn every_class_admits_whom_the_table_says() {
        let kinds = |who: &Who| -> Vec<&'static str> {
            [Verb::Approve, Verb::Claim, Verb::Propose, Verb::Show]
                .iter()
                .map(|v| admit(*v, who).err().map_or("ok", |r| r.kind()))
                .collect()
        };
        assert_eq!(kinds(&Who::Person), ["ok", "ok", "ok", "ok"]);
        assert_eq!(kinds(&Who::Runner), ["not-a-person", "ok", "ok", "ok"]);
        assert_eq!(
            kinds(&agent(Some("h"))),
            ["not-a-person", "not-for-agents", "ok", "ok"]
        );
        assert_eq!(
            kinds(&agent(None)),
            ["not-a-person", "not-for-agents", "no-credential", "ok"]
        );
    }

    #[test]
    fn a_plan_applies_the_same_table_to_its_caller() {
        let kinds = |dispatched: bool| -> Vec<&'static str> {
            [Verb::Unpark, Verb::Route, Verb::Split, Verb::Kind]
                .iter()
                .map(|v| {
                    admit_caller(*v, dispatched)
                        .err()
                        .map_or("ok", |r| r.kind())
                })
                .collect()
        };
        assert_eq!(kinds(false), ["ok", "ok", "ok", "ok"]);
        assert_eq!(kinds(true), ["not-a-person", "not-for-agents", "ok", "ok"]);
    }

    #[test]
    fn an_agent_acts_only_on_the_bead_its_credential_claims() {
        let who = agent(Some("h1"));
        assert_eq!(
            admit_on(Verb::Propose, &who, &claimed(Some("h1"))).unwrap(),
            Some("run:h:1:r".into())
        );
        let unclaimed = Bead::new("sp-b".into(), "b".into(), String::new(), "t");
        for other in [claimed(Some("h2")), claimed(None), unclaimed] {
            let r = admit_on(Verb::Propose, &who, &other).unwrap_err();
            assert_eq!(r.kind(), "not-your-bead");
        }
        assert_eq!(
            admit_on(Verb::Propose, &Who::Person, &claimed(None)),
            Ok(None)
        );
        assert_eq!(
            admit_on(Verb::Claim, &who, &claimed(Some("h1")))
                .unwrap_err()
                .kind(),
            "not-for-agents"
        );
    }

    #[test]
    fn a_cluster_job_s_bead_takes_only_its_proposals() {
        let mut bead = claimed(Some("h1"));
        bead.pipeline.lease.as_mut().unwrap().job = Some("42".into());
        let r = admit_on(Verb::Propose, &agent(Some("h1")), &bead).unwrap_err();
        assert_eq!(r.kind(), "cluster-dispatch");
        let proposed = Who::Proposed {
            credential: "h1".into(),
        };
        assert_eq!(
            admit_on(Verb::Propose, &proposed, &bead),
            Ok(Some("run:h:1:r".into()))
        );
        let forged = Who::Proposed {
            credential: "h2".into(),
        };
        let r = admit_on(Verb::Propose, &forged, &bead).unwrap_err();
        assert_eq!(r.kind(), "not-your-bead");
        assert_eq!(admit_on(Verb::Claim, &Who::Runner, &bead), Ok(None));
        assert_eq!(admit_on(Verb::Propose, &Who::Person, &bead), Ok(None));
        assert_eq!(
            admit_on(Verb::Claim, &proposed, &bead).unwrap_err().kind(),
            "not-for-agents"
        );
    }

    #[test]
    fn every_verb_has_one_name_and_a_class() {
        for v in Verb::ALL {
            assert_eq!(Verb::named(v.name()), Some(*v));
        }
        let mut sorted = Verb::ALL.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), Verb::ALL.len());
    }
}
