//! The runner's own cost per pass, outside agent commands.
//!
//! * `steady_pass/10000`: a store of 10,000 beads (most closed, 100 resting at a gate); one
//!   steady-state pass = refresh from the journal (nothing changed) + decide + the envelope. The
//!   pass file and the `record-run` transition are measured apart (`record_pass`), since their
//!   cost is the writer's fsyncs, not the store's size.
//! * `campaign/200`: a root with 200 leaves whose agent proposes at once; the whole run, from the
//!   split to `done`. The run's overhead per pass (time in passes, not waiting for agents) is
//!   printed once.
//! * `dispatch_cost`: `splice run` as its own process on a root split into 50, 200 or 800
//!   ready leaves (`SPLICE_BENCH_SIZES=50,200,800`; default 50) at `--jobs` 1, 8 and 32
//!   (`SPLICE_BENCH_JOBS`; default 1,8), each leaf's agent committing one file and proposing,
//!   each landed directly on `main` (checked out in the main checkout). Printed, not timed by
//!   criterion: the splice process's own CPU (user + system, its threads included, its
//!   children — the agents, git — not) per dispatch, and the wall time. It is read from
//!   `/proc/<pid>/stat` once the process has exited and before it is reaped (`waitid` with
//!   `WNOWAIT`), so no agent's CPU is in it. `SPLICE_BENCH_BIN` runs another splice binary
//!   (an older build, to compare); `SPLICE_BENCH_SANDBOX=off` runs the dispatches unsandboxed
//!   (`SPLICE_SANDBOX=off`), so the difference is what building the sandbox costs the runner.
//!
//!   Issue 38, on a shared 2-core machine (load 3-4, so ±20% between runs), release build, ms of
//!   splice's own CPU per dispatch at --jobs 1 / 8 / 32:
//!
//!   | scenario | leaves | before | after |
//!   |---|---|---|---|
//!   | gate | 50 | 28.2 / 28.2 / 28.2 | 26.4 / 28.8 / 29.0 |
//!   | gate | 200 | 40.8 / 33.0 / 32.9 | 32.2 / 17.1 / 19.7 |
//!   | gate | 800 | 66.1 / 60.3 / 48.4 | 31.1 / 22.3 / 30.2 |
//!   | land | 50 | 23.0 / 17.0 / 23.2 | 24.6 / 21.2 / 23.6 |
//!   | land | 200 | 26.2 / 23.6 / 29.6 | 23.2 / 23.3 / 18.6 |
//!   | land | 800 | 30.5 / 18.1 / 25.8 | 25.6 / 16.9 / 28.2 |
//!
//!   Before, adding a worktree opened every other one (libgit2's check that the branch is
//!   checked out nowhere), so with each node's worktree kept (gate) a dispatch cost O(N);
//!   gate at 800, --jobs 8 went from 6.8 to 46.9 dispatches/s. The sandbox's setup is about
//!   2.5 ms of it (gate, 50, --jobs 8: 20.4 sandboxed, 17.8 with `SPLICE_BENCH_SANDBOX=off`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group};
use splice::decide::decide;
use splice::driver::events::{Events, Output};
use splice::driver::feed::Feed;
use splice::driver::{envelope, runner};
use splice::model::Bead;
use splice::model::bead::{Gate, GateState, Kind, Status};
use splice::store::Store;

const AT: &str = "2026-01-01T00:00:00Z";

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@example.com")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@example.com")
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(dir.path().join("README.md"), "bench\n").unwrap();
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "init"]);
    dir
}

/// 10,000 leaf beads under one root: all closed but 100 that wait at a gate.
fn big_store(dir: &Path, n: usize) -> Store {
    let beads = dir.join(".splice/beads");
    std::fs::create_dir_all(&beads).unwrap();
    let mut root = Bead::new("sp-root".into(), "root".into(), String::new(), AT);
    root.pipeline.kind = Kind::Root;
    root.pipeline.route = "root".into();
    root.pipeline.step = "delegate".into();
    root.pipeline.seq = 1;
    std::fs::write(beads.join("sp-root.json"), root.to_file_bytes()).unwrap();
    for i in 1..n {
        let id = format!("sp-root.{i}");
        let mut b = Bead::new(id.clone(), format!("leaf {i}"), "x".repeat(300), AT);
        b.parent = Some("sp-root".into());
        b.pipeline.kind = Kind::Leaf;
        b.pipeline.route = "leaf".into();
        b.pipeline.step = "implement".into();
        b.pipeline.seq = 3;
        b.pipeline.entered = 1;
        if i % 100 == 0 {
            b.pipeline.gate = Some(Box::new(Gate {
                step: "implement".into(),
                state: GateState::Pending,
                seq: 2,
                by: None,
                autonomy: None,
                supplied_by: None,
                route: None,
                land: None,
                at: AT.into(),
            }));
        } else {
            b.status = Status::Closed;
        }
        std::fs::write(beads.join(format!("{id}.json")), b.to_file_bytes()).unwrap();
    }
    Store::discover(Some(dir)).unwrap()
}

fn steady_pass(c: &mut Criterion) {
    let dir = repo();
    let store = big_store(dir.path(), 10_000);
    let who = runner::identity().unwrap();
    let mut feed = Feed::load(&store, Some("sp-root"), who).unwrap();
    let inflight = BTreeMap::new();
    let mut group = c.benchmark_group("runner");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(6));
    group.bench_function(BenchmarkId::new("steady_pass", 10_000), |b| {
        b.iter(|| {
            feed.refresh().unwrap();
            let decision = decide(&feed.snapshot);
            envelope::build(&feed.snapshot, &decision, 1, Vec::new(), &inflight)
        })
    });
    group.finish();
}

/// A root split into `n` leaves; the leaf's one step proposes at once.
fn campaign_store(dir: &Path, n: usize) -> Store {
    campaign_store_with(
        dir,
        n,
        "splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact done",
        "[limits]\njobs = 2\n",
        false,
    )
}

/// [`campaign_store`] with the leaves' command `agent` (a `sh -c` script) and `config`; with
/// `gated`, a leaf's step waits for a person once it passed (its worktree kept meanwhile).
fn campaign_store_with(dir: &Path, n: usize, agent: &str, config: &str, gated: bool) -> Store {
    let mut manifest = serde_json::json!({
        "routes": { "root": ["plan", "delegate"], "compound": ["plan", "delegate"], "leaf": ["work"] },
        "steps": [
            { "name": "plan", "role": "split", "floors": [] },
            { "name": "delegate", "floors": [ { "kind": "children_finished" } ] },
            { "name": "work", "floors": [],
              "run": { "argv": ["sh", "-c", agent] } }
        ]
    });
    if gated {
        manifest["steps"][2]["gate"] = "human".into();
    }
    std::fs::create_dir_all(dir.join(".splice/beads")).unwrap();
    std::fs::write(dir.join(".splice/manifest.json"), manifest.to_string()).unwrap();
    std::fs::write(dir.join(".splice/config.toml"), config).unwrap();
    let store = Store::discover(Some(dir)).unwrap();
    let person = splice::transition::Ctx::person(&store, "2026-01-01T00:00:00Z");
    let root = splice::transition::create::init(
        &person,
        splice::transition::create::NewNode {
            title: "bench".into(),
            target: Some("main".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let root = root.id;
    let children: Vec<splice::transition::split::ChildSpec> = (0..n)
        .map(|i| serde_json::from_value(serde_json::json!({ "title": format!("leaf {i}"), "files": [format!("src/f{i}.rs")] })).unwrap())
        .collect();
    splice::transition::split::split(&person, &root, &children).unwrap();
    splice::transition::propose::propose(
        &person,
        &root,
        splice::transition::propose::ProposeArgs {
            step: "plan".into(),
            artifact: "split".into(),
            ..Default::default()
        },
    )
    .unwrap();
    splice::transition::complete::complete(
        &person,
        &root,
        "plan",
        None,
        splice::transition::Verb::Complete,
    )
    .unwrap();
    store
}

fn campaign(c: &mut Criterion) {
    // The agent calls `splice`: put the built binary first on PATH.
    let bin = Path::new(env!("CARGO_BIN_EXE_splice"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // SAFETY: set once, before any thread of this benchmark starts.
    unsafe { std::env::set_var("PATH", path) };
    let mut group = c.benchmark_group("runner");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    let mut reported = false;
    group.bench_function(BenchmarkId::new("campaign", 200), |b| {
        b.iter_batched(
            || {
                let dir = repo();
                let store = campaign_store(dir.path(), 200);
                (dir, store)
            },
            |(dir, store)| {
                let sum = runner::run(&store, &runner::Options::default(), &Events::new(Output::Quiet)).unwrap();
                assert_eq!(sum.status, splice::model::RunStatus::Done);
                if !reported {
                    reported = true;
                    eprintln!(
                        "\ncampaign/200: {} passes, {} dispatches, wall {} ms, runner overhead {} ms ({:.2} ms per pass)",
                        sum.passes,
                        sum.dispatches,
                        sum.wall_ms,
                        sum.overhead_ms,
                        sum.overhead_ms as f64 / sum.passes as f64
                    );
                }
                drop(dir);
            },
            criterion::BatchSize::PerIteration,
        )
    });
    group.finish();
}

/// A leaf's agent in `dispatch_cost`: one new file committed on the node's branch, then the
/// proposal.
const COMMITTING_AGENT: &str = "echo \"$SPLICE_BEAD\" > \"$SPLICE_BEAD.txt\" && \
     git add \"$SPLICE_BEAD.txt\" && \
     git -c user.name=b -c user.email=b@example.com commit -q -m \"$SPLICE_BEAD\" && \
     splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact done";

/// The numbers in `SPLICE_BENCH_<name>` (comma-separated), else `default`.
fn sizes(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(format!("SPLICE_BENCH_{name}"))
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| default.to_vec())
}

/// CPU seconds of a process that has exited and is not reaped yet: its own (user, system),
/// every thread's included, and its reaped children's (user + system).
fn zombie_cpu(pid: u32) -> (f64, f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name, which is in parentheses: state is field 3.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // SAFETY: sysconf has no preconditions.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    // utime is field 14, stime 15, cutime 16, cstime 17.
    (f[11] / tick, f[12] / tick, (f[13] + f[14]) / tick)
}

/// Run `splice run --jobs <jobs>` with the binary `bin` on the store in `dir` to its end; the
/// splice process's own (user, system) CPU seconds, its children's, and the wall time.
fn measured_run(bin: &Path, dir: &Path, jobs: usize) -> (f64, f64, f64, Duration) {
    let started = std::time::Instant::now();
    let mut child = Command::new(bin)
        .args(["run", "--json", "--jobs", &jobs.to_string()])
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = std::thread::spawn({
        let mut stdout = child.stdout.take().unwrap();
        move || {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut stdout, &mut s).unwrap();
            s
        }
    });
    let err = std::thread::spawn({
        let mut stderr = child.stderr.take().unwrap();
        move || {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut stderr, &mut s).unwrap();
            s
        }
    });
    // Wait for the exit without reaping: `/proc/<pid>/stat` still holds the process's times.
    // SAFETY: a zeroed siginfo_t is a valid out-parameter; the pid is our child's.
    let waited = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(
            libc::P_PID,
            child.id(),
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        )
    };
    assert_eq!(waited, 0, "waitid: {}", std::io::Error::last_os_error());
    let wall = started.elapsed();
    let (user, sys, children) = zombie_cpu(child.id());
    let status = child.wait().unwrap();
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(status.success(), "splice run: {status}\n{err}");
    let envelope: serde_json::Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("splice run --json printed no envelope ({e}): {out}\n{err}"));
    let status = envelope["status"].as_str().unwrap_or_default();
    assert!(
        ["done", "suspended-human"].contains(&status),
        "{out}\n{err}"
    );
    (user, sys, children, wall)
}

/// The splice process's own CPU per dispatch of `splice run` over `n` ready leaves (module doc).
fn dispatch_cost() {
    let bin = std::env::var_os("SPLICE_BENCH_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_splice").into());
    // The agents call `splice`: the same binary, first on PATH.
    let on_path = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&bin, on_path.path().join("splice")).unwrap();
    let path = format!(
        "{}:{}",
        on_path.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // SAFETY: set before any thread of this function starts.
    unsafe { std::env::set_var("PATH", path) };
    if let Ok(v) = std::env::var("SPLICE_BENCH_SANDBOX") {
        // SAFETY: as above.
        unsafe { std::env::set_var(splice::sandbox::ENV, v) };
    }
    eprintln!(
        "\ndispatch_cost ({}; sandbox {}): splice's own CPU per dispatch, children excluded",
        bin.display(),
        std::env::var(splice::sandbox::ENV).unwrap_or_else(|_| "default".into())
    );
    eprintln!(
        "        leaves  jobs   user ms  sys ms  cpu ms/dispatch  agents ms/dispatch  wall s  dispatches/s"
    );
    let scenarios = std::env::var("SPLICE_BENCH_SCENARIO").unwrap_or_else(|_| "land,gate".into());
    eprintln!(
        "   land: each leaf landed and its checkouts removed; gate: each leaf left waiting at a gate, its worktree kept"
    );
    for scenario in scenarios.split(',') {
        let gated = scenario == "gate";
        for n in sizes("SIZES", &[50]) {
            for jobs in sizes("JOBS", &[1, 8]) {
                let dir = repo();
                campaign_store_with(
                    dir.path(),
                    n,
                    COMMITTING_AGENT,
                    "[delivery]\nmethod = \"direct\"\n",
                    gated,
                );
                let (user, sys, children, wall) = measured_run(&bin, dir.path(), jobs);
                let per = |s: f64| s * 1000.0 / n as f64;
                eprintln!(
                    "   {scenario:>4} {n:>6}  {jobs:>4}  {:>8.0}  {:>6.0}  {:>15.1}  {:>18.1}  {:>6.1}  {:>12.1}",
                    user * 1000.0,
                    sys * 1000.0,
                    per(user + sys),
                    per(children),
                    wall.as_secs_f64(),
                    n as f64 / wall.as_secs_f64()
                );
            }
        }
    }
}

criterion_group!(benches, steady_pass, campaign);

fn main() {
    // `cargo bench --bench runner -- dispatch_cost` runs it alone.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let cost_only = filter.iter().any(|f| f == "dispatch_cost");
    if !cost_only {
        benches();
        Criterion::default().configure_from_args().final_summary();
    }
    if filter.is_empty() || cost_only {
        dispatch_cost();
    }
}
