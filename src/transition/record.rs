//! `record-exit` (a dispatch's typed exit, by the holder that dispatched) and `record-run` (a
//! pass's envelope on the scope root).

use serde::Serialize;
use serde_json::Value;

use super::{Ctx, Refusal, Verb, next_seq};
use crate::error::{Error, Result};
use crate::model::bead::{Dispatch, ExitKind, ExitRecord, MAX_TRANSIENT, StepResponse};
use crate::model::{Bead, Usage};
use crate::store::{Change, Reads};

/// What a dispatch left.
#[derive(Clone, Debug)]
pub struct ExitArgs {
    pub exit: ExitKind,
    pub code: Option<i32>,
    /// Why it ended so, in a line (see [`ExitRecord::cause`]).
    pub cause: Option<String>,
    pub log: Option<String>,
    pub usage: Option<Usage>,
    /// The dispatch's final response, recorded on the node for the step's result branches.
    pub response: Option<StepResponse>,
    /// A transient end's wait the agent's API asked for (see [`ExitRecord::retry_after_s`]).
    pub retry_after_s: Option<u64>,
}

/// A recorded dispatch exit.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct ExitRecorded {
    pub bead: String,
    pub step: String,
    pub attempt: u32,
    pub exit: ExitKind,
    /// Whether the dispatch proposed on its step.
    pub proposed: bool,
    /// The dispatch counted no attempt (it never started, or the runner cancelled it): its
    /// attempt was given back.
    pub attempt_given_back: bool,
    /// It never started: the node is parked with the cause.
    pub parked: bool,
}

/// A recorded pass envelope.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct RunRecorded {
    pub bead: String,
    /// Always `true`.
    pub recorded: bool,
    /// The envelope's `status`.
    pub status: Value,
}

/// Record how the holder's dispatch on the current step ended.
pub fn record_exit(ctx: &Ctx, id: &str, args: ExitArgs) -> Result<ExitRecorded> {
    ctx.admit(Verb::RecordExit)?;
    let Some(holder) = ctx.holder.clone() else {
        return Err(Error::Invalid(
            "record-exit needs --holder (or SPLICE_HOLDER)".into(),
        ));
    };
    let reads = Reads::subject(id);
    ctx.apply(Verb::RecordExit, &reads, |fresh, _| {
        Ok(plan_exit(&args, &holder, &fresh.subject, &ctx.now)?)
    })
}

/// Record `holder`'s dispatch exit on `bead`.
pub fn plan_exit(
    args: &ExitArgs,
    holder: &str,
    bead: &Bead,
    now: &str,
) -> Result<Change<ExitRecorded>, Refusal> {
    let id = &bead.id;
    if bead.pipeline.lease.as_ref().map(|l| l.holder.as_str()) != Some(holder) {
        return Err(Refusal::NotClaimedBy {
            bead: id.to_string(),
            holder: holder.to_string(),
        });
    }
    let Some(dispatch) = bead
        .pipeline
        .last_dispatch
        .as_ref()
        .filter(|d| d.holder == holder)
    else {
        return Err(Refusal::NoDispatch {
            bead: id.to_string(),
            holder: holder.to_string(),
        });
    };
    let proposed = bead
        .pipeline
        .proposal
        .as_ref()
        .is_some_and(|p| p.step == dispatch.step && p.seq > dispatch.seq);
    let seq = next_seq(bead);
    // A transient end past the step's bound counts as the failed attempt it is, saying so.
    let used_up = args.exit == ExitKind::Transient
        && dispatch.step == bead.pipeline.step
        && bead.transient_since_entry() >= MAX_TRANSIENT;
    let bounded;
    let args = if used_up {
        bounded = ExitArgs {
            exit: ExitKind::Failed,
            cause: Some(format!(
                "{}; a transient failure, but this step's {MAX_TRANSIENT} transient retries \
                 are used up, so it counts as a failed attempt",
                args.cause
                    .as_deref()
                    .unwrap_or("the agent's API was unavailable")
            )),
            ..args.clone()
        };
        &bounded
    } else {
        args
    };
    let mut after = bead.clone();
    if let Some(usage) = &args.usage {
        match after.pipeline.usage.as_deref_mut() {
            Some(total) => total.add(usage),
            None => after.pipeline.usage = Some(Box::new(usage.clone())),
        }
    }
    // The latest dispatch's response stands for its step; one without a response clears it.
    match &args.response {
        Some(r) => after
            .pipeline
            .responses
            .insert(dispatch.step.clone(), r.clone()),
        None => after.pipeline.responses.remove(&dispatch.step),
    };
    after.push_exit(ExitRecord {
        step: dispatch.step.clone(),
        attempt: dispatch.attempt,
        seq,
        exit: args.exit,
        code: args.code,
        cause: args.cause.clone(),
        proposed,
        log: args.log.clone(),
        usage: args.usage.clone(),
        retry_after_s: args
            .retry_after_s
            .filter(|_| args.exit == ExitKind::Transient),
        at: now.to_string(),
    });
    let mut reason = format!(
        "{} attempt {} exited {}",
        dispatch.step,
        dispatch.attempt,
        kind_name(args.exit)
    );
    let (given_back, parked) = settle_attempt(&mut after, dispatch, args, proposed, (seq, now));
    if given_back {
        reason.push_str("; it counts no attempt");
    }
    if parked {
        reason.push_str("; parked");
    }
    let output = ExitRecorded {
        bead: id.to_string(),
        step: dispatch.step.clone(),
        attempt: dispatch.attempt,
        exit: args.exit,
        proposed,
        attempt_given_back: given_back,
        parked,
    };
    Ok(Change::one(after, Some(reason), output))
}

/// For an exit that used no attempt: give back the attempt the claim counted (once), and park
/// the node when its command could not start (a retry would not start it either: a person fixes
/// it). Whether each happened.
fn settle_attempt(
    after: &mut Bead,
    dispatch: &Dispatch,
    args: &ExitArgs,
    proposed: bool,
    (seq, now): (u64, &str),
) -> (bool, bool) {
    // An agent that proposed before its API failed did its work: its attempt stands.
    let worked = proposed && matches!(args.exit, ExitKind::Transient | ExitKind::Unauthorized);
    let given_back = !(args.exit.counts_attempt() || worked)
        && dispatch.attempt > 0
        && after.attempts_on(&dispatch.step) == dispatch.attempt;
    if given_back {
        after
            .pipeline
            .attempts
            .insert(dispatch.step.clone(), dispatch.attempt - 1);
    }
    let parks = match args.exit {
        ExitKind::NotStarted => true,
        ExitKind::Unauthorized => !proposed,
        _ => false,
    };
    let parked = parks && after.pipeline.dead_letter.is_none();
    if parked {
        let why = args
            .cause
            .clone()
            .unwrap_or_else(|| format!("the command of {} could not start", dispatch.step));
        after.park(
            &dispatch.step,
            &format!("{why}; it counted no attempt"),
            seq,
            now,
        );
    }
    (given_back, parked)
}

/// The exit kind as it is written (`not-started`).
fn kind_name(kind: ExitKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Record a pass's envelope as the scope root's `driver_last`.
pub fn record_run(ctx: &Ctx, id: &str, envelope: Value) -> Result<RunRecorded> {
    ctx.apply(Verb::RecordRun, &Reads::subject(id), |fresh, _| {
        Ok(plan_run(envelope, &fresh.subject))
    })
}

/// Keep `envelope` on `bead` as its last run.
pub fn plan_run(envelope: Value, bead: &Bead) -> Change<RunRecorded> {
    let status = envelope.get("status").cloned().unwrap_or(Value::Null);
    let mut after = bead.clone();
    after.pipeline.driver_last = Some(Box::new(envelope));
    let output = RunRecorded {
        bead: bead.id.to_string(),
        recorded: true,
        status: status.clone(),
    };
    Change::one(after, Some(format!("run status {status}")), output)
}

#[cfg(test)]
mod tests {
    use super::{ExitArgs, plan_exit};
    use crate::model::bead::{Dispatch, ExitKind, Lease};
    use crate::model::{Bead, Usage};

    fn dispatched() -> Bead {
        let mut b = Bead::new("sp-t".into(), "t".into(), String::new(), "then");
        b.pipeline.step = "implement".into();
        b.pipeline.attempts.insert("implement", 2);
        b.pipeline.lease = Some(Box::new(Lease {
            holder: "h".into(),
            since: "then".into(),
            credential_sha256: None,
            job: None,
        }));
        b.pipeline.last_dispatch = Some(Box::new(Dispatch {
            step: "implement".into(),
            attempt: 2,
            seq: b.pipeline.seq,
            holder: "h".into(),
            at: "then".into(),
        }));
        b
    }

    fn exit(kind: ExitKind) -> ExitArgs {
        ExitArgs {
            exit: kind,
            code: None,
            cause: Some("could not start `x`: No such file or directory".into()),
            log: None,
            usage: None,
            response: None,
            retry_after_s: None,
        }
    }

    #[test]
    fn an_exit_that_used_no_attempt_gives_it_back_once() {
        let change = plan_exit(&exit(ExitKind::Cancelled), "h", &dispatched(), "now").unwrap();
        let after = &change.beads[0];
        assert_eq!(after.attempts_on("implement"), 1);
        assert!(change.output.attempt_given_back && !change.output.parked);
        assert_eq!(after.pipeline.dead_letter, None, "a cancel parks nothing");
        // Recorded again, it gives nothing more back.
        let again = plan_exit(&exit(ExitKind::Cancelled), "h", after, "now").unwrap();
        assert_eq!(again.beads[0].attempts_on("implement"), 1);
        assert!(!again.output.attempt_given_back);
        // A failure keeps its attempt.
        let failed = plan_exit(&exit(ExitKind::Failed), "h", &dispatched(), "now").unwrap();
        assert_eq!(failed.beads[0].attempts_on("implement"), 2);
    }

    #[test]
    fn a_command_that_could_not_start_parks_the_node_with_its_cause() {
        let change = plan_exit(&exit(ExitKind::NotStarted), "h", &dispatched(), "now").unwrap();
        let after = &change.beads[0];
        assert_eq!(after.attempts_on("implement"), 1);
        let dl = after.pipeline.dead_letter.as_ref().unwrap();
        assert_eq!(
            dl.reason,
            "could not start `x`: No such file or directory; it counted no attempt"
        );
        assert_eq!(after.pipeline.exits[0].exit, ExitKind::NotStarted);
        assert!(change.output.parked);
    }

    #[test]
    fn a_transient_end_counts_no_attempt_until_the_steps_bound() {
        let transient = |cause: &str| ExitArgs {
            cause: Some(cause.into()),
            ..exit(ExitKind::Transient)
        };
        let change = plan_exit(&transient("API Error: 529"), "h", &dispatched(), "now").unwrap();
        let after = &change.beads[0];
        assert_eq!(after.attempts_on("implement"), 1, "given back");
        assert!(change.output.attempt_given_back && !change.output.parked);
        // The step's bound of transient ends: the next one is a failed attempt, saying so.
        let mut bead = dispatched();
        for _ in 0..super::MAX_TRANSIENT {
            bead = plan_exit(&transient("overloaded"), "h", &bead, "now")
                .unwrap()
                .beads
                .remove(0);
            bead.pipeline.attempts.insert("implement", 2);
            bead.pipeline.seq += 1;
        }
        let change = plan_exit(&transient("overloaded"), "h", &bead, "now").unwrap();
        let last = change.beads[0].pipeline.exits.last().unwrap().clone();
        assert_eq!(last.exit, ExitKind::Failed);
        assert!(
            last.cause
                .unwrap()
                .contains("transient retries are used up")
        );
        assert_eq!(change.beads[0].attempts_on("implement"), 2, "it counts");
    }

    #[test]
    fn an_agent_that_cannot_authenticate_parks_at_once_naming_it() {
        let args = ExitArgs {
            cause: Some("the agent ended with an error: Not logged in · Please run /login".into()),
            ..exit(ExitKind::Unauthorized)
        };
        let change = plan_exit(&args, "h", &dispatched(), "now").unwrap();
        let after = &change.beads[0];
        assert_eq!(after.attempts_on("implement"), 1);
        let dl = after.pipeline.dead_letter.as_ref().unwrap();
        assert!(dl.reason.contains("Not logged in"), "{}", dl.reason);
        assert!(change.output.parked);
    }

    #[test]
    fn an_agent_that_proposed_before_its_api_failed_keeps_its_attempt() {
        let mut bead = dispatched();
        bead.pipeline.proposal = Some(Box::new(crate::model::bead::Proposal {
            step: "implement".into(),
            seq: bead.pipeline.seq + 1,
            ..Default::default()
        }));
        for kind in [ExitKind::Transient, ExitKind::Unauthorized] {
            let change = plan_exit(&exit(kind), "h", &bead, "now").unwrap();
            assert!(change.output.proposed);
            assert_eq!(change.beads[0].attempts_on("implement"), 2, "{kind:?}");
            assert!(!change.output.parked, "{kind:?}");
        }
    }

    #[test]
    fn unknown_cost_stays_unknown_and_counts_saturate() {
        let mut total = None;
        let one = |tokens: u64, cost: Option<f64>| Usage {
            input_tokens: tokens,
            cost_usd: cost,
            ..Usage::default()
        };
        Usage::accumulate(&mut total, &one(10, Some(0.5)));
        Usage::accumulate(&mut total, &one(5, None));
        let t = total.clone().unwrap();
        assert_eq!(t.input_tokens, 15);
        assert_eq!(t.cost_usd, None);
        Usage::accumulate(&mut total, &one(u64::MAX, Some(1.0)));
        let t = total.unwrap();
        assert_eq!(t.cost_usd, None);
        assert_eq!(t.input_tokens, u64::MAX);
    }
}
