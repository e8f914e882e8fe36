//! `splice transition <verb>`: the writer's verbs, one subcommand each. Who the caller is comes
//! from [`Who::command_line`] (descent from a live runner, the environment), never from its
//! arguments alone: `--holder` and `SPLICE_HOLDER` only name a holder, which a dispatched
//! session's claim must match.

use std::io::Read;
use std::path::PathBuf;

use clap::Subcommand;
use serde_json::Value;

use super::init::{parse_autonomy, parse_delivery};
use super::{Global, output};
use crate::error::{Error, Result};
use crate::model::Role;
use crate::model::bead::ExitKind;
use crate::store::Store;
use crate::transition::read::Query;
use crate::transition::{
    Ctx, Who, claim, complete, gate, park, propose, read, record, settings, split,
};

/// Change (or read) a bead's pipeline state. Only these verbs write `.splice/`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub verb: Verb,
}

/// Options every writing verb takes.
#[derive(clap::Args, Debug, Clone)]
pub struct Common {
    /// The bead to act on.
    #[arg(long)]
    pub bead: String,
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
}

/// Options of the read-only verbs.
#[derive(clap::Args, Debug, Clone)]
pub struct BeadOnly {
    #[arg(long)]
    pub bead: String,
}

#[derive(Subcommand, Debug)]
pub enum Verb {
    /// Record the artifact a step produced, awaiting `complete`.
    Propose {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        step: String,
        /// The artifact's path (or another handle such as a commit).
        #[arg(long)]
        artifact: String,
        /// The step's result text (e.g. a spec verdict or a summary).
        #[arg(long)]
        result: Option<String>,
        /// The pull request opened for delivery.
        #[arg(long)]
        pr_url: Option<String>,
    },
    /// Run the step's floors; advance (through its gate) or close when they pass.
    Complete {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        step: String,
    },
    /// A person approves the pending gate on a step (floors are not re-run).
    Approve {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        step: String,
    },
    /// A person rejects a step's result; the next dispatch gets the reason as guidance.
    Reject {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        step: String,
        #[arg(long)]
        reason: String,
    },
    /// `complete` for the integrate step: closes a container when its floors pass.
    Integrate {
        #[command(flatten)]
        common: Common,
    },
    /// `complete` for the deliver step: proves landing and closes a leaf.
    Deliver {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
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
    /// Claim a bead for a holder. With --dispatch, counts one attempt on the current step.
    Claim {
        #[command(flatten)]
        common: Common,
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
        #[arg(long, requires = "reason")]
        clear: bool,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Park the node for a person (dead letter).
    Park {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        reason: String,
    },
    /// Put a parked node back in play: resets the step's attempts, re-checks it.
    Unpark {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        reason: String,
    },
    /// Record the suite command and test paths on the campaign root.
    SetConfig {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        suite_cmd: Option<String>,
        /// Comma-separated directories, relative to the repository root.
        #[arg(long, value_name = "A,B")]
        test_paths: Option<String>,
    },
    /// Set a node's autonomy level (hitl, wave, deep).
    SetAutonomy {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        level: String,
    },
    /// Set where a node's work lands, and how (pr or direct).
    SetTarget {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        target: String,
        #[arg(long)]
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
        #[arg(long)]
        code: Option<i32>,
        #[arg(long)]
        log: Option<String>,
        /// Usage JSON (tokens, latency, cost).
        #[arg(long)]
        usage: Option<String>,
    },
    /// Record a pass envelope on the scope root (`-` reads stdin).
    RecordRun {
        #[command(flatten)]
        common: Common,
        #[arg(long, value_name = "FILE")]
        envelope: PathBuf,
    },
    /// Move a node to another route, at its entry step or --at STEP.
    Route {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        to: String,
        #[arg(long)]
        at: Option<String>,
    },
    /// Print the bead's JSON.
    Show(BeadOnly),
    /// Print the bead's current step.
    Step(BeadOnly),
    /// Print the bead's kind (root, compound, leaf).
    Kind(BeadOnly),
    /// Print the bead's resolved autonomy and where it comes from.
    Autonomy(BeadOnly),
    /// Print the bead's resolved target and delivery method.
    Target(BeadOnly),
    /// Print the bead's resolved delivery method and target.
    Delivery(BeadOnly),
}

/// The writer's context for a command-line caller, recognized as a person or a dispatched
/// session.
fn ctx<'a>(store: &'a Store, common: &Common, now: &str) -> Ctx<'a> {
    Ctx {
        store,
        holder: common.holder.clone().filter(|h| !h.is_empty()),
        who: Who::command_line(store.dir()),
        run: common.run.clone().filter(|r| !r.is_empty()),
        expect_seq: common.expect_seq,
        now: now.to_string(),
    }
}

fn require_holder(common: &Common) -> Result<String> {
    common
        .holder
        .clone()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| Error::Invalid("this verb needs --holder (or SPLICE_HOLDER)".into()))
}

fn read_json_arg(path: &PathBuf) -> Result<Value> {
    let text = if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| Error::io("<stdin>", e))?;
        s
    } else {
        std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?
    };
    serde_json::from_str(&text).map_err(|e| Error::bad_file(path, format!("not JSON: {e}")))
}

pub fn run(args: Args, global: &Global) -> Result<i32> {
    let store = Store::discover(global.dir.as_deref())?;
    if read_only(&args.verb).is_some() {
        return answer(&store, &args.verb);
    }
    // The one clock read of a writing verb: its transition's time.
    let now = crate::clock::now_string()?;
    step_verb(&store, &now, args.verb)
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

/// Print a read-only verb's answer (it never locks, recovers or reads the clock).
fn answer(store: &Store, verb: &Verb) -> Result<i32> {
    let Some((b, what)) = read_only(verb) else {
        return Err(Error::Invalid("not a read-only verb".into()));
    };
    output::print_json(&read::query(store, &b.bead, what)?);
    Ok(0)
}

/// The verbs that move a node along its route; the others go on to [`lease_verb`].
fn step_verb(store: &Store, now: &str, verb: Verb) -> Result<i32> {
    match verb {
        Verb::Propose {
            common,
            step,
            artifact,
            result,
            pr_url,
        } => {
            let args = propose::ProposeArgs {
                step,
                artifact,
                result,
                pr_url,
            };
            let out = propose::propose(&ctx(store, &common, now), &common.bead, args);
            output::emit(store, out)
        }
        Verb::Complete { common, step } => {
            let ctx = ctx(store, &common, now);
            output::emit(
                store,
                complete::complete(&ctx, &common.bead, &step, None, "complete"),
            )
        }
        Verb::Approve { common, step } => {
            let out = gate::approve(&ctx(store, &common, now), &common.bead, &step);
            output::emit(store, out)
        }
        Verb::Reject {
            common,
            step,
            reason,
        } => {
            let out = gate::reject(&ctx(store, &common, now), &common.bead, &step, &reason);
            output::emit(store, out)
        }
        Verb::Integrate { common } => {
            let step = step_with(store, Role::Integrate)?;
            let ctx = ctx(store, &common, now);
            let out = complete::complete(&ctx, &common.bead, &step, None, Role::Integrate.name());
            output::emit(store, out)
        }
        Verb::Deliver { common, pr_url } => {
            let step = step_with(store, Role::Deliver)?;
            let ctx = ctx(store, &common, now);
            let out = complete::complete(&ctx, &common.bead, &step, pr_url, Role::Deliver.name());
            output::emit(store, out)
        }
        Verb::Split { common, children } => {
            let children = split::read_children(&children)?;
            let out = split::split(&ctx(store, &common, now), &common.bead, &children);
            output::emit(store, out)
        }
        other => lease_verb(store, now, other),
    }
}

/// The verbs of claims, parking and records; the others go on to [`setting_verb`].
fn lease_verb(store: &Store, now: &str, verb: Verb) -> Result<i32> {
    match verb {
        Verb::Claim {
            common,
            dispatch,
            base,
        } => {
            let holder = require_holder(&common)?;
            let ctx = ctx(store, &common, now);
            let out = claim::claim(&ctx, &common.bead, &holder, dispatch, base.as_deref());
            output::emit(store, out)
        }
        Verb::Release {
            common,
            clear: true,
            reason,
        } => {
            let ctx = ctx(store, &common, now);
            let reason = reason.as_deref().unwrap_or("");
            output::emit(store, claim::clear(&ctx, &common.bead, reason))
        }
        Verb::Release { common, .. } => {
            let holder = require_holder(&common)?;
            let out = claim::release(&ctx(store, &common, now), &common.bead, &holder);
            output::emit(store, out)
        }
        Verb::Park { common, reason } => {
            let out = park::park(&ctx(store, &common, now), &common.bead, &reason);
            output::emit(store, out)
        }
        Verb::Unpark { common, reason } => {
            let out = park::unpark(&ctx(store, &common, now), &common.bead, &reason);
            output::emit(store, out)
        }
        Verb::RecordExit {
            common,
            exit,
            code,
            log,
            usage,
        } => {
            let args = exit_args(&exit, code, log, usage)?;
            let out = record::record_exit(&ctx(store, &common, now), &common.bead, args);
            output::emit(store, out)
        }
        Verb::RecordRun { common, envelope } => {
            let envelope = read_json_arg(&envelope)?;
            let out = record::record_run(&ctx(store, &common, now), &common.bead, envelope);
            output::emit(store, out)
        }
        other => setting_verb(store, now, other),
    }
}

/// `record-exit`'s arguments, parsed.
fn exit_args(
    exit: &str,
    code: Option<i32>,
    log: Option<String>,
    usage: Option<String>,
) -> Result<record::ExitArgs> {
    let exit = ExitKind::parse(exit).ok_or_else(|| {
        Error::Invalid(format!(
            "--exit {exit:?}: expected one of {}",
            ExitKind::NAMES.join(", ")
        ))
    })?;
    let usage = usage.as_deref().map(parse_usage).transpose()?;
    Ok(record::ExitArgs {
        exit,
        code,
        cause: None,
        log,
        usage,
    })
}

/// The name of the manifest's step with `role` (`transition integrate` and `deliver` complete it).
fn step_with(store: &Store, role: Role) -> Result<String> {
    let manifest = store.manifest()?;
    let step = manifest.step_with(role).ok_or_else(|| {
        Error::Invalid(format!(
            "the manifest has no step with role `{}`; give one `\"role\": \"{}\"`, or use \
             `transition complete --step STEP`",
            role.name(),
            role.name()
        ))
    })?;
    Ok(step.name.clone())
}

/// `--usage`: JSON, and a usage record. Each problem is named as what it is.
fn parse_usage(text: &str) -> Result<crate::model::Usage> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Error::Invalid(format!("--usage is not JSON: {e}")))?;
    serde_json::from_value(value)
        .map_err(|e| Error::Invalid(format!("--usage is not a usage record: {e}")))
}

/// The verbs that change a node's settings or route (the read-only ones are answered).
fn setting_verb(store: &Store, now: &str, verb: Verb) -> Result<i32> {
    match verb {
        Verb::SetConfig {
            common,
            suite_cmd,
            test_paths,
        } => {
            let ctx = ctx(store, &common, now);
            let paths = test_paths.as_deref().map(output::comma_list);
            let out = settings::set_config(&ctx, &common.bead, suite_cmd, paths);
            output::emit(store, out)
        }
        Verb::SetAutonomy { common, level } => {
            let level = parse_autonomy(Some(&level))?.expect("parsed from Some");
            let out = settings::set_autonomy(&ctx(store, &common, now), &common.bead, level);
            output::emit(store, out)
        }
        Verb::SetTarget {
            common,
            target,
            delivery,
        } => {
            let delivery = parse_delivery(delivery.as_deref())?;
            let ctx = ctx(store, &common, now);
            let out = settings::set_target(&ctx, &common.bead, &target, delivery);
            output::emit(store, out)
        }
        Verb::Route { common, to, at } => {
            let ctx = ctx(store, &common, now);
            output::emit(
                store,
                settings::route(&ctx, &common.bead, &to, at.as_deref()),
            )
        }
        other => answer(store, &other),
    }
}
