//! Secrets never reach committed files: the shell redacts recognizable secrets (token and key
//! patterns, the values of environment variables named in `[security] redact_env`) in every
//! after-image and journal reason before anything is journaled; ids and the fields splice owns
//! stay intact.

mod common;

use common::Repo;

const GITHUB: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
const AWS: &str = "AKIAIOSFODNN7EXAMPLE";

fn committed_text(r: &Repo) -> String {
    let beads: Vec<String> = r
        .beads_bytes()
        .into_iter()
        .map(|(_, b)| String::from_utf8(b).unwrap())
        .collect();
    format!("{}\n{}", beads.join("\n"), r.journal())
}

#[test]
fn token_patterns_in_a_reason_or_agent_output_are_redacted_before_the_journal() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    r.ok(&[
        "transition",
        "propose",
        "--bead",
        &id,
        "--step",
        "generate-spec",
        "--artifact",
        "specs/x.md",
        "--result",
        &format!("leaf; I used the key {AWS} to test"),
    ]);
    r.ok(&[
        "transition",
        "park",
        "--bead",
        &id,
        "--reason",
        &format!("push failed: remote said token={GITHUB} is invalid"),
    ]);
    let text = committed_text(&r);
    assert!(!text.contains(GITHUB) && !text.contains(AWS), "{text}");
    let bead = r.bead(&id);
    let reason = bead["pipeline"]["dead_letter"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("push failed: remote said token=") && reason.contains("[REDACTED"),
        "{reason}"
    );
    let result = bead["pipeline"]["proposal"]["result"].as_str().unwrap();
    assert!(result.contains("[REDACTED:aws-access-key]"), "{result}");
    // What splice owns is intact.
    assert_eq!(bead["id"], id.as_str());
    assert_eq!(bead["pipeline"]["proposal"]["artifact"], "specs/x.md");
    assert_eq!(bead["pipeline"]["step"], "generate-spec");
}

#[test]
fn the_values_of_secret_environment_variables_are_redacted() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let out = r
        .cmd(&[
            "transition",
            "park",
            "--bead",
            &id,
            "--reason",
            "the agent printed hunter2-correct-horse and plain-words",
        ])
        .env("DEPLOY_PASSWORD", "hunter2-correct-horse")
        .env("SHORT_TOKEN", "plain")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = committed_text(&r);
    assert!(!text.contains("hunter2-correct-horse"), "{text}");
    let reason = r.bead(&id)["pipeline"]["dead_letter"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("[REDACTED:$DEPLOY_PASSWORD]"), "{reason}");
    assert!(
        reason.contains("plain-words"),
        "short values are left: {reason}"
    );
}

#[test]
fn the_list_of_variables_is_configurable() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    r.write(
        ".splice/config.toml",
        "[security]\nredact_env = [\"INTERNAL_*\"]\n",
    );
    let out = r
        .cmd(&[
            "transition",
            "park",
            "--bead",
            &id,
            "--reason",
            "saw internal-value-123 and deploy-value-456",
        ])
        .env("INTERNAL_ENDPOINT", "internal-value-123")
        .env("DEPLOY_PASSWORD", "deploy-value-456")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let reason = r.bead(&id)["pipeline"]["dead_letter"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("[REDACTED:$INTERNAL_ENDPOINT]"), "{reason}");
    assert!(
        reason.contains("deploy-value-456"),
        "the list replaces the default: {reason}"
    );
    r.write(".splice/config.toml", "[security]\nredact_env = 3\n");
    let err = r.fails(2, &["transition", "unpark", "--bead", &id, "--reason", "r"]);
    assert!(
        err.contains("config.toml") && err.contains("redact_env"),
        "{err}"
    );
}

#[test]
fn a_secret_written_into_a_bead_by_hand_is_redacted_at_its_next_write() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let path = r.state().join("beads").join(format!("{id}.json"));
    let mut bead = r.bead(&id);
    bead["metadata"]["notes"] = format!("ci key {GITHUB}").into();
    bead["description"] =
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nrest".into();
    std::fs::write(&path, serde_json::to_vec_pretty(&bead).unwrap()).unwrap();
    r.ok(&[
        "transition",
        "set-autonomy",
        "--bead",
        &id,
        "--autonomy",
        "wave",
    ]);
    let after = r.bead(&id);
    assert_eq!(after["metadata"]["notes"], "ci key [REDACTED:github-token]");
    assert_eq!(after["description"], "[REDACTED:private-key]\nrest");
    assert!(!r.journal().contains(GITHUB));
}
