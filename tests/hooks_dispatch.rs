//! Dispatched Claude Code agents are guarded by default (issue 11): a command whose program is
//! named `claude` is started with `--settings FILE` right after the program, `FILE` registering
//! `<this splice> guard` for the writing tools; `[guard] dispatch = false` switches it off, and
//! any other agent's argv is left as it is. A fake `claude` records what it was given, then does
//! the step's work and proposes (the simulated agent).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::Repo;
use serde_json::{Value, json};

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

/// An agent named `name` in `dir` that writes its arguments, one per line, to `args.txt` and a
/// copy of the file after `--settings` to `settings.json` (both in the repository), then
/// proposes through the simulated agent.
fn fake_agent(r: &Repo, dir: &Path, name: &str) -> String {
    let out = r.path();
    let script = format!(
        "#!/bin/sh\n\
         : > {out}/args.txt\n\
         next=\n\
         for a; do\n\
         \x20   printf '%s\\n' \"$a\" >> {out}/args.txt\n\
         \x20   [ \"$next\" = 1 ] && cp \"$a\" {out}/settings.json\n\
         \x20   [ \"$a\" = --settings ] && next=1 || next=\n\
         done\n\
         exec \"{SPLICE}\" sim-agent\n",
        out = out.display()
    );
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn args(r: &Repo) -> Vec<String> {
    std::fs::read_to_string(r.path().join("args.txt"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn config(r: &Repo, command: &str, extra: &str) {
    r.write(
        ".splice/config.toml",
        &format!("[agent]\ncommand = [\"{command}\", \"-p\"]\nusage = \"file\"\n{extra}"),
    );
}

/// Run until the lone task rests at its first gate: one dispatch of generate-spec, proposed.
fn run_one_dispatch(r: &Repo) {
    let env = r.ok(&["run", "--output", "json"]);
    assert_eq!(env["status"], "suspended-human", "{env}");
}

#[test]
fn a_claude_agent_is_started_with_settings_that_register_this_splices_guard() {
    let r = Repo::unconfined();
    let id = r.task("Notes", &[]);
    let bin = tempfile::tempdir().unwrap();
    let claude = fake_agent(&r, bin.path(), "claude");
    config(&r, &claude, "");
    run_one_dispatch(&r);

    let argv = args(&r);
    assert_eq!(argv[0], "--settings", "right after the program: {argv:?}");
    assert_eq!(argv[2], "-p");
    let file = Path::new(&argv[1]);
    assert!(file.is_absolute(), "{argv:?}");
    assert!(
        file.starts_with(r.state().canonicalize().unwrap().join("runs")),
        "beside the dispatch's other files: {}",
        file.display()
    );
    assert_eq!(
        file.file_name().unwrap().to_string_lossy(),
        format!("{id}-generate-spec-1.settings.json")
    );
    let settings: Value =
        serde_json::from_slice(&std::fs::read(r.path().join("settings.json")).unwrap()).unwrap();
    assert_eq!(
        settings,
        json!({"hooks": {"PreToolUse": [{
            "matcher": "Write|Edit|NotebookEdit|Bash|EnterWorktree",
            "hooks": [{"type": "command", "command": format!("{SPLICE} guard")}]
        }]}})
    );
    // The agent did its step and proposed: the guard's settings changed nothing else.
    assert_eq!(r.bead(&id)["pipeline"]["step"], "generate-spec");
    assert_eq!(r.bead(&id)["pipeline"]["gate"]["state"], "pending");
}

#[test]
fn switched_off_or_another_agent_the_argv_is_left_as_it_is() {
    let r = Repo::unconfined();
    r.task("Notes", &[]);
    let bin = tempfile::tempdir().unwrap();
    let claude = fake_agent(&r, bin.path(), "claude");
    config(&r, &claude, "\n[guard]\ndispatch = false\n");
    run_one_dispatch(&r);
    let argv = args(&r);
    assert_eq!(argv[0], "-p", "{argv:?}");
    assert!(!argv.iter().any(|a| a == "--settings"), "{argv:?}");

    let r = Repo::unconfined();
    r.task("Notes", &[]);
    let other = fake_agent(&r, bin.path(), "my-agent");
    config(&r, &other, "");
    run_one_dispatch(&r);
    let argv = args(&r);
    assert_eq!(argv[0], "-p", "{argv:?}");
    assert!(!argv.iter().any(|a| a == "--settings"), "{argv:?}");
}

#[test]
fn a_mistyped_guard_key_is_refused_at_load_naming_the_file_and_line() {
    let r = Repo::unconfined();
    r.task("Notes", &[]);
    r.write(".splice/config.toml", "[guard]\ndispatch = \"off\"\n");
    let err = r.fails(2, &["run", "--json"]);
    assert!(
        err.contains("config.toml") && err.contains("line 2"),
        "{err}"
    );
}
