//! `[agent] kind` (issue 32): naming only the agent gives a headless session that can finish a
//! step — its own permission checks off inside splice's sandbox (Claude Code
//! `bypassPermissions` with `IS_SANDBOX=1`), edits and an explicit tool list outside it, and
//! Codex's and Gemini's permissive built-ins refused where there is no sandbox. The installed
//! CLI's `--help` must list the flags the built-in command passes, or the run starts nothing.
//! A fake `claude` on `PATH` prints a help text and records its argv and `IS_SANDBOX`, then
//! does the step's work through the simulated agent.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::Repo;

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

/// The options Claude Code 2.1.197's `--help` lists that the built-in commands pass.
const FULL_HELP: &str = "--output-format <format>\n--verbose\n--permission-mode <mode> \
    (choices: \"acceptEdits\", \"bypassPermissions\", \"default\")\n--allowedTools <tools...>\n";

/// A fake `claude` in `dir` that prints `help` for `--help` and otherwise writes its arguments
/// and `IS_SANDBOX` to `$TMPDIR/claude.args` (or the repository's `claude.args` when there is
/// no `TMPDIR`), then proposes through the simulated agent.
fn fake_claude(dir: &Path, repo: &Path, help: &str) {
    let script = format!(
        "#!/bin/sh\n\
         if [ \"$1\" = --help ]; then printf '%s' '{help}'; exit 0; fi\n\
         out=\"${{TMPDIR:-{repo}}}/claude.args\"\n\
         printf 'IS_SANDBOX=%s\\n' \"$IS_SANDBOX\" > \"$out\"\n\
         for a; do printf '%s\\n' \"$a\" >> \"$out\"; done\n\
         exec \"{SPLICE}\" sim-agent\n",
        repo = repo.display()
    );
    let path = dir.join("claude");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The lines the fake `claude` recorded, in whichever dispatch directory or the repository.
fn recorded(r: &Repo) -> Vec<String> {
    let mut places = vec![r.path().join("claude.args")];
    if let Ok(runs) = std::fs::read_dir(r.state().join("runs")) {
        for run in runs.flatten() {
            for d in std::fs::read_dir(run.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                places.push(d.path().join("tmp/claude.args"));
            }
        }
    }
    places
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Is the kernel sandbox usable here (`splice doctor`)? Fails under `SPLICE_SANDBOX_TESTS=1`.
fn sandbox_usable(r: &Repo) -> bool {
    let out = r.run(&["doctor", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let usable = text.contains("\"sandbox\"") && !text.contains("agents run unsandboxed");
    if !usable && std::env::var_os("SPLICE_SANDBOX_TESTS").is_some_and(|v| v == "1") {
        panic!("SPLICE_SANDBOX_TESTS=1 and this kernel offers no usable sandbox: {text}");
    }
    usable
}

fn kind_repo(r: &Repo, kind: &str) -> String {
    r.write(
        ".splice/config.toml",
        &format!("[agent]\nkind = \"{kind}\"\nusage = \"none\"\n"),
    );
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "config"]);
    r.task("Kind", &[])
}

#[test]
fn in_the_sandbox_claude_runs_with_its_own_checks_off() {
    let r = Repo::new();
    let bin = tempfile::tempdir().unwrap();
    fake_claude(bin.path(), r.path(), FULL_HELP);
    let bead = kind_repo(&r, "claude");
    if !sandbox_usable(&r) {
        eprintln!("skipped: no usable kernel sandbox here");
        return;
    }
    let out = r
        .cmd(&["run", "--output", "json", "--max-passes", "2"])
        .env("PATH", path_with(bin.path()))
        .output()
        .unwrap();
    common::no_panic(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let args = recorded(&r);
    assert_eq!(
        args.first().map(String::as_str),
        Some("IS_SANDBOX=1"),
        "{args:?}"
    );
    let mode = args.iter().position(|a| a == "--permission-mode").unwrap();
    assert_eq!(args[mode + 1], "bypassPermissions", "{args:?}");
    assert!(args.contains(&"stream-json".to_string()), "{args:?}");
    // The simulated agent did the step's work: its proposal was applied.
    assert!(
        !r.bead(&bead)["pipeline"]["history"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn outside_the_sandbox_claude_may_edit_and_run_git_and_splice_only() {
    let r = Repo::unconfined();
    let bin = tempfile::tempdir().unwrap();
    fake_claude(bin.path(), r.path(), FULL_HELP);
    kind_repo(&r, "claude");
    let out = r
        .cmd(&["run", "--output", "json", "--max-passes", "2"])
        .env("PATH", path_with(bin.path()))
        .output()
        .unwrap();
    common::no_panic(&out);
    let args = recorded(&r);
    assert_eq!(
        args.first().map(String::as_str),
        Some("IS_SANDBOX="),
        "{args:?}"
    );
    let mode = args.iter().position(|a| a == "--permission-mode").unwrap();
    assert_eq!(args[mode + 1], "acceptEdits", "{args:?}");
    // The prompt right after `-p`: `--allowedTools` takes every argument after it.
    let p = args.iter().position(|a| a == "-p").unwrap();
    assert!(
        args[p + 1].starts_with("You are working on"),
        "the prompt follows -p: {args:?}"
    );
    let tools = args.iter().position(|a| a == "--allowedTools").unwrap();
    assert!(args[tools + 1].contains("Bash(splice:*)"), "{args:?}");
    assert!(args[tools + 1].contains("Bash(git:*)"), "{args:?}");
}

#[test]
fn a_claude_whose_help_lacks_a_flag_the_built_in_command_passes_is_refused() {
    let r = Repo::unconfined();
    let bin = tempfile::tempdir().unwrap();
    fake_claude(
        bin.path(),
        r.path(),
        "--output-format <format>\n--verbose\n--permission-mode <mode>\n",
    );
    let bead = kind_repo(&r, "claude");
    let before = r.bead(&bead);
    let out = r
        .cmd(&["run", "--output", "json"])
        .env("PATH", path_with(bin.path()))
        .output()
        .unwrap();
    common::no_panic(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("acceptEdits, --allowedTools"), "{stderr}");
    assert!(stderr.contains("set [agent] command"), "{stderr}");
    assert!(recorded(&r).is_empty(), "the agent was dispatched");
    assert_eq!(r.bead(&bead), before, "nothing was claimed");
}

#[test]
fn codex_and_gemini_built_ins_are_refused_where_there_is_no_sandbox() {
    for kind in ["codex", "gemini"] {
        let r = Repo::unconfined();
        let bin = tempfile::tempdir().unwrap();
        let program = bin.path().join(kind);
        std::fs::write(&program, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let bead = kind_repo(&r, kind);
        let before = r.bead(&bead);
        let out = r
            .cmd(&["run", "--output", "json"])
            .env("PATH", path_with(bin.path()))
            .output()
            .unwrap();
        common::no_panic(&out);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{kind}: {stderr}");
        assert!(stderr.contains(&format!("kind = \"{kind}\"")), "{stderr}");
        assert!(stderr.contains("unsandboxed"), "{stderr}");
        assert_eq!(r.bead(&bead), before, "nothing was claimed");
    }
}

#[test]
fn a_kind_that_contradicts_the_command_is_refused_naming_both() {
    let r = Repo::new();
    r.task("Kind", &[]);
    r.write(
        ".splice/config.toml",
        "[agent]\nkind = \"codex\"\ncommand = [\"claude\", \"-p\"]\n",
    );
    let out = r.run(&["status"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("config.toml"), "{stderr}");
    assert!(
        stderr.contains("kind = \"codex\", but [agent] command runs claude"),
        "{stderr}"
    );
}

/// `plan crystallize`'s design agent is the kind's built-in too: Codex's, which turns its own
/// approvals off, is refused where there is no sandbox, before anything runs.
#[test]
fn crystallize_refuses_codex_built_in_without_the_sandbox() {
    let r = Repo::unconfined();
    r.task("Kind", &[]);
    r.write(".splice/config.toml", "[agent]\nkind = \"codex\"\n");
    r.write("notes.md", "# Notes\n\nBuild a calculator.\n");
    let out = r.run(&["plan", "crystallize", "notes.md", "-o", "p.json"]);
    common::no_panic(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unsandboxed"), "{stderr}");
    assert!(!r.path().join("p.json").exists());
}
