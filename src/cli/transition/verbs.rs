//! The writing verbs' arms: each turns its arguments into a call of the writer and prints the
//! outcome ([`output::emit`]).

use std::io::Read;
use std::path::PathBuf;

use serde_json::Value;

use super::{Common, Verb, answer};
use crate::cli::init::{parse_autonomy, parse_delivery};
use crate::cli::output;
use crate::error::{Error, Result};
use crate::model::Role;
use crate::model::bead::ExitKind;
use crate::store::Store;
use crate::transition::{
    Ctx, Who, authority, claim, complete, gate, job, park, propose, record, resplit, settings,
    skip, split,
};
use crate::transition::{acceptance, loops};

/// The writer's context for a command-line caller, recognized as a person or a dispatched
/// session. A dispatched session on a cluster job's bead is refused here, before any lock is
/// taken (the writer checks again under the lock): a job records its verbs in its proposal file.
fn ctx<'a>(store: &'a Store, common: &Common, now: &str) -> Result<Ctx<'a>> {
    let who = Who::command_line(store.dir());
    if who.is_dispatched()
        && let Ok(Some(bead)) = store.read_bead_file(common.bead.id())
    {
        authority::refuse_cluster_dispatch(&who, &bead)?;
    }
    Ok(Ctx {
        store,
        holder: common.holder.clone().filter(|h| !h.is_empty()),
        who,
        run: common.run.clone().filter(|r| !r.is_empty()),
        expect_seq: common.expect_seq,
        now: now.to_string(),
    })
}

fn require_holder(common: &Common) -> Result<String> {
    common
        .holder
        .clone()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| Error::Invalid("this verb needs --holder (or SPLICE_HOLDER)".into()))
}

fn read_json_arg(path: &PathBuf) -> Result<Value> {
    let (text, _) = read_text(path)?;
    serde_json::from_str(&text).map_err(|e| Error::bad_file(path, format!("not JSON: {e}")))
}

/// The text of `path` (`-`: stdin) and how to name it in a message.
fn read_text(path: &std::path::Path) -> Result<(String, String)> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| Error::io("<stdin>", e))?;
        return Ok((s, "<stdin>".into()));
    }
    let text = crate::safe_read::read_text(path, crate::safe_read::INPUT)?;
    Ok((text, path.display().to_string()))
}

/// The verbs that move a node along its route; the others go on to [`lease_verb`].
pub(super) fn step_verb(store: &Store, now: &str, verb: Verb) -> Result<i32> {
    match verb {
        Verb::Propose {
            common,
            step,
            artifact,
            result,
            pr_url,
            confidence,
        } => {
            let args = propose::ProposeArgs {
                step,
                artifact,
                result,
                pr_url,
                confidence,
            };
            let out = propose::propose(&ctx(store, &common, now)?, common.bead.id(), args);
            output::emit(store, out)
        }
        Verb::Complete { common, step } => {
            let ctx = ctx(store, &common, now)?;
            output::emit(
                store,
                complete::complete(
                    &ctx,
                    common.bead.id(),
                    &step,
                    None,
                    authority::Verb::Complete,
                ),
            )
        }
        Verb::Approve { common, step } => {
            let out = gate::approve(
                &ctx(store, &common, now)?,
                common.bead.id(),
                step.as_deref(),
            );
            output::emit(store, out)
        }
        Verb::Reject {
            common,
            step,
            reason,
        } => {
            let out = gate::reject(
                &ctx(store, &common, now)?,
                common.bead.id(),
                step.as_deref(),
                &reason,
            );
            output::emit(store, out)
        }
        Verb::Integrate { common } => {
            let step = step_with(store, Role::Integrate)?;
            let ctx = ctx(store, &common, now)?;
            let out = complete::complete(
                &ctx,
                common.bead.id(),
                &step,
                None,
                authority::Verb::Integrate,
            );
            output::emit(store, out)
        }
        Verb::Deliver { common, pr_url } => {
            let step = step_with(store, Role::Deliver)?;
            let ctx = ctx(store, &common, now)?;
            let out = complete::complete(
                &ctx,
                common.bead.id(),
                &step,
                pr_url,
                authority::Verb::Deliver,
            );
            output::emit(store, out)
        }
        Verb::Split { common, children } => {
            let children = split::read_children(&children)?;
            let out = split::split(&ctx(store, &common, now)?, common.bead.id(), &children);
            output::emit(store, out)
        }
        Verb::Resplit { common, children } => {
            let children = split::read_children(&children)?;
            let ctx = ctx(store, &common, now)?;
            output::emit(store, resplit::resplit(&ctx, common.bead.id(), &children))
        }
        other => lease_verb(store, now, other),
    }
}

/// The verbs of claims, parking and records; the others go on to [`loop_verb`].
fn lease_verb(store: &Store, now: &str, verb: Verb) -> Result<i32> {
    match verb {
        Verb::Claim {
            common,
            dispatch,
            base,
        } => {
            let holder = require_holder(&common)?;
            let ctx = ctx(store, &common, now)?;
            let out = claim::claim(&ctx, common.bead.id(), &holder, dispatch, base.as_deref());
            output::emit(store, out)
        }
        Verb::Release {
            common,
            clear: true,
            reason,
        } => {
            let ctx = ctx(store, &common, now)?;
            let reason = reason.as_deref().unwrap_or("");
            output::emit(store, claim::clear(&ctx, common.bead.id(), reason))
        }
        Verb::Release { common, .. } => {
            let holder = require_holder(&common)?;
            let out = claim::release(&ctx(store, &common, now)?, common.bead.id(), &holder);
            output::emit(store, out)
        }
        Verb::Park { common, reason } => {
            let out = park::park(&ctx(store, &common, now)?, common.bead.id(), &reason);
            output::emit(store, out)
        }
        Verb::Skip {
            common,
            step,
            reason,
        } => {
            let out = skip::skip(&ctx(store, &common, now)?, common.bead.id(), &step, &reason);
            output::emit(store, out)
        }
        Verb::Unpark { common, reason } => {
            let out = park::unpark(&ctx(store, &common, now)?, common.bead.id(), &reason);
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
            let out = record::record_exit(&ctx(store, &common, now)?, common.bead.id(), args);
            output::emit(store, out)
        }
        Verb::RecordJob { common, job } => {
            let holder = require_holder(&common)?;
            let ctx = Ctx {
                holder: Some(holder),
                ..ctx(store, &common, now)?
            };
            output::emit(store, job::record_job(&ctx, common.bead.id(), &job))
        }
        Verb::AdoptJob { common, job } => {
            let holder = require_holder(&common)?;
            let ctx = Ctx {
                holder: Some(holder),
                ..ctx(store, &common, now)?
            };
            let out = crate::driver::slurm::adopt_by_hand(&ctx, common.bead.id(), &job);
            output::emit(store, out)
        }
        Verb::RecordRun { common, envelope } => {
            let envelope = read_json_arg(&envelope)?;
            let out = record::record_run(&ctx(store, &common, now)?, common.bead.id(), envelope);
            output::emit(store, out)
        }
        other => loop_verb(store, now, other),
    }
}

/// A loop step's person's verbs (`docs/monitor.md`); the others go on to [`setting_verb`].
fn loop_verb(store: &Store, now: &str, verb: Verb) -> Result<i32> {
    match verb {
        Verb::SetAcceptance {
            common,
            facts,
            clear: _,
        } => {
            let facts = match facts {
                Some(path) => {
                    let (text, from) = read_text(&path)?;
                    acceptance::parse_facts(&text, &from)?
                }
                None => Vec::new(),
            };
            let out =
                acceptance::set_acceptance(&ctx(store, &common, now)?, common.bead.id(), facts);
            output::emit(store, out)
        }
        Verb::Guide { common, text } => {
            let out = loops::guide(&ctx(store, &common, now)?, common.bead.id(), &text);
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
        response: None,
        retry_after_s: None,
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
            let ctx = ctx(store, &common, now)?;
            let paths = test_paths.as_deref().map(output::comma_list);
            let out = settings::set_config(&ctx, common.bead.id(), suite_cmd, paths);
            output::emit(store, out)
        }
        Verb::SetAutonomy { common, autonomy } => {
            let level = parse_autonomy(Some(&autonomy))?.expect("parsed from Some");
            let out = settings::set_autonomy(&ctx(store, &common, now)?, common.bead.id(), level);
            output::emit(store, out)
        }
        Verb::SetTarget {
            common,
            target,
            delivery,
        } => {
            let delivery = parse_delivery(delivery.as_deref())?;
            let ctx = ctx(store, &common, now)?;
            let out = settings::set_target(&ctx, common.bead.id(), &target, delivery);
            output::emit(store, out)
        }
        Verb::Route { common, to, at } => {
            let ctx = ctx(store, &common, now)?;
            output::emit(
                store,
                settings::route(&ctx, common.bead.id(), &to, at.as_deref()),
            )
        }
        other => answer(store, &other),
    }
}
