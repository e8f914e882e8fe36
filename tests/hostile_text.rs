//! Text read from files (a bead's fields, a bead file's name, a settings file) reaches a terminal
//! with its control characters escaped (`\u{1b}`, `\n`), on stdout and in an error on stderr
//! (`docs/cli.md`, "Output"). A bead imported from a bd export can hold anything.

mod common;

use std::process::Output;

use common::Repo;

/// A bead file's name (without `.json`) that drives the terminal and fakes a line.
const HOSTILE_NAME: &str = "a\u{1b}[31m\nfake";

/// `HOSTILE_NAME` as a person reads it: escaped.
const SHOWN_NAME: &str = "a\\u{1b}[31m\\nfake";

/// `text` holds no control character but line ends, and no line of it starts with `fake` (the
/// newline of a hostile text was escaped, not printed).
fn assert_escaped(text: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "a control character reached the terminal: {text:?}"
    );
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with("fake")),
        "a newline from a file made a line of its own: {text}"
    );
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A repository with one task and a bead file named [`HOSTILE_NAME`].
fn hostile_file_name() -> Repo {
    let r = Repo::new();
    r.task("Fine", &[]);
    let file = r.state().join("beads").join(format!("{HOSTILE_NAME}.json"));
    std::fs::write(file, "{}\n").unwrap();
    r
}

#[test]
fn an_error_names_a_hostile_bead_file_escaped_on_stderr() {
    let r = hostile_file_name();
    let out = r.run(&["export", "bd"]);
    common::no_panic(&out);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let text = stderr(&out);
    assert_escaped(&text);
    assert!(
        text.starts_with("splice: ") && text.contains(&format!("{SHOWN_NAME}.json: ")),
        "{text}"
    );
}
