//! The runner: passes of read → decide → act → exit until the status is not `ready` or a limit
//! is reached. With `jobs` > 1 several dispatches are in flight on their own threads, and a new
//! pass starts whenever one finishes, so checks elsewhere are not held up by a long dispatch.
//! It never waits on another holder's claim: such a node rests `running` and the run returns.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::act::{self, Acted, Finished, RunCtx};
use super::envelope;
use super::events::{Events, Output};
use super::feed::Feed;
use super::interrupt;
use super::snapshot::Identity;
use crate::decide::decide;
use crate::error::Result;
use crate::model::{Action, Counters, Limits, RunStatus};
use crate::store::Store;

/// What the caller asked of this run.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub scope: Option<String>,
    pub max_passes: Option<u64>,
    pub jobs: Option<u32>,
    pub token_budget: Option<u64>,
    pub wall_time_s: Option<u64>,
    /// Decide only: no action is taken, nothing is recorded.
    pub dry_run: bool,
    /// One pass (waiting for the dispatches it starts), then return.
    pub one_pass: bool,
}

/// How a run ended.
#[derive(Clone, Debug)]
pub struct Summary {
    pub run: String,
    pub holder: String,
    pub status: RunStatus,
    pub passes: u64,
    pub dispatches: u64,
    pub tokens: u64,
    pub wall_ms: u64,
    /// Time spent in passes (reading, deciding, acting), not waiting for agents.
    pub overhead_ms: u64,
    /// The last pass's envelope.
    pub envelope: Value,
    /// Ctrl-C or SIGTERM stopped the run.
    pub interrupted: bool,
}

/// This process's host name, for holder identities.
pub fn host() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).replace(':', "_")
}

/// A fresh run id and the holder identity that names this process: `run:<host>:<pid>:<run-id>`.
pub fn identity() -> Result<Identity> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let stamp = crate::clock::now()?.format("%Y%m%dT%H%M%SZ");
    let pid = std::process::id();
    let run = format!("{stamp}-{pid}-{n}");
    Ok(Identity {
        holder: format!("run:{}:{pid}:{run}", host()),
        run,
    })
}

/// Drive passes until the run rests.
pub fn run(store: &Store, opts: &Options, events: &Events) -> Result<Summary> {
    let started = Instant::now();
    let manifest = store.manifest()?;
    let config = store.config()?;
    let who = identity()?;
    let rc = RunCtx {
        store: store.clone(),
        manifest,
        config: config.clone(),
        holder: who.holder.clone(),
        run_id: who.run.clone(),
    };
    let mut feed = Feed::load(store, opts.scope.as_deref(), who.clone())?;
    feed.snapshot.limits = Limits {
        max_passes: opts.max_passes.or(config.limits.max_passes),
        token_budget: opts.token_budget.or(config.limits.token_budget),
        wall_time_s: opts.wall_time_s.or(config.limits.wall_time_s),
        jobs: opts.jobs.or(config.limits.jobs).unwrap_or(1).max(1),
    };
    events.emit(
        "run_start",
        json!({ "run": who.run, "holder": who.holder, "scope": opts.scope, "limits": feed.snapshot.limits }),
        Some(format!("run {} started", who.run)),
    );
    let (tx, rx) = mpsc::channel::<Finished>();
    let mut inflight: BTreeMap<String, (String, u32, Instant)> = BTreeMap::new();
    let mut sum = Summary {
        run: who.run.clone(),
        holder: who.holder.clone(),
        status: RunStatus::Idle,
        passes: 0,
        dispatches: 0,
        tokens: 0,
        wall_ms: 0,
        overhead_ms: 0,
        envelope: Value::Null,
        interrupted: false,
    };
    let mut stalls = 0;
    loop {
        while let Ok(f) = rx.try_recv() {
            finished(&mut sum, &mut inflight, f, events);
        }
        let pass_started = Instant::now();
        if sum.passes > 0
            && let Err(e) = feed.refresh()
        {
            drain(&mut sum, &mut inflight, &rx, events);
            return Err(e);
        }
        feed.refresh_worktrees();
        feed.snapshot.now = crate::clock::now_string()?;
        feed.snapshot.counters = Counters {
            passes: sum.passes,
            tokens: sum.tokens,
            wall_s: started.elapsed().as_secs(),
            idle_passes: 0,
        };
        let decision = decide(&feed.snapshot);
        sum.passes += 1;
        let pass = sum.passes;
        events.emit("pass_start", json!({ "pass": pass }), None);
        let mut acted = Vec::new();
        let mut progressed = false;
        let mut fault = None;
        if !opts.dry_run {
            for action in &decision.actions {
                if interrupt::requested() {
                    break;
                }
                // A run out of budget starts nothing more; a done run only cleans up.
                let allowed = match decision.status {
                    RunStatus::Budget => false,
                    RunStatus::Done => matches!(action, Action::CleanupFanout { .. }),
                    _ => true,
                };
                if !allowed {
                    continue;
                }
                let result = match action {
                    Action::Check { bead, step } => act::check(&rc, bead, step),
                    Action::Dispatch { bead, attempt, .. } => match feed.bead(bead) {
                        Some(b) => act::start_dispatch(&rc, b, *attempt, tx.clone()),
                        None => Ok(Acted::Skipped(format!("{bead} is not in the snapshot"))),
                    },
                    Action::Park { bead, reason, .. } => act::park(&rc, bead, reason),
                    Action::CleanupFanout { children, .. } => act::cleanup_fanout(&rc, children),
                };
                let result = match result {
                    Ok(r) => r,
                    Err(e) => {
                        fault = Some(e);
                        break;
                    }
                };
                match &result {
                    Acted::Done(_) => progressed = true,
                    Acted::Started {
                        bead,
                        step,
                        attempt,
                    } => {
                        progressed = true;
                        sum.dispatches += 1;
                        inflight.insert(bead.clone(), (step.clone(), *attempt, Instant::now()));
                    }
                    Acted::Skipped(_) => {}
                }
                let mut entry = serde_json::to_value(action).unwrap_or(Value::Null);
                if let (Some(obj), Value::Object(r)) = (entry.as_object_mut(), result.to_json()) {
                    obj.extend(r);
                }
                events.emit(
                    "action",
                    json!({ "pass": pass, "action": entry }),
                    Some(envelope::describe_action(action, &result)),
                );
                acted.push(entry);
            }
        }
        let env = envelope::build(&feed.snapshot, &decision, pass, acted, &inflight);
        if !opts.dry_run
            && let Err(e) = envelope::record(&rc, opts.scope.as_deref(), &feed.snapshot, pass, &env)
        {
            fault.get_or_insert(e);
        }
        sum.status = decision.status;
        sum.envelope = env;
        sum.overhead_ms += pass_started.elapsed().as_millis() as u64;
        events.emit(
            "pass_end",
            json!({ "pass": pass, "status": decision.status }),
            None,
        );
        if let Some(e) = fault {
            drain(&mut sum, &mut inflight, &rx, events);
            return Err(e);
        }
        if interrupt::requested() {
            sum.interrupted = true;
            drain(&mut sum, &mut inflight, &rx, events);
            break;
        }
        if opts.dry_run {
            break;
        }
        if opts.one_pass {
            drain(&mut sum, &mut inflight, &rx, events);
            break;
        }
        let only_dispatches = decision
            .actions
            .iter()
            .all(|a| matches!(a, Action::Dispatch { .. }));
        if decision.status == RunStatus::Ready && progressed && !only_dispatches {
            stalls = 0;
            continue;
        }
        if !inflight.is_empty() {
            wait_one(&mut sum, &mut inflight, &rx, events);
            stalls = 0;
            continue;
        }
        if decision.status != RunStatus::Ready {
            break;
        }
        // Ready but nothing moved (every action was refused): look again, but not forever.
        stalls += 1;
        if stalls >= 3 {
            break;
        }
    }
    sum.wall_ms = started.elapsed().as_millis() as u64;
    if sum.interrupted {
        events.emit(
            "interrupted",
            json!({ "run": sum.run }),
            Some("interrupted: dispatches in flight were stopped and their claims released".into()),
        );
    }
    events.emit(
        "result",
        json!({
            "subtype": if matches!(sum.status, RunStatus::Done | RunStatus::Idle) { "success" } else { sum.status.as_str() },
            "is_error": false,
            "interrupted": sum.interrupted,
            "status": sum.status,
            "run": sum.run,
            "num_passes": sum.passes,
            "dispatches": sum.dispatches,
            "tokens": sum.tokens,
            "duration_ms": sum.wall_ms,
            "text": serde_json::to_string(&sum.envelope).unwrap_or_default(),
        }),
        Some(format!(
            "run {} ended: {} after {} passes, {} dispatches",
            sum.run,
            sum.status.as_str(),
            sum.passes,
            sum.dispatches
        )),
    );
    if events.output() == Output::Human {
        envelope::print_human(&sum.envelope);
    }
    Ok(sum)
}

fn finished(
    sum: &mut Summary,
    inflight: &mut BTreeMap<String, (String, u32, Instant)>,
    f: Finished,
    events: &Events,
) {
    inflight.remove(&f.bead);
    sum.tokens += f.tokens();
    let human = format!(
        "{} {} attempt {} exited {:?} in {:.1}s{}",
        f.bead,
        f.step,
        f.attempt,
        f.exit,
        f.elapsed_ms as f64 / 1000.0,
        f.problem
            .as_ref()
            .map_or(String::new(), |p| format!(" ({p})"))
    );
    events.emit(
        "dispatch_end",
        json!({
            "bead": f.bead, "step": f.step, "attempt": f.attempt, "exit": f.exit, "code": f.code,
            "elapsed_ms": f.elapsed_ms, "usage": f.usage, "log": f.log, "problem": f.problem,
        }),
        Some(human),
    );
}

/// Wait for one dispatch to finish, telling a person what is still running now and then.
fn wait_one(
    sum: &mut Summary,
    inflight: &mut BTreeMap<String, (String, u32, Instant)>,
    rx: &Receiver<Finished>,
    events: &Events,
) {
    let mut last_note = Instant::now();
    loop {
        // Short ticks: the dispatch threads see an interrupt themselves; this only reports.
        match rx.recv_timeout(Duration::from_millis(250)) {
            Ok(f) => return finished(sum, inflight, f, events),
            Err(RecvTimeoutError::Timeout) if last_note.elapsed() >= Duration::from_secs(10) => {
                last_note = Instant::now();
                for (bead, (step, attempt, since)) in inflight.iter() {
                    events.emit(
                        "progress",
                        json!({ "bead": bead, "step": step, "attempt": attempt, "elapsed_s": since.elapsed().as_secs() }),
                        Some(format!("… {bead} {step} attempt {attempt} running for {}s", since.elapsed().as_secs())),
                    );
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                inflight.clear();
                return;
            }
        }
    }
}

/// Wait for every dispatch in flight.
fn drain(
    sum: &mut Summary,
    inflight: &mut BTreeMap<String, (String, u32, Instant)>,
    rx: &Receiver<Finished>,
    events: &Events,
) {
    while !inflight.is_empty() {
        wait_one(sum, inflight, rx, events);
    }
}

/// Is the process behind a `run:<host>:<pid>:…` holder alive? `None` when it names another host
/// or is not a runner's holder.
pub fn holder_alive(holder: &str) -> Option<bool> {
    let mut parts = holder.splitn(4, ':');
    if parts.next() != Some("run") {
        return None;
    }
    let (h, pid) = (parts.next()?, parts.next()?.parse::<i32>().ok()?);
    if h != host() || pid <= 0 {
        return None;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    Some(rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}
