//! Call and return (`on_result` action `call`): a branch runs another route for the node and,
//! when that route ends, the node comes back to a step of its caller's route.
//!
//! The call itself is resolved with the other actions ([`super::branch`]); this module holds
//! what a call's end needs: where the innermost open frame (`pipeline.calls`) returns, and the
//! callee's summary given to the next dispatch. Pure, like the rest of [`crate::policy`]: a
//! frame a hostile file made up (a route that is not declared, a `return_to` that is no step of
//! it) becomes a reason to park, naming the field, never a panic or a silent default.
//!
//! | event | effect |
//! |---|---|
//! | a branch's `call` fires, fewer than [`MAX_CALL_DEPTH`] calls open | a frame is pushed; the node enters the callee at `at` (default its entry), taking its kind |
//! | a `call` fires with [`MAX_CALL_DEPTH`] open | the node parks, saying so |
//! | the node's route ends (its last step accepted or skipped) with a frame open | the frame pops; the node enters `return_to` on the caller's route, with the caller's kind, and the callee's summary as guidance |
//! | the same, with a frame that cannot be returned to | the node parks, naming the frame's field |
//! | a call or a return past [`super::branch::MAX_SWITCHES`] moves | the node parks (the cycle guard) |

use crate::model::bead::CallFrame;
use crate::model::id::shown;
use crate::model::{Bead, Kind, Manifest};

use super::branch::{MAX_SWITCHES, cap_reason, switches};

/// The most calls a node may have open at once; a call beyond it parks the node.
pub const MAX_CALL_DEPTH: usize = 4;

/// How much of the callee's last response a return carries to the next dispatch, in bytes.
pub const SUMMARY_CAP: usize = 1200;

/// Where a node goes when its route ends inside a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Return {
    /// The caller's route (as the frame recorded).
    pub route: String,
    /// The kind of node that walked it.
    pub kind: Kind,
    /// The caller's step the node enters (the frame's `return_to`).
    pub step: String,
    /// The callee's summary, for the next dispatch.
    pub guidance: String,
    /// How many calls stay open after this return.
    pub depth: usize,
}

/// The return of `bead`'s innermost open call, its route having ended at its current step; a
/// reason to park when there is none to make (no frame, a frame that does not fit the
/// manifest, or the switch cap reached).
pub fn returning(manifest: &Manifest, bead: &Bead) -> Result<Return, String> {
    let p = &bead.pipeline;
    let Some(frame) = p.calls.last() else {
        return Err(format!(
            "route {} ended at {} with no call open to return from",
            p.route, p.step
        ));
    };
    let field = format!("pipeline.calls[{}]", p.calls.len() - 1);
    let moved = switches(bead);
    if moved >= MAX_SWITCHES {
        return Err(cap_reason(moved));
    }
    let cannot = |why: String| {
        format!(
            "route {} ended at {} inside a call that cannot return: {why}",
            p.route, p.step
        )
    };
    let Some(steps) = manifest.route(&frame.route) else {
        return Err(cannot(format!(
            "its caller's route {} ({field}.route) is not a declared route (one of {})",
            shown(&frame.route),
            manifest.route_names()
        )));
    };
    if !steps.contains(&frame.return_to) {
        return Err(cannot(format!(
            "its return_to {} ({field}.return_to) is not a step of route {} (one of {})",
            shown(&frame.return_to),
            frame.route,
            steps.join(", ")
        )));
    }
    Ok(Return {
        route: frame.route.clone(),
        kind: frame.kind,
        step: frame.return_to.clone(),
        guidance: summary(bead, frame),
        depth: p.calls.len() - 1,
    })
}

/// What the callee did, for the caller's next dispatch: its last step's recorded response
/// (when that step was dispatched since the node entered it), else its check's reason, bounded
/// to [`SUMMARY_CAP`].
pub fn summary(bead: &Bead, frame: &CallFrame) -> String {
    let p = &bead.pipeline;
    let said = bead
        .dispatch_since_entry()
        .and_then(|_| p.responses.get(p.step.as_str()))
        .map(|r| r.text.trim())
        .filter(|t| !t.is_empty());
    let body = match (said, bead.check_since_entry()) {
        (Some(text), _) => bounded(text, SUMMARY_CAP),
        (None, Some(check)) => format!(
            "(no response recorded; its check: {})",
            bounded(&check.reason, SUMMARY_CAP)
        ),
        (None, None) => "(no response recorded)".to_string(),
    };
    format!(
        "Route {} (called from {}) returned after {}: {body}",
        p.route, frame.step, p.step
    )
}

/// `text` cut to at most `cap` bytes at a character boundary, saying how much was cut.
fn bounded(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    let mut end = cap.saturating_sub(40);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes cut]", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::bead::{Dispatch, StepResponse};

    const CALLS: &str = r#"{
        "schema_version": 3,
        "routes": {
            "root": ["s", "d"], "compound": ["s", "d"],
            "leaf": ["implement", "test", "deliver"], "diagnostics": ["diagnose"]
        },
        "route_kinds": { "root": "root", "compound": "compound", "leaf": "leaf", "diagnostics": "compound" },
        "steps": [
            { "name": "implement", "run": { "prompt": "a" }, "floors": [] },
            { "name": "test", "run": { "prompt": "a" }, "floors": [] },
            { "name": "deliver", "run": { "prompt": "a" }, "floors": [] },
            { "name": "diagnose", "run": { "prompt": "a" }, "floors": [] },
            { "name": "s", "role": "split", "floors": [] },
            { "name": "d", "role": "delegate", "floors": [] }
        ]
    }"#;

    fn manifest() -> Manifest {
        Manifest::parse(CALLS).unwrap_or_else(|p| panic!("{p}"))
    }

    fn frame(route: &str, return_to: &str) -> CallFrame {
        CallFrame {
            callee: "diagnostics".into(),
            route: route.into(),
            kind: Kind::Leaf,
            step: "test".into(),
            return_to: return_to.into(),
            seq: 3,
            at: "t".into(),
        }
    }

    /// A node at `diagnose` on diagnostics, called from test, dispatched there since entry and
    /// answering `said`.
    fn called(said: &str) -> Bead {
        let mut b = Bead::new("x".into(), "x".into(), String::new(), "t");
        b.pipeline.route = "diagnostics".into();
        b.pipeline.kind = Kind::Compound;
        b.pipeline.step = "diagnose".into();
        b.pipeline.entered = 4;
        b.pipeline.calls.push(frame("leaf", "implement"));
        b.pipeline.last_dispatch = Some(Box::new(Dispatch {
            step: "diagnose".into(),
            attempt: 1,
            seq: 5,
            holder: "h".into(),
            at: "t".into(),
        }));
        b.pipeline.responses.insert(
            "diagnose".into(),
            StepResponse {
                text: said.into(),
                confidence: None,
            },
        );
        b
    }

    #[test]
    fn the_innermost_frame_returns_to_its_callers_route_kind_and_step_with_the_summary() {
        let r = returning(&manifest(), &called("  the parser drops the last byte ")).unwrap();
        assert_eq!((r.route.as_str(), r.step.as_str()), ("leaf", "implement"));
        assert_eq!(r.kind, Kind::Leaf, "the caller's kind, not the callee's");
        assert_eq!(r.depth, 0);
        assert_eq!(
            r.guidance,
            "Route diagnostics (called from test) returned after diagnose: the parser drops \
             the last byte"
        );
        let mut nested = called("x");
        nested.pipeline.calls.insert(0, frame("leaf", "deliver"));
        nested.pipeline.calls[1].route = "diagnostics".into();
        nested.pipeline.calls[1].return_to = "diagnose".into();
        let r = returning(&manifest(), &nested).unwrap();
        assert_eq!(
            (r.route.as_str(), r.step.as_str(), r.depth),
            ("diagnostics", "diagnose", 1)
        );
    }

    #[test]
    fn a_stale_or_missing_response_is_not_the_summary_and_a_long_one_is_bounded() {
        let mut b = called("from an earlier visit");
        b.pipeline.last_dispatch = None;
        let f = frame("leaf", "implement");
        assert!(
            summary(&b, &f).ends_with("(no response recorded)"),
            "{}",
            summary(&b, &f)
        );
        let long = called(&"é".repeat(5000));
        let s = summary(&long, &f);
        assert!(
            s.len() < SUMMARY_CAP + 200 && s.contains("bytes cut]"),
            "{}",
            s.len()
        );
    }

    #[test]
    fn a_frame_that_does_not_fit_the_manifest_is_a_reason_naming_its_field() {
        let m = manifest();
        let mut b = called("x");
        b.pipeline.calls[0].return_to = "nowhere".into();
        let why = returning(&m, &b).unwrap_err();
        assert!(
            why.contains("\"nowhere\"") && why.contains("pipeline.calls[0].return_to"),
            "{why}"
        );
        b.pipeline.calls[0].route = "x".repeat(10_000);
        let why = returning(&m, &b).unwrap_err();
        assert!(
            why.contains("pipeline.calls[0].route") && why.len() < 400,
            "quoted cut: {why}"
        );
        b.pipeline.calls.clear();
        assert!(returning(&m, &b).unwrap_err().contains("no call open"));
    }

    #[test]
    fn a_return_counts_towards_the_switch_cap() {
        use crate::model::bead::{Routing, RoutingEffect};
        let mut b = called("x");
        let moved = Routing {
            step: "test".into(),
            branch: Some(0),
            when: "accepted".into(),
            matched: String::new(),
            effect: RoutingEffect::Call,
            from_route: "leaf".into(),
            from_step: "test".into(),
            to_route: Some("diagnostics".into()),
            to_step: Some("diagnose".into()),
            reason: None,
            return_to: Some("implement".into()),
            depth: Some(1),
            seq: 1,
            at: "t".into(),
        };
        for _ in 0..MAX_SWITCHES {
            b.pipeline.routing.push(moved.clone());
        }
        let why = returning(&manifest(), &b).unwrap_err();
        assert!(why.contains("16") && why.contains("cycle"), "{why}");
    }
}
