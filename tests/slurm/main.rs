//! The Slurm tests (issue 17, "Tests, for real"): how THIS Slurm (the one-node cluster of
//! `scripts/slurm-up.sh`, Debian's slurm-wlm 22.05) reports each end of a job, which the Slurm
//! executor's state mapping reads — and the executor's end-to-end tests (`e2e.rs`).
//!
//! Every test that needs the cluster is `#[ignore]`d, so `cargo test` alone lists it as ignored.
//! `.ci/run` runs them with `--include-ignored` and `SPLICE_SLURM_TESTS=1`; run so, each fails
//! when the variable is unset or Slurm does not answer — never skips:
//!
//! ```sh
//! scripts/slurm-up.sh && source /tmp/splice-slurm/env
//! SPLICE_SLURM_TESTS=1 cargo test --test slurm -- --include-ignored
//! scripts/slurm-down.sh
//! ```
//!
//! Waits are bounded by generous deadlines, never timings. No TIMEOUT case here: a job past a
//! one-minute limit takes 1–2 minutes to end (the executor's end-to-end test covers it).

mod cluster;
#[path = "../common/mod.rs"]
mod common;
mod e2e;

use std::time::Duration;

/// Long enough for a trivial job on an idle one-node cluster to be scheduled, run and end.
const END: Duration = Duration::from_secs(60);

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn a_job_exiting_0_is_completed_with_exit_code_0_0() {
    let c = cluster::require();
    let id = c.submit(&c.name("ok"), "exit 0");
    let job = c.wait_ended(&id, END);
    assert_eq!(job.state, "COMPLETED", "{}", job.line);
    assert_eq!(job.exit_code, (0, 0), "{}", job.line);
    assert_eq!(cluster::field(&job.line, "Reason"), Some("None"));
}

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn a_job_exiting_3_is_failed_with_exit_code_3_0() {
    let c = cluster::require();
    let id = c.submit(&c.name("three"), "exit 3");
    let job = c.wait_ended(&id, END);
    assert_eq!(job.state, "FAILED", "{}", job.line);
    assert_eq!(job.exit_code, (3, 0), "{}", job.line);
    assert_eq!(cluster::field(&job.line, "Reason"), Some("NonZeroExitCode"));
}

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn scancel_of_a_running_job_is_cancelled() {
    let c = cluster::require();
    let id = c.submit(&c.name("cancel"), "sleep 300");
    c.wait_for(&id, &["RUNNING"], END);
    c.scancel(&id);
    let job = c.wait_ended(&id, END);
    assert_eq!(job.state, "CANCELLED", "{}", job.line);
}

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn stdout_and_stderr_land_in_the_output_file() {
    let c = cluster::require();
    let name = c.name("output");
    let id = c.submit(&name, "echo to-stdout; echo to-stderr >&2");
    let job = c.wait_ended(&id, END);
    assert_eq!(job.state, "COMPLETED", "{}", job.line);
    let out = c.output(&name);
    assert_eq!(cluster::field(&job.line, "StdOut"), out.to_str());
    assert_eq!(cluster::field(&job.line, "StdErr"), out.to_str());
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text, "to-stdout\nto-stderr\n");
}

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn sbatch_parsable_prints_the_job_id() {
    let c = cluster::require();
    let raw = c.submit_raw(&c.name("parsable"), "exit 0", &[]);
    let id = c.id_of(&raw);
    // `ID` alone on a one-cluster setup (`ID;CLUSTER` with several clusters).
    assert!(
        raw == format!("{id}\n") || raw.starts_with(&format!("{id};")),
        "{raw:?}"
    );
    c.wait_ended(&id, END);
}

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn the_submitters_environment_reaches_the_job_by_default() {
    let c = cluster::require();
    let name = c.name("env");
    let raw = c.submit_raw(
        &name,
        "echo \"value=$SPLICE_SMOKE_VALUE\"",
        &[("SPLICE_SMOKE_VALUE", "from the runner")],
    );
    let id = c.id_of(&raw);
    let job = c.wait_ended(&id, END);
    assert_eq!(job.state, "COMPLETED", "{}", job.line);
    let text = std::fs::read_to_string(c.output(&name)).unwrap();
    assert_eq!(text, "value=from the runner\n");
}

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn squeue_finds_a_job_by_name_while_it_runs_and_after_it_ended() {
    let c = cluster::require();
    let name = c.name("by-name");
    let id = c.submit(&name, "sleep 2");
    c.wait_for(&id, &["RUNNING", "COMPLETED"], END);
    let rows = c.by_name(&name);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (rows[0].id.as_str(), rows[0].name.as_str()),
        (id.as_str(), name.as_str())
    );
    c.wait_ended(&id, END);
    let rows = c.by_name(&name);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].state, "COMPLETED");
    assert!(
        c.queue().contains(&rows[0]),
        "squeue --states=all lists it too"
    );
    assert!(c.by_name(&c.name("never-submitted")).is_empty());
}

#[test]
#[ignore = "needs SPLICE_SLURM_TESTS=1 and a Slurm cluster (.ci/run)"]
fn an_ended_job_stays_visible_to_scontrol_and_squeue() {
    let c = cluster::require();
    let id = c.submit(&c.name("visible"), "exit 0");
    c.wait_ended(&id, END);
    // MinJobAge=600: ended jobs stay in the controller's memory for 10 minutes; a few seconds
    // later they are still there (the controller purges at most every few seconds).
    std::thread::sleep(Duration::from_secs(6));
    let job = c.job(&id).expect("scontrol still knows the job");
    assert_eq!(job.state, "COMPLETED", "{}", job.line);
    assert!(
        c.queue()
            .iter()
            .any(|r| r.id == id && r.state == "COMPLETED")
    );
    // A job the controller never had: scontrol exits non-zero.
    let err = cluster::run(&["scontrol", "show", "job", "-o", "999999"]).unwrap_err();
    assert!(err.contains("Invalid job id specified"), "{err}");
}

#[test]
fn the_harness_reads_slurms_formats() {
    // No cluster needed: the parsers against the text this Slurm prints.
    let line = "JobId=2 JobName=three UserId=root(0) JobState=FAILED Reason=NonZeroExitCode \
                Dependency=(null) ExitCode=3:0 RunTime=00:00:00";
    let job = cluster::parse_job(line).unwrap();
    assert_eq!((job.state.as_str(), job.exit_code), ("FAILED", (3, 0)));
    let job = cluster::parse_job("JobId=3 JobState=CANCELLED Reason=None ExitCode=0:15").unwrap();
    assert_eq!(job.exit_code, (0, 15));
    assert!(cluster::parse_job("slurm_load_jobs error: Invalid job id specified").is_none());
    let rows = cluster::parse_rows("3|long|CANCELLED\n1|ok|COMPLETED\n");
    assert_eq!(rows[1].state, "COMPLETED");
    assert_eq!(cluster::parse_parsable("42\n").as_deref(), Some("42"));
    assert_eq!(
        cluster::parse_parsable("42;splice\n").as_deref(),
        Some("42")
    );
    assert_eq!(cluster::parse_parsable("sbatch: error: x\n"), None);
}
