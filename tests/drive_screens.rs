//! The cockpit's screens: the model built from replay-corpus snapshots (`snapshots/*.json`,
//! decided by `splice::decide::decide`) and drawn by `splice::drive::view::render` into
//! ratatui's `TestBackend`; each screen's text (one line per row, trailing spaces cut) is
//! compared with `tests/drive_screens/<case>.txt`. Re-approve a change on purpose with
//! `SPLICE_BLESS=1 cargo test --test drive_screens` and review the diff. Colours are not in the
//! text; `no_color_draws_no_colour` and `a_stopped_node_is_red` check them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::Color;
use serde_json::{Value, json};

use splice::decide::decide;
use splice::drive::model::StateRead;
use splice::drive::{Command, Model, Msg, view};
use splice::model::Snapshot;

fn corpus(case: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("snapshots/{case}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("a corpus case")).unwrap()
}

/// The state of `snapshot` as the app hands it over: decided, with these holders' liveness.
fn state(snapshot: Value, alive: &[(&str, Option<bool>)]) -> Msg {
    let snapshot: Snapshot = serde_json::from_value(snapshot).expect("a snapshot");
    let decision = decide(&snapshot);
    Msg::State(Box::new(StateRead {
        snapshot,
        decision,
        alive: alive
            .iter()
            .map(|(h, a)| (h.to_string(), *a))
            .collect::<BTreeMap<_, _>>(),
    }))
}

fn model_of(msg: Msg) -> Model {
    let mut m = Model::new(None);
    m.update(msg);
    m
}

fn press(m: &mut Model, code: KeyCode) -> Option<Command> {
    m.key(KeyEvent::from(code))
}

fn draw(m: &Model, width: u16, height: u16) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| view::render(m, f)).unwrap();
    terminal.backend().buffer().clone()
}

fn text(buffer: &Buffer) -> String {
    let area = buffer.area;
    let mut out = String::new();
    for y in 0..area.height {
        let line: String = (0..area.width).map(|x| buffer[(x, y)].symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn expected(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/drive_screens/{case}.txt"))
}

fn blessing() -> bool {
    std::env::var("SPLICE_BLESS").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Compare the screen of `m` at `width`×`height` with the checked-in one (or rewrite it).
fn check(case: &str, m: &Model, width: u16, height: u16) {
    let got = text(&draw(m, width, height));
    let path = expected(case);
    if blessing() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        got == want,
        "screen {case} differs from {}:\n--- got\n{got}--- want\n{want}\nif the change is \
         intended, re-approve with SPLICE_BLESS=1 cargo test --test drive_screens",
        path.display()
    );
}

/// A run watched from its first events: two passes, one dispatch in flight, tokens spent.
fn with_run(m: &mut Model) {
    m.update(Msg::RunStarted {
        run: "run-7".into(),
        background: true,
    });
    for e in [
        json!({"type": "pass_start", "pass": 1}),
        json!({"type": "action", "pass": 1, "action": {"action": "dispatch", "bead": "sp-root.1.1", "step": "generate-spec", "attempt": 1, "target": "main", "result": "started"}}),
        json!({"type": "dispatch_end", "bead": "sp-root.1.1", "step": "generate-spec", "attempt": 1, "exit": "ok", "code": 0, "elapsed_ms": 4000, "usage": {"input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.05}, "log": null, "problem": null}),
        json!({"type": "pass_end", "pass": 1, "status": "ready"}),
        json!({"type": "pass_start", "pass": 2}),
        json!({"type": "pass_end", "pass": 2, "status": "suspended-human"}),
    ] {
        m.update(Msg::RunEvent(serde_json::from_value(e).unwrap()));
    }
    m.update(Msg::Clock { wall_s: 75 });
}

#[test]
fn a_campaign_at_a_gate() {
    let mut m = model_of(state(corpus("autonomy-nearest-ancestor"), &[]));
    with_run(&mut m);
    press(&mut m, KeyCode::Down);
    press(&mut m, KeyCode::Down);
    assert_eq!(m.selected(), Some("sp-root.1.1"));
    check("gate", &m, 120, 40);
    assert_eq!(
        press(&mut m, KeyCode::Char('a')),
        Some(Command::Approve {
            bead: "sp-root.1.1".into(),
            step: "implement".into()
        })
    );
}

#[test]
fn a_node_running_under_a_dead_holder() {
    let m = model_of(state(
        corpus("running-other-holder"),
        &[("alice@laptop", Some(false))],
    ));
    check("dead-holder", &m, 120, 40);
}

#[test]
fn a_parked_node_with_its_reason() {
    let m = model_of(state(corpus("parked"), &[]));
    check("parked", &m, 120, 40);
}

/// `escalated-check` with the suite floor's own report of a missing `suite_cmd`.
fn missing_suite() -> Value {
    let mut snap = corpus("escalated-check");
    let reason = "suite_cmd unset on the campaign root sp-root: missing configuration is not \
                  incomplete work; run `splice transition set-config`";
    let check = &mut snap["beads"][0]["pipeline"]["last_check"];
    check["reason"] = json!(reason);
    check["evidence"] = json!([{
        "kind": "suite", "verdict": "escalate", "reason": reason,
        "evidence": {"unset": ["suite_cmd"]}
    }]);
    snap
}

#[test]
fn an_escalated_node() {
    let m = model_of(state(missing_suite(), &[]));
    check("escalated", &m, 120, 40);
}

#[test]
fn a_finished_campaign() {
    let mut m = model_of(state(corpus("scope-done"), &[]));
    m.update(Msg::RunStarted {
        run: "run-8".into(),
        background: false,
    });
    m.update(Msg::RunEvent(serde_json::from_value(json!({"type": "result", "subtype": "success", "is_error": false, "interrupted": false, "status": "done", "run": "run-8", "num_passes": 6, "dispatches": 4, "tokens": 5300, "duration_ms": 3_725_000, "text": "{}"})).unwrap()));
    check("finished", &m, 120, 40);
}

/// A loop node's scores since entry, as a run records them.
fn scored_loop() -> Value {
    let mut snap = corpus("loop-rollback");
    for (i, score) in [12, 14, -10].iter().enumerate() {
        snap["beads"][0]["pipeline"]["trajectory"][i]["score"] = json!(score);
    }
    snap
}

#[test]
fn a_loop_node_shows_its_scores() {
    let m = model_of(state(scored_loop(), &[]));
    check("loop-sparkline", &m, 120, 40);
}

#[test]
fn a_narrow_terminal() {
    let mut m = model_of(state(corpus("campaign-mixed"), &[]));
    with_run(&mut m);
    press(&mut m, KeyCode::Down);
    press(&mut m, KeyCode::Down);
    m.update(Msg::LogLines(vec![
        "assistant: reading src/lib.rs to find where the parser starts".into(),
        "tool Edit src/parse.rs".into(),
        "tool Bash cargo test --test parse".into(),
    ]));
    check("narrow", &m, 80, 24);
}

#[test]
fn a_refusal_shows_on_the_message_line() {
    let mut m = model_of(state(corpus("autonomy-nearest-ancestor"), &[]));
    m.update(Msg::Done(Err(
        "sp-root.1.1: the gate on generate-spec is not pending".into(),
    )));
    let screen = text(&draw(&m, 120, 40));
    let last = screen.lines().last().unwrap();
    assert_eq!(
        last,
        "refused: sp-root.1.1: the gate on generate-spec is not pending"
    );
    // Until the next key.
    press(&mut m, KeyCode::Down);
    assert!(text(&draw(&m, 120, 40)).lines().last().unwrap().is_empty());
}

fn colours(buffer: &Buffer) -> Vec<Color> {
    buffer
        .content()
        .iter()
        .flat_map(|c| [c.fg, c.bg])
        .filter(|c| *c != Color::Reset)
        .collect()
}

#[test]
fn no_color_draws_no_colour() {
    let mut m = model_of(state(corpus("campaign-mixed"), &[]));
    assert!(!colours(&draw(&m, 120, 40)).is_empty());
    m.set_color(false);
    assert_eq!(colours(&draw(&m, 120, 40)), Vec::<Color>::new());
}

#[test]
fn a_stopped_node_is_red() {
    let m = model_of(state(corpus("parked"), &[]));
    let buffer = draw(&m, 120, 40);
    let row = text(&buffer)
        .lines()
        .position(|l| l.contains("sp-a") && l.contains("parked"))
        .unwrap();
    assert!(
        (0..120).any(|x| buffer[(x, row as u16)].fg == Color::Red),
        "the parked node's row is red"
    );
}

#[test]
fn the_tree_scrolls_to_keep_the_selection_in_sight() {
    let mut m = model_of(state(corpus("campaign-mixed"), &[]));
    for _ in 0..4 {
        press(&mut m, KeyCode::Down);
    }
    // 80×14: the stacked tree pane shows only a few rows.
    let screen = text(&draw(&m, 80, 14));
    let selected: Vec<&str> = screen.lines().filter(|l| l.starts_with('›')).collect();
    assert_eq!(selected.len(), 1, "{screen}");
    assert!(selected[0].contains("sp-root.4"), "{screen}");
    assert!(
        !screen.contains("▾ sp-root sp-root title"),
        "scrolled past the root:\n{screen}"
    );
}
