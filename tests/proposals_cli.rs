//! Issue 17, the proposal-file protocol from the agent's side: in a cluster dispatch
//! (`SPLICE_PROPOSALS` set) `propose` and `split` append one line to the proposal file and leave
//! `.splice/` byte for byte as it was; the other writing verbs are refused; and an ordinary
//! dispatched caller on a bead whose claim names a cluster job is refused before any lock.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::Repo;
use serde_json::Value;

const SECRET: &str = "job-secret";

/// Every file under `dir` with its bytes (links and all), sorted by path.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                out.push((path, bytes));
            }
        }
    }
    out.sort();
    out
}

/// A repository with a lone task, and the path its proposal file would have.
fn setup() -> (Repo, String, PathBuf) {
    let r = Repo::new();
    let id = r.task("Task", &[]);
    let out = tempfile::tempdir().unwrap().keep();
    (r, id, out.join("proposals.jsonl"))
}

/// A `splice` command run as a cluster dispatch's agent writing to `file`.
fn in_job(r: &Repo, file: &Path, args: &[&str]) -> Command {
    let mut c = r.cmd(args);
    c.env("SPLICE_PROPOSALS", file)
        .env("SPLICE_DISPATCHED", "1")
        .env("SPLICE_CREDENTIAL", SECRET)
        .env("SPLICE_STEP", "generate-spec")
        .env("SPLICE_ATTEMPT", "1")
        .env("SPLICE_SEQ", "3")
        .env("SPLICE_HOLDER", "run:host:1:r");
    c
}

fn lines(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn propose_and_split_in_a_job_record_a_line_and_leave_the_state_alone() {
    let (r, id, file) = setup();
    let before = tree(&r.state());
    let propose = [
        "transition",
        "propose",
        "--bead",
        &id,
        "--step",
        "generate-spec",
    ];
    let out = in_job(
        &r,
        &file,
        &[&propose[..], &["--artifact", "spec.md"]].concat(),
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "recorded; applied when the job ends\n"
    );
    r.write(
        "children.json",
        r#"[{"title": "one"}, {"title": "two", "depends_on": [0], "scenarios": ["S1"]}]"#,
    );
    let split = [
        "transition",
        "split",
        "--bead",
        &id,
        "--children",
        "children.json",
    ];
    let out = in_job(&r, &file, &[&split[..], &["--json"]].concat())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["schema_version"], 1);
    assert_eq!(printed["recorded"], true);
    assert_eq!(printed["verb"], "split");
    assert_eq!(printed["file"], file.to_str().unwrap());
    assert_eq!(
        tree(&r.state()),
        before,
        ".splice/ is byte for byte as it was"
    );
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let got = lines(&file);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0]["v"], 1);
    assert_eq!(got[0]["verb"], "propose");
    assert_eq!(got[0]["bead"], id.as_str());
    assert_eq!(
        (&got[0]["step"], &got[0]["attempt"]),
        (&"generate-spec".into(), &1.into())
    );
    assert_eq!(got[0]["seq"], 3);
    assert_eq!(got[0]["credential"], SECRET);
    assert_eq!(got[0]["args"]["artifact"], "spec.md");
    assert_eq!(got[1]["args"]["children"][1]["title"], "two");
    assert_eq!(got[1]["args"]["children"][1]["depends_on"][0], 0);
}

#[test]
fn a_job_s_bad_arguments_are_refused_as_locally_and_nothing_is_written() {
    let (r, id, file) = setup();
    r.write("empty.json", "[]");
    let cases: [&[&str]; 3] = [
        &[
            "transition",
            "propose",
            "--bead",
            &id,
            "--step",
            "s",
            "--artifact",
            " ",
        ],
        &[
            "transition",
            "propose",
            "--bead",
            &id,
            "--step",
            "s",
            "--artifact",
            "a",
            "--confidence",
            "2",
        ],
        &[
            "transition",
            "split",
            "--bead",
            &id,
            "--children",
            "empty.json",
        ],
    ];
    for args in cases {
        let local = r.run(args);
        let job = in_job(&r, &file, args).output().unwrap();
        assert_eq!(job.status.code(), Some(2), "{args:?}: {job:?}");
        assert_eq!(job.status.code(), local.status.code(), "{args:?}");
        assert_eq!(job.stderr, local.stderr, "{args:?}");
    }
    let mut bare = in_job(
        &r,
        &file,
        &[
            "transition",
            "propose",
            "--bead",
            &id,
            "--step",
            "s",
            "--artifact",
            "a",
        ],
    );
    bare.env_remove("SPLICE_SEQ").env_remove("SPLICE_STEP");
    let out = bare.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("SPLICE_STEP, SPLICE_SEQ are not"),
        "{stderr}"
    );
    assert!(!file.exists(), "nothing was written");
    let propose = [
        "transition",
        "propose",
        "--bead",
        &id,
        "--step",
        "s",
        "--artifact",
        "a",
    ];
    let out = in_job(&r, Path::new("relative.jsonl"), &propose)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be an absolute path"));
    let elsewhere = file.with_file_name("elsewhere");
    std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
    let out = in_job(&r, &file, &propose).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("proposals.jsonl: is a symbolic link"),
        "{stderr}"
    );
    assert!(!elsewhere.exists(), "the link was not followed");
}

#[test]
fn other_writing_verbs_are_refused_in_a_job_and_reads_still_work() {
    let (r, id, file) = setup();
    let before = tree(&r.state());
    let out = in_job(
        &r,
        &file,
        &["transition", "park", "--bead", &id, "--reason", "x"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("only propose, split and resplit are recorded"),
        "{stderr}"
    );
    let out = in_job(&r, &file, &["transition", "step", "--bead", &id])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("generate-spec"));
    assert_eq!(tree(&r.state()), before);
    assert!(!file.exists());
}

#[test]
fn a_dispatched_caller_on_a_cluster_job_s_bead_is_refused() {
    let (r, id, _file) = setup();
    r.ok(&[
        "transition",
        "claim",
        "--bead",
        &id,
        "--holder",
        "run:host:1:r",
    ]);
    // The runner's claim for a dispatch submitted as Slurm job 4242, with the job's credential.
    let path = r.state().join("beads").join(format!("{id}.json"));
    let mut bead = r.bead(&id);
    bead["pipeline"]["lease"]["credential_sha256"] =
        splice::authority::credential::sha256_hex(SECRET).into();
    bead["pipeline"]["lease"]["job"] = "4242".into();
    std::fs::write(&path, serde_json::to_vec_pretty(&bead).unwrap()).unwrap();
    let before = tree(&r.state());
    let args = [
        "transition",
        "propose",
        "--bead",
        &id,
        "--step",
        "generate-spec",
        "--artifact",
        "a",
    ];
    let out = r
        .cmd(&args)
        .env("SPLICE_DISPATCHED", "1")
        .env("SPLICE_CREDENTIAL", SECRET)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is in a cluster dispatch"), "{stderr}");
    assert!(stderr.contains("SPLICE_PROPOSALS"), "{stderr}");
    assert_eq!(tree(&r.state()), before, "no lock taken, nothing written");
    // A person is unaffected.
    r.ok(&[
        "transition",
        "release",
        "--bead",
        &id,
        "--holder",
        "run:host:1:r",
    ]);
}
