//! Building the pass [`Envelope`], writing it to `.splice/runs/<run-id>/pass-NNNN.json`, recording
//! its compact [`RunRecord`] on the scope root (`record-run`), and its lines for a person.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

use super::act::RunCtx;
use super::runner::holder_alive;
use crate::error::Result;
use crate::model::envelope::{
    ActResult, ActionReport, InFlight, LoopReport, NodeReport, RestReport, RunRecord,
};
use crate::model::printable::printable;
use crate::model::{Action, Decision, Envelope, Rest, Snapshot};
use crate::store::atomic;
use crate::transition::record;

use super::advice::{self, Next, Node};

/// A dispatch of this run in flight: its step, attempt and start, and the flag that kills it
/// alone (set when a person closes its node; Ctrl-C sets it too).
#[derive(Clone, Debug)]
pub struct Running {
    pub step: String,
    pub attempt: u32,
    /// Which try of the attempt it is after transient ends ([`crate::model::Bead::retries_at`]):
    /// the heartbeat reads its log.
    pub retry: u32,
    pub since: Instant,
    pub cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// The envelope of one pass.
pub fn build(
    snapshot: &Snapshot,
    decision: &Decision,
    pass: u64,
    actions: Vec<ActionReport>,
    inflight: &BTreeMap<String, Running>,
) -> Envelope {
    let mut nodes = BTreeMap::new();
    let loops = latest_iterations(snapshot);
    let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
    let mut closed = 0u64;
    for (id, node) in &decision.nodes {
        let reason = node.rest.as_ref().map_or("action", Rest::name);
        *reasons.entry(reason.to_string()).or_default() += 1;
        if matches!(node.rest, Some(Rest::Closed)) {
            closed += 1;
            continue;
        }
        let rest = node.rest.clone().map(|rest| RestReport {
            holder_alive: match &rest {
                Rest::Running { died: Some(_), .. } => Some(false),
                Rest::Running { holder, .. } => holder_alive(holder),
                _ => None,
            },
            rest,
        });
        nodes.insert(
            id.to_string(),
            NodeReport {
                step: node.step.to_string(),
                rest,
                looping: loops.get(id.as_str()).cloned(),
            },
        );
    }
    let in_flight = inflight
        .iter()
        .map(|(bead, r)| InFlight {
            bead: bead.clone(),
            step: r.step.clone(),
            attempt: r.attempt,
            elapsed_s: r.since.elapsed().as_secs(),
        })
        .collect();
    Envelope {
        schema_version: super::events::EVENT_SCHEMA,
        run: snapshot.run.clone(),
        holder: snapshot.holder.clone(),
        pass,
        now: snapshot.now.clone(),
        status: decision.status,
        counters: snapshot.counters.clone(),
        limits: snapshot.limits.clone(),
        actions,
        in_flight,
        reasons,
        closed,
        nodes,
    }
}

/// The latest iteration of every node at a loop step (none when the manifest has no loop).
fn latest_iterations(snapshot: &Snapshot) -> BTreeMap<&str, LoopReport> {
    let m = &snapshot.manifest;
    if !m.steps.iter().any(|s| s.loop_.is_some()) {
        return BTreeMap::new();
    }
    snapshot
        .beads
        .iter()
        .filter(|b| m.step(&b.pipeline.step).is_some_and(|s| s.loop_.is_some()))
        .filter_map(|b| {
            let it = b.iterations_since_entry().last()?;
            Some((
                b.id.as_str(),
                LoopReport {
                    iteration: it.state.iteration,
                    state: it.state.clone(),
                    score: it.score,
                    monitor: it.monitor.clone(),
                    effect: it.effect.clone(),
                },
            ))
        })
        .collect()
}

/// Write the pass's envelope to `.splice/runs/<run>/pass-NNNN.json` (atomically).
pub fn write_pass(rc: &RunCtx, env: &Envelope) -> Result<()> {
    let path = pass_file(rc, env.pass);
    let dir = rc.store.runs_dir().join(&rc.run_id);
    std::fs::create_dir_all(&dir).map_err(|e| crate::error::Error::io(&dir, e))?;
    let mut text = serde_json::to_vec_pretty(env).unwrap_or_default();
    text.push(b'\n');
    atomic::replace_file(&path, &text)
}

/// `.splice/runs/<run>/pass-NNNN.json`.
fn pass_file(rc: &RunCtx, pass: u64) -> std::path::PathBuf {
    rc.store
        .runs_dir()
        .join(&rc.run_id)
        .join(format!("pass-{pass:04}.json"))
}

/// Record the run's last envelope, compact, as the scope root's `driver_last` (or the one
/// top-level bead's when there is no scope and exactly one) — once per run, not per pass, so
/// run records stay out of the journal's hot path (the pass files hold every pass).
pub fn record_last(
    rc: &RunCtx,
    scope: Option<&str>,
    snapshot: &Snapshot,
    env: &Envelope,
) -> Result<()> {
    let path = pass_file(rc, env.pass);
    let root = match scope {
        Some(s) => Some(s.to_string()),
        None => {
            let mut tops = snapshot
                .beads
                .iter()
                .filter(|b| b.is_node() && b.parent.is_none());
            match (tops.next(), tops.next()) {
                (Some(only), None) => Some(only.id.to_string()),
                _ => None,
            }
        }
    };
    if let Some(root) = root {
        let compact = RunRecord {
            run: env.run.clone(),
            pass: env.pass,
            status: env.status,
            at: env.now.clone(),
            actions: env.actions.len(),
            reasons: env.reasons.clone(),
            envelope: path
                .strip_prefix(rc.store.dir())
                .unwrap_or(&path)
                .display()
                .to_string(),
        };
        let value = serde_json::to_value(&compact).unwrap_or_default();
        record::record_run(&rc.writer_ctx()?, &root, value)?;
    }
    Ok(())
}

/// One line for a person about an action and how it went.
pub fn describe_action(report: &ActionReport) -> String {
    let what = match &report.action {
        Action::Check { bead, step } => format!("check {bead} {step}"),
        Action::Dispatch {
            bead,
            step,
            attempt,
            ..
        } => format!("dispatch {bead} {step} (attempt {attempt})"),
        Action::Park { bead, step, reason } => format!("park {bead} at {step}: {reason}"),
        Action::Skip { bead, step, reason } => {
            format!("skip {bead} {step} (not applicable): {reason}")
        }
        Action::Escalate {
            bead,
            step,
            iteration,
            rule,
        } => format!("escalate {bead} {step} after iteration {iteration} ({rule})"),
        Action::Rollback {
            bead,
            step,
            iteration,
            restore,
        } => format!("roll back {bead} {step} after iteration {iteration} to iteration {restore}"),
        Action::StepBack {
            bead,
            step,
            iteration,
            ..
        } => format!("step back {bead} {step} after iteration {iteration}"),
        Action::CleanupFanout {
            bead,
            children,
            own,
        } => match (own, children.len()) {
            (true, 0) => format!("clean up after {bead}"),
            (true, n) => format!("clean up after {bead} and {n} child(ren)"),
            (false, n) => format!("clean up {n} worktree(s) under {bead}"),
        },
    };
    match &report.result {
        ActResult::Done { status, .. } => format!("{what}: {status}"),
        ActResult::Started => format!("{what}: started"),
        ActResult::Skipped { reason } => format!("{what}: skipped ({reason})"),
        ActResult::DryRun => format!("{what}: not carried out (dry run)"),
    }
}

/// The final envelope for a person: the status, and for every open node why it rests and what a
/// person can do next. `checks` answers a node's [`advice::escalated_check`] from the beads the
/// last pass decided on (the envelope does not carry them).
pub fn human<'a>(env: &'a Envelope, checks: impl Fn(&str) -> Option<&'a str>) -> String {
    let rests = env
        .nodes
        .iter()
        .filter_map(|(id, n)| Some((id.as_str(), &n.rest.as_ref()?.rest)));
    let headline = advice::headline(env.status, rests, holder_alive);
    let mut out = format!(
        "status: {} — {}\n",
        env.status.as_str(),
        printable(&headline)
    );
    for (id, node) in &env.nodes {
        let who = Node {
            id,
            step: &node.step,
            review: None,
            max_attempts: None,
            escalated_check: checks(id),
            absent: Vec::new(),
            clear_key: None,
        };
        let next = match &node.rest {
            Some(r) => advice::for_rest(&who, &r.rest, holder_alive),
            None => match env.actions.iter().find(|a| a.action.bead() == id) {
                Some(a) => Next {
                    text: describe_action(a),
                    command: None,
                },
                None => Next::default(),
            },
        };
        // The step and the reason quote the bead: escaped.
        let (step, text) = (printable(&node.step), printable(&next.text));
        let _ = writeln!(out, "  {id:<16} {step:<16} {text}");
        if let Some(cmd) = next.command.as_deref().filter(|c| *c != "splice run") {
            let _ = writeln!(out, "  {:<16} {:<16} → {}", "", "", printable(cmd));
        }
    }
    if env.closed > 0 {
        let _ = writeln!(out, "  ({} closed)", env.closed);
    }
    out
}
