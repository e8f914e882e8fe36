//! The agent command as configured: `{{model}}` from `[agent.steps.<step>] model` (issue 10,
//! item 15), and the check that every command a run may start can be found before anything is
//! claimed (item 6).

mod common;

use common::Repo;

/// An agent that writes its arguments but the last (the prompt) to `args.txt`, one per line,
/// and does nothing else; its command is `agent.sh x` and `extra` more arguments.
fn recording_agent(r: &Repo, extra: &str, config: &str) {
    let script = r.path().join("agent.sh");
    std::fs::write(
        &script,
        format!(
            "n=$#; i=1; for a; do [ $i -lt $n ] && echo \"$a\"; i=$((i+1)); done > {}\n",
            r.path().join("args.txt").display()
        ),
    )
    .unwrap();
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"sh\", \"{}\", \"x\"{extra}]\n{config}",
            script.display()
        ),
    );
}

fn recorded(r: &Repo) -> Vec<String> {
    std::fs::read_to_string(r.path().join("args.txt"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_steps_model_reaches_the_command_as_its_model_variable() {
    let r = Repo::unconfined();
    r.task("Notes", &[]);
    recording_agent(
        &r,
        ", \"--model={{model}}\"",
        "model = \"small\"\n\n[agent.steps.generate-spec]\nmodel = \"big\"\n",
    );
    r.ok(&["run", "--json", "--max-passes", "2"]);
    assert_eq!(recorded(&r), vec!["x", "--model=big"]);

    // Without the step's own model, `[agent] model` is the one.
    recording_agent(
        &r,
        ", \"--model={{model}}\"",
        "model = \"small\"\n\n[limits]\nbackoff_s = 0\n",
    );
    std::fs::remove_file(r.path().join("args.txt")).unwrap();
    r.ok(&["run", "--json", "--max-passes", "2"]);
    assert_eq!(recorded(&r), vec!["x", "--model=small"]);
}

#[test]
fn a_model_the_command_would_not_use_is_refused_at_load_by_key() {
    let r = Repo::unconfined();
    r.task("Notes", &[]);
    recording_agent(&r, "", "\n[agent.steps.review]\nmodel = \"big\"\n");
    let err = r.fails(2, &["run", "--json"]);
    assert!(
        err.contains("[agent.steps.review] model") && err.contains("{{model}}"),
        "{err}"
    );
    recording_agent(&r, ", \"{{model}}\"", "");
    let err = r.fails(2, &["run", "--json"]);
    assert!(
        err.contains("[agent] command") && err.contains("[agent] model"),
        "{err}"
    );
}

#[test]
fn a_run_whose_agent_cannot_be_found_stops_before_anything_is_written() {
    let r = Repo::unconfined();
    r.task("Notes", &[]);
    let before = r.beads_bytes();
    let journal = r.journal();
    let fails = |r: &Repo| {
        let out = r
            .cmd(&["run", "--json"])
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap();
        common::no_panic(&out);
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // The default agent, Claude Code, is not installed here.
    let err = fails(&r);
    assert!(
        err.contains("`claude`") && err.contains("[agent] command"),
        "{err}"
    );
    assert_eq!(r.beads_bytes(), before, "nothing was claimed or checked");
    assert_eq!(r.journal(), journal);
    // A step's own command is named by its key.
    r.write(
        ".splice/config.toml",
        "[agent]\ncommand = [\"sh\"]\n\n[agent.steps.review]\ncommand = [\"no-such-reviewer\"]\n",
    );
    let err = fails(&r);
    assert!(
        err.contains("`no-such-reviewer`") && err.contains("[agent.steps.review] command"),
        "{err}"
    );
    // An argv step of the manifest by its place in the manifest; a path must be executable.
    r.write(".splice/config.toml", "");
    let tool = r.path().join("tool.sh");
    std::fs::write(&tool, "echo not executable\n").unwrap();
    r.write(
        ".splice/manifest.json",
        &format!(
            r#"{{ "routes": {{ "root": ["plan"], "compound": ["plan"], "leaf": ["work"] }},
                 "steps": [ {{ "name": "plan", "role": "split", "floors": [] }},
                            {{ "name": "work", "run": {{ "argv": ["{}", "x"] }} }} ] }}"#,
            tool.display()
        ),
    );
    let err = fails(&r);
    assert!(
        err.contains(&format!("`{}`, which is not executable", tool.display()))
            && err.contains(".splice/manifest.json steps[1].run.argv"),
        "{err}"
    );
    assert_eq!(r.beads_bytes(), before);
    // A dry run starts nothing, so it checks nothing.
    r.ok(&["pass", "--dry-run"]);
}
