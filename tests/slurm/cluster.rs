//! The harness of the Slurm tests: a cluster that answers, and the few client calls the tests read a job's end through (`sbatch --parsable`,
//! `squeue --states=all`, `scontrol show job -o`, `scancel`).
//!
//! The tests that need the cluster are `#[ignore]`d; `.ci/run` runs them with `--include-ignored`
//! and `SPLICE_SLURM_TESTS=1` after `scripts/slurm-up.sh`. Without the variable, or with no node
//! answering within [`READY`], [`require`] panics: the tests never skip silently.
//! The cluster is the one `SLURM_CONF` names (`source /tmp/splice-slurm/env`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a cluster may take to show a node ready for jobs.
pub const READY: Duration = Duration::from_secs(30);

/// How long one client command may take.
pub const COMMAND: Duration = Duration::from_secs(20);

static JOBS: AtomicUsize = AtomicUsize::new(0);

/// A Slurm cluster that answers, and a scratch directory for the jobs' files (on this host: the
/// one-node cluster shares its file system).
pub struct Cluster {
    scratch: tempfile::TempDir,
    /// Every job this cluster handle submitted, cancelled when it is dropped (a failed test
    /// leaves no job running).
    submitted: Mutex<Vec<String>>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let ids = self.submitted.lock().map(|v| v.clone()).unwrap_or_default();
        for id in ids {
            let _ = run(&["scancel", &id]);
        }
    }
}

/// The cluster, which must answer. The tests that call this are `#[ignore]`d, so `cargo test`
/// lists them as ignored; run with `--include-ignored` (as `.ci/run` does) they need
/// `SPLICE_SLURM_TESTS=1` and a cluster that answers, and fail without either — never skip.
pub fn require() -> Cluster {
    if std::env::var_os("SPLICE_SLURM_TESTS").is_none_or(|v| v.is_empty()) {
        panic!(
            "this test needs a Slurm cluster: run scripts/slurm-up.sh, source \
             /tmp/splice-slurm/env, then SPLICE_SLURM_TESTS=1 cargo test --test slurm -- \
             --include-ignored (.ci/run does)"
        );
    }
    let deadline = Instant::now() + READY;
    let mut last = String::new();
    while Instant::now() < deadline {
        match run(&["sinfo", "-h", "-o", "%T"]) {
            Ok(states)
                if states
                    .lines()
                    .any(|s| ["idle", "mixed", "alloc"].iter().any(|w| s.starts_with(w))) =>
            {
                let scratch = tempfile::tempdir().expect("a scratch directory");
                let submitted = Mutex::new(Vec::new());
                return Cluster { scratch, submitted };
            }
            Ok(states) => {
                last = format!("sinfo shows no idle, mixed or allocated node: {states:?}")
            }
            Err(e) => last = e,
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!(
        "SPLICE_SLURM_TESTS is set and Slurm does not answer within {}s ({last}); SLURM_CONF={:?}. \
         Run scripts/slurm-up.sh and source /tmp/splice-slurm/env",
        READY.as_secs(),
        std::env::var_os("SLURM_CONF")
    );
}

/// Run a client command within [`COMMAND`]: its stdout, or what went wrong (exit and stderr).
pub fn run(argv: &[&str]) -> Result<String, String> {
    run_cmd(Command::new(argv[0]).args(&argv[1..]), argv)
}

fn run_cmd(cmd: &mut Command, argv: &[&str]) -> Result<String, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{argv:?} did not start: {e}"))?;
    let deadline = Instant::now() + COMMAND;
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{argv:?} did not answer within {}s",
                COMMAND.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match out.status.success() {
        true => Ok(text(&out.stdout)),
        false => Err(format!(
            "{argv:?} exited {:?}: {}{}",
            out.status.code(),
            text(&out.stderr),
            text(&out.stdout)
        )),
    }
}

/// One row of `squeue --states=all -h -o '%i|%j|%T'`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub id: String,
    pub name: String,
    pub state: String,
}

/// What `scontrol show job -o ID` says of a job's end.
#[derive(Clone, Debug)]
pub struct Job {
    /// `JobState=`: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT…
    pub state: String,
    /// `ExitCode=CODE:SIGNAL`.
    pub exit_code: (i32, i32),
    /// The whole line.
    pub line: String,
}

/// The value of `KEY=` in a `scontrol show … -o` line (values without spaces).
pub fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let prefix = format!("{key}=");
    line.split_whitespace()
        .find_map(|t| t.strip_prefix(prefix.as_str()))
}

/// `squeue -o '%i|%j|%T'`'s lines.
pub fn parse_rows(text: &str) -> Vec<Row> {
    text.lines()
        .filter_map(|l| {
            let mut parts = l.trim().splitn(3, '|');
            Some(Row {
                id: parts.next()?.to_string(),
                name: parts.next()?.to_string(),
                state: parts.next()?.to_string(),
            })
        })
        .collect()
}

/// `scontrol show job -o`'s line, read.
pub fn parse_job(line: &str) -> Option<Job> {
    let state = field(line, "JobState")?.to_string();
    let (code, signal) = field(line, "ExitCode")?.split_once(':')?;
    Some(Job {
        state,
        exit_code: (code.parse().ok()?, signal.parse().ok()?),
        line: line.trim().to_string(),
    })
}

/// `sbatch --parsable`'s answer: `ID` or `ID;CLUSTER`.
pub fn parse_parsable(text: &str) -> Option<String> {
    let id = text.trim().split(';').next()?;
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_digit())).then(|| id.to_string())
}

impl Cluster {
    /// A scratch directory the jobs can read and write.
    pub fn dir(&self) -> &Path {
        self.scratch.path()
    }

    /// A job name no other test of this process uses.
    pub fn name(&self, what: &str) -> String {
        let n = JOBS.fetch_add(1, Ordering::SeqCst);
        format!("splice-test-{}-{n}-{what}", std::process::id())
    }

    /// The output file of a job named `name` in the scratch directory.
    pub fn output(&self, name: &str) -> PathBuf {
        self.dir().join(format!("{name}.out"))
    }

    /// `sbatch --parsable` a job named `name` running `script` (`--wrap`), its output in
    /// [`Cluster::output`], with `env` set in the submitting process; returns the raw answer.
    pub fn submit_raw(&self, name: &str, script: &str, env: &[(&str, &str)]) -> String {
        let out = self.output(name);
        let out = out.to_str().unwrap();
        let dir = self.dir().to_str().unwrap();
        let argv = [
            "sbatch",
            "--parsable",
            "-J",
            name,
            "-o",
            out,
            "-D",
            dir,
            "--wrap",
            script,
        ];
        let mut cmd = Command::new(argv[0]);
        cmd.args(&argv[1..]).envs(env.iter().copied());
        run_cmd(&mut cmd, &argv).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Submit (as [`Cluster::submit_raw`]) and return the job id.
    pub fn submit(&self, name: &str, script: &str) -> String {
        let raw = self.submit_raw(name, script, &[]);
        self.id_of(&raw)
    }

    /// The job id in `sbatch --parsable`'s answer, remembered to cancel on drop.
    pub fn id_of(&self, raw: &str) -> String {
        let id = parse_parsable(raw).unwrap_or_else(|| panic!("sbatch --parsable said {raw:?}"));
        if let Ok(mut ids) = self.submitted.lock() {
            ids.push(id.clone());
        }
        id
    }

    /// Every job the controller still knows, ended ones included.
    pub fn queue(&self) -> Vec<Row> {
        parse_rows(&run(&["squeue", "--states=all", "-h", "-o", "%i|%j|%T"]).unwrap())
    }

    /// The jobs named `name`, ended ones included.
    pub fn by_name(&self, name: &str) -> Vec<Row> {
        let by = format!("--name={name}");
        parse_rows(&run(&["squeue", &by, "--states=all", "-h", "-o", "%i|%j|%T"]).unwrap())
    }

    /// `scontrol show job -o ID`, or `None` when the controller does not know the job.
    pub fn job(&self, id: &str) -> Option<Job> {
        let line = run(&["scontrol", "show", "job", "-o", id]).ok()?;
        Some(parse_job(&line).unwrap_or_else(|| panic!("scontrol said {line:?}")))
    }

    /// Wait until job `id` is in one of `states`, at most `limit`; panics with its last line.
    pub fn wait_for(&self, id: &str, states: &[&str], limit: Duration) -> Job {
        let deadline = Instant::now() + limit;
        loop {
            let job = self.job(id);
            if let Some(job) = &job
                && states.contains(&job.state.as_str())
            {
                return job.clone();
            }
            if Instant::now() > deadline {
                panic!("job {id} not in {states:?} within {limit:?}: {job:?}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Wait until job `id` has ended (any state but PENDING, RUNNING, COMPLETING…).
    pub fn wait_ended(&self, id: &str, limit: Duration) -> Job {
        let ended = [
            "COMPLETED",
            "FAILED",
            "CANCELLED",
            "TIMEOUT",
            "NODE_FAIL",
            "OUT_OF_MEMORY",
            "PREEMPTED",
            "BOOT_FAIL",
            "DEADLINE",
        ];
        self.wait_for(id, &ended, limit)
    }

    /// `scancel ID`.
    pub fn scancel(&self, id: &str) {
        run(&["scancel", id]).unwrap_or_else(|e| panic!("{e}"));
    }
}
