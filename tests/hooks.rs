//! `splice hooks install|status` and the git pre-commit check (issue 11), against the built
//! binary in real temporary git repositories: what is installed where, that installing twice
//! changes nothing, that nothing already there is lost or clobbered, that bad input changes
//! nothing, that a dispatched session may not install, and that the installed pre-commit hook
//! refuses a dispatched session's commit touching `.splice/` while a person's goes through.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::Repo;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_splice");
const MATCHER: &str = "Write|Edit|NotebookEdit|Bash|EnterWorktree";

fn settings(r: &Repo) -> Value {
    serde_json::from_slice(&std::fs::read(r.path().join(".claude/settings.json")).unwrap()).unwrap()
}

fn hook(r: &Repo) -> PathBuf {
    r.path().join(".git/hooks/pre-commit")
}

/// `git commit -m m` in the repository with a clean environment plus `env`.
#[must_use]
fn commit(r: &Repo, args: &[&str], env: &[(&str, &str)], path: &str) -> Output {
    let mut c = Command::new("git");
    c.args(["commit", "-q", "-m", "m"])
        .args(args)
        .current_dir(r.path())
        .env_clear()
        .env("PATH", path)
        .env("HOME", r.path())
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com");
    common::hermetic_git(&mut c);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn path_env() -> String {
    std::env::var("PATH").unwrap_or_default()
}

#[test]
fn the_embedded_hooks_are_the_files_in_hooks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("hooks");
    let file = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    assert_eq!(splice::hooks::CLAUDE_SETTINGS, file("claude/settings.json"));
    assert_eq!(splice::hooks::GIT_PRE_COMMIT, file("git/pre-commit"));
    let fragment: Value = serde_json::from_str(&file("claude/settings.json")).unwrap();
    assert_eq!(
        fragment,
        json!({"hooks": {"PreToolUse": [{"matcher": MATCHER, "hooks": [
            {"type": "command", "command": "splice guard"}
        ]}]}})
    );
    let mode = std::fs::metadata(root.join("git/pre-commit"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "hooks/git/pre-commit is executable");
}

#[test]
fn install_writes_both_hooks_the_committed_one_portable_and_again_changes_nothing() {
    let r = Repo::new();
    let out = r.ok(&["hooks", "install", "--json"]);
    assert_eq!(out["schema_version"], 1);
    let actions: Vec<&str> = out["installed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["created", "created"]);

    // The committed settings name `splice` as every clone finds it; the git hook, in `.git`,
    // this very splice.
    let guard = splice::hooks::PORTABLE_GUARD;
    assert_eq!(
        settings(&r),
        json!({"hooks": {"PreToolUse": [{"matcher": MATCHER, "hooks": [
            {"type": "command", "command": guard}
        ]}]}})
    );
    let script = std::fs::read_to_string(hook(&r)).unwrap();
    assert!(
        script.contains(&format!("\nsplice_bin={BIN}\n")),
        "{script}"
    );
    let mode = std::fs::metadata(hook(&r)).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);

    let before = (
        std::fs::read(r.path().join(".claude/settings.json")).unwrap(),
        std::fs::read(hook(&r)).unwrap(),
    );
    let again = r.run(&["hooks", "install"]);
    assert_eq!(again.status.code(), Some(0));
    let text = String::from_utf8_lossy(&again.stdout);
    assert_eq!(
        text.matches("already installed, unchanged").count(),
        2,
        "{text}"
    );
    let after = (
        std::fs::read(r.path().join(".claude/settings.json")).unwrap(),
        std::fs::read(hook(&r)).unwrap(),
    );
    assert_eq!(before, after, "byte-identical");

    // Status looks the committed hook's `splice` up on PATH, as the hook will.
    let bin_dir = Path::new(BIN).parent().unwrap().display().to_string();
    let out = r
        .cmd(&["hooks", "status", "--json"])
        .env("PATH", format!("{bin_dir}:/usr/bin:/bin"))
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["schema_version"], 1);
    assert_eq!(status["claude"]["installed"], true);
    assert_eq!(status["claude"]["command"], guard);
    assert_eq!(
        status["claude"]["splice"],
        json!({"path": "splice", "exists": true})
    );
    assert_eq!(status["git"]["installed"], true);
    assert_eq!(
        status["git"]["splice"],
        json!({"path": BIN, "exists": true})
    );
    let text = r.run(&["hooks", "status"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("claude: installed in") && text.contains("git: installed in"),
        "{text}"
    );
}

#[test]
fn one_flag_installs_one_hook_and_status_says_what_is_missing() {
    let r = Repo::new();
    let out = r.run(&["hooks", "status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("claude: not installed") && text.contains("git: not installed"),
        "{text}"
    );
    r.ok(&["hooks", "install", "--git", "--json"]);
    assert!(hook(&r).is_file());
    assert!(!r.path().join(".claude").exists());
    r.ok(&["hooks", "install", "--claude", "--json"]);
    assert!(r.path().join(".claude/settings.json").is_file());
}

#[test]
fn install_merges_into_claude_settings_keeping_everything_and_never_doubling_the_guard() {
    let r = Repo::new();
    let mine = json!({
        "model": "opus",
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]},
                {"matcher": "Write", "hooks": [{"type": "command", "command": "splice guard"}]}
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]
        }
    });
    r.write(
        ".claude/settings.json",
        &serde_json::to_string(&mine).unwrap(),
    );
    let out = r.ok(&["hooks", "install", "--claude", "--json"]);
    assert_eq!(out["installed"][0]["action"], "updated");
    let s = settings(&r);
    assert_eq!(s["model"], "opus");
    assert_eq!(s["permissions"], mine["permissions"]);
    assert_eq!(s["hooks"]["Stop"], mine["hooks"]["Stop"]);
    let pre = s["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(
        pre.len(),
        2,
        "the guard entry was updated, not doubled: {s}"
    );
    assert_eq!(pre[0], mine["hooks"]["PreToolUse"][0]);
    assert_eq!(pre[1]["matcher"], MATCHER);
    assert_eq!(pre[1]["hooks"][0]["command"], splice::hooks::PORTABLE_GUARD);
    let bytes = std::fs::read(r.path().join(".claude/settings.json")).unwrap();
    let again = r.ok(&["hooks", "install", "--claude", "--json"]);
    assert_eq!(again["installed"][0]["action"], "unchanged");
    assert_eq!(
        std::fs::read(r.path().join(".claude/settings.json")).unwrap(),
        bytes
    );
}

#[test]
fn bad_input_is_named_and_changes_nothing() {
    let r = Repo::new();
    r.write(".claude/settings.json", "{ \"model\": \"opus\", ");
    let err = r.fails(2, &["hooks", "install"]);
    assert!(
        err.contains(".claude/settings.json") && err.contains("not valid JSON"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(r.path().join(".claude/settings.json")).unwrap(),
        "{ \"model\": \"opus\", "
    );
    assert!(
        !hook(&r).exists(),
        "no hook is installed when one of them cannot be"
    );

    r.write(".claude/settings.json", "[1, 2]");
    let err = r.fails(2, &["hooks", "install", "--claude"]);
    assert!(err.contains("is not a JSON object"), "{err}");
    r.write(".claude/settings.json", "{\"hooks\": {\"PreToolUse\": 3}}");
    let err = r.fails(2, &["hooks", "install", "--claude"]);
    assert!(err.contains("`hooks.PreToolUse` is not an array"), "{err}");

    std::fs::create_dir_all(hook(&r)).unwrap();
    let err = r.fails(2, &["hooks", "install", "--git"]);
    assert!(
        err.contains("pre-commit") && err.contains("is a directory"),
        "{err}"
    );
    let status = r.ok(&["hooks", "status", "--json"]);
    assert!(status["claude"]["problem"].is_string(), "{status}");
    assert!(status["git"]["problem"].is_string(), "{status}");
}

#[test]
fn a_dispatched_session_cannot_install_hooks() {
    let r = Repo::new();
    for (k, v) in [("SPLICE_DISPATCHED", "1"), ("SPLICE_CREDENTIAL", "x")] {
        let out = r.cmd(&["hooks", "install"]).env(k, v).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("`hooks install` is a person's verb"), "{err}");
        assert!(!hook(&r).exists() && !r.path().join(".claude").exists());
    }
    // Reading is anyone's.
    let out = r
        .cmd(&["hooks", "status", "--json"])
        .env("SPLICE_DISPATCHED", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_pre_commit_hook_already_there_is_kept_and_runs_first() {
    let r = Repo::new();
    let theirs = "#!/bin/sh\necho theirs ran >> \"$(git rev-parse --show-toplevel)/ran.txt\"\n";
    std::fs::write(hook(&r), theirs).unwrap();
    std::fs::set_permissions(hook(&r), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = r.ok(&["hooks", "install", "--git", "--json"]);
    let local = r.path().join(".git/hooks/pre-commit.local");
    assert_eq!(out["installed"][0]["action"], "updated");
    assert_eq!(
        Path::new(out["installed"][0]["chained"].as_str().unwrap()),
        local
    );
    assert_eq!(std::fs::read_to_string(&local).unwrap(), theirs);
    let ours = std::fs::read(hook(&r)).unwrap();
    let again = r.ok(&["hooks", "install", "--git", "--json"]);
    assert_eq!(again["installed"][0]["action"], "unchanged");
    assert_eq!(std::fs::read(hook(&r)).unwrap(), ours);
    assert_eq!(std::fs::read_to_string(&local).unwrap(), theirs);

    r.write("a.txt", "a\n");
    r.git(&["add", "a.txt"]);
    let out = commit(&r, &[], &[], &path_env());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(r.path().join("ran.txt")).unwrap(),
        "theirs ran\n"
    );
    // A failing earlier hook still stops the commit.
    std::fs::write(&local, "#!/bin/sh\nexit 3\n").unwrap();
    r.write("b.txt", "b\n");
    r.git(&["add", "b.txt"]);
    assert!(!commit(&r, &[], &[], &path_env()).status.success());

    // A foreign hook with a pre-commit.local already there is refused, nothing moved.
    std::fs::write(hook(&r), theirs).unwrap();
    let err = r.fails(2, &["hooks", "install", "--git"]);
    assert!(
        err.contains("pre-commit.local") && err.contains("exists already"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(hook(&r)).unwrap(), theirs);
}

#[test]
fn core_hooks_path_is_honoured_and_a_linked_worktree_installs_into_the_common_dir() {
    let r = Repo::new();
    r.git(&["config", "core.hooksPath", "githooks"]);
    let out = r.run(&["hooks", "install", "--git"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("core.hooksPath"), "{text}");
    assert!(r.path().join("githooks/pre-commit").is_file());
    assert!(!hook(&r).exists());
    let status = r.ok(&["hooks", "status", "--json"]);
    assert_eq!(status["git"]["hooks_path_config"], true);
    assert_eq!(status["git"]["installed"], true);

    let r = Repo::new();
    let wt = r.path().join("wt");
    r.git(&["worktree", "add", "-q", "-b", "side", wt.to_str().unwrap()]);
    let out = r
        .cmd(&["hooks", "install", "--git", "--json"])
        .current_dir(&wt)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        hook(&r).is_file(),
        "the common git dir's hooks, run by every worktree"
    );
}

#[test]
fn the_pre_commit_hook_refuses_a_dispatched_commit_that_changes_splice_state() {
    let r = Repo::new();
    r.task("Notes", &[]);
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "state"]);
    r.ok(&["hooks", "install", "--git", "--json"]);
    let bead = std::fs::read_dir(r.state().join("beads"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let rel = bead
        .strip_prefix(r.path())
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let dispatched = [("SPLICE_DISPATCHED", "1")];

    // A dispatched session's commit touching .splice/ is refused, naming the path.
    std::fs::write(&bead, "{}\n").unwrap();
    r.write("notes.txt", "n\n");
    r.git(&["add", "-A"]);
    let out = commit(&r, &[], &dispatched, &path_env());
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&rel) && err.contains("git restore --staged"),
        "{err}"
    );
    // `git commit -a` is read from the index git hands the hook.
    let out = commit(&r, &["-a"], &[("SPLICE_CREDENTIAL", "c")], &path_env());
    assert_eq!(out.status.code(), Some(1));
    // The rest of the work commits.
    let out = commit(&r, &["notes.txt"], &dispatched, &path_env());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A person commits the state.
    let out = commit(&r, &[], &[], &path_env());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // In a node's worktree, the checked-out copy of the state is refused the same way.
    let wt = r.state().join("worktrees").join("sp-node");
    r.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "splice/sp-node",
        wt.to_str().unwrap(),
    ]);
    std::fs::write(wt.join(&rel), "{\"copy\": true}\n").unwrap();
    let git = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = Command::new("git");
        c.args(args)
            .current_dir(&wt)
            .env_clear()
            .env("PATH", path_env())
            .env("HOME", r.path())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com");
        common::hermetic_git(&mut c);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    assert!(git(&["add", "-A"], &[]).status.success());
    let out = git(&["commit", "-q", "-m", "copy"], &dispatched);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&rel));
}

#[test]
fn without_splice_the_hook_lets_the_commit_through() {
    let r = Repo::new();
    let bin = tempfile::tempdir().unwrap();
    let copy = bin.path().join("splice");
    std::fs::copy(BIN, &copy).unwrap();
    // Another test thread forking while the copy was open for writing can hold that descriptor
    // for a moment: exec then fails with ETXTBSY (26) until the child execs. Try again.
    let out = (0..100)
        .find_map(|_| {
            let run = Command::new(&copy)
                .args(["hooks", "install", "--git"])
                .current_dir(r.path())
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .output();
            match run {
                Err(e) if e.raw_os_error() == Some(26) => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    None
                }
                other => Some(other.unwrap()),
            }
        })
        .expect("the copied binary runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let script = std::fs::read_to_string(hook(&r)).unwrap();
    assert!(script.contains(copy.to_str().unwrap()), "{script}");

    r.write(".splice/beads/x.json", "{}\n");
    r.git(&["add", "-A"]);
    // The installed splice is there: refused.
    let dispatched = [("SPLICE_DISPATCHED", "1")];
    assert_eq!(
        commit(&r, &[], &dispatched, "/usr/bin:/bin").status.code(),
        Some(1)
    );
    // Gone: the hook looks for `splice` on PATH instead.
    std::fs::remove_file(&copy).unwrap();
    let status = r.ok(&["hooks", "status", "--json"]);
    assert_eq!(status["git"]["splice"]["exists"], false);
    // Gone, but a splice on PATH: that one decides.
    let other = tempfile::tempdir().unwrap();
    let fake = other.path().join("splice");
    std::fs::write(&fake, "#!/bin/sh\necho other splice \"$@\" >&2\nexit 7\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", other.path().display());
    let out = commit(&r, &[], &dispatched, &path);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("other splice hooks pre-commit"), "{err}");
    // None at all: the commit goes through.
    let out = commit(&r, &[], &dispatched, "/usr/bin:/bin");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A teammate's clone of a repository whose `.claude/settings.json` was committed runs the
/// guard with their own splice (found on `PATH`); without one, the hook blocks the tool call and
/// says why, never passing it silently.
#[test]
fn the_committed_guard_runs_on_a_teammates_clone_and_says_so_when_splice_is_missing() {
    let r = Repo::new();
    r.task("Shared", &[]);
    r.ok(&["hooks", "install", "--claude", "--json"]);
    r.git(&["add", ".claude/settings.json", ".splice"]);
    r.git(&["commit", "-qm", "hooks and state"]);
    let clone = tempfile::tempdir().unwrap();
    let cloned = clone.path().join("teammate");
    let out = common::git()
        .args(["clone", "-q"])
        .arg(r.path())
        .arg(&cloned)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = std::fs::read_to_string(cloned.join(".claude/settings.json")).unwrap();
    let s: Value = serde_json::from_str(&text).unwrap();
    let command = s["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    // What Claude Code sends a PreToolUse hook: a write into the clone's `.splice/`.
    let input = json!({"session_id": "s", "transcript_path": "/dev/null", "cwd": cloned,
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Write",
        "tool_input": {"file_path": cloned.join(".splice/journal.jsonl"), "content": "x"}});
    let run_hook = |path: &str| {
        let mut child = Command::new("sh")
            .args(["-c", &command])
            .current_dir(&cloned)
            .env_clear()
            .env("PATH", path)
            .env("HOME", clone.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        // The command may end without reading its input (splice missing: it blocks at once),
        // and a broken pipe then says nothing about the guard.
        let wrote = child
            .stdin
            .take()
            .unwrap()
            .write_all(input.to_string().as_bytes());
        if let Err(e) = wrote {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
        child.wait_with_output().unwrap()
    };
    // Their splice on PATH: the guard runs and denies the write.
    let bin_dir = Path::new(BIN).parent().unwrap().display().to_string();
    let out = run_hook(&format!("{bin_dir}:/usr/bin:/bin"));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("deny"), "the guard ran: {said} {:?}", out);
    // No splice: blocked (exit 2, which Claude Code shows the agent), saying why.
    let out = run_hook("/usr/bin:/bin");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("splice is not on PATH"), "{said}");
}
