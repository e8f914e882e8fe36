//! `splice completions SHELL` and `splice man` (issue 15, §5): generated from the command line,
//! they name its commands, leave the hidden ones out, and a script a shell can load.

mod common;

use std::process::{Command, Output};

use common::Repo;

fn stdout(out: &Output) -> String {
    common::no_panic(out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn completions(r: &Repo, shell: &str) -> String {
    stdout(&r.run(&["completions", shell]))
}

/// Commands a user completes (a sample), and hidden ones nobody should be offered.
const SHOWN: &[&str] = &["transition", "drive", "init-task", "completions", "man"];
const HIDDEN: &[&str] = &["sim-agent", "pre-commit"];

#[test]
fn the_bash_script_names_the_commands_and_parses() {
    let r = Repo::new();
    let script = completions(&r, "bash");
    for name in SHOWN {
        assert!(script.contains(name), "bash completion lacks `{name}`");
    }
    // The verbs under `transition` too.
    assert!(script.contains("set-autonomy"), "{script}");
    for name in HIDDEN {
        assert!(
            !script.contains(name),
            "bash completion offers hidden `{name}`"
        );
    }
    let path = r.path().join("splice.bash");
    std::fs::write(&path, &script).unwrap();
    let check = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(
        check.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&check.stderr)
    );
}

/// How each shell's script offers `name` as a command.
fn offered(shell: &str, name: &str) -> String {
    match shell {
        "zsh" => format!("'{name}:"),
        "fish" => format!("-a \"{name}\""),
        _ => format!("[CompletionResult]::new('{name}'"),
    }
}

#[test]
fn zsh_fish_and_powershell_scripts_offer_the_commands() {
    let r = Repo::new();
    for shell in ["zsh", "fish", "powershell"] {
        let script = completions(&r, shell);
        for name in SHOWN {
            let offer = offered(shell, name);
            assert!(script.contains(&offer), "{shell} completion lacks {offer}");
        }
        for name in HIDDEN {
            let offer = offered(shell, name);
            assert!(
                !script.contains(&offer),
                "{shell} completion offers {offer}"
            );
        }
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error_naming_the_valid_ones() {
    let r = Repo::new();
    let err = r.fails(2, &["completions", "tcsh"]);
    assert!(err.contains("bash") && err.contains("powershell"), "{err}");
    r.fails(2, &["completions"]);
}

#[test]
fn the_manual_page_is_roff_naming_the_commands() {
    let r = Repo::new();
    let page = stdout(&r.run(&["man"]));
    assert!(page.contains(".TH splice 1"), "{page}");
    assert!(page.contains(".SH SUBCOMMANDS"), "{page}");
    for name in ["transition", "drive", "init\\-task", "completions"] {
        assert!(page.contains(name), "the page lacks `{name}`");
    }
    assert!(!page.contains("sim\\-agent"), "a hidden command is listed");
    // What a manual page has that --help does not: the exit codes, the environment, the files.
    for section in [
        ".SH \"EXIT STATUS\"",
        ".SH ENVIRONMENT",
        ".SH FILES",
        ".SH \"SEE ALSO\"",
    ] {
        assert!(page.contains(section), "the page lacks {section}");
    }
    for named in [
        "SPLICE_DIR",
        "SPLICE_NOW",
        "config.toml",
        "sync/bd.jsonl",
        "\\fB130\\fR",
    ] {
        assert!(page.contains(named), "the page does not name {named}");
    }
}

#[test]
fn man_dir_writes_one_page_per_command() {
    let r = Repo::new();
    let dir = r.path().join("man1");
    std::fs::create_dir(&dir).unwrap();
    let listed = stdout(&r.run(&["man", "--dir", dir.to_str().unwrap()]));
    assert!(listed.contains("splice-transition-approve.1"), "{listed}");
    for page in [
        "splice.1",
        "splice-transition.1",
        "splice-transition-approve.1",
        "splice-completions.1",
    ] {
        let text =
            std::fs::read_to_string(dir.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH"), "{page}");
        assert!(
            text.contains(".SH \"EXIT STATUS\""),
            "{page} has no EXIT STATUS"
        );
        assert!(
            text.contains(".SH ENVIRONMENT"),
            "{page} has no ENVIRONMENT"
        );
    }
    assert!(!dir.join("splice-sim-agent.1").exists());
    // A directory that is not there: nothing is created, the message names it.
    let missing = r.path().join("no-such-dir");
    let err = r.fails(2, &["man", "--dir", missing.to_str().unwrap()]);
    assert!(err.contains("no-such-dir"), "{err}");
    assert!(!missing.exists());
}

#[test]
fn json_wraps_the_script_and_the_page() {
    let r = Repo::new();
    let bare = completions(&r, "fish");
    let v = r.ok(&["completions", "fish", "--json"]);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["shell"], "fish");
    assert_eq!(v["script"].as_str(), Some(bare.as_str()));
    let v = r.ok(&["man", "--json"]);
    assert!(v["page"].as_str().unwrap().contains(".TH splice 1"));
    let dir = r.path().join("pages");
    std::fs::create_dir(&dir).unwrap();
    let v = r.ok(&["man", "--json", "--dir", dir.to_str().unwrap()]);
    let written = v["written"].as_array().unwrap();
    assert_eq!(written.len(), std::fs::read_dir(&dir).unwrap().count());
    assert!(written.iter().all(|p| p.as_str().unwrap().ends_with(".1")));
}
