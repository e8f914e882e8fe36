//! `splice guard` against its corpus (issue 11): every case of `tests/guard/hostile.jsonl` must be
//! denied and every case of `tests/guard/benign.jsonl` allowed, through the built binary, in a
//! fixture repository with a live `.splice/`, an own and another node's worktree, and the
//! symlinks the cases name. And the faults: whatever the input, exit 0 and no denial.
//!
//! A case is `{"name", "dispatched", "input", "expect"}`; in its input `{repo}`, `{wt}` (the
//! dispatch's worktree), `{other_wt}`, `{home}` and `{tmp}` are replaced. A dispatched case runs
//! with the dispatch's environment (`SPLICE_DISPATCHED=1`, `SPLICE_WORKTREE`, …); the others
//! with none of it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const NOW: &str = "2026-01-01T00:00:00Z";

struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    wt: PathBuf,
    other: PathBuf,
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn git(dir: &Path, args: &[&str]) {
    run(Command::new("git")
        .args(args)
        .current_dir(dir)
        // None of the machine's git configuration (tests/common's `hermetic_git`).
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com"));
}

impl Fixture {
    /// Under the build's own temp directory (`target/tmp`), wherever the target directory is.
    fn new() -> Fixture {
        Fixture::under(Path::new(env!("CARGO_TARGET_TMPDIR")))
    }

    /// Under the system temp directory, which a dispatch may write, as a repository cloned
    /// into `/tmp` is: the temp directory's exemption must not reach the repository.
    fn in_system_temp() -> Fixture {
        Fixture::under(&std::env::temp_dir())
    }

    fn under(parent: &Path) -> Fixture {
        let dir = tempfile::Builder::new()
            .prefix("guard-corpus")
            .tempdir_in(parent)
            .unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        let repo = home.join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README.md"), "fixture\n").unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "initial"]);
        run(splice(&home)
            .args(["init-task", "--title", "Fixture"])
            .current_dir(&repo)
            .env("SPLICE_NOW", NOW));
        let state = repo.join(".splice");
        let wt = state.join("worktrees/sp-own");
        let other = state.join("worktrees/sp-other");
        for d in [
            wt.join("src"),
            other.join("src"),
            state.join("runs/r1"),
            state.join("runs/runners"),
            state.join("prompts"),
            state.join("journal"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(wt.join("src/lib.rs"), "// own\n").unwrap();
        // A git worktree's `.git` is a file naming its git directory.
        let gitdir = format!("gitdir: {}/.git/worktrees/sp-own\n", repo.display());
        std::fs::write(wt.join(".git"), gitdir).unwrap();
        std::fs::write(state.join("beads/x.json"), "{}\n").unwrap();
        std::fs::write(state.join("config.toml"), "").unwrap();
        let link = |to: &Path, at: &Path| std::os::unix::fs::symlink(to, at).unwrap();
        link(&state, &repo.join("statelink"));
        link(&state.join("beads"), &wt.join("beadslink"));
        link(&repo, &wt.join("uplink"));
        link(&other, &wt.join("otherlink"));
        link(&state.join("beads/new.json"), &wt.join("dangling"));
        link(Path::new("../../.."), &wt.join("dotdotlink"));
        Fixture {
            _dir: dir,
            home,
            repo,
            wt,
            other,
        }
    }

    fn fill(&self, text: &str) -> String {
        text.replace("{repo}", &self.repo.display().to_string())
            .replace("{wt}", &self.wt.display().to_string())
            .replace("{other_wt}", &self.other.display().to_string())
            .replace("{home}", &self.home.display().to_string())
            .replace("{tmp}", "/tmp")
    }

    /// `splice guard` with `input` on stdin, as a dispatch or not.
    #[must_use]
    fn guard(&self, input: &[u8], dispatched: bool) -> Output {
        self.guard_with(input, dispatched, &[])
    }

    /// [`Fixture::guard`] with more environment variables.
    #[must_use]
    fn guard_with(&self, input: &[u8], dispatched: bool, env: &[(&str, &Path)]) -> Output {
        let mut c = splice(&self.home);
        c.envs(env.iter().copied());
        c.arg("guard").current_dir(&self.repo);
        if dispatched {
            let state = self.repo.join(".splice");
            c.env("SPLICE_DISPATCHED", "1")
                .env("SPLICE_WORKTREE", &self.wt)
                .env("SPLICE_DIR", &state)
                .env("SPLICE_TARGET", "main")
                .env("SPLICE_BEAD", "sp-own")
                .env("SPLICE_STEP", "implement")
                .env("SPLICE_ATTEMPT", "1")
                .env("SPLICE_RUN", "r1")
                .env("SPLICE_HOLDER", "run:h:1:r1")
                .env(
                    "SPLICE_USAGE_FILE",
                    state.join("runs/r1/sp-own-implement-1.usage.json"),
                );
        }
        feed(c, input)
    }
}

/// The built binary with a clean environment (no `SPLICE_*` of this test process leaks in).
fn splice(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_splice"));
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        // None of the machine's git configuration (tests/common's `hermetic_splice`).
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_CONFIG_GLOBAL", "/dev/null");
    c
}

#[must_use]
fn feed(mut c: Command, input: &[u8]) -> Output {
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("splice guard starts");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("splice guard ends");
    let _ = writer.join();
    out
}

/// The output is empty (allow) or exactly Claude Code's deny decision; the exit code is 0.
fn decision(out: &Output, what: &str) -> Option<String> {
    assert_eq!(out.status.code(), Some(0), "{what}: exit {:?}", out.status);
    let stdout = String::from_utf8(out.stdout.clone()).expect("UTF-8 stdout");
    if stdout.is_empty() {
        return None;
    }
    let v: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{what}: {e}: {stdout}"));
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let expected = serde_json::json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": reason,
    }});
    assert_eq!(v, expected, "{what}: not the deny shape");
    assert!(!reason.trim().is_empty(), "{what}: an empty reason");
    assert!(
        stdout.ends_with("}\n") && stdout.lines().count() == 1,
        "{what}: {stdout:?}"
    );
    Some(reason)
}

struct Case {
    name: String,
    dispatched: bool,
    input: String,
    deny: bool,
}

fn cases(file: &str, fx: &Fixture) -> Vec<Case> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/guard")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{file}: {e}: {l}"));
            Case {
                name: v["name"].as_str().unwrap().to_string(),
                dispatched: v["dispatched"].as_bool().unwrap(),
                input: fx.fill(&v["input"].to_string()),
                deny: match v["expect"].as_str().unwrap() {
                    "deny" => true,
                    "allow" => false,
                    other => panic!("{file}: expect {other:?}"),
                },
            }
        })
        .collect()
}

#[test]
fn every_hostile_case_is_denied_and_every_benign_one_allowed() {
    judge_the_corpus(&Fixture::new());
}

/// The same corpus with the repository under the system temp directory (a clone in `/tmp`): the
/// guard judges alike wherever the repository is.
#[test]
fn the_corpus_is_judged_alike_with_the_repository_under_the_temp_directory() {
    judge_the_corpus(&Fixture::in_system_temp());
}

/// A repository under the temp directory is still the repository: a dispatched session may
/// write scratch files in the temp directory, but not the main checkout, its `.git` or
/// `.splice/` there.
#[test]
fn a_repository_under_the_temp_directory_is_not_scratch_space() {
    let fx = Fixture::in_system_temp();
    assert!(
        fx.repo
            .starts_with(std::env::temp_dir().canonicalize().unwrap())
    );
    let hooks = fx.repo.join(".git/hooks");
    let cases = [
        (fx.repo.join(".git/config"), "outside your worktree"),
        (hooks.join("pre-commit"), "outside your worktree"),
        (fx.repo.join("README.md"), "outside your worktree"),
        (fx.repo.join("src/main.rs"), "outside your worktree"),
        (fx.repo.join(".splice/journal.jsonl"), "splice's state"),
    ];
    for (path, why) in &cases {
        let path = path.display().to_string();
        for (tool, input) in [
            (
                "Write",
                serde_json::json!({"file_path": path, "content": "x"}),
            ),
            (
                "Edit",
                serde_json::json!({"file_path": path, "old_string": "a", "new_string": "b"}),
            ),
        ] {
            let call = tool_call(tool, input, &fx.wt);
            let what = format!("{tool} {path}");
            let reason = decision(&fx.guard(&call, true), &what)
                .unwrap_or_else(|| panic!("{what}: allowed"));
            assert!(reason.contains(why), "{what}: {reason}");
        }
        let what = format!("echo x >> {path}");
        let call = tool_call("Bash", serde_json::json!({"command": what}), &fx.wt);
        let reason =
            decision(&fx.guard(&call, true), &what).unwrap_or_else(|| panic!("{what}: allowed"));
        assert!(reason.contains(why), "{what}: {reason}");
    }
    // Scratch files beside the repository (and the home directory holding it), in the temp
    // directory, are still the dispatch's to write; so is its own worktree.
    let beside = fx.home.parent().unwrap().join("scratch.txt");
    let beside = beside.display().to_string();
    let own = fx.wt.join("src/lib.rs").display().to_string();
    for path in [&beside, &own] {
        let call = tool_call(
            "Write",
            serde_json::json!({"file_path": path, "content": "x"}),
            &fx.wt,
        );
        assert_eq!(
            decision(&fx.guard(&call, true), path),
            None,
            "{path}: denied"
        );
        let command = format!("echo x > {path}");
        let call = tool_call("Bash", serde_json::json!({"command": command}), &fx.wt);
        assert_eq!(
            decision(&fx.guard(&call, true), &command),
            None,
            "{command}: denied"
        );
    }
}

/// EnterWorktree would move a dispatched session out of the worktree splice made for it: denied,
/// saying so and what to do; a person may. MultiEdit, gone from Claude Code, is still judged.
#[test]
fn enter_worktree_is_denied_to_a_dispatch_and_allowed_to_a_person() {
    let fx = Fixture::new();
    let call = tool_call(
        "EnterWorktree",
        serde_json::json!({"name": "feature"}),
        &fx.wt,
    );
    let reason = decision(&fx.guard(&call, true), "EnterWorktree")
        .expect("a dispatch entering another worktree is denied");
    assert!(
        reason.contains("`EnterWorktree feature`")
            && reason.contains("out of its worktree")
            && reason.contains(&fx.wt.display().to_string())
            && reason.contains("stay there"),
        "{reason}"
    );
    assert_eq!(decision(&fx.guard(&call, false), "a person's"), None);

    let bead = fx.repo.join(".splice/beads/x.json");
    let edits =
        serde_json::json!({"file_path": bead, "edits": [{"old_string": "a", "new_string": "b"}]});
    let old = tool_call("MultiEdit", edits, &fx.repo);
    for dispatched in [false, true] {
        let reason = decision(&fx.guard(&old, dispatched), "MultiEdit")
            .expect("an old session's MultiEdit of a bead file is denied");
        assert!(reason.contains("splice's state"), "{reason}");
    }
}

/// A sandboxed dispatch's temp directory is its own directory's `tmp/`, inside `.splice/runs/`:
/// its own directory (the result file, the temp directory) is its to write, with `TMPDIR` there
/// as without it; the repository beside it still is not.
#[test]
fn a_dispatchs_own_directory_and_its_temp_directory_there_are_its_to_write() {
    let fx = Fixture::new();
    let own = fx.repo.join(".splice/runs/r1/sp-own-implement-1");
    let tmp = own.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    for env in [vec![], vec![("TMPDIR", tmp.as_path())]] {
        let scratch = tmp.join("x.log").display().to_string();
        let result = own.join("result.json").display().to_string();
        for command in [
            format!("cargo test > {scratch}"),
            format!("echo '{{}}' > {result}"),
            "echo x > \"$TMPDIR/y\" && rm -rf $TMPDIR/*".to_string(),
        ] {
            if env.is_empty() && command.contains("TMPDIR") {
                continue;
            }
            let call = tool_call("Bash", serde_json::json!({"command": command}), &fx.wt);
            let out = fx.guard_with(&call, true, &env);
            assert_eq!(
                decision(&out, &command),
                None,
                "{command} ({env:?}): denied"
            );
        }
        let readme = format!("echo x > {}/README.md", fx.repo.display());
        let call = tool_call("Bash", serde_json::json!({"command": readme}), &fx.wt);
        let out = fx.guard_with(&call, true, &env);
        assert!(
            decision(&out, &readme).is_some(),
            "{readme} ({env:?}): allowed"
        );
    }
}

/// A `PreToolUse` call of `tool` with `input`, from a session working in `cwd`.
fn tool_call(tool: &str, input: Value, cwd: &Path) -> Vec<u8> {
    serde_json::json!({
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "cwd": cwd,
    })
    .to_string()
    .into_bytes()
}

fn judge_the_corpus(fx: &Fixture) {
    let hostile = cases("hostile.jsonl", fx);
    let benign = cases("benign.jsonl", fx);
    assert!(hostile.iter().all(|c| c.deny), "hostile.jsonl expects deny");
    assert!(benign.iter().all(|c| !c.deny), "benign.jsonl expects allow");
    let all: Vec<&Case> = hostile.iter().chain(&benign).collect();
    let mut names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
    names.sort();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len(), "case names are unique");

    let results: Vec<(&Case, Option<String>, String)> = std::thread::scope(|s| {
        let chunks: Vec<_> = all
            .chunks(all.len().div_ceil(4))
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|c| {
                            let out = fx.guard(c.input.as_bytes(), c.dispatched);
                            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                            (*c, decision(&out, &c.name), stderr)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        chunks.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });

    let mut fp = Vec::new();
    let mut fn_ = Vec::new();
    let mut faults = Vec::new();
    for (c, denied, stderr) in &results {
        if !stderr.is_empty() {
            faults.push(format!("{}: {stderr}", c.name));
        }
        match (c.deny, denied) {
            (true, None) => fn_.push(c.name.clone()),
            (false, Some(r)) => fp.push(format!("{}: {r}", c.name)),
            _ => {}
        }
    }
    eprintln!(
        "guard corpus: {} hostile, {} benign; false positives {}, false negatives {}, faults {}",
        hostile.len(),
        benign.len(),
        fp.len(),
        fn_.len(),
        faults.len()
    );
    assert!(
        fp.is_empty() && fn_.is_empty(),
        "allowed cases denied:\n{}\nhostile cases allowed:\n{}",
        fp.join("\n"),
        fn_.join("\n")
    );
    assert!(faults.is_empty(), "faults:\n{}", faults.join("\n"));
    assert!(hostile.len() >= 150, "{} hostile cases", hostile.len());
    assert!(benign.len() >= 150, "{} benign cases", benign.len());
}

/// A fault allows, says so on stderr, and exits 0.
fn allows_with_a_note(fx: &Fixture, input: &[u8], dispatched: bool, what: &str) {
    let out = fx.guard(input, dispatched);
    assert_eq!(decision(&out, what), None, "{what}: denied");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("splice guard: could not judge this call (")
            && stderr.contains("allowed"),
        "{what}: {stderr}"
    );
}

fn bash(command: &str) -> Vec<u8> {
    serde_json::json!({
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "cwd": "/",
    })
    .to_string()
    .into_bytes()
}

#[test]
fn a_fault_allows_with_a_note_and_exits_zero() {
    let fx = Fixture::new();
    for dispatched in [false, true] {
        allows_with_a_note(&fx, b"", dispatched, "empty stdin");
        allows_with_a_note(&fx, b"\x00\xff garbage {", dispatched, "garbage");
        allows_with_a_note(&fx, b"[1, 2]", dispatched, "an array");
        allows_with_a_note(
            &fx,
            br#"{"hook_event_name": 7}"#,
            dispatched,
            "a wrong type",
        );
        let no_command =
            br#"{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":5}}"#;
        allows_with_a_note(&fx, no_command, dispatched, "a command that is a number");
        let no_path = br#"{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{}}"#;
        allows_with_a_note(&fx, no_path, dispatched, "a Write without a path");
        let deep_json = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        allows_with_a_note(&fx, deep_json.as_bytes(), dispatched, "deep JSON");
    }
    let mut c = splice(&fx.home);
    c.args(["guard", "--no-such-option"]);
    let out = feed(c, &bash("rm -rf .splice"));
    assert_eq!(out.status.code(), Some(0), "a usage error exits 0");
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not judge"));
}

/// A command too big or too deep to judge is denied, not waved through: padding a command past
/// the guard's limits was a way around it. The reason says how to get it through.
#[test]
fn a_command_too_big_or_too_deep_to_judge_is_denied() {
    let fx = Fixture::new();
    let huge = format!("rm -rf .splice; {}", "x".repeat(10 << 20));
    let nested = format!("{}rm -rf .splice{}", "echo $(".repeat(50), ")".repeat(50));
    let deep = format!("{}{}", "$(".repeat(200_000), ")".repeat(200_000));
    let many = "true;".repeat(30_000);
    for dispatched in [false, true] {
        for (command, what) in [
            (&huge, "a 10 MB command"),
            (&nested, "50 nested $(…)"),
            (&deep, "200 000 nested $(…)"),
            (&many, "30 000 commands"),
        ] {
            let out = fx.guard(&bash(command), dispatched);
            let reason = decision(&out, what).unwrap_or_else(|| panic!("{what}: allowed"));
            assert!(
                reason.contains("too") && reason.contains("split it"),
                "{what}: {reason}"
            );
        }
    }
}

#[test]
fn other_events_and_tools_are_allowed_silently() {
    let fx = Fixture::new();
    let repo = fx.repo.display();
    for input in [
        format!(
            r#"{{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{{"command":"rm -rf {repo}/.splice"}}}}"#
        ),
        format!(
            r#"{{"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{{"file_path":"{repo}/.splice/beads/x.json"}}}}"#
        ),
        r#"{"hook_event_name":"UserPromptSubmit","prompt":"hi"}"#.to_string(),
    ] {
        let out = fx.guard(input.as_bytes(), true);
        assert_eq!(decision(&out, &input), None);
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_closed_stdout_still_exits_zero() {
    let fx = Fixture::new();
    let mut c = splice(&fx.home);
    c.arg("guard").current_dir(&fx.repo);
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let input = format!(
        r#"{{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{{"file_path":"{}/.splice/beads/x.json","content":""}},"cwd":"{}"}}"#,
        fx.repo.display(),
        fx.repo.display()
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn help_explains_the_hook() {
    let fx = Fixture::new();
    let mut c = splice(&fx.home);
    c.args(["guard", "--help"]);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("PreToolUse") && help.contains("exits 0"),
        "{help}"
    );
}

/// `splice guard` alone skips the command-line parser (it runs before every tool call); the
/// parsed forms (`--dir`, `--json`) judge the same call the same way.
#[test]
fn the_parsed_forms_judge_as_the_plain_one() {
    let fx = Fixture::new();
    let state = fx.repo.join(".splice");
    let bead = state.join("beads/x.json");
    let call = |command: String| {
        serde_json::json!({
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "cwd": fx.repo,
        })
        .to_string()
        .into_bytes()
    };
    let hostile = call(format!("echo x > {}", bead.display()));
    let benign = call(format!("cat {}", bead.display()));
    let forms: [Vec<&std::ffi::OsStr>; 3] = [
        vec!["guard".as_ref()],
        vec!["guard".as_ref(), "--json".as_ref()],
        vec!["--dir".as_ref(), state.as_os_str(), "guard".as_ref()],
    ];
    for form in forms {
        let what = format!("{form:?}");
        let mut c = splice(&fx.home);
        c.args(&form).current_dir(&fx.repo);
        assert!(
            decision(&feed(c, &hostile), &what).is_some(),
            "{what}: allowed"
        );
        let mut c = splice(&fx.home);
        c.args(&form).current_dir(&fx.repo);
        assert_eq!(
            decision(&feed(c, &benign), &what),
            None,
            "{what}: denied a read"
        );
    }
}
