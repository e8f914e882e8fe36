//! Issue 10, item 3: a lone task can pass its spec step. `init-task --scenarios` gives it
//! scenarios to own; a task that owns none is asked to define and name them, and the ids its
//! spec defines are recorded on it when the spec passes.

mod common;

use common::Repo;

/// A spec for `id` at the repository's HEAD whose body is `scenarios`.
fn spec(r: &Repo, id: &str, scenarios: &str) -> String {
    let head = r.git(&["rev-parse", "HEAD"]);
    format!(
        "---\nbead: {id}\nbase_commit: {head}\nfiles:\n  - notes/{id}.md\nverdict: leaf\n---\n\
         # The notes\n\n```gherkin\n{scenarios}```\n"
    )
}

/// A person writes the spec in the main checkout, proposes it, and has it checked.
#[must_use]
fn propose_and_check(r: &Repo, id: &str, text: &str) -> std::process::Output {
    r.write(&format!("specs/{id}.md"), text);
    let artifact = format!("specs/{id}.md");
    r.ok(&[
        "transition",
        "propose",
        "--bead",
        id,
        "--step",
        "generate-spec",
        "--artifact",
        &artifact,
    ]);
    r.run(&[
        "transition",
        "complete",
        "--bead",
        id,
        "--step",
        "generate-spec",
    ])
}

#[test]
fn init_task_takes_the_scenarios_it_owns_as_init_does() {
    let r = Repo::new();
    let id = r.task("Owned", &["--scenarios", "S1, S2"]);
    assert_eq!(
        r.bead(&id)["pipeline"]["scenarios"],
        serde_json::json!(["S1", "S2"])
    );
    let err = r.fails(2, &["init-task", "--title", "Bad", "--scenarios", "S1,s1"]);
    assert!(err.contains("scenario id s1 is given twice"), "{err}");
}

#[test]
fn an_empty_scenario_id_is_refused_and_nothing_is_written() {
    // `--scenarios ",,"` made a task owning none, as if the flag were not given.
    let r = Repo::new();
    for list in [",,", "S1,,S2", "S1,", " , S1"] {
        for verb in ["init-task", "init"] {
            let err = r.fails(2, &[verb, "--title", "T", "--scenarios", list]);
            assert!(
                err.contains("--scenarios") && err.contains("is empty"),
                "{verb} {list:?}: {err}"
            );
        }
    }
    assert!(!r.state().exists(), "nothing written: no .splice/ made");
    r.task("First", &[]);
    let before = r.beads_bytes();
    let journal = r.journal();
    r.fails(2, &["init-task", "--title", "T", "--scenarios", ",,"]);
    assert_eq!(r.beads_bytes(), before);
    assert_eq!(r.journal(), journal);
}

#[test]
fn a_task_owning_no_scenario_records_the_ids_its_spec_defines() {
    let r = Repo::new();
    let id = r.task("Notes", &[]);
    let out = propose_and_check(
        &r,
        &id,
        &spec(
            &r,
            &id,
            "Scenario: S1 the note exists\n  Then it is there\n@S2\nScenario: it is short\n",
        ),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["scenarios"], serde_json::json!(["S1", "S2"]));
    assert_eq!(b["pipeline"]["gate"]["state"], "pending");
}

#[test]
fn a_task_owning_no_scenario_must_name_each_one_its_spec_defines() {
    let r = Repo::new();
    let id = r.task("Notes", &[]);
    let out = propose_and_check(&r, &id, &spec(&r, &id, "Scenario: the note exists\n"));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("without an id"), "{err}");
    let scenarios = &r.bead(&id)["pipeline"]["scenarios"];
    assert!(
        scenarios.as_array().is_none_or(Vec::is_empty),
        "nothing recorded: {scenarios}"
    );
}

#[test]
fn a_task_owning_scenarios_keeps_them_whatever_its_spec_names() {
    let r = Repo::new();
    let id = r.task("Notes", &["--scenarios", "S1"]);
    let out = propose_and_check(&r, &id, &spec(&r, &id, "Scenario: S1 the note exists\n"));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        r.bead(&id)["pipeline"]["scenarios"],
        serde_json::json!(["S1"])
    );
}

#[test]
fn the_spec_prompt_of_a_task_owning_no_scenario_asks_to_define_and_name_them() {
    let r = Repo::unconfined();
    let none = r.task("Notes", &[]);
    let owned = r.task("Owned notes", &["--scenarios", "S1,S2"]);
    let prompts = r.path().join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    // The agent keeps its prompt (the last argument) and does nothing else.
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"sh\", \"-c\", \"printf '%s' \\\"$1\\\" > {}/$SPLICE_BEAD.txt\", \
             \"agent\"]\n",
            prompts.display()
        ),
    );
    r.ok(&["run", "--json", "--max-passes", "2", "--jobs", "2"]);
    let read = |id: &str| std::fs::read_to_string(prompts.join(format!("{id}.txt"))).unwrap();
    let text = read(&none);
    assert!(
        text.contains("Scenarios this task owns: none yet"),
        "the prompt says there are none: {text}"
    );
    assert!(
        text.contains("define") && text.contains("`Scenario: S1"),
        "and asks to define and name them: {text}"
    );
    let text = read(&owned);
    assert!(
        text.contains("Scenarios this task owns: S1, S2\n"),
        "{text}"
    );
}
