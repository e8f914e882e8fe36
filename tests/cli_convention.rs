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
