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
    let r = Repo::new();
    r.task("Notes", &[]);
    recording_agent(
        &r,
        ", \"--model={{model}}\"",
        "model = \"small\"\n\n[agent.steps.generate-spec]\nmodel = \"big\"\n",
    );
    r.ok(&["run", "--json", "--max-passes", "2"]);
    assert_eq!(recorded(&r), vec!["x", "--model=big"]);

    // Without the step's own model, `[agent] model` is the one.
    recording_agent(&r, ", \"--model={{model}}\"", "model = \"small\"\n");
    std::fs::remove_file(r.path().join("args.txt")).unwrap();
    r.ok(&["run", "--json", "--max-passes", "2"]);
    assert_eq!(recorded(&r), vec!["x", "--model=small"]);
}

#[test]
fn a_model_the_command_would_not_use_is_refused_at_load_by_key() {
    let r = Repo::new();
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
