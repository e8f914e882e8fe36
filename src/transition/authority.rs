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
//! **The verb's actor class** ([`Actor`]), declared once with the verb and its name in the
//! `verbs!` table below (it makes [`Verb`], [`Verb::ALL`], [`Verb::name`] and [`Verb::actor`]):
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

/// The table, declared once: each verb, the word a person types, and its actor class. It makes
/// [`Verb`], [`Verb::ALL`] (the declaration's order), [`Verb::name`] and [`Verb::actor`].
macro_rules! verbs {
    (
        $(#[$meta:meta])*
        pub enum Verb { $($(#[$doc:meta])* $verb:ident = $name:expr, $actor:ident;)* }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
        pub enum Verb {
            $($(#[$doc])* $verb,)*
        }

        impl Verb {
            /// Every verb, in the table's order.
            pub const ALL: &[Verb] = &[$(Verb::$verb,)*];

            /// The table: who may run this verb.
            pub const fn actor(self) -> Actor {
                match self {
                    $(Verb::$verb => Actor::$actor,)*
                }
            }

            /// The verb as a person types it (`transition` subcommands without the prefix).
            pub fn name(self) -> &'static str {
                match self {
                    $(Verb::$verb => $name,)*
                }
            }
        }
    };
}

verbs! {
    /// Every verb: each `splice transition` subcommand, the modes of one that have a class of
    /// their own (`release --clear`, `pass --dry-run`), the commands that create beads or drive a
    /// runner, and those that install or read the hooks watching agents (`hooks …`).
    pub enum Verb {
        Propose = "propose", Agent;
        Split = "split", Agent;
        Resplit = "resplit", Agent;
        Complete = "complete", Runner;
        /// `integrate` and `deliver` complete the steps with those roles, and are named so.
        Integrate = Role::Integrate.name(), Runner;
        Deliver = Role::Deliver.name(), Runner;
        Claim = "claim", Runner;
        Release = "release", Runner;
        Park = "park", Runner;
        Skip = "skip", Runner;
        RecordExit = "record-exit", Runner;
        /// A claim's Slurm job, and a dead runner's job taken over (issue 17).
        RecordJob = "record-job", Runner;
        AdoptJob = "adopt-job", Runner;
        RecordRun = "record-run", Runner;
        Route = "route", Runner;
        Approve = "approve", Person;
        Reject = "reject", Person;
        Unpark = "unpark", Person;
        SetConfig = "set-config", Person;
        SetAutonomy = "set-autonomy", Person;
        SetTarget = "set-target", Person;
        ReleaseClear = "release --clear", Person;
        Close = "close", Person;
        Cancel = "cancel", Person;
        Init = "init", Person;
        InitTask = "init-task", Person;
        Run = "run", Person;
        Pass = "pass", Person;
        PassDryRun = "pass --dry-run", ReadOnly;
        Show = "show", ReadOnly;
        Step = "step", ReadOnly;
        Kind = "kind", ReadOnly;
        Autonomy = "autonomy", ReadOnly;
        Target = "target", ReadOnly;
        Delivery = "delivery", ReadOnly;
        Manifest = "manifest", ReadOnly;
        /// A dispatched agent must not rewrite the hooks that watch it.
        HooksInstall = "hooks install", Person;
        HooksStatus = "hooks status", ReadOnly;
        HooksPreCommit = "hooks pre-commit", ReadOnly;
        /// The Claude Code hook: it judges a tool call and changes nothing.
        Guard = "guard", ReadOnly;
        /// `splice sandbox exec`: run a command inside the kernel sandbox (a Slurm job's agent).
        /// Confines a command and execs it; it changes no state.
        SandboxExec = "sandbox exec", ReadOnly;
        Classify = "classify", ReadOnly;
        /// They create and run work; a plan's run approves planning gates that never relax.
        Exec = "exec", Person;
        PlanCrystallize = "plan crystallize", Person;
        /// Its verdict is what `plan approve` stands on.
        PlanCritique = "plan critique", Person;
        PlanApprove = "plan approve", Person;
        /// Starts the design agent and crystallizes; its approval is `plan approve`'s.
        Design = "design", Person;
        /// A design session's conversation, and the list of them.
        /// `design show` and `design list`.
        DesignShow = "design show", ReadOnly;
        /// Replays a trajectory file through the pure monitor.
        Monitor = "monitor", ReadOnly;
        /// A loop step's measured iteration and what was done about the monitor's decision.
        Iterate = "iterate", Runner;
        LoopEffect = "loop-effect", Runner;
        /// The answer to the pass monitor's question.
        Guide = "guide", Person;
        /// What a loop step's acceptance stage checks.
        SetAcceptance = "set-acceptance", Person;
        /// The cockpit starts runs and approves gates.
        Drive = "drive", Person;
        /// Many beads at once, from a file; and a plain bead put on a route.
        ImportBd = "import bd", Person;
        ExportBd = "export bd", ReadOnly;
        Start = "start", Person;
        /// Generated from the command line; they read no state.
        Completions = "completions", ReadOnly;
        Man = "man", ReadOnly;
        /// Reads the state and the repository; never locks or writes.
        Doctor = "doctor", ReadOnly;
        /// A plain bead (no route), as bd's `create` makes one.
        Create = "create", Person;
        /// bd's read commands (`show` is the verb above).
        List = "list", ReadOnly;
        Ready = "ready", ReadOnly;
        Logs = "logs", ReadOnly;
        /// Writes only a derived file, `.splice/cache/`, rebuilt at will from the state.
        CacheRebuild = "cache rebuild", ReadOnly;
        /// bd's edits of a bead's own fields (never `pipeline`; a claimed bead is refused).
        Update = "update", Person;
        Reopen = "reopen", Person;
        LabelAdd = "label add", Person;
        LabelRemove = "label rm", Person;
        LabelList = "label list", ReadOnly;
        DepAdd = "dep add", Person;
        DepRemove = "dep rm", Person;
        DepTree = "dep tree", ReadOnly;
        /// A bd file and the store kept in step: bd's fields both ways, never `pipeline`.
        SyncBd = "sync bd", Person;
    }
}

impl Verb {
    /// The verb as its journal records name it: its [`name`](Verb::name), but `release
    /// --clear`, which the journal has always called `release-clear`.
    pub fn journal_name(self) -> &'static str {
        match self {
            Verb::ReleaseClear => "release-clear",
            v => v.name(),
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
    fn each_verb_has_its_own_journal_name_and_the_journals_old_names_stay() {
        let mut names: Vec<&str> = Verb::ALL.iter().map(|v| v.journal_name()).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "two verbs journaled by one name");
        assert_eq!(Verb::ReleaseClear.journal_name(), "release-clear");
        assert_eq!(Verb::RecordExit.journal_name(), "record-exit");
        assert_eq!(Verb::ImportBd.journal_name(), "import bd");
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
