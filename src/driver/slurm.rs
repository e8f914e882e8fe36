//! The runner's side of `[executor] kind = "slurm"` (issue 17, `docs/scale-out.md`): each
//! dispatch submitted as a batch job, every job of a run watched by one [`Poller`] thread (one
//! `squeue` per poll, whatever the number of jobs or beads), and a dead runner's jobs adopted.
//!
//! The decide/act contract is the local one: the runner claims, dispatches, waits, records. A
//! job's end is recorded like a local exit; before it, the job's proposal file is applied
//! through the writer ([`transition::proposals`]), so the driver stays the single writer even
//! when the agent runs where `.splice/`'s lock cannot be trusted. Unlike a local dispatch, a job
//! outlives its runner by design: a restarted runner adopts it ([`adopt_at_start`]).

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::exec::dispatch::env_for;
use crate::exec::slurm::{self, JobEnd, JobState};
use crate::exec::{DispatchPaths, response, usage};
use crate::model::Bead;
use crate::model::bead::ExitKind;
use crate::model::executor::job_name;
use crate::transition::{self, Ctx, job as jobs};

use super::act::RunCtx;
use super::holder;
use super::interrupt;
use super::job::{Finished, Job};

/// The first wait between two polls, and the longest (the wait grows while nothing changes).
const POLL_FIRST: Duration = Duration::from_millis(250);
const POLL_MOST: Duration = Duration::from_secs(5);

/// One job the poller watches until it ends.
pub(super) struct Tracked {
    job: Job,
    id: String,
    paths: DispatchPaths,
    expected: transition::proposals::Expected,
    since: Instant,
    done: Sender<Finished>,
    /// This runner cancelled it (Ctrl-C, a closed node): no attempt is counted.
    cancelled_here: bool,
    /// Polls in a row in which no Slurm command knew the job.
    unknown: u32,
    /// When Slurm first said it ended while its processes were still seen in the worktree.
    lingering: Option<Instant>,
}

/// How long an ended job's processes may linger in its worktree (Slurm's `KillWait` between
/// SIGTERM and SIGKILL, and a loaded node) before its end is recorded all the same.
const LINGER: Duration = Duration::from_secs(60);

/// After this many polls in a row in which no Slurm command knows a job, it is recorded as
/// lost (an error, counting its attempt) rather than waited for forever.
const UNKNOWN_POLLS: u32 = 3;

/// The run's poller: one thread for every job of the run.
pub struct Poller {
    tx: Sender<Tracked>,
}

impl Poller {
    /// Start the poller of a run. `rc` is the run's context without a poller (the thread holds
    /// it for as long as it runs).
    pub fn spawn(rc: RunCtx) -> Poller {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || poll(&rc, &rx));
        Poller { tx }
    }

    fn track(&self, t: Tracked) {
        if let Err(mpsc::SendError(t)) = self.tx.send(t) {
            let cause = "the run's slurm poller is gone".to_string();
            finish_unwatched(t.job, t.done, cause, t.since);
        }
    }
}

/// The poller's loop: take new jobs, wait (longer while nothing changes), read every job's
/// state in one `squeue`, cancel what must be, record what ended.
fn poll(rc: &RunCtx, rx: &Receiver<Tracked>) {
    let mut jobs: Vec<Tracked> = Vec::new();
    let mut wait = POLL_FIRST;
    loop {
        match rx.recv_timeout(wait) {
            Ok(t) => {
                jobs.push(t);
                jobs.extend(rx.try_iter());
                wait = POLL_FIRST;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) if jobs.is_empty() => return,
            // The run is gone but its jobs are not: keep waiting between polls.
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(wait),
        }
        if jobs.is_empty() {
            continue;
        }
        cancel_wanted(&mut jobs);
        let before = jobs.len();
        // A listing that failed (the controller away) says nothing: ask again after the wait,
        // rather than asking after every job one by one.
        let Ok(listed) = slurm::listing() else {
            wait = (wait * 3 / 2).min(POLL_MOST);
            continue;
        };
        let states: BTreeMap<String, JobState> =
            listed.into_iter().map(|l| (l.id, l.state)).collect();
        let mut still = Vec::with_capacity(jobs.len());
        for mut t in jobs.drain(..) {
            match end_of(&t.id, states.get(&t.id)) {
                Known::Ended(_) if lingers(&mut t) => still.push(t),
                Known::Ended(end) => conclude(rc, t, &end),
                Known::Live => {
                    t.unknown = 0;
                    still.push(t);
                }
                Known::Not if t.unknown + 1 >= UNKNOWN_POLLS => {
                    let lost = JobEnd {
                        state: JobState::Other("UNKNOWN to squeue, scontrol and sacct".into()),
                        code: None,
                        signal: None,
                    };
                    conclude(rc, t, &lost);
                }
                Known::Not => {
                    t.unknown += 1;
                    still.push(t);
                }
            }
        }
        jobs = still;
        wait = match jobs.len() == before {
            true => (wait * 3 / 2).min(POLL_MOST),
            false => POLL_FIRST,
        };
    }
}

/// `scancel` each job whose dispatch must stop: the run was interrupted, or a person closed
/// its node. Once each.
fn cancel_wanted(jobs: &mut [Tracked]) {
    for t in jobs.iter_mut() {
        let wanted = interrupt::requested() || t.job.cancel.load(Ordering::Relaxed);
        if wanted && !t.cancelled_here {
            t.job.cancel.store(true, Ordering::Relaxed);
            t.cancelled_here = slurm::cancel(&t.id).is_ok();
        }
    }
}

/// Does an ended job still have processes in its worktree (seen on this host: a one-node
/// cluster, or a compute node that is also the runner's)? Its end is recorded once they are gone
/// (or [`LINGER`] has passed), so the node's next dispatch does not find its worktree in use.
fn lingers(t: &mut Tracked) -> bool {
    if crate::process::procfs::users_of(&t.job.worktree).is_empty() {
        return false;
    }
    let since = *t.lingering.get_or_insert_with(Instant::now);
    since.elapsed() < LINGER
}

/// What Slurm knows of a job.
enum Known {
    Live,
    Ended(JobEnd),
    /// No command knows it (purged, or not listed yet).
    Not,
}

/// How job `id` stands: its state in the listing, its exit code from `scontrol` (or `sacct`,
/// when accounting answers) once it has ended. A job the listing no longer has is asked about
/// directly.
fn end_of(id: &str, listed: Option<&JobState>) -> Known {
    if listed.is_some_and(|s| !s.ended()) {
        return Known::Live;
    }
    let ended = |end: JobEnd| match end.state.ended() {
        true => Known::Ended(end),
        false => Known::Live,
    };
    if let Ok(Some(shown)) = slurm::show(id) {
        return ended(shown.end);
    }
    if let Some(end) = slurm::accounted(id) {
        return ended(end);
    }
    match listed {
        Some(state) => Known::Ended(JobEnd {
            state: state.clone(),
            code: None,
            signal: None,
        }),
        None => Known::Not,
    }
}

/// Record a job's end as a local dispatch's: apply its proposals, read its usage and response,
/// then record the exit and release the claim ([`Job::conclude`]).
fn conclude(rc: &RunCtx, t: Tracked, end: &JobEnd) {
    let job = &t.job;
    let (exit, code, cause) = slurm::exit_of(&t.id, end, t.cancelled_here);
    // What the job's agent reported, as for a local dispatch (`exec::ended`).
    let text = crate::exec::agent_file::log_text(&t.paths.log);
    let (exit, cause) = crate::exec::ended::settle(exit, cause, &text);
    let mut f = Finished::new(job.bead.clone(), job.step.name.clone(), job.attempt);
    f.retry_after_s = (exit == ExitKind::Transient)
        .then(|| crate::exec::ended::retry_after_s(cause.as_deref(), &text))
        .flatten();
    f.exit = exit;
    f.code = code;
    f.cause = cause.clone();
    f.log = Some(t.paths.log.clone());
    let mut notes = vec![format!(
        "slurm job {} ended {}{}",
        t.id,
        end.state.name(),
        code.map(|c| format!(", exit {c}")).unwrap_or_default()
    )];
    match apply_proposals(rc, &t) {
        Ok(lines) => notes.extend(lines),
        Err(e) => {
            let problem = format!("the job's proposals were not applied: {e}");
            notes.push(problem.clone());
            f.problem = Some(problem);
        }
    }
    let elapsed_ms = u64::try_from(t.since.elapsed().as_millis()).unwrap_or(u64::MAX);
    if exit != ExitKind::Cancelled {
        let bead = rc.store.read_bead(&job.bead).ok();
        let model = bead
            .as_ref()
            .and_then(|b| super::looping::configured_model(rc, b, &job.step.name));
        let adapter = usage::Adapter::from(rc.config.agent.usage);
        let (log, file) = (&t.paths.log, &t.paths.usage_file);
        match usage::collect(adapter, log, file, elapsed_ms, &rc.config.prices, model) {
            Ok(u) => f.usage = u,
            Err(e) => notes.push(format!("usage not recorded: {e}")),
        }
        f.response = response::read(&t.paths.log, &t.paths.result_file);
    }
    note_in_log(&t.paths, &notes);
    let f = job.conclude(f, t.since);
    let _ = t.done.send(f);
}

/// Apply the job's proposal file through the writer; a line for each proposal's outcome.
fn apply_proposals(rc: &RunCtx, t: &Tracked) -> Result<Vec<String>> {
    let ctx = rc.writer_ctx()?;
    let file = &t.paths.proposals_file;
    let outcomes = transition::proposals::apply_file(&ctx, file, &t.expected)?;
    // Applied once: a runner that adopts this job after a crash does not apply it again.
    if !outcomes.is_empty() {
        let done = file.with_extension("jsonl.applied");
        std::fs::rename(file, &done).map_err(|e| Error::io(file, e))?;
    }
    Ok(outcomes
        .iter()
        .map(|o| match (&o.kind, &o.message) {
            (None, _) => format!("proposal line {} ({}) applied", o.line, o.verb),
            (Some(kind), message) => format!(
                "proposal line {} ({}) refused: {kind}: {}",
                o.line,
                o.verb,
                message.as_deref().unwrap_or_default()
            ),
        })
        .collect())
}

/// splice's notes after the job's own output, as a local dispatch's are.
fn note_in_log(paths: &DispatchPaths, notes: &[String]) {
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&paths.log);
    if let Ok(mut file) = file {
        for n in notes {
            let _ = writeln!(file, "[splice: {n}]");
        }
    }
}

/// Record a dispatch that never became a watched job (`sbatch` failed, the claim was lost):
/// its cause, its exit, the claim released.
fn finish_unwatched(job: Job, done: Sender<Finished>, cause: String, since: Instant) {
    let mut f = Finished::new(job.bead.clone(), job.step.name.clone(), job.attempt);
    f.cause = Some(cause.clone());
    f.problem = Some(cause);
    let f = job.conclude(f, since);
    let _ = done.send(f);
}

/// Submit `job` and hand it to the poller, on a short-lived thread (the wait is the poller's).
pub(super) fn start(job: Job, done: Sender<Finished>, poller: Arc<Poller>) {
    std::thread::spawn(move || {
        let since = Instant::now();
        match submit(&job) {
            Ok((id, paths, expected)) => poller.track(Tracked {
                job,
                id,
                paths,
                expected,
                since,
                done,
                cancelled_here: false,
                unknown: 0,
                lingering: None,
            }),
            Err(e) => finish_unwatched(
                job,
                done,
                format!("splice could not submit it to slurm: {e}"),
                since,
            ),
        }
    });
}

/// Variables a job's sandbox adds to its environment.
type JobEnv = Vec<(String, std::ffi::OsString)>;

/// The job's command line and the variables its sandbox adds: where the run's dispatches are
/// sandboxed, `splice sandbox exec --policy <dispatch>.sandbox.json -- ARGV` (the policy the
/// runner writes: a local dispatch's, with the proposal file writable in place of the inbox,
/// which no runner serves on a compute node); else ARGV as it is.
fn confined_argv(job: &Job, p: &super::job::Prepared) -> Result<(Vec<String>, JobEnv)> {
    let rc = &job.rc;
    if rc.sandbox.is_err() {
        return Ok((p.argv.clone(), Vec::new()));
    }
    let git_dir = crate::worktree::open_repo(rc.store.repo())?
        .commondir()
        .to_path_buf();
    let place = crate::exec::sandbox::Place {
        repo: rc.store.repo(),
        splice_dir: rc.store.dir(),
        git_dir: &git_dir,
        node: &job.bead,
        worktree: &job.worktree,
        paths: &p.paths,
        argv: &p.argv,
        config: &rc.config.sandbox,
    };
    let (mut policy, env) = crate::exec::sandbox::for_dispatch(&place)?;
    // The job's agent records its verbs in the proposal file: made here, empty, so that the
    // sandbox may grant writing that one file.
    crate::store::atomic::replace_file(&p.paths.proposals_file, b"")?;
    policy.write.push(p.paths.proposals_file.clone());
    let env: JobEnv = env
        .into_iter()
        .filter(|(k, _)| k != crate::transition::inbox::ENV)
        .collect();
    // The job gets them through its environment, which `sandbox exec` filters: keep them.
    policy.env.extend(env.iter().map(|(k, _)| k.clone()));
    let file = p.paths.log.with_extension("sandbox.json");
    let bytes = serde_json::to_vec_pretty(&policy).map_err(|e| Error::Internal(e.to_string()))?;
    crate::store::atomic::replace_file(&file, &bytes)?;
    let argv = crate::sandbox::exec_argv(&crate::hooks::splice_exe(), &file, &p.argv);
    Ok((argv, env))
}

/// Write the batch script and submit it, unless Slurm already has a live job of this name
/// (never two jobs for one node's dispatch); record the job on the claim.
fn submit(job: &Job) -> Result<(String, DispatchPaths, transition::proposals::Expected)> {
    let rc = &job.rc;
    let p = job.prepare()?;
    let seq = p
        .bead
        .pipeline
        .last_dispatch
        .as_ref()
        .map_or(p.bead.pipeline.seq, |d| d.seq);
    let name = job_name(&job.bead, &job.step.name, job.attempt, &repo_tag(&rc.store));
    let credential = job
        .credential
        .as_ref()
        .ok_or_else(|| Error::Invalid("a submitted dispatch has a credential".into()))?;
    let live = slurm::by_name(&name)?
        .into_iter()
        .find(|l| !l.state.ended() && l.name == name);
    let id = match live {
        Some(l) => l.id,
        None => {
            let r = rc.config.executor.resources(&job.step.name);
            std::fs::create_dir_all(&p.paths.private_dir)
                .map_err(|e| Error::io(&p.paths.private_dir, e))?;
            for stale in [
                &p.paths.proposals_file,
                &p.paths.usage_file,
                &p.paths.result_file,
            ] {
                let _ = std::fs::remove_file(stale);
            }
            let (argv, confined_env) = confined_argv(job, &p)?;
            let script = slurm::batch_script(&name, &r, job.step.timeout_s, &argv);
            crate::store::atomic::replace_file(&p.paths.script_file, script.as_bytes())?;
            let spec = job.spec(&p);
            let mut env = env_for(&spec);
            env.extend(confined_env);
            env.push((
                "SPLICE_PROPOSALS".into(),
                p.paths.proposals_file.clone().into(),
            ));
            env.push(("SPLICE_SEQ".into(), seq.to_string().into()));
            let env = env.into_iter().map(|(k, v)| (k.into(), v)).collect();
            let id = slurm::submit(&p.paths.script_file, &p.paths.log, &job.worktree, env)?;
            crate::store::atomic::Failpoint::AfterSbatch.hit();
            id
        }
    };
    if let Err(e) = rc
        .writer_ctx()
        .and_then(|ctx| jobs::record_job(&ctx, &job.bead, &id))
    {
        let _ = slurm::cancel(&id);
        return Err(e);
    }
    let expected = transition::proposals::Expected {
        bead: job.bead.clone(),
        step: job.step.name.clone(),
        attempt: job.attempt,
        seq,
        credential_sha256: credential.sha256(),
    };
    Ok((id, p.paths, expected))
}

/// A dispatch adopted at the start of a run: the runner counts it in flight.
pub(super) struct Adopted {
    pub bead: String,
    pub step: String,
    pub attempt: u32,
    pub cancel: Arc<AtomicBool>,
}

/// At the start of a run: adopt every job a dead runner of this state directory left running
/// (or ended unseen). A claim is taken over only through `adopt-job`, with the job's proof.
pub(super) fn adopt_at_start(
    rc: &RunCtx,
    poller: &Poller,
    beads: &[Bead],
    done: &Sender<Finished>,
) -> Vec<Adopted> {
    let mut adopted = Vec::new();
    for bead in beads.iter().filter(|b| !b.is_closed()) {
        let Some(lease) = &bead.pipeline.lease else {
            continue;
        };
        if lease.holder == rc.holder || holder::holder_alive(&lease.holder) != Some(false) {
            continue;
        }
        let Ok(Some(claim)) = adopt_one(rc, bead) else {
            continue;
        };
        let cancel = Arc::new(AtomicBool::new(false));
        let Ok(job) = Job::adopted(rc, bead, claim.attempt, cancel.clone()) else {
            continue;
        };
        let Some(t) = tracked(rc, job, &claim, bead, done.clone()) else {
            continue;
        };
        poller.track(t);
        adopted.push(Adopted {
            bead: claim.bead,
            step: claim.step,
            attempt: claim.attempt,
            cancel,
        });
    }
    adopted
}

/// Find the job of `bead`'s dead claim and adopt it: `None` when Slurm knows no such job.
fn adopt_one(rc: &RunCtx, bead: &Bead) -> Result<Option<jobs::JobClaim>> {
    let ctx = rc.writer_ctx()?;
    let repo = repo_tag(&rc.store);
    let Some(proof) = find_job(bead, &repo)? else {
        return Ok(None);
    };
    let (id, name) = proof;
    let p = jobs::Proof {
        job: &id,
        name: &name,
        known: true,
        holder_dead: true,
        repo: &repo,
    };
    jobs::adopt_job(&ctx, &bead.id, &p).map(Some)
}

/// The job of `bead`'s claim, as Slurm knows it: (id, name). By the id on the claim; for a
/// claim with none yet (its runner died between `sbatch` and `record-job`), by the name its
/// dispatch's job was given.
fn find_job(bead: &Bead, repo: &str) -> Result<Option<(String, String)>> {
    let lease = bead.pipeline.lease.as_ref();
    if let Some(id) = lease.and_then(|l| l.job.as_deref()) {
        return Ok(slurm::show(id)?.map(|s| (s.id, s.name)));
    }
    let Some(d) = bead.pipeline.last_dispatch.as_deref() else {
        return Ok(None);
    };
    let name = job_name(&bead.id, &d.step, d.attempt, repo);
    Ok(slurm::by_name(&name)?
        .into_iter()
        .find(|l| l.name == name)
        .map(|l| (l.id, l.name)))
}

/// The poller's record of an adopted job: its files are the dead run's.
fn tracked(
    rc: &RunCtx,
    job: Job,
    claim: &jobs::JobClaim,
    bead: &Bead,
    done: Sender<Finished>,
) -> Option<Tracked> {
    let lease = bead.pipeline.lease.as_ref()?;
    let dead_run = lease.holder.splitn(4, ':').nth(3)?;
    let paths = DispatchPaths::new(
        &rc.store.runs_dir(),
        dead_run,
        &claim.bead,
        &claim.step,
        claim.attempt,
    )
    .ok()?
    .retry(bead.retries_at(claim.attempt));
    let expected = transition::proposals::Expected {
        bead: claim.bead.clone(),
        step: claim.step.clone(),
        attempt: claim.attempt,
        seq: claim.seq,
        credential_sha256: lease.credential_sha256.clone()?,
    };
    Some(Tracked {
        job,
        id: claim.job.clone(),
        paths,
        expected,
        since: Instant::now(),
        done,
        cancelled_here: false,
        unknown: 0,
        lingering: None,
    })
}

/// This repository's part of its jobs' names: the first 8 hex digits of the sha256 of the state
/// directory's canonical path ([`job_name`]).
pub fn repo_tag(store: &crate::store::Store) -> String {
    let dir = std::fs::canonicalize(store.dir()).unwrap_or_else(|_| store.dir().to_path_buf());
    let hash = crate::authority::credential::sha256_hex(&dir.display().to_string());
    hash[..8].to_string()
}

/// `splice transition adopt-job` from the command line: the proof read from Slurm and the
/// claim's holder checked here, never taken from the caller's word. The job is then the
/// caller's to watch.
pub fn adopt_by_hand(ctx: &Ctx, id: &str, job: &str) -> Result<jobs::JobClaim> {
    let bead = ctx.store.read_bead(id)?;
    let holder_dead = bead
        .pipeline
        .lease
        .as_ref()
        .is_some_and(|l| holder::holder_alive(&l.holder) == Some(false));
    let shown = slurm::show(job)?;
    let repo = repo_tag(ctx.store);
    let p = jobs::Proof {
        job,
        name: shown.as_ref().map_or("", |s| s.name.as_str()),
        known: shown.is_some(),
        holder_dead,
        repo: &repo,
    };
    jobs::adopt_job(ctx, id, &p)
}
