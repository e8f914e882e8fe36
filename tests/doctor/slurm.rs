//! The `slurm` check: with `[executor] kind = "slurm"`, fake `sbatch`, `squeue` and `sacct`
//! (scripts in a directory put first on `PATH`; no real cluster needed) answering and failing.
//! `sbatch` or `squeue` failing needs a person; `sacct` failing is a note (accounting needs
//! slurmdbd, which splice does not depend on); with `kind = "local"` the check says it is not
//! used.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::common::Repo;
use super::{healthy, of, others_ok, the};

/// The healthy repository with `[executor] kind = "slurm"` (its agent kept).
fn slurm_repo() -> Repo {
    let (r, _) = healthy();
    let config = std::fs::read_to_string(r.path().join(".splice/config.toml")).unwrap();
    r.write(
        ".splice/config.toml",
        &format!(
            "{config}\n[executor]\nkind = \"slurm\"\nshared_root = \"{}\"\n",
            r.path().display()
        ),
    );
    r
}

/// A fake Slurm command answering `args` with `body` (any other arguments: exit 9).
fn fake(bin: &Path, name: &str, args: &str, body: &str) {
    std::fs::create_dir_all(bin).unwrap();
    let path = bin.join(name);
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\n\
             [ \"$*\" = \"{args}\" ] || {{ echo \"unexpected: $*\" >&2; exit 9; }}\n\
             {body}\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Fakes of the three commands, each answering as a working cluster without slurmdbd does.
fn answering(r: &Repo) -> PathBuf {
    let bin = r.path().join("fake-bin");
    fake(&bin, "sbatch", "--version", "echo 'slurm-wlm 22.05.8'");
    fake(&bin, "squeue", "-h", "echo '  4 debug tl root R 0:16 1 vm'");
    fake(
        &bin,
        "sacct",
        "-n",
        "echo 'Slurm accounting storage is disabled' >&2; exit 1",
    );
    bin
}

/// `PATH` with `bin` first and no directory holding a real Slurm command.
fn path_with(bin: &Path) -> OsString {
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&inherited)
        .filter(|d| {
            !["sbatch", "squeue", "sacct"]
                .iter()
                .any(|c| d.join(c).exists())
        })
        .collect();
    dirs.insert(0, bin.to_path_buf());
    // This splice, as a person has theirs (the committed Claude hook finds it on PATH).
    let splice = Path::new(env!("CARGO_BIN_EXE_splice")).parent().unwrap();
    dirs.insert(1, splice.to_path_buf());
    std::env::join_paths(dirs).unwrap()
}

/// `splice doctor --json` with `bin` first on `PATH`.
fn doctor_with(r: &Repo, bin: &Path) -> (i32, Value) {
    let out = r
        .cmd(&["doctor", "--json"])
        .env("PATH", path_with(bin))
        .output()
        .unwrap();
    super::common::no_panic(&out);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    (out.status.code().unwrap(), report)
}

fn messages(report: &Value) -> Vec<String> {
    of(report, "slurm")
        .iter()
        .map(|f| format!("{} {}", f["severity"], f["message"]))
        .collect()
}

#[test]
fn with_a_local_executor_the_check_says_it_is_not_used() {
    let (r, _) = healthy();
    let (code, report) = super::doctor(&r);
    assert_eq!(code, 0, "{report:#}");
    let f = the(&report, "slurm", "ok");
    assert_eq!(f["message"], "not used: [executor] kind is \"local\"");
}

#[test]
fn a_cluster_that_answers_passes_and_sacct_without_slurmdbd_is_a_note() {
    let r = slurm_repo();
    let bin = answering(&r);
    let (code, report) = doctor_with(&r, &bin);
    assert_eq!(code, 0, "{report:#}");
    // Slurm jobs are not sandboxed yet: the sandbox check says so.
    others_ok(&report, &["sandbox"]);
    let found = messages(&report);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].contains("`sbatch --version` answers") && found[0].contains("slurm-wlm 22.05.8"),
        "{found:#?}"
    );
    assert!(
        found[1].contains("`squeue -h` answers: the controller answers"),
        "{found:#?}"
    );
    assert!(
        found[2].contains("`sacct -n` exited 1: Slurm accounting storage is disabled")
            && found[2].contains("splice does not depend on it"),
        "{found:#?}"
    );
}

#[test]
fn a_controller_that_does_not_answer_needs_a_person_with_the_command_and_its_error() {
    let r = slurm_repo();
    let bin = answering(&r);
    fake(
        &bin,
        "squeue",
        "-h",
        "echo 'slurm_load_jobs error: Unable to contact slurm controller (connect failure)' >&2; exit 1",
    );
    let (code, report) = doctor_with(&r, &bin);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["needs_person"], true);
    let f = the(&report, "slurm", "needs-person");
    let fix = f["fix"].as_str().unwrap();
    for part in [
        "`squeue -h` exited 1",
        "Unable to contact slurm controller",
        "SLURM_CONF",
        "slurmctld",
    ] {
        assert!(fix.contains(part), "{part} in {f:#}");
    }
    assert_eq!(
        of(&report, "slurm").len(),
        3,
        "sbatch and sacct still checked"
    );
}

#[test]
fn slurm_commands_missing_from_path_need_a_person() {
    let r = slurm_repo();
    let bin = r.path().join("empty-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let (code, report) = doctor_with(&r, &bin);
    assert_eq!(code, 1, "{report:#}");
    let needs: Vec<&Value> = of(&report, "slurm")
        .into_iter()
        .filter(|f| f["severity"] == "needs-person")
        .collect();
    assert_eq!(needs.len(), 2, "sbatch and squeue: {report:#}");
    assert!(
        needs[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("`sbatch --version` did not start"),
        "{report:#}"
    );
    let sacct = of(&report, "slurm")[2];
    assert_eq!(sacct["severity"], "ok", "sacct is a note: {sacct:#}");
}

#[test]
fn sacct_that_answers_says_accounting_is_available() {
    let r = slurm_repo();
    let bin = answering(&r);
    fake(&bin, "sacct", "-n", "echo '4 tl debug root 1 TIMEOUT 0:15'");
    let (code, report) = doctor_with(&r, &bin);
    assert_eq!(code, 0, "{report:#}");
    assert!(
        messages(&report)[2].contains("accounting is available"),
        "{report:#}"
    );
}
