//! `splice doctor`: each check's finding, its fix and the exit code (0 unless something needs
//! a person), the JSON shape, and that doctor reads and never writes. The checks of the state
//! are in `state.rs`, the journal's in `journal.rs`, the Slurm executor's in `slurm.rs`.

#[path = "../common/mod.rs"]
mod common;
mod journal;
mod slurm;
mod state;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::Repo;
use serde_json::Value;

/// Every check, in the order doctor runs them (`docs/cli.md`, "`splice doctor`").
pub const CHECKS: &[&str] = &[
    "repository",
    "config",
    "manifest",
    "targets",
    "agent",
    "beads",
    "claims",
    "worktrees",
    "journal",
    "recovery",
    "hooks",
    "slurm",
    "sandbox",
];

/// A repository with one task, an agent CLI splice knows (a `claude` that answers
/// `--version`), direct delivery (no forge needed) and the hooks installed: nothing for doctor
/// to find.
pub fn healthy() -> (Repo, String) {
    let r = Repo::new();
    let id = r.task("Healthy", &[]);
    std::fs::create_dir_all(r.path().join("bin")).unwrap();
    let agent = r.path().join("bin/claude");
    std::fs::write(&agent, "#!/bin/sh\necho 'fake-agent 1.2.3'\necho more\n").unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    agent_command(&r, &agent.display().to_string());
    r.ok(&["hooks", "install", "--json"]);
    (r, id)
}

pub fn agent_command(r: &Repo, program: &str) {
    r.write(
        ".splice/config.toml",
        &format!("[agent]\ncommand = [\"{program}\"]\n\n[delivery]\nmethod = \"direct\"\n"),
    );
}

/// `splice doctor --json`: the exit code and the report, with this splice on `PATH` (as a
/// person who installed it has it: the committed Claude hook finds it there).
pub fn doctor(r: &Repo) -> (i32, Value) {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_splice"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = r
        .cmd(&["doctor", "--json"])
        .env("PATH", path)
        .output()
        .unwrap();
    common::no_panic(&out);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), report)
}

/// The findings of one check.
pub fn of<'a>(report: &'a Value, check: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == check)
        .collect()
}

/// The one finding of `check` with `severity`; fails listing the report otherwise.
pub fn the<'a>(report: &'a Value, check: &str, severity: &str) -> &'a Value {
    let found: Vec<&Value> = of(report, check)
        .into_iter()
        .filter(|f| f["severity"] == severity)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one {severity} {check} finding in {report:#}"
    );
    found[0]
}

/// Every check but `except` found nothing.
pub fn others_ok(report: &Value, except: &[&str]) {
    for f in report["findings"].as_array().unwrap() {
        let check = f["check"].as_str().unwrap();
        if !except.contains(&check) {
            assert_eq!(f["severity"], "ok", "{f:#}");
        }
    }
}

/// Every file under `dir` (recursively) with its bytes.
pub fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let path = e.path();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            if e.file_type().unwrap().is_dir() {
                out.push((format!("{name}/"), Vec::new()));
                stack.push(path);
            } else {
                out.push((name, std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_healthy_repository_passes_every_check_and_exits_0() {
    let (r, _) = healthy();
    let (code, report) = doctor(&r);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["needs_person"], false);
    assert!(report["state_dir"].as_str().unwrap().ends_with(".splice"));
    let mut seen: Vec<&str> = Vec::new();
    for f in report["findings"].as_array().unwrap() {
        let keys: Vec<&String> = f.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["check", "severity", "message", "fix"], "{f:#}");
        let check = f["check"].as_str().unwrap();
        // A kernel without a usable sandbox warns: that is the truth about this machine.
        if check == "sandbox" && splice::sandbox::probe().usable().is_err() {
            assert_eq!(f["severity"], "warn", "{f:#}");
            continue;
        }
        assert_eq!(f["severity"], "ok", "{f:#}");
        assert!(f["fix"].is_null(), "{f:#}");
        if seen.last() != Some(&check) {
            seen.push(check);
        }
    }
    assert_eq!(seen, CHECKS, "every check, in order");
    let agent = the(&report, "agent", "ok");
    assert!(
        agent["message"]
            .as_str()
            .unwrap()
            .ends_with(": fake-agent 1.2.3"),
        "the first line of --version: {agent:#}"
    );

    let out = r.run(&["doctor"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ok           agent: "), "{text}");
    assert!(text.ends_with("doctor: all checks passed\n"), "{text}");
}

#[test]
fn outside_a_splice_repository_it_says_so_and_names_splice_init() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_splice"));
    cmd.args(["doctor", "--json"])
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("SPLICE_NOW", common::NOW);
    let out = common::hermetic_splice(&mut cmd).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["needs_person"], true);
    assert!(report["state_dir"].is_null());
    let state = the(&report, "state", "needs-person");
    assert!(
        state["message"]
            .as_str()
            .unwrap()
            .contains("not a splice repository")
    );
    assert!(state["fix"].as_str().unwrap().contains("splice init"));
    // Where init would create it is no git repository either: init would refuse there.
    let repo = the(&report, "repository", "needs-person");
    assert!(
        repo["fix"].as_str().unwrap().contains("git init"),
        "{repo:#}"
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing created"
    );
}

/// A holder naming a runner of this host whose process has exited.
fn dead_holder() -> String {
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let host = std::process::Command::new("hostname")
        .output()
        .unwrap()
        .stdout;
    let host = String::from_utf8(host).unwrap().trim().replace(':', "_");
    format!("run:{host}:{pid}:some-run")
}

#[test]
fn doctor_reads_and_never_writes_the_state() {
    let (r, id) = healthy();
    r.ok(&["transition", "claim", &id, "--holder", &dead_holder()]);
    std::fs::create_dir_all(r.state().join("worktrees/sp-orph")).unwrap();
    r.write(".splice/manifest.json", "not json");
    let journal = r.state().join("journal.jsonl");
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes.extend_from_slice(b"{\"torn");
    std::fs::write(&journal, &bytes).unwrap();
    let before = tree(&r.state());
    let git_before = tree(&r.path().join(".git"));
    for args in [&["doctor"][..], &["doctor", "--json"]] {
        let out = r.run(args);
        assert_eq!(out.status.code(), Some(1));
    }
    assert_eq!(
        tree(&r.state()),
        before,
        "the state directory is byte-identical"
    );
    // The comparison covers names too: no lock file, temp file or segment appeared, and the
    // torn tail is still there (doctor did not recover).
    assert!(
        before
            .iter()
            .any(|(n, b)| n == "journal.jsonl" && b.ends_with(b"{\"torn"))
    );
    assert_eq!(
        tree(&r.path().join(".git")),
        git_before,
        "and so is the repository"
    );
}

/// `doctor` runs `--version` only for the agent CLIs splice knows: a program of the user's own
/// (a script that might do anything) is found, never run.
#[test]
fn an_agent_splice_does_not_know_is_found_but_never_run() {
    let (r, _) = healthy();
    let marker = r.path().join("ran");
    let agent = r.path().join("my-agent");
    std::fs::write(&agent, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    agent_command(&r, &agent.display().to_string());
    let (_, report) = doctor(&r);
    let found = the(&report, "agent", "ok");
    assert!(
        found["message"].as_str().unwrap().contains("not run"),
        "{found:#}"
    );
    assert!(!marker.exists(), "doctor ran the agent");
}

/// PR delivery, the default method, needs a forge command (`gh`, or `[delivery]
/// forge_command`) and a git remote: doctor says which is missing and how to fix it.
#[test]
fn pr_delivery_without_a_forge_or_a_remote_is_a_warning_naming_them() {
    let (r, _) = healthy();
    let agent = r.path().join("bin/claude").display().to_string();
    r.write(
        ".splice/config.toml",
        &format!("[agent]\ncommand = [\"{agent}\"]\n"),
    );
    let out = r
        .cmd(&["doctor", "--json"])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warned = the(&report, "agent", "warn");
    let said = warned["message"].as_str().unwrap();
    assert!(said.contains("PR delivery"), "{said}");
    assert!(said.contains("no git remote"), "{said}");
    assert!(
        warned["fix"]
            .as_str()
            .unwrap()
            .contains("method = \"direct\""),
        "{warned:#}"
    );
    // With a remote and a forge command but nothing to open a pull request, it still warns.
    r.git(&[
        "remote",
        "add",
        "origin",
        "https://forge.example/acme/calc.git",
    ]);
    r.write(
        ".splice/config.toml",
        &format!("[agent]\ncommand = [\"{agent}\"]\n[delivery]\nforge_command = [\"my-forge\"]\n"),
    );
    let (_, report) = doctor(&r);
    let warned = the(&report, "agent", "warn");
    let said = warned["message"].as_str().unwrap();
    assert!(said.contains("pr_command"), "{said}");
    assert!(!said.contains("forge_command"), "{said}");
    // With a command to open it too, it passes.
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"{agent}\"]\n[delivery]\nforge_command = [\"my-forge\"]\npr_command = [\"my-pr\"]\n"
        ),
    );
    let (_, report) = doctor(&r);
    assert!(
        of(&report, "agent").iter().all(|f| f["severity"] == "ok"),
        "{report:#}"
    );
}
