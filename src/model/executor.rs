//! `[executor]` in `.splice/config.toml`: where dispatches run. `local` (the default) runs each
//! dispatch as a process group of the runner; `slurm` hands each one to a Slurm cluster as a
//! batch job (`docs/scale-out.md`). The runner stays the single writer either way.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A dispatch's Slurm job name, `splice-<bead>-<step>-<attempt>-<repo>`: how a restarted runner
/// finds a job a dead one submitted, and what `adopt-job` checks. `repo` tells apart two
/// repositories whose beads share an id (bd's `bd-1` is in many), whose jobs one Slurm user may
/// run side by side: the first 8 hex digits of the sha256 of the state directory's path.
pub fn job_name(bead: &str, step: &str, attempt: u32, repo: &str) -> String {
    format!("splice-{bead}-{step}-{attempt}-{repo}")
}

/// Which backend runs dispatches.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ExecutorKind {
    /// A process group of the runner, on the runner's host.
    #[default]
    Local,
    /// A Slurm batch job per dispatch (`sbatch`), watched by one poller per run.
    Slurm,
}

/// Where the command-running floors (`command`, `tests`, `suite`) run.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum FloorsOn {
    /// On the runner's host.
    #[default]
    Local,
    /// As Slurm jobs (`srun`), with the executor's resources.
    Slurm,
}

/// A job's resources: the executor's defaults, or one step's overrides.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    /// `--partition`: the partition the job is queued on (unset: the cluster's default).
    pub partition: Option<String>,
    /// `--cpus-per-task`.
    pub cpus: Option<u32>,
    /// `--mem`: memory per node, as Slurm writes it (`512M`, `4G`; a bare number is megabytes).
    pub mem: Option<String>,
    /// `--time`, in whole minutes (unset: the step's timeout, rounded up to a minute).
    pub time: Option<u32>,
}

impl Resources {
    /// The job's time limit in whole minutes: `time`, else `timeout_s` rounded up (at least a
    /// minute: Slurm's limits are in minutes).
    pub fn minutes(&self, timeout_s: u64) -> u32 {
        self.time
            .unwrap_or_else(|| u32::try_from(timeout_s.div_ceil(60).max(1)).unwrap_or(u32::MAX))
    }

    /// Slurm's options for a job with these resources: `--time` (from [`Resources::minutes`]),
    /// then `--partition`, `--cpus-per-task` and `--mem` as set. Each value is a token checked at
    /// load, so the options may go into a batch script's `#SBATCH` lines as well as an argv.
    pub fn options(&self, timeout_s: u64) -> Vec<String> {
        let mut out = vec![format!("--time={}", self.minutes(timeout_s))];
        if let Some(p) = &self.partition {
            out.push(format!("--partition={p}"));
        }
        if let Some(c) = self.cpus {
            out.push(format!("--cpus-per-task={c}"));
        }
        if let Some(m) = &self.mem {
            out.push(format!("--mem={m}"));
        }
        out
    }
}

/// `[executor]`: where dispatches (and floors) run, and a Slurm job's resources.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct ExecutorConfig {
    /// `local` (default) or `slurm`.
    pub kind: Option<ExecutorKind>,
    /// `local` (default) or `slurm`: where the command-running floors run.
    pub floors: Option<FloorsOn>,
    /// The root of the file system every compute node shares with the runner's host (absolute).
    /// With `kind = "slurm"` it is required, and the repository (with its `.splice/worktrees`
    /// and `.splice/runs`) must lie under it.
    pub shared_root: Option<PathBuf>,
    /// Every job's `--partition` (unset: the cluster's default).
    pub partition: Option<String>,
    /// Every job's `--cpus-per-task`.
    pub cpus: Option<u32>,
    /// Every job's `--mem` (`512M`, `4G`; a bare number is megabytes).
    pub mem: Option<String>,
    /// Every job's `--time` in whole minutes (unset: the step's timeout, rounded up).
    pub time: Option<u32>,
    /// Per step: `[executor.steps.<step>]`, overriding the defaults key by key.
    #[serde(default)]
    pub steps: BTreeMap<String, Resources>,
}

impl ExecutorConfig {
    /// Where dispatches run (default `local`).
    pub fn kind(&self) -> ExecutorKind {
        self.kind.unwrap_or_default()
    }

    /// Where the command-running floors run (default `local`).
    pub fn floors(&self) -> FloorsOn {
        self.floors.unwrap_or_default()
    }

    /// The defaults of every job.
    pub fn defaults(&self) -> Resources {
        Resources {
            partition: self.partition.clone(),
            cpus: self.cpus,
            mem: self.mem.clone(),
            time: self.time,
        }
    }

    /// The resources of `step`'s jobs: its overrides, else the defaults, key by key.
    pub fn resources(&self, step: &str) -> Resources {
        let d = self.defaults();
        let Some(s) = self.steps.get(step) else {
            return d;
        };
        Resources {
            partition: s.partition.clone().or_else(|| d.partition.clone()),
            cpus: s.cpus.or(d.cpus),
            mem: s.mem.clone().or_else(|| d.mem.clone()),
            time: s.time.or(d.time),
        }
    }

    /// `argv` as a floor of `step` runs it: on the runner's host, or with `floors = "slurm"` as
    /// a Slurm job through `srun` (which waits for it and exits with its code), named `name`,
    /// with the step's resources and a time limit of `timeout_s` rounded up to a minute.
    pub fn floor_argv(
        &self,
        step: &str,
        name: &str,
        timeout_s: u64,
        argv: &[String],
    ) -> Vec<String> {
        if self.kind() != ExecutorKind::Slurm || self.floors() != FloorsOn::Slurm {
            return argv.to_vec();
        }
        let mut out = vec![
            "srun".to_string(),
            "--quiet".to_string(),
            format!("--job-name={name}"),
        ];
        out.extend(self.resources(step).options(timeout_s));
        out.push("--".to_string());
        out.extend(argv.iter().cloned());
        out
    }

    /// Values that type but would do nothing, or harm: named with their key.
    pub fn check(&self) -> Result<(), String> {
        let slurm_only = self.defaults() != Resources::default()
            || !self.steps.is_empty()
            || self.floors() == FloorsOn::Slurm;
        if self.kind() == ExecutorKind::Local && slurm_only {
            return Err(
                "[executor]: partition, cpus, mem, time, floors and [executor.steps] apply to \
                 Slurm jobs only; set kind = \"slurm\" or remove them"
                    .into(),
            );
        }
        if self.kind() == ExecutorKind::Slurm {
            match &self.shared_root {
                None => {
                    return Err(
                        "[executor] shared_root: required with kind = \"slurm\": the \
                                directory every compute node mounts as the runner's host does \
                                (the repository must lie under it)"
                            .into(),
                    );
                }
                Some(p) if !p.is_absolute() => {
                    return Err(format!(
                        "[executor] shared_root: {} is not an absolute path",
                        p.display()
                    ));
                }
                Some(_) => {}
            }
        } else if self.shared_root.is_some() {
            return Err("[executor] shared_root: applies to kind = \"slurm\" only".into());
        }
        check_resources("[executor]", &self.defaults())?;
        for (step, r) in &self.steps {
            check_resources(&format!("[executor.steps.{step}]"), r)?;
        }
        Ok(())
    }
}

fn check_resources(section: &str, r: &Resources) -> Result<(), String> {
    if let Some(p) = &r.partition
        && (p.is_empty()
            || !p
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)))
    {
        return Err(format!(
            "{section} partition: {p:?} is not a partition name (letters, digits, - _ .)"
        ));
    }
    if r.cpus == Some(0) {
        return Err(format!("{section} cpus: at least 1"));
    }
    if r.time == Some(0) {
        return Err(format!(
            "{section} time: at least 1 (minutes; Slurm's limits are in minutes)"
        ));
    }
    if let Some(m) = &r.mem {
        let digits = m.trim_end_matches(['K', 'M', 'G', 'T']);
        let one_unit = m.len() - digits.len() <= 1;
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) || !one_unit {
            return Err(format!(
                "{section} mem: {m:?} is not a Slurm memory size (a number, optionally followed \
                 by K, M, G or T)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn floors_run_through_srun_only_when_sent_to_slurm() {
        let argv = vec!["cargo".to_string(), "test".to_string()];
        let local = Config::parse("").unwrap().executor;
        assert_eq!(local.floor_argv("review", "n", 90, &argv), argv);
        let base = "[executor]\nkind = \"slurm\"\nshared_root = \"/s\"\npartition = \"p\"\n";
        let jobs_only = Config::parse(base).unwrap().executor;
        assert_eq!(jobs_only.floor_argv("review", "n", 90, &argv), argv);
        let sent = Config::parse(&format!("{base}floors = \"slurm\"\n"))
            .unwrap()
            .executor;
        assert_eq!(
            sent.floor_argv("review", "splice-floor-a-review", 90, &argv),
            [
                "srun",
                "--quiet",
                "--job-name=splice-floor-a-review",
                "--time=2",
                "--partition=p",
                "--",
                "cargo",
                "test"
            ]
        );
    }

    use super::super::config::Config;
    use super::*;

    #[test]
    fn a_step_overrides_the_defaults_key_by_key() {
        let c = Config::parse(
            "[executor]\nkind = \"slurm\"\nshared_root = \"/shared\"\npartition = \"batch\"\n\
             cpus = 2\nmem = \"4G\"\n[executor.steps.implement]\ncpus = 8\ntime = 90\n",
        )
        .unwrap();
        let r = c.executor.resources("implement");
        assert_eq!(r.partition.as_deref(), Some("batch"));
        assert_eq!((r.cpus, r.time), (Some(8), Some(90)));
        assert_eq!(r.mem.as_deref(), Some("4G"));
        assert_eq!(c.executor.resources("review").cpus, Some(2));
        assert_eq!(c.executor.kind(), ExecutorKind::Slurm);
    }

    #[test]
    fn keys_that_would_do_nothing_or_harm_are_refused_by_name() {
        let e = |t: &str| Config::parse(t).unwrap_err();
        assert!(e("[executor]\ncpus = 2\n").contains("Slurm jobs only"));
        assert!(e("[executor]\nkind = \"slurm\"\n").contains("shared_root: required"));
        let slurm = "[executor]\nkind = \"slurm\"\nshared_root = \"/s\"\n";
        assert!(e(&format!("{slurm}mem = \"4GB\"\n")).contains("mem"));
        assert!(e(&format!("{slurm}cpus = 0\n")).contains("cpus"));
        assert!(e(&format!("{slurm}time = 0\n")).contains("time"));
        assert!(e(&format!("{slurm}partition = \"a b\"\n")).contains("partition"));
        assert!(e("[executor]\nkind = \"k8s\"\n").contains("local"));
        assert!(e("[executor]\nkind = \"slurm\"\nshared_root = \"rel\"\n").contains("absolute"));
        assert!(Config::parse(&format!("{slurm}mem = \"512\"\n")).is_ok());
        assert!(e("[executor]\nfloors = \"slurm\"\n").contains("Slurm jobs only"));
        assert_eq!(
            Config::parse("").unwrap().executor.kind(),
            ExecutorKind::Local
        );
    }
}
