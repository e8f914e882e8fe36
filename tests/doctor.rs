//! `splice doctor`: each check's finding, its fix and the exit code (0 unless something needs
//! a person), the JSON shape, and that doctor reads and never writes.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::Repo;
use serde_json::Value;

/// Every check, in the order doctor runs them (`docs/cli.md`, "`splice doctor`").
const CHECKS: &[&str] = &[
    "repository",
    "config",
    "manifest",
    "targets",
    "agent",
    "claims",
    "worktrees",
    "journal",
    "recovery",
    "hooks",
];

/// A repository with one task, an agent that answers `--version`, and the hooks installed:
/// nothing for doctor to find.
fn healthy() -> (Repo, String) {
    let r = Repo::new();
    let id = r.task("Healthy", &[]);
    let agent = r.path().join("agent.sh");
    std::fs::write(&agent, "#!/bin/sh\necho 'fake-agent 1.2.3'\necho more\n").unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    agent_command(&r, &agent.display().to_string());
    r.ok(&["hooks", "install", "--json"]);
    (r, id)
}

fn agent_command(r: &Repo, program: &str) {
    r.write(
        ".splice/config.toml",
        &format!("[agent]\ncommand = [\"{program}\"]\n"),
    );
}

/// `splice doctor --json`: the exit code and the report.
fn doctor(r: &Repo) -> (i32, Value) {
    let out = r.run(&["doctor", "--json"]);
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
fn of<'a>(report: &'a Value, check: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == check)
        .collect()
}

/// The one finding of `check` with `severity`; fails listing the report otherwise.
fn the<'a>(report: &'a Value, check: &str, severity: &str) -> &'a Value {
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
fn others_ok(report: &Value, except: &[&str]) {
    for f in report["findings"].as_array().unwrap() {
        let check = f["check"].as_str().unwrap();
        if !except.contains(&check) {
            assert_eq!(f["severity"], "ok", "{f:#}");
        }
    }
}

/// Every file under `dir` (recursively) with its bytes.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
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
        assert_eq!(f["severity"], "ok", "{f:#}");
        assert!(f["fix"].is_null(), "{f:#}");
        let check = f["check"].as_str().unwrap();
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
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_splice"))
        .args(["doctor", "--json"])
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("SPLICE_NOW", common::NOW)
        .output()
        .unwrap();
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

#[test]
fn a_missing_agent_command_needs_a_person() {
    let (r, _) = healthy();
    agent_command(&r, "no-such-agent-anywhere");
    let (code, report) = doctor(&r);
    assert_eq!(code, 1);
    assert_eq!(report["needs_person"], true);
    let f = the(&report, "agent", "needs-person");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("`no-such-agent-anywhere` is not on PATH"),
        "{message}"
    );
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.contains("`[agent] command` in .splice/config.toml"),
        "{fix}"
    );
    assert_eq!(
        of(&report, "agent").len(),
        1,
        "the agent once, not per step"
    );
    others_ok(&report, &["agent"]);
}

#[test]
fn a_step_agent_that_cannot_be_found_needs_a_person_too() {
    let (r, _) = healthy();
    let config = std::fs::read_to_string(r.state().join("config.toml")).unwrap();
    r.write(
        ".splice/config.toml",
        &format!("{config}[agent.steps.review]\ncommand = [\"no-such-reviewer\"]\n"),
    );
    let (code, report) = doctor(&r);
    assert_eq!(code, 1);
    let f = the(&report, "agent", "needs-person");
    assert!(f["message"].as_str().unwrap().contains("review"), "{f:#}");
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .contains("[agent.steps.review] command"),
        "{f:#}"
    );
    the(&report, "agent", "ok");
}

#[test]
fn a_bad_manifest_or_config_needs_a_person_with_the_loaders_message() {
    let (r, _) = healthy();
    let mut manifest = r.ok(&["manifest", "show"]);
    manifest["steps"][1]["max_attempts"] = "many".into();
    r.write(".splice/manifest.json", &manifest.to_string());
    let (code, report) = doctor(&r);
    assert_eq!(code, 1);
    let f = the(&report, "manifest", "needs-person");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("manifest.json"),
        "names the file: {message}"
    );
    assert!(message.contains("steps[1]"), "names the field: {message}");
    assert!(f["fix"].as_str().unwrap().contains("docs/manifest.md"));
    // What needs the manifest says it could not look; the rest still runs.
    assert!(
        of(&report, "targets")[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("not checked")
    );
    assert!(of(&report, "hooks").iter().all(|f| f["severity"] == "ok"));
    the(&report, "claims", "ok");
    let skipped = the(&report, "worktrees", "warn");
    assert_eq!(
        skipped["message"],
        "not checked: the manifest does not load"
    );

    std::fs::remove_file(r.state().join("manifest.json")).unwrap();
    r.write(".splice/config.toml", "[agent]\ncomand = [\"x\"]\n");
    let (code, report) = doctor(&r);
    assert_eq!(code, 1);
    let f = the(&report, "config", "needs-person");
    assert!(
        f["message"].as_str().unwrap().contains("config.toml"),
        "{f:#}"
    );
    assert!(f["message"].as_str().unwrap().contains("comand"), "{f:#}");
    assert_eq!(
        of(&report, "manifest")[0]["severity"],
        "warn",
        "not checked"
    );
}

#[test]
fn a_target_naming_no_commit_needs_a_person() {
    let (r, _) = healthy();
    r.git(&["branch", "feature"]);
    let id = r.task("On feature", &["--target", "feature"]);
    r.git(&["branch", "-D", "feature"]);
    let (code, report) = doctor(&r);
    assert_eq!(code, 1);
    let f = the(&report, "targets", "needs-person");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("target `feature` names no commit"),
        "{message}"
    );
    assert!(message.contains(&id), "names the node: {message}");
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.contains(&format!(
            "splice transition set-target --bead {id} --target"
        )),
        "{fix}"
    );
    others_ok(&report, &["targets"]);

    // A closed node's deleted branch is no finding; the configured target is.
    r.ok(&["cancel", &id, "--reason", "not wanted"]);
    let config = std::fs::read_to_string(r.state().join("config.toml")).unwrap();
    r.write(
        ".splice/config.toml",
        &format!("{config}[delivery]\ntarget = \"gone\"\n"),
    );
    let (code, report) = doctor(&r);
    assert_eq!(code, 1);
    let f = the(&report, "targets", "needs-person");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("`gone`") && message.contains("[delivery] target"),
        "{message}"
    );
    assert!(f["fix"].as_str().unwrap().contains("git branch gone"));
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
fn a_dead_holders_claim_needs_a_person_and_its_fix_clears_it() {
    let (r, id) = healthy();
    let other = r.task("Held by a person", &[]);
    r.ok(&["transition", "claim", &other, "--holder", "alice"]);
    let dead = dead_holder();
    r.ok(&["transition", "claim", &id, "--holder", &dead]);
    let (code, report) = doctor(&r);
    assert_eq!(code, 1);
    let f = the(&report, "claims", "needs-person");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains(&id) && message.contains(&dead),
        "{message}"
    );
    assert!(
        !message.contains(&other),
        "alice may still be working: {message}"
    );
    assert_eq!(of(&report, "claims").len(), 1);
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.starts_with(&format!("splice transition release --bead {id} --clear")),
        "{fix}"
    );
    others_ok(&report, &["claims"]);

    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(fix.replacen("splice", env!("CARGO_BIN_EXE_splice"), 1))
        .current_dir(r.path())
        .env("SPLICE_NOW", common::NOW)
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let (code, report) = doctor(&r);
    assert_eq!(code, 0, "{report:#}");
    the(&report, "claims", "ok");
}

#[test]
fn a_worktree_no_node_owns_is_a_warning_with_the_commands_that_remove_it() {
    let (r, _) = healthy();
    std::fs::create_dir_all(r.state().join("worktrees/sp-orph/src")).unwrap();
    let (code, report) = doctor(&r);
    assert_eq!(code, 0, "a warning only: {report:#}");
    assert_eq!(report["needs_person"], false);
    let f = the(&report, "worktrees", "warn");
    assert!(
        f["message"].as_str().unwrap().contains("no bead sp-orph"),
        "{f:#}"
    );
    let fix = f["fix"].as_str().unwrap();
    assert_eq!(
        fix,
        "rm -rf .splice/worktrees/sp-orph && git worktree prune"
    );
    others_ok(&report, &["worktrees"]);

    let out = r.run(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("warn         worktrees: no bead sp-orph"),
        "{text}"
    );
    assert!(
        text.contains(&format!("             fix: {fix}\n")),
        "{text}"
    );
    assert!(
        text.ends_with("doctor: 1 warning(s), nothing needs a person\n"),
        "{text}"
    );
}

#[test]
fn a_torn_journal_tail_is_reported_and_left_for_the_next_write() {
    let (r, id) = healthy();
    let journal = r.state().join("journal.jsonl");
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes.extend_from_slice(b"{\"id\": 99, \"to");
    std::fs::write(&journal, &bytes).unwrap();
    let (code, report) = doctor(&r);
    assert_eq!(code, 0, "{report:#}");
    let f = the(&report, "recovery", "warn");
    assert!(f["message"].as_str().unwrap().contains("torn"), "{f:#}");
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        bytes,
        "doctor does not recover"
    );
    others_ok(&report, &["recovery"]);
    // The next write cuts it.
    r.ok(&["transition", "claim", &id, "--holder", "h"]);
    the(&doctor(&r).1, "recovery", "ok");
}

#[test]
fn an_uncommitted_record_is_reported_as_recovery_would_settle_it() {
    let (r, id) = healthy();
    let out = r
        .cmd(&["transition", "claim", &id, "--holder", "h"])
        .env("SPLICE_FAILPOINT", "after-journal")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let (code, report) = doctor(&r);
    assert_eq!(code, 0, "rolled forward by the next write: {report:#}");
    let f = the(&report, "recovery", "warn");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("`claim`") && message.contains("rolls it forward"),
        "{message}"
    );

    // A bead file that moved on meanwhile: recovery would void the record, losing its change.
    let path = r.state().join("beads").join(format!("{id}.json"));
    let mut bead = r.bead(&id);
    let seq = bead["pipeline"]["seq"].as_u64().unwrap();
    bead["pipeline"]["seq"] = (seq + 5).into();
    std::fs::write(&path, serde_json::to_vec_pretty(&bead).unwrap()).unwrap();
    let (code, report) = doctor(&r);
    assert_eq!(code, 1, "{report:#}");
    let f = the(&report, "recovery", "needs-person");
    assert!(
        f["message"].as_str().unwrap().contains("will not apply it"),
        "{f:#}"
    );
    assert!(f["fix"].as_str().unwrap().contains("claim"), "{f:#}");
}

#[test]
fn hooks_not_installed_are_a_warning_naming_the_install_command() {
    let (r, _) = healthy();
    std::fs::remove_file(r.path().join(".git/hooks/pre-commit")).unwrap();
    std::fs::remove_file(r.path().join(".claude/settings.json")).unwrap();
    let (code, report) = doctor(&r);
    assert_eq!(code, 0, "{report:#}");
    let fixes: Vec<&str> = of(&report, "hooks")
        .iter()
        .map(|f| {
            assert_eq!(f["severity"], "warn", "{f:#}");
            f["fix"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        fixes,
        [
            "splice hooks install --claude",
            "splice hooks install --git"
        ]
    );
    others_ok(&report, &["hooks"]);
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
    assert!(!r.state().join("lock").exists() || before.iter().any(|(n, _)| n == "lock"));
    assert_eq!(
        tree(&r.path().join(".git")),
        git_before,
        "and so is the repository"
    );
}
