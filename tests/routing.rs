//! Result branches (`on_result`, issue 12 part 1) end to end: the built binary, real temporary
//! git repositories, a scripted agent, and the example manifests in `manifest/examples/`.

mod common;

use common::Repo;
use serde_json::{Value, json};

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/manifest/examples");

/// The scripted agent: for each dispatch of step S it prints the next line of `answers/S` (or
/// `ok`) as its last line, after proposing the step, and exits with the code in `exit/S` (or 0);
/// it copies `result/S`, when there is one, to `$SPLICE_RESULT_FILE`.
fn scripted_agent(r: &Repo) {
    let dir = r.path().display().to_string();
    let script = format!(
        "f=\"{dir}/answers/$SPLICE_STEP\"\n\
         if [ -s \"$f\" ]; then a=$(head -n 1 \"$f\"); tail -n +2 \"$f\" > \"$f.t\"; mv \"$f.t\" \"$f\"; else a=ok; fi\n\
         echo \"$SPLICE_STEP\" >> \"{dir}/steps.log\"\n\
         [ -f \"{dir}/result/$SPLICE_STEP\" ] && cp \"{dir}/result/$SPLICE_STEP\" \"$SPLICE_RESULT_FILE\"\n\
         splice transition propose --bead \"$SPLICE_BEAD\" --step \"$SPLICE_STEP\" --artifact done > /dev/null\n\
         echo \"$a\"\n\
         code=0; [ -f \"{dir}/exit/$SPLICE_STEP\" ] && code=$(cat \"{dir}/exit/$SPLICE_STEP\")\n\
         exit $code\n"
    );
    r.write("agent.sh", &script);
    r.write(
        ".splice/config.toml",
        &format!("[agent]\ncommand = [\"sh\", \"{dir}/agent.sh\"]\n\n[limits]\nbackoff_s = 0\n"),
    );
}

fn answers(r: &Repo, step: &str, lines: &[&str]) {
    r.write(
        &format!("answers/{step}"),
        &format!("{}\n", lines.join("\n")),
    );
}

/// Use the example manifest `name` with its prompts.
fn example(r: &Repo, name: &str) {
    let text = std::fs::read_to_string(format!("{EXAMPLES}/{name}.json")).unwrap();
    r.write(".splice/manifest.json", &text);
    for prompt in std::fs::read_dir(format!("{EXAMPLES}/prompts")).unwrap() {
        let prompt = prompt.unwrap().path();
        let name = prompt.file_name().unwrap().to_string_lossy().to_string();
        r.write(
            &format!(".splice/prompts/{name}"),
            &std::fs::read_to_string(&prompt).unwrap(),
        );
    }
    // The steps without a prompt of their own take a one-line one.
    for step in ["plan", "reproduce", "fix", "report", "diagnose"] {
        r.write(
            &format!(".splice/prompts/{step}.md"),
            "Do {{step}} for {{bead.id}}.\n",
        );
    }
}

fn run(r: &Repo) -> Value {
    r.ok(&["run", "--output", "json", "--max-passes", "40"])
}

fn steps_run(r: &Repo) -> Vec<String> {
    std::fs::read_to_string(r.path().join("steps.log"))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn the_classifier_routes_planning_and_debugging_to_their_routes() {
    for (answer, route, walked) in [
        (
            "I would say PLANNING",
            "planning",
            vec!["classify", "plan", "report"],
        ),
        (
            "debugging",
            "debugging",
            vec!["classify", "reproduce", "fix", "report"],
        ),
    ] {
        let r = Repo::unconfined();
        example(&r, "classifier");
        let id = r.task("Classify me", &["--autonomy", "wave"]);
        scripted_agent(&r);
        answers(&r, "classify", &[answer]);
        let env = run(&r);
        assert_eq!(env["status"], "done", "{env:#}");
        assert_eq!(steps_run(&r), walked);
        let b = r.bead(&id);
        assert_eq!(b["status"], "closed");
        assert_eq!(b["pipeline"]["route"], route);
        assert_eq!(b["pipeline"]["kind"], "leaf", "the route's declared kind");
        let fired = &b["pipeline"]["routing"][0];
        assert_eq!(fired["branch"], if route == "planning" { 0 } else { 1 });
        assert_eq!(fired["when"], "accepted");
        assert_eq!(fired["effect"], "route");
        assert_eq!(
            (fired["from_route"].as_str(), fired["from_step"].as_str()),
            (Some("leaf"), Some("classify"))
        );
        assert_eq!(fired["to_route"], route);
        assert_eq!(
            fired["matched"].as_str().unwrap().to_lowercase(),
            route,
            "the matched text, as the agent wrote it"
        );
        assert_eq!(b["pipeline"]["responses"]["classify"]["text"], answer);
        assert!(r.journal().contains("\"routing\""), "journaled");
    }
}

#[test]
fn the_classifiers_fallback_branch_aborts_with_its_reason() {
    let r = Repo::new();
    example(&r, "classifier");
    let id = r.task("Classify me", &[]);
    scripted_agent(&r);
    answers(&r, "classify", &["no idea"]);
    let env = run(&r);
    assert_eq!(env["status"], "escalated", "{env:#}");
    let b = r.bead(&id);
    assert_eq!(
        b["pipeline"]["dead_letter"]["reason"],
        "the classifier answered neither PLANNING nor DEBUGGING"
    );
    assert_eq!(b["pipeline"]["routing"][0]["branch"], 2);
    assert_eq!(b["pipeline"]["routing"][0]["effect"], "abort");
    assert_eq!(b["pipeline"]["route"], "leaf");
}

#[test]
fn the_test_router_sends_failures_to_diagnostics_and_green_on_to_deliver() {
    let r = Repo::unconfined();
    example(&r, "test-router");
    let id = r.task("Fix the parser", &[]);
    scripted_agent(&r);
    answers(&r, "test", &["FAILED: parser::s1_reads_a_header", "GREEN"]);
    let env = run(&r);
    assert_eq!(env["status"], "done", "{env:#}");
    assert_eq!(
        steps_run(&r),
        [
            "implement",
            "test",
            "diagnose",
            "implement",
            "test",
            "deliver"
        ]
    );
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["route"], "diagnostics");
    let routing = b["pipeline"]["routing"].as_array().unwrap();
    assert_eq!(routing.len(), 2, "{routing:#?}");
    assert_eq!(routing[0]["matched"], "FAILED");
    assert_eq!(routing[0]["to_step"], "diagnose", "`at` names the step");
    assert_eq!(routing[1]["effect"], "continue");
    assert_eq!(routing[1]["matched"], "GREEN");
}

/// A one-route manifest: `a` then `b` on the leaf, `c` on `other`; `a` has `branches`.
fn small(r: &Repo, branches: Value, a_floors: Value) {
    let manifest = json!({
        "schema_version": 3,
        "routes": { "root": ["s", "d"], "compound": ["s", "d"], "leaf": ["a", "b"], "other": ["c", "b"] },
        "route_kinds": { "root": "root", "compound": "compound", "leaf": "leaf", "other": "compound" },
        "steps": [
            { "name": "a", "run": { "prompt": "a" }, "floors": a_floors, "on_result": branches },
            { "name": "b", "run": { "prompt": "a" }, "floors": [] },
            { "name": "c", "run": { "prompt": "a" }, "floors": [] },
            { "name": "s", "role": "split", "floors": [] },
            { "name": "d", "role": "delegate", "floors": [] }
        ]
    });
    r.write(".splice/manifest.json", &manifest.to_string());
}

/// Require that `out` (a verb's) exited `code`.
fn exits(out: std::process::Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[must_use]
fn propose_and_complete(r: &Repo, id: &str, step: &str) -> std::process::Output {
    r.ok(&[
        "transition",
        "propose",
        "--bead",
        id,
        "--step",
        step,
        "--artifact",
        "x",
    ]);
    r.run(&["transition", "complete", "--bead", id, "--step", step])
}

#[test]
fn a_refused_branch_goes_to_its_step_with_the_refusal_as_guidance() {
    let r = Repo::new();
    small(
        &r,
        json!([
            {"when": "accepted", "match": {"always": true}, "action": {"abort": "not this one"}},
            {"when": "refused", "match": {"matches": "missing|not exist|no such"}, "action": {"goto": "a", "guidance": "write it: {{ result.text }}"}}
        ]),
        json!([{"kind": "file_exists", "path": "out.txt"}]),
    );
    let id = r.task("T", &[]);
    let out = propose_and_complete(&r, &id, "a");
    assert_eq!(out.status.code(), Some(1), "the check refused");
    let b = r.bead(&id);
    let fired = &b["pipeline"]["routing"][0];
    assert_eq!(
        (fired["when"].as_str(), fired["effect"].as_str()),
        (Some("refused"), Some("goto"))
    );
    assert_eq!(fired["branch"], 1);
    let guidance = b["pipeline"]["guidance"].as_str().unwrap();
    assert!(
        guidance.starts_with("write it: ") && guidance.contains("out.txt"),
        "{guidance}"
    );
    assert!(b["pipeline"]["dead_letter"].is_null());
}

#[test]
fn an_unresolved_template_parks_naming_it() {
    let r = Repo::new();
    small(
        &r,
        json!([{"when": "any", "match": {"always": true}, "action": {"route": "{{ step.a.response }}"}}]),
        json!([]),
    );
    let id = r.task("T", &[]);
    exits(propose_and_complete(&r, &id, "a"), 0);
    let b = r.bead(&id);
    let reason = b["pipeline"]["dead_letter"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("{{ step.a.response }}") && reason.contains("has no value"),
        "{reason}"
    );
    assert_eq!(b["pipeline"]["step"], "a", "it stays where it was");
    assert_eq!(b["pipeline"]["routing"][0]["effect"], "park");
}

#[test]
fn a_resolved_template_routes_and_a_name_that_is_no_route_parks_with_the_valid_names() {
    for (answer, parked) in [("  other  ", false), ("elsewhere", true)] {
        let r = Repo::new();
        small(
            &r,
            json!([{"when": "accepted", "match": {"always": true}, "action": {"route": "{{ result.text }}"}}]),
            json!([]),
        );
        let id = r.task("T", &[]);
        r.write(".splice/prompts/a.md", "a\n");
        scripted_agent(&r);
        answers(&r, "a", &[answer]);
        run(&r);
        let b = r.bead(&id);
        if parked {
            let reason = b["pipeline"]["dead_letter"]["reason"].as_str().unwrap();
            assert!(
                reason.contains("\"elsewhere\"") && reason.contains("leaf, other, root"),
                "{reason}"
            );
        } else {
            assert_eq!(b["pipeline"]["route"], "other", "trimmed");
            assert_eq!(b["pipeline"]["kind"], "compound", "the declared kind");
            assert_eq!(
                b["pipeline"]["routing"][0]["to_step"], "c",
                "a is not on other: its entry"
            );
        }
    }
}

#[test]
fn exit_code_matches_the_dispatchs_exit_code() {
    let r = Repo::new();
    small(
        &r,
        json!([
            {"when": "accepted", "match": {"exit_code": 0}, "action": {"goto": "b"}},
            {"when": "any", "match": {"always": true}, "action": {"abort": "unexpected"}}
        ]),
        json!([]),
    );
    let id = r.task("T", &[]);
    r.write(".splice/prompts/a.md", "a\n");
    scripted_agent(&r);
    let env = run(&r);
    assert_eq!(env["status"], "done", "{env:#}");
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["routing"][0]["matched"], "0");
    assert_eq!(b["pipeline"]["routing"][0]["effect"], "goto");
}

#[test]
fn suggest_route_opens_a_gate_a_person_approves_or_rejects() {
    for approve in [true, false] {
        let r = Repo::new();
        small(
            &r,
            json!([{"when": "accepted", "match": {"always": true}, "action": {"suggest_route": "other"}}]),
            json!([]),
        );
        let id = r.task("T", &[]);
        exits(propose_and_complete(&r, &id, "a"), 0);
        let b = r.bead(&id);
        assert_eq!(b["pipeline"]["gate"]["state"], "pending");
        assert_eq!(b["pipeline"]["gate"]["route"], "other");
        assert_eq!(b["pipeline"]["step"], "a");
        let status = r.ok(&["status", "--json"]);
        let rest = &status["nodes"][0]["rest"];
        assert_eq!(rest["kind"], "awaiting-human", "{status:#}");
        assert_eq!(
            rest["relaxes"], false,
            "no autonomy level relaxes a route gate"
        );
        if approve {
            r.ok(&["transition", "approve", "--bead", &id, "--step", "a"]);
            let b = r.bead(&id);
            assert_eq!(
                (
                    b["pipeline"]["route"].as_str(),
                    b["pipeline"]["step"].as_str()
                ),
                (Some("other"), Some("c"))
            );
            assert_eq!(b["pipeline"]["kind"], "compound");
            assert_eq!(b["pipeline"]["routing"][1]["when"], "approved");
        } else {
            r.ok(&[
                "transition",
                "reject",
                "--bead",
                &id,
                "--step",
                "a",
                "--reason",
                "stay",
            ]);
            let b = r.bead(&id);
            assert_eq!(
                (
                    b["pipeline"]["route"].as_str(),
                    b["pipeline"]["step"].as_str()
                ),
                (Some("leaf"), Some("b"))
            );
            assert_eq!(b["pipeline"]["routing"][1]["effect"], "stay");
        }
        // Settled: nothing is pending any more, and the same refusal as every gate.
        r.fails(1, &["transition", "approve", "--bead", &id, "--step", "a"]);
    }
}

#[test]
fn a_node_switched_more_than_sixteen_times_parks() {
    let r = Repo::new();
    small(
        &r,
        json!([{"when": "refused", "match": {"always": true}, "action": {"goto": "a"}}]),
        json!([{"kind": "file_exists", "path": "never.txt"}]),
    );
    let id = r.task("T", &[]);
    for _ in 0..16 {
        exits(propose_and_complete(&r, &id, "a"), 1);
        assert!(r.bead(&id)["pipeline"]["dead_letter"].is_null());
    }
    exits(propose_and_complete(&r, &id, "a"), 1);
    let b = r.bead(&id);
    let reason = b["pipeline"]["dead_letter"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("16") && reason.contains("cycle"),
        "{reason}"
    );
}

#[test]
fn every_kind_of_bad_branch_is_refused_at_load_naming_the_file_and_path() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let before = r.beads_bytes();
    for (branch, want) in [
        (
            json!({"when": "any", "match": {"always": true}, "action": {"goto": "c"}}),
            "steps[0].on_result[0].action.goto: \"c\" is not a step of a route holding \"a\"",
        ),
        (
            json!({"when": "any", "match": {"always": true}, "action": {"route": "nowhere"}}),
            "steps[0].on_result[0].action.route: \"nowhere\" is not a declared route",
        ),
        (
            json!({"when": "any", "match": {"matches": "(x"}, "action": {"continue": true}}),
            "steps[0].on_result[0].match.matches: bad regex",
        ),
        (
            json!({"when": "any", "match": {"always": true, "colour": 1}, "action": {"continue": true}}),
            "unknown field `colour`",
        ),
        (
            json!({"when": "any", "match": {"always": true}, "action": {"goto": "b", "route": "other"}}),
            "steps[0].on_result[0].action: give exactly one",
        ),
    ] {
        small(&r, json!([branch]), json!([]));
        let err = r.fails(2, &["status"]);
        assert!(err.contains("manifest.json") && err.contains(want), "{err}");
        assert_eq!(r.beads_bytes(), before, "nothing changed");
    }
    let _ = id;
}

#[test]
fn a_regex_over_the_limit_is_quoted_cut_not_whole() {
    // The 1,024-byte limit's message echoed the whole pattern (here 5,000 characters).
    let r = Repo::new();
    r.task("T", &[]);
    let long = "x".repeat(5000);
    small(
        &r,
        json!([{"when": "any", "match": {"matches": long}, "action": {"continue": true}}]),
        json!([]),
    );
    let err = r.fails(2, &["status"]);
    let line = err
        .lines()
        .find(|l| l.contains("bad regex"))
        .unwrap_or(&err);
    assert!(
        line.contains("steps[0].on_result[0].match.matches: bad regex")
            && line.contains("… (5000 characters)")
            && line.contains("over the 1024-byte limit"),
        "{err}"
    );
    assert!(
        !err.contains(&"x".repeat(65)),
        "echoed whole: {} bytes",
        err.len()
    );
}

#[test]
fn a_recorded_response_is_redacted_and_contains_reads_it() {
    let r = Repo::new();
    small(
        &r,
        json!([{"when": "accepted", "match": {"contains": "planning"}, "action": {"goto": "b"}}]),
        json!([]),
    );
    let id = r.task("T", &[]);
    r.write(".splice/prompts/a.md", "a\n");
    scripted_agent(&r);
    let secret = format!("ghp_{}", "a".repeat(36));
    answers(&r, "a", &[&format!("PLANNING, and my token is {secret}")]);
    let env = run(&r);
    assert_eq!(env["status"], "done", "{env:#}");
    let b = r.bead(&id);
    let said = b["pipeline"]["responses"]["a"]["text"].as_str().unwrap();
    assert!(
        said.starts_with("PLANNING") && said.contains("[REDACTED:github-token]"),
        "{said}"
    );
    assert!(!r.journal().contains(&secret), "the journal never holds it");
    assert_eq!(b["pipeline"]["routing"][0]["matched"], "PLANNING");
}

#[test]
fn the_agents_result_file_is_its_response_and_its_confidence_a_field() {
    let r = Repo::new();
    small(
        &r,
        json!([
            {"when": "accepted", "match": {"field": "confidence", "equals": 0.25}, "action": {"abort": "unsure: {{ result.text }}"}},
            {"when": "accepted", "match": {"always": true}, "action": {"continue": true}}
        ]),
        json!([]),
    );
    let id = r.task("T", &[]);
    r.write(".splice/prompts/a.md", "a\n");
    scripted_agent(&r);
    r.write(
        "result/a",
        r#"{"response": "DEBUGGING", "confidence": 0.25}"#,
    );
    answers(&r, "a", &["the last line, not the response"]);
    run(&r);
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["responses"]["a"]["confidence"], 0.25);
    assert_eq!(b["pipeline"]["dead_letter"]["reason"], "unsure: DEBUGGING");
}
