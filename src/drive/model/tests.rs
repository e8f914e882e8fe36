//! Every key's effect on the model, the run bar's events and a refusal's message, on states
//! built from the replay corpus (`snapshots/*.json`, decided by `decide`).

use std::collections::BTreeMap;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};

use super::{Command, LOG_LINES, Model, Msg, StateRead};
use crate::decide::decide;
use crate::driver::events::Event;
use crate::model::RunStatus;

fn corpus(case: &str) -> Value {
    let path = format!("{}/snapshots/{case}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn state(snapshot: Value, alive: &[(&str, Option<bool>)]) -> Msg {
    let snapshot = serde_json::from_value(snapshot).unwrap();
    let decision = decide(&snapshot);
    let alive: BTreeMap<_, _> = alive.iter().map(|(h, a)| (h.to_string(), *a)).collect();
    Msg::State(Box::new(StateRead {
        snapshot,
        decision,
        alive,
    }))
}

fn model(case: &str) -> Model {
    let mut m = Model::new(None);
    m.update(state(corpus(case), &[]));
    m
}

fn press(m: &mut Model, code: KeyCode) -> Option<Command> {
    m.key(KeyEvent::from(code))
}

fn typed(m: &mut Model, text: &str) {
    for c in text.chars() {
        assert_eq!(press(m, KeyCode::Char(c)), None);
    }
}

fn keys(m: &Model) -> Vec<&'static str> {
    m.help_keys().into_iter().map(|(k, _)| k).collect()
}

#[test]
fn moving_is_clamped_and_follows_the_rows_shown() {
    let mut m = model("campaign-mixed");
    assert_eq!(m.selected(), Some("sp-root"));
    press(&mut m, KeyCode::Up);
    assert_eq!(m.selected(), Some("sp-root"));
    press(&mut m, KeyCode::Down);
    press(&mut m, KeyCode::Char('j'));
    assert_eq!(m.selected(), Some("sp-root.2"));
    press(&mut m, KeyCode::Char('k'));
    assert_eq!(m.selected(), Some("sp-root.1"));
    for _ in 0..10 {
        press(&mut m, KeyCode::Down);
    }
    assert_eq!(m.selected(), Some("sp-root.4"));
}

#[test]
fn a_new_read_keeps_the_selection_and_the_collapsed_set() {
    let mut m = model("autonomy-nearest-ancestor");
    press(&mut m, KeyCode::Down);
    press(&mut m, KeyCode::Char('h'));
    assert_eq!(m.visible_len(), 2);
    m.update(state(corpus("autonomy-nearest-ancestor"), &[]));
    assert_eq!(m.selected(), Some("sp-root.1"));
    assert_eq!(m.visible_len(), 2);
}

#[test]
fn collapse_expand_and_toggle() {
    let mut m = model("autonomy-nearest-ancestor");
    assert_eq!(m.visible_len(), 3);
    press(&mut m, KeyCode::Left);
    assert_eq!(m.visible_len(), 1);
    press(&mut m, KeyCode::Right);
    assert_eq!(m.visible_len(), 3);
    press(&mut m, KeyCode::Enter);
    assert_eq!(m.visible_len(), 1);
    press(&mut m, KeyCode::Char('l'));
    // ← on a leaf selects its parent; ← again collapses it.
    press(&mut m, KeyCode::Down);
    press(&mut m, KeyCode::Down);
    assert_eq!(m.selected(), Some("sp-root.1.1"));
    press(&mut m, KeyCode::Left);
    assert_eq!(m.selected(), Some("sp-root.1"));
    assert_eq!(m.visible_len(), 3);
    press(&mut m, KeyCode::Left);
    assert_eq!(m.visible_len(), 2);
}

#[test]
fn collapsing_above_the_selection_moves_it_up() {
    let mut m = model("autonomy-nearest-ancestor");
    press(&mut m, KeyCode::Down);
    press(&mut m, KeyCode::Down);
    m.collapsed.insert("sp-root".into());
    m.refresh_visible();
    assert_eq!(m.selected(), Some("sp-root"));
}

#[test]
fn approve_applies_only_at_a_pending_gate() {
    let mut m = model("gate-hitl-default");
    assert!(keys(&m).contains(&"a") && keys(&m).contains(&"x"));
    assert_eq!(
        press(&mut m, KeyCode::Char('a')),
        Some(Command::Approve {
            bead: "sp-a".into(),
            step: "generate-spec".into()
        })
    );
    let mut m = model("parked");
    assert!(!keys(&m).contains(&"a"));
    assert_eq!(press(&mut m, KeyCode::Char('a')), None);
    assert_eq!(m.message(), Some("a: sp-a has no pending gate"));
}

#[test]
fn reject_asks_a_reason_typed_erased_and_submitted() {
    let mut m = model("gate-hitl-default");
    assert_eq!(press(&mut m, KeyCode::Char('x')), None);
    assert_eq!(
        m.prompt().unwrap().label,
        "reason to reject sp-a at generate-spec"
    );
    assert!(keys(&m).contains(&"Esc"));
    typed(&mut m, "too vaguex");
    press(&mut m, KeyCode::Backspace);
    // `q` and `a` are text in a prompt, not keys.
    typed(&mut m, " qa");
    assert_eq!(m.prompt().unwrap().text, "too vague qa");
    assert_eq!(
        press(&mut m, KeyCode::Enter),
        Some(Command::Reject {
            bead: "sp-a".into(),
            step: "generate-spec".into(),
            reason: "too vague qa".into()
        })
    );
    assert!(m.prompt().is_none());
}

#[test]
fn a_prompt_cancelled_or_empty_sends_nothing() {
    let mut m = model("gate-hitl-default");
    press(&mut m, KeyCode::Char('x'));
    typed(&mut m, "no");
    assert_eq!(press(&mut m, KeyCode::Esc), None);
    assert!(m.prompt().is_none());
    assert_eq!(m.message(), Some("cancelled"));
    press(&mut m, KeyCode::Char('x'));
    typed(&mut m, "  ");
    assert_eq!(press(&mut m, KeyCode::Enter), None);
    assert!(
        m.prompt().is_some(),
        "an empty reason keeps the prompt open"
    );
    assert!(m.message().unwrap().contains("is empty"));
}

#[test]
fn clear_applies_only_to_a_dead_holder() {
    for (alive, applies) in [(Some(false), true), (Some(true), false), (None, false)] {
        let mut m = Model::new(None);
        m.update(state(
            corpus("running-other-holder"),
            &[("alice@laptop", alive)],
        ));
        assert_eq!(keys(&m).contains(&"c"), applies, "{alive:?}");
        press(&mut m, KeyCode::Char('c'));
        if applies {
            typed(&mut m, "laptop died");
            assert_eq!(
                press(&mut m, KeyCode::Enter),
                Some(Command::ClearClaim {
                    bead: "sp-a".into(),
                    reason: "laptop died".into()
                })
            );
        } else {
            assert!(m.prompt().is_none());
            assert!(m.message().unwrap().contains("claimed by alice@laptop"));
        }
    }
    let mut m = model("parked");
    press(&mut m, KeyCode::Char('c'));
    assert_eq!(m.message(), Some("c: sp-a has no claim by another holder"));
}

#[test]
fn a_claims_words_name_the_clear_key_only_where_it_applies() {
    for (alive, says) in [
        (Some(false), "clear the claim (c) so a new run can go on"),
        (
            Some(true),
            "a runner on this machine is working on it since",
        ),
        (None, "if that holder is gone, clear the claim"),
    ] {
        let mut m = Model::new(None);
        m.update(state(
            corpus("running-other-holder"),
            &[("alice@laptop", alive)],
        ));
        let next = m.next_of("sp-a");
        assert!(next.text.contains(says), "{alive:?}: {}", next.text);
        assert_eq!(
            next.text.contains("(c)"),
            alive == Some(false),
            "{}",
            next.text
        );
    }
}

#[test]
fn unpark_applies_to_a_parked_node() {
    let mut m = model("parked");
    press(&mut m, KeyCode::Char('u'));
    typed(&mut m, "fixed the tests");
    assert_eq!(
        press(&mut m, KeyCode::Enter),
        Some(Command::Unpark {
            bead: "sp-a".into(),
            reason: "fixed the tests".into()
        })
    );
    let mut m = model("gate-hitl-default");
    assert_eq!(press(&mut m, KeyCode::Char('u')), None);
    assert_eq!(m.message(), Some("u: sp-a is not parked"));
}

#[test]
fn guide_applies_when_the_monitor_asks() {
    let mut m = model("loop-ask-user");
    assert!(keys(&m).contains(&"g"));
    press(&mut m, KeyCode::Char('g'));
    typed(&mut m, "try the parser first");
    assert_eq!(
        press(&mut m, KeyCode::Enter),
        Some(Command::Guide {
            bead: "sp-a".into(),
            text: "try the parser first".into()
        })
    );
    let mut m = model("gate-hitl-default");
    press(&mut m, KeyCode::Char('g'));
    assert_eq!(
        m.message(),
        Some("g: the pass monitor asks nothing about sp-a")
    );
}

#[test]
fn suite_command_applies_to_a_missing_suite_cmd_escalation() {
    let mut snap = corpus("escalated-check");
    let reason = "suite_cmd unset on the campaign root sp-root: missing configuration is not \
                  incomplete work; run `splice transition set-config`";
    snap["beads"][0]["pipeline"]["last_check"]["reason"] = json!(reason);
    // The words alone are not the suite floor's report: `S` reads the report's `unset`.
    let mut m = Model::new(None);
    m.update(state(snap.clone(), &[]));
    assert!(!keys(&m).contains(&"S"));
    snap["beads"][0]["pipeline"]["last_check"]["evidence"] = json!([{
        "kind": "suite", "verdict": "escalate", "reason": reason,
        "evidence": {"unset": ["suite_cmd"]}
    }]);
    let mut m = Model::new(None);
    m.update(state(snap, &[]));
    assert!(keys(&m).contains(&"S"));
    press(&mut m, KeyCode::Char('S'));
    typed(&mut m, "cargo test");
    assert_eq!(
        press(&mut m, KeyCode::Enter),
        Some(Command::SetSuiteCmd {
            bead: "sp-root".into(),
            cmd: "cargo test".into()
        })
    );
    // Another escalation (the corpus case's own reason) is not one `S` fixes.
    let mut m = model("escalated-check");
    assert!(!keys(&m).contains(&"S"));
    press(&mut m, KeyCode::Char('S'));
    assert_eq!(
        m.message(),
        Some("S: sp-root did not escalate for a missing suite command")
    );
}

#[test]
fn open_and_edit_the_selected_artifact() {
    let mut m = model("gate-hitl-default");
    assert_eq!(
        press(&mut m, KeyCode::Char('o')),
        Some(Command::Open {
            path: "specs/sp-a.md".into(),
            edit: false
        })
    );
    assert_eq!(
        press(&mut m, KeyCode::Char('e')),
        Some(Command::Open {
            path: "specs/sp-a.md".into(),
            edit: true
        })
    );
    let mut empty = Model::new(None);
    assert_eq!(press(&mut empty, KeyCode::Char('o')), None);
    assert_eq!(empty.message(), Some("o: no node selected"));
}

#[test]
fn a_kept_review_is_the_review_steps_artifact_once_its_worktree_is_gone() {
    // Issue 33: the cockpit listed `reviews/<id>.md`, which went with the worktree.
    let hash = "ab".repeat(32);
    let mut snap = corpus("gate-hitl-default");
    let bead = &mut snap["beads"][0];
    bead["pipeline"]["step"] = json!("deliver");
    bead["pipeline"]["reviews"] = json!([{
        "sha256": hash, "step": "review", "seq": 9, "reviewed_sha": "c".repeat(40),
        "verdict": "PASS", "at": "2025-01-01T00:00:00Z"
    }]);
    let mut m = Model::new(None);
    m.update(state(snap.clone(), &[]));
    let kept = format!(".splice/reviews/sp-a/{hash}.md");
    assert!(
        m.artifacts("sp-a")
            .contains(&("review".to_string(), kept.clone())),
        "{:?}",
        m.artifacts("sp-a")
    );
    let detail = m.detail().unwrap();
    let review = detail.fields.iter().find(|f| f.label == "review").unwrap();
    assert!(
        review.value.starts_with("PASS of cccccccccccc"),
        "{}",
        review.value
    );
    // At its review step with a worktree, the reviewer's file is the one to open.
    snap["beads"][0]["pipeline"]["step"] = json!("review");
    snap["worktrees"] = json!(["sp-a"]);
    m.update(state(snap, &[]));
    assert_eq!(
        m.artifact("sp-a").as_deref(),
        Some(".splice/worktrees/sp-a/reviews/sp-a.md")
    );
}

fn started(m: &mut Model, background: bool) {
    m.update(Msg::RunStarted {
        run: "run-1".into(),
        background,
    });
}

#[test]
fn run_keys_follow_whether_a_run_is_going() {
    let mut m = model("parked");
    assert_eq!(press(&mut m, KeyCode::Char('r')), Some(Command::StartRun));
    assert_eq!(press(&mut m, KeyCode::Char('p')), Some(Command::Pass));
    assert_eq!(press(&mut m, KeyCode::Char('d')), Some(Command::DryRun));
    assert_eq!(press(&mut m, KeyCode::Char('s')), None);
    assert_eq!(m.message(), Some("s: no run is going"));
    started(&mut m, true);
    assert!(keys(&m).contains(&"s") && !keys(&m).contains(&"r"));
    assert_eq!(press(&mut m, KeyCode::Char('r')), None);
    assert_eq!(m.message(), Some("r: run run-1 is going"));
    assert_eq!(press(&mut m, KeyCode::Char('s')), Some(Command::StopRun));
    m.update(Msg::RunEnded {
        status: RunStatus::Ready,
    });
    assert_eq!(press(&mut m, KeyCode::Char('p')), Some(Command::Pass));
    // A run watched from elsewhere is stopped there.
    started(&mut m, false);
    assert_eq!(press(&mut m, KeyCode::Char('s')), None);
    assert!(m.message().unwrap().contains("started elsewhere"));
}

#[test]
fn quit_and_all_keys() {
    let mut m = model("parked");
    assert_eq!(press(&mut m, KeyCode::Char('q')), Some(Command::Quit));
    assert_eq!(
        m.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
        Some(Command::Quit)
    );
    assert!(!keys(&m).contains(&"a"));
    press(&mut m, KeyCode::Char('?'));
    assert!(m.showing_all_keys());
    assert!(keys(&m).contains(&"a"));
    press(&mut m, KeyCode::Char('?'));
    assert!(!keys(&m).contains(&"a"));
}

#[test]
fn a_refusal_shows_until_the_next_key() {
    let mut m = model("gate-hitl-default");
    m.update(Msg::Done(Err("the gate is not pending".into())));
    assert_eq!(m.message(), Some("refused: the gate is not pending"));
    press(&mut m, KeyCode::Down);
    assert_eq!(m.message(), None);
    m.update(Msg::Done(Ok("approved sp-a at generate-spec".into())));
    assert_eq!(m.message(), Some("approved sp-a at generate-spec"));
}

/// The `action` event a run writes when it starts a dispatch, made by the runner's own types.
fn dispatch_started(bead: &str, step: &str) -> Event {
    use crate::model::Action;
    use crate::model::envelope::{ActResult, ActionReport};
    let report = ActionReport {
        action: Action::Dispatch {
            bead: bead.into(),
            step: step.into(),
            attempt: 1,
            target: "main".into(),
        },
        result: ActResult::Started,
    };
    Event::Action {
        pass: 1,
        action: report,
    }
}

/// What the app tells the model of an event.
fn run_event(e: Event) -> Msg {
    Msg::RunEvent(Box::new(e))
}

/// The event of a JSON line as a run writes it.
fn event(line: Value) -> Event {
    Event::from_json_line(&line.to_string()).expect("an event")
}

/// A `dispatch_end` of `bead` with `usage`.
fn dispatch_end(bead: &str, usage: Value) -> Event {
    event(
        json!({"type": "dispatch_end", "bead": bead, "step": "review", "attempt": 1, "exit": "ok", "code": 0, "elapsed_ms": 10, "usage": usage, "log": null, "problem": null}),
    )
}

#[test]
fn the_run_bar_adds_up_events() {
    let mut m = model("parked");
    started(&mut m, true);
    for e in [
        event(json!({"type": "pass_start", "pass": 1})),
        // The event exactly as a run writes it (`driver::events::Event::Action`).
        event(serde_json::from_str(&dispatch_started("sp-a", "review").to_json_line()).unwrap()),
        event(
            json!({"type": "action", "pass": 1, "action": {"action": "check", "bead": "sp-b", "step": "review", "result": "done", "status": "pass", "detail": null}}),
        ),
    ] {
        m.update(run_event(e));
    }
    let bar = m.run().unwrap();
    assert_eq!((bar.passes, bar.in_flight.len()), (1, 1));
    assert_eq!(bar.status_text(), "running");
    m.update(run_event(dispatch_end(
        "sp-a",
        json!({"input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 500, "cost_usd": 0.25}),
    )));
    m.update(run_event(event(
        json!({"type": "pass_end", "pass": 1, "status": "escalated"}),
    )));
    m.update(Msg::Clock { wall_s: 42 });
    let bar = m.run().unwrap();
    assert_eq!(bar.in_flight.len(), 0);
    assert_eq!(
        (bar.tokens, bar.cost_usd, bar.wall_s),
        (120, Some(0.25), 42)
    );
    assert_eq!(bar.status, Some(RunStatus::Escalated));
    assert_eq!(bar.status_text(), "escalated");
    assert_eq!(bar.cost_text(), "$0.25");
    // A dispatch whose cost is unknown: the known part stays shown.
    m.update(run_event(dispatch_end("sp-b", json!({"input_tokens": 10}))));
    assert_eq!(m.run().unwrap().cost_text(), "$0.25 + unknown");
    assert!(m.run().unwrap().running());
    m.update(run_event(event(
        json!({"type": "result", "subtype": "success", "is_error": false, "interrupted": false, "status": "done", "run": "run-1", "num_passes": 3, "dispatches": 1, "tokens": 900, "cost_usd": null, "cost": null, "duration_ms": 61_000, "text": "{}"}),
    )));
    let bar = m.run().unwrap();
    assert!(!bar.running());
    assert_eq!((bar.passes, bar.tokens, bar.wall_s), (3, 900, 61));
    assert_eq!(bar.status_text(), "done");
}

#[test]
fn the_read_that_finds_the_budget_spent_is_no_pass_on_the_bar() {
    // `splice run --max-passes 3`: pass 4 starts, finds the budget spent and ends the run; the
    // result says 3 passes, and the bar said "pass 4" before it.
    let mut m = model("parked");
    started(&mut m, true);
    for e in [
        json!({"type": "pass_start", "pass": 3}),
        json!({"type": "pass_end", "pass": 3, "status": "ready"}),
        json!({"type": "pass_start", "pass": 4}),
        json!({"type": "pass_end", "pass": 4, "status": "budget"}),
    ] {
        m.update(run_event(event(e)));
    }
    let bar = m.run().unwrap();
    assert_eq!((bar.passes, bar.status), (3, Some(RunStatus::Budget)));
}

#[test]
fn the_log_keeps_the_last_lines_of_the_selected_node() {
    let mut m = model("campaign-mixed");
    m.update(Msg::LogLines(
        (0..250).map(|i| format!("line {i}")).collect(),
    ));
    assert_eq!(m.log().len(), LOG_LINES);
    assert_eq!(m.log().next(), Some("line 50"));
    press(&mut m, KeyCode::Down);
    assert_eq!(m.log().len(), 0, "another node's log starts empty");
}

#[test]
fn the_detail_shows_the_claim_and_its_holder() {
    let mut m = Model::new(None);
    m.update(state(
        corpus("running-other-holder"),
        &[("alice@laptop", Some(false))],
    ));
    let d = m.detail().unwrap();
    let claim = d.fields.iter().find(|f| f.label == "claim").unwrap();
    assert!(claim.value.starts_with("alice@laptop since") && claim.value.ends_with("(dead)"));
    assert!(
        d.next
            .command
            .unwrap()
            .contains("release --bead sp-a --clear")
    );
}

#[test]
fn plan_keys_ask_for_a_file_and_crystallize_waits_for_no_run() {
    let mut m = model("campaign-mixed");
    assert!(keys(&m).contains(&"P") && keys(&m).contains(&"A"));
    assert_eq!(press(&mut m, KeyCode::Char('A')), None);
    assert_eq!(
        m.prompt().map(|p| p.label.as_str()),
        Some("plan file to approve")
    );
    typed(&mut m, "plan.json");
    assert_eq!(
        press(&mut m, KeyCode::Enter),
        Some(Command::ApprovePlan {
            plan: "plan.json".into()
        })
    );
    assert_eq!(press(&mut m, KeyCode::Char('P')), None);
    typed(&mut m, "notes.md");
    assert_eq!(
        press(&mut m, KeyCode::Enter),
        Some(Command::Crystallize {
            notes: "notes.md".into()
        })
    );
    // A run of the cockpit is going: crystallizing (an agent) waits; approving a plan does not.
    started(&mut m, true);
    assert!(!keys(&m).contains(&"P") && keys(&m).contains(&"A"));
    assert_eq!(press(&mut m, KeyCode::Char('P')), None);
    assert!(m.prompt().is_none(), "no prompt while a run is going");
    assert!(
        m.message().is_some_and(|t| t.starts_with("P: ")),
        "{:?}",
        m.message()
    );
}

#[test]
fn the_design_pane_sends_turns_and_slash_commands_and_esc_keeps_the_session() {
    let mut m = model("campaign-mixed");
    assert!(keys(&m).contains(&"D"));
    assert_eq!(press(&mut m, KeyCode::Char('D')), Some(Command::DesignOpen));
    m.update(Msg::Design(Box::default()));
    // A slash command needs a session: none until the first turn.
    typed(&mut m, "/crystallize");
    assert_eq!(press(&mut m, KeyCode::Enter), None);
    assert!(
        m.message()
            .is_some_and(|t| t.contains("say something first"))
    );
    // Typed keys are text here, not commands: `q` does not quit.
    typed(&mut m, "quite so");
    assert_eq!(
        press(&mut m, KeyCode::Enter),
        Some(Command::DesignSay {
            session: None,
            text: "quite so".into()
        })
    );
    m.update(Msg::Design(Box::new(super::DesignPane {
        session: Some("d1".into()),
        ..super::DesignPane::default()
    })));
    for (line, cmd) in [
        (
            "/crystallize",
            Some(Command::DesignCrystallize {
                session: "d1".into(),
            }),
        ),
        (
            "/approve it is known",
            Some(Command::DesignApprove {
                session: "d1".into(),
                override_critic: Some("it is known".into()),
            }),
        ),
        (
            "/approve",
            Some(Command::DesignApprove {
                session: "d1".into(),
                override_critic: None,
            }),
        ),
        (
            "/abort",
            Some(Command::DesignAbort {
                session: "d1".into(),
            }),
        ),
        ("/merge", None),
    ] {
        typed(&mut m, line);
        assert_eq!(press(&mut m, KeyCode::Enter), cmd, "{line}");
    }
    assert!(m.message().is_some_and(|t| t.contains("/merge: unknown")));
    // What is being typed survives the pane's refresh.
    typed(&mut m, "half a");
    m.update(Msg::Design(Box::new(super::DesignPane {
        session: Some("d1".into()),
        ..super::DesignPane::default()
    })));
    assert_eq!(m.design().unwrap().input, "half a");
    assert_eq!(press(&mut m, KeyCode::Esc), None);
    assert!(m.design().is_none());
    assert_eq!(m.message(), Some("design session d1 kept: D resumes it"));
}
