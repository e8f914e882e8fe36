//! `src/decide/` and `src/policy/` are pure (DESIGN §2): no file system, processes, environment,
//! clock, git or randomness. This scans their sources, comments excluded, for the ways in.

use std::path::{Path, PathBuf};

const FORBIDDEN: &[&str] = &[
    "std::fs",
    "fs::",
    "std::process",
    "process::",
    "std::env",
    "env::",
    "env!",
    "SystemTime",
    "Instant",
    "Utc::now",
    "Local::now",
    "::now(",
    "git2",
    "rand::",
    "thread_rng",
    "getrandom",
    "RandomState",
    "crate::clock",
    "crate::store",
    "crate::transition",
    "crate::floors",
    "crate::exec",
    "crate::driver",
    "crate::cli",
    "std::net",
    "std::thread",
    "std::io",
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The line without its `//` comment (decide holds no string literal with `//`).
fn code(line: &str) -> &str {
    line.find("//").map_or(line, |at| &line[..at])
}

fn violations(text: &str) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for word in FORBIDDEN {
            if code(line).contains(word) {
                found.push((n + 1, *word));
            }
        }
    }
    found
}

fn assert_pure(module: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(module);
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(
        files.len() >= 2,
        "no sources found under {}",
        root.display()
    );
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, word) in violations(&text) {
            found.push(format!("{}:{line}: `{word}`", file.display()));
        }
    }
    assert!(
        found.is_empty(),
        "src/{module}/ must stay pure:\n{}",
        found.join("\n")
    );
}

#[test]
fn decide_module_uses_no_io_clock_env_or_randomness() {
    assert_pure("decide");
}

#[test]
fn policy_module_uses_no_io_clock_env_or_randomness() {
    assert_pure("policy");
}

#[test]
fn the_scan_catches_a_forbidden_use_and_skips_comments() {
    assert_eq!(
        violations("let t = std::time::SystemTime::now(); // when").len(),
        2
    );
    assert_eq!(violations("use std::{fs::File, env::var};").len(), 2);
    assert!(violations("//! no std::fs here").is_empty());
}
