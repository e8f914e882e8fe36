//! The manifest's typing and validation, edge by edge.

use super::*;

fn problems_of(text: &str) -> String {
    Manifest::parse(text).unwrap_err().to_string()
}

#[test]
fn the_default_manifest_declares_its_roles() {
    let m = Manifest::default_manifest();
    assert_eq!(m.schema_version, MANIFEST_SCHEMA);
    assert_eq!(m.step_with(Role::Spec).unwrap().name, "generate-spec");
    assert_eq!(m.step_with(Role::Split).unwrap().name, "to-issues");
    assert_eq!(m.step_with(Role::Delegate).unwrap().name, "delegate");
    assert!(m.is("integrate", Role::Integrate));
    assert!(m.is("deliver", Role::Deliver));
}

#[test]
fn a_schema_one_manifest_gets_roles_and_artifacts_inferred() {
    let old = DEFAULT_MANIFEST
        .replace("\"schema_version\": 3", "\"version\": 1")
        .lines()
        .filter(|l| !l.contains("\"role\"") && !l.contains("\"artifact\""))
        .collect::<Vec<_>>()
        .join("\n");
    let m = Manifest::parse(&old).unwrap();
    let new = Manifest::default_manifest();
    assert_eq!(m.step_with(Role::Spec).unwrap().name, "generate-spec");
    assert!(m.is("to-issues", Role::Split));
    assert!(m.is("delegate", Role::Delegate));
    assert_eq!(
        m.step("review").unwrap().artifact,
        new.step("review").unwrap().artifact
    );
}

#[test]
fn a_newer_schema_is_refused() {
    let newer = DEFAULT_MANIFEST.replace("\"schema_version\": 3", "\"schema_version\": 9");
    assert!(problems_of(&newer).contains("newer than this splice reads"));
}

#[test]
fn unknown_kinds_fields_and_params_are_named() {
    let bad = DEFAULT_MANIFEST.replace("\"kind\": \"review\"", "\"kind\": \"revue\"");
    let p = problems_of(&bad);
    assert!(
        p.contains("steps[7].floors[0].kind") && p.contains("known: file_exists"),
        "{p}"
    );
    let bad = DEFAULT_MANIFEST.replace(
        "\"max_attempts\": 3,\n      \"timeout_s\": 3600",
        "\"max_attempt\": 3,\n      \"timeout_s\": 3600",
    );
    assert!(problems_of(&bad).contains("unknown field `max_attempt`"));
    let bad = DEFAULT_MANIFEST.replace(
        "{ \"kind\": \"children_conserved\" }\n      ],\n      \"gate\"",
        "{ \"kind\": \"children_conserved\", \"path\": \"x\" }\n      ],\n      \"gate\"",
    );
    assert!(problems_of(&bad).contains("has no parameter \"path\" (it takes none)"));
    let bad = DEFAULT_MANIFEST.replace(
        "\"relax\": [\"deep\"],\n      \"resume\": \"redo\"",
        "\"relax\": [\"deeper\"],\n      \"resume\": \"redo\"",
    );
    assert!(problems_of(&bad).contains("bad autonomy level \"deeper\""));
}

#[test]
fn a_loop_is_typed_and_checked_at_load() {
    // The default implement step without its loop, then with `field`.
    let with = |field: &str| {
        let mut v: serde_json::Value = serde_json::from_str(DEFAULT_MANIFEST).unwrap();
        let steps = v["steps"].as_array_mut().unwrap();
        let implement = steps.iter_mut().find(|s| s["name"] == "implement").unwrap();
        implement.as_object_mut().unwrap().remove("loop");
        v.to_string().replace(
            "\"name\":\"implement\",",
            &format!("\"name\":\"implement\", {field},"),
        )
    };
    let m = Manifest::parse(&with(
        r#""loop": {"max_iterations": 3, "stages": [{"kind": "tests", "argv": ["cargo", "test"]}, {"kind": "command"}, {"kind": "sarif", "as": "lint", "file": "lint.sarif"}]}"#,
    ))
    .unwrap();
    let l = m.step("implement").unwrap().loop_.as_ref().unwrap();
    assert_eq!(l.max_iterations, 3);
    assert_eq!(l.stages.len(), 3);
    assert_eq!(m.step("implement").unwrap().dispatch_limit(None), 3);
    assert_eq!(m.step("implement").unwrap().dispatch_limit(Some(7)), 7);
    assert_eq!(m.step("implement").unwrap().dispatch_limit(Some(0)), 3);
    // Defaults: five iterations, wall time the larger of 600 s and the step's timeout.
    let d = Manifest::parse(&with(r#""loop": {}"#)).unwrap();
    let l = d.step("implement").unwrap().loop_.clone().unwrap();
    assert_eq!(l.max_iterations, 5);
    assert_eq!(l.wall_time_s(30), 600);
    assert_eq!(l.wall_time_s(3600), 3600);
    for (bad, says) in [
        (
            r#""loop": {"max_iterations": 0}"#,
            "steps[5].loop.max_iterations: 0 is outside",
        ),
        (r#""loop": {"wall_time_s": 0}"#, "steps[5].loop.wall_time_s"),
        (
            r#""loop": {"cost_budget_usd": -1}"#,
            "steps[5].loop.cost_budget_usd",
        ),
        (
            r#""loop": {"stages": [{"kind": "tests", "argv": []}]}"#,
            "steps[5].loop.stages[0].argv",
        ),
        (
            r#""loop": {"stages": [{"kind": "sarif", "as": "lint"}]}"#,
            "exactly one of `file` and `argv`",
        ),
        (
            r#""loop": {"stages": [{"kind": "sarif", "as": "style", "file": "x"}]}"#,
            "unknown variant `style`",
        ),
        (
            r#""loop": {"stages": [{"kind": "spec"}]}"#,
            "unknown variant `spec`",
        ),
        (
            r#""loop": {"stages": [{"kind": "command", "argv": ["x"]}]}"#,
            "unknown field `argv`",
        ),
        (
            r#""loop": {"max_iteration": 3}"#,
            "unknown field `max_iteration`",
        ),
        (
            r#""loop": {"step_back_prompt": "../x"}"#,
            "step_back_prompt",
        ),
    ] {
        let p = problems_of(&with(bad));
        assert!(p.contains(says), "{bad}: {p}");
    }
}

/// The default manifest with its `tiers` section replaced by `tiers`.
fn with_tiers(tiers: &str) -> String {
    let start = DEFAULT_MANIFEST.find("  \"tiers\":").unwrap();
    let end = DEFAULT_MANIFEST.find("  \"steps\":").unwrap();
    format!(
        "{}  \"tiers\": {tiers},\n{}",
        &DEFAULT_MANIFEST[..start],
        &DEFAULT_MANIFEST[end..]
    )
}

const ROUTES: &str = r#"{"trivial": "trivial", "light": "leaf", "standard": "leaf",
    "substantial": "leaf", "architectural": "root"}"#;

#[test]
fn the_default_tiers_load_and_a_manifest_without_them_gets_the_default_rules() {
    let m = Manifest::default_manifest();
    let t = m.tiers.clone().unwrap();
    assert_eq!(t.routes[&crate::model::Tier::Trivial], "trivial");
    assert_eq!(m.entry_step("trivial"), Some("implement"));
    let start = DEFAULT_MANIFEST.find("  \"tiers\":").unwrap();
    let end = DEFAULT_MANIFEST.find("  \"steps\":").unwrap();
    let bare = format!("{}{}", &DEFAULT_MANIFEST[..start], &DEFAULT_MANIFEST[end..]);
    let fallback = Manifest::parse(&bare).unwrap().tiers();
    assert_eq!(fallback.classify, t.classify);
    assert_eq!(fallback.routes[&crate::model::Tier::Trivial], "leaf");
    assert_eq!(fallback.routes[&crate::model::Tier::Architectural], "root");
}

#[test]
fn bad_tiers_sections_are_named_by_path() {
    let rule = r#"{"name": "rest", "tier": "light"}"#;
    let unknown = with_tiers(&format!(
        r#"{{"classify": [{{"name": "x", "tier": "huge"}}], "routes": {ROUTES}}}"#
    ));
    let p = problems_of(&unknown);
    assert!(
        p.contains("tiers.classify[0].tier") && p.contains("unknown tier \"huge\""),
        "{p}"
    );
    let key = with_tiers(&format!(
        r#"{{"classify": [{rule}], "routes": {{"huge": "leaf"}}}}"#
    ));
    let p = problems_of(&key);
    assert!(
        p.contains("tiers.routes") && p.contains("unknown tier \"huge\""),
        "{p}"
    );
    let nowhere = with_tiers(&format!(
        r#"{{"classify": [{rule}], "routes": {}}}"#,
        ROUTES.replace("\"trivial\": \"trivial\"", "\"trivial\": \"quick\"")
    ));
    let p = problems_of(&nowhere);
    assert!(
        p.contains("tiers.routes.trivial: \"quick\" is not a route of this manifest"),
        "{p}"
    );
    let wrong_kind = with_tiers(&format!(
        r#"{{"classify": [{rule}], "routes": {}}}"#,
        ROUTES.replace("\"light\": \"leaf\"", "\"light\": \"compound\"")
    ));
    let p = problems_of(&wrong_kind);
    assert!(
        p.contains(
            "tiers.routes.light: route \"compound\" is a compound route, but a light request \
             becomes a leaf node"
        ),
        "{p}"
    );
    let missing = with_tiers(&format!(
        r#"{{"classify": [{rule}], "routes": {}}}"#,
        ROUTES.replace("\"light\": \"leaf\", ", "")
    ));
    assert!(problems_of(&missing).contains("tiers.routes: no route for tier \"light\""));
    let required = with_tiers(&format!(r#"{{"classify": [{rule}], "routes": {ROUTES}}}"#)).replace(
        "\"trivial\": [\"implement\", \"review\", \"deliver\"]",
        "\"trivial\": [\"implement\", \"deliver\"]",
    );
    let p = problems_of(&required);
    assert!(
        p.contains(
            "tiers.routes.trivial: route \"trivial\" leaves out \"review\", a required step"
        ),
        "{p}"
    );
}

#[test]
fn classify_rules_need_a_final_rule_last_and_no_standard() {
    let rules = |r: &str| with_tiers(&format!(r#"{{"classify": {r}, "routes": {ROUTES}}}"#));
    let p = problems_of(&rules(
        r#"[{"name": "a", "tier": "trivial", "words": ["typo"]}]"#,
    ));
    assert!(
        p.contains("tiers.classify[0]: the last rule must have no conditions"),
        "{p}"
    );
    let p = problems_of(&rules(
        r#"[{"name": "a", "tier": "light"}, {"name": "b", "tier": "light"}]"#,
    ));
    assert!(
        p.contains("tiers.classify[0]: a rule without conditions"),
        "{p}"
    );
    let p = problems_of(&rules(r#"[{"name": "a", "tier": "standard"}]"#));
    assert!(
        p.contains("tiers.classify[0].tier: the classifier never chooses"),
        "{p}"
    );
    let p = problems_of(&rules(
        r#"[{"name": "a", "tier": "light", "words": ["--"]}, {"name": "a", "tier": "light"}]"#,
    ));
    assert!(p.contains("tiers.classify[0].words[0]"), "{p}");
    assert!(p.contains("tiers.classify[1].name: duplicate rule"), "{p}");
    let p = problems_of(&rules(r#"[{"name": "a", "tier": "light", "word": ["x"]}]"#));
    assert!(p.contains("unknown field `word`"), "{p}");
    let p = problems_of(&rules("[]"));
    assert!(p.contains("tiers.classify: no rules"), "{p}");
}

#[test]
fn timeouts_are_bounded_and_entries_skip_only_optional_steps() {
    let huge = DEFAULT_MANIFEST.replace("\"timeout_s\": 60", "\"timeout_s\": 18446744073709551615");
    assert!(problems_of(&huge).contains("timeout_s: 18446744073709551615 is outside"));
    let skip = DEFAULT_MANIFEST.replace("\"leaf\": \"generate-spec\"", "\"leaf\": \"review\"");
    let p = problems_of(&skip);
    assert!(
        p.contains("skips \"implement\", which is not `optional: true`"),
        "{p}"
    );
    assert!(
        !p.contains("skips \"generate-spec\""),
        "generate-spec is optional: {p}"
    );
    let twice = DEFAULT_MANIFEST.replace(
        "\"name\": \"review\",",
        "\"name\": \"review\", \"role\": \"spec\",",
    );
    assert!(problems_of(&twice).contains("already the role of step"));
}

#[test]
fn floor_kinds_round_trip_by_name() {
    for kind in FloorKind::ALL {
        let text = serde_json::to_string(kind).unwrap();
        assert_eq!(text, format!("\"{}\"", kind.name()));
        assert_eq!(serde_json::from_str::<FloorKind>(&text).unwrap(), *kind);
    }
}

#[test]
fn bytes_after_the_manifest_are_refused() {
    let p = problems_of(&format!("{DEFAULT_MANIFEST}\n{{\"routes\": 1}}"));
    assert!(
        p.contains("not one JSON document: trailing characters"),
        "{p}"
    );
}

#[test]
fn an_artifact_template_is_read_as_it_renders() {
    let artifact = "\"artifact\": \"docs/prp/{{root.id}}.md\"";
    let unclosed = DEFAULT_MANIFEST.replacen(artifact, "\"artifact\": \"docs/{{root.id\"", 1);
    assert!(problems_of(&unclosed).contains("steps[1].artifact: `{{` without a closing `}}`"));
    let nested = DEFAULT_MANIFEST.replacen(artifact, "\"artifact\": \"{{ {{root.id}}\"", 1);
    assert!(problems_of(&nested).contains("unknown template variable `{{{{root.id}}`"));
}

#[test]
fn commands_and_prompt_names_are_checked_at_load() {
    let argv = DEFAULT_MANIFEST.replace(
        "\"run\": { \"prompt\": \"implement\" }",
        "\"run\": { \"argv\": [\"sh\", \"-c\", \"echo {{nope}}\"] }",
    );
    let p = problems_of(&argv);
    assert!(
        p.contains("steps[5].run.argv[2]: unknown template variable `{{nope}}`"),
        "{p}"
    );
    let prompt = DEFAULT_MANIFEST.replace(
        "\"run\": { \"prompt\": \"implement\" }",
        "\"run\": { \"prompt\": \"../x\" }",
    );
    assert!(
        problems_of(&prompt).contains("steps[5].run.prompt: \"../x\" cannot name a prompt file")
    );
    let ok = DEFAULT_MANIFEST.replace(
        "\"run\": { \"prompt\": \"implement\" }",
        "\"run\": { \"argv\": [\"make\", \"{{bead}}\", \"{{ attempt }}\"] }",
    );
    assert!(Manifest::parse(&ok).is_ok());
}

#[test]
fn floor_parameter_values_are_checked() {
    let bad_read = DEFAULT_MANIFEST.replace("\"read_in\": \"workdir\"", "\"read_in\": \"nowhere\"");
    assert!(problems_of(&bad_read).contains("read_in: \"nowhere\" is neither"));
    let bad_back = DEFAULT_MANIFEST.replace(
        "{ \"kind\": \"coverage\", \"read_in\": \"workdir\" }",
        "{ \"kind\": \"coverage\", \"read_in\": \"workdir\", \"back_to\": \"implemnt\" }",
    );
    assert!(
        problems_of(&bad_back).contains("back_to: \"implemnt\" is not a step of this manifest")
    );
}

#[test]
fn a_coverage_back_to_is_read_as_the_steps_result_branch_on_covered() {
    let with_back = DEFAULT_MANIFEST
        .replace(
            "{ \"when\": \"refused\", \"match\": { \"field\": \"covered\", \"equals\": false }, \"action\": { \"goto\": \"implement\" } }",
            "",
        )
        .replace(
            "\"action\": { \"goto\": \"implement\", \"guidance\": \"{{ result.text }}\" } },",
            "\"action\": { \"goto\": \"implement\", \"guidance\": \"{{ result.text }}\" } }",
        )
        .replacen(
            "{ \"kind\": \"coverage\", \"read_in\": \"workdir\" }\n      ],\n      \"on_result\"",
            "{ \"kind\": \"coverage\", \"read_in\": \"workdir\", \"back_to\": \"implement\" }\n      ],\n      \"on_result\"",
            1,
        );
    assert!(with_back.contains("\"back_to\": \"implement\""));
    let m = Manifest::parse(&with_back).unwrap();
    assert_eq!(
        m,
        Manifest::default_manifest(),
        "the same manifest as the branch written out"
    );
    let review = m.step("review").unwrap();
    assert!(
        review
            .floors
            .iter()
            .all(|f| !f.params.contains_key("back_to"))
    );
}

/// The default manifest as schema 2 wrote it: no route kinds, no branches.
fn schema_two() -> String {
    let mut v: Value = serde_json::from_str(DEFAULT_MANIFEST).unwrap();
    v["schema_version"] = 2.into();
    // Schema 2 had neither route kinds nor tiers (refused then), so no tier route either.
    v.as_object_mut().unwrap().remove("route_kinds");
    v.as_object_mut().unwrap().remove("tiers");
    for route in ["trivial", "light"] {
        v["routes"].as_object_mut().unwrap().remove(route);
        v["entry"].as_object_mut().unwrap().remove(route);
    }
    for step in v["steps"].as_array_mut().unwrap() {
        step.as_object_mut().unwrap().remove("on_result");
        // A schema-2 manifest's review coverage floor said where a missing id goes.
        if step["name"] == "review" {
            for floor in step["floors"].as_array_mut().unwrap() {
                if floor["kind"] == "coverage" {
                    floor["back_to"] = "implement".into();
                }
            }
        }
    }
    v.to_string()
}

#[test]
fn a_schema_two_manifest_gets_route_kinds_and_the_two_routings_as_branches() {
    let old = Manifest::parse(&schema_two()).unwrap();
    let mut new = Manifest::default_manifest();
    for route in ["trivial", "light"] {
        new.routes.remove(route);
        new.route_kinds.remove(route);
        new.entry.remove(route);
    }
    new.tiers = None;
    assert_eq!(old, new, "migrated to exactly the default (but for tiers)");
    let back = schema_two().replace(
        "{\"kind\":\"review\",\"path\":\"reviews/{{bead.id}}.md\"}",
        "{\"back_to\":\"generate-spec\",\"kind\":\"review\",\"path\":\"reviews/{{bead.id}}.md\"}",
    );
    let m = Manifest::parse(&back).unwrap();
    let review = m.step("review").unwrap();
    assert_eq!(
        review.on_result[0].action.goto.as_deref(),
        Some("generate-spec")
    );
    assert!(!review.floors[0].params.contains_key("back_to"));
}

#[test]
fn schema_three_declares_every_routes_kind() {
    let missing = DEFAULT_MANIFEST.replace("\"leaf\": \"leaf\",\n", "\"leafy\": \"leaf\",\n");
    let p = problems_of(&missing);
    assert!(p.contains("route_kinds.leaf: missing"), "{p}");
    assert!(p.contains("route_kinds.leafy: no route"), "{p}");
    let bad = DEFAULT_MANIFEST.replace("\"leaf\": \"leaf\",\n", "\"leaf\": \"twig\",\n");
    assert!(
        problems_of(&bad).contains("route_kinds"),
        "{}",
        problems_of(&bad)
    );
}

/// The default manifest with `branch` as implement's only result branch.
fn with_branch(branch: &str) -> String {
    DEFAULT_MANIFEST.replace(
        "\"name\": \"implement\",",
        &format!("\"name\": \"implement\", \"on_result\": [{branch}],"),
    )
}

#[test]
fn every_kind_of_bad_branch_is_named_with_its_path() {
    let cases = [
        (
            r#"{"when":"refused","match":{"always":true},"action":{"goto":"integrate"}}"#,
            "steps[5].on_result[0].action.goto: \"integrate\" is not a step of a route holding",
        ),
        (
            r#"{"when":"refused","match":{"always":true},"action":{"route":"nowhere"}}"#,
            "steps[5].on_result[0].action.route: \"nowhere\" is not a declared route",
        ),
        (
            r#"{"when":"refused","match":{"always":true},"action":{"suggest_route":"nowhere"}}"#,
            "action.suggest_route: \"nowhere\" is not a declared route",
        ),
        (
            r#"{"when":"refused","match":{"matches":"(unclosed"},"action":{"continue":true}}"#,
            "steps[5].on_result[0].match.matches: bad regex",
        ),
        (
            r#"{"when":"refused","match":{"always":true},"action":{"continue":true},"extra":1}"#,
            "unknown field `extra`",
        ),
        (
            r#"{"when":"refused","match":{"always":true},"action":{"goto":"review","abort":"x"}}"#,
            "steps[5].on_result[0].action: give exactly one",
        ),
        (
            r#"{"when":"refused","match":{"contains":"a","always":true},"action":{"continue":true}}"#,
            "steps[5].on_result[0].match: give exactly one",
        ),
        (
            r#"{"when":"refused","match":{"always":false},"action":{"continue":true}}"#,
            "match.always: only `true`",
        ),
        (
            r#"{"when":"refused","match":{"field":"verdict"},"action":{"continue":true}}"#,
            "`field` and `equals` go together",
        ),
        (
            r#"{"when":"later","match":{"always":true},"action":{"continue":true}}"#,
            "unknown variant `later`",
        ),
        (
            r#"{"when":"refused","match":{"always":true},"action":{"goto":"{{ result.nope }}"}}"#,
            "unknown template variable `{{result.nope}}`",
        ),
        (
            r#"{"when":"refused","match":{"always":true},"action":{"route":"leaf","at":"integrate"}}"#,
            "action.at: \"integrate\" is not a step of route leaf",
        ),
        (
            r#"{"when":"refused","match":{"always":true},"action":{"guidance":"x"}}"#,
            "action: give exactly one",
        ),
        (
            r#"{"when":"refused","match":{"always":true},"action":{"call":"nowhere","return_to":"implement"}}"#,
            "steps[5].on_result[0].action.call: \"nowhere\" is not a declared route",
        ),
        (
            r#"{"when":"refused","match":{"always":true},"action":{"call":"compound","return_to":"integrate"}}"#,
            "steps[5].on_result[0].action.return_to: \"integrate\" is not a step of a route holding \"implement\"",
        ),
        (
            r#"{"when":"refused","match":{"always":true},"action":{"call":"compound","at":"review","return_to":"implement"}}"#,
            "steps[5].on_result[0].action.at: \"review\" is not a step of route compound",
        ),
        (
            r#"{"when":"refused","match":{"always":true},"action":{"call":"compound"}}"#,
            "steps[5].on_result[0].action: `call` and `return_to` go together",
        ),
        (
            r#"{"when":"refused","match":{"always":true},"action":{"goto":"implement","return_to":"implement"}}"#,
            "steps[5].on_result[0].action: `call` and `return_to` go together",
        ),
        (
            r#"{"when":"refused","match":{"always":true},"action":{"call":"compound","return_to":"implement","route":"leaf"}}"#,
            "steps[5].on_result[0].action: give exactly one",
        ),
        (
            r#"{"when":"refused","match":{"always":true},"action":{"call":"compound","return_to":"implement","depth":2}}"#,
            "unknown field `depth`",
        ),
        (
            r#"{"when":"refused","match":{"always":true},"action":{"call":"compound","return_to":"{{ result.nope }}"}}"#,
            "action.return_to: unknown template variable `{{result.nope}}`",
        ),
    ];
    for (branch, want) in cases {
        let p = problems_of(&with_branch(branch));
        assert!(p.contains(want), "{branch}: {p}");
    }
    let huge = format!("a{{1,{}}}", 100_000);
    let p = problems_of(&with_branch(&format!(
        r#"{{"when":"any","match":{{"matches":"{huge}{huge}{huge}"}},"action":{{"continue":true}}}}"#
    )));
    assert!(p.contains("bad regex"), "{p}");
}

#[test]
fn good_branches_load() {
    for branch in [
        r#"{"when":"accepted","match":{"contains":"PLANNING"},"action":{"suggest_route":"compound"}}"#,
        r#"{"when":"any","match":{"exit_code":2},"action":{"abort":"exit 2"}}"#,
        r#"{"when":"any","match":{"matches":"^(?i)debug"},"action":{"route":"{{ result.verdict }}"}}"#,
        r#"{"when":"refused","match":{"field":"stale","equals":true},"action":{"goto":"review","guidance":"{{ step.review.response }} {{ bead.id }}"}}"#,
        r#"{"when":"refused","match":{"always":true},"action":{"call":"compound","return_to":"implement"}}"#,
        r#"{"when":"any","match":{"always":true},"action":{"call":"{{ result.text }}","at":"{{ result.verdict }}","return_to":"{{ step.review.response }}","guidance":"{{ result.text }}"}}"#,
        r#"{"when":"accepted","match":{"always":true},"action":{"call":"compound","at":"to-issues","return_to":"deliver","guidance":"split it"}}"#,
    ] {
        Manifest::parse(&with_branch(branch)).unwrap_or_else(|p| panic!("{branch}: {p}"));
    }
}
