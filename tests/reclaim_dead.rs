//! Issue 33, "Dead runners": a claim whose runner died (`kill -9`) is named for what it is, and a
//! person may let a run release it (`splice run --reclaim-dead`, `[limits] reclaim_dead`) — never
//! a Slurm job's claim, a live holder's, or one while a process of its dispatch still runs.

mod common;

use std::process::{Child, Command, Stdio};

use common::Repo;
use serde_json::Value;

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

/// The host name splice puts in a runner's holder (`:` would split the holder).
fn host() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    assert_eq!(rc, 0);
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).replace(':', "_")
}

/// A pid no process has any more: a child that exited and was reaped.
fn dead_pid() -> i32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id() as i32;
    child.wait().unwrap();
    pid
}

/// A runner holder of this host naming `pid`.
fn holder_of(pid: i32) -> String {
    format!("run:{}:{pid}:20260101T000000Z-{pid}-0", host())
}

/// A lone task at wave autonomy whose steps the simulated agent does, claimed by `holder`.
fn claimed_task(r: &Repo, holder: &str) -> String {
    let id = r.task("Left behind", &["--autonomy", "wave"]);
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"{SPLICE}\", \"sim-agent\"]\nusage = \"file\"\n\n\
             [delivery]\nmethod = \"direct\"\n"
        ),
    );
    r.ok(&["transition", "claim", "--bead", &id, "--holder", holder]);
    id
}

fn status_text(r: &Repo) -> String {
    let out = r.run(&["status", "--color", "never"]);
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository on `trunk`, where a lone task lands without a person's approval (`main` is
/// protected: issue 33).
fn repo() -> Repo {
    let r = Repo::unconfined();
    r.git(&["checkout", "-q", "-b", "trunk"]);
    r
}

#[test]
fn status_says_the_runner_that_claimed_a_node_has_died() {
    let r = repo();
    let pid = dead_pid();
    let holder = holder_of(pid);
    let id = claimed_task(&r, &holder);

    let text = status_text(&r);
    let headline = text.lines().next().unwrap();
    assert!(
        !headline.contains("another runner is at work"),
        "the headline must not say a dead runner works: {headline}"
    );
    assert!(
        headline.contains(&format!(
            "the runner that claimed {id} has died (pid {pid} gone)"
        )),
        "{headline}"
    );
    assert!(headline.contains("splice run --reclaim-dead"), "{headline}");

    // The JSON says the same: the rest carries how the holder died.
    let status = r.ok(&["status", "--json"]);
    let node = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id.as_str())
        .unwrap();
    assert_eq!(node["rest"]["kind"], "running");
    assert_eq!(node["rest"]["died"]["pid"], pid);
    assert_eq!(node["rest"]["died"]["cause"], "gone");

    // A run without the flag releases nothing and rests as before (`suspended-running`, 11).
    let before = r.bead(&id);
    let out = r.run(&["run", "--exit-status"]);
    assert_eq!(out.status.code(), Some(11));
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(
        human.contains(&format!("the runner that claimed {id} has died")),
        "{human}"
    );
    assert_eq!(
        r.bead(&id)["pipeline"]["lease"],
        before["pipeline"]["lease"]
    );
}

/// The journal's committed records that cleared a claim: (actor, reason).
fn clears(r: &Repo) -> Vec<(String, String)> {
    r.journal()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["verb"] == "release-clear")
        .map(|v| {
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            (s("actor"), s("reason"))
        })
        .collect()
}

/// `splice run` with `args`, its stream-json events parsed.
fn run_events(r: &Repo, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["run", "--output", "stream-json"];
    all.extend_from_slice(args);
    let out = r.run(&all);
    common::no_panic(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "splice {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn status_of(events: &[Value]) -> String {
    let result = events.iter().find(|e| e["type"] == "result").unwrap();
    result["status"].as_str().unwrap().to_string()
}

fn warnings(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "warning")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn reclaim_dead_releases_a_dead_runners_claim_as_the_persons_act_and_the_node_runs() {
    let r = repo();
    let pid = dead_pid();
    let holder = holder_of(pid);
    let id = claimed_task(&r, &holder);

    let events = run_events(&r, &["--reclaim-dead"]);
    let reclaimed: Vec<&Value> = events.iter().filter(|e| e["type"] == "reclaimed").collect();
    assert_eq!(reclaimed.len(), 1, "{events:#?}");
    assert_eq!(reclaimed[0]["bead"], id.as_str());
    assert_eq!(reclaimed[0]["holder"], holder.as_str());
    assert_eq!(reclaimed[0]["died"]["pid"], pid);
    assert_eq!(reclaimed[0]["died"]["cause"], "gone");
    assert_eq!(reclaimed[0]["by"], "--reclaim-dead");
    assert_eq!(status_of(&events), "done");
    assert_eq!(r.bead(&id)["status"], "closed");

    let cleared = clears(&r);
    assert_eq!(cleared.len(), 1, "{cleared:?}");
    let (actor, reason) = &cleared[0];
    assert_eq!(actor, "person", "the release is the person's act");
    assert!(
        reason.contains(&format!("cleared claim of {holder}")),
        "{reason}"
    );
    assert!(reason.contains(&format!("pid {pid} gone")), "{reason}");
    assert!(reason.contains("`splice run --reclaim-dead`"), "{reason}");
}

#[test]
fn the_config_key_asks_the_same_of_every_run_and_the_journal_names_it() {
    let r = repo();
    let id = claimed_task(&r, &holder_of(dead_pid()));
    let config = std::fs::read_to_string(r.state().join("config.toml")).unwrap();
    r.write(
        ".splice/config.toml",
        &format!("{config}\n[limits]\nreclaim_dead = true\n"),
    );
    let events = run_events(&r, &[]);
    assert_eq!(status_of(&events), "done", "{events:#?}");
    let reclaimed = events.iter().find(|e| e["type"] == "reclaimed").unwrap();
    assert_eq!(reclaimed["by"], "[limits] reclaim_dead");
    let (actor, reason) = &clears(&r)[0];
    assert_eq!(actor, "person");
    assert!(
        reason.contains("`[limits] reclaim_dead = true`"),
        "{reason}"
    );
    assert_eq!(r.bead(&id)["status"], "closed");
}

#[test]
fn without_the_flag_or_the_key_nothing_is_released() {
    let r = repo();
    let holder = holder_of(dead_pid());
    let id = claimed_task(&r, &holder);
    let events = run_events(&r, &[]);
    assert_eq!(status_of(&events), "suspended-running");
    assert!(events.iter().all(|e| e["type"] != "reclaimed"));
    assert_eq!(r.bead(&id)["pipeline"]["lease"]["holder"], holder.as_str());
    assert!(clears(&r).is_empty());
    // A dry run never writes, flag or not.
    r.ok(&["pass", "--dry-run"]);
    assert_eq!(r.bead(&id)["pipeline"]["lease"]["holder"], holder.as_str());
}

#[test]
fn a_claim_naming_a_slurm_job_is_never_reclaimed() {
    let r = repo();
    let holder = holder_of(dead_pid());
    let id = claimed_task(&r, &holder);
    // The claim names its job, as `record-job` leaves it once `sbatch` answered.
    let path = r.state().join("beads").join(format!("{id}.json"));
    let mut bead = r.bead(&id);
    bead["pipeline"]["lease"]["job"] = "4242".into();
    std::fs::write(&path, serde_json::to_string_pretty(&bead).unwrap()).unwrap();

    let events = run_events(&r, &["--reclaim-dead"]);
    assert_eq!(status_of(&events), "suspended-running");
    assert!(events.iter().all(|e| e["type"] != "reclaimed"));
    let warned = warnings(&events);
    assert!(
        warned
            .iter()
            .any(|w| w.contains("Slurm job 4242") && w.contains("adopt-job")),
        "{warned:?}"
    );
    assert_eq!(r.bead(&id)["pipeline"]["lease"]["job"], "4242");
    assert!(clears(&r).is_empty());
}

#[test]
fn a_live_holders_claim_and_one_splice_cannot_judge_are_not_reclaimed() {
    let r = repo();
    // This test's own process: alive, on this host.
    let alive = holder_of(std::process::id() as i32);
    let id = claimed_task(&r, &alive);
    let other = r.task("Elsewhere", &["--autonomy", "wave"]);
    let elsewhere = format!("run:not-{}:{}:r", host(), dead_pid());
    r.ok(&[
        "transition",
        "claim",
        "--bead",
        &other,
        "--holder",
        &elsewhere,
    ]);

    let events = run_events(&r, &["--reclaim-dead"]);
    assert_eq!(status_of(&events), "suspended-running");
    assert!(events.iter().all(|e| e["type"] != "reclaimed"));
    assert_eq!(r.bead(&id)["pipeline"]["lease"]["holder"], alive.as_str());
    assert_eq!(
        r.bead(&other)["pipeline"]["lease"]["holder"],
        elsewhere.as_str()
    );
    assert!(clears(&r).is_empty());
    let headline = status_text(&r).lines().next().unwrap().to_string();
    assert!(!headline.contains("has died"), "{headline}");
}

/// A process that stays until killed, with `env` set.
fn sleeper(env: &[(&str, &str)]) -> Child {
    let mut c = Command::new("sleep");
    c.arg("600").stdout(Stdio::null()).stderr(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

/// Wait (at most 10 s) until the child has exec'd `sleep` (before, it is a copy of this test).
fn wait_exec(child: &Child) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !std::fs::read(format!("/proc/{}/cmdline", child.id()))
        .is_ok_and(|c| c.starts_with(b"sleep"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the child never ran sleep"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn a_live_process_of_the_dead_runners_dispatch_keeps_the_claim_until_it_ends() {
    let r = repo();
    let holder = holder_of(dead_pid());
    let id = claimed_task(&r, &holder);
    // What an agent of the dead runner's dispatch left running (the fence did not take it).
    let mut left = sleeper(&[("SPLICE_HOLDER", &holder), ("SPLICE_BEAD", &id)]);
    wait_exec(&left);

    let events = run_events(&r, &["--reclaim-dead"]);
    assert_eq!(status_of(&events), "suspended-running");
    assert!(events.iter().all(|e| e["type"] != "reclaimed"));
    let warned = warnings(&events);
    let pid = format!("pid {}", left.id());
    assert!(
        warned
            .iter()
            .any(|w| w.contains(&pid) && w.contains("is kept")),
        "the warning names the process: {warned:?}"
    );
    assert_eq!(r.bead(&id)["pipeline"]["lease"]["holder"], holder.as_str());

    left.kill().unwrap();
    left.wait().unwrap();
    let events = run_events(&r, &["--reclaim-dead"]);
    assert_eq!(status_of(&events), "done", "{events:#?}");
    assert_eq!(clears(&r).len(), 1);
}

/// This boot's id, as a runner records it.
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn a_reused_pid_does_not_pass_for_the_dead_runner() {
    let r = repo();
    // A live process now has the pid the runner's holder names; the runner's record (this
    // boot) says the runner started at another time.
    let mut squatter = sleeper(&[]);
    wait_exec(&squatter);
    let pid = squatter.id() as i32;
    let run = format!("20260101T000000Z-{pid}-0");
    let holder = format!("run:{}:{pid}:{run}", host());
    let id = claimed_task(&r, &holder);
    let record = serde_json::json!({
        "schema_version": 1, "boot_id": boot_id(), "pid": pid, "start": 1,
        "holder": holder, "run": run, "person": []
    });
    r.write(
        &format!(".splice/runs/runners/{run}.json"),
        &record.to_string(),
    );

    let status = r.ok(&["status", "--json"]);
    let node = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id.as_str())
        .unwrap()
        .clone();
    assert_eq!(node["rest"]["died"]["cause"], "reused", "{node:#}");
    let events = run_events(&r, &["--reclaim-dead"]);
    squatter.kill().unwrap();
    squatter.wait().unwrap();
    assert_eq!(status_of(&events), "done", "{events:#?}");
    let (_, reason) = &clears(&r)[0];
    assert!(
        reason.contains(&format!("pid {pid} now another process")),
        "{reason}"
    );
    // With no claim naming its holder any more, the next run sweeps the stale record.
    run_events(&r, &[]);
    assert!(!r.state().join(format!("runs/runners/{run}.json")).exists());
}

#[test]
fn a_runner_killed_with_sigkill_leaves_a_claim_the_next_run_reclaims() {
    let r = repo();
    let id = r.task("Interrupted", &["--autonomy", "wave"]);
    let pidfile = r.path().join("agent.pid");
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"sh\", \"-c\", \"echo $$ > {}; exec {SPLICE} sim-agent --sleep-ms 60000\"]\n\
             [delivery]\nmethod = \"direct\"\n",
            pidfile.display()
        ),
    );
    let mut runner = r.cmd(&["run", "--output", "json"]).spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    // The pid once the agent has written it whole (the shell creates the file, then writes).
    let written = || {
        std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
    };
    while !(written().is_some() && r.bead(&id)["pipeline"]["lease"].is_object()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the runner never dispatched"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    runner.kill().unwrap();
    runner.wait().unwrap();
    // The fence takes the agent's group with the runner.
    let agent: i32 = written().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::fs::read_to_string(format!("/proc/{agent}/stat")).is_ok_and(|s| !s.contains(") Z "))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent outlived its runner"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let holder = r.bead(&id)["pipeline"]["lease"]["holder"]
        .as_str()
        .unwrap()
        .to_string();
    let headline = status_text(&r).lines().next().unwrap().to_string();
    assert!(
        headline.contains(&format!("the runner that claimed {id} has died")),
        "{headline}"
    );

    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"{SPLICE}\", \"sim-agent\"]\nusage = \"file\"\n\n\
             [delivery]\nmethod = \"direct\"\n"
        ),
    );
    let events = run_events(&r, &["--reclaim-dead"]);
    assert_eq!(status_of(&events), "done", "{events:#?}");
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed");
    assert_eq!(
        b["pipeline"]["attempts"]["generate-spec"], 1,
        "the killed dispatch counted no attempt"
    );
    let (actor, reason) = &clears(&r)[0];
    assert_eq!(actor, "person");
    assert!(reason.contains(&holder), "{reason}");
}
