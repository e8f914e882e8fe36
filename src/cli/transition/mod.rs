//! `splice transition <verb>`: the writer's verbs, one subcommand each. Who the caller is comes
//! from [`Who::command_line`] (descent from a live runner, the environment), never from its
//! arguments alone: `--holder` and `SPLICE_HOLDER` only name a holder, which a dispatched
//! session's claim must match.

use std::path::PathBuf;

use clap::Subcommand;

use super::args::{BeadId, JsonAlias};
use super::{Global, output};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::transition::read::{self, Query};

mod cluster;
mod inbox;
mod verbs;

/// Change (or read) a bead's pipeline state. Only these verbs write `.splice/`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub verb: Verb,
}

/// Options every writing verb takes.
#[derive(clap::Args, Debug, Clone)]
pub struct Common {
    #[command(flatten)]
    pub bead: BeadId,
    /// The holder acting for: a runner's identity. A dispatched session acts as its claim's
    /// holder; naming another is refused.
    #[arg(long, env = "SPLICE_HOLDER")]
    pub holder: Option<String>,
    /// Refuse unless the bead's `pipeline.seq` is N (compare-and-swap).
    #[arg(long, value_name = "N")]
    pub expect_seq: Option<u64>,
    /// The run id making this call (recorded on checks).
    #[arg(long, env = "SPLICE_RUN")]
    pub run: Option<String>,
    #[command(flatten)]
    pub json: JsonAlias,
}

/// Options of the read-only verbs.
#[derive(clap::Args, Debug, Clone)]
pub struct BeadOnly {
    #[command(flatten)]
    pub bead: BeadId,
    #[command(flatten)]
    pub json: JsonAlias,
}

#[derive(Subcommand, Debug)]
pub enum Verb {
    /// Record the artifact a step produced, awaiting `complete`.
    Propose {
        #[command(flatten)]
        common: Common,
        /// The step the bead is at (refused when it is at another: a stale caller).
        #[arg(long)]
        step: String,
        /// The artifact's path (or another handle such as a commit).
        #[arg(long)]
        artifact: String,
        /// The step's result text (e.g. a spec verdict or a summary).
        #[arg(long)]
        result: Option<String>,
        /// A pull request already open for the delivery (splice opens one itself when none is
        /// known).
        #[arg(long, value_name = "URL")]
        pr_url: Option<String>,
        /// Your confidence in the work, 0..1 (a loop step's pass monitor reads it: falling
        /// confidence over three iterations asks a person).
        #[arg(long, value_name = "0..1")]
        confidence: Option<f64>,
    },
    /// Run the step's floors; advance (through its gate) or close when they pass.
    Complete {
        #[command(flatten)]
        common: Common,
        /// The step the bead is at (refused when it is at another: a stale caller).
        #[arg(long)]
        step: String,
    },
    /// A person approves the pending gate on a step (floors are not re-run); at a route gate
    /// (a result branch's `suggest_route`) the node switches to the suggested route.
    Approve {
        #[command(flatten)]
        common: Common,
        /// The step whose gate to approve (refused when the bead is at another: a stale caller).
        /// Without it, the gate pending on the bead; refused when none is.
        #[arg(long)]
        step: Option<String>,
    },
    /// A person rejects a step's result; the next dispatch gets the reason as guidance. At a
    /// route gate the node stays on its route and goes on as declared.
    Reject {
        #[command(flatten)]
        common: Common,
        /// The step whose result to reject (refused when the bead is at another: a stale
        /// caller). Without it, the step whose gate is pending; refused when none is.
        #[arg(long)]
        step: Option<String>,
        /// Why: the next dispatch gets it as guidance, and the journal records it.
        #[arg(long)]
        reason: String,
    },
    /// `complete` for the integrate step: closes a container when its floors pass.
    Integrate {
        #[command(flatten)]
        common: Common,
    },
    /// `complete` for the deliver step: lands (direct) or pushes the reviewed commit and opens
    /// the pull request (PR delivery), proves the delivery and closes a leaf.
    Deliver {
        #[command(flatten)]
        common: Common,
        /// A pull request a person opened by hand for the work: splice opens none, and the
        /// delivery proof waits for this one's merge.
        #[arg(long, value_name = "URL")]
        pr_url: Option<String>,
    },
    /// Create the node's children from a JSON file, in one transition.
    Split {
        #[command(flatten)]
        common: Common,
        /// JSON array of {title, description, scenarios, files, depends_on}.
        #[arg(long, value_name = "FILE")]
        children: PathBuf,
    },
    /// Redo the node's split while it is at its split step (before that step's gate passes).
    Resplit {
        #[command(flatten)]
        common: Common,
        /// JSON array of {title, description, scenarios, files, depends_on}: the new children.
        #[arg(long, value_name = "FILE")]
        children: PathBuf,
    },
    /// Claim a bead for a holder. With --dispatch, counts one attempt on the current step.
    Claim {
        #[command(flatten)]
        common: Common,
        /// Start a dispatch of the current step: counts one attempt (refused when none is left).
        #[arg(long)]
        dispatch: bool,
        /// With --dispatch: the worktree HEAD the step starts from (recorded once per entry).
        #[arg(long, requires = "dispatch", value_name = "SHA")]
        base: Option<String>,
    },
    /// Release the holder's claim; a person clears a dead holder's with --clear --reason.
    Release {
        #[command(flatten)]
        common: Common,
        /// A person clears whoever's claim it is (its holder is judged dead); needs --reason.
        #[arg(long, requires = "reason")]
        clear: bool,
        /// With --clear: why the claim is cleared (journaled).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Park the node for a person (dead letter).
    Park {
        #[command(flatten)]
        common: Common,
        /// Why the node needs a person (shown by `status`, journaled).
        #[arg(long)]
        reason: String,
    },
    /// Move the node past an `optional: true` step that cannot run, recorded as not
    /// applicable; a required step is refused.
    Skip {
        #[command(flatten)]
        common: Common,
        /// The step the bead is at (refused when it is at another: a stale caller).
        #[arg(long)]
        step: String,
        /// Why the step is not applicable (recorded on the node, journaled).
        #[arg(long)]
        reason: String,
    },
    /// Put a parked node back in play: resets the step's attempts, re-checks it.
    Unpark {
        #[command(flatten)]
        common: Common,
        /// Why the node may go on (journaled).
        #[arg(long)]
        reason: String,
    },
    /// A person answers the pass monitor's question about a loop node (its agent's confidence
    /// fell three times, and it rests awaiting-human): go on with this guidance, which the next
    /// iteration's prompt carries. To stop instead, cancel the node.
    Guide {
        #[command(flatten)]
        common: Common,
        /// How the agent should go on (journaled, and put in the next prompt).
        #[arg(long)]
        text: String,
    },
    /// Set a node's acceptance facts, replacing any it has: commands a loop step's `command`
    /// stage runs in the worktree each iteration (exit 0 passes). A saved plan sets them at
    /// creation.
    SetAcceptance {
        #[command(flatten)]
        common: Common,
        /// A JSON file (`-`: stdin) listing the facts: `[{"id": "A1", "argv": ["sh", "-c",
        /// "test -f out.txt"]}]`.
        #[arg(
            long,
            value_name = "FILE",
            conflicts_with = "clear",
            required_unless_present = "clear"
        )]
        facts: Option<PathBuf>,
        /// Remove every acceptance fact of the node.
        #[arg(long)]
        clear: bool,
    },
    /// Record the suite command and test paths on the campaign root.
    SetConfig {
        #[command(flatten)]
        common: Common,
        /// The command that runs the test suite, run by the `suite` floor (e.g. `cargo test`).
        #[arg(long, value_name = "CMD")]
        suite_cmd: Option<String>,
        /// Comma-separated directories, relative to the repository root.
        #[arg(long, value_name = "A,B")]
        test_paths: Option<String>,
    },
    /// Set a node's autonomy level (hitl, wave, deep).
    SetAutonomy {
        #[command(flatten)]
        common: Common,
        /// hitl, wave or deep: how many gates wait for a person (`splice show ID --field
        /// autonomy` says what a node resolves to). `--level` is its deprecated spelling.
        #[arg(long, value_name = "LEVEL", alias = "level")]
        autonomy: String,
    },
    /// Set where a node's work lands, and how (pr or direct).
    SetTarget {
        #[command(flatten)]
        common: Common,
        /// The branch the node's work lands on; it must exist in the repository.
        #[arg(long, value_name = "BRANCH")]
        target: String,
        /// pr or direct: open a pull request, or merge into the target.
        #[arg(long, value_name = "METHOD")]
        delivery: Option<String>,
    },
    /// Record a dispatch's typed exit (by the holder that dispatched).
    RecordExit {
        #[command(flatten)]
        common: Common,
        /// ok, failed, timeout, error, not-started or cancelled (the last two give the attempt
        /// back; not-started parks the node).
        #[arg(long)]
        exit: String,
        /// The process's exit code, if it exited.
        #[arg(long)]
        code: Option<i32>,
        /// Where the dispatch's log is (a path, recorded as given).
        #[arg(long, value_name = "PATH")]
        log: Option<String>,
        /// Usage JSON (tokens, latency, cost).
        #[arg(long)]
        usage: Option<String>,
    },
    /// Record the Slurm job `sbatch` gave the holder's dispatch of the bead (on its claim).
    RecordJob {
        #[command(flatten)]
        common: Common,
        /// The job id `sbatch --parsable` printed.
        #[arg(long, value_name = "ID")]
        job: String,
    },
    /// Take over a dead runner's claim whose Slurm job still exists: the job id on the claim (or
    /// none yet), the job's name `splice-<bead>-<step>-<attempt>` and Slurm knowing the job
    /// prove it; splice asks Slurm itself (`scontrol show job`).
    AdoptJob {
        #[command(flatten)]
        common: Common,
        /// The job to adopt.
        #[arg(long, value_name = "ID")]
        job: String,
    },
    /// Record a pass envelope on the scope root (`-` reads stdin).
    RecordRun {
        #[command(flatten)]
        common: Common,
        /// The pass envelope JSON (`-` reads stdin), as `splice pass` prints it.
        #[arg(long, value_name = "FILE")]
        envelope: PathBuf,
    },
    /// Move a node to another route, at its entry step or --at STEP.
    Route {
        #[command(flatten)]
        common: Common,
        /// The route to move to (root, compound or leaf; a manifest may declare others).
        #[arg(long, value_name = "ROUTE")]
        to: String,
        /// The step to enter on that route (default: its entry step).
        #[arg(long, value_name = "STEP")]
        at: Option<String>,
    },
    /// Deprecated (kept for one release): print the bead file's JSON. Use
    /// `splice show ID --json`.
    #[command(hide = true)]
    Show(BeadOnly),
    /// Deprecated (kept for one release): use `splice show ID --field step --json`.
    #[command(hide = true)]
    Step(BeadOnly),
    /// Deprecated (kept for one release): use `splice show ID --field kind --json`.
    #[command(hide = true)]
    Kind(BeadOnly),
    /// Deprecated (kept for one release): use `splice show ID --field autonomy --json`.
    #[command(hide = true)]
    Autonomy(BeadOnly),
    /// Deprecated (kept for one release): use `splice show ID --field target --json`.
    #[command(hide = true)]
    Target(BeadOnly),
    /// Deprecated (kept for one release): use `splice show ID --field delivery --json`.
    #[command(hide = true)]
    Delivery(BeadOnly),
}

pub fn run(args: Args, global: &Global) -> Result<i32> {
    // A sandboxed dispatch's agent verbs reach the writer through its runner (issue 31); any
    // other writing verb goes on, and the kernel refuses it the lock.
    if inbox::sent(&args.verb)
        && let Some(dir) = crate::transition::inbox::from_env()
    {
        return inbox::send(args.verb, &dir);
    }
    // A cluster dispatch records its writing verbs and never touches the store (issue 17).
    if read_only(&args.verb).is_none()
        && let Some(file) = cluster::proposal_file()
    {
        return cluster::record(args.verb, &file);
    }
    let store = Store::discover(global.dir.as_deref())?;
    if read_only(&args.verb).is_some() {
        return answer(&store, &args.verb);
    }
    // The one clock read of a writing verb: its transition's time.
    let now = crate::clock::now_string()?;
    verbs::step_verb(&store, &now, args.verb)
}

/// The read-only verbs' bead and question.
fn read_only(verb: &Verb) -> Option<(&BeadOnly, Query)> {
    match verb {
        Verb::Show(b) => Some((b, Query::Show)),
        Verb::Step(b) => Some((b, Query::Step)),
        Verb::Kind(b) => Some((b, Query::Kind)),
        Verb::Autonomy(b) => Some((b, Query::Autonomy)),
        Verb::Target(b) => Some((b, Query::Target)),
        Verb::Delivery(b) => Some((b, Query::Delivery)),
        _ => None,
    }
}

/// The options of a writing verb (`None` for the read-only ones).
fn common_of(verb: &Verb) -> Option<&Common> {
    match verb {
        Verb::Propose { common, .. }
        | Verb::Complete { common, .. }
        | Verb::Approve { common, .. }
        | Verb::Reject { common, .. }
        | Verb::Integrate { common }
        | Verb::Deliver { common, .. }
        | Verb::Split { common, .. }
        | Verb::Resplit { common, .. }
        | Verb::Claim { common, .. }
        | Verb::Release { common, .. }
        | Verb::Park { common, .. }
        | Verb::Skip { common, .. }
        | Verb::Unpark { common, .. }
        | Verb::Guide { common, .. }
        | Verb::SetAcceptance { common, .. }
        | Verb::SetConfig { common, .. }
        | Verb::SetAutonomy { common, .. }
        | Verb::SetTarget { common, .. }
        | Verb::RecordExit { common, .. }
        | Verb::RecordJob { common, .. }
        | Verb::AdoptJob { common, .. }
        | Verb::RecordRun { common, .. }
        | Verb::Route { common, .. } => Some(common),
        Verb::Show(_)
        | Verb::Step(_)
        | Verb::Kind(_)
        | Verb::Autonomy(_)
        | Verb::Target(_)
        | Verb::Delivery(_) => None,
    }
}

/// The bead a writing verb names.
fn bead_of(verb: &Verb) -> Option<&str> {
    common_of(verb).map(|c| c.bead.id())
}

/// Print a read-only verb's answer (it never locks, recovers or reads the clock).
pub(super) fn answer(store: &Store, verb: &Verb) -> Result<i32> {
    let Some((b, what)) = read_only(verb) else {
        return Err(Error::Invalid("not a read-only verb".into()));
    };
    let instead = match what {
        Query::Show => "`splice show ID --json` (the bead file's JSON, with its decision)".into(),
        other => format!("`splice show ID --field {} --json`", other.name()),
    };
    crate::stdio::err(&format!(
        "note: `splice transition {}` is deprecated and goes in the next release; use {instead}\n",
        what.name()
    ));
    output::print_json(&read::query(store, b.bead.id(), what)?);
    Ok(0)
}
