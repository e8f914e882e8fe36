//! Issue 12, section 2: request tiers. The classifier's table over the default rules (whole
//! words, length bounds, first match wins), `splice classify`, and `init-task --tier`: `auto`
//! records the tier and the deciding rule and changes nothing else; a named tier starts the task
//! on that tier's route; an unknown tier is refused with the state unchanged.

mod common;

use common::Repo;
use serde_json::Value;
use splice::model::{Manifest, Tier};
use splice::policy::tier::classify;

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

/// (request, expected tier, expected deciding rule)
const TABLE: &[(&str, Tier, &str)] = &[
    (
        "Fix the typo in the README",
        Tier::Trivial,
        "short-trivial-edit",
    ),
    ("FIX THE TYPO", Tier::Trivial, "short-trivial-edit"),
    (
        "Rename the config loader",
        Tier::Trivial,
        "short-trivial-edit",
    ),
    ("Format the CLI module", Tier::Trivial, "short-trivial-edit"),
    (
        "Reformat the table renderer",
        Tier::Trivial,
        "short-trivial-edit",
    ),
    (
        "Add a comment to parse()",
        Tier::Trivial,
        "short-trivial-edit",
    ),
    (
        "Fix spelling in the docs",
        Tier::Trivial,
        "short-trivial-edit",
    ),
    // Rule 1 comes first: a short typo fix in distributed code is still trivial.
    (
        "Fix the typo in the distributed lock docs",
        Tier::Trivial,
        "short-trivial-edit",
    ),
    // Whole words: none of these holds a keyword, though each holds one as a substring.
    (
        "Credit the author in the footer",
        Tier::Light,
        "otherwise-light",
    ),
    (
        "Show more information on errors",
        Tier::Light,
        "otherwise-light",
    ),
    ("Add a commentary section", Tier::Light, "otherwise-light"),
    (
        "Migrate the formatter to the new API",
        Tier::Light,
        "otherwise-light",
    ),
    ("Add a platformer level", Tier::Light, "otherwise-light"),
    (
        "Make the orchestration faster",
        Tier::Light,
        "otherwise-light",
    ),
    ("Add a --verbose flag", Tier::Light, "otherwise-light"),
    (
        "Fix auth for the login page",
        Tier::Substantial,
        "substantial-word",
    ),
    ("Add OAuth login", Tier::Substantial, "substantial-word"),
    (
        "Add an authorization check to exports",
        Tier::Substantial,
        "substantial-word",
    ),
    (
        "Add a database index for users",
        Tier::Substantial,
        "substantial-word",
    ),
    (
        "Write the migration for the users table",
        Tier::Substantial,
        "substantial-word",
    ),
    (
        "Harden security headers",
        Tier::Substantial,
        "substantial-word",
    ),
    (
        "Design a distributed job queue",
        Tier::Architectural,
        "architectural-word",
    ),
    (
        "Split into a multi-service backend",
        Tier::Architectural,
        "architectural-word",
    ),
    (
        "Split into a multi service backend",
        Tier::Architectural,
        "architectural-word",
    ),
    (
        "Replace the storage\n\n  layer",
        Tier::Architectural,
        "architectural-word",
    ),
    (
        "Write the system design for sync",
        Tier::Architectural,
        "architectural-word",
    ),
    (
        "Move payments to a new platform",
        Tier::Architectural,
        "architectural-word",
    ),
];

fn tier_and_rule(request: &str) -> (Tier, String, usize) {
    let tiers = Manifest::default_manifest().tiers();
    let c = classify(request, &tiers).expect("the default rules end with a final rule");
    (c.tier, c.rule_name, c.rule)
}

#[test]
fn the_default_rules_classify_the_table() {
    assert!(TABLE.len() >= 20);
    for (request, tier, rule) in TABLE {
        let (got, name, _) = tier_and_rule(request);
        assert_eq!((got, name.as_str()), (*tier, *rule), "{request:?}");
    }
}

#[test]
fn length_bounds_count_code_points_with_whitespace_collapsed() {
    // "fix typo " is 9 characters; pad with words that are no keyword.
    let sized = |n: usize| {
        let mut s = "fix typo".to_string();
        while s.chars().count() < n {
            s.push_str(" é");
        }
        s.chars().take(n).collect::<String>()
    };
    assert_eq!(tier_and_rule(&sized(119)).0, Tier::Trivial);
    assert_eq!(tier_and_rule(&sized(120)).1, "otherwise-light");
    // Whitespace runs count once, so a padded short request stays short.
    let padded = format!("fix  typo{}done", " \n\t".repeat(200));
    assert_eq!(tier_and_rule(&padded).0, Tier::Trivial);
    let long = |n: usize| {
        "word "
            .repeat(n / 5 + 1)
            .chars()
            .take(n)
            .collect::<String>()
    };
    assert_eq!(tier_and_rule(&long(900)).1, "otherwise-light");
    let (tier, rule, index) = tier_and_rule(&long(901));
    assert_eq!(
        (tier, rule.as_str(), index),
        (Tier::Substantial, "long-request", 4)
    );
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn classify_prints_the_tier_and_the_deciding_rule_as_text_and_json() {
    let r = Repo::new();
    let out = r.run(&["classify", "Fix the typo in the README"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        "trivial\nrule 1 \"short-trivial-edit\": the request has the word \"typo\" and 26 \
         characters, at most 119\nroute: trivial\n"
    );
    let v = r.ok(&["classify", "--json", "Credit the author"]);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["tier"], "light");
    assert_eq!(v["rule"], 5);
    assert_eq!(v["rule_name"], "otherwise-light");
    assert_eq!(v["rationale"], "no earlier rule matched");
    assert_eq!(v["route"], "light");
    assert!(!r.state().exists(), "classify writes nothing");
}

#[test]
fn classify_reads_the_repositorys_manifest_and_refuses_a_bad_one() {
    let r = Repo::new();
    r.task("Seed", &[]);
    let manifest = splice::model::manifest::DEFAULT_MANIFEST.replace(
        "\"name\": \"short-trivial-edit\",",
        "\"name\": \"docs-only\", \"tier\": \"trivial\", \"words\": [\"readme\"] }, {\n        \
         \"name\": \"short-trivial-edit\",",
    );
    r.write(".splice/manifest.json", &manifest);
    let v = r.ok(&["classify", "--json", "Update the README"]);
    assert_eq!(
        (v["tier"].as_str(), v["rule"].as_u64()),
        (Some("trivial"), Some(1))
    );
    assert_eq!(v["rule_name"], "docs-only");
    let bad = manifest.replace(
        "\"tier\": \"trivial\", \"words\"",
        "\"tier\": \"tiny\", \"words\"",
    );
    r.write(".splice/manifest.json", &bad);
    let err = r.fails(2, &["classify", "Update the README"]);
    assert!(
        err.contains("manifest.json") && err.contains("tiers.classify[0].tier"),
        "{err}"
    );
}

#[test]
fn init_task_auto_records_the_tier_and_rule_and_keeps_the_leaf_route() {
    let r = Repo::new();
    let created = r.ok(&[
        "init-task",
        "--title",
        "Fix the typo",
        "--description",
        "In the README.",
    ]);
    assert_eq!(created["tier"], "trivial");
    assert_eq!(created["tier_rule"]["name"], "short-trivial-edit");
    let id = created["id"].as_str().unwrap();
    let b = r.bead(id);
    let p = &b["pipeline"];
    assert_eq!(
        (p["route"].as_str(), p["step"].as_str()),
        (Some("leaf"), Some("generate-spec"))
    );
    assert_eq!(p["kind"], "leaf");
    assert_eq!(p["tier"], "trivial");
    assert_eq!(p["tier_rule"]["index"], 1);
    assert_eq!(p["tier_rule"]["name"], "short-trivial-edit");
    assert!(
        r.journal().contains("tier trivial, route leaf; rule 1"),
        "{}",
        r.journal()
    );
    // The description counts: an architectural word there decides.
    let id = r.task("Queue", &["--description", "A distributed job queue."]);
    assert_eq!(r.bead(&id)["pipeline"]["tier"], "architectural");
    assert_eq!(
        r.bead(&id)["pipeline"]["route"],
        "leaf",
        "auto never moves the route"
    );
}

#[test]
fn a_named_tier_starts_on_its_route_at_its_entry() {
    let r = Repo::new();
    let created = r.ok(&["init-task", "--title", "Tiny", "--tier", "trivial"]);
    assert_eq!(created["step"], "implement");
    assert_eq!(
        created["not_applicable"],
        serde_json::json!(["generate-spec", "generate-tests"])
    );
    let p = r.bead(created["id"].as_str().unwrap())["pipeline"].clone();
    assert_eq!(
        (p["route"].as_str(), p["kind"].as_str()),
        (Some("trivial"), Some("leaf"))
    );
    assert_eq!(p["tier"], "trivial");
    assert!(p.get("tier_rule").is_none(), "a person named the tier: {p}");
    assert!(r.journal().contains("not applicable: generate-spec"));
    let id = r.task("Std", &["--tier", "standard"]);
    let p = r.bead(&id)["pipeline"].clone();
    assert_eq!(
        (p["route"].as_str(), p["step"].as_str()),
        (Some("leaf"), Some("generate-spec"))
    );
    assert_eq!(p["tier"], "standard");
    // Light is the leaf route without the test generator.
    let id = r.task("Small", &["--tier", "light"]);
    let p = r.bead(&id)["pipeline"].clone();
    assert_eq!(
        (p["route"].as_str(), p["kind"].as_str(), p["step"].as_str()),
        (Some("light"), Some("leaf"), Some("generate-spec"))
    );
    let id = r.task("Big", &["--tier", "architectural"]);
    let p = r.bead(&id)["pipeline"].clone();
    assert_eq!(
        (p["route"].as_str(), p["kind"].as_str()),
        (Some("root"), Some("root"))
    );
    assert_eq!(p["step"], "create-prp", "the same start as `splice init`");
}

#[test]
fn an_unknown_tier_is_refused_naming_the_valid_ones_and_nothing_changes() {
    let fresh = Repo::new();
    let err = fresh.fails(2, &["init-task", "--title", "T", "--tier", "bogus"]);
    assert!(
        err.contains(
            "--tier \"bogus\": unknown tier (one of auto, trivial, light, standard, \
                      substantial, architectural)"
        ),
        "{err}"
    );
    assert!(!fresh.state().exists(), "nothing created");
    let r = Repo::new();
    r.task("Seed", &[]);
    let (beads, journal) = (r.beads_bytes(), r.journal());
    r.fails(2, &["init-task", "--title", "T", "--tier", "bogus"]);
    assert_eq!((r.beads_bytes(), r.journal()), (beads, journal));
}

#[test]
fn an_older_beads_auto_tier_reads_as_none_and_an_unknown_tier_is_an_error() {
    let r = Repo::new();
    let id = r.task("Old", &["--tier", "light"]);
    let path = r.state().join("beads").join(format!("{id}.json"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("\"tier\": \"light\"", "\"tier\": \"auto\""),
    )
    .unwrap();
    let shown = r.ok(&["transition", "show", &id]);
    assert!(shown["pipeline"].get("tier").is_none(), "{shown}");
    std::fs::write(
        &path,
        text.replace("\"tier\": \"light\"", "\"tier\": \"huge\""),
    )
    .unwrap();
    let err = r.fails(2, &["transition", "show", &id]);
    assert!(err.contains("unknown tier \"huge\""), "{err}");
}

/// The sim agent as the agent, direct delivery.
fn use_sim_agent(r: &Repo) {
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"{SPLICE}\", \"sim-agent\"]\nusage = \"file\"\n\n\
             [delivery]\nmethod = \"direct\"\n"
        ),
    );
}

#[test]
fn a_trivial_task_runs_implement_review_deliver_to_done() {
    let r = Repo::new();
    // `dev`: landing on `main` would wait for a person's approval (issue 33).
    r.git(&["checkout", "-q", "-b", "dev"]);
    let id = r.task("Tiny note", &["--tier", "trivial", "--autonomy", "wave"]);
    use_sim_agent(&r);
    let env: Value = r.ok(&["run", "--output", "json"]);
    assert_eq!(env["status"], "done", "{env:#}");
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed");
    assert_eq!(b["pipeline"]["step"], "deliver");
    let attempts = b["pipeline"]["attempts"].as_object().unwrap();
    assert!(!attempts.contains_key("generate-spec"), "{attempts:?}");
    assert!(r.git(&["log", "--format=%s", "dev"]).contains("implement"));
}
