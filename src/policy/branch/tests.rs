//! Every matcher, action and firing point of result branches, on plain values.

use serde_json::json;

use super::*;
use crate::model::bead::{Check, Routing, RoutingEffect, StepResponse};

/// The default manifest with `branches` on the review step (replacing its own).
fn manifest(branches: &str) -> Manifest {
    let text = crate::model::manifest::DEFAULT_MANIFEST.replace(
        "\"name\": \"review\",",
        &format!("\"name\": \"review\", \"on_result\": {branches},"),
    );
    // The default's own review branches follow; drop them.
    let mut v: Value = serde_json::from_str(&text.replacen(
        "\"on_result\": [\n        { \"when\": \"refused\", \"match\": { \"field\": \"verdict\", \"equals\": \"FAIL\" }, \"action\": { \"goto\": \"implement\", \"guidance\": \"{{ result.text }}\" } },\n        { \"when\": \"refused\", \"match\": { \"field\": \"covered\", \"equals\": false }, \"action\": { \"goto\": \"implement\" } }\n      ],",
        "",
        1,
    ))
    .unwrap();
    v["schema_version"] = 3.into();
    Manifest::parse(&v.to_string()).unwrap()
}

fn at_review() -> Bead {
    let mut b = Bead::new("sp-1".into(), "x".into(), String::new(), "t");
    b.pipeline.route = "leaf".into();
    b.pipeline.step = "review".into();
    b
}

fn said(t: &str) -> StepResponse {
    StepResponse {
        text: t.into(),
        confidence: None,
    }
}

fn text(t: &str) -> StepResult {
    StepResult {
        text: Some(t.into()),
        ..StepResult::default()
    }
}

fn one(branch: &str, result: &StepResult, firing: Firing) -> Option<Fired> {
    fire(
        &manifest(&format!("[{branch}]")),
        &at_review(),
        firing,
        result,
    )
}

const GO: &str = r#""action":{"goto":"implement"}"#;

#[test]
fn contains_is_a_case_insensitive_substring() {
    let b = format!(r#"{{"when":"any","match":{{"contains":"planning"}},{GO}}}"#);
    let f = one(&b, &text("I think: PLANNING."), Firing::Accepted).unwrap();
    assert_eq!(f.matched, "PLANNING");
    assert!(one(&b, &text("debugging"), Firing::Accepted).is_none());
    assert!(
        one(&b, &StepResult::default(), Firing::Accepted).is_none(),
        "no text"
    );
}

#[test]
fn matches_is_an_unanchored_regex() {
    let b = format!(r#"{{"when":"any","match":{{"matches":"[0-9]+ failed"}},{GO}}}"#);
    let f = one(&b, &text("ran: 3 failed, 2 ok"), Firing::Refused).unwrap();
    assert_eq!(f.matched, "3 failed");
    assert!(one(&b, &text("all passed"), Firing::Refused).is_none());
}

#[test]
fn field_equals_compares_json_values() {
    let b = format!(r#"{{"when":"refused","match":{{"field":"verdict","equals":"FAIL"}},{GO}}}"#);
    let mut r = StepResult::default();
    r.fields.insert("verdict".into(), json!("FAIL"));
    assert_eq!(one(&b, &r, Firing::Refused).unwrap().matched, "FAIL");
    r.fields.insert("verdict".into(), json!("fail"));
    assert!(one(&b, &r, Firing::Refused).is_none(), "exact");
    let stale = format!(r#"{{"when":"refused","match":{{"field":"stale","equals":true}},{GO}}}"#);
    r.fields.insert("stale".into(), json!(true));
    assert_eq!(one(&stale, &r, Firing::Refused).unwrap().matched, "true");
}

#[test]
fn exit_code_and_always() {
    let b = format!(r#"{{"when":"any","match":{{"exit_code":3}},{GO}}}"#);
    let r = StepResult {
        exit_code: Some(3),
        ..StepResult::default()
    };
    assert_eq!(one(&b, &r, Firing::Refused).unwrap().matched, "3");
    assert!(one(&b, &StepResult::default(), Firing::Refused).is_none());
    let always = format!(r#"{{"when":"any","match":{{"always":true}},{GO}}}"#);
    assert_eq!(
        one(&always, &StepResult::default(), Firing::Accepted)
            .unwrap()
            .matched,
        ""
    );
}

#[test]
fn when_picks_the_firing_point_and_the_first_match_wins() {
    let refused = format!(r#"{{"when":"refused","match":{{"always":true}},{GO}}}"#);
    assert!(one(&refused, &text("x"), Firing::Accepted).is_none());
    assert!(one(&refused, &text("x"), Firing::Refused).is_some());
    let accepted = format!(r#"{{"when":"accepted","match":{{"always":true}},{GO}}}"#);
    assert!(one(&accepted, &text("x"), Firing::Refused).is_none());
    let m = manifest(
        r#"[{"when":"any","match":{"contains":"zzz"},"action":{"abort":"first"}},
            {"when":"any","match":{"always":true},"action":{"abort":"second"}},
            {"when":"any","match":{"always":true},"action":{"abort":"third"}}]"#,
    );
    let f = fire(&m, &at_review(), Firing::Refused, &text("x")).unwrap();
    assert_eq!((f.index, f.effect), (1, Effect::Abort("second".into())));
}

#[test]
fn every_action() {
    let act = |a: &str| {
        one(
            &format!(r#"{{"when":"any","match":{{"always":true}},"action":{a}}}"#),
            &text("the text"),
            Firing::Accepted,
        )
        .unwrap()
        .effect
    };
    assert_eq!(act(r#"{"continue":true}"#), Effect::Continue);
    assert_eq!(
        act(r#"{"goto":"implement","guidance":"{{ result.text }}"}"#),
        Effect::Goto {
            step: "implement".into(),
            guidance: Some("the text".into())
        }
    );
    assert_eq!(
        act(r#"{"route":"compound"}"#),
        Effect::Route {
            route: "compound".into(),
            kind: Kind::Compound,
            step: "generate-spec".into()
        },
        "review is not on compound: its entry"
    );
    assert_eq!(
        act(r#"{"route":"compound","at":"delegate"}"#),
        Effect::Route {
            route: "compound".into(),
            kind: Kind::Compound,
            step: "delegate".into()
        }
    );
    assert_eq!(
        act(r#"{"abort":"no route matched"}"#),
        Effect::Abort("no route matched".into())
    );
    assert_eq!(
        act(r#"{"suggest_route":"root"}"#),
        Effect::SuggestRoute("root".into())
    );
}

#[test]
fn a_switch_lands_after_the_current_step_when_the_new_route_holds_it() {
    let m = Manifest::default_manifest();
    assert_eq!(landing(&m, "compound", "generate-spec"), "to-issues");
    assert_eq!(landing(&m, "compound", "review"), "generate-spec");
    assert_eq!(
        landing(&m, "root", "integrate"),
        "create-prp",
        "last step: the entry"
    );
}

#[test]
fn templates_resolve_trimmed_or_park_naming_the_template_and_the_names() {
    let mut b = at_review();
    b.pipeline
        .responses
        .insert("implement".into(), said("  compound \n"));
    let mut r = text("leaf");
    r.fields.insert("verdict".into(), json!("root"));
    assert_eq!(
        render("{{ step.implement.response }}", &b, &r).unwrap(),
        "compound"
    );
    assert_eq!(render("{{result.verdict}}", &b, &r).unwrap(), "root");
    assert_eq!(render("see {{ bead.id }}", &b, &r).unwrap(), "see sp-1");
    let e = render("{{ step.review.response }}", &b, &r).unwrap_err();
    assert!(
        e.contains("step.review.response") && e.contains("implement"),
        "{e}"
    );
    let e = render("{{ result.text }}", &b, &text("   ")).unwrap_err();
    assert!(e.contains("result.text"), "{e}");
    let m = manifest(
        r#"[{"when":"any","match":{"always":true},"action":{"route":"{{ result.text }}"}}]"#,
    );
    let f = fire(&m, &b, Firing::Accepted, &text("compound")).unwrap();
    assert!(matches!(f.effect, Effect::Route { ref route, .. } if route == "compound"));
    let Effect::Park(why) = fire(&m, &b, Firing::Accepted, &text("planning"))
        .unwrap()
        .effect
    else {
        panic!("parks");
    };
    assert!(
        why.contains("\"planning\"") && why.contains("{{ result.text }}") && why.contains("leaf"),
        "{why}"
    );
    let m = manifest(
        r#"[{"when":"any","match":{"always":true},"action":{"goto":"{{ result.text }}"}}]"#,
    );
    let Effect::Park(why) = fire(&m, &b, Firing::Accepted, &text("delegate"))
        .unwrap()
        .effect
    else {
        panic!("parks");
    };
    assert!(why.contains("not a step of route leaf"), "{why}");
    let Effect::Park(why) = fire(&m, &b, Firing::Accepted, &StepResult::default())
        .unwrap()
        .effect
    else {
        panic!("parks");
    };
    assert!(why.contains("has no value"), "{why}");
}

#[test]
fn a_node_switched_sixteen_times_parks_instead() {
    let mut b = at_review();
    let moved = Routing {
        step: "review".into(),
        branch: Some(0),
        when: "refused".into(),
        matched: String::new(),
        effect: RoutingEffect::Goto,
        from_route: "leaf".into(),
        from_step: "review".into(),
        to_route: Some("leaf".into()),
        to_step: Some("implement".into()),
        reason: None,
        return_to: None,
        depth: None,
        seq: 1,
        at: "t".into(),
    };
    b.pipeline.routing = vec![moved; MAX_SWITCHES - 1].into();
    let m = manifest(format!("[{{\"when\":\"any\",\"match\":{{\"always\":true}},{GO}}}]").as_str());
    assert!(matches!(
        fire(&m, &b, Firing::Refused, &text("x")).unwrap().effect,
        Effect::Goto { .. }
    ));
    let first = b.pipeline.routing[0].clone();
    b.pipeline.routing.push(first);
    let Effect::Park(why) = fire(&m, &b, Firing::Refused, &text("x")).unwrap().effect else {
        panic!("parks");
    };
    assert!(why.contains("16"), "{why}");
}

#[test]
fn the_result_is_read_from_the_node() {
    let mut b = at_review();
    b.pipeline.last_check = Some(Box::new(Check {
        step: "review".into(),
        seq: 3,
        verdict: Verdict::Refuse,
        reason: "review: FAIL".into(),
        evidence: json!([
            {"kind": "coverage", "verdict": "pass", "reason": "", "evidence": {"verdict": "ok"}},
            {"kind": "review", "verdict": "refuse", "reason": "", "evidence": {"verdict": "FAIL", "text": "fix it"}}
        ]),
        run: None,
        awaiting_merge: false,
        recheck: false,
        at: "t".into(),
    }));
    b.pipeline.responses.insert("review".into(), said("done"));
    let r = StepResult::of(&b, Firing::Refused);
    assert_eq!(
        r.fields["verdict"],
        json!("FAIL"),
        "the refusing floor first"
    );
    assert_eq!(r.text.as_deref(), Some("fix it"));
    assert_eq!(
        StepResult::of(&b, Firing::Accepted).text.as_deref(),
        Some("done")
    );
    if let Some(c) = b.pipeline.last_check.as_mut() {
        c.evidence = json!([]);
    }
    assert_eq!(
        StepResult::of(&b, Firing::Refused).text.as_deref(),
        Some("review: FAIL")
    );
}

fn call_effect(action: &str, bead: &Bead, result: &StepResult) -> Effect {
    let m = manifest(&format!(
        r#"[{{"when":"any","match":{{"always":true}},"action":{action}}}]"#
    ));
    fire(&m, bead, Firing::Accepted, result).unwrap().effect
}

fn frame() -> crate::model::bead::CallFrame {
    crate::model::bead::CallFrame {
        callee: "compound".into(),
        route: "leaf".into(),
        kind: Kind::Leaf,
        step: "review".into(),
        return_to: "implement".into(),
        seq: 1,
        at: "t".into(),
    }
}

#[test]
fn a_call_enters_the_callees_entry_or_at_and_keeps_where_it_returns() {
    let b = at_review();
    assert_eq!(
        call_effect(
            r#"{"call":"compound","return_to":"implement"}"#,
            &b,
            &text("x")
        ),
        Effect::Call {
            route: "compound".into(),
            kind: Kind::Compound,
            step: "generate-spec".into(),
            return_to: "implement".into(),
            guidance: None,
        },
        "its entry, even though the callee holds no review"
    );
    assert_eq!(
        call_effect(
            r#"{"call":"{{ result.text }}","at":"to-issues","return_to":"{{ step.implement.response }}","guidance":"saw {{ result.text }}"}"#,
            &{
                let mut b = at_review();
                b.pipeline
                    .responses
                    .insert("implement".into(), said(" deliver "));
                b
            },
            &text(" compound "),
        ),
        Effect::Call {
            route: "compound".into(),
            kind: Kind::Compound,
            step: "to-issues".into(),
            return_to: "deliver".into(),
            guidance: Some("saw compound".into()),
        },
        "templates resolve and trim as for route and goto"
    );
}

#[test]
fn a_call_whose_targets_do_not_resolve_parks_naming_them() {
    let b = at_review();
    let Effect::Park(why) = call_effect(
        r#"{"call":"compound","return_to":"{{ result.text }}"}"#,
        &b,
        &text("delegate"),
    ) else {
        panic!("parks");
    };
    assert!(
        why.contains("return_to") && why.contains("\"delegate\"") && why.contains("route leaf"),
        "delegate is no step of the caller's route: {why}"
    );
    let Effect::Park(why) = call_effect(
        r#"{"call":"{{ result.text }}","return_to":"implement"}"#,
        &b,
        &text("nowhere"),
    ) else {
        panic!("parks");
    };
    assert!(
        why.contains("\"nowhere\"") && why.contains("not a declared route"),
        "{why}"
    );
    let Effect::Park(why) = call_effect(
        r#"{"call":"compound","at":"{{ result.text }}","return_to":"implement"}"#,
        &b,
        &text("review"),
    ) else {
        panic!("parks");
    };
    assert!(why.contains("not a step of route compound"), "{why}");
}

#[test]
fn a_call_beyond_the_depth_bound_parks_and_one_below_it_calls() {
    let mut b = at_review();
    let action = r#"{"call":"compound","return_to":"implement"}"#;
    for _ in 0..crate::policy::call::MAX_CALL_DEPTH - 1 {
        b.pipeline.calls.push(frame());
    }
    assert!(matches!(
        call_effect(action, &b, &text("x")),
        Effect::Call { .. }
    ));
    b.pipeline.calls.push(frame());
    let Effect::Park(why) = call_effect(action, &b, &text("x")) else {
        panic!("parks");
    };
    assert!(
        why.contains("4 calls are open") && why.contains("(4)"),
        "{why}"
    );
}

#[test]
fn calls_and_returns_count_towards_the_switch_cap() {
    let mut b = at_review();
    let mut moved = Routing {
        step: "review".into(),
        branch: None,
        when: "accepted".into(),
        matched: String::new(),
        effect: RoutingEffect::Call,
        from_route: "leaf".into(),
        from_step: "review".into(),
        to_route: Some("compound".into()),
        to_step: Some("generate-spec".into()),
        reason: None,
        return_to: Some("implement".into()),
        depth: Some(1),
        seq: 1,
        at: "t".into(),
    };
    for i in 0..MAX_SWITCHES {
        moved.effect = if i % 2 == 0 {
            RoutingEffect::Call
        } else {
            RoutingEffect::Return
        };
        b.pipeline.routing.push(moved.clone());
    }
    assert_eq!(switches(&b), MAX_SWITCHES);
    let Effect::Park(why) = call_effect(
        r#"{"call":"compound","return_to":"implement"}"#,
        &b,
        &text("x"),
    ) else {
        panic!("parks");
    };
    assert!(why.contains("16") && why.contains("cycle"), "{why}");
}
