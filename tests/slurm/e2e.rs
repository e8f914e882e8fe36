//! Issue 17, end to end on a real Slurm cluster: the demo with `--executor slurm`, a job
//! cancelled by someone else, the runner killed and restarted (its jobs adopted, none submitted
//! twice), Ctrl-C, and a job past its time limit. Each test needs the cluster `.ci/run` brings
//! up (`scripts/slurm-up.sh`): each is `#[ignore]`d by `cargo test` alone, and run with
//! `--include-ignored` it fails without `SPLICE_SLURM_TESTS=1` and a cluster that answers.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cluster;
use crate::common::{self, Repo};

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

/// A repository whose leaf route is one argv step, `work`, running `script` as a Slurm job
/// (`timeout_s`, so `--time` is that rounded up to minutes) with `max_attempts`.
fn slurm_repo(script: &str, timeout_s: u64, max_attempts: u32) -> (Repo, String) {
    let argv = serde_json::json!(["sh", "-c", script]);
    slurm_repo_with(argv, serde_json::json!([]), "", timeout_s, max_attempts)
}

/// [`slurm_repo`] with the work step's argv and floors, and more `[executor]` keys.
fn slurm_repo_with(
    argv: Value,
    floors: Value,
    executor: &str,
    timeout_s: u64,
    max_attempts: u32,
) -> (Repo, String) {
    let r = Repo::new();
    let manifest = common::work_step_manifest(argv, floors, timeout_s, max_attempts);
    r.write(".splice/manifest.json", &manifest);
    let root = r.path().canonicalize().unwrap();
    r.write(
        ".splice/config.toml",
        &format!(
            "[limits]\nbackoff_s = 1\n\n[executor]\nkind = \"slurm\"\nshared_root = \"{}\"\ncpus = 1\n{executor}",
            root.display()
        ),
    );
    let id = r.task("Slurm work", &[]);
    (r, id)
}

/// The agent's part: wait `secs` on the first attempt, then propose through the proposal file.
fn proposing_after(secs: u32) -> String {
    format!(
        "if [ \"$SPLICE_ATTEMPT\" = 1 ]; then sleep {secs}; fi; \
         splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact done"
    )
}

/// `splice …` in `r` with Slurm's client settings passed through.
fn splice(r: &Repo, args: &[&str]) -> Command {
    let mut c = r.cmd(args);
    for var in ["SLURM_CONF", "USER", "LOGNAME"] {
        if let Some(v) = std::env::var_os(var) {
            c.env(var, v);
        }
    }
    c
}

fn spawn_run(r: &Repo) -> Child {
    splice(r, &["run", "--output", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("splice run starts")
}

fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Every job Slurm lists by `name`: (id, state).
fn jobs_named(name: &str) -> Vec<(String, String)> {
    let out = Command::new("squeue")
        .args(["--me", "--states=all", "--noheader", "--format=%i|%T"])
        .arg(format!("--name={name}"))
        .output()
        .expect("squeue runs");
    assert!(
        out.status.success(),
        "squeue: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().split_once('|'))
        .map(|(i, s)| (i.to_string(), s.to_string()))
        .collect()
}

/// This repository's part of its jobs' names, read from the first batch script a run wrote
/// (`#SBATCH --job-name=splice-<bead>-<step>-<attempt>-<repo>`), once there is one.
fn repo_tag(r: &Repo) -> String {
    let mut tag = None;
    wait_until("a batch script", Duration::from_secs(60), || {
        tag = scripts(r).into_iter().find_map(|text| {
            let name = text
                .lines()
                .find_map(|l| l.strip_prefix("#SBATCH --job-name="))?;
            Some(name.rsplit('-').next()?.to_string())
        });
        tag.is_some()
    });
    tag.unwrap()
}

fn scripts(r: &Repo) -> Vec<String> {
    let runs = r.path().join(".splice/runs");
    let Ok(dirs) = std::fs::read_dir(runs) else {
        return Vec::new();
    };
    dirs.flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .filter(|f| f.path().extension().is_some_and(|e| e == "sbatch"))
        .filter_map(|f| std::fs::read_to_string(f.path()).ok())
        .collect()
}

fn running(name: &str) -> Option<String> {
    jobs_named(name)
        .into_iter()
        .find(|(_, s)| s == "RUNNING")
        .map(|(id, _)| id)
}

fn journal_verbs(r: &Repo) -> Vec<String> {
    r.journal()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["verb"].as_str().map(str::to_string))
        .collect()
}

/// Wait for a run at most ten minutes: a wedged runner fails the test instead of hanging CI.
fn finished(mut child: Child) -> (i32, Value) {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(600) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "the run did not end: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let envelope = serde_json::from_str(&text).unwrap_or(Value::Null);
    let code = out.status.code().unwrap_or(-1);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked at"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (code, envelope)
}

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn the_demo_campaign_reaches_done_with_its_dispatches_as_slurm_jobs() {
    let _slurm = cluster::require();
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("demo");
    let started = Instant::now();
    let mut cmd = Command::new(SPLICE);
    cmd.args([
        "demo",
        "--executor",
        "slurm",
        "--jobs",
        "3",
        "--json",
        "--keep",
    ])
    .arg(&keep);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(outcome["status"], "done", "{outcome:#}");
    eprintln!("demo --executor slurm: {:?} wall", started.elapsed());
    // Every dispatch was a job recorded on its claim, and no dispatch got two.
    let journal = std::fs::read_to_string(keep.join(".splice/journal.jsonl")).unwrap();
    let records: Vec<Value> = journal
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let dispatches = records
        .iter()
        .filter(|v| {
            v["verb"] == "claim"
                && v["reason"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("dispatch "))
        })
        .count();
    let jobs = records.iter().filter(|v| v["verb"] == "record-job").count();
    assert!(dispatches > 0);
    assert_eq!(jobs, dispatches, "one job per dispatch");
    assert_eq!(
        outcome["dispatches"].as_u64().unwrap() as usize,
        dispatches,
        "{outcome:#}"
    );
}

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn a_job_cancelled_by_someone_else_counts_an_attempt_and_is_dispatched_again() {
    let _slurm = cluster::require();
    let (r, id) = slurm_repo(&proposing_after(120), 300, 3);
    let run = spawn_run(&r);
    let tag = repo_tag(&r);
    let name = format!("splice-{id}-work-1-{tag}");
    let mut job = None;
    wait_until("the first job to run", Duration::from_secs(60), || {
        job = running(&name);
        job.is_some()
    });
    let job = job.unwrap();
    let scancel = Command::new("scancel").arg(&job).status().unwrap();
    assert!(scancel.success());
    let (code, envelope) = finished(run);
    assert_eq!(code, 0, "{envelope:#}");
    assert_eq!(envelope["status"], "done", "{envelope:#}");
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{b:#}");
    assert_eq!(
        b["pipeline"]["attempts"]["work"], 2,
        "the cancelled job counted: {b:#}"
    );
    let exits = b["pipeline"]["exits"].as_array().unwrap();
    let first = &exits[0];
    assert_eq!(first["exit"], "error", "{first:#}");
    let cause = first["cause"].as_str().unwrap_or_default();
    assert!(
        cause.contains(&format!(
            "slurm job {job} ended CANCELLED (not by this runner)"
        )),
        "{cause}"
    );
    assert_eq!(exits.last().unwrap()["exit"], "ok");
    assert_eq!(jobs_named(&format!("splice-{id}-work-2-{tag}")).len(), 1);
}

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn a_runner_killed_while_its_job_runs_is_succeeded_by_one_that_adopts_the_job() {
    let _slurm = cluster::require();
    let (r, id) = slurm_repo(&proposing_after(15), 300, 3);
    let mut run = spawn_run(&r);
    let tag = repo_tag(&r);
    let name = format!("splice-{id}-work-1-{tag}");
    wait_until("the job on the claim", Duration::from_secs(60), || {
        r.bead(&id)["pipeline"]["lease"]["job"].is_string() && running(&name).is_some()
    });
    // SIGKILL: no cleanup of any kind. Reaped, so its pid is dead.
    run.kill().unwrap();
    run.wait().unwrap();
    let job = r.bead(&id)["pipeline"]["lease"]["job"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        running(&name).as_deref(),
        Some(job.as_str()),
        "the job outlives its runner"
    );
    let (code, envelope) = finished(spawn_run(&r));
    assert_eq!(code, 0, "{envelope:#}");
    assert_eq!(envelope["status"], "done", "{envelope:#}");
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{b:#}");
    assert_eq!(
        b["pipeline"]["attempts"]["work"], 1,
        "adopted, not dispatched again"
    );
    assert_eq!(
        jobs_named(&name).len(),
        1,
        "one job for the node's dispatch"
    );
    assert!(jobs_named(&format!("splice-{id}-work-2-{tag}")).is_empty());
    let verbs = journal_verbs(&r);
    assert_eq!(
        verbs.iter().filter(|v| *v == "adopt-job").count(),
        1,
        "{verbs:?}"
    );
    assert_eq!(
        verbs.iter().filter(|v| *v == "record-job").count(),
        1,
        "{verbs:?}"
    );
    // The job's proposal, applied by the runner that adopted it.
    assert!(verbs.contains(&"propose".to_string()), "{verbs:?}");
}

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn a_runner_that_died_between_sbatch_and_recording_the_job_is_succeeded_without_a_second_job() {
    let _slurm = cluster::require();
    let (r, id) = slurm_repo(&proposing_after(10), 300, 3);
    // The failpoint aborts the runner right after `sbatch` answered: the claim has no job id.
    let out = splice(&r, &["run", "--output", "json"])
        .env("SPLICE_FAILPOINT", "after-sbatch")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0), "the runner was aborted");
    let lease = r.bead(&id)["pipeline"]["lease"].clone();
    assert!(lease.is_object() && lease["job"].is_null(), "{lease:#}");
    let name = format!("splice-{id}-work-1-{}", repo_tag(&r));
    assert_eq!(jobs_named(&name).len(), 1, "the job was submitted");
    let (code, envelope) = finished(spawn_run(&r));
    assert_eq!(code, 0, "{envelope:#}");
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{b:#}");
    assert_eq!(b["pipeline"]["attempts"]["work"], 1, "{b:#}");
    assert_eq!(
        jobs_named(&name).len(),
        1,
        "found by its name, not submitted again"
    );
    let verbs = journal_verbs(&r);
    assert_eq!(
        verbs.iter().filter(|v| *v == "adopt-job").count(),
        1,
        "{verbs:?}"
    );
    assert_eq!(
        verbs.iter().filter(|v| *v == "record-job").count(),
        0,
        "{verbs:?}"
    );
}

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn ctrl_c_cancels_the_runs_jobs_at_no_cost_of_an_attempt() {
    let _slurm = cluster::require();
    let (r, id) = slurm_repo(&proposing_after(120), 300, 3);
    let run = spawn_run(&r);
    let name = format!("splice-{id}-work-1-{}", repo_tag(&r));
    wait_until("the job to run", Duration::from_secs(60), || {
        running(&name).is_some()
    });
    let pid = run.id() as i32;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let (code, _) = finished(run);
    assert_eq!(code, 130);
    let states = jobs_named(&name);
    assert_eq!(states.len(), 1);
    assert!(states[0].1.starts_with("CANCELLED"), "{states:?}");
    let b = r.bead(&id);
    assert!(
        b["pipeline"]["lease"].is_null(),
        "the claim is released: {b:#}"
    );
    assert_eq!(
        b["pipeline"]["attempts"]["work"], 0,
        "no attempt counted: {b:#}"
    );
    assert_eq!(b["pipeline"]["exits"][0]["exit"], "cancelled");
}

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn a_job_past_its_one_minute_limit_is_recorded_as_a_timeout() {
    let _slurm = cluster::require();
    // timeout_s 60: `--time=1`. Slurm kills it a little after the minute.
    let (r, id) = slurm_repo("sleep 600", 60, 1);
    let (code, envelope) = finished(spawn_run(&r));
    assert_eq!(code, 0, "{envelope:#}");
    let b = r.bead(&id);
    let exit = &b["pipeline"]["exits"][0];
    assert_eq!(exit["exit"], "timeout", "{b:#}");
    assert!(
        exit["cause"]
            .as_str()
            .unwrap_or_default()
            .contains("TIMEOUT"),
        "{exit:#}"
    );
    let reason = b["pipeline"]["dead_letter"]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("attempts exhausted on work"), "{reason}");
    assert!(Path::new(&r.path().join(".splice/runs")).is_dir());
}

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn floors_sent_to_slurm_run_their_command_inside_a_job_and_its_sandbox() {
    let _slurm = cluster::require();
    // The floor passes only inside a Slurm job (srun sets SLURM_JOB_ID) and inside the sandbox
    // (the journal, two levels up from the worktree, cannot be written), and leaves its mark in
    // its temp directory (the worktree goes when the node closes).
    let check = "test -n \"$SLURM_JOB_ID\" && echo \"$SLURM_JOB_NAME\" > \"$TMPDIR/floor-ran-in\" \
        && ! (echo junk >> ../../journal.jsonl) 2>/dev/null";
    let floors = serde_json::json!([{ "kind": "command", "argv": ["sh", "-c", check] }]);
    let argv = serde_json::json!(["sh", "-c", proposing_after(0)]);
    let (r, id) = slurm_repo_with(argv, floors, "floors = \"slurm\"\n", 120, 1);
    let journal = r.journal();
    let (code, envelope) = finished(spawn_run(&r));
    assert_eq!(code, 0, "{envelope:#}");
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "the floor passed: {b:#}");
    let mark = r
        .path()
        .join(".splice/runs/agent-home/floor-tmp/floor-ran-in");
    let name = std::fs::read_to_string(&mark).unwrap_or_default();
    assert_eq!(name.trim(), format!("splice-floor-{id}-work"));
    // Its `junk` line would be in the journal, which holds only the writer's records.
    assert!(r.journal().starts_with(&journal));
    for line in r.journal().lines() {
        let parsed: Result<Value, _> = serde_json::from_str(line);
        assert!(parsed.is_ok(), "the floor wrote the journal: {line}");
    }
}

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn a_slurm_run_looks_its_commands_up_in_a_first_job_before_claiming_anything() {
    let _slurm = cluster::require();
    let argv = serde_json::json!(["splice-no-such-agent-anywhere", "-p"]);
    let (r, id) = slurm_repo_with(argv, serde_json::json!([]), "", 120, 1);
    let before = r.beads_bytes();
    let out = splice(&r, &["run", "--output", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("splice-no-such-agent-anywhere")
            && stderr.contains("was not found by a Slurm job"),
        "{stderr}"
    );
    assert_eq!(r.beads_bytes(), before, "nothing claimed");
    assert!(r.bead(&id)["pipeline"]["lease"].is_null());
}

/// A Slurm job's agent runs in the kernel sandbox too (`splice sandbox exec`, issue 31): it
/// cannot write `.splice/` or the main checkout, and its proposal, through the proposal file,
/// is applied when the job ends.
#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn a_slurm_jobs_agent_runs_in_the_sandbox() {
    let _slurm = cluster::require();
    if splice::sandbox::probe().usable().is_err() {
        return;
    }
    let script = "echo junk >> \"$SPLICE_DIR/journal.jsonl\" && exit 7; \
                  echo pwned > \"$SPLICE_DIR/../README.md\" && exit 8; \
                  splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact done";
    let (r, id) = slurm_repo(script, 120, 1);
    let readme = std::fs::read_to_string(r.path().join("README.md")).unwrap();
    let (code, envelope) = finished(spawn_run(&r));
    assert_eq!(code, 0, "{envelope:#}");
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "the proposal was applied: {b:#}");
    assert!(
        !r.journal().lines().any(|l| l == "junk"),
        "the job wrote the journal"
    );
    assert_eq!(
        std::fs::read_to_string(r.path().join("README.md")).unwrap(),
        readme
    );
    assert!(
        scripts(&r).iter().any(|s| s.contains("'sandbox' 'exec'")),
        "the job script runs its agent through splice sandbox exec: {:?}",
        scripts(&r)
    );
}
