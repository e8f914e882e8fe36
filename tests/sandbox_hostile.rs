//! Issue 31: under a real `splice run`, an agent inside the kernel sandbox tries every way out
//! that defeated the inferred boundary — a PID namespace, a hidden `/proc`, a process that
//! outlives its runner, a hard-linked store alias, planted git config and hooks, Bash writes
//! into `.splice/`, the main checkout and the target, moving `main` from its worktree, signals
//! to the runner, a UNIX socket outside, credentials under `$HOME` — and each is refused by the
//! kernel: `.splice/`, the main checkout, `.git`'s config and hooks and every ref but the node's
//! own branch stay byte for byte as they were, and no record comes from it as a person or
//! runner. Its own work still lands: it edits, commits on its branch and proposes.
//!
//! With `SPLICE_SANDBOX_TESTS=1` (set by `.ci/run`) a kernel without a usable sandbox fails these
//! tests; without it they are skipped there, saying why.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::Repo;
use serde_json::Value;

/// Can this kernel sandbox? Fails under `SPLICE_SANDBOX_TESTS=1` when it cannot.
fn sandbox_usable(r: &Repo) -> bool {
    let out = r.run(&["doctor", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let usable = text.contains("\"sandbox\"") && !text.contains("agents run unsandboxed");
    if !usable && std::env::var_os("SPLICE_SANDBOX_TESTS").is_some_and(|v| v == "1") {
        panic!("SPLICE_SANDBOX_TESTS=1 and this kernel offers no usable sandbox: {text}");
    }
    if !usable {
        eprintln!("skipped: no usable kernel sandbox here (splice doctor: {text})");
    }
    usable
}

/// Every file under `dir` (not following links) with its bytes, but the paths `skip` says.
fn tree(dir: &Path, skip: &dyn Fn(&Path) -> bool) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(listing) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in listing.flatten() {
            let p = e.path();
            if skip(&p) {
                continue;
            }
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(p);
            } else if t.is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.insert(p, target.as_os_str().as_encoded_bytes().to_vec());
            } else {
                let bytes = std::fs::read(&p).unwrap_or_default();
                out.insert(p, bytes);
            }
        }
    }
    out
}

/// The attacks, each `name exit-code` appended to `$TMPDIR/results`.
const ATTACKS: &str = r#"
out="$TMPDIR/results"
try() { name=$1; shift; "$@" >"$TMPDIR/$name.out" 2>&1; echo "$name $?" >> "$out"; }
repo=$1
gitdir="$repo/.git"
# Its own work first, so that moving main to HEAD would change main.
echo work > work.txt
try commit sh -c 'git add work.txt && git -c user.name=a -c user.email=a@b commit -qm work'
try set-autonomy splice transition set-autonomy --bead "$SPLICE_BEAD" --level deep
try set-autonomy-bare env -i PATH="$PATH" splice --dir "$SPLICE_DIR" transition set-autonomy \
  --bead "$SPLICE_BEAD" --level deep
try pid-namespace env -i PATH="$PATH" unshare -Urpf --mount-proc splice --dir "$SPLICE_DIR" \
  transition set-autonomy --bead "$SPLICE_BEAD" --level deep
try user-namespace unshare -Ur true
try hidden-proc unshare -Urm sh -c 'mount -t tmpfs none /proc'
try approve env -u SPLICE_INBOX splice transition approve --bead "$SPLICE_BEAD" --step gated
try journal-append sh -c "echo '{}' >> '$SPLICE_DIR/journal.jsonl'"
try bead-write sh -c "echo '{}' > '$SPLICE_DIR/beads/$SPLICE_BEAD.json'"
try bead-new sh -c "echo '{}' > '$SPLICE_DIR/beads/sp-forged.json'"
try cp-attached cp -t"$SPLICE_DIR/beads" /etc/hostname
try sort-o sort -o "$SPLICE_DIR/config.toml" /etc/hostname
try state-rm rm -f "$SPLICE_DIR/lock"
try hard-link ln "$SPLICE_DIR/journal.jsonl" alias-journal
mkdir -p alias/.splice
try alias-store ln "$SPLICE_DIR/journal.jsonl" alias/.splice/journal.jsonl
try main-checkout sh -c "echo pwned >> '$repo/README.md'"
try main-new sh -c "echo pwned > '$repo/planted.txt'"
try git-config-file sh -c "echo '[core] fsmonitor = true' >> '$gitdir/config'"
try git-hook sh -c "printf '#!/bin/sh\ntouch /tmp/hooked\n' > '$gitdir/hooks/pre-commit'"
try git-info sh -c "echo '*' > '$gitdir/info/attributes'"
try git-dir-main env GIT_DIR="$gitdir" git update-ref refs/heads/main HEAD
try git-dir-other env GIT_DIR="$gitdir" git update-ref refs/heads/splice/sp-other HEAD
try ref-file-other sh -c "git rev-parse HEAD > '$gitdir/refs/heads/splice/sp-other'"
try admin-head sh -c "echo ref: refs/heads/main > '$gitdir/worktrees/$SPLICE_BEAD/HEAD'"
try object-new sh -c "mkdir -p '$gitdir/objects/ab' && echo x > '$gitdir/objects/ab/cdef'"
try object-replace sh -c 'f=$(find "$1/objects" -type f -path "*/objects/??/*" | head -n 1); \
  [ -n "$f" ] && rm -f "$f" && echo x > "$f"' replace "$gitdir"
# Git in the worktree is the dispatch's quarantine: these change only the quarantine, and
# nothing of them reaches the repository.
try contained-branch-main git branch -f main HEAD
try contained-update-ref-main git update-ref refs/heads/main HEAD
try contained-other-branch git update-ref refs/heads/splice/sp-other HEAD
try contained-push-main git push . HEAD:main
try contained-tag git update-ref refs/tags/planted HEAD
try contained-config git config core.fsmonitor "touch $TMPDIR/fsmonitor-ran"
try contained-checkout-main git checkout -B main
try home-gitconfig sh -c "echo '[alias] x = !touch /tmp/x' >> '$HOME/.gitconfig'"
try home-rc sh -c "echo pwned >> '$HOME/.bashrc'"
try read-ssh cat "$HOME/.ssh/id_ed25519"
try read-gh cat "$HOME/.config/gh/hosts.yml"
try read-cargo-token cat "$HOME/.cargo/credentials.toml"
try read-git-credentials cat "$HOME/.config/git/credentials"
try cargo-config-ok cat "$CARGO_HOME/config.toml"
try cargo-home-ok sh -c 'case "$CARGO_HOME" in "$SPLICE_DIR"/runs/agent-home/cargo) touch "$CARGO_HOME/fetched";; *) exit 1;; esac'
try cargo-poison sh -c "echo x > '$HOME/.cargo/registry-poison'"
try tmp-write sh -c "echo x > /tmp/splice-sandbox-escape-$SPLICE_BEAD"
try signal-runner kill -0 "$PPID"
try mknod mknod "$TMPDIR/null" c 1 3
if command -v python3 >/dev/null; then
  try unix-socket python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])" "$SOCKET"
fi
# A process that outlives the runner (its parent, $PPID) and tries once the runner is gone:
# it waits for the runner's /proc entry to go, at most 60 s, then says whether it saw that.
setsid sh -c 'i=0; while [ -d "/proc/$1" ] && [ $i -lt 600 ]; do i=$((i+1)); sleep 0.1; done
  [ -d "/proc/$1" ] && { echo "outlived runner-still-alive" >> "$TMPDIR/late"; exit; }
  env -i PATH="$PATH" splice --dir "$SPLICE_DIR" transition set-autonomy \
  --bead "$SPLICE_BEAD" --level deep > "$TMPDIR/outlived.out" 2>&1
  echo "outlived $?" >> "$TMPDIR/late"' outlive "$PPID" </dev/null >/dev/null 2>&1 &
# Its proposal, through the inbox.
try propose splice transition propose --bead "$SPLICE_BEAD" --step work --artifact HEAD
"#;

fn manifest(r: &Repo) {
    let manifest = serde_json::json!({
        "routes": { "root": ["plan", "delegate"], "compound": ["plan", "delegate"],
                    "leaf": ["work", "gated"] },
        "steps": [
            { "name": "plan", "floors": [] },
            { "name": "delegate", "floors": [ { "kind": "children_finished" } ] },
            { "name": "work", "run": { "argv": ["sh", "-c", ATTACKS, "attack",
                                                r.path().display().to_string()] },
              "floors": [], "timeout_s": 120, "max_attempts": 1, "resume": "continue" },
            { "name": "gated", "floors": [], "gate": "human" }
        ]
    });
    r.write(
        ".splice/manifest.json",
        &serde_json::to_string_pretty(&manifest).unwrap(),
    );
}

/// The file `rel` in the directory of `bead`'s first `work` dispatch, in whichever run made
/// it (`runs/<run>/<bead>-work-1/<rel>`), as text; empty when there is none.
fn dispatch_file(r: &Repo, bead: &str, rel: &str) -> String {
    std::fs::read_dir(r.state().join("runs"))
        .unwrap()
        .flatten()
        .find_map(|run| {
            std::fs::read_to_string(run.path().join(format!("{bead}-work-1/{rel}"))).ok()
        })
        .unwrap_or_default()
}

/// The `name code` lines the agent appended to `tmp/<file>`.
fn results(r: &Repo, bead: &str, file: &str) -> BTreeMap<String, i32> {
    dispatch_file(r, bead, &format!("tmp/{file}"))
        .lines()
        .filter_map(|line| {
            let (name, code) = line.split_once(' ')?;
            Some((name.to_string(), code.parse().unwrap_or(-1)))
        })
        .collect()
}

fn check_hostile(r: &Repo) {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    std::fs::create_dir_all(home.path().join(".config/gh")).unwrap();
    std::fs::write(home.path().join(".config/gh/hosts.yml"), "oauth_token: x").unwrap();
    std::fs::create_dir_all(home.path().join(".cargo")).unwrap();
    std::fs::create_dir_all(home.path().join(".config/git")).unwrap();
    std::fs::write(home.path().join(".config/git/credentials"), "https://u:t@x").unwrap();
    std::fs::write(home.path().join(".cargo/credentials.toml"), "token = \"x\"").unwrap();
    std::fs::write(home.path().join(".cargo/config.toml"), "[net]\n").unwrap();
    std::fs::write(home.path().join(".gitconfig"), "[user]\n\tname = p\n").unwrap();
    std::fs::write(home.path().join(".bashrc"), "# rc\n").unwrap();
    let socket_dir = tempfile::tempdir().unwrap();
    let socket = socket_dir.path().join("server.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();

    manifest(r);
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "state"]);
    let bead = r.task("Attacker", &[]);
    if !sandbox_usable(r) {
        return;
    }
    let repo = r.path().to_path_buf();
    let outside =
        |p: &Path| p.starts_with(repo.join(".git")) || p.starts_with(repo.join(".splice"));
    let before_main = tree(&repo, &outside);
    let config_files = |r: &Repo| {
        ["config.toml", "manifest.json", ".gitignore"]
            .map(|f| std::fs::read(r.state().join(f)).ok())
    };
    let before_config = config_files(r);
    let git = repo.join(".git");
    let git_skip = |p: &Path| {
        p.starts_with(git.join("worktrees"))
            || p.starts_with(git.join("objects"))
            || p.starts_with(git.join("refs/heads/splice"))
            || p.starts_with(git.join("logs"))
            || p.ends_with("index")
    };
    let before_git = tree(&git, &git_skip);
    let before_objects = tree(&git.join("objects"), &|_| false);
    let before_home = tree(home.path(), &|_| false);
    let main_before = r.git(&["rev-parse", "main"]);

    let out = r
        .cmd(&["run", "--output", "json", "--max-passes", "6"])
        .env("HOME", home.path())
        .env("SOCKET", &socket)
        .output()
        .unwrap();
    common::no_panic(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The process that outlived its runner has had its try.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(70);
    while results(r, &bead, "late").is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }

    let got = results(r, &bead, "results");
    let late = results(r, &bead, "late");
    let out_of = |name: &str| dispatch_file(r, &bead, &format!("tmp/{name}.out"));
    let refused: Vec<&str> = got
        .keys()
        .map(String::as_str)
        .filter(|n| {
            !["commit", "propose", "cargo-config-ok", "cargo-home-ok"].contains(n)
                && !n.starts_with("contained-")
        })
        .collect();
    assert!(refused.len() >= 32, "every attack ran: {got:?}");
    let contained = got.keys().filter(|n| n.starts_with("contained-")).count();
    assert_eq!(contained, 7, "every contained attack ran: {got:?}");
    for name in refused {
        assert_ne!(got[name], 0, "{name} succeeded: {}", out_of(name));
    }
    assert_eq!(
        late.get("outlived"),
        Some(&1),
        "{late:?}: {}",
        out_of("outlived")
    );
    // Cargo's home is splice's, with the user's config copied in; the user's is read-only,
    // its publish token unread.
    for name in ["commit", "propose", "cargo-config-ok", "cargo-home-ok"] {
        assert_eq!(got.get(name), Some(&0), "{name}: {}", out_of(name));
    }
    // Git in the quarantine is a whole repository: a commit says nothing of locks it lacked.
    assert!(out_of("commit").trim().is_empty(), "{}", out_of("commit"));
    // A person's verb from a process the writer takes for a person (its runner has gone) is
    // refused by the kernel, in words.
    let said = out_of("outlived");
    assert!(said.contains("inside a splice sandbox"), "{said}");

    let same = |a: &BTreeMap<PathBuf, Vec<u8>>, b: &BTreeMap<PathBuf, Vec<u8>>, what: &str| {
        let differ: Vec<&PathBuf> = a
            .keys()
            .chain(b.keys())
            .filter(|k| a.get(*k) != b.get(*k))
            .collect();
        assert!(differ.is_empty(), "{what} changed: {differ:?}");
    };
    same(&tree(&repo, &outside), &before_main, "the main checkout");
    assert_eq!(config_files(r), before_config, ".splice/'s settings");
    let beads: Vec<String> = r.beads_bytes().into_iter().map(|(n, _)| n).collect();
    assert_eq!(beads, [format!("{bead}.json")], "no bead was planted");
    for line in r.journal().lines() {
        let rec: Value = serde_json::from_str(line).expect("every journal line is the writer's");
        assert!(
            rec.get("verb").is_some() || rec.get("commit").is_some(),
            "{line}"
        );
    }
    assert_eq!(
        tree(&git, &git_skip),
        before_git,
        ".git but objects, worktrees, splice/*"
    );
    // Objects are only added, by the runner's import: none was replaced or removed.
    let objects = tree(&git.join("objects"), &|_| false);
    for (path, bytes) in &before_objects {
        assert_eq!(objects.get(path), Some(bytes), "{} changed", path.display());
    }
    assert_eq!(tree(home.path(), &|_| false), before_home, "$HOME");
    assert_eq!(r.git(&["rev-parse", "main"]), main_before);
    let refs = r.git(&["for-each-ref", "--format=%(refname)"]);
    for name in refs.lines() {
        assert!(
            name == "refs/heads/main" || name == format!("refs/heads/splice/{bead}"),
            "a ref appeared: {name}"
        );
    }
    assert!(
        !Path::new(&format!("/tmp/splice-sandbox-escape-{bead}")).exists(),
        "/tmp was written"
    );
    // The journal: the agent's own proposal as a dispatched session, nothing as a person
    // after the task was made, and its autonomy untouched.
    let bead_file = r.bead(&bead);
    assert_eq!(bead_file["pipeline"].get("autonomy"), None, "{bead_file}");
    assert_eq!(bead_file["pipeline"]["proposal"]["artifact"], "HEAD");
    let journal: Vec<Value> = r
        .journal()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let persons = journal
        .iter()
        .filter(|rec| rec["actor"] == "person")
        .count();
    assert_eq!(persons, 1, "only init-task is a person's: {journal:?}");
    let proposal = journal.iter().find(|rec| rec["verb"] == "propose");
    assert_eq!(
        proposal.map(|rec| &rec["actor"]),
        Some(&Value::from("agent")),
        "the proposal from the inbox is the agent's: {journal:?}"
    );
    let branch = r.git(&["log", "--format=%s", "-1", &format!("splice/{bead}")]);
    assert_eq!(branch, "work", "the agent's commit is on its branch");
    drop(listener);
}

#[test]
fn an_agent_in_the_sandbox_cannot_steer_splice_or_touch_the_repository() {
    let r = Repo::new();
    check_hostile(&r);
}

/// The same attacks with the repository under `/tmp`, which the guard once exempted.
#[test]
fn the_sandbox_holds_for_a_repository_under_tmp() {
    let dir = tempfile::Builder::new()
        .prefix("splice-sandbox-")
        .tempdir_in("/tmp")
        .unwrap();
    let r = Repo::new_in(dir);
    check_hostile(&r);
}

/// A floor's command runs what the agent wrote: a test that runs `splice transition
/// set-autonomy` (as a `build.rs` or a test could) is refused by the kernel, and the floor
/// refuses the step; what the command writes in its worktree is kept.
#[test]
fn a_floor_command_that_runs_a_persons_verb_is_refused() {
    let r = Repo::new();
    let argv = serde_json::json!(["sh", "-c", "echo agent work > work.txt"]);
    let floor = serde_json::json!([{ "kind": "command", "argv": ["sh", "-c",
        "if echo junk >> \"$1/journal.jsonl\"; then echo wrote the journal; exit 0; fi; \
         env -i \"$2\" --dir \"$1\" transition set-autonomy --bead \"$SPLICE_BEAD\" \
         --level deep > \"$TMPDIR/floor.out\" 2>&1 || { cat \"$TMPDIR/floor.out\"; exit 1; }", "floor",
        r.state().display().to_string(), env!("CARGO_BIN_EXE_splice")] }]);
    r.write(
        ".splice/manifest.json",
        &common::work_step_manifest(argv, floor, 60, 1),
    );
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "state"]);
    let bead = r.task("Sneaky suite", &[]);
    if !sandbox_usable(&r) {
        return;
    }
    let out = r.run(&["run", "--output", "json", "--max-passes", "4"]);
    common::no_panic(&out);
    let b = r.bead(&bead);
    assert_eq!(b["pipeline"].get("autonomy"), None, "{b:#}");
    let check = &b["pipeline"]["last_check"];
    assert_eq!(check["verdict"], "refuse", "{b:#}");
    let said = check.to_string();
    assert!(
        said.contains("Permission denied"),
        "the journal write: {said}"
    );
    assert!(
        said.contains("inside a splice sandbox") || said.contains("person's verb"),
        "{said}"
    );
    for line in r.journal().lines() {
        assert!(line != "junk", "the floor's command wrote the journal");
    }
}

/// A repository whose one `work` step runs `script` in `sh` and then proposes, committed, and a
/// task titled `title` on it.
fn one_step(script: &str, title: &str) -> (Repo, String) {
    let r = Repo::new();
    let argv = serde_json::json!([
        "sh",
        "-c",
        format!(
            "{script}; splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact HEAD"
        )
    ]);
    r.write(
        ".splice/manifest.json",
        &common::work_step_manifest(argv, serde_json::json!([]), 60, 1),
    );
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "state"]);
    let bead = r.task(title, &[]);
    (r, bead)
}

/// A logged-in CLI still authenticates inside: its login under `$HOME` (which the sandbox
/// cannot read) is copied into the home splice owns for it, once; `$HOME` stays read-only.
#[test]
fn a_logged_in_cli_finds_its_login_in_its_splice_owned_home() {
    let (r, bead) = one_step(
        "cat \"$CLAUDE_CONFIG_DIR/.credentials.json\" > \"$TMPDIR/claude\"; \
         cat \"$CODEX_HOME/auth.json\" > \"$TMPDIR/codex\"; \
         cat \"$HOME/.claude/.credentials.json\" > \"$TMPDIR/direct\" 2>/dev/null; \
         echo x > \"$HOME/.claude/planted\" 2>/dev/null",
        "Logged in",
    );
    if !sandbox_usable(&r) {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    for (dir, file, text) in [
        (".claude", ".credentials.json", "claude-login"),
        (".codex", "auth.json", "codex-login"),
    ] {
        std::fs::create_dir_all(home.path().join(dir)).unwrap();
        std::fs::write(home.path().join(dir).join(file), text).unwrap();
    }
    let out = r
        .cmd(&["run", "--output", "json", "--max-passes", "3"])
        .env("HOME", home.path())
        .output()
        .unwrap();
    common::no_panic(&out);
    let runs = r.state().join("runs");
    let read = |name: &str| dispatch_file(&r, &bead, &format!("tmp/{name}"));
    assert_eq!(read("claude"), "claude-login");
    assert_eq!(read("codex"), "codex-login");
    assert_eq!(read("direct"), "", "$HOME itself is not readable");
    assert!(
        !home.path().join(".claude/planted").exists(),
        "$HOME is not writable"
    );
    let seeded = runs.join("agent-home/claude/.credentials.json");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&seeded).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the copy is the user's alone");
    assert_eq!(r.bead(&bead)["pipeline"]["proposal"]["artifact"], "HEAD");
}

/// A git configuration the environment names outside `$HOME` (`GIT_CONFIG_GLOBAL`, as the
/// tests' own harness and CI machines set it) is readable inside: git in a dispatch reads it
/// instead of failing on a file it was told to read and cannot.
#[test]
fn a_git_config_the_environment_names_is_read_inside_the_sandbox() {
    let (r, bead) = one_step(
        "git config --global --get user.name > \"$TMPDIR/name\" 2> \"$TMPDIR/err\"",
        "Git config",
    );
    if !sandbox_usable(&r) {
        return;
    }
    let config = tempfile::tempdir().unwrap();
    let file = config.path().join("gitconfig");
    std::fs::write(&file, "[user]\n\tname = Configured Elsewhere\n").unwrap();
    let out = r
        .cmd(&["run", "--output", "json", "--max-passes", "3"])
        .env("GIT_CONFIG_GLOBAL", &file)
        .output()
        .unwrap();
    common::no_panic(&out);
    let read = |name: &str| dispatch_file(&r, &bead, &format!("tmp/{name}"));
    assert_eq!(
        read("name").trim(),
        "Configured Elsewhere",
        "{}",
        read("err")
    );
    assert_eq!(r.bead(&bead)["pipeline"]["proposal"]["artifact"], "HEAD");
}

/// `plan crystallize`'s design agent and critic run sandboxed: the designer writes its plan to
/// `$SPLICE_PLAN_FILE` (its scratch directory) and reads the notes, but cannot write the
/// repository or `.splice/`; the critic reads the plan and cannot write either.
#[test]
fn the_design_agent_and_the_critic_run_sandboxed() {
    let r = Repo::new();
    r.task("Anchor", &[]);
    if !sandbox_usable(&r) {
        return;
    }
    let plan = serde_json::json!({
        "schema_version": 1,
        "title": "Greeter",
        "scenarios": [{"id": "S1", "title": "greets"}],
        "suite_cmd": "true",
        "test_paths": ["tests"],
        "tasks": [{"id": "hello", "title": "Hello", "scenarios": ["S1"]}]
    });
    r.write("good.json", &serde_json::to_string(&plan).unwrap());
    r.write("notes.md", "# Greeter\n");
    let dir = r.path().display().to_string();
    let designer = format!(
        "cp {dir}/good.json \"$SPLICE_PLAN_FILE\"; echo x > {dir}/designer-wrote; \
         echo x >> {dir}/.splice/journal.jsonl; cat \"$SPLICE_NOTES\" > /dev/null || exit 3"
    );
    let critic = format!(
        "echo x > {dir}/critic-wrote; test -f \"$0\" && \
         echo '{{\"verdict\": \"PASS\", \"findings\": []}}'"
    );
    r.write(
        ".splice/config.toml",
        &format!("[plan]\ndesigner = [\"sh\", \"-c\", {designer:?}]\ncritic = [\"sh\", \"-c\", {critic:?}]\n"),
    );
    let journal = r.journal();
    let out = r.run(&[
        "plan",
        "crystallize",
        "notes.md",
        "-o",
        "out.plan.json",
        "--json",
    ]);
    common::no_panic(&out);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(r.path().join("out.plan.json").exists());
    assert!(
        !r.path().join("designer-wrote").exists(),
        "the designer wrote the checkout"
    );
    assert!(
        !r.path().join("critic-wrote").exists(),
        "the critic wrote the checkout"
    );
    assert_eq!(r.journal(), journal, "the designer wrote the journal");
}

/// An agent that points its worktree's `.git` at the repository's own `.git` cannot make the
/// next attempt's reset (resume `redo`) move `main` or clean the main checkout: after a dispatch
/// the runner points `.git` back at the admin data it made, and opens the checkout only through
/// that; the agent's commit (made before) is imported, and the reset undoes it on its branch.
#[test]
fn a_redirected_worktree_git_file_never_resets_the_main_checkout() {
    let r = Repo::new();
    let script = "if [ \"$SPLICE_ATTEMPT\" = 1 ]; then \
        common=$(cd \"$(git rev-parse --git-common-dir)\" && pwd); \
        git -c user.name=a -c user.email=a@b commit -q --allow-empty -m agent; \
        printf 'gitdir: %s\\n' \"$common\" > .git; exit 1; fi; exit 1";
    let manifest = serde_json::json!({
        "routes": { "root": ["plan", "delegate"], "compound": ["plan", "delegate"], "leaf": ["work"] },
        "steps": [
            { "name": "plan", "role": "split", "floors": [] },
            { "name": "delegate", "floors": [ { "kind": "children_finished" } ] },
            { "name": "work", "run": { "argv": ["sh", "-c", script] }, "floors": [],
              "timeout_s": 60, "max_attempts": 2, "resume": "redo" }
        ]
    });
    r.write(
        ".splice/manifest.json",
        &serde_json::to_string_pretty(&manifest).unwrap(),
    );
    r.write(".splice/config.toml", "[limits]\nbackoff_s = 0\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "state"]);
    let bead = r.task("Redirect", &[]);
    if !sandbox_usable(&r) {
        return;
    }
    r.write("keep.txt", "a person's uncommitted file\n");
    let main_before = r.git(&["rev-parse", "main"]);
    let out = r.run(&["run", "--output", "json", "--max-passes", "8"]);
    common::no_panic(&out);
    assert_eq!(r.git(&["rev-parse", "main"]), main_before, "main moved");
    assert!(
        r.path().join("keep.txt").exists(),
        "the main checkout was cleaned"
    );
    assert_eq!(
        std::fs::read_to_string(r.path().join("README.md")).unwrap(),
        "test repo\n"
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The worktree's `.git` names the admin directory splice made again.
    let wt = r.state().join("worktrees").join(&bead);
    let dot_git = std::fs::read_to_string(wt.join(".git")).unwrap();
    assert!(
        dot_git
            .trim_end()
            .ends_with(&format!(".git/worktrees/{bead}")),
        "{dot_git}"
    );
    // Both attempts ran and failed; the second was reset to the step's base first.
    let b = r.bead(&bead);
    let parked = b["pipeline"]["dead_letter"]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(!parked.is_empty(), "{b:#}");
    assert_eq!(
        r.git(&["rev-parse", &format!("splice/{bead}")]),
        main_before
    );
    let reflog = r.git(&["reflog", "--format=%gs", &format!("splice/{bead}")]);
    assert!(reflog.contains("dispatch committed"), "{reflog}");
}

/// Through the inbox an agent acts on its own bead alone: a proposal naming another bead is
/// refused (exit 1, the reason on stderr), a malformed request is a fault (exit 2), and its own
/// proposal is applied with the local verb's output.
#[test]
fn the_inbox_answers_for_the_dispatch_s_own_bead_only() {
    let r = Repo::new();
    let other = r.task("Other", &[]);
    let script = format!(
        "splice transition propose --bead {other} --step work --artifact stolen \
           > \"$TMPDIR/other.out\" 2>&1; echo \"other $?\" >> \"$TMPDIR/results\"; \
         printf '{{\"v\": 1, \"verb\": \"approve\"}}' > \"$SPLICE_INBOX/x.request.json\"; \
         splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact HEAD \
           > \"$TMPDIR/own.out\" 2>&1; echo \"own $?\" >> \"$TMPDIR/results\""
    );
    r.write(
        ".splice/manifest.json",
        &common::work_step_manifest(
            serde_json::json!(["sh", "-c", script]),
            serde_json::json!([]),
            60,
            1,
        ),
    );
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "state"]);
    let bead = r.task("Own", &[]);
    if !sandbox_usable(&r) {
        return;
    }
    let before_other = r.bead(&other);
    let out = r.run(&[
        "run",
        "--output",
        "json",
        "--max-passes",
        "3",
        "--scope",
        &bead,
    ]);
    common::no_panic(&out);
    let got = results(&r, &bead, "results");
    assert_eq!(got.get("other"), Some(&1), "{got:?}");
    assert_eq!(got.get("own"), Some(&0), "{got:?}");
    assert_eq!(r.bead(&other)["pipeline"], before_other["pipeline"]);
    assert_eq!(r.bead(&bead)["pipeline"]["proposal"]["artifact"], "HEAD");
    let said = dispatch_file(&r, &bead, "tmp/own.out");
    let own: Value = serde_json::from_str(&said).expect("propose's JSON output");
    assert_eq!(own["artifact"], "HEAD", "{said}");
    let answer = dispatch_file(&r, &bead, "inbox/x.answer.json");
    assert!(!answer.is_empty(), "the malformed request was answered");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["code"], 2, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("not a request"),
        "{answer}"
    );
}

/// A real agent's work goes on inside: it builds and tests a Rust crate in its worktree with
/// `cargo` (its target directory there, cargo's home the one splice owns), commits on its
/// branch, and proposes; the commit is imported onto `splice/<bead>`.
#[test]
fn an_agent_builds_and_tests_a_rust_crate_commits_and_proposes() {
    let r = Repo::new();
    r.write(
        "Cargo.toml",
        "[package]\nname = \"inside\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    r.write(
        "src/lib.rs",
        "pub fn two() -> u32 { 2 }\n#[cfg(test)]\nmod tests { #[test] fn two() { assert_eq!(super::two(), 2); } }\n",
    );
    r.write(".gitignore", "target/\n");
    let script = "cargo test --offline -q > \"$TMPDIR/cargo.out\" 2>&1; \
        echo \"cargo $?\" >> \"$TMPDIR/results\"; \
        echo 'pub fn three() -> u32 { 3 }' >> src/lib.rs; \
        git add src/lib.rs && git -c user.name=a -c user.email=a@b commit -qm three; \
        echo \"commit $?\" >> \"$TMPDIR/results\"; \
        splice transition propose --bead \"$SPLICE_BEAD\" --step work --artifact HEAD >/dev/null; \
        echo \"propose $?\" >> \"$TMPDIR/results\"";
    r.write(
        ".splice/manifest.json",
        &common::work_step_manifest(
            serde_json::json!(["sh", "-c", script]),
            serde_json::json!([]),
            300,
            1,
        ),
    );
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "crate"]);
    let bead = r.task("Build", &[]);
    if !sandbox_usable(&r) {
        return;
    }
    // The toolchain is the one running these tests, under the real `$HOME` (rustup's).
    let mut cmd = r.cmd(&["run", "--output", "json", "--max-passes", "4"]);
    if let Some(home) = std::env::var_os("HOME") {
        cmd.env("HOME", home);
    }
    let out = cmd.output().unwrap();
    common::no_panic(&out);
    let got = results(&r, &bead, "results");
    let said = dispatch_file(&r, &bead, "tmp/cargo.out");
    assert_eq!(got.get("cargo"), Some(&0), "{said}");
    assert_eq!(got.get("commit"), Some(&0), "{got:?}");
    assert_eq!(got.get("propose"), Some(&0), "{got:?}");
    let branch = r.git(&["log", "--format=%s", "-1", &format!("splice/{bead}")]);
    assert_eq!(branch, "three", "the agent's commit is on its branch");
    assert!(r.state().join("runs/agent-home/cargo").is_dir());
}
