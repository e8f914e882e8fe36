//! Issue 9, defect 14: one exit-code table (`docs/cli.md`) for every command, and the codes
//! that are easy to get wrong: clap's usage errors, a refused runner, `--help`.

mod common;

use clap::CommandFactory;
use common::Repo;

fn cli_md() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cli.md")).unwrap()
}

#[test]
fn docs_cli_md_has_a_row_for_every_command() {
    let doc = cli_md();
    let rows: Vec<&str> = doc
        .lines()
        .filter(|l| l.starts_with("| `splice "))
        .collect();
    let cli = splice::cli::Cli::command();
    for command in cli.get_subcommands() {
        let name = command.get_name();
        let prefix = format!("| `splice {name}");
        assert!(
            rows.iter().any(|r| r.starts_with(&prefix)),
            "docs/cli.md has no exit-code row for `splice {name}`"
        );
    }
    // The read-only verbs are named in their row; every other verb writes.
    let row = rows
        .iter()
        .find(|r| r.contains("<read-only verb>"))
        .unwrap();
    let read_only: Vec<&str> = row
        .split_once("(`")
        .and_then(|(_, rest)| rest.split_once("`)"))
        .map(|(list, _)| list.split(' ').collect())
        .unwrap();
    let transition = cli.find_subcommand("transition").unwrap();
    for verb in transition.get_subcommands() {
        let class = splice::transition::Verb::named(verb.get_name())
            .unwrap()
            .actor();
        let listed = read_only.contains(&verb.get_name());
        assert_eq!(
            listed,
            class == splice::transition::authority::Actor::ReadOnly,
            "`transition {}` is in the wrong row of docs/cli.md",
            verb.get_name()
        );
    }
    for code in ["`0`", "`1`", "`2`", "`130`", "`10`–`16`"] {
        assert!(
            doc.contains(&format!("| {code} |")),
            "{code} is not explained"
        );
    }
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    let r = Repo::new();
    for args in [
        vec!["no-such-command"],
        vec!["transition"],
        vec!["transition", "approve", "--bead"],
        vec!["run", "--jobs", "many"],
        vec!["status", "--no-such-flag"],
    ] {
        let err = r.fails(2, &args);
        assert!(
            err.starts_with("error:") || err.contains("Usage:"),
            "{args:?}: {err}"
        );
    }
    for args in [
        vec!["--help"],
        vec!["--version"],
        vec!["transition", "--help"],
    ] {
        let out = r.run(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(!out.stdout.is_empty());
    }
}

#[test]
fn a_dispatched_caller_cannot_start_a_runner_or_create_beads() {
    let r = Repo::new();
    r.task("T", &[]);
    let dispatched = |args: &[&str]| r.cmd(args).env("SPLICE_DISPATCHED", "1").output().unwrap();
    for args in [
        vec!["run"],
        vec!["pass"],
        vec!["init", "--title", "x"],
        vec!["init-task", "--title", "x"],
    ] {
        let out = dispatched(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is a person's verb"), "{args:?}: {err}");
    }
    let out = dispatched(&["pass", "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "a dry run only reads");
    assert_eq!(r.beads_bytes().len(), 1, "nothing was created");
}

#[test]
fn the_exit_status_codes_in_docs_cli_md_are_the_codes_run_gives() {
    use splice::model::RunStatus;
    let doc = cli_md();
    for status in [
        RunStatus::Done,
        RunStatus::SuspendedHuman,
        RunStatus::SuspendedRunning,
        RunStatus::Escalated,
        RunStatus::Budget,
        RunStatus::Stalled,
        RunStatus::Idle,
        RunStatus::Ready,
    ] {
        let code = splice::cli::run::status_code(status);
        let said = [
            format!("`{}` {code}", status.as_str()),
            format!("(`{}`, {code},", status.as_str()),
        ];
        assert!(
            said.iter().any(|s| doc.contains(s.as_str())),
            "docs/cli.md does not say `{}` exits {code}",
            status.as_str()
        );
    }
}
