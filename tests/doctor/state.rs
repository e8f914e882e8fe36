//! The repository's and the state's checks: agent, config and manifest, targets, claims,
//! worktrees, hooks.

use super::common;
use super::{agent_command, dead_holder, doctor, healthy, of, others_ok, the};

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
        &config.replace("[delivery]\n", "[delivery]\ntarget = \"gone\"\n"),
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
fn a_worktree_no_node_owns_is_a_warning_with_the_commands_that_set_it_aside() {
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
        "mkdir -p .splice/worktrees/.set-aside && mv .splice/worktrees/sp-orph \
         .splice/worktrees/.set-aside/sp-orph && git worktree prune"
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
fn a_bead_file_that_cannot_be_read_needs_a_person_with_the_way_back() {
    let (r, id) = healthy();
    let path = r.state().join("beads").join(format!("{id}.json"));
    std::fs::write(&path, "{ torn").unwrap();
    let (code, report) = doctor(&r);
    assert_eq!(code, 1);
    let f = the(&report, "beads", "needs-person");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains(&format!("{id}.json")),
        "{f}"
    );
    assert!(
        f["fix"].as_str().unwrap().contains("git checkout --"),
        "{f}"
    );
}
