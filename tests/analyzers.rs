//! The built-in analyzers (`splice::floors::iteration::analyzers`, `docs/monitor.md` "Built-in
//! analyzers") run for real: each through the table's own argv, against stand-in tools (shell
//! scripts on a `PATH` passed in the runner's `env`), and, where they are installed, the real
//! `python3` and `cargo clippy`.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use splice::floors::iteration::analyzers::{Analyzer, AnalyzerRun, analyzers_for, run};
use splice::model::manifest::SarifUse;
use splice::policy::verification::Language;

const SEMGREP_SARIF: &str = r#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"Semgrep OSS","rules":[{"id":"no-eval","defaultConfiguration":{"level":"error"}}]}},"results":[{"ruleId":"no-eval","message":{"text":"eval of a string runs arbitrary code"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"a.py"},"region":{"startLine":8}}}]}],"invocations":[{"executionSuccessful":true,"toolExecutionNotifications":[]}]}]}"#;

/// The stand-ins, written once before any test starts a process: a script written while
/// another thread forks can be held open by that child and fail to start (`ETXTBSY`).
struct Fakes {
    /// semgrep (checks its argv and environment), ruff (garbage), bandit (hangs), trivy (no
    /// database), gosec (quiet and clean), cargo (without clippy); no eslint.
    bin: PathBuf,
    /// Nothing at all.
    empty: PathBuf,
}

fn fakes() -> &'static Fakes {
    static FAKES: OnceLock<Fakes> = OnceLock::new();
    FAKES.get_or_init(|| {
        let root = tempfile::Builder::new()
            .prefix("analyzers-fakes")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap()
            .keep();
        let bin = root.join("bin");
        let empty = root.join("empty");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&empty).unwrap();
        let semgrep = format!(
            "#!/bin/sh\n\
case \"$*\" in\n\
  'scan --sarif --metrics=off --disable-version-check --config .semgrep.yml') ;;\n\
  *) echo \"unexpected argv: $*\" >&2; exit 9 ;;\n\
esac\n\
[ \"$SEMGREP_SEND_METRICS\" = off ] || {{ echo 'metrics are on' >&2; exit 9; }}\n\
printf '%s\\n' '{SEMGREP_SARIF}'\n"
        );
        let scripts = [
            ("semgrep", semgrep.as_str()),
            (
                "ruff",
                "#!/bin/sh\necho 'Traceback (most recent call last): this is no JSON'\n",
            ),
            ("bandit", "#!/bin/sh\nexec /bin/sleep 30\n"),
            (
                "trivy",
                "#!/bin/sh\necho 'FATAL Fatal error: init error: DB error: --skip-db-update cannot be specified on the first run' >&2\nexit 1\n",
            ),
            ("gosec", "#!/bin/sh\nexit 0\n"),
            (
                "cargo",
                "#!/bin/sh\necho 'error: no such command: `clippy`' >&2\necho '' >&2\necho 'help: view all installed commands with `cargo --list`' >&2\nexit 101\n",
            ),
        ];
        for (name, text) in scripts {
            let path = bin.join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Fakes { bin, empty }
    })
}

fn analyzer(name: &str) -> Analyzer {
    let all: BTreeSet<Language> = [
        Language::Rust,
        Language::Python,
        Language::Go,
        Language::JavaScript,
        Language::TypeScript,
    ]
    .into_iter()
    .collect();
    analyzers_for(&all)
        .into_iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("no analyzer {name}"))
}

/// `name` from the table, run in `dir` with only `path` on `PATH`.
fn run_with_path(name: &str, dir: &Path, path: &Path, timeout: Duration) -> AnalyzerRun {
    let path = path.display().to_string();
    run(
        &analyzer(name),
        dir,
        &[("PATH", path.as_str())],
        timeout,
        None,
    )
}

fn fake(name: &str, dir: &Path) -> AnalyzerRun {
    run_with_path(name, dir, &fakes().bin, Duration::from_secs(20))
}

#[test]
fn a_semgrep_error_result_is_one_finding_at_level_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".semgrep.yml"), "rules: []\n").unwrap();
    let r = fake("semgrep", dir.path());
    assert_eq!(r.incomplete, None, "{r:?}");
    assert_eq!(r.not_applicable, None);
    assert_eq!(
        (r.name.as_str(), r.counts_as),
        ("semgrep", SarifUse::Security)
    );
    assert_eq!(r.findings.len(), 1);
    let f = &r.findings[0];
    // A SARIF `error` is high in the iteration's severity mapping.
    assert_eq!(
        (
            f.level,
            f.security,
            f.rule.as_deref(),
            f.location.as_deref()
        ),
        ("error", None, Some("no-eval"), Some("a.py:8"))
    );
}

#[test]
fn semgrep_without_the_repositorys_own_rules_is_incomplete_and_fetches_none() {
    let dir = tempfile::tempdir().unwrap();
    let r = fake("semgrep", dir.path());
    let why = r.incomplete.expect("incomplete");
    assert!(
        why.contains(".semgrep.yml, .semgrep.yaml, .semgrep"),
        "{why}"
    );
    assert!(why.contains("never registry rules"), "{why}");
    assert!(r.findings.is_empty());
}

#[test]
fn a_missing_tool_is_incomplete_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let r = fake("eslint", dir.path());
    assert_eq!(r.incomplete.as_deref(), Some("`eslint` is not installed"));
    assert_eq!(r.not_applicable, None);
    assert!(r.findings.is_empty());
}

#[test]
fn missing_optional_scanners_are_not_applicable_rather_than_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".semgrep.yml"), "rules: []\n").unwrap();
    for name in ["semgrep", "trivy"] {
        let r = run_with_path(name, dir.path(), &fakes().empty, Duration::from_secs(20));
        assert_eq!(r.incomplete, None, "{name}");
        assert_eq!(
            r.not_applicable,
            Some(format!("`{name}` is not installed")),
            "{name}"
        );
    }
}

#[test]
fn a_tool_that_hangs_past_its_limit_is_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let r = run_with_path("bandit", dir.path(), &fakes().bin, Duration::from_secs(1));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "killed at its limit"
    );
    assert_eq!(
        r.incomplete.as_deref(),
        Some("`bandit -r . -f json -q` ran past 1s")
    );
    assert!(r.findings.is_empty());
}

#[test]
fn unparseable_output_is_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let r = fake("ruff", dir.path());
    let why = r.incomplete.expect("incomplete");
    assert!(
        why.starts_with("`ruff check --output-format=json .`: its output cannot be read: not JSON"),
        "{why}"
    );
    assert!(r.findings.is_empty());
}

#[test]
fn trivy_without_its_database_is_incomplete_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let r = fake("trivy", dir.path());
    let why = r.incomplete.expect("incomplete");
    assert!(
        why.contains("exited 1: FATAL Fatal error: init error: DB error"),
        "{why}"
    );
    assert!(
        why.contains("--download-db-only"),
        "the offline hint: {why}"
    );
}

#[test]
fn a_quiet_tool_that_prints_nothing_found_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let r = fake("gosec", dir.path());
    assert_eq!((r.incomplete, r.findings.len()), (None, 0));
}

#[test]
fn cargo_without_clippy_is_not_installed_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let r = fake("clippy", dir.path());
    let why = r.incomplete.expect("incomplete");
    assert!(why.starts_with("`cargo clippy` is not installed"), "{why}");
    assert!(why.contains("no such command"), "{why}");
}

fn installed(argv: &[&str]) -> bool {
    std::process::Command::new(argv[0])
        .args(&argv[1..])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn the_python_syntax_check_compiles_the_projects_own_files() {
    if !installed(&["python3", "--version"]) {
        eprintln!("skipped: `python3 --version` fails here, so the syntax check cannot run");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("pkg/ok.py", "def f():\n    return 1\n");
    write("pkg/bad.py", "def f(:\n    pass\n");
    write("pkg/nul.py", "x = 1\0\n");
    write("vendor/dep.py", "def broken(:\n");
    write("node_modules/x/y.py", "def broken(:\n");
    // A module named like the standard library's does not run: `-I` keeps the cwd off sys.path.
    write("json.py", "raise SystemExit('shadowed')\n");
    write("sneaky.py", "import os\nos.system('touch RAN')\n");
    let r = run(
        &analyzer("python-syntax"),
        dir.path(),
        &[],
        Duration::from_secs(60),
        None,
    );
    assert_eq!(r.incomplete, None, "{r:?}");
    // A null byte is a ValueError with no line before Python 3.12, a SyntaxError after.
    let mut places: Vec<_> = r
        .findings
        .iter()
        .map(|f| {
            let at = f.location.clone().unwrap_or_default();
            let file = at.split(':').next().unwrap_or_default().to_string();
            (file, f.level, f.rule.clone())
        })
        .collect();
    places.sort();
    let syntax = Some("syntax-error".to_string());
    assert_eq!(
        places,
        [
            ("pkg/bad.py".to_string(), "error", syntax.clone()),
            ("pkg/nul.py".to_string(), "error", syntax)
        ]
    );
    assert_eq!(r.findings[0].location.as_deref(), Some("pkg/bad.py:1"));
    assert!(
        !dir.path().join("RAN").exists(),
        "compiled, never run: {r:?}"
    );
    assert!(
        !dir.path().join("pkg/__pycache__").exists(),
        "no bytecode written"
    );
}

#[test]
fn real_clippy_on_a_tiny_crate() {
    if !installed(&["cargo", "clippy", "--version"]) {
        eprintln!("skipped: `cargo clippy --version` fails here (clippy is not installed)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("src/lib.rs"),
        "pub fn f(v: &Vec<i32>) -> bool {\n    v.len() == 0\n}\n",
    )
    .unwrap();
    let target = dir.path().join("target").display().to_string();
    let r = run(
        &analyzer("clippy"),
        dir.path(),
        &[("CARGO_TARGET_DIR", target.as_str())],
        Duration::from_secs(300),
        None,
    );
    assert_eq!(r.incomplete, None, "{r:?}");
    let rules: BTreeSet<_> = r
        .findings
        .iter()
        .map(|f| (f.rule.clone().unwrap_or_default(), f.level))
        .collect();
    assert!(
        rules.contains(&("clippy::ptr_arg".to_string(), "warning")),
        "{rules:?}"
    );
    assert!(
        rules.contains(&("clippy::len_zero".to_string(), "warning")),
        "{rules:?}"
    );
    std::fs::write(
        dir.path().join("src/lib.rs"),
        "pub fn f() -> u32 {\n    \"not a number\"\n}\n",
    )
    .unwrap();
    let r = run(
        &analyzer("clippy"),
        dir.path(),
        &[("CARGO_TARGET_DIR", target.as_str())],
        Duration::from_secs(300),
        None,
    );
    assert_eq!(r.incomplete, None, "a compile error is a finding: {r:?}");
    assert!(
        r.findings
            .iter()
            .any(|f| f.level == "error" && f.rule.as_deref() == Some("E0308")),
        "{r:?}"
    );
}
