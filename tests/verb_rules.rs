//! Every verb has an actor class, chosen once in the writer's table (issue 9, defect 11), and the
//! rules of issue 9, defect 14 that are about verbs: `split` only at the step that splits.

mod common;

use clap::CommandFactory;
use common::Repo;
use splice::transition::authority::{Actor, Verb};

/// Every verb and who may run it. A new verb (a `splice transition` subcommand, or a command
/// that creates beads or drives a runner) must be added here and to the writer's table
/// (`src/transition/authority.rs`) with a class chosen: `person`, `runner` (the runner or a
/// person, never an agent), `agent` (a dispatch on its own bead, the runner or a person) or
/// `read-only`.
const TABLE: &[(&str, &str)] = &[
    ("propose", "agent"),
    ("split", "agent"),
    ("resplit", "agent"),
    ("complete", "runner"),
    ("integrate", "runner"),
    ("deliver", "runner"),
    ("claim", "runner"),
    ("release", "runner"),
    ("park", "runner"),
    ("skip", "runner"),
    ("record-exit", "runner"),
    ("record-job", "runner"),
    ("adopt-job", "runner"),
    ("record-run", "runner"),
    ("route", "runner"),
    ("approve", "person"),
    ("reject", "person"),
    ("unpark", "person"),
    ("set-config", "person"),
    ("set-autonomy", "person"),
    ("set-target", "person"),
    ("release --clear", "person"),
    ("close", "person"),
    ("cancel", "person"),
    ("init", "person"),
    ("init-task", "person"),
    ("run", "person"),
    ("pass", "person"),
    ("pass --dry-run", "read-only"),
    ("show", "read-only"),
    ("step", "read-only"),
    ("kind", "read-only"),
    ("autonomy", "read-only"),
    ("target", "read-only"),
    ("delivery", "read-only"),
    ("manifest", "read-only"),
    ("hooks install", "person"),
    ("hooks status", "read-only"),
    ("hooks pre-commit", "read-only"),
    ("guard", "read-only"),
    ("sandbox exec", "read-only"),
    ("classify", "read-only"),
    ("exec", "person"),
    ("plan crystallize", "person"),
    ("plan critique", "person"),
    ("plan approve", "person"),
    ("design", "person"),
    ("design show", "read-only"),
    ("monitor", "read-only"),
    ("iterate", "runner"),
    ("loop-effect", "runner"),
    ("guide", "person"),
    ("set-acceptance", "person"),
    ("drive", "person"),
    ("import bd", "person"),
    ("export bd", "read-only"),
    ("start", "person"),
    ("completions", "read-only"),
    ("man", "read-only"),
    ("doctor", "read-only"),
    ("create", "person"),
    ("list", "read-only"),
    ("ready", "read-only"),
    ("logs", "read-only"),
    ("cache rebuild", "read-only"),
    ("update", "person"),
    ("reopen", "person"),
    ("label add", "person"),
    ("label rm", "person"),
    ("label list", "read-only"),
    ("dep add", "person"),
    ("dep rm", "person"),
    ("dep tree", "read-only"),
    ("sync bd", "person"),
];

/// Verbs of the table with no command line, and why: the runner calls them in-process.
const IN_PROCESS: &[(&str, &str)] = &[
    (
        "iterate",
        "records the runner's own measurement of an iteration it dispatched",
    ),
    (
        "loop-effect",
        "records what the runner did to carry out the pass monitor's decision",
    ),
];

/// Top-level commands that are not verbs of the table, and why.
const NOT_VERBS: &[(&str, &str)] = &[
    ("transition", "holds the verbs"),
    ("sandbox", "holds `sandbox exec`"),
    ("demo", "writes only the scratch repository it creates"),
    (
        "sim-agent",
        "the simulated agent: it changes state only through transition verbs",
    ),
    ("snapshot", "reads"),
    ("decide", "reads a file"),
    ("status", "reads"),
    (
        "hooks",
        "holds `hooks install`, `hooks status` and `hooks pre-commit`",
    ),
    (
        "plan",
        "holds `plan crystallize`, `plan critique` and `plan approve`",
    ),
    ("import", "holds `import bd`"),
    ("export", "holds `export bd`"),
    ("cache", "holds `cache rebuild`"),
    ("label", "holds `label add`, `label rm` and `label list`"),
    ("dep", "holds `dep add`, `dep rm` and `dep tree`"),
    ("sync", "holds `sync bd`"),
];

#[test]
fn every_verb_clap_knows_has_an_actor_class_in_the_writers_table() {
    let table: Vec<(String, String)> = Verb::ALL
        .iter()
        .map(|v| (v.name().to_string(), v.actor().name().to_string()))
        .collect();
    let expected: Vec<(String, String)> = TABLE
        .iter()
        .map(|(v, c)| (v.to_string(), c.to_string()))
        .collect();
    assert_eq!(table, expected, "the writer's table and this list disagree");

    let cli = splice::cli::Cli::command();
    let transition = cli.find_subcommand("transition").unwrap();
    for verb in transition.get_subcommands() {
        let name = verb.get_name();
        assert!(
            Verb::named(name).is_some(),
            "`splice transition {name}` has no actor class: add it to the writer's table"
        );
    }
    for command in cli.get_subcommands() {
        let name = command.get_name();
        assert!(
            Verb::named(name).is_some() || NOT_VERBS.iter().any(|(n, _)| *n == name),
            "`splice {name}` is neither a verb of the table nor listed as not one"
        );
    }
    let hooks = cli.find_subcommand("hooks").unwrap();
    for sub in hooks.get_subcommands() {
        let name = format!("hooks {}", sub.get_name());
        assert!(
            Verb::named(&name).is_some(),
            "`splice {name}` has no actor class: add it to the writer's table"
        );
    }
    // Every entry is a command or a mode (`--flag`) of one.
    for v in Verb::ALL {
        if IN_PROCESS.iter().any(|(n, _)| *n == v.name()) {
            assert!(
                transition.find_subcommand(v.name()).is_none(),
                "{} has a command line now: take it off IN_PROCESS",
                v.name()
            );
            continue;
        }
        let word = v.name().split(' ').next().unwrap();
        let known =
            cli.find_subcommand(word).is_some() || transition.find_subcommand(word).is_some();
        assert!(known, "{} names no command", v.name());
    }
    assert_eq!(Verb::Approve.actor(), Actor::Person);
}

#[test]
fn split_is_refused_at_a_step_that_does_not_split() {
    let r = Repo::new();
    let root = r.init(&["--scenarios", "S1"]);
    assert_eq!(r.bead(&root)["pipeline"]["step"], "create-prp");
    r.write("children.json", r#"[{"title": "A", "scenarios": ["S1"]}]"#);
    let split = [
        "transition",
        "split",
        "--bead",
        &root,
        "--children",
        "children.json",
    ];
    let before = r.beads_bytes();
    let err = r.fails(1, &split);
    assert!(
        err.contains(&format!(
            "bead {root} is at create-prp, which does not split; a node splits at to-issues"
        )),
        "{err}"
    );
    assert_eq!(r.beads_bytes(), before, "nothing was written");
    r.ok(&[
        "transition",
        "route",
        "--bead",
        &root,
        "--to",
        "root",
        "--at",
        "to-issues",
    ]);
    let out = r.ok(&split);
    assert_eq!(out["children"], serde_json::json!([format!("{root}.1")]));
}

#[test]
fn a_manifest_without_a_split_step_says_how_to_declare_one() {
    let r = Repo::new();
    let manifest = splice::model::manifest::DEFAULT_MANIFEST.replace("\"role\": \"split\",", "");
    r.write(".splice/manifest.json", &manifest);
    std::fs::create_dir_all(r.state().join("beads")).unwrap();
    let root = r.init(&[]);
    r.ok(&[
        "transition",
        "route",
        "--bead",
        &root,
        "--to",
        "root",
        "--at",
        "to-issues",
    ]);
    r.write("children.json", r#"[{"title": "A"}]"#);
    let err = r.fails(
        1,
        &[
            "transition",
            "split",
            "--bead",
            &root,
            "--children",
            "children.json",
        ],
    );
    assert!(err.contains("`\"role\": \"split\"`"), "{err}");
}
