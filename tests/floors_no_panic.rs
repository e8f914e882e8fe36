//! The floors' parsers read files agents and tools write: no input may panic them.

use proptest::prelude::*;
use splice::floors::{
    coverage, delivered, gherkin, github, review, sarif, scenarios_declared, spec, test_results,
};

/// Text built from the fragments the parsers look for, mixed with arbitrary characters.
fn texty() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("---\n".to_string()),
        Just("Scenario: ".to_string()),
        Just("@S1 ".to_string()),
        Just("## Review\n".to_string()),
        Just("Reviewed-SHA: ".to_string()),
        Just("Spec: FAIL".to_string()),
        Just("files:\n  - ".to_string()),
        Just("#[test]\n".to_string()),
        Just("fn s1()".to_string()),
        Just("<testcase name=\"".to_string()),
        Just("</testcase>".to_string()),
        Just("test x ... ".to_string()),
        Just("\n".to_string()),
        "\\PC{0,12}",
    ];
    prop::collection::vec(fragment, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn parsers_never_panic(text in texty(), id in "\\PC{0,6}") {
        let _ = gherkin::scenarios(&text);
        let _ = gherkin::carries_id(&text, &id);
        let _ = gherkin::looks_like_id(&id);
        let _ = scenarios_declared::judge(&text);
        let _ = spec::judge(&text, "sp-1", "sp-1");
        let _ = review::sections(&text);
        for name in ["a.rs", "a.py", "a.test.ts", "a_test.go", "A.java", "a.feature", "a_spec.rb", "x"] {
            let _ = coverage::declarations(name, &text);
        }
        let _ = test_results::parse_junit(&text);
        let _ = test_results::parse_libtest(&text);
        let _ = sarif::count(&text);
        let _ = delivered::parse_forge(&text);
        let _ = github::parse_pr_view(&text);
        let _ = github::is_github_pr(&text);
    }
}
