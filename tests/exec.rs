//! `splice exec "REQUEST"`: a lone task created and run headless to rest in a scratch git
//! repository, with the built-in simulated agent (`--agent sim`, its generic mode).

mod common;

use common::Repo;
use serde_json::Value;

/// A scratch repository on `dev`, which no approval protects (`main` is: issue 33).
fn repo() -> Repo {
    let r = Repo::new();
    r.git(&["checkout", "-q", "-b", "dev"]);
    r
}

fn exec(r: &Repo, code: i32, args: &[&str]) -> Value {
    let mut all = vec!["exec"];
    all.extend_from_slice(args);
    let out = r.run(&all);
    common::no_panic(&out);
    assert_eq!(
        out.status.code(),
        Some(code),
        "splice {all:?}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

#[test]
fn exec_with_the_simulated_agent_runs_a_request_to_done_and_lands_it() {
    let r = repo();
    let before = r.git(&["rev-parse", "dev"]);
    let out = exec(
        &r,
        0,
        &[
            "Add a greeting\nSay hello to every user.",
            "--agent",
            "sim",
            "--autonomy",
            "wave",
            "--delivery",
            "direct",
            "--json",
        ],
    );
    assert_eq!(out["schema_version"], 1, "{out:#}");
    assert_eq!(out["status"], "done", "{out:#}");
    assert_eq!(out["node_status"], "closed");
    assert_eq!(out["target"], "dev");
    assert_eq!(out["delivery"], "direct");
    let id = out["id"].as_str().unwrap();
    let bead = r.bead(id);
    assert_eq!(bead["title"], "Add a greeting");
    assert_eq!(
        bead["description"],
        "Add a greeting\nSay hello to every user."
    );
    assert_eq!(bead["pipeline"]["tier"], "light", "classified");
    assert_eq!(bead["pipeline"]["tier_rule"]["name"], "otherwise-light");
    // A light request runs on the light route: no test generator.
    assert_eq!(bead["pipeline"]["route"], "light");
    // The work landed on dev: the reviewed commit is dev's tip, with a note and a test.
    let tip = r.git(&["rev-parse", "dev"]);
    assert_ne!(tip, before);
    assert_eq!(out["reviewed_sha"], tip.as_str());
    let files = r.git(&["ls-tree", "-r", "--name-only", "dev"]);
    assert!(files.contains(&format!("work/{id}.md")), "{files}");
    assert!(files.contains(&format!("tests/{id}.feature")), "{files}");
    assert!(
        !r.state().join("config.toml").exists(),
        "--agent sim writes nothing to the user's config"
    );
}

#[test]
fn exec_exits_with_the_run_status_hitl_waiting_at_the_first_gate() {
    let r = repo();
    let out = exec(&r, 10, &["Write the notes", "--agent", "sim", "--json"]);
    assert_eq!(out["status"], "suspended-human");
    assert_eq!(out["step"], "generate-spec");
    assert_eq!(out["node_status"], "open");
}

#[test]
fn max_passes_caps_the_runs_passes() {
    let r = repo();
    let out = exec(
        &r,
        13,
        &[
            "Write the notes",
            "--agent",
            "sim",
            "--autonomy",
            "wave",
            "--max-passes",
            "2",
            "--json",
        ],
    );
    assert_eq!(out["status"], "budget", "{out:#}");
    // Two passes act; the read after them finds the cap spent, starts nothing and ends the
    // run: it is not a third pass.
    assert_eq!(out["passes"], 2);
    assert!(out["dispatches"].as_u64().unwrap() <= 2, "{out:#}");
    exec(&r, 2, &["x", "--max-passes", "0"]);
    exec(&r, 2, &["x", "--max-turns", "-1"]);
}

#[test]
fn human_output_says_where_the_work_landed() {
    let r = repo();
    let out = r.run(&[
        "exec",
        "Add a greeting",
        "--agent",
        "sim",
        "--autonomy",
        "wave",
        "--delivery",
        "direct",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("exec: created task sp-"), "{text}");
    assert!(text.contains("ended done"), "{text}");
    assert!(text.contains("work: landed on dev (direct)"), "{text}");
}

#[test]
fn a_bad_request_or_tier_and_a_dispatched_session_write_nothing() {
    let r = repo();
    let err = r.fails(2, &["exec", "x", "--tier", "huge"]);
    assert!(err.contains("--tier \"huge\""), "{err}");
    let err = r.fails(2, &["exec", "  \n "]);
    assert!(err.contains("REQUEST"), "{err}");
    let out = r
        .cmd(&["exec", "x", "--agent", "sim"])
        .env("SPLICE_DISPATCHED", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("exec"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!r.state().exists(), "nothing was created");
}

#[test]
fn stream_json_names_the_task_first_and_ends_with_the_runs_result() {
    let r = repo();
    let out = r.run(&[
        "exec",
        "Write the notes",
        "--agent",
        "sim",
        "--output",
        "stream-json",
    ]);
    assert_eq!(out.status.code(), Some(10));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON event per line"))
        .collect();
    let first = &lines[0];
    assert_eq!(first["type"], "note", "{first:#}");
    assert!(
        first["text"]
            .as_str()
            .unwrap()
            .starts_with("exec: created task sp-")
    );
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "result", "{last:#}");
    assert_eq!(last["status"], "suspended-human");
}

/// `exec` classifies a request and, unlike `init-task`, starts it on the tier's route: a trivial
/// edit skips the spec step and still runs to done.
#[test]
fn exec_starts_a_classified_request_on_its_tiers_route() {
    let r = repo();
    let out = exec(
        &r,
        0,
        &[
            "Fix a typo in the README",
            "--agent",
            "sim",
            "--autonomy",
            "wave",
            "--delivery",
            "direct",
            "--json",
        ],
    );
    assert_eq!(out["status"], "done", "{out:#}");
    let bead = r.bead(out["id"].as_str().unwrap());
    assert_eq!(bead["pipeline"]["tier"], "trivial");
    assert_eq!(bead["pipeline"]["tier_rule"]["name"], "short-trivial-edit");
    assert_eq!(bead["pipeline"]["route"], "trivial");
    let history = bead["pipeline"]["history"].to_string();
    assert!(
        history.contains("implement") && !history.contains("generate-spec"),
        "{history}"
    );
}

#[test]
fn exec_on_main_stops_before_landing_for_a_persons_approval() {
    let r = Repo::new();
    let before = r.git(&["rev-parse", "main"]);
    let out = r.run(&[
        "exec",
        "Add a greeting",
        "--agent",
        "sim",
        "--autonomy",
        "wave",
        "--delivery",
        "direct",
        "--output",
        "human",
    ]);
    common::no_panic(&out);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(10), "{text}");
    assert_eq!(
        r.git(&["rev-parse", "main"]),
        before,
        "main moved unapproved"
    );
    assert!(text.contains("splice transition approve --bead"), "{text}");
    assert!(text.contains("not landed yet"), "{text}");
}
