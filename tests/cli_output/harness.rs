//! The snapshot harness behind `tests/cli_output.rs`: run the built binary, render one text
//! document per case (command line, exit code, stdout, stderr), redact what legitimately varies
//! between runs, and compare with `tests/cli_output/<case>.txt` — or rewrite it when
//! `SPLICE_BLESS=1`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::common::Repo;

/// Set to anything but `""` or `0` to rewrite the expected files instead of comparing.
pub const BLESS_VAR: &str = "SPLICE_BLESS";

const BLESS_HINT: &str = "review the change; if it is intended, re-approve with\n    \
     SPLICE_BLESS=1 cargo test --test cli_output\nand commit the rewritten files under tests/cli_output/";

fn blessing() -> bool {
    std::env::var(BLESS_VAR).is_ok_and(|v| !v.is_empty() && v != "0")
}

fn expected_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli_output")
}

/// The one place where output is normalized. Everything not listed here is compared byte for
/// byte, because catching a change in what users see is the point of these tests.
///
/// | what | becomes | why it varies |
/// |---|---|---|
/// | the built `splice` binary's path (sim-agent config) | `[SPLICE]` | depends on the target dir |
/// | the temporary repository's path (and its canonical form) | `[REPO]` | a fresh temp dir per run |
/// | a runner's holder `run:<host>:<pid>:<run-id>` | `[HOLDER]` | host name and process id |
/// | a run id `<stamp>-<pid>-<n>` | `[RUN]` | process id |
/// | the `[   0.1s]` prefix of a human run line | `[  T s]` | wall clock |
/// | the `in 0.0s` of a human "exited" line | `in [T]s` | wall clock |
/// | the value of `*_ms`, `wall_s` and `elapsed_s` JSON fields | `[MS]` / `[S]` | wall clock |
/// | a full 40-hex commit sha | `[SHA]` | the test repository's first commit is made now |
///
/// The clock splice reads (`SPLICE_NOW`) is fixed, so timestamps and the stamp inside a run id
/// are deterministic; bead ids (from title and `SPLICE_NOW`) are kept as they are.
pub fn redact(text: &str, repo: &Path) -> String {
    static HOLDER: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"run:[^:\s"\\]+:\d+:\d{8}T\d{6}Z-\d+-\d+"#).unwrap());
    static RUN: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\b\d{8}T\d{6}Z-\d+-\d+\b").unwrap());
    static CLOCK: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?m)^\[ *\d+\.\ds\]").unwrap());
    static EXITED: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"( attempt \d+ exited \S+ in )\d+\.\ds").unwrap());
    // Quotes may be escaped: stream-json's `result` carries the envelope as a JSON string.
    static MS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"(\\?"[a-z_]+_ms\\?": ?)\d+"#).unwrap());
    static SECONDS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"(\\?"(?:wall_s|elapsed_s)\\?": ?)\d+"#).unwrap());
    static SHA: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b[0-9a-f]{40}\b").unwrap());

    let mut out = text.replace(env!("CARGO_BIN_EXE_splice"), "[SPLICE]");
    let mut paths = vec![repo.to_string_lossy().into_owned()];
    if let Ok(canonical) = repo.canonicalize() {
        paths.push(canonical.to_string_lossy().into_owned());
    }
    paths.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in paths {
        out = out.replace(&p, "[REPO]");
    }
    let out = HOLDER.replace_all(&out, "[HOLDER]");
    let out = RUN.replace_all(&out, "[RUN]");
    let out = CLOCK.replace_all(&out, "[  T s]");
    let out = EXITED.replace_all(&out, "${1}[T]s");
    let out = MS.replace_all(&out, "${1}[MS]");
    let out = SECONDS.replace_all(&out, "${1}[S]");
    SHA.replace_all(&out, "[SHA]").into_owned()
}

/// A shell-like rendering of one argument: bare when it is plainly safe, else single-quoted.
fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=,@%+".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

fn section(doc: &mut String, name: &str, bytes: &[u8]) {
    if bytes.is_empty() {
        doc.push_str(&format!("--- {name}: empty\n"));
        return;
    }
    let text = String::from_utf8_lossy(bytes);
    doc.push_str(&format!("--- {name}\n{text}"));
    if !text.ends_with('\n') {
        doc.push_str(&format!("\n[no newline at the end of {name}]\n"));
    }
}

/// The document of one command: its line (with any extra environment), exit code, stdout and
/// stderr, before redaction.
pub fn document(env: &[(&str, &str)], args: &[&str], out: &Output) -> String {
    let mut doc = String::from("$");
    for (k, v) in env {
        doc.push_str(&format!(" {k}={}", quote(v)));
    }
    doc.push_str(" splice");
    for a in args {
        doc.push(' ');
        doc.push_str(&quote(a));
    }
    doc.push('\n');
    match out.status.code() {
        Some(code) => doc.push_str(&format!("exit: {code}\n")),
        None => doc.push_str(&format!("exit: none ({})\n", out.status)),
    }
    section(&mut doc, "stdout", &out.stdout);
    section(&mut doc, "stderr", &out.stderr);
    doc
}

/// A line diff of two documents (longest common subsequence), hunks with two lines of context:
/// `-` lines are expected, `+` lines are actual.
pub fn line_diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    // lcs[i][j]: the common subsequence length of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    const CONTEXT: usize = 2;
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| ops[k].0 != ' ').collect();
    let mut out = String::new();
    let mut last_shown: Option<usize> = None;
    for (k, (tag, line)) in ops.iter().enumerate() {
        let near = changed.iter().any(|&c| c.abs_diff(k) <= CONTEXT);
        if !near {
            continue;
        }
        if last_shown.is_some_and(|l| l + 1 != k) {
            out.push_str("  ...\n");
        }
        out.push_str(&format!("{tag} {line}\n"));
        last_shown = Some(k);
    }
    if out.is_empty() {
        out.push_str("  (the documents differ only in line endings or a final newline)\n");
    }
    out
}

/// The cases of one group (one test function). Case `c` of group `g` is compared with
/// `tests/cli_output/g-c.txt`. When the group is dropped, every mismatch is reported at once,
/// and an expected file `g-*.txt` that no case produced is reported as an orphan (deleted when
/// blessing).
pub struct Snapshots {
    group: &'static str,
    produced: BTreeSet<String>,
    failures: Vec<String>,
    blessed: Vec<String>,
}

impl Snapshots {
    pub fn new(group: &'static str) -> Snapshots {
        Snapshots {
            group,
            produced: BTreeSet::new(),
            failures: Vec::new(),
            blessed: Vec::new(),
        }
    }

    /// Run `splice ARGS` in `repo` and compare its document with the case's expected file.
    pub fn check(&mut self, case: &str, repo: &Repo, args: &[&str]) -> Output {
        self.check_env(case, repo, &[], args)
    }

    /// As [`Snapshots::check`], with extra environment variables (shown on the command line).
    pub fn check_env(
        &mut self,
        case: &str,
        repo: &Repo,
        env: &[(&str, &str)],
        args: &[&str],
    ) -> Output {
        let mut cmd = repo.cmd(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("splice runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked at"),
            "{case}: splice panicked (never approvable): {stderr}"
        );
        let doc = redact(&document(env, args, &out), repo.path());
        self.compare(case, &doc);
        out
    }

    fn compare(&mut self, case: &str, actual: &str) {
        let name = format!("{}-{case}.txt", self.group);
        assert!(
            self.produced.insert(name.clone()),
            "case {name} is checked twice"
        );
        let path = expected_dir().join(&name);
        let expected = std::fs::read_to_string(&path).ok();
        if expected.as_deref() == Some(actual) {
            return;
        }
        if blessing() {
            std::fs::create_dir_all(expected_dir()).unwrap();
            std::fs::write(&path, actual).unwrap();
            self.blessed.push(format!("wrote tests/cli_output/{name}"));
            return;
        }
        self.failures.push(match expected {
            None => format!(
                "{name}: no expected file {}; this run's output is:\n{actual}",
                path.display()
            ),
            Some(expected) => format!(
                "{name}: the output differs from {} (- expected, + actual):\n{}",
                path.display(),
                line_diff(&expected, actual)
            ),
        });
    }
}

impl Drop for Snapshots {
    fn drop(&mut self) {
        // A panic (e.g. a setup step failed) left later cases unrun: their files are not
        // orphans. The mismatches found before it may explain it, so they are printed.
        if std::thread::panicking() {
            for f in &self.failures {
                eprintln!("{f}\n");
            }
            return;
        }
        let prefix = format!("{}-", self.group);
        let on_disk: Vec<String> = std::fs::read_dir(expected_dir())
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(&prefix) && n.ends_with(".txt"))
                    .collect()
            })
            .unwrap_or_default();
        for orphan in on_disk.iter().filter(|n| !self.produced.contains(*n)) {
            if blessing() {
                std::fs::remove_file(expected_dir().join(orphan)).unwrap();
                self.blessed
                    .push(format!("deleted {orphan}: no case produces it"));
            } else {
                self.failures.push(format!(
                    "{orphan}: no case of group {:?} produces this expected file any more",
                    self.group
                ));
            }
        }
        for line in &self.blessed {
            eprintln!("{BLESS_VAR}: {line}");
        }
        if !self.failures.is_empty() {
            panic!(
                "{} CLI output snapshot(s) of group {:?} failed:\n\n{}\n\n{BLESS_HINT}",
                self.failures.len(),
                self.group,
                self.failures.join("\n\n")
            );
        }
    }
}

/// The stdout of a command, parsed as JSON (for ids the next commands need).
pub fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_covers_what_varies_and_keeps_the_rest() {
        let repo = Path::new("/tmp/.tmpAbC123");
        let text = "[   0.1s] run 20260101T000000Z-4242-0 started\n\
                    [  12.3s] sp-r0z4 generate-spec attempt 1 exited Ok in 0.0s\n\
                    {\"holder\":\"run:host-1.lan:4242:20260101T000000Z-4242-0\",\"log\":\"/tmp/.tmpAbC123/.splice/runs/20260101T000000Z-4242-0/x.log\"}\n\
                    \"elapsed_ms\": 22, \\\"duration_ms\\\":48, \"wall_s\": 1, \"wall_time_s\": 60\n\
                    base 77aee116b5682e86f6c334d07efe7f4bb64ce1ff bead sp-r0z4 at 2026-01-01T00:00:00Z\n";
        let want = "[  T s] run [RUN] started\n\
                    [  T s] sp-r0z4 generate-spec attempt 1 exited Ok in [T]s\n\
                    {\"holder\":\"[HOLDER]\",\"log\":\"[REPO]/.splice/runs/[RUN]/x.log\"}\n\
                    \"elapsed_ms\": [MS], \\\"duration_ms\\\":[MS], \"wall_s\": [S], \"wall_time_s\": 60\n\
                    base [SHA] bead sp-r0z4 at 2026-01-01T00:00:00Z\n";
        assert_eq!(redact(text, repo), want);
    }

    #[test]
    fn the_diff_shows_changed_lines_with_context() {
        let d = line_diff("a\nb\nc\nd\ne\nf\ng\n", "a\nb\nc\nX\ne\nf\ng\n");
        assert_eq!(d, "  b\n  c\n- d\n+ X\n  e\n  f\n");
    }

    #[test]
    fn arguments_are_quoted_like_a_shell_would_need() {
        assert_eq!(quote("--bead"), "--bead");
        assert_eq!(quote("runner died"), "'runner died'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
    }
}
