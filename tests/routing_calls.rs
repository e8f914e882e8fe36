//! Call and return (`on_result` action `call`, issue 34 item 4) end to end: the built binary,
//! real temporary git repositories, a fixed clock, a scripted agent, and the example manifest
//! `manifest/examples/diagnose-call.json`, whose failing `test` calls the `diagnostics` route and
//! comes back to `implement` with the diagnosis.

mod common;

use common::Repo;
use serde_json::{Value, json};

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/manifest/examples");

/// The scripted agent: for each dispatch of step S it appends `=== S` and its prompt (its last
/// argument) to `prompts.log`, proposes the step and prints the next line of `answers/S` (or
/// `ok`) as its last line.
fn scripted_agent(r: &Repo) {
    let dir = r.path().display().to_string();
    let script = format!(
        "f=\"{dir}/answers/$SPLICE_STEP\"\n\
         if [ -s \"$f\" ]; then a=$(head -n 1 \"$f\"); tail -n +2 \"$f\" > \"$f.t\"; mv \"$f.t\" \"$f\"; else a=ok; fi\n\
         echo \"$SPLICE_STEP\" >> \"{dir}/steps.log\"\n\
         {{ echo \"=== $SPLICE_STEP\"; printf '%s\\n' \"$1\"; }} >> \"{dir}/prompts.log\"\n\
         splice transition propose --bead \"$SPLICE_BEAD\" --step \"$SPLICE_STEP\" --artifact done > /dev/null\n\
         echo \"$a\"\n"
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

/// The example manifest, changed by `edit`, with the example prompts.
fn example(r: &Repo, edit: impl FnOnce(&mut Value)) {
    let text = std::fs::read_to_string(format!("{EXAMPLES}/diagnose-call.json")).unwrap();
    let mut manifest: Value = serde_json::from_str(&text).unwrap();
    edit(&mut manifest);
    r.write(".splice/manifest.json", &manifest.to_string());
    for prompt in std::fs::read_dir(format!("{EXAMPLES}/prompts")).unwrap() {
        let prompt = prompt.unwrap().path();
        let name = prompt.file_name().unwrap().to_string_lossy().to_string();
        r.write(
            &format!(".splice/prompts/{name}"),
            &std::fs::read_to_string(&prompt).unwrap(),
        );
    }
}

/// The example's step named `name`.
fn step<'m>(manifest: &'m mut Value, name: &str) -> &'m mut Value {
    manifest["steps"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["name"] == name)
        .unwrap()
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

/// Each dispatch's prompt, in order, with its step.
fn prompts(r: &Repo) -> Vec<(String, String)> {
    let log = std::fs::read_to_string(r.path().join("prompts.log")).unwrap_or_default();
    log.split("=== ")
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (step, prompt) = p.split_once('\n').unwrap();
            (step.to_string(), prompt.to_string())
        })
        .collect()
}

/// Every routing record the journal's after-images of `id` carry, each once, in order.
fn journaled_routing(r: &Repo, id: &str) -> Vec<Value> {
    let mut seen: Vec<Value> = Vec::new();
    for record in r.journal_records() {
        let mut found = Vec::new();
        collect_routing(&record, id, &mut found);
        for routing in found {
            if !seen.contains(&routing) {
                seen.push(routing);
            }
        }
    }
    seen
}

fn collect_routing(v: &Value, id: &str, out: &mut Vec<Value>) {
    match v {
        Value::Object(m) => {
            if m.get("id").and_then(Value::as_str) == Some(id)
                && let Some(routing) = m
                    .get("pipeline")
                    .and_then(|p| p.get("routing"))
                    .and_then(Value::as_array)
            {
                out.extend(routing.iter().cloned());
            }
            for child in m.values() {
                collect_routing(child, id, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|c| collect_routing(c, id, out)),
        _ => {}
    }
}

fn routing(b: &Value) -> Vec<Value> {
    b["pipeline"]["routing"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_failing_test_calls_diagnostics_which_returns_to_implement_with_its_diagnosis() {
    let r = Repo::unconfined();
    example(&r, |_| {});
    let id = r.task("Fix the parser", &[]);
    scripted_agent(&r);
    answers(&r, "test", &["FAILED: parser::s1_reads_a_header", "GREEN"]);
    answers(
        &r,
        "diagnose",
        &["DIAGNOSIS: the header reader drops its last byte (src/header.rs)"],
    );
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
    assert_eq!(b["status"], "closed");
    assert_eq!(
        (
            b["pipeline"]["route"].as_str(),
            b["pipeline"]["kind"].as_str()
        ),
        (Some("leaf"), Some("leaf")),
        "back on the caller's route, which closed it"
    );
    assert!(b["pipeline"]["calls"].is_null(), "no frame left: {b:#}");

    let fired = routing(&b);
    assert_eq!(fired.len(), 3, "{fired:#?}");
    let call = &fired[0];
    assert_eq!(
        (
            call["effect"].as_str(),
            call["when"].as_str(),
            call["branch"].as_u64()
        ),
        (Some("call"), Some("accepted"), Some(0))
    );
    assert_eq!(
        (call["from_route"].as_str(), call["from_step"].as_str()),
        (Some("leaf"), Some("test"))
    );
    assert_eq!(
        (call["to_route"].as_str(), call["to_step"].as_str()),
        (Some("diagnostics"), Some("diagnose")),
        "the callee's entry"
    );
    assert_eq!(call["return_to"], "implement");
    assert_eq!(call["depth"], 1);
    assert_eq!(call["matched"], "FAILED");
    let back = &fired[1];
    assert_eq!(
        (back["effect"].as_str(), back["when"].as_str()),
        (Some("return"), Some("accepted"))
    );
    assert!(
        back["branch"].is_null(),
        "no branch fired it: the route ended"
    );
    assert_eq!(
        (back["from_route"].as_str(), back["from_step"].as_str()),
        (Some("diagnostics"), Some("diagnose"))
    );
    assert_eq!(
        (back["to_route"].as_str(), back["to_step"].as_str()),
        (Some("leaf"), Some("implement"))
    );
    assert_eq!(back["depth"], 0);
    assert_eq!(fired[2]["matched"], "GREEN");

    // Journaled: the call's after-image holds the frame, the return's pops it.
    let journaled = journaled_routing(&r, &id);
    assert_eq!(journaled, fired, "each record is in the journal");
    let frames: Vec<Value> = r
        .journal_records()
        .into_iter()
        .flat_map(|rec| {
            let mut beads = Vec::new();
            collect_beads(&rec, &id, &mut beads);
            beads
        })
        .filter_map(|b| b["pipeline"]["calls"].as_array().cloned())
        .flatten()
        .collect();
    let frame = frames
        .first()
        .expect("a journaled after-image with the open call");
    assert_eq!(
        frame,
        &json!({
            "callee": "diagnostics", "route": "leaf", "kind": "leaf", "step": "test",
            "return_to": "implement", "seq": frame["seq"], "at": common::NOW
        })
    );

    // The diagnose step was told why it was called; implement was told what it found.
    let prompts = prompts(&r);
    let (_, diagnose) = prompts.iter().find(|(s, _)| s == "diagnose").unwrap();
    assert!(
        diagnose.contains(
            "Guidance for this step:\nThe test step reported: FAILED: parser::s1_reads_a_header"
        ),
        "{diagnose}"
    );
    let implement: Vec<&String> = prompts
        .iter()
        .filter(|(s, _)| s == "implement")
        .map(|(_, p)| p)
        .collect();
    assert_eq!(implement.len(), 2);
    let summary = "Route diagnostics (called from test) returned after diagnose: DIAGNOSIS: \
                   the header reader drops its last byte (src/header.rs)";
    assert!(implement[1].contains(summary), "{}", implement[1]);
    assert!(
        !implement[0].contains("Route diagnostics"),
        "{}",
        implement[0]
    );
}

fn collect_beads(v: &Value, id: &str, out: &mut Vec<Value>) {
    match v {
        Value::Object(m) => {
            if m.get("id").and_then(Value::as_str) == Some(id) && m.contains_key("pipeline") {
                out.push(v.clone());
            }
            m.values().for_each(|c| collect_beads(c, id, out));
        }
        Value::Array(a) => a.iter().for_each(|c| collect_beads(c, id, out)),
        _ => {}
    }
}

#[test]
fn a_call_beyond_the_depth_bound_parks_saying_so() {
    let r = Repo::unconfined();
    // The diagnose step calls its own route again while it answers DEEPER.
    example(&r, |m| {
        step(m, "diagnose")["on_result"] = json!([
            {"when": "accepted", "match": {"contains": "DEEPER"}, "action": {"call": "diagnostics", "return_to": "diagnose"}}
        ]);
    });
    let id = r.task("Fix the parser", &[]);
    scripted_agent(&r);
    answers(&r, "test", &["FAILED: everything"]);
    answers(&r, "diagnose", &["DEEPER", "DEEPER", "DEEPER", "DEEPER"]);
    let env = run(&r);
    assert_eq!(env["status"], "escalated", "{env:#}");
    assert_eq!(
        steps_run(&r),
        [
            "implement",
            "test",
            "diagnose",
            "diagnose",
            "diagnose",
            "diagnose"
        ]
    );
    let b = r.bead(&id);
    let calls = b["pipeline"]["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 4, "the bound: {calls:#?}");
    let reason = b["pipeline"]["dead_letter"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "call diagnostics from diagnose: 4 calls are open already, the most splice allows (4)"
        ) && reason.contains("inside 4 calls, innermost first"),
        "{reason}"
    );
    let fired = routing(&b);
    let effects: Vec<&str> = fired.iter().filter_map(|f| f["effect"].as_str()).collect();
    assert_eq!(effects, ["call", "call", "call", "call", "park"]);
    assert_eq!(fired[3]["depth"], 4);
}

#[test]
fn a_failed_callee_parks_naming_the_call_and_unpark_stays_inside_it() {
    let r = Repo::unconfined();
    // The diagnose step's floor never passes, and it has one attempt.
    example(&r, |m| {
        let d = step(m, "diagnose");
        d["max_attempts"] = json!(1);
        d["floors"] = json!([{"kind": "file_exists", "path": "diagnosis.md"}]);
    });
    let id = r.task("Fix the parser", &[]);
    scripted_agent(&r);
    answers(&r, "test", &["FAILED: parser::s1_reads_a_header", "GREEN"]);
    answers(&r, "diagnose", &["DIAGNOSIS: look at src/header.rs"]);
    let env = run(&r);
    assert_eq!(env["status"], "escalated", "{env:#}");
    let b = r.bead(&id);
    let reason = b["pipeline"]["dead_letter"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("attempts exhausted on diagnose: 1 of 1")
            && reason.ends_with(
                "(inside a call: route diagnostics was called from test (route leaf) and \
                 returns to implement)"
            ),
        "{reason}"
    );

    // status and show name the open call.
    let status = r.ok(&["status", "--json"]);
    let row = &status["nodes"][0];
    assert_eq!(row["rest"]["kind"], "parked", "{status:#}");
    assert_eq!(row["calls"][0]["return_to"], "implement", "{status:#}");
    assert_eq!(row["calls"][0]["callee"], "diagnostics");
    let text = r.run(&["status", "--color", "never"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("in a call from test, returns to implement"),
        "{text}"
    );
    let shown = r.run(&["show", &id]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains(
            "called        route diagnostics from test (route leaf), returns to implement"
        ),
        "{shown}"
    );
    assert_eq!(
        r.ok(&["show", &id, "--json"])[0]["pipeline"]["calls"][0]["step"],
        "test"
    );

    // Unpark stays inside the callee: same route, same step, the frame kept.
    r.ok(&[
        "transition",
        "unpark",
        "--bead",
        &id,
        "--reason",
        "the diagnosis file is there now",
    ]);
    let b = r.bead(&id);
    assert_eq!(
        (
            b["pipeline"]["route"].as_str(),
            b["pipeline"]["step"].as_str()
        ),
        (Some("diagnostics"), Some("diagnose"))
    );
    assert_eq!(b["pipeline"]["calls"].as_array().map(Vec::len), Some(1));

    // A person supplies the diagnosis: the callee ends and the node returns to implement.
    r.write(
        &format!(".splice/worktrees/{id}/diagnosis.md"),
        "the header reader drops its last byte\n",
    );
    let out = r.run(&[
        "transition",
        "complete",
        "--bead",
        &id,
        "--step",
        "diagnose",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b = r.bead(&id);
    assert_eq!(
        (
            b["pipeline"]["route"].as_str(),
            b["pipeline"]["step"].as_str()
        ),
        (Some("leaf"), Some("implement"))
    );
    assert!(b["pipeline"]["calls"].is_null());
    assert_eq!(routing(&b).last().unwrap()["effect"], "return");
    let env = run(&r);
    assert_eq!(env["status"], "done", "{env:#}");
}

#[test]
fn a_bad_return_to_or_a_call_without_one_is_refused_at_load_naming_its_path() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let before = r.beads_bytes();
    for (action, want) in [
        (
            json!({"call": "diagnostics", "return_to": "nowhere"}),
            "steps[1].on_result[0].action.return_to: \"nowhere\" is not a step of a route \
             holding \"test\" (one of deliver, implement, test)",
        ),
        (
            json!({"call": "diagnostics", "return_to": "diagnose"}),
            "steps[1].on_result[0].action.return_to: \"diagnose\" is not a step of a route \
             holding \"test\"",
        ),
        (
            json!({"call": "elsewhere", "return_to": "implement"}),
            "steps[1].on_result[0].action.call: \"elsewhere\" is not a declared route",
        ),
        (
            json!({"call": "diagnostics", "at": "implement", "return_to": "implement"}),
            "steps[1].on_result[0].action.at: \"implement\" is not a step of route diagnostics",
        ),
        (
            json!({"call": "diagnostics"}),
            "steps[1].on_result[0].action: `call` and `return_to` go together",
        ),
        (
            json!({"call": "diagnostics", "return_to": "implement", "then": "x"}),
            "unknown field `then`",
        ),
    ] {
        example(&r, |m| {
            step(m, "test")["on_result"][0]["action"] = action.clone()
        });
        let err = r.fails(2, &["status"]);
        assert!(
            err.contains("manifest.json") && err.contains(want),
            "{want}\n{err}"
        );
        assert_eq!(r.beads_bytes(), before, "nothing changed");
    }
    let _ = id;
}

#[test]
fn a_hostile_calls_value_is_refused_naming_the_file_and_field_or_parks() {
    let r = Repo::new();
    example(&r, |_| {});
    let id = r.task("T", &[]);
    let path = format!(".splice/beads/{id}.json");
    let original = r.bead(&id);
    let put = |calls: Value, at: (&str, &str)| {
        let mut b = original.clone();
        b["pipeline"]["calls"] = calls;
        b["pipeline"]["route"] = json!(at.0);
        b["pipeline"]["step"] = json!(at.1);
        r.write(&path, &serde_json::to_string_pretty(&b).unwrap());
    };
    let frame = json!({
        "callee": "diagnostics", "route": "leaf", "kind": "leaf", "step": "test",
        "return_to": "implement", "seq": 1, "at": common::NOW
    });
    for (calls, want) in [
        (json!(5), "pipeline.calls"),
        (json!([{"route": "leaf"}]), "pipeline.calls[0]"),
        (
            json!([{"colour": 1, "callee": "diagnostics"}]),
            "unknown field `colour`",
        ),
        (
            json!([frame
                .clone()
                .as_object()
                .unwrap()
                .clone()
                .into_iter()
                .chain([("kind".to_string(), json!("wizard"))])
                .collect::<serde_json::Map<_, _>>()]),
            "unknown variant `wizard`",
        ),
    ] {
        put(calls, ("diagnostics", "diagnose"));
        let err = r.fails(2, &["show", &id]);
        assert!(
            err.contains(&format!("{id}.json")) && err.contains(want),
            "{want}\n{err}"
        );
    }

    // A frame that parses but does not fit the manifest parks the node at the route's end,
    // naming the field; deep nesting in the file is no panic either.
    let mut bad = frame.clone();
    bad["return_to"] = json!("x".repeat(5000));
    let many: Vec<Value> = std::iter::repeat_n(frame.clone(), 200)
        .chain([bad])
        .collect();
    put(json!(many), ("diagnostics", "diagnose"));
    r.ok(&[
        "transition",
        "propose",
        "--bead",
        &id,
        "--step",
        "diagnose",
        "--artifact",
        "x",
    ]);
    r.ok(&[
        "transition",
        "complete",
        "--bead",
        &id,
        "--step",
        "diagnose",
    ]);
    let b = r.bead(&id);
    let reason = b["pipeline"]["dead_letter"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("pipeline.calls[200].return_to")
            && reason.contains("inside 201 calls")
            && reason.contains("and 197 more")
            && reason.len() < 2000,
        "{} bytes: {reason}",
        reason.len()
    );
    assert_eq!(b["pipeline"]["step"], "diagnose", "it stays where it was");
    assert_eq!(routing(&b).last().unwrap()["effect"], "park");
}
