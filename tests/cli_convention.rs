//! Issue 10, items 17 and 18: the command line's conventions. Every option explains itself in
//! `--help`; ids are accepted positionally wherever `--bead` is; `--json` means the same on every
//! command that prints JSON; every JSON object a command prints carries `schema_version`.

mod common;

use clap::CommandFactory;
use common::Repo;

/// Every command and subcommand, with its path (`transition approve`).
fn all_commands() -> Vec<(String, clap::Command)> {
    fn walk(prefix: &str, cmd: &clap::Command, out: &mut Vec<(String, clap::Command)>) {
        for sub in cmd.get_subcommands() {
            let path = format!("{prefix}{}", sub.get_name()).trim().to_string();
            out.push((path.clone(), sub.clone()));
            walk(&format!("{path} "), sub, out);
        }
    }
    let mut out = Vec::new();
    walk("", &splice::cli::Cli::command(), &mut out);
    out
}

#[test]
fn an_id_is_accepted_positionally_wherever_bead_is() {
    let mut with_bead = 0;
    for (path, cmd) in all_commands() {
        if !cmd.get_arguments().any(|a| a.get_long() == Some("bead")) {
            continue;
        }
        with_bead += 1;
        let positional = cmd
            .get_positionals()
            .any(|a| a.get_value_names().is_some_and(|v| v == ["ID"]));
        assert!(
            positional,
            "`splice {path}` takes --bead but no positional ID"
        );
    }
    assert!(with_bead > 20, "{with_bead} commands take --bead");

    let r = Repo::new();
    let id = r.task("Positional", &[]);
    let by_flag = r.ok(&["transition", "show", "--bead", &id]);
    let by_position = r.ok(&["transition", "show", &id]);
    assert_eq!(by_flag, by_position);
    r.ok(&["transition", "claim", &id, "--holder", "alice"]);
    r.ok(&["transition", "release", &id, "--holder", "alice"]);
    let err = r.fails(2, &["transition", "step", &id, "--bead", &id]);
    assert!(err.contains("cannot be used with"), "{err}");
    let err = r.fails(2, &["transition", "step"]);
    assert!(err.contains("<ID>"), "{err}");
}

#[test]
fn every_option_and_command_explains_itself_in_help() {
    let mut missing = Vec::new();
    for (path, cmd) in all_commands() {
        if cmd.is_hide_set() {
            continue;
        }
        if cmd.get_about().is_none() {
            missing.push(format!("`splice {path}` (the command)"));
        }
        for arg in cmd.get_arguments() {
            let name = arg.get_id().as_str();
            if matches!(name, "help" | "version") {
                continue;
            }
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            if help.trim().is_empty() {
                missing.push(format!("`splice {path}` {name}"));
            }
        }
    }
    assert!(missing.is_empty(), "no help for:\n{}", missing.join("\n"));
}

/// The commands that print JSON, and how: every one accepts `--json`.
#[test]
fn json_is_accepted_wherever_json_can_be_printed() {
    let mut without = Vec::new();
    for (path, cmd) in all_commands() {
        if cmd.is_hide_set() || cmd.has_subcommands() {
            continue;
        }
        if !cmd.get_arguments().any(|a| a.get_long() == Some("json")) {
            without.push(path);
        }
    }
    assert!(without.is_empty(), "no --json on: {without:?}");
    use clap::Parser;
    for args in [
        vec!["splice", "run", "--json"],
        vec!["splice", "pass", "--json"],
        vec!["splice", "demo", "--json"],
        vec!["splice", "demo", "--output", "json"],
        vec!["splice", "status", "--json"],
        vec!["splice", "transition", "show", "sp-x", "--json"],
        vec!["splice", "init-task", "--title", "t", "--json"],
        vec!["splice", "manifest", "show", "--json"],
    ] {
        let parsed = splice::cli::Cli::try_parse_from(&args);
        assert!(parsed.is_ok(), "{args:?}: {}", parsed.unwrap_err());
    }
    let both = splice::cli::Cli::try_parse_from(["splice", "run", "--json", "--output", "human"]);
    assert!(
        both.is_err(),
        "--json is --output json; both at once is a usage error"
    );
}

#[test]
fn target_and_delivery_answer_their_own_question() {
    let r = Repo::new();
    let id = r.task("Answers", &["--delivery", "direct"]);
    let target = r.ok(&["transition", "target", &id]);
    let delivery = r.ok(&["transition", "delivery", &id]);
    assert_ne!(target, delivery);
    assert_eq!(target["target"], "main");
    assert!(target.get("delivery").is_none(), "{target}");
    assert_eq!(delivery["delivery"], "direct");
    assert!(delivery.get("target").is_none(), "{delivery}");
}

/// Each JSON document a command prints is an object with a numeric `schema_version`.
fn versioned(what: &str, v: &serde_json::Value) {
    assert!(
        v.get("schema_version").is_some_and(|s| s.is_u64()),
        "{what}: no schema_version in {v}"
    );
}

#[test]
fn every_json_object_a_command_prints_carries_schema_version() {
    let r = Repo::new();
    let out = r.run(&["init-task", "--title", "Versioned"]);
    let created: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    versioned("init-task", &created);
    let id = created["id"].as_str().unwrap().to_string();
    let id = id.as_str();
    for verb in ["show", "step", "kind", "autonomy", "target", "delivery"] {
        versioned(verb, &r.ok(&["transition", verb, id]));
    }
    versioned(
        "claim",
        &r.ok(&["transition", "claim", id, "--holder", "a"]),
    );
    versioned(
        "release",
        &r.ok(&["transition", "release", id, "--holder", "a"]),
    );
    versioned("status --json", &r.ok(&["status", "--json"]));
    versioned("snapshot", &r.ok(&["snapshot"]));
    versioned("manifest show", &r.ok(&["manifest", "show"]));
    versioned("pass --dry-run", &r.ok(&["pass", "--dry-run"]));
    // A check that refused is printed on stdout (exit 1).
    let out = r.run(&["transition", "complete", id, "--step", "generate-spec"]);
    assert_eq!(out.status.code(), Some(1));
    let checked: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    versioned("complete (refused)", &checked);
    let snapshot = r.run(&["snapshot"]);
    r.write("snap.json", &String::from_utf8_lossy(&snapshot.stdout));
    versioned(
        "decide",
        &r.ok(&["decide", "--snapshot", "snap.json", "--json"]),
    );
    r.write(
        "trajectory.json",
        r#"{"schema_version": 1, "trajectory": [{"iteration": 1, "change_hash": "a"}]}"#,
    );
    versioned(
        "monitor",
        &r.ok(&["monitor", "--trajectory", "trajectory.json", "--json"]),
    );
}

/// The commands people type first show examples in `--help`, and every example parses as the
/// command line it shows (issue 37): an example that drifted from the flags fails here.
#[test]
fn the_first_commands_show_examples_that_parse() {
    use clap::Parser;
    const FIRST: &[&str] = &[
        "init",
        "init-task",
        "run",
        "status",
        "exec",
        "drive",
        "start",
        "list",
        "ready",
        "show",
        "create",
        "logs",
        "update",
        "doctor",
    ];
    let mut parsed = 0;
    for (path, cmd) in all_commands() {
        let Some(after) = cmd.get_after_help().map(|h| h.to_string()) else {
            assert!(
                !FIRST.contains(&path.as_str()),
                "`splice {path} --help` has no examples"
            );
            continue;
        };
        let Some(examples) = after.split("Examples:").nth(1) else {
            continue;
        };
        for line in examples.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let words = shell_words(line);
            assert_eq!(words[0], "splice", "{path}: {line}");
            if let Err(e) = splice::cli::Cli::try_parse_from(&words) {
                panic!("`splice {path}` example `{line}` does not parse: {e}");
            }
            parsed += 1;
        }
    }
    assert!(parsed >= FIRST.len() * 2, "{parsed} examples");
}

/// A line split as a shell would, for the double quotes the examples use.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}
