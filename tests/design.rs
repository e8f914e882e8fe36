//! Design mode without the cockpit (issue 35): `splice design` talks with a scripted design
//! agent turn by turn, keeps the conversation in `.splice/design/<session>/`, records what the
//! agent asks for without doing it, crystallizes the conversation into a plan the critic judges,
//! refuses to approve it while a must-fix finding stands, and approves the fixed plan, starting
//! its campaign. The agent runs sandboxed: it reads the repository and writes nothing there.

mod common;

use common::Repo;
use serde_json::Value;

/// A repository with the scripted design agent and critic (`common::design_scripts`).
pub fn design_repo() -> Repo {
    let r = Repo::new();
    r.git(&["branch", "greeter"]);
    let config = common::design_scripts(r.path());
    // The distiller (issue 35, item 3) is given the plan's request and the conversation.
    std::fs::write(
        r.path().join("design/distiller.sh"),
        "grep -q '^# The design conversation' \"$1\" && \
         grep -q '^person: It greets in English only.' \"$1\" && \
         grep -q '^design agent: answer 1: noted.' \"$1\" && echo 'A greeter, in English.'\n",
    )
    .unwrap();
    let config = format!(
        "{config}distiller = [\"sh\", \"{}/design/distiller.sh\"]\n",
        r.path().display()
    );
    r.write(".splice/config.toml", &config);
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "design scripts"]);
    r
}

fn say(r: &Repo, text: &str) -> String {
    let out = r.run(&["design", "say", text]);
    common::no_panic(&out);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_conversation_is_crystallized_judged_fixed_and_approved() {
    let r = design_repo();
    let first = say(&r, "We need a greeter.");
    assert!(first.contains("design session d1, turn 1"), "{first}");
    assert!(first.contains("answer 1: noted."), "{first}");
    say(&r, "It greets in English only.");
    let third = say(&r, "That is all: crystallize it.");
    assert!(third.contains("answer 5: noted."), "{third}");
    assert!(
        third.contains("the design agent asks to crystallize: it happens only if you say so"),
        "{third}"
    );
    // The agent's request did nothing: no plan yet.
    let shown = r.ok(&["design", "show", "--json"]);
    assert_eq!(shown["status"], "conversation", "{shown:#}");
    assert_eq!(shown["turns"].as_array().unwrap().len(), 6);
    assert_eq!(shown["turns"][5]["request"], "crystallize");
    assert!(shown.get("plan").is_none(), "{shown:#}");
    // Its sandbox kept it from writing the repository.
    assert!(!r.path().join("design/agent-wrote").exists());

    // Crystallized: the plan validates, the critic must-fixes it, approval is refused.
    let out = r.run(&["design", "crystallize"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("MUST FIX high correctness: task hello names no file"),
        "{text}"
    );
    assert!(text.contains("splice design approve"), "{text}");
    let plan = r.path().join(".splice/design/d1/plan.json");
    assert!(plan.is_file());
    let notes = std::fs::read_to_string(r.path().join(".splice/design/d1/notes.md")).unwrap();
    assert!(notes.contains("It greets in English only."), "{notes}");
    let err = r.fails(
        1,
        &["design", "approve", "--agent", "sim", "--max-passes", "1"],
    );
    assert!(err.contains("1 must-fix finding(s)"), "{err}");
    assert!(!r.state().join("beads").read_dir().unwrap().any(|_| true));

    // The fix: said, crystallized again, judged clean, approved: the campaign starts.
    say(&r, "Task hello writes src/bye.txt.");
    let out = r.run(&["design", "crystallize", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let done: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(done["critic"]["findings"], serde_json::json!([]));
    let out = r.run(&["design", "approve", "--agent", "sim", "--max-passes", "1"]);
    assert_eq!(out.status.code(), Some(13), "{out:?}");
    let listed = r.ok(&["design", "list", "--json"]);
    let s = &listed["sessions"][0];
    assert_eq!(s["status"], "approved", "{listed:#}");
    let campaign = s["campaign"].as_str().unwrap();
    let root = r.bead(campaign);
    assert_eq!(root["title"], "Greeter");
    assert!(root["pipeline"]["plan"]["critic"].is_object(), "{root:#}");
    // Its steps get the intent distilled from the request and the conversation.
    assert_eq!(
        root["pipeline"]["intent"]["text"], "A greeter, in English.",
        "{root:#}"
    );

    // An approved session takes no more turns; a new one can be started.
    let out = r.run(&["design", "say", "--session", "d1", "one more thing"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("design session d1 is approved"));
    let next = say(&r, "Another piece of work.");
    assert!(next.contains("design session d2, turn 1"), "{next}");
}

#[test]
fn a_failing_agent_records_nothing_and_bad_session_files_are_named() {
    let r = design_repo();
    say(&r, "First.");
    let before = std::fs::read(r.path().join(".splice/design/d1/transcript.jsonl")).unwrap();
    r.write(
        ".splice/config.toml",
        "[plan]\ndesigner = [\"sh\", \"-c\", \"echo overloaded >&2; exit 3\"]\n",
    );
    let err = r.fails(2, &["design", "say", "Second."]);
    assert!(err.contains("the design agent `sh` ended"), "{err}");
    assert!(err.contains("overloaded"), "{err}");
    let after = std::fs::read(r.path().join(".splice/design/d1/transcript.jsonl")).unwrap();
    assert_eq!(before, after, "a failed turn is not recorded");

    let err = r.fails(2, &["design", "show", "--session", "../d1"]);
    assert!(err.contains("not a design session id"), "{err}");
    r.write(
        ".splice/design/d1/transcript.jsonl",
        "{\"role\": \"root\"}\n",
    );
    let err = r.fails(2, &["design", "show", "--session", "d1"]);
    assert!(err.contains("transcript.jsonl: line 1"), "{err}");
    // A dispatched session cannot talk to the design agent.
    let out = r
        .cmd(&["design", "say", "--new", "hi"])
        .env("SPLICE_DISPATCHED", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}
