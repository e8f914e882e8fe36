//! The runner: passes of read → decide → act → record until the run rests. It carries out the
//! decision's actions as given and adds no policy of its own: `decide` says when the run is done,
//! over budget, stalled or resting, and which actions stand.
//!
//! With `jobs` > 1 several dispatches are in flight on their own threads. After a pass whose
//! actions changed something other than starting dispatches, the next pass starts at once;
//! otherwise the runner waits for a dispatch to finish. A pass whose actions all came to nothing
//! with nothing in flight is counted (`counters.idle_passes`), and `decide` calls the run
//! `stalled` after a few. It never waits on another holder's claim: such a node rests `running`
//! and the run returns. While it waits it reads the journal's new records now and then, and kills
//! the dispatch of a node a person closed meanwhile (`splice close`/`cancel`), the others going
//! on.
//!
//! A node resting `backoff` (waiting before its step's next attempt) keeps the run `ready`: with
//! dispatches in flight the runner waits for one of them at most until the decision's `wake_at`;
//! with none, it sleeps until then — at most until `--wall-time` is up, and Ctrl-C or SIGTERM
//! ends the sleep at once (exit 130, as ever). Under a fixed clock (`SPLICE_NOW`) the run's clock
//! goes on by the time it slept, so the retry comes due.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use super::act::{self, RunCtx};
use super::envelope::{self, Running};
use super::events::{Event, Events, Output};
use super::feed::Feed;
use super::heartbeat::{self, Heartbeat};
pub use super::holder::{holder_alive, host, identity};
use super::interrupt;
use super::job::{self, Finished};
use super::looping;
use super::reclaim::Reclaim;
use super::start;
use crate::decide::decide;
use crate::error::{Error, Result};
use crate::model::envelope::{ActResult, ActionReport};
use crate::model::executor::ExecutorKind;
use crate::model::{Action, Counters, Decision, Envelope, RunStatus};
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
    /// `[agent]` for this run only, in place of config.toml's (`splice exec --agent sim`).
    pub agent: Option<crate::model::config::AgentConfig>,
    /// A loop step's iteration limit in place of its `max_iterations` (`--max-turns`, when
    /// positive).
    pub max_turns: Option<u32>,
    /// Keep a loop node's snapshot refs when its checkouts are removed (`--keep-snapshots`).
    pub keep_snapshots: bool,
    /// Release the claims of runners found dead on this host, as the person's act
    /// (`--reclaim-dead`; `[limits] reclaim_dead = true` asks the same of every run).
    pub reclaim_dead: bool,
    /// No person answers during this run (`splice exec`): a node the pass monitor would ask
    /// about is parked instead.
    pub no_person: bool,
    /// Where to hand the run's [`Presence`](crate::authority::Presence) once it is recorded:
    /// the cockpit (`splice drive`) records there the editor or pager it starts for a person
    /// while a run of its own is live, so that process is the person's, not a dispatch.
    pub presence: Option<Sender<Arc<crate::authority::Presence>>>,
}

/// How a run ended.
#[derive(Clone, Debug)]
pub struct Summary {
    pub run: String,
    pub holder: String,
    pub status: RunStatus,
    /// The passes the run took: a pass whose decision is `budget` (a limit spent, so it starts
    /// nothing) is not one of them — `--max-passes 3` takes 3, though a fourth read finds them
    /// spent and ends the run.
    pub passes: u64,
    pub dispatches: u64,
    pub tokens: u64,
    /// What the run's dispatches used, summed: tokens and cost (`None`: none reported usage).
    pub usage: Option<crate::model::Usage>,
    pub wall_ms: u64,
    /// Time spent in passes (reading, deciding, acting), not waiting for agents.
    pub overhead_ms: u64,
    /// The last pass's envelope.
    pub envelope: Option<Envelope>,
    /// Ctrl-C or SIGTERM stopped the run.
    pub interrupted: bool,
}

/// Drive passes until the run rests.
pub fn run(store: &Store, opts: &Options, events: &Events) -> Result<Summary> {
    let mut run = Run::start(store, opts, events)?;
    loop {
        run.collect_finished();
        if let Some(panic) = run.panicked.take() {
            run.drain();
            return Err(Error::Internal(panic));
        }
        let pass = match run.pass() {
            Ok(p) => p,
            Err(e) => {
                run.drain();
                return Err(e);
            }
        };
        if interrupt::requested() {
            run.sum.interrupted = true;
            run.drain();
            break;
        }
        if opts.dry_run {
            break;
        }
        if opts.one_pass {
            run.drain();
            break;
        }
        if pass.status == RunStatus::Ready && pass.changed {
            run.idle_passes = 0;
            continue;
        }
        if !run.inflight.is_empty() {
            run.wait_one(pass.wake);
            run.idle_passes = 0;
            continue;
        }
        if pass.status != RunStatus::Ready {
            break;
        }
        match pass.wake {
            // Nothing to do but wait for a node's next attempt.
            Some(wait) if !pass.acted => run.back_off(wait),
            // Ready, yet every action came to nothing and nothing is in flight: say so to decide.
            _ => run.idle_passes += 1,
        }
    }
    if let Some(panic) = run.panicked.take() {
        return Err(Error::Internal(panic));
    }
    if !opts.dry_run
        && let Some(env) = &run.sum.envelope
    {
        envelope::record_last(&run.rc, opts.scope.as_deref(), &run.feed.snapshot, env)?;
    }
    Ok(run.finish())
}

/// What one pass came to.
struct Pass {
    status: RunStatus,
    /// An action other than a dispatch changed the state.
    changed: bool,
    /// The decision had actions.
    acted: bool,
    /// How long until a node resting `backoff` may start its next attempt (the decision's
    /// `wake_at`, from the snapshot's `now`).
    wake: Option<Duration>,
}

/// A run in progress.
struct Run<'a> {
    rc: RunCtx,
    opts: &'a Options,
    events: &'a Events,
    feed: Feed,
    started: Instant,
    done_tx: Sender<Finished>,
    done_rx: Receiver<Finished>,
    inflight: BTreeMap<String, Running>,
    /// Every pass so far, the ones that found a limit spent too: it numbers the passes (events,
    /// `pass-NNNN.json`) and is the snapshot's `counters.passes`. [`Summary::passes`] counts
    /// only those within the limits.
    reads: u64,
    idle_passes: u64,
    /// A dispatch thread panicked: the run stops (exit 2) once every dispatch has ended.
    panicked: Option<String>,
    /// Dead runners' claims released before each pass decides (`--reclaim-dead`).
    reclaim: Option<Reclaim>,
    sum: Summary,
}

impl<'a> Run<'a> {
    fn start(store: &Store, opts: &'a Options, events: &'a Events) -> Result<Run<'a>> {
        let started = Instant::now();
        let config = start::config(store, opts)?;
        let manifest = store.manifest()?;
        // Before anything is claimed: every command the run may start can be found, but those
        // of optional steps, which the run skips.
        let unavailable = match (opts.dry_run, config.executor.kind()) {
            (true, _) => None,
            (false, ExecutorKind::Local) => Some(super::commands::check_all(&config, &manifest)?),
            (false, ExecutorKind::Slurm) => {
                Some(super::commands::check_all_in_job(&config, &manifest)?)
            }
        };
        let who = identity()?;
        let mut rc = RunCtx::new(store, manifest, config.clone(), &who)?;
        if !opts.dry_run && config.executor.kind() == ExecutorKind::Local {
            super::commands::check_builtin_flags(&config, &rc.manifest, rc.sandbox.is_ok())?;
        }
        rc.max_turns = opts.max_turns.filter(|n| *n > 0);
        rc.keep_snapshots = opts.keep_snapshots;
        if config.executor.kind() == ExecutorKind::Slurm && !opts.dry_run {
            super::start::shared_root(store, &config)?;
            rc.poller = Some(Arc::new(super::slurm::Poller::spawn(rc.clone())));
        }
        if let Some(tx) = &opts.presence {
            let _ = tx.send(rc.presence.clone());
        }
        let mut feed = Feed::load(store, opts.scope.as_deref(), who.clone())?;
        if let Some(unavailable) = unavailable {
            feed.snapshot.unavailable = unavailable;
        }
        feed.snapshot.limits = start::limits(opts, &config, feed.snapshot.limits.backoff_s);
        if !opts.dry_run {
            events.record_to(&store.runs_dir().join(&who.run))?;
            start::prune_runs(&store.runs_dir(), config.runs.keep(), &who.run)?;
            start::sweep_records(store, opts.scope.as_deref(), &feed.snapshot);
        }
        let reclaim = match opts.dry_run {
            true => None,
            false => Reclaim::new(opts.reclaim_dead, &config),
        };
        events.emit(&Event::RunStart {
            run: who.run.clone(),
            holder: who.holder.clone(),
            scope: opts.scope.clone(),
            limits: feed.snapshot.limits.clone(),
            sandbox: super::events::Sandboxing::of(&rc.sandbox),
        });
        start::warn_unsandboxed(&rc.sandbox, events);
        start::warn_uncommitted(store, events);
        start::warn_unavailable(&feed.snapshot.unavailable, events);
        let (done_tx, done_rx) = mpsc::channel();
        let mut run = Run {
            rc,
            opts,
            events,
            feed,
            started,
            done_tx,
            done_rx,
            inflight: BTreeMap::new(),
            reads: 0,
            idle_passes: 0,
            panicked: None,
            reclaim,
            sum: Summary {
                run: who.run,
                holder: who.holder,
                status: RunStatus::Idle,
                passes: 0,
                dispatches: 0,
                tokens: 0,
                usage: None,
                wall_ms: 0,
                overhead_ms: 0,
                envelope: None,
                interrupted: false,
            },
        };
        run.adopt_jobs();
        Ok(run)
    }

    /// A Slurm run takes over the jobs a dead runner left (`adopt-job`) and counts them in
    /// flight, as if it had dispatched them.
    fn adopt_jobs(&mut self) {
        let Some(poller) = self.rc.poller.clone() else {
            return;
        };
        let beads = &self.feed.snapshot.beads;
        for a in super::slurm::adopt_at_start(&self.rc, &poller, beads, &self.done_tx) {
            let retry = retries(beads, &a.bead, a.attempt);
            self.events.emit(&Event::Warning {
                text: format!(
                    "adopted the slurm job of {} {} attempt {} from a runner that died",
                    a.bead, a.step, a.attempt
                ),
            });
            self.inflight.insert(
                a.bead,
                Running {
                    step: a.step,
                    attempt: a.attempt,
                    retry,
                    since: Instant::now(),
                    cancel: a.cancel,
                },
            );
        }
    }

    /// One pass: refresh the snapshot, decide, act, record the envelope.
    fn pass(&mut self) -> Result<Pass> {
        let pass_started = Instant::now();
        if self.reads > 0 {
            self.feed.refresh()?;
        }
        self.feed.refresh_worktrees();
        self.feed.refresh_targets();
        self.feed.refresh_holders();
        if let Some(reclaim) = &mut self.reclaim
            && reclaim.pass(&self.rc, &self.feed.snapshot, self.events) > 0
        {
            self.feed.refresh()?;
            self.feed.refresh_holders();
        }
        let snap = &mut self.feed.snapshot;
        snap.now = self.rc.now()?;
        snap.counters = Counters {
            passes: self.reads,
            tokens: self.sum.tokens,
            wall_s: self.started.elapsed().as_secs(),
            idle_passes: self.idle_passes,
        };
        let decision = decide(snap);
        self.reads += 1;
        if decision.status != RunStatus::Budget {
            self.sum.passes += 1;
        }
        let pass = self.reads;
        self.events.emit(&Event::PassStart { pass });
        let (reports, outcome, fault) = self.act(pass, &decision);
        let env = envelope::build(
            &self.feed.snapshot,
            &decision,
            pass,
            reports,
            &self.inflight,
        );
        let recorded = if self.opts.dry_run {
            Ok(())
        } else {
            envelope::write_pass(&self.rc, &env)
        };
        self.sum.status = decision.status;
        self.sum.envelope = Some(env);
        self.sum.overhead_ms += elapsed_ms(pass_started);
        self.events.emit(&Event::PassEnd {
            pass,
            status: decision.status,
        });
        if let Some(e) = fault {
            return Err(e);
        }
        recorded?;
        Ok(Pass {
            status: decision.status,
            acted: !decision.actions.is_empty(),
            wake: decision
                .wake_at
                .as_deref()
                .and_then(|at| seconds_between(&self.feed.snapshot.now, at)),
            ..outcome
        })
    }

    /// Carry out the decision's actions in order. A fault stops the pass (it is returned after
    /// the envelope is written); a refusal only skips its action.
    fn act(&mut self, pass: u64, decision: &Decision) -> (Vec<ActionReport>, Pass, Option<Error>) {
        let mut reports = Vec::with_capacity(decision.actions.len());
        let mut outcome = Pass {
            status: decision.status,
            changed: false,
            acted: false,
            wake: None,
        };
        for action in &decision.actions {
            if interrupt::requested() {
                break;
            }
            let cancel = Arc::new(AtomicBool::new(false));
            let result = if self.opts.dry_run {
                Ok(ActResult::DryRun)
            } else {
                self.carry_out(action, &cancel)
            };
            let result = match result {
                Ok(r) => r,
                Err(e) => return (reports, outcome, Some(e)),
            };
            match (&result, action) {
                (
                    ActResult::Started,
                    Action::Dispatch {
                        bead,
                        step,
                        attempt,
                        ..
                    },
                ) => {
                    self.sum.dispatches += 1;
                    let retry = retries(&self.feed.snapshot.beads, bead, *attempt);
                    self.inflight.insert(
                        bead.clone(),
                        Running {
                            step: step.clone(),
                            attempt: *attempt,
                            retry,
                            since: Instant::now(),
                            cancel,
                        },
                    );
                }
                (ActResult::Done { .. }, _) => outcome.changed = true,
                _ => {}
            }
            let report = ActionReport {
                action: action.clone(),
                result,
            };
            self.events.emit(&Event::Action {
                pass,
                action: report.clone(),
            });
            reports.push(report);
        }
        (reports, outcome, None)
    }

    fn carry_out(&self, action: &Action, cancel: &Arc<AtomicBool>) -> Result<ActResult> {
        let rc = &self.rc;
        match action {
            Action::Check { bead, step } => act::check(rc, bead, step),
            Action::Dispatch {
                bead,
                attempt,
                target,
                ..
            } => match self.feed.bead(bead) {
                Some(b) => {
                    let signals = (self.done_tx.clone(), cancel.clone());
                    job::start_dispatch(rc, b, *attempt, target, signals)
                }
                None => Ok(ActResult::Skipped {
                    reason: format!("{bead} is not in the snapshot"),
                }),
            },
            Action::Park { bead, reason, .. } => act::park(rc, bead, reason),
            Action::Skip { bead, step, reason } => act::skip(rc, bead, step, reason),
            Action::Escalate {
                bead,
                step,
                iteration,
                rule,
            } => looping::escalate(rc, bead, step, *iteration, rule),
            Action::Rollback {
                bead,
                step,
                iteration,
                restore,
            } => looping::rollback(rc, bead, step, *iteration, *restore),
            Action::StepBack {
                bead,
                step,
                iteration,
                reason,
            } => looping::step_back(rc, bead, step, *iteration, reason),
            // A node cancelled while its dispatch ran: that dispatch is still ending in the
            // worktree; a later pass removes it.
            Action::CleanupFanout { bead, own, .. } if *own && self.inflight.contains_key(bead) => {
                Ok(ActResult::Skipped {
                    reason: format!("{bead}'s dispatch is still ending in its worktree"),
                })
            }
            Action::CleanupFanout {
                bead,
                children,
                own,
            } => act::cleanup_fanout(rc, bead, children, *own),
        }
    }

    /// Take in every dispatch that has finished, without waiting.
    fn collect_finished(&mut self) {
        while let Ok(f) = self.done_rx.try_recv() {
            self.finished(f);
        }
    }

    fn finished(&mut self, f: Finished) {
        self.inflight.remove(&f.bead);
        if let Some(panic) = &f.panic {
            self.panicked
                .get_or_insert_with(|| format!("{} {}: {panic}", f.bead, f.step));
        }
        self.sum.tokens = self.sum.tokens.saturating_add(f.tokens());
        if let Some(u) = &f.usage {
            crate::model::Usage::accumulate(&mut self.sum.usage, u);
        }
        if let Some(it) = &f.iteration {
            self.events.emit(&Event::Iteration {
                bead: it.bead.clone(),
                step: it.step.clone(),
                iteration: it.iteration,
                state: it.state.clone(),
                score: it.score,
                monitor: it.monitor.clone(),
            });
        }
        for text in &f.warnings {
            self.events.emit(&Event::Warning { text: text.clone() });
        }
        self.events.emit(&Event::DispatchEnd {
            bead: f.bead,
            step: f.step,
            attempt: f.attempt,
            exit: f.exit,
            code: f.code,
            cause: f.cause,
            elapsed_ms: f.elapsed_ms,
            usage: f.usage,
            log: f.log,
            problem: f.problem,
        });
    }

    /// Kill the dispatches of nodes a person closed while they ran (`splice close`/`cancel`):
    /// the work is no longer wanted, and the dispatch's credential stopped working with its
    /// claim. The feed is read again first.
    fn stop_closed(&mut self) {
        if self.inflight.is_empty() || self.feed.refresh().is_err() {
            return;
        }
        for (bead, running) in &self.inflight {
            let closed = self.feed.bead(bead).is_some_and(|b| b.is_closed());
            if closed && !running.cancel.swap(true, Ordering::Relaxed) {
                self.events.emit(&Event::Warning {
                    text: format!("{bead} was closed while its dispatch ran; killing the dispatch"),
                });
            }
        }
    }

    /// Wait for one dispatch to finish (or, with `wake`, at most that long: a node's next
    /// attempt comes due), telling a person every 10 s what is still running and what its agent
    /// is doing ([`heartbeat`]), and killing the dispatch of a node closed meanwhile
    /// ([`Run::stop_closed`]).
    fn wait_one(&mut self, wake: Option<Duration>) {
        let mut heartbeat = Heartbeat::new();
        let deadline = wake.map(|w| Instant::now() + w);
        let mut last_read = Instant::now();
        self.stop_closed();
        loop {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return;
            }
            // Short ticks: the dispatch threads see an interrupt themselves; this only reports.
            if last_read.elapsed() >= Duration::from_secs(1) {
                last_read = Instant::now();
                self.stop_closed();
            }
            match self.done_rx.recv_timeout(Duration::from_millis(250)) {
                Ok(f) => return self.finished(f),
                Err(RecvTimeoutError::Timeout) if heartbeat.due() => heartbeat::beat(
                    self.events,
                    &self.rc.store.runs_dir(),
                    &self.rc.run_id,
                    &self.inflight,
                ),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    self.inflight.clear();
                    return;
                }
            }
        }
    }

    /// Wait for every dispatch in flight.
    fn drain(&mut self) {
        while !self.inflight.is_empty() {
            self.wait_one(None);
        }
    }

    /// Nothing is in flight and a node waits before its next attempt: sleep `wait`, at most
    /// until the run's wall time is up, waking at once on Ctrl-C or SIGTERM. The run's clock
    /// goes on by the time slept.
    fn back_off(&mut self, wait: Duration) {
        let mut wait = wait;
        if let Some(cap) = self.feed.snapshot.limits.wall_time_s {
            wait = wait.min(Duration::from_secs(cap).saturating_sub(self.started.elapsed()));
        }
        self.events.emit(&Event::Waiting {
            wait_s: wait.as_secs(),
        });
        let from = Instant::now();
        while from.elapsed() < wait && !interrupt::requested() {
            std::thread::sleep((wait - from.elapsed()).min(Duration::from_millis(100)));
        }
        self.rc.slept(from.elapsed());
    }

    /// The final events, and the summary.
    fn finish(mut self) -> Summary {
        let sum = &mut self.sum;
        sum.wall_ms = elapsed_ms(self.started);
        if sum.interrupted {
            self.events.emit(&Event::Interrupted {
                run: sum.run.clone(),
            });
        }
        let text = sum
            .envelope
            .as_ref()
            .and_then(|e| serde_json::to_string(e).ok())
            .unwrap_or_default();
        self.events.emit(&Event::Result {
            subtype: match sum.status {
                RunStatus::Done | RunStatus::Idle => "success",
                other => other.as_str(),
            }
            .to_string(),
            is_error: false,
            interrupted: sum.interrupted,
            status: sum.status,
            run: sum.run.clone(),
            num_passes: sum.passes,
            dispatches: sum.dispatches,
            tokens: sum.tokens,
            cost_usd: sum.usage.as_ref().and_then(|u| u.cost_usd),
            known_cost_usd: sum.usage.as_ref().and_then(|u| u.known_cost_usd),
            cost: sum.usage.as_ref().map(crate::model::Usage::cost_text),
            duration_ms: sum.wall_ms,
            text,
        });
        if self.events.output() == Output::Human
            && let Some(env) = &sum.envelope
        {
            // The few escalated checks, once: a campaign has thousands of nodes.
            let checks: BTreeMap<&str, &str> = (self.feed.snapshot.beads.iter())
                .filter_map(|b| Some((b.id.as_str(), super::advice::escalated_check(b)?)))
                .collect();
            let text = envelope::human(env, |id| checks.get(id).copied());
            super::events::out(&text);
        }
        self.sum
    }
}

/// The time from `from` to `to` (RFC 3339), when `to` is later; at least a second, so a run
/// never spins on a time its clock shows as the same second.
fn seconds_between(from: &str, to: &str) -> Option<Duration> {
    let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    let secs = (parse(to)? - parse(from)?).num_seconds();
    Some(Duration::from_secs(u64::try_from(secs).ok()?.max(1)))
}

fn elapsed_ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The retry of `bead`'s `attempt` a dispatch made now is ([`crate::model::Bead::retries_at`]).
fn retries(beads: &[crate::model::Bead], bead: &str, attempt: u32) -> u32 {
    beads
        .iter()
        .find(|b| b.id == bead)
        .map_or(0, |b| b.retries_at(attempt))
}
