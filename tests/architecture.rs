//! The import direction of `docs/architecture.md`, checked on the sources: which top-level module
//! of `src/` may name which (`crate::<module>` in code, comments excluded), and no import circle
//! between them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Modules that may import only the ones listed (every other module is unrestricted but for
/// [`FORBIDDEN`] and the no-circle rule).
const ONLY: &[(&str, &[&str])] = &[
    ("model", &[]),
    ("error", &["refusal", "model"]),
    ("policy", &["model"]),
    ("refusal", &["model"]),
    ("decide", &["model", "policy"]),
    // Who is calling (issue 9): `/proc`, the environment and runner records; no policy.
    ("authority", &["error", "process", "safe_read"]),
    // Reading a file someone else put there: bounded, non-blocking, no link followed.
    ("safe_read", &["error"]),
    // The kernel sandbox (issue 31): paths and system calls, no policy of splice's.
    ("sandbox", &[]),
    // Stdout and stderr: bytes out, nothing of splice's.
    ("stdio", &[]),
];

/// Imports that point the wrong way: (module, modules it must never name).
const FORBIDDEN: &[(&str, &[&str])] = &[
    (
        "store",
        &[
            "transition",
            "floors",
            "exec",
            "driver",
            "cli",
            "demo",
            "decide",
        ],
    ),
    (
        "floors",
        &["transition", "exec", "driver", "cli", "demo", "decide"],
    ),
    (
        "exec",
        &["transition", "floors", "driver", "cli", "demo", "decide"],
    ),
    ("transition", &["driver", "cli", "demo", "exec"]),
    // Hooks install files and read git; the executor uses their fragment, never the reverse.
    (
        "hooks",
        &[
            "transition",
            "floors",
            "exec",
            "driver",
            "cli",
            "demo",
            "decide",
        ],
    ),
    ("driver", &["cli", "demo", "drive"]),
    ("demo", &["cli", "drive"]),
    // The cockpit is a host beside `cli`: it uses what is below, nothing below uses it.
    ("drive", &["cli"]),
    // Doctor reads: never the writer's verbs, nor a host.
    ("doctor", &["transition", "cli", "demo", "drive"]),
    // The hook reads the verb table and discovery; it never runs a verb or the runner.
    (
        "guard",
        &[
            "driver", "cli", "demo", "exec", "floors", "decide", "worktree",
        ],
    ),
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

/// The top-level module a source file belongs to.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The modules named as `crate::<name>` in `text`, comments excluded.
fn imports(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.find("//").map_or(line, |at| &line[..at]);
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let module = module_of(&src, &file);
        let text = std::fs::read_to_string(&file).unwrap();
        let entry = graph.entry(module.clone()).or_default();
        entry.extend(imports(&text).into_iter().filter(|m| *m != module));
    }
    graph
}

/// A circle through `start`, if there is one.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        at: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in graph.get(at).into_iter().flatten() {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, start, next, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    walk(graph, start, start, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn modules_import_in_one_direction() {
    let graph = graph();
    let mut wrong = Vec::new();
    for (module, allowed) in ONLY {
        for name in graph.get(*module).into_iter().flatten() {
            if !allowed.contains(&name.as_str()) {
                wrong.push(format!(
                    "{module} may import only {allowed:?}, but names {name}"
                ));
            }
        }
    }
    for (module, never) in FORBIDDEN {
        for name in graph.get(*module).into_iter().flatten() {
            if never.contains(&name.as_str()) {
                wrong.push(format!("{module} must not import {name}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_import_circle_between_modules() {
    let graph = graph();
    for module in graph.keys() {
        if let Some(path) = circle(&graph, module) {
            panic!("import circle: {}", path.join(" -> "));
        }
    }
}

/// Step and route names a default manifest uses, which code must not name: it finds a step by
/// its role and a route by its kind (issue 8). `model/` owns the names; the demo's simulated
/// agent plays the steps; tests may name them.
const STEP_AND_ROUTE_NAMES: &[&str] = &[
    "\"compound\"",
    "\"leaf\"",
    "\"delegate\"",
    "\"integrate\"",
    "\"deliver\"",
];

/// The code of a source file before its `#[cfg(test)]` module, comments excluded.
fn code_before_tests(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
        .map(|(n, l)| (n + 1, l.find("//").map_or(l, |at| &l[..at])))
        .collect()
}

#[test]
fn no_code_outside_the_model_names_a_step_or_route() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let module = module_of(&src, &file);
        let is_test = file.file_name().is_some_and(|n| n == "tests.rs");
        if module == "model" || module == "demo" || is_test {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, code) in code_before_tests(&text) {
            for name in STEP_AND_ROUTE_NAMES {
                if code.contains(name) {
                    found.push(format!("{}:{n}: {name}", file.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "name steps by role, routes by kind:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checks_see_imports_and_circles() {
    assert_eq!(
        code_before_tests("a \"leaf\" // \"deliver\"\n#[cfg(test)]\n\"x\""),
        vec![(1, "a \"leaf\" ")]
    );
    let found =
        imports("use crate::model::Bead; // crate::cli\nlet x = crate::store::Store::at();");
    assert_eq!(
        found.into_iter().collect::<Vec<_>>(),
        vec!["model".to_string(), "store".to_string()]
    );
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("a".into());
    assert_eq!(circle(&g, "a").unwrap(), vec!["a", "b", "a"]);
    g.get_mut("b").unwrap().clear();
    assert!(circle(&g, "a").is_none());
}

/// The import table of `docs/architecture.md`, between its markers: every top-level module and
/// the modules its sources name, as they are. `SPLICE_BLESS=1` rewrites it.
#[test]
fn the_architecture_doc_lists_the_imports_as_they_are() {
    const OPEN: &str = "<!-- imports: written by tests/architecture.rs -->\n";
    const CLOSE: &str = "<!-- /imports -->";
    let mut table = String::from("| module | imports |\n|---|---|\n");
    let graph = graph();
    // The crate's roots (`lib.rs`, `main.rs`) hold no code of a part.
    for (module, names) in graph
        .iter()
        .filter(|(m, _)| !matches!(m.as_str(), "lib" | "main"))
    {
        let names: Vec<String> = names
            .iter()
            .filter(|n| graph.contains_key(*n))
            .map(|n| format!("`{n}`"))
            .collect();
        let names = match names.is_empty() {
            true => "nothing".to_string(),
            false => names.join(", "),
        };
        table.push_str(&format!("| `{module}` | {names} |\n"));
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let start = doc
        .find(OPEN)
        .expect("docs/architecture.md has the imports markers")
        + OPEN.len();
    let end = start + doc[start..].find(CLOSE).expect("the closing marker");
    if doc[start..end] == table {
        return;
    }
    if std::env::var_os("SPLICE_BLESS").is_some() {
        std::fs::write(&path, format!("{}{table}{}", &doc[..start], &doc[end..])).unwrap();
        return;
    }
    panic!(
        "docs/architecture.md's import table is not the imports as they are; \
         run `SPLICE_BLESS=1 cargo test --test architecture` and read the diff:\n{table}"
    );
}
