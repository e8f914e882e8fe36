//! The context a loop step's next dispatch gets (`docs/monitor.md`, "One iteration"): the score
//! history, what the last iteration measured and what failed, and what was done about the
//! monitor's decisions, as a markdown section for a prompt and as JSON for
//! `SPLICE_LOOP_CONTEXT`.

use serde_json::json;

use crate::model::Bead;
use crate::model::trajectory::{Effect, IterationState, RevisionContext};

/// The context a loop step's next dispatch gets: a markdown section appended to a prompt step's
/// prompt, and the same with the data as JSON in the file `SPLICE_LOOP_CONTEXT` names. `None`
/// before the first iteration.
pub fn context(bead: &Bead, limit: u32) -> Option<(String, serde_json::Value)> {
    let its: Vec<_> = bead.iterations_since_entry().collect();
    let latest = *its.last()?;
    let scores: Vec<String> = its
        .iter()
        .map(|i| match i.score {
            Some(s) => format!("{}: {s}", i.state.iteration),
            None => format!("{}: stage failed", i.state.iteration),
        })
        .collect();
    let s = &latest.state;
    let mut md = format!(
        "\n\n## Loop: iteration {} of at most {limit} on {}\n\nKeep to the task above: this \
         step runs again until its checks pass.\n\nScore history (iteration: score): {}\n",
        s.iteration + 1,
        latest.step,
        scores.join(", ")
    );
    md.push_str(&last_state(s));
    failures(&latest.context, &mut md);
    for it in &its {
        if let Some(e) = &it.effect {
            let n = it.state.iteration;
            md.push_str(&format!("\nAfter iteration {n}: {}\n", effect_advice(e)));
        }
    }
    let scores: Vec<_> = its
        .iter()
        .map(|i| json!({"iteration": i.state.iteration, "score": i.score}))
        .collect();
    let effects: Vec<_> = its
        .iter()
        .filter_map(|i| {
            let e = i.effect.as_ref()?;
            Some(json!({"iteration": i.state.iteration, "effect": e}))
        })
        .collect();
    let data = json!({
        "iteration": s.iteration + 1,
        "max_iterations": limit,
        "scores": scores,
        "last": latest.state,
        "context": latest.context,
        "effects": effects,
    });
    Some((md, data))
}

/// The last iteration's counts in a line.
fn last_state(s: &IterationState) -> String {
    if s.stage_failed {
        return "\nThe last iteration did not complete its checks.\n".into();
    }
    format!(
        "\nLast iteration ({}): tests {} passed, {} failed, {} errored; acceptance {} passed, {} \
         failed, {} errored; lint high {}, medium {}; security critical {}, high {}.\n",
        s.iteration,
        s.tests.passed,
        s.tests.failed,
        s.tests.errored,
        s.acceptance.passed,
        s.acceptance.failed,
        s.acceptance.errored,
        s.lint.high,
        s.lint.medium,
        s.security.critical,
        s.security.high
    )
}

/// What failed in the last iteration, and what it changed, as markdown lists.
fn failures(c: &RevisionContext, md: &mut String) {
    let mut list = |title: &str, items: &[String]| {
        if !items.is_empty() {
            md.push_str(&format!("\n{title}:\n"));
            for i in items {
                md.push_str(&format!("- {i}\n"));
            }
        }
    };
    if let Some(f) = &c.stage_failure {
        list(
            &format!("Stage `{}` failed", f.stage),
            &[
                f.reason.clone(),
                format!("output:\n```\n{}\n```", f.output_tail),
            ],
        );
    }
    list("Failing tests", &c.failing_tests);
    list(
        "Failing at the step's base too (not counted against you)",
        &c.known_failures,
    );
    let acceptance: Vec<String> = c
        .acceptance
        .iter()
        .map(|a| format!("{} ({}): {}", a.id, a.outcome, a.reason))
        .collect();
    list("Acceptance facts not passing", &acceptance);
    let findings: Vec<String> = c
        .findings
        .iter()
        .map(|f| {
            format!(
                "[{} {}] {} {}: {}",
                f.stage,
                f.severity,
                f.rule.as_deref().unwrap_or("-"),
                f.location.as_deref().unwrap_or(""),
                f.message.as_deref().unwrap_or("")
            )
        })
        .collect();
    list("Findings", &findings);
    list("Changed files", &c.changed_files);
    list("Incomplete verifications", &c.incomplete);
}

/// What an effect tells the next iteration.
fn effect_advice(effect: &Effect) -> String {
    match effect {
        Effect::Escalated { rule, .. } | Effect::Recovery { rule, .. } => format!(
            "your changes repeat themselves ({rule}): the same change was proposed before. \
             Do not propose it again; find another approach."
        ),
        Effect::RolledBack { restored, .. } => format!(
            "the work regressed below the first iteration, so the worktree was rolled back to \
             iteration {restored}, the best so far. Build on it."
        ),
        Effect::SteppedBack { root_cause, .. } => format!(
            "the scores stopped rising; an analysis of the plateau found this root cause: \
             {root_cause}"
        ),
        Effect::Guided { text, .. } => format!("a person's guidance: {text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::trajectory::Iteration;

    #[test]
    fn the_next_iteration_context_carries_scores_failures_and_effects() {
        use crate::model::trajectory::Outcomes;
        let mut bead = Bead::new("sp-1".into(), "t".into(), String::new(), "now");
        bead.pipeline.step = "work".into();
        assert!(context(&bead, 5).is_none(), "nothing before iteration 1");
        let state = |n, failed| IterationState {
            iteration: n,
            tests: Outcomes {
                passed: 2,
                failed,
                errored: 0,
            },
            change_hash: format!("h{n}"),
            ..IterationState::default()
        };
        let entry = |n, score, effect| Iteration {
            step: "work".into(),
            seq: u64::from(n) + 1,
            attempt: n,
            started_at: "now".into(),
            at: "now".into(),
            state: state(n, 1),
            score: Some(score),
            monitor: serde_json::Value::Null,
            context: RevisionContext {
                failing_tests: vec![format!("t{n}")],
                changed_files: vec!["src/a.rs".into()],
                ..RevisionContext::default()
            },
            snapshot: None,
            effect,
        };
        let rolled = Effect::RolledBack {
            restored: 1,
            snapshot: "refs/splice/snapshots/sp-1/1".into(),
        };
        bead.pipeline.trajectory = vec![entry(1, 12, None), entry(2, 4, Some(rolled))].into();
        let (md, data) = context(&bead, 5).unwrap();
        assert!(md.contains("iteration 3 of at most 5 on work"), "{md}");
        assert!(md.contains("1: 12, 2: 4"), "{md}");
        assert!(
            md.contains("- t2") && !md.contains("- t1"),
            "the last failures: {md}"
        );
        assert!(md.contains("- src/a.rs"), "{md}");
        assert!(md.contains("rolled back to iteration 1"), "{md}");
        assert_eq!(data["iteration"], 3);
        assert_eq!(data["scores"][1]["score"], 4);
        assert_eq!(data["context"]["failing_tests"][0], "t2");
        assert_eq!(data["effects"][0]["effect"]["effect"], "rolled_back");
    }
}
