//! Shared helpers for integration tests: a temporary git repository, the built `splice` binary
//! run with a clean environment and a fixed clock, and JSON parsing of its output.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

pub const NOW: &str = "2026-01-01T00:00:00Z";

/// A temporary git repository with one commit on `main`.
pub struct Repo {
    pub dir: tempfile::TempDir,
    /// Its runs are unsandboxed (`SPLICE_SANDBOX=off`): [`Repo::unconfined`].
    pub unconfined: bool,
}

/// The tests' global git configuration, in place of the developer's `~/.gitconfig`: only a
/// committer (`t <t@example.com>`). Written once per test process into Cargo's directory for
/// the tests' files (`CARGO_TARGET_TMPDIR`), outside every test repository.
pub fn gitconfig() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let path = dir.join("gitconfig");
        // Whole or not at all: test processes write it side by side.
        let tmp = dir.join(format!("gitconfig.{}.tmp", std::process::id()));
        std::fs::write(&tmp, "[user]\n\tname = t\n\temail = t@example.com\n")
            .and_then(|()| std::fs::rename(&tmp, &path))
            .expect("the tests' git configuration");
        path
    })
}

/// Make `cmd` (git, or splice, which runs git) read no git configuration of the machine: none of
/// the system's (`/etc/gitconfig`), and [`gitconfig`] in place of the developer's
/// `~/.gitconfig`, so their settings — `commit.gpgsign`, hooks, aliases, a default branch —
/// cannot change a test's result. The repository's own config still counts. The limit:
/// libgit2 (splice's in-process git) reads the system file and looks for the global one under
/// `HOME` (which [`Repo::cmd`] sets to the repository), not in these variables.
pub fn hermetic_git(cmd: &mut Command) -> &mut Command {
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_CONFIG_GLOBAL", gitconfig())
}

/// Make a `splice` command (which runs git, and starts agents that do) read no git
/// configuration of the machine: none of the system's, and `/dev/null` as the global file
/// (splice's commits name their author themselves; a dispatch's sandbox may read the file
/// `GIT_CONFIG_GLOBAL` names, `tests/sandbox_hostile.rs`). The limit of [`hermetic_git`] on
/// libgit2 holds here too.
pub fn hermetic_splice(cmd: &mut Command) -> &mut Command {
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
}

/// A `git` command configured only by the tests ([`hermetic_git`]).
pub fn git() -> Command {
    let mut c = Command::new("git");
    hermetic_git(&mut c);
    c
}

impl Repo {
    pub fn new() -> Repo {
        Repo::new_in(tempfile::tempdir().expect("tempdir"))
    }

    /// A repository in `dir` (e.g. one made under `/tmp` on purpose).
    pub fn new_in(dir: tempfile::TempDir) -> Repo {
        let repo = Repo {
            dir,
            unconfined: false,
        };
        repo.git(&["init", "-q", "-b", "main"]);
        std::fs::write(repo.path().join("README.md"), "test repo\n").unwrap();
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "initial"]);
        repo
    }

    /// A repository whose runs dispatch unsandboxed (`SPLICE_SANDBOX=off`): for tests of the
    /// runner's logic whose stand-in agents keep their notes outside their worktree (the
    /// repository's root, a temp directory), which the kernel sandbox rightly refuses. The
    /// sandboxed path is `tests/sandbox_hostile.rs`'s, the demo's and every other test's.
    pub fn unconfined() -> Repo {
        Repo {
            unconfined: true,
            ..Repo::new()
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Git in this repository, configured only by the tests ([`hermetic_git`]).
    pub fn git_cmd(&self, args: &[&str]) -> Command {
        let mut c = git();
        c.args(args).current_dir(self.path());
        c
    }

    pub fn git(&self, args: &[&str]) -> String {
        let out = self
            .git_cmd(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A `splice` command in this repository with a clean environment and the fixed clock; the
    /// built splice is first on `PATH`, as an installed one is for a person (the committed
    /// Claude hook finds it there).
    pub fn cmd(&self, args: &[&str]) -> Command {
        let bin = Path::new(env!("CARGO_BIN_EXE_splice")).parent().unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut c = Command::new(env!("CARGO_BIN_EXE_splice"));
        c.args(args)
            .current_dir(self.path())
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.path())
            .env("SPLICE_NOW", NOW);
        hermetic_splice(&mut c);
        if self.unconfined {
            c.env("SPLICE_SANDBOX", "off");
        }
        c
    }

    /// Run, whatever the exit: the caller checks it (or use [`Repo::ok`], [`Repo::fails`]).
    #[must_use = "check the exit (or use Repo::ok / Repo::fails)"]
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("splice runs")
    }

    /// Run and require exit 0; returns the stdout JSON.
    pub fn ok(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "splice {args:?} failed\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        no_panic(&out);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "splice {args:?}: stdout is not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    /// Run and require exit `code`; returns stderr.
    pub fn fails(&self, code: i32, args: &[&str]) -> String {
        let out = self.run(args);
        no_panic(&out);
        assert_eq!(
            out.status.code(),
            Some(code),
            "splice {args:?}: expected exit {code}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    pub fn state(&self) -> PathBuf {
        self.path().join(".splice")
    }

    /// The bead's file, parsed.
    pub fn bead(&self, id: &str) -> Value {
        let path = self.state().join("beads").join(format!("{id}.json"));
        serde_json::from_slice(&std::fs::read(&path).expect("bead file")).expect("bead JSON")
    }

    /// Every file under `.splice/beads` with its bytes, for "state unchanged" assertions.
    pub fn beads_bytes(&self) -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(self.state().join("beads"))
            .map(|d| {
                d.flatten()
                    .map(|e| {
                        (
                            e.file_name().to_string_lossy().into_owned(),
                            std::fs::read(e.path()).unwrap(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }

    pub fn journal(&self) -> String {
        std::fs::read_to_string(self.state().join("journal.jsonl")).unwrap_or_default()
    }

    /// The live journal's committed records as JSON, each with `beads` holding every image it
    /// wrote: its whole images, and its patches applied to the image before (a record holds a
    /// patch for a bead that had a file, `src/store/delta.rs`).
    pub fn journal_records(&self) -> Vec<Value> {
        let path = self.state().join("journal.jsonl");
        let (records, _) = splice::store::journal::read_committed(&path, 0).expect("the journal");
        let mut images: std::collections::HashMap<String, splice::model::Bead> =
            std::collections::HashMap::new();
        records
            .into_iter()
            .map(|record| {
                let mut written = Vec::new();
                for p in &record.patches {
                    let base = images.get(&p.id).expect("a patch of a bead seen before");
                    let after = p.apply(base, &record.at).expect("the patch applies");
                    images.insert(p.id.clone(), after.clone());
                    written.push(after);
                }
                for b in &record.beads {
                    images.insert(b.id.to_string(), b.clone());
                    written.push(b.clone());
                }
                let mut v = serde_json::to_value(&record).expect("a record serializes");
                v["beads"] = serde_json::to_value(&written).expect("beads serialize");
                v.as_object_mut().expect("an object").remove("patches");
                v
            })
            .collect()
    }

    /// `splice init` a campaign; returns its id.
    pub fn init(&self, extra: &[&str]) -> String {
        let mut args = vec!["init", "--title", "Campaign"];
        args.extend_from_slice(extra);
        self.ok(&args)["id"].as_str().unwrap().to_string()
    }

    /// `splice init-task`; returns its id.
    pub fn task(&self, title: &str, extra: &[&str]) -> String {
        let mut args = vec!["init-task", "--title", title];
        args.extend_from_slice(extra);
        self.ok(&args)["id"].as_str().unwrap().to_string()
    }

    /// A campaign's integration floors for `root`: `tests/` holds its tests, and its suite
    /// passes (`true`).
    pub fn passing_suite(&self, root: &str) {
        self.ok(&[
            "transition",
            "set-config",
            "--bead",
            root,
            "--test-paths",
            "tests",
            "--suite-cmd",
            "true",
        ]);
    }

    /// Approve every gate `status` (`splice status --json`) shows waiting for a person; whether
    /// one was.
    pub fn approve_gates(&self, status: &Value) -> bool {
        let mut approved = false;
        for n in status["nodes"].as_array().into_iter().flatten() {
            let rest = &n["rest"];
            let (Some(id), Some(step)) = (n["id"].as_str(), rest["gate"].as_str()) else {
                continue;
            };
            if rest["kind"] != "awaiting-human" {
                continue;
            }
            self.ok(&["transition", "approve", "--bead", id, "--step", step]);
            approved = true;
        }
        approved
    }

    pub fn write(&self, rel: &str, text: &str) {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// No command may ever panic.
pub fn no_panic(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked at"), "splice panicked: {stderr}");
}

/// The default manifest with its implement step single-pass (its verification loop removed):
/// for tests of what comes after implement that complete it by hand, with no iteration.
pub fn single_pass_implement(r: &Repo) {
    let mut v: Value = serde_json::from_str(include_str!("../../manifest/coding-pipeline.json"))
        .expect("the default manifest is JSON");
    for step in v["steps"].as_array_mut().expect("steps") {
        if step["name"] == "implement" {
            step.as_object_mut().expect("a step").remove("loop");
        }
    }
    r.write(".splice/manifest.json", &v.to_string());
}

/// A manifest whose leaf route is one step, `work`, running `argv` with `floors`, `timeout_s`
/// and `max_attempts` (resuming its worktree), as pretty JSON for `.splice/manifest.json`.
pub fn work_step_manifest(argv: Value, floors: Value, timeout_s: u64, max_attempts: u32) -> String {
    let manifest = serde_json::json!({
        "routes": { "root": ["plan", "delegate"], "compound": ["plan", "delegate"], "leaf": ["work"] },
        "steps": [
            { "name": "plan", "role": "split", "floors": [] },
            { "name": "delegate", "floors": [ { "kind": "children_finished" } ] },
            { "name": "work", "run": { "argv": argv }, "floors": floors,
              "timeout_s": timeout_s, "max_attempts": max_attempts, "resume": "continue" }
        ]
    });
    serde_json::to_string_pretty(&manifest).unwrap()
}

/// Run git in `dir` (a worktree, say) with a committer set and no configuration of the
/// machine's ([`hermetic_git`]); its trimmed stdout. Fails the test when git does.
pub fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = git()
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A review that passes every line, of `sha`.
pub fn passing_review(sha: &str) -> String {
    format!(
        "## Review\nReviewed-SHA: {sha}\nStandards: PASS\nSpec: PASS\nArchitecture: PASS\n\
         Evidence: PASS\n"
    )
}

/// What [`Repo::reviewed_task`] makes.
pub struct Reviewed<'a> {
    pub title: &'a str,
    /// `direct` or `pr`.
    pub delivery: &'a str,
    pub target: &'a str,
    /// Files the reviewed commit writes, relative to the worktree.
    pub files: &'a [(&'a str, &'a str)],
}

impl Repo {
    /// Where splice keeps `id`'s worktree.
    pub fn worktree(&self, id: &str) -> PathBuf {
        self.state().join("worktrees").join(id)
    }

    /// A lone task at its deliver step whose reviewed work is one commit writing `task.files` on
    /// `splice/<id>` (from `task.target`), in the worktree where splice makes it, its review
    /// recorded through the review step's check. Returns the id and the reviewed commit.
    pub fn reviewed_task(&self, task: &Reviewed) -> (String, String) {
        let id = self.task(
            task.title,
            &["--delivery", task.delivery, "--target", task.target],
        );
        let reviewed = self.review_at_deliver(&id, task);
        (id, reviewed)
    }

    /// Bring the existing leaf `id` to its deliver step as [`Repo::reviewed_task`] does (one
    /// reviewed commit writing `task.files` on `splice/<id>`, branched from `task.target`);
    /// returns the reviewed commit. For a node made another way, a campaign's child say.
    pub fn review_at_deliver(&self, id: &str, task: &Reviewed) -> String {
        self.ok(&[
            "transition",
            "route",
            "--bead",
            id,
            "--to",
            "leaf",
            "--at",
            "review",
        ]);
        let wt = self.worktree(id);
        let branch = format!("splice/{id}");
        self.git(&[
            "worktree",
            "add",
            "-q",
            "-b",
            &branch,
            wt.to_str().unwrap(),
            task.target,
        ]);
        for (rel, text) in task.files {
            let path = wt.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        git_in(&wt, &["add", "-A"]);
        git_in(&wt, &["commit", "-q", "-m", task.title]);
        let reviewed = git_in(&wt, &["rev-parse", "HEAD"]);
        std::fs::create_dir_all(wt.join("reviews")).unwrap();
        std::fs::write(
            wt.join(format!("reviews/{id}.md")),
            passing_review(&reviewed),
        )
        .unwrap();
        self.ok(&["transition", "complete", "--bead", id, "--step", "review"]);
        assert_eq!(self.bead(id)["pipeline"]["step"], "deliver");
        reviewed
    }
}

/// The scripted design agent and critic of the design-mode tests, written under `dir/design/`
/// (which their sandbox reads); returns the `[plan]` section of config.toml that names them.
/// In conversation (`$SPLICE_DESIGN_TRANSCRIPT`) the agent answers `answer N: noted.` (N the
/// transcript's lines) and asks to crystallize when the person's last turn says "crystallize";
/// crystallizing (`$SPLICE_PLAN_FILE`) it writes a plan (target `greeter`, a branch the caller makes) whose one task names
/// a file only when the conversation mentions `src/bye.txt`. The critic must-fixes a task that
/// names no file. The agent also tries to write beside its script, which a sandbox refuses.
pub fn design_scripts(dir: &Path) -> String {
    let design = dir.join("design");
    std::fs::create_dir_all(&design).unwrap();
    std::fs::write(
        design.join("agent.sh"),
        r#"if [ -n "$SPLICE_DESIGN_TRANSCRIPT" ]; then
  n=$(wc -l < "$SPLICE_DESIGN_TRANSCRIPT")
  echo x > "$(dirname "$0")/agent-wrote" 2>/dev/null
  echo "answer $n: noted."
  if tail -n 1 "$SPLICE_DESIGN_TRANSCRIPT" | grep -q crystallize; then
    echo "splice-request: crystallize"
  fi
  exit 0
fi
files='[]'
if grep -q 'src/bye.txt' "$SPLICE_NOTES"; then files='["src/bye.txt"]'; fi
cat > "$SPLICE_PLAN_FILE" <<PLAN
{"schema_version": 1, "title": "Greeter", "scenarios": [{"id": "S1", "title": "greets"}],
 "suite_cmd": "true", "test_paths": ["tests"], "autonomy": "deep", "target": "greeter",
 "tasks": [{"id": "hello", "title": "Hello", "scenarios": ["S1"], "files": $files}]}
PLAN
"#,
    )
    .unwrap();
    std::fs::write(
        design.join("critic.sh"),
        r#"if grep -q '"files": \[\]' "$1"; then
  echo '{"critiques": [{"category": "correctness", "severity": "high", "issue": "task hello names no file"}], "must_fix_before_execution": true, "overall_assessment": "one gap"}'
else
  echo '{"critiques": [], "must_fix_before_execution": false, "overall_assessment": "sound"}'
fi
"#,
    )
    .unwrap();
    format!(
        "[plan]\ndesigner = [\"sh\", \"{0}/agent.sh\"]\ncritic = [\"sh\", \"{0}/critic.sh\"]\n",
        design.display()
    )
}
