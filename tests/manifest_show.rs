//! Issue 10, item 20: `splice manifest show` prints the effective manifest, and a step's timeout,
//! attempts or command can be set in `config.toml` (`[agent.steps.<step>]`) without copying the
//! whole manifest; the overrides are typed and checked at load, each problem named by its key.

mod common;

use common::Repo;
use serde_json::Value;

fn show(r: &Repo) -> Value {
    r.ok(&["manifest", "show"])
}

fn step<'a>(m: &'a Value, name: &str) -> &'a Value {
    m["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no step {name}"))
}

#[test]
fn manifest_show_prints_the_effective_manifest_which_loads_as_one() {
    let r = Repo::new();
    r.task("T", &[]);
    let m = show(&r);
    assert_eq!(m["routes"]["leaf"][0], "generate-spec");
    assert_eq!(step(&m, "implement")["timeout_s"], 3600);
    // What it prints is a manifest: saved as the project's, it shows the same.
    r.write(
        ".splice/manifest.json",
        &serde_json::to_string_pretty(&m).unwrap(),
    );
    assert_eq!(show(&r), m);
}

#[test]
fn a_steps_timeout_attempts_and_command_are_set_in_the_config() {
    let r = Repo::new();
    r.task("T", &[]);
    r.write(
        ".splice/config.toml",
        "[agent.steps.implement]\ntimeout_s = 7200\nmax_attempts = 5\n",
    );
    let m = show(&r);
    assert_eq!(step(&m, "implement")["timeout_s"], 7200);
    assert_eq!(step(&m, "implement")["max_attempts"], 5);
    assert_eq!(step(&m, "review")["timeout_s"], 1800, "only that step");

    // An argv step's command is replaced; a prompt step's stays the agent's (config only).
    r.write(
        ".splice/manifest.json",
        r#"{ "routes": { "root": ["plan"], "compound": ["plan"], "leaf": ["work"] },
             "steps": [ { "name": "plan", "role": "split", "floors": [] },
                        { "name": "work", "run": { "argv": ["make", "work"] } } ] }"#,
    );
    r.write(
        ".splice/config.toml",
        "[agent.steps.work]\ncommand = [\"sh\", \"-c\", \"echo {{bead}}\"]\n",
    );
    let m = show(&r);
    assert_eq!(
        step(&m, "work")["run"]["argv"],
        serde_json::json!(["sh", "-c", "echo {{bead}}"])
    );
}

#[test]
fn an_override_is_refused_at_load_by_its_key() {
    let r = Repo::new();
    r.task("T", &[]);
    let refused = |config: &str, says: &[&str]| {
        r.write(".splice/config.toml", config);
        let err = r.fails(2, &["manifest", "show"]);
        for s in says {
            assert!(err.contains(s), "{config}: {err}");
        }
        assert!(err.contains(".splice/config.toml"), "{err}");
        // Every command that loads the manifest says the same.
        let err = r.fails(2, &["status"]);
        assert!(err.contains(says[0]), "{err}");
    };
    refused(
        "[agent.steps.implemnt]\ntimeout_s = 60\n",
        &["[agent.steps.implemnt]", "no step `implemnt`", "implement"],
    );
    refused(
        "[agent.steps.implement]\ntimeout_s = 0\n",
        &["[agent.steps.implement] timeout_s", "1..="],
    );
    refused(
        "[agent.steps.review]\nmax_attempts = 0\n",
        &["[agent.steps.review] max_attempts", "at least 1"],
    );
    refused(
        "[agent.steps.delegate]\ncommand = [\"x\"]\n",
        &["[agent.steps.delegate] command", "runs no command"],
    );
    r.write(
        ".splice/manifest.json",
        r#"{ "routes": { "root": ["plan"], "compound": ["plan"], "leaf": ["work"] },
             "steps": [ { "name": "plan", "role": "split", "floors": [] },
                        { "name": "work", "run": { "argv": ["make"] } } ] }"#,
    );
    refused(
        "[agent.steps.work]\ncommand = [\"x\", \"{{prompt}}\"]\n",
        &["[agent.steps.work] command", "{{prompt}}"],
    );
}

#[test]
fn the_overrides_are_what_a_run_goes_by() {
    let r = Repo::new();
    r.write(
        ".splice/manifest.json",
        r#"{ "routes": { "root": ["plan"], "compound": ["plan"], "leaf": ["work"] },
             "steps": [ { "name": "plan", "role": "split", "floors": [] },
                        { "name": "work", "run": { "argv": ["false"] }, "max_attempts": 3,
                          "timeout_s": 600 } ] }"#,
    );
    std::fs::create_dir_all(r.state().join("beads")).unwrap();
    r.write(
        ".splice/config.toml",
        "[agent.steps.work]\nmax_attempts = 1\ntimeout_s = 1\ncommand = [\"sleep\", \"30\"]\n",
    );
    let id = r.task("T", &[]);
    let started = std::time::Instant::now();
    let env = r.ok(&["run", "--json"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(env["status"], "escalated", "{env:#}");
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["exits"][0]["exit"], "timeout");
    let reason = b["pipeline"]["dead_letter"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("attempts exhausted on work: 1 of 1"),
        "{reason}"
    );
}

#[test]
fn a_dispatched_session_may_read_the_manifest() {
    let r = Repo::new();
    r.task("T", &[]);
    let out = r
        .cmd(&["manifest", "show"])
        .env("SPLICE_DISPATCHED", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_bad_number_in_an_optional_step_is_the_only_error() {
    // A step that did not type was checked as `{"name": …}` alone, not optional: the route
    // check then said `entry.root` skips "generate-design", which is `optional: true`.
    let r = Repo::new();
    r.task("T", &[]);
    let m = serde_json::to_string_pretty(&show(&r)).unwrap();
    assert_eq!(step(&show(&r), "generate-design")["optional"], true);
    let before = r.beads_bytes();
    for (field, bad, says) in [
        (
            "\"max_attempts\": 3",
            "\"max_attempts\": 18446744073709551616",
            "steps[0].max_attempts",
        ),
        (
            "\"timeout_s\": 1800",
            "\"timeout_s\": -5",
            "steps[0].timeout_s",
        ),
    ] {
        assert!(m.contains(field), "{m}");
        r.write(".splice/manifest.json", &m.replacen(field, bad, 1));
        let err = r.fails(2, &["manifest", "show"]);
        assert!(err.contains(says), "{bad}: {err}");
        assert!(
            !err.contains("entry."),
            "{bad}: a second, false error: {err}"
        );
        assert_eq!(
            err.matches("; ").count(),
            0,
            "{bad}: one problem only: {err}"
        );
    }
    assert_eq!(r.beads_bytes(), before);
}
