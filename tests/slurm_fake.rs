//! Issue 17 without a cluster: the Slurm executor against fake `sbatch`, `squeue`, `scontrol`,
//! `scancel`, `sacct` and `srun` (`tests/fixtures/fake-slurm/`, shell scripts that run each job
//! at once in its own session and keep its state in a directory), so `cargo test` alone covers
//! the submission, the poller, the proposal file and the mapping of ends. The real cluster's
//! tests are `tests/slurm/` (`.ci/run`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Repo;
use serde_json::Value;

fn fake_bin() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-slurm")
}

/// A repository whose leaf route is one argv step, `work`, running `script` as a job.
fn repo(script: &str, max_attempts: u32, executor: &str) -> (Repo, String, tempfile::TempDir) {
    let r = Repo::new();
    let argv = serde_json::json!(["sh", "-c", script]);
    let manifest = common::work_step_manifest(argv, serde_json::json!([]), 120, max_attempts);
    r.write(".splice/manifest.json", &manifest);
    let root = r.path().canonicalize().unwrap();
    r.write(
        ".splice/config.toml",
        &format!(
            "[limits]\nbackoff_s = 0\n\n[executor]\nkind = \"slurm\"\nshared_root = \"{}\"\n{executor}",
            root.display()
        ),
    );
    let id = r.task("Work", &[]);
    (r, id, tempfile::tempdir().unwrap())
}

fn splice(r: &Repo, state: &Path, args: &[&str]) -> Command {
    let mut c = r.cmd(args);
    let path = format!(
        "{}:{}",
        fake_bin().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    c.env("PATH", path).env("FAKE_SLURM_STATE", state);
    c
}

/// Wait for `child` at most [`LIMIT`]: a wedged runner fails the test instead of hanging it.
#[must_use]
fn bounded(mut child: std::process::Child) -> std::process::Output {
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "the run did not end within {LIMIT:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Wait (at most 30 s) until the node's claim carries its job's id.
fn wait_for_job(r: &Repo, id: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !r.bead(id)["pipeline"]["lease"]["job"].is_string() {
        assert!(
            std::time::Instant::now() < deadline,
            "the job never reached the claim"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

const LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// `splice run` with its output captured, spawned.
fn spawn(mut c: Command) -> std::process::Child {
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[must_use]
fn run(r: &Repo, state: &Path) -> (i32, Value, String) {
    let out = bounded(spawn(splice(r, state, &["run", "--output", "json"])));
    common::no_panic(&out);
    let envelope = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    (out.status.code().unwrap_or(-1), envelope, stderr)
}

fn verbs(r: &Repo) -> Vec<String> {
    r.journal()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["verb"].as_str().map(str::to_string))
        .collect()
}

fn run_files(r: &Repo, suffix: &str) -> Vec<PathBuf> {
    let runs = r.path().join(".splice/runs");
    std::fs::read_dir(runs)
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .map(|f| f.path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect()
}

const PROPOSE: &str =
    "splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact done";

#[test]
fn a_dispatch_runs_as_a_job_and_its_proposal_is_applied_by_the_runner_when_it_ends() {
    let (r, id, state) = repo(PROPOSE, 3, "");
    let (code, envelope, stderr) = run(&r, state.path());
    assert_eq!(code, 0, "{envelope:#}\n{stderr}");
    assert_eq!(envelope["status"], "done", "{envelope:#}");
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{b:#}");
    let v = verbs(&r);
    let at = |verb: &str| v.iter().position(|x| x == verb).unwrap_or(usize::MAX);
    // claim, the job on the claim, the job's proposal (applied by the runner), its exit.
    assert!(at("claim") < at("record-job"), "{v:?}");
    assert!(at("record-job") < at("propose"), "{v:?}");
    assert!(at("propose") < at("record-exit"), "{v:?}");
    // The batch script, and the proposal file applied once.
    let script = std::fs::read_to_string(&run_files(&r, ".sbatch")[0]).unwrap();
    assert!(
        script.contains(&format!("#SBATCH --job-name=splice-{id}-work-1-")),
        "{script}"
    );
    assert_eq!(run_files(&r, ".proposals.jsonl.applied").len(), 1);
    assert!(run_files(&r, ".proposals.jsonl").is_empty());
    let log = std::fs::read_to_string(&run_files(&r, "-work-1.log")[0]).unwrap();
    assert!(log.contains("recorded; applied when the job ends"), "{log}");
    assert!(
        log.contains("[splice: slurm job 101 ended COMPLETED, exit 0]"),
        "{log}"
    );
    assert!(
        log.contains("[splice: proposal line 1 (propose) applied]"),
        "{log}"
    );
    // The job's id is on the exit's claim record; the claim is released.
    assert!(b["pipeline"]["lease"].is_null());
}

#[test]
fn a_failed_job_is_recorded_with_its_code_and_the_state_in_its_cause() {
    let (r, id, state) = repo("echo 'it broke' >&2; exit 3", 1, "");
    let (code, envelope, stderr) = run(&r, state.path());
    assert_eq!(code, 0, "{envelope:#}\n{stderr}");
    assert_eq!(envelope["status"], "escalated", "{envelope:#}");
    let b = r.bead(&id);
    let exit = &b["pipeline"]["exits"][0];
    assert_eq!(
        (exit["exit"].as_str(), exit["code"].as_i64()),
        (Some("failed"), Some(3))
    );
    let cause = exit["cause"].as_str().unwrap();
    assert!(
        cause.contains("slurm job 101 ended FAILED (exit 3)"),
        "{cause}"
    );
    let reason = b["pipeline"]["dead_letter"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("FAILED (exit 3)"),
        "the park reason says which: {reason}"
    );
}

#[test]
fn a_job_slurm_forgets_is_recorded_as_lost_not_waited_for_forever() {
    let (r, id, state) = repo("sleep 1", 1, "");
    // The fake forgets every job as soon as it is submitted.
    let mut c = splice(&r, state.path(), &["run", "--output", "json"]);
    c.env("FAKE_SLURM_FORGET", "1");
    let out = bounded(spawn(c));
    common::no_panic(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b = r.bead(&id);
    let exit = &b["pipeline"]["exits"][0];
    assert_eq!(exit["exit"], "error", "{b:#}");
    assert!(
        exit["cause"]
            .as_str()
            .unwrap()
            .contains("UNKNOWN to squeue, scontrol and sacct")
    );
}

#[test]
fn a_slurm_run_refuses_a_repository_outside_its_shared_root() {
    let (r, id, state) = repo(PROPOSE, 1, "");
    r.write(
        ".splice/config.toml",
        "[executor]\nkind = \"slurm\"\nshared_root = \"/nonexistent-shared\"\n",
    );
    let before = r.beads_bytes();
    let (code, _, stderr) = run(&r, state.path());
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("[executor] shared_root /nonexistent-shared"),
        "{stderr}"
    );
    // A root that exists but does not hold the repository.
    let elsewhere = tempfile::tempdir().unwrap();
    r.write(
        ".splice/config.toml",
        &format!(
            "[executor]\nkind = \"slurm\"\nshared_root = \"{}\"\n",
            elsewhere.path().display()
        ),
    );
    let (code, _, stderr) = run(&r, state.path());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("is not under it"), "{stderr}");
    assert_eq!(r.beads_bytes(), before);
    assert!(r.bead(&id)["pipeline"]["lease"].is_null());
}

#[test]
fn a_floor_sent_to_slurm_runs_through_srun() {
    let r = Repo::new();
    // The floor runs in the node's worktree, `.splice/worktrees/<id>`: its mark goes where a
    // floor may write, sandboxed or not (the worktree goes when the node closes).
    let check = "test -n \"$SLURM_JOB_ID\" && mkdir -p ../../runs/agent-home/floor-tmp \
        && echo \"$SLURM_JOB_NAME\" > ../../runs/agent-home/floor-tmp/ran";
    let mark = r.path().join(".splice/runs/agent-home/floor-tmp/ran");
    let floors = serde_json::json!([ { "kind": "command", "argv": ["sh", "-c", check] } ]);
    let argv = serde_json::json!(["sh", "-c", PROPOSE]);
    let manifest = common::work_step_manifest(argv, floors, 120, 1);
    r.write(".splice/manifest.json", &manifest);
    let root = r.path().canonicalize().unwrap();
    r.write(
        ".splice/config.toml",
        &format!(
            "[executor]\nkind = \"slurm\"\nshared_root = \"{}\"\nfloors = \"slurm\"\n",
            root.display()
        ),
    );
    let id = r.task("Work", &[]);
    let state = tempfile::tempdir().unwrap();
    let (code, envelope, stderr) = run(&r, state.path());
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(envelope["status"], "done", "{envelope:#}");
    let ran = std::fs::read_to_string(&mark).unwrap_or_default();
    assert_eq!(ran.trim(), format!("splice-floor-{id}-work"));
}

#[test]
fn a_killed_runners_job_is_adopted_by_the_next_run_and_never_submitted_twice() {
    let script = format!("if [ \"$SPLICE_ATTEMPT\" = 1 ]; then sleep 3; fi; {PROPOSE}");
    let (r, id, state) = repo(&script, 3, "");
    let mut first = splice(&r, state.path(), &["run", "--output", "json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_job(&r, &id);
    first.kill().unwrap();
    first.wait().unwrap();
    let (code, envelope, stderr) = run(&r, state.path());
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(envelope["status"], "done", "{envelope:#}");
    assert!(stderr.contains("adopted the slurm job"), "{stderr}");
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["attempts"]["work"], 1, "{b:#}");
    let v = verbs(&r);
    assert_eq!(v.iter().filter(|x| *x == "adopt-job").count(), 1, "{v:?}");
    let submitted = std::fs::read_to_string(state.path().join("next")).unwrap();
    assert_eq!(submitted.trim(), "101", "one job in all");
}

#[test]
fn sigterm_cancels_the_runs_jobs_at_no_cost_of_an_attempt() {
    let (r, id, state) = repo("sleep 60", 3, "");
    let first = splice(&r, state.path(), &["run", "--output", "json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_job(&r, &id);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(first.id() as i32, libc::SIGTERM) };
    let out = bounded(first);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        state.path().join("101.cancelled").exists(),
        "scancel was called"
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        !state.path().join("101.exit").exists(),
        "the job was killed, not left to finish"
    );
    let b = r.bead(&id);
    assert!(b["pipeline"]["lease"].is_null(), "released: {b:#}");
    assert_eq!(b["pipeline"]["attempts"]["work"], 0, "{b:#}");
    let exit = &b["pipeline"]["exits"][0];
    assert_eq!(exit["exit"], "cancelled");
    assert!(
        exit["cause"]
            .as_str()
            .unwrap()
            .contains("cancelled by the runner (scancel)")
    );
}

#[test]
fn a_job_cancelled_by_someone_else_is_recorded_once_its_processes_are_gone_and_dispatched_again() {
    let script = format!("if [ \"$SPLICE_ATTEMPT\" = 1 ]; then sleep 60; fi; {PROPOSE}");
    let (r, id, state) = repo(&script, 3, "");
    let run = splice(&r, state.path(), &["run", "--output", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_job(&r, &id);
    // Someone else cancels it: Slurm says CANCELLED at once, its processes go 8 s later.
    let cancelled = Command::new(fake_bin().join("scancel"))
        .arg("101")
        .env("FAKE_SLURM_STATE", state.path())
        .env("FAKE_SLURM_KILLWAIT", "8")
        .status()
        .unwrap();
    assert!(cancelled.success());
    let out = bounded(run);
    let envelope: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(
        envelope["status"],
        "done",
        "{envelope:#}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["attempts"]["work"], 2, "{b:#}");
    let first = &b["pipeline"]["exits"][0];
    assert_eq!(first["exit"], "error");
    assert!(
        first["cause"]
            .as_str()
            .unwrap()
            .contains("CANCELLED (not by this runner)")
    );
}
