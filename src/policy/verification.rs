//! What a leaf's default verification runs (issue 34, `docs/monitor.md`, "Detected stages"):
//! the repository's test command and the languages present, read from its file list. Pure: the
//! caller lists the tracked files and hands over the few small files the rules read
//! ([`READS`]); nothing here touches the file system.
//!
//! The order of the test-command rules (the first that applies decides):
//!
//! | # | when | command |
//! |---|---|---|
//! | 1 | `Cargo.toml` at the root | `cargo test` |
//! | 2 | `go.mod` at the root | `go test -v ./...` |
//! | 3 | `package.json` at the root with a `scripts.test` (not npm's placeholder) | `pnpm test` with `pnpm-lock.yaml`, `yarn test` with `yarn.lock`, else `npm test` |
//! | 4 | a Python project (`pyproject.toml`, `setup.py`, `setup.cfg`, `pytest.ini`, `tox.ini` at the root, or a `test_*.py` / `*_test.py` file) | `python3 -m pytest -rA -q -p no:cacheprovider` |
//! | 5 | a `Makefile` (or `makefile`, `GNUmakefile`) with a `test` target, else a `check` target | `make test`, `make check` |
//! | 6 | a `justfile` with a `test` recipe | `just test` |
//!
//! Languages with a runner whose per-test lines splice reads come first (libtest, go's `-v`,
//! pytest's `-rA` summary); wrappers whose output is the project's own come last.

use std::collections::{BTreeMap, BTreeSet};

/// The files at the repository's root whose contents the rules read.
pub const READS: &[&str] = &[
    "package.json",
    "Makefile",
    "makefile",
    "GNUmakefile",
    "justfile",
    "Justfile",
    ".justfile",
];

/// Directories whose files are never the project's own: dependencies and build output.
const VENDORED: &[&str] = &[
    ".git",
    ".splice",
    "node_modules",
    "vendor",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    "dist",
    "build",
];

/// npm's placeholder test script (`npm init`): it runs nothing and fails.
const NPM_PLACEHOLDER: &str = "no test specified";

/// A language whose analyzers a leaf's verification runs when it is present.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Language {
    /// Rust.
    Rust,
    /// Python.
    Python,
    /// Go.
    Go,
    /// JavaScript.
    JavaScript,
    /// TypeScript.
    TypeScript,
}

impl Language {
    /// Its name in messages and reports.
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::Go => "go",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
        }
    }
}

/// A repository as the rules see it: its tracked paths (relative, `/`-separated) and the
/// contents of those of [`READS`] that exist at its root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepoFiles {
    /// Its tracked paths.
    pub paths: Vec<String>,
    /// Path → contents, for those of [`READS`] at its root.
    pub contents: BTreeMap<String, String>,
}

/// The detected test command and the rule that chose it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestCommand {
    /// The command.
    pub argv: Vec<String>,
    /// Why: the file that decided (`Cargo.toml`, `package.json scripts.test`, …).
    pub because: String,
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_string()).collect()
}

fn own(path: &str) -> bool {
    !path
        .split('/')
        .any(|part| VENDORED.contains(&part) || part.is_empty())
}

impl RepoFiles {
    fn at_root(&self, name: &str) -> bool {
        self.paths.iter().any(|p| p == name)
    }

    fn content(&self, name: &str) -> Option<&str> {
        self.contents.get(name).map(String::as_str)
    }
}

/// The repository's test command, or `None` when no rule applies.
pub fn test_command(files: &RepoFiles) -> Option<TestCommand> {
    let found = |words: &[&str], because: &str| {
        Some(TestCommand {
            argv: argv(words),
            because: because.to_string(),
        })
    };
    if files.at_root("Cargo.toml") {
        return found(&["cargo", "test"], "Cargo.toml");
    }
    if files.at_root("go.mod") {
        return found(&["go", "test", "-v", "./..."], "go.mod");
    }
    if files.at_root("package.json") && npm_test_script(files.content("package.json")) {
        let because = "package.json scripts.test";
        if files.at_root("pnpm-lock.yaml") {
            return found(&["pnpm", "test"], because);
        }
        if files.at_root("yarn.lock") {
            return found(&["yarn", "test"], because);
        }
        return found(&["npm", "test"], because);
    }
    if let Some(marker) = python_marker(files) {
        return found(
            &[
                "python3",
                "-m",
                "pytest",
                "-rA",
                "-q",
                "-p",
                "no:cacheprovider",
            ],
            &marker,
        );
    }
    for name in ["GNUmakefile", "makefile", "Makefile"] {
        let Some(text) = files.content(name).filter(|_| files.at_root(name)) else {
            continue;
        };
        for target in ["test", "check"] {
            if make_target(text, target) {
                return found(&["make", target], &format!("{name} target `{target}`"));
            }
        }
    }
    for name in ["justfile", "Justfile", ".justfile"] {
        if let Some(text) = files.content(name).filter(|_| files.at_root(name))
            && just_recipe(text, "test")
        {
            return found(&["just", "test"], &format!("{name} recipe `test`"));
        }
    }
    None
}

/// Does `package.json` declare a test script that runs something?
fn npm_test_script(text: Option<&str>) -> bool {
    let Some(value) = text.and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok()) else {
        return false;
    };
    value
        .get("scripts")
        .and_then(|s| s.get("test"))
        .and_then(serde_json::Value::as_str)
        .is_some_and(|s| !s.trim().is_empty() && !s.contains(NPM_PLACEHOLDER))
}

fn python_marker(files: &RepoFiles) -> Option<String> {
    for name in [
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "pytest.ini",
        "tox.ini",
    ] {
        if files.at_root(name) {
            return Some(name.to_string());
        }
    }
    files
        .paths
        .iter()
        .filter(|p| own(p))
        .find(|p| {
            let name = p.rsplit('/').next().unwrap_or_default();
            name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
        })
        .cloned()
}

/// Does a Makefile define `target` (`test:` or `test: deps`, not `test := value`)?
fn make_target(text: &str, target: &str) -> bool {
    text.lines().any(|line| {
        let Some(rest) = line.strip_prefix(target) else {
            return false;
        };
        let rest = rest.trim_start();
        rest.starts_with(':') && !rest.starts_with(":=") && !rest.starts_with("::=")
    })
}

/// Does a justfile define `recipe` (`test:`, `test arg:`, `@test:`)?
fn just_recipe(text: &str, recipe: &str) -> bool {
    text.lines().any(|line| {
        let line = line.strip_prefix('@').unwrap_or(line);
        let Some(rest) = line.strip_prefix(recipe) else {
            return false;
        };
        let next = rest.chars().next();
        matches!(next, Some(':' | ' ' | '\t'))
            && rest.contains(':')
            && !rest.trim_start().starts_with(":=")
    })
}

/// The languages present among the project's own files, by extension.
pub fn languages(files: &RepoFiles) -> BTreeSet<Language> {
    files
        .paths
        .iter()
        .filter(|p| own(p))
        .filter_map(|p| {
            let ext = p.rsplit('/').next()?.rsplit_once('.')?.1;
            match ext {
                "rs" => Some(Language::Rust),
                "py" => Some(Language::Python),
                "go" => Some(Language::Go),
                "js" | "mjs" | "cjs" | "jsx" => Some(Language::JavaScript),
                "ts" | "mts" | "cts" | "tsx" => Some(Language::TypeScript),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(paths: &[&str], contents: &[(&str, &str)]) -> RepoFiles {
        RepoFiles {
            paths: paths.iter().map(|p| (*p).to_string()).collect(),
            contents: contents
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect(),
        }
    }

    fn cmd(files: &RepoFiles) -> Option<String> {
        test_command(files).map(|c| c.argv.join(" "))
    }

    #[test]
    fn each_ecosystem_gets_its_runner() {
        let cargo = repo(&["Cargo.toml", "src/lib.rs"], &[]);
        assert_eq!(cmd(&cargo).as_deref(), Some("cargo test"));
        let go = repo(&["go.mod", "main.go"], &[]);
        assert_eq!(cmd(&go).as_deref(), Some("go test -v ./..."));
        let py = repo(&["pkg/__init__.py", "tests/test_pkg.py"], &[]);
        assert_eq!(
            cmd(&py).as_deref(),
            Some("python3 -m pytest -rA -q -p no:cacheprovider")
        );
        assert_eq!(
            test_command(&py).unwrap().because,
            "tests/test_pkg.py",
            "the file that decided is named"
        );
    }

    #[test]
    fn node_projects_use_their_package_manager_and_skip_the_placeholder() {
        let script = r#"{"scripts": {"test": "jest"}}"#;
        let npm = repo(&["package.json"], &[("package.json", script)]);
        assert_eq!(cmd(&npm).as_deref(), Some("npm test"));
        let pnpm = repo(
            &["package.json", "pnpm-lock.yaml"],
            &[("package.json", script)],
        );
        assert_eq!(cmd(&pnpm).as_deref(), Some("pnpm test"));
        let yarn = repo(&["package.json", "yarn.lock"], &[("package.json", script)]);
        assert_eq!(cmd(&yarn).as_deref(), Some("yarn test"));
        let placeholder = r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#;
        let none = repo(&["package.json"], &[("package.json", placeholder)]);
        assert_eq!(cmd(&none), None);
        let broken = repo(&["package.json"], &[("package.json", "{not json")]);
        assert_eq!(cmd(&broken), None, "a broken package.json names no command");
    }

    #[test]
    fn make_and_just_targets_are_read_not_guessed() {
        let make = repo(
            &["Makefile"],
            &[("Makefile", "all:\n\tcc x.c\ntest: all\n\t./t\n")],
        );
        assert_eq!(cmd(&make).as_deref(), Some("make test"));
        let check = repo(&["Makefile"], &[("Makefile", "check:\n\t./t\n")]);
        assert_eq!(cmd(&check).as_deref(), Some("make check"));
        let variable = repo(&["Makefile"], &[("Makefile", "test := 1\ntests:\n\t./t\n")]);
        assert_eq!(
            cmd(&variable),
            None,
            "a variable or a longer name is no target"
        );
        let just = repo(
            &["justfile"],
            &[("justfile", "build:\n  cargo b\n@test *args:\n  ./t\n")],
        );
        assert_eq!(cmd(&just).as_deref(), Some("just test"));
        let unread = repo(&["Makefile"], &[]);
        assert_eq!(
            cmd(&unread),
            None,
            "a Makefile whose text was not given decides nothing"
        );
    }

    #[test]
    fn the_first_rule_wins_and_nested_manifests_do_not_count() {
        let both = repo(
            &["Cargo.toml", "Makefile"],
            &[("Makefile", "test:\n\tcargo test\n")],
        );
        assert_eq!(cmd(&both).as_deref(), Some("cargo test"));
        let nested = repo(&["tools/Cargo.toml", "README.md"], &[]);
        assert_eq!(cmd(&nested), None);
        let vendored = repo(&["node_modules/x/test_y.py"], &[]);
        assert_eq!(
            cmd(&vendored),
            None,
            "a vendored test file is not the project's"
        );
    }

    #[test]
    fn languages_come_from_extensions_outside_vendored_dirs() {
        let files = repo(
            &[
                "src/main.rs",
                "web/app.tsx",
                "web/util.js",
                "node_modules/left-pad/index.js",
                "vendor/x/y.go",
                "README.md",
            ],
            &[],
        );
        let got: Vec<_> = languages(&files).into_iter().map(Language::name).collect();
        assert_eq!(got, ["rust", "javascript", "typescript"]);
    }
}
