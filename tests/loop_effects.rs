//! Issue 13: the pass monitor's effects that end or pause a loop, with scripted agents — ask
//! the user (`transition guide`; `exec` parks), stop (the iteration limit, `--max-turns`, a
//! budget, stage failures) and the snapshot refs' lifetime. `tests/loop_runtime.rs` has
//! continue, rollback, escalation and step back.

mod common;
mod loop_support;

use common::Repo;
use loop_support::{argv_step, ctx, dump, run, seen, snapshot_refs, trajectory};
use serde_json::{Value, json};

/// Rising scores (-6, 12, 22) with the agent's confidence falling (0.9, 0.6, 0.3) over
/// iterations 1–3, proposed with `propose --confidence`; iteration 4 passes.
const FALLING_CONFIDENCE: &str = "note \"work $n\"; keep_ctx; echo $n > marker; \
     case $n in 1) results a=ok b=FAILED c=FAILED; c=0.9;; 2) results a=ok b=ok c=FAILED; c=0.6;; \
     3) results a=ok b=ok c=ok d=FAILED; c=0.3;; *) results a=ok b=ok c=ok d=ok; c=0.9;; esac; commit; \
     splice transition propose --bead $SPLICE_BEAD --step work --artifact x --confidence $c >/dev/null";

fn node<'a>(status: &'a Value, id: &str) -> &'a Value {
    status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {status:#}"))
}

#[test]
fn falling_confidence_asks_a_person_and_the_guidance_reaches_the_next_dispatch() {
    let r = Repo::unconfined();
    argv_step(&r, FALLING_CONFIDENCE, json!({}));
    let id = r.task("Loop", &[]);
    let env = run(&r, &[]);
    assert_eq!(env["status"], "suspended-human", "{env:#}");
    let b = r.bead(&id);
    assert_eq!(b["status"], "open", "{}", dump(&r, &id));
    assert_eq!(
        trajectory(&b)
            .iter()
            .map(|i| i["state"]["confidence"].as_f64())
            .collect::<Vec<_>>(),
        vec![Some(0.9), Some(0.6), Some(0.3)]
    );
    assert_eq!(trajectory(&b)[2]["monitor"]["decision"], "ask_user");
    let status = r.ok(&["status", "--json"]);
    let rest = &node(&status, &id)["rest"];
    assert_eq!(rest["kind"], "awaiting-human", "{rest:#}");
    let question = rest["question"].as_str().unwrap_or_default();
    assert!(question.contains("confidence fell"), "{rest:#}");
    assert!(
        question.contains(&format!("splice transition guide --bead {id}")),
        "{rest:#}"
    );
    // Its other option, cancel, names the command that does it.
    assert!(
        question.contains(&format!("splice cancel {id} --reason")),
        "{rest:#}"
    );
    // Another run does not go on by itself.
    run(&r, &[]);
    assert_eq!(seen(&r).len(), 3);

    r.ok(&[
        "transition",
        "guide",
        "--bead",
        &id,
        "--text",
        "check the d fixture first",
    ]);
    let b = r.bead(&id);
    assert_eq!(
        trajectory(&b)[2]["effect"],
        json!({ "effect": "guided", "text": "check the d fixture first", "by": "person" })
    );
    assert_eq!(b["pipeline"]["guidance"], "check the d fixture first");
    assert!(r.journal().contains("guide"));

    run(&r, &[]);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{}", dump(&r, &id));
    assert_eq!(seen(&r), vec!["work 1", "work 2", "work 3", "work 4"]);
    let c = ctx(&r, 4);
    assert_eq!(c["effects"][0]["iteration"], 3, "{c:#}");
    assert_eq!(
        c["effects"][0]["effect"]["text"], "check the d fixture first",
        "{c:#}"
    );
}

#[test]
fn guide_is_refused_on_a_node_the_monitor_is_not_asking() {
    let r = Repo::unconfined();
    argv_step(
        &r,
        "echo $n > marker; results a=FAILED; commit",
        json!({ "max_iterations": 1 }),
    );
    let id = r.task("Loop", &[]);
    let guide = ["transition", "guide", "--bead", &id, "--text", "try harder"];
    // No iteration yet.
    let before = r.beads_bytes();
    let err = r.fails(1, &guide);
    assert!(err.contains("no iteration"), "{err}");
    assert_eq!(r.beads_bytes(), before);
    // Stopped at its limit: the monitor's decision is stop_iteration_limit, not ask_user.
    run(&r, &[]);
    assert_eq!(
        trajectory(&r.bead(&id))[0]["monitor"]["decision"],
        "stop_iteration_limit"
    );
    let before = r.beads_bytes();
    let err = r.fails(1, &guide);
    assert!(err.contains("not ask_user"), "{err}");
    assert_eq!(r.beads_bytes(), before);
}

#[test]
fn a_headless_exec_parks_a_node_whose_monitor_asks_a_person() {
    let r = Repo::unconfined();
    // The confidence from the result file this time.
    argv_step(
        &r,
        "note \"work $n\"; echo $n > marker; \
         case $n in 1) results a=ok b=FAILED c=FAILED; c=0.9;; 2) results a=ok b=ok c=FAILED; c=0.6;; \
         *) results a=ok b=ok c=ok d=FAILED; c=0.3;; esac; commit; \
         echo \"{\\\"confidence\\\": $c}\" > \"$SPLICE_RESULT_FILE\"",
        json!({}),
    );
    let out = r.run(&["exec", "Loop headless", "--output", "json"]);
    common::no_panic(&out);
    assert_eq!(
        out.status.code(),
        Some(12),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let id = std::fs::read_dir(r.state().join("beads"))
        .unwrap()
        .flatten()
        .map(|e| {
            e.file_name()
                .to_string_lossy()
                .trim_end_matches(".json")
                .to_string()
        })
        .next()
        .unwrap();
    let b = r.bead(&id);
    assert_eq!(
        trajectory(&b)[2]["monitor"]["decision"],
        "ask_user",
        "{}",
        dump(&r, &id)
    );
    let why = b["pipeline"]["dead_letter"]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(why.contains("asked a person"), "{}", dump(&r, &id));
    assert!(why.contains("splice exec"), "{why}");
    assert_eq!(seen(&r).len(), 3);
}

fn parked_reason(r: &Repo, id: &str) -> String {
    let b = r.bead(id);
    assert_eq!(b["status"], "open", "{}", dump(r, id));
    b["pipeline"]["dead_letter"]["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("not parked: {}", dump(r, id)))
        .to_string()
}

const ALWAYS_FAILING: &str = "note \"work $n\"; echo $n > marker; results a=FAILED; commit";

#[test]
fn the_iteration_limit_parks_the_node_with_stop_iteration_limit() {
    let r = Repo::unconfined();
    argv_step(&r, ALWAYS_FAILING, json!({ "max_iterations": 2 }));
    let id = r.task("Loop", &[]);
    let out = r.run(&["run", "--output", "stream-json"]);
    assert_eq!(out.status.code(), Some(0));
    // The stream carries each iteration's state and the monitor's decision.
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["type"] == "iteration")
        .collect();
    let decided: Vec<(&Value, &Value, &Value)> = events
        .iter()
        .map(|e| {
            (
                &e["iteration"],
                &e["state"]["tests"]["failed"],
                &e["monitor"]["decision"],
            )
        })
        .collect();
    assert_eq!(
        decided,
        vec![
            (&json!(1), &json!(1), &json!("continue")),
            (&json!(2), &json!(1), &json!("stop_iteration_limit"))
        ]
    );
    let why = parked_reason(&r, &id);
    assert!(why.contains("stop_iteration_limit"), "{why}");
    assert!(why.contains("2 of 2 iterations"), "{why}");
    assert_eq!(seen(&r), vec!["work 1", "work 2"]);
    let status = String::from_utf8_lossy(&r.run(&["status"]).stdout).into_owned();
    assert!(
        status.contains("iteration 2/2, scores -8 → -8, monitor stop_iteration_limit"),
        "{status}"
    );
}

#[test]
fn max_turns_on_run_overrides_max_iterations() {
    let r = Repo::unconfined();
    argv_step(&r, ALWAYS_FAILING, json!({ "max_iterations": 5 }));
    let id = r.task("Loop", &[]);
    run(&r, &["--max-turns", "2"]);
    let why = parked_reason(&r, &id);
    assert!(why.contains("stop_iteration_limit"), "{why}");
    assert!(why.contains("2 of 2 iterations"), "{why}");
    assert_eq!(seen(&r), vec!["work 1", "work 2"]);
    assert_eq!(trajectory(&r.bead(&id))[1]["monitor"]["max_iterations"], 2);
}

#[test]
fn the_wall_time_parks_the_node_before_its_next_iteration() {
    let r = Repo::unconfined();
    argv_step(&r, ALWAYS_FAILING, json!({ "wall_time_s": 100 }));
    let id = r.task("Loop", &[]);
    run(&r, &["--max-passes", "1"]);
    // The clock is fixed per command: 99 s after iteration 1 started, iteration 2 may start;
    // at 100 s no iteration may.
    let at = |now: &str, args: &[&str]| {
        let out = r
            .cmd(&[&["run", "--output", "json"], args].concat())
            .env("SPLICE_NOW", now)
            .output()
            .unwrap();
        common::no_panic(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    at("2026-01-01T00:01:39Z", &["--max-passes", "1"]);
    assert_eq!(seen(&r), vec!["work 1", "work 2"]);
    at("2026-01-01T00:01:40Z", &[]);
    assert_eq!(seen(&r), vec!["work 1", "work 2"], "{}", dump(&r, &id));
    let why = parked_reason(&r, &id);
    assert!(why.contains("wall time"), "{why}");
    assert!(why.contains("100 s since iteration 1 started"), "{why}");
}

#[test]
fn a_step_back_analysis_spends_from_the_loops_token_budget() {
    let r = Repo::unconfined();
    argv_step(
        &r,
        "if [ \"${SPLICE_STEP_BACK:-}\" = 1 ]; then note \"step-back $n\"; \
         echo '{\"input_tokens\": 100, \"output_tokens\": 0}' > \"$SPLICE_USAGE_FILE\"; \
         echo '{\"root_cause\": \"flaky fixture\"}' > \"$SPLICE_RESULT_FILE\"; exit 0; fi; \
         note \"work $n\"; echo $n > marker; results a=ok b=FAILED; commit",
        json!({ "token_budget": 100 }),
    );
    let id = r.task("Loop", &[]);
    run(&r, &[]);
    assert_eq!(seen(&r), vec!["work 1", "work 2", "work 3", "step-back 3"]);
    let b = r.bead(&id);
    let t = trajectory(&b);
    assert_eq!(t[2]["effect"]["effect"], "stepped_back", "{:#}", t[2]);
    assert_eq!(t[2]["effect"]["tokens"], 100, "{:#}", t[2]);
    let why = parked_reason(&r, &id);
    assert!(why.contains("stop_budget"), "{why}");
    assert!(why.contains("tokens 100 of 100"), "{why}");
}

#[test]
fn a_token_budget_parks_the_node_with_stop_budget() {
    let r = Repo::unconfined();
    argv_step(
        &r,
        &format!(
            "{ALWAYS_FAILING}; echo '{{\"input_tokens\": 60, \"output_tokens\": 0}}' > \"$SPLICE_USAGE_FILE\""
        ),
        json!({ "token_budget": 100 }),
    );
    let id = r.task("Loop", &[]);
    run(&r, &[]);
    let why = parked_reason(&r, &id);
    assert!(why.contains("stop_budget"), "{why}");
    assert!(why.contains("tokens 120 of 100"), "{why}");
    let b = r.bead(&id);
    let t = trajectory(&b);
    assert_eq!(t[0]["state"]["tokens"], 60);
    assert_eq!(t[0]["monitor"]["decision"], "continue");
    assert_eq!(t[1]["monitor"]["decision"], "stop_budget");
    assert_eq!(seen(&r), vec!["work 1", "work 2"]);
}

/// A tests stage that exits non-zero when the agent left no test line (a build error).
fn strict_tests() -> Value {
    json!({
        "max_iterations": 2,
        "stages": [ { "kind": "tests", "argv": ["sh", "-c", "cat results; grep -q '^test ' results"] } ]
    })
}

#[test]
fn a_stage_failure_counts_towards_the_limit_and_success_on_the_last_iteration_closes() {
    let r = Repo::unconfined();
    argv_step(
        &r,
        "note \"work $n\"; keep_ctx; echo $n > marker; \
         case $n in 1) echo 'error: does not compile' > results;; *) results a=ok;; esac; commit",
        strict_tests(),
    );
    let id = r.task("Loop", &[]);
    run(&r, &[]);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{}", dump(&r, &id));
    let t = trajectory(&b);
    assert_eq!(t.len(), 2);
    assert_eq!(t[0]["state"]["stage_failed"], true, "{:#}", t[0]);
    assert!(t[0]["score"].is_null());
    assert_eq!(
        t[0]["context"]["stage_failure"]["stage"], "tests",
        "{:#}",
        t[0]
    );
    assert_eq!(t[1]["monitor"]["decision"], "success");
    let c = ctx(&r, 2);
    assert_eq!(
        c["scores"],
        json!([{ "iteration": 1, "score": null }]),
        "{c:#}"
    );
    assert!(
        c["context"]["stage_failure"]["output_tail"]
            .as_str()
            .unwrap_or_default()
            .contains("does not compile"),
        "{c:#}"
    );

    // Two stage failures use up a limit of two.
    let r = Repo::unconfined();
    argv_step(
        &r,
        "note \"work $n\"; echo $n > marker; echo 'error: does not compile' > results; commit",
        strict_tests(),
    );
    let id = r.task("Loop", &[]);
    run(&r, &[]);
    let why = parked_reason(&r, &id);
    assert!(why.contains("stop_iteration_limit"), "{why}");
    assert!(why.contains("2 of 2 iterations"), "{why}");
}

/// Iterations 1 and 2 fail, 3 passes; each notes the snapshot refs it sees.
const NOTES_SNAPSHOTS: &str = "note \"$n: $(git for-each-ref --format='%(refname)' refs/splice/snapshots/$SPLICE_BEAD/ | sed 's,.*/,,' | sort -n | tr '\\n' ' ')\"; \
     echo $n > marker; case $n in 1|2) results a=FAILED;; *) results a=ok;; esac; commit";

#[test]
fn snapshot_refs_exist_during_the_loop_and_are_deleted_when_the_node_closes() {
    let r = Repo::unconfined();
    argv_step(&r, NOTES_SNAPSHOTS, json!({}));
    let id = r.task("Loop", &[]);
    run(&r, &[]);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{}", dump(&r, &id));
    assert_eq!(seen(&r), vec!["1: 0 ", "2: 0 1 ", "3: 0 1 2 "]);
    let t = trajectory(&b);
    assert_eq!(t[1]["snapshot"], format!("refs/splice/snapshots/{id}/2"));
    assert_eq!(snapshot_refs(&r, &id), Vec::<u32>::new());
}

#[test]
fn keep_snapshots_keeps_the_refs_when_the_node_closes() {
    let r = Repo::unconfined();
    argv_step(&r, NOTES_SNAPSHOTS, json!({}));
    let id = r.task("Loop", &[]);
    run(&r, &["--keep-snapshots"]);
    assert_eq!(r.bead(&id)["status"], "closed", "{}", dump(&r, &id));
    assert_eq!(snapshot_refs(&r, &id), vec![0, 1, 2, 3]);
    // Snapshot 1 holds iteration 1's files.
    let marker = r.git(&["show", &format!("refs/splice/snapshots/{id}/1:marker")]);
    assert_eq!(marker, "1");
}

#[test]
fn a_person_asked_by_the_monitor_may_cancel_the_node_instead() {
    let r = Repo::unconfined();
    argv_step(&r, FALLING_CONFIDENCE, json!({}));
    let id = r.task("Loop", &[]);
    run(&r, &[]);
    let status = r.ok(&["status", "--json"]);
    let question = node(&status, &id)["rest"]["question"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // The command the question gives, as a person would type it.
    let at = question
        .find("splice cancel")
        .unwrap_or_else(|| panic!("no cancel command in {question:?}"));
    let command = question[at..].split('`').next().unwrap();
    let mut args: Vec<String> = command
        .split_whitespace()
        .skip(1)
        .map(String::from)
        .collect();
    assert_eq!(args.last().map(String::as_str), Some("R"), "{command}");
    args.pop();
    args.push("the approach is wrong".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    r.ok(&args);
    assert_eq!(r.bead(&id)["status"], "closed");
    run(&r, &[]);
    assert_eq!(seen(&r).len(), 3, "no dispatch after the cancel");
}

#[test]
fn guide_answers_the_question_a_run_with_max_turns_asked() {
    let r = Repo::unconfined();
    // The manifest allows 3 iterations; the run 5: the monitor asks after iteration 3.
    argv_step(&r, FALLING_CONFIDENCE, json!({ "max_iterations": 3 }));
    let id = r.task("Loop", &[]);
    let env = run(&r, &["--max-turns", "5"]);
    assert_eq!(env["status"], "suspended-human", "{}", dump(&r, &id));
    r.ok(&["transition", "guide", "--bead", &id, "--text", "look at d"]);
    run(&r, &["--max-turns", "5"]);
    assert_eq!(r.bead(&id)["status"], "closed", "{}", dump(&r, &id));
    assert_eq!(seen(&r).len(), 4);
}
