//! The built-in analyzers of a leaf's verification (issue 34; `docs/monitor.md`, "Built-in
//! analyzers"; seed 000 "Static analyzer", "Security auditor"): the lint and security tools that
//! run for the languages present, and one runner that turns each tool's output into the
//! floors' [`Finding`]s.
//!
//! [`analyzers_for`] is a pure table, in a fixed order:
//!
//! | language | analyzer | counts as | argv |
//! |---|---|---|---|
//! | Rust | `clippy` | lint | `cargo clippy --message-format=json --all-targets` |
//! | Python | `python-syntax` | lint | `python3 -I -B -c <compile every .py>` |
//! | Python | `ruff` | lint | `ruff check --output-format=json .` |
//! | Python | `bandit` | security | `bandit -r . -f json -q` |
//! | Go | `gofmt` | lint | `gofmt -l -e .` |
//! | Go | `gosec` | security | `gosec -fmt sarif -quiet ./...` |
//! | JavaScript or TypeScript | `eslint` | lint | `eslint -f json .` |
//! | TypeScript | `tsc` | lint | `tsc --noEmit --pretty false` (with a `tsconfig.json`) |
//! | every repository | `semgrep` | security | `semgrep scan --sarif --metrics=off --disable-version-check --config <the repository's rules>` |
//! | every repository | `trivy` | security | `trivy fs --format sarif --offline-scan --skip-db-update --quiet .` |
//!
//! [`run`] runs one in the worktree through the floors' runner ([`run_in`]: own process group,
//! killed at the time limit, each stream bounded). The exit code is not the verdict — linters
//! exit non-zero when they find something — but a non-zero exit with nothing read is no
//! evidence. Whatever keeps a tool from giving complete evidence is [`AnalyzerRun::incomplete`],
//! never a failure: not installed (it cannot be started), could not start, ran past its limit,
//! was killed, printed more than [`REPORT_CAP`], printed what cannot be read, exited non-zero
//! with no finding read, or said itself that it did not finish. The two language-agnostic
//! scanners (`semgrep`, `trivy`) are optional: where they are not installed they are
//! [`AnalyzerRun::not_applicable`], not incomplete; installed, they are held to the same rules.
//!
//! Offline: no analyzer may fetch anything. semgrep runs only the repository's own rules
//! (`.semgrep.yml`, `.semgrep.yaml` or `.semgrep/`) with metrics and the version check off —
//! its registry rules (`--config auto`) need the network, and `--config auto` refuses to run
//! with metrics off; trivy runs on the database already in its cache. What they cannot have
//! offline is incomplete evidence, with the tool's own reason.
//!
//! Limit: every parser reads agent-written output and never panics; a report cut at
//! [`REPORT_CAP`] is not read (the findings it held are lost with it, and it counts as
//! incomplete).

mod reports;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use crate::floors::confine::Confined;
use crate::floors::sarif::Finding;
use crate::floors::{run_in, tail};
use crate::model::manifest::SarifUse;
use crate::policy::verification::Language;
use crate::process::Exit;

/// How much of a tool's stdout (and of its stderr) is kept: as the `sarif` floor keeps.
pub const REPORT_CAP: usize = 64 * 1024 * 1024;

/// How much of a tool's own words a reason quotes.
const QUOTE_BYTES: usize = 400;

/// How an analyzer's output is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// cargo's JSON lines: `compiler-message`s, `error` → error, `warning` → warning.
    CargoJson,
    /// The lines of [`PYTHON_SYNTAX`]: one JSON object per syntax error, then `{"checked": n}`.
    PythonSyntax,
    /// ruff's JSON array; every rule a warning (ruff has no severity of its own).
    RuffJson,
    /// bandit's JSON report; `issue_severity` is the security bucket.
    BanditJson,
    /// gofmt's `-l -e` output: unformatted files (stdout) are warnings, parse errors (stderr,
    /// `file:line:col: msg`) errors.
    GofmtList,
    /// ESLint's JSON array; severity 2 → error, 1 → warning.
    EslintJson,
    /// tsc's `file(line,col): error TSnnnn: msg` lines, each an error.
    TscText,
    /// A SARIF 2.1.0 log ([`crate::floors::sarif::read_log`]).
    Sarif,
}

impl Format {
    /// Every format, in the order of the module's table.
    pub const ALL: [Format; 8] = [
        Format::CargoJson,
        Format::PythonSyntax,
        Format::RuffJson,
        Format::BanditJson,
        Format::GofmtList,
        Format::EslintJson,
        Format::TscText,
        Format::Sarif,
    ];
}

/// One built-in analyzer: what runs and how its output is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analyzer {
    pub name: &'static str,
    pub counts_as: SarifUse,
    /// The command, run in the worktree; `argv[0]` is what must be installed. For an analyzer
    /// with a [`Analyzer::config_flag`], the file found is appended after that flag.
    pub argv: Vec<String>,
    pub format: Format,
    /// Set for the command before the caller's `env` (which wins on the same name): what keeps
    /// the tool offline and quiet.
    pub env: &'static [(&'static str, &'static str)],
    /// At least one of these (relative to the worktree) must exist, or there is nothing to run
    /// it with (incomplete): tsc's `tsconfig.json`, semgrep's rules.
    pub needs_one_of: &'static [&'static str],
    /// Pass the first of [`Analyzer::needs_one_of`] found after this flag (semgrep's
    /// `--config`).
    pub config_flag: Option<&'static str>,
    /// What the tool would download (rules, a database) and how to have it offline: named when
    /// the tool gives no complete evidence. `None`: it fetches nothing.
    pub fetches: Option<&'static str>,
    /// Not installed is not applicable rather than incomplete (the language-agnostic scanners).
    pub optional: bool,
    /// A tool that prints nothing when it finds nothing (gosec's `-quiet`): empty output with
    /// exit 0 is no finding.
    pub silent_when_clean: bool,
}

/// What one analyzer gave.
#[derive(Clone, Debug, PartialEq)]
pub struct AnalyzerRun {
    pub name: String,
    pub counts_as: SarifUse,
    /// Its findings, level and security bucket as [`crate::floors::sarif`] gives them
    /// (duplicates of one finding, as cargo reports for each target, kept once).
    pub findings: Vec<Finding>,
    /// Why this tool gave no complete evidence (the findings it did give still count).
    pub incomplete: Option<String>,
    /// An optional analyzer that does not apply here (not installed): no evidence, and not
    /// incomplete either.
    pub not_applicable: Option<String>,
}

/// The Python syntax check: compiles (never runs) every `.py` file under the working
/// directory, skipping links and the directories that are never the project's own (as
/// `policy::verification` does), and prints one JSON line per file that does not compile, then
/// `{"checked": n}`. Run with `-I`, so no module of the repository shadows the standard library.
pub const PYTHON_SYNTAX: &str = r#"import json, os
SKIP = {".git", ".splice", "node_modules", "vendor", "target", ".venv", "venv", "__pycache__", "dist", "build"}
n = 0
for root, dirs, files in os.walk(".", followlinks=False):
    dirs[:] = sorted(d for d in dirs if d not in SKIP)
    for name in sorted(files):
        path = os.path.join(root, name)
        if not name.endswith(".py") or os.path.islink(path) or not os.path.isfile(path):
            continue
        rel = os.path.relpath(path, ".")
        n += 1
        try:
            with open(path, "rb") as f:
                source = f.read()
            compile(source, rel, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as e:
            print(json.dumps({"file": rel, "line": getattr(e, "lineno", None), "message": "%s: %s" % (type(e).__name__, getattr(e, "msg", None) or e)}))
        except Exception as e:
            print(json.dumps({"unread": rel, "why": "%s: %s" % (type(e).__name__, e)}))
print(json.dumps({"checked": n}))
"#;

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| (*s).to_string()).collect()
}

fn analyzer(name: &'static str, counts_as: SarifUse, argv: &[&str], format: Format) -> Analyzer {
    Analyzer {
        name,
        counts_as,
        argv: words(argv),
        format,
        env: &[],
        needs_one_of: &[],
        config_flag: None,
        fetches: None,
        optional: false,
        silent_when_clean: false,
    }
}

/// The analyzers installed-or-not for `langs`, in the order of the module's table: each
/// language's in the order of [`Language`], then the two that run for every repository. Pure.
#[must_use]
pub fn analyzers_for(langs: &BTreeSet<Language>) -> Vec<Analyzer> {
    use SarifUse::{Lint, Security};
    let mut out = Vec::new();
    if langs.contains(&Language::Rust) {
        out.push(analyzer(
            "clippy",
            Lint,
            &["cargo", "clippy", "--message-format=json", "--all-targets"],
            Format::CargoJson,
        ));
    }
    if langs.contains(&Language::Python) {
        out.push(analyzer(
            "python-syntax",
            Lint,
            &["python3", "-I", "-B", "-c", PYTHON_SYNTAX],
            Format::PythonSyntax,
        ));
        out.push(analyzer(
            "ruff",
            Lint,
            &["ruff", "check", "--output-format=json", "."],
            Format::RuffJson,
        ));
        out.push(analyzer(
            "bandit",
            Security,
            &["bandit", "-r", ".", "-f", "json", "-q"],
            Format::BanditJson,
        ));
    }
    if langs.contains(&Language::Go) {
        out.push(analyzer(
            "gofmt",
            Lint,
            &["gofmt", "-l", "-e", "."],
            Format::GofmtList,
        ));
        out.push(Analyzer {
            silent_when_clean: true,
            ..analyzer(
                "gosec",
                Security,
                &["gosec", "-fmt", "sarif", "-quiet", "./..."],
                Format::Sarif,
            )
        });
    }
    if langs.contains(&Language::JavaScript) || langs.contains(&Language::TypeScript) {
        out.push(analyzer(
            "eslint",
            Lint,
            &["eslint", "-f", "json", "."],
            Format::EslintJson,
        ));
    }
    if langs.contains(&Language::TypeScript) {
        out.push(Analyzer {
            needs_one_of: &["tsconfig.json"],
            ..analyzer(
                "tsc",
                Lint,
                &["tsc", "--noEmit", "--pretty", "false"],
                Format::TscText,
            )
        });
    }
    out.push(Analyzer {
        env: &[
            ("SEMGREP_SEND_METRICS", "off"),
            ("SEMGREP_ENABLE_VERSION_CHECK", "0"),
        ],
        needs_one_of: &[".semgrep.yml", ".semgrep.yaml", ".semgrep"],
        config_flag: Some("--config"),
        fetches: Some("offline: the repository's rules, never registry rules"),
        optional: true,
        ..analyzer(
            "semgrep",
            Security,
            &[
                "semgrep",
                "scan",
                "--sarif",
                "--metrics=off",
                "--disable-version-check",
            ],
            Format::Sarif,
        )
    });
    out.push(Analyzer {
        env: &[
            ("TRIVY_SKIP_DB_UPDATE", "true"),
            ("TRIVY_SKIP_JAVA_DB_UPDATE", "true"),
            ("TRIVY_SKIP_CHECK_UPDATE", "true"),
            ("TRIVY_SKIP_VERSION_CHECK", "true"),
            ("TRIVY_OFFLINE_SCAN", "true"),
        ],
        fetches: Some(
            "trivy runs offline on the vulnerability database already in its cache (`trivy fs --download-db-only` fetches it)",
        ),
        optional: true,
        ..analyzer(
            "trivy",
            Security,
            &[
                "trivy",
                "fs",
                "--format",
                "sarif",
                "--offline-scan",
                "--skip-db-update",
                "--quiet",
                ".",
            ],
            Format::Sarif,
        )
    });
    out
}

impl AnalyzerRun {
    fn new(analyzer: &Analyzer) -> AnalyzerRun {
        AnalyzerRun {
            name: analyzer.name.to_string(),
            counts_as: analyzer.counts_as,
            findings: Vec::new(),
            incomplete: None,
            not_applicable: None,
        }
    }

    fn incomplete(mut self, why: String) -> AnalyzerRun {
        self.incomplete = Some(why);
        self
    }
}

/// Run `analyzer` in `dir` (the worktree) with `env` on top of its own, inside `confined` when
/// given, for at most `timeout`. Never fails: whatever keeps the tool from giving complete
/// evidence is in [`AnalyzerRun::incomplete`] (see the module doc).
pub fn run(
    analyzer: &Analyzer,
    dir: &Path,
    env: &[(&str, &str)],
    timeout: Duration,
    confined: Option<&Confined>,
) -> AnalyzerRun {
    run_capped(analyzer, dir, env, timeout, confined, REPORT_CAP)
}

/// [`run`] keeping at most `cap` bytes of each stream.
fn run_capped(
    analyzer: &Analyzer,
    dir: &Path,
    env: &[(&str, &str)],
    timeout: Duration,
    confined: Option<&Confined>,
    cap: usize,
) -> AnalyzerRun {
    let out = AnalyzerRun::new(analyzer);
    let with_hint = |why: String| match analyzer.fetches {
        Some(hint) => format!("{why} ({hint})"),
        None => why,
    };
    let argv = match argv_in(analyzer, dir) {
        Ok(argv) => argv,
        Err(why) => return out.incomplete(with_hint(why)),
    };
    let program = argv.first().map_or("", String::as_str);
    let cmd = shown(analyzer, &argv);
    let mut vars: Vec<(&str, &str)> = analyzer.env.to_vec();
    vars.extend_from_slice(env);
    let ran = match run_in(&argv, dir, &vars, timeout, cap, confined) {
        Ok(ran) => ran,
        Err(e) if not_found(&e) => {
            let why = format!("`{program}` is not installed");
            if analyzer.optional {
                return AnalyzerRun {
                    not_applicable: Some(why),
                    ..out
                };
            }
            return out.incomplete(why);
        }
        Err(e) => return out.incomplete(format!("`{cmd}` could not start: {e}")),
    };
    let code = match &ran.ran.exit {
        Exit::Code(c) => *c,
        Exit::TimedOut => {
            return out.incomplete(format!("`{cmd}` ran past {}s", timeout.as_secs()));
        }
        Exit::Signal(s) => return out.incomplete(format!("`{cmd}` was killed by signal {s}")),
        other => return out.incomplete(format!("`{cmd}` ended: {other:?}")),
    };
    if over_cap(&ran.stdout, cap) || over_cap(&ran.stderr, cap) {
        return out.incomplete(format!(
            "`{cmd}` printed more than {}: its report was not read",
            crate::safe_read::size(cap as u64)
        ));
    }
    let quote = || quote(&ran.stderr, &ran.stdout);
    if analyzer.silent_when_clean && code == 0 && ran.stdout.trim().is_empty() {
        return out;
    }
    let report = match reports::read(analyzer.format, &ran.stdout, &ran.stderr, dir) {
        Ok(report) => report,
        Err(_) if code != 0 => {
            return out.incomplete(with_hint(format!("`{cmd}` exited {code}: {}", quote())));
        }
        Err(e) => return out.incomplete(format!("`{cmd}`: its output cannot be read: {e}")),
    };
    if analyzer.format == Format::CargoJson && report.seen == 0 && clippy_missing(&ran.stderr) {
        return out.incomplete(format!(
            "`cargo clippy` is not installed (cargo says: {})",
            quote()
        ));
    }
    let mut incomplete = report.incomplete;
    if code != 0 && report.seen == 0 && incomplete.is_empty() {
        incomplete.push(with_hint(format!(
            "`{cmd}` exited {code} with no finding read: {}",
            quote()
        )));
    }
    AnalyzerRun {
        findings: report.findings,
        incomplete: (!incomplete.is_empty()).then(|| incomplete.join("; ")),
        ..out
    }
}

/// Read a tool's output as `format` says, as [`run`] does once the tool has ended: its findings
/// (each once) and what the report itself says was not checked. Paths a tool prints absolute
/// are made relative to `dir`. `Err`: the output cannot be read as that format.
pub fn read_output(
    format: Format,
    stdout: &str,
    stderr: &str,
    dir: &Path,
) -> Result<(Vec<Finding>, Vec<String>), String> {
    reports::read(format, stdout, stderr, dir).map(|r| (r.findings, r.incomplete))
}

/// The argv to run: the analyzer's, with its configuration file when it takes one. `Err`: it
/// needs a file that is not there.
fn argv_in(analyzer: &Analyzer, dir: &Path) -> Result<Vec<String>, String> {
    let mut argv = analyzer.argv.clone();
    if analyzer.needs_one_of.is_empty() {
        return Ok(argv);
    }
    let Some(found) = analyzer
        .needs_one_of
        .iter()
        .find(|rel| dir.join(rel).symlink_metadata().is_ok())
    else {
        // Short: it is recorded in every iteration's context (issue 38).
        return Err(format!(
            "{}: none of {} in the repository",
            analyzer.name,
            analyzer.needs_one_of.join(", ")
        ));
    };
    if let Some(flag) = analyzer.config_flag {
        argv.push(flag.to_string());
        argv.push((*found).to_string());
    }
    Ok(argv)
}

/// The command as a reason shows it (the Python script is not quoted whole).
fn shown(analyzer: &Analyzer, argv: &[String]) -> String {
    if analyzer.format == Format::PythonSyntax {
        return "python3 (syntax check)".into();
    }
    argv.join(" ")
}

/// A spawn error that says the program does not exist (ENOENT: the working directory is
/// checked before, with its own reason).
fn not_found(reason: &str) -> bool {
    reason.contains("os error 2")
}

/// Was the stream cut by the runner's bound (its head and tail kept, a marker between)?
fn over_cap(text: &str, cap: usize) -> bool {
    text.len() > cap || text.contains(" bytes of output elided; kept the first ")
}

/// cargo or rustup saying clippy is not there.
fn clippy_missing(stderr: &str) -> bool {
    stderr.contains("no such command: `clippy`")
        || stderr.contains("no such subcommand: `clippy`")
        || (stderr.contains("cargo-clippy") && stderr.contains("is not installed"))
}

/// The tool's own last words: the end of its stderr, else of its stdout.
fn quote(stderr: &str, stdout: &str) -> String {
    let text = if stderr.trim().is_empty() {
        stdout.trim()
    } else {
        stderr.trim()
    };
    if text.is_empty() {
        return "it printed nothing".into();
    }
    tail(text, QUOTE_BYTES)
}

#[cfg(test)]
mod tests;
