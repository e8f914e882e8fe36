//! A dispatch: claim the node for it, run the agent's command on its own thread in the node's
//! worktree, then record its exit and release the claim whatever happened. The runner hears back
//! through a [`Finished`] on its channel; a panic in the thread is caught and reported, so the
//! runner never waits for a dispatch forever.
//!
//! Each dispatch gets a fresh credential: its sha256 goes on the claim, the secret into that
//! dispatch's environment only. A dispatch never goes into a worktree a live process still works
//! in (one left behind by a killed runner's agent, or a person's shell): it waits a moment, then
//! is skipped with the process named.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use crate::authority::Credential;
use crate::error::{Error, Result};
use crate::exec::{self, usage};
use crate::model::bead::{DeliveryMethod, ExitKind};
use crate::model::envelope::ActResult;
use crate::model::{Bead, Step};
use crate::policy::Lineage;
use crate::process::procfs;
use crate::transition::{self, Ctx, claim, record};
use crate::worktree;

mod prepare;

pub(super) use prepare::{Prepared, dispatch_sandbox};

use super::act::{RunCtx, refusal_is_skip};

/// How long a dispatch waits for the processes still working in its worktree to end.
const WORKTREE_GRACE: Duration = Duration::from_secs(1);

/// A finished dispatch, reported by its thread.
#[derive(Debug)]
pub struct Finished {
    pub bead: String,
    pub step: String,
    pub attempt: u32,
    pub exit: ExitKind,
    pub code: Option<i32>,
    /// Why it ended so, in a line (recorded on the bead with the exit).
    pub cause: Option<String>,
    pub elapsed_ms: u64,
    pub usage: Option<usage::Usage>,
    pub log: Option<PathBuf>,
    /// The dispatch's final response, for the step's result branches.
    pub response: Option<crate::model::bead::StepResponse>,
    /// A transient end's wait the agent's API asked for.
    pub retry_after_s: Option<u64>,
    /// What went wrong around the dispatch (preparing it, or recording its exit).
    pub problem: Option<String>,
    /// The dispatch's thread panicked (a bug in splice): the run must stop, with exit 2.
    pub panic: Option<String>,
    /// A loop step's iteration, measured and recorded after the dispatch.
    pub iteration: Option<crate::transition::loops::Iterated>,
    /// What a person should know that is not the dispatch's failure (a memory file left out).
    pub warnings: Vec<String>,
}

impl Finished {
    pub(super) fn new(bead: String, step: String, attempt: u32) -> Finished {
        Finished {
            bead,
            step,
            attempt,
            exit: ExitKind::Error,
            code: None,
            cause: None,
            elapsed_ms: 0,
            usage: None,
            log: None,
            response: None,
            retry_after_s: None,
            problem: None,
            panic: None,
            iteration: None,
            warnings: Vec::new(),
        }
    }

    /// Note a panic caught while `doing` something.
    fn panicked(&mut self, payload: &(dyn std::any::Any + Send), doing: &str) {
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        let what = format!("the dispatch thread panicked while {doing}: {text}");
        self.problem.get_or_insert_with(|| what.clone());
        self.panic = Some(what);
    }

    pub fn tokens(&self) -> u64 {
        self.usage.as_ref().map_or(0, usage::Usage::budget_tokens)
    }
}

/// The intent the steps under `root` receive.
fn intent_of(root: &Bead) -> String {
    crate::model::intent::of(
        root.pipeline.intent.as_deref(),
        &root.title,
        &root.description,
    )
}

/// Claim the node for a dispatch in its worktree (branched from `target` when new) and start it
/// on a thread; `done` hears when it finishes. Setting `cancel` kills that dispatch alone (the
/// runner sets it when a person closes the node; Ctrl-C and SIGTERM reach it through it too).
pub fn start_dispatch(
    rc: &RunCtx,
    bead: &Bead,
    attempt: u32,
    target: &str,
    (done, cancel): (Sender<Finished>, Arc<AtomicBool>),
) -> Result<ActResult> {
    let step = transition::current_step(&rc.manifest, bead)?.clone();
    let ancestors = transition::ancestors_unlocked(&rc.store, bead)?;
    let branch = worktree::current_branch(rc.store.repo());
    let lineage = Lineage::new(&ancestors, transition::defaults(&rc.config, &branch));
    if let Some(busy) = in_use(&worktree::node_path(&rc.store.worktrees_dir(), &bead.id)) {
        return Ok(ActResult::Skipped { reason: busy });
    }
    let wt = match worktree::ensure(rc.store.repo(), &rc.store.worktrees_dir(), &bead.id, target) {
        Ok(wt) => wt,
        // Its checkout is not one splice can trust (an agent replaced it, or pointed its `.git`
        // elsewhere): the node parks for a person, naming it; the run goes on with the others.
        Err(e @ Error::BadFile { .. }) => {
            let reason = format!("its checkout cannot be used: {e}");
            return super::act::park(rc, &bead.id, &reason);
        }
        Err(e) => return Err(e),
    };
    let head = wt.head.clone();
    let ctx = Ctx {
        expect_seq: Some(bead.pipeline.seq),
        ..rc.writer_ctx()?
    };
    let credential = Credential::new()?;
    let hash = credential.sha256();
    if let Err(e) = claim::claim_for_dispatch(
        &ctx,
        &bead.id,
        &rc.holder,
        Some(&head),
        (&hash, rc.max_turns),
    ) {
        return refusal_is_skip(Err(e));
    }
    let job = Job {
        cancel,
        credential: Some(credential),
        delivery: lineage.delivery(bead),
        target: target.to_string(),
        rc: rc.clone(),
        bead: bead.id.to_string(),
        step,
        attempt,
        worktree: wt.path,
        parent: lineage.parent().cloned(),
        root_id: lineage.root(bead).id.to_string(),
        intent: intent_of(lineage.root(bead)),
        warnings: Default::default(),
    };
    if let Some(poller) = &rc.poller {
        super::slurm::start(job, done, poller.clone());
        return Ok(ActResult::Started);
    }
    let (id, step, attempt) = (job.bead.clone(), job.step.name.clone(), job.attempt);
    std::thread::spawn(move || {
        // `Job::run` catches a panic of the dispatch itself; this catches one in recording it,
        // so the runner always hears back (it would otherwise wait for this thread forever).
        let finished = catch_unwind(AssertUnwindSafe(|| job.run())).unwrap_or_else(|panic| {
            let mut f = Finished::new(id, step, attempt);
            f.panicked(&*panic, "recording its exit");
            f
        });
        let _ = done.send(finished);
    });
    Ok(ActResult::Started)
}

/// Why a dispatch into the worktree at `path` must not start: the live processes still working
/// in it once [`WORKTREE_GRACE`] has passed (processes being killed get that long to go).
fn in_use(path: &Path) -> Option<String> {
    if !path.is_dir() {
        return None;
    }
    let deadline = Instant::now() + WORKTREE_GRACE;
    loop {
        let users = procfs::users_of(path);
        if users.is_empty() {
            return None;
        }
        if Instant::now() >= deadline {
            let named: Vec<String> = users
                .iter()
                .take(3)
                .map(|u| format!("pid {} ({})", u.pid, u.command))
                .collect();
            return Some(format!(
                "worktree {} is in use by {}; no dispatch goes into it until they end",
                path.display(),
                named.join(", ")
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// More environment for a dispatch: (name, value) pairs.
pub(super) type Env = Vec<(String, String)>;

pub(super) struct Job {
    pub(super) rc: RunCtx,
    /// Kills this dispatch: set by the runner, or relayed from Ctrl-C ([`relay_interrupt`]).
    pub(super) cancel: Arc<AtomicBool>,
    /// The dispatch's credential (only its hash is on the claim); `None` for a Slurm job this
    /// runner adopted, which it never dispatched.
    pub(super) credential: Option<Credential>,
    delivery: DeliveryMethod,
    /// The integration target, for the prompt's `{{target}}`.
    target: String,
    pub(super) bead: String,
    pub(super) step: Step,
    pub(super) attempt: u32,
    pub(super) worktree: PathBuf,
    parent: Option<Bead>,
    root_id: String,
    /// The request's intent, for the prompt's `{{intent}}` (`model::intent::of` its root).
    intent: String,
    /// What a person should know of the dispatch that is not its failure (a memory file left
    /// out): shown in the run's progress when it ends.
    warnings: std::sync::Mutex<Vec<String>>,
}

impl Job {
    /// A Slurm job a dead runner dispatched and this one adopted: enough of a [`Job`] to record
    /// its end.
    pub(super) fn adopted(
        rc: &RunCtx,
        bead: &Bead,
        attempt: u32,
        cancel: Arc<AtomicBool>,
    ) -> Result<Job> {
        let step = transition::current_step(&rc.manifest, bead)?.clone();
        let ancestors = transition::ancestors_unlocked(&rc.store, bead)?;
        let branch = worktree::current_branch(rc.store.repo());
        let lineage = Lineage::new(&ancestors, transition::defaults(&rc.config, &branch));
        Ok(Job {
            cancel,
            credential: None,
            delivery: lineage.delivery(bead),
            target: String::new(),
            rc: rc.clone(),
            bead: bead.id.to_string(),
            step,
            attempt,
            worktree: worktree::node_path(&rc.store.worktrees_dir(), &bead.id),
            parent: lineage.parent().cloned(),
            root_id: lineage.root(bead).id.to_string(),
            intent: intent_of(lineage.root(bead)),
            warnings: Default::default(),
        })
    }

    fn run(self) -> Finished {
        let started = Instant::now();
        let mut finished = Finished::new(self.bead.clone(), self.step.name.clone(), self.attempt);
        // A panic in the dispatch is a bug in splice: the exit is still recorded and the claim
        // released below, and the runner stops the run.
        match catch_unwind(AssertUnwindSafe(|| self.dispatch())) {
            Ok(Ok(result)) => {
                finished.exit = result.exit;
                finished.code = result.code;
                finished.cause = result.cause.map(|cause| self.with_hint(result.exit, cause));
                finished.usage = result.usage;
                finished.log = Some(result.log);
                finished.response = result.response;
                finished.retry_after_s = result.retry_after_s;
            }
            Ok(Err(e)) => {
                finished.cause = Some(format!("splice could not start it: {e}"));
                finished.problem = Some(e.to_string());
            }
            Err(panic) => finished.panicked(&*panic, "dispatching"),
        }
        self.conclude(finished, started)
    }

    /// After the dispatch: measure a loop step's iteration, then record the exit and release
    /// the claim, whatever happened.
    pub(super) fn conclude(&self, mut finished: Finished, started: Instant) -> Finished {
        let rc = &self.rc;
        finished.warnings.extend(std::mem::take(
            &mut *self.warnings.lock().unwrap_or_else(|p| p.into_inner()),
        ));
        let imported =
            worktree::quarantine::leave(rc.store.repo(), &rc.store.worktrees_dir(), &self.bead);
        let unimported = imported
            .err()
            .map(|e| format!("its commits were not imported: {e}"));
        if let Some(why) = &unimported {
            finished.problem.get_or_insert_with(|| why.clone());
        }
        self.measure_iteration(&mut finished);
        finished.elapsed_ms = started.elapsed().as_millis() as u64;
        if self.cancel.load(Ordering::Relaxed) && !super::interrupt::requested() {
            // Its node was closed by a person, and its claim with it: nothing is left to record.
            finished.problem = Some(format!(
                "{} was closed while its dispatch ran; the dispatch was killed",
                self.bead
            ));
        }
        // Record the exit and release, whatever happened: the attempt was counted at the claim.
        let exit = record::ExitArgs {
            exit: finished.exit,
            code: finished.code,
            cause: finished.cause.clone(),
            // Relative to the repository (`.splice/runs/…`): the bead file is committed, and a
            // clone elsewhere finds the log where its own runs put it.
            log: finished.log.as_ref().map(|p| {
                p.strip_prefix(self.rc.store.repo())
                    .unwrap_or(p)
                    .display()
                    .to_string()
            }),
            usage: finished.usage.clone(),
            response: finished.response.clone(),
            retry_after_s: finished.retry_after_s,
        };
        let recorded = self
            .rc
            .writer_ctx()
            .and_then(|c| record::record_exit(&c, &self.bead, exit));
        if let Err(e) = recorded {
            finished
                .problem
                .get_or_insert_with(|| format!("record-exit: {e}"));
        }
        let released = self
            .rc
            .writer_ctx()
            .and_then(|c| claim::release(&c, &self.bead, &self.rc.holder));
        if let Err(e) = released {
            finished
                .problem
                .get_or_insert_with(|| format!("release: {e}"));
        }
        // Commits that could not be verified are a person's to look at.
        if let Some(why) = unimported
            && let Err(e) = super::act::park(rc, &self.bead, &why)
        {
            finished.problem = Some(format!("{why}; parking it failed: {e}"));
        }
        finished
    }

    /// A loop step's dispatch that ran: measure its iteration and record it while the claim is
    /// held (a measuring problem is the dispatch's problem, not the agent's failure).
    fn measure_iteration(&self, finished: &mut Finished) {
        let Some(spec) = &self.step.loop_ else {
            return;
        };
        if !super::looping::measured(finished.exit) || self.cancel.load(Ordering::Relaxed) {
            return;
        }
        let ran = super::looping::Ran {
            rc: &self.rc,
            bead: &self.bead,
            step: &self.step,
            spec,
            attempt: self.attempt,
            worktree: &self.worktree,
            usage: finished.usage.as_ref(),
            response: finished.response.as_ref(),
        };
        match super::looping::measure_and_record(&ran) {
            Ok(it) => finished.iteration = Some(it),
            Err(e) => {
                finished
                    .problem
                    .get_or_insert_with(|| format!("measuring the iteration: {e}"));
            }
        }
    }

    /// A start failure's cause, with what to check and where the command is set.
    fn with_hint(&self, exit: ExitKind, cause: String) -> String {
        let command = super::commands::of_step(&self.rc.config, &self.rc.manifest, &self.step.name);
        match command {
            Some(command) if exit == ExitKind::NotStarted => {
                format!("{cause} ({})", super::commands::hint(&command))
            }
            _ => cause,
        }
    }

    fn dispatch(&self) -> Result<exec::DispatchResult> {
        if std::env::var("SPLICE_FAILPOINT").is_ok_and(|v| v == "dispatch-panic") {
            panic!("failpoint dispatch-panic");
        }
        let p = self.prepare()?;
        let spec = self.spec(&p);
        let ended = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| relay_interrupt(&self.cancel, &ended));
            if p.sandbox.is_some() {
                s.spawn(|| self.serve_inbox(&p.paths.inbox, &ended));
            }
            let result = exec::dispatch(&spec);
            ended.store(true, Ordering::Relaxed);
            result
        })
    }

    /// Answer the sandboxed agent's verbs while its dispatch runs, and once more when it has
    /// ended (`transition::inbox`): through the writer, with this dispatch's credential.
    fn serve_inbox(&self, inbox: &std::path::Path, ended: &AtomicBool) {
        let Some(credential) = &self.credential else {
            return;
        };
        let dispatch = crate::transition::inbox::Dispatch {
            bead: self.bead.clone(),
            credential_sha256: crate::authority::credential::sha256_hex(credential.secret()),
        };
        loop {
            let last = ended.load(Ordering::Relaxed);
            if let Ok(ctx) = self.rc.writer_ctx() {
                crate::transition::inbox::serve(&ctx, inbox, &dispatch);
            }
            if last {
                return;
            }
            std::thread::sleep(crate::transition::inbox::POLL);
        }
    }
}

/// Ctrl-C and SIGTERM reach a dispatch through its own cancel flag (which the runner may also
/// set to stop that dispatch alone): set it when the run is interrupted, until `ended`.
pub(super) fn relay_interrupt(cancel: &AtomicBool, ended: &AtomicBool) {
    while !ended.load(Ordering::Relaxed) {
        if super::interrupt::requested() {
            cancel.store(true, Ordering::Relaxed);
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
