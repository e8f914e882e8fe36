//! The demo's loop step (issue 13): one leaf, the parser, implements in a loop — each iteration
//! measured by a real check script and judged by the pass monitor — while the other leaves keep
//! the plain `implement` step.
//!
//! The demo writes its own `.splice/manifest.json`: the default manifest plus a route
//! `leaf-loop` (generate-spec → implement-loop → review → deliver) and a branch on
//! `generate-spec` that moves a leaf there when its spec asks to implement in a loop (the
//! simulated agent asks for the parser). `implement-loop` is `implement` with a `loop` whose one
//! stage runs `sh checks/parse.sh`, committed in the scratch repository: it reads the files the
//! agent wrote and prints libtest lines, so it needs no build.
//!
//! The simulated agent's iterations (`SPLICE_ITERATION`), scored by the default weights (+10 a
//! passing check, −8 a failing one):
//!
//! | iteration | the change | checks | score | monitor |
//! |---|---|---|---|---|
//! | 1 | sums only | 2 ok, 4 failed | −12 | continue |
//! | 2 | sums and differences, no tests | 4 ok, 2 failed | 24 | continue |
//! | 3 | a rewrite that lost most of it | 1 ok, 5 failed | −30 | rollback to 2 |
//! | 4 | the finished parser and its tests | 6 ok | 60 | success |

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::model::manifest::DEFAULT_MANIFEST;
use crate::model::trajectory::Effect;
use crate::store::Store;

/// The child (1-based index in the split) that implements in a loop.
pub const LOOP_CHILD: usize = 2;

/// The loop step's name, and its route's.
pub const STEP: &str = "implement-loop";
pub const ROUTE: &str = "leaf-loop";

/// What the agent's generate-spec response says to ask for the loop route.
pub const ASK: &str = "implement in a loop";

/// The check script's path in the scratch repository, and the script.
pub const CHECK_PATH: &str = "checks/parse.sh";
pub const CHECK_SCRIPT: &str = r#"#!/bin/sh
# The parser's checks, run by splice after each iteration of the loop step `implement-loop`
# (`splice demo`). They read src/parse.rs and tests/parse.rs — no build — and print one libtest
# line each, which splice counts.
status=0
check() { # name, file, text the file must hold
    if grep -qF -- "$3" "$2" 2>/dev/null; then
        echo "test $1 ... ok"
    else
        echo "test $1 ... FAILED"
        status=101
    fi
}
check parse::eval_adds src/parse.rs 'add('
check parse::eval_subtracts src/parse.rs 'sub('
check parse::eval_rejects_unknown_operators src/parse.rs 'unknown operator'
check parse::eval_rejects_non_numbers src/parse.rs 'is not a number'
check tests::s3_has_a_test tests/parse.rs 'fn s3_'
check tests::s4_has_a_test tests/parse.rs 'fn s4_'
exit $status
"#;

/// The demo's manifest: the default, with the loop route and step and the branch to it.
pub fn manifest() -> Result<String> {
    let bad = |why: &str| Error::Invalid(format!("demo: the default manifest {why}"));
    let mut m: Value = serde_json::from_str(DEFAULT_MANIFEST).map_err(|e| bad(&e.to_string()))?;
    let steps = m["steps"]
        .as_array_mut()
        .ok_or_else(|| bad("has no steps"))?;
    let implement = steps
        .iter()
        .find(|s| s["name"] == "implement")
        .cloned()
        .ok_or_else(|| bad("has no implement step"))?;
    let spec = steps
        .iter_mut()
        .find(|s| s["name"] == "generate-spec")
        .ok_or_else(|| bad("has no generate-spec step"))?;
    let branch = json!({"when": "accepted", "match": {"contains": ASK},
                        "action": {"route": ROUTE, "at": STEP}});
    match spec["on_result"].as_array_mut() {
        Some(branches) => branches.push(branch),
        None => spec["on_result"] = json!([branch]),
    }
    let mut step = implement;
    step["name"] = json!(STEP);
    step["loop"] = json!({
        "max_iterations": 5,
        "stages": [ { "kind": "tests", "argv": ["sh", CHECK_PATH], "timeout_s": 60 } ]
    });
    steps.push(step);
    let leaf = m["routes"]["leaf"].clone();
    let route: Vec<Value> = leaf
        .as_array()
        .ok_or_else(|| bad("has no leaf route"))?
        .iter()
        // The loop's own checks read the tests its iterations write: no test generator here.
        .filter(|s| *s != "generate-tests")
        .map(|s| {
            if s == "implement" {
                json!(STEP)
            } else {
                s.clone()
            }
        })
        .collect();
    m["routes"][ROUTE] = json!(route);
    m["route_kinds"][ROUTE] = json!("leaf");
    let mut text = serde_json::to_string_pretty(&m).map_err(|e| bad(&e.to_string()))?;
    text.push('\n');
    Ok(text)
}

/// The parser's files at `iteration` of the loop, as (path, contents): drafts, then (from
/// iteration 4) the finished work of the campaign.
pub fn iteration_files(iteration: u32) -> Vec<(&'static str, &'static str)> {
    let done = || -> Vec<(&'static str, &'static str)> {
        super::files::WORK
            .iter()
            .filter(|(i, _, _)| *i == LOOP_CHILD)
            .map(|(_, p, t)| (*p, *t))
            .collect()
    };
    match iteration {
        1 => vec![("src/parse.rs", DRAFT_SUMS)],
        2 => done()
            .into_iter()
            .filter(|(p, _)| p.starts_with("src/"))
            .collect(),
        3 => vec![("src/parse.rs", REWRITE)],
        _ => done(),
    }
}

const DRAFT_SUMS: &str = r#"//! Evaluate one binary operation written as text (first draft: sums only).

use crate::arith::add;

/// Evaluate `text`, or say what is wrong with it.
pub fn eval(text: &str) -> Result<i64, String> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [a, "+", b] = parts.as_slice() else {
        return Err(format!("expected `a + b`, got {text:?}"));
    };
    let a: i64 = a.parse().map_err(|_| format!("{a:?} is not a number"))?;
    let b: i64 = b.parse().map_err(|_| format!("{b:?} is not a number"))?;
    add(a, b).ok_or_else(|| "overflow".to_string())
}
"#;

const REWRITE: &str = r#"//! Evaluate one binary operation written as text (a rewrite around `split_once`).

use crate::arith::add;

/// Evaluate `text`.
pub fn eval(text: &str) -> Result<i64, String> {
    let (a, b) = text.split_once('+').ok_or("no operator")?;
    let a: i64 = a.trim().parse().map_err(|e| format!("{e}"))?;
    let b: i64 = b.trim().parse().map_err(|e| format!("{e}"))?;
    add(a, b).ok_or_else(|| "overflow".to_string())
}
"#;

/// The demo's account of the loop after the run, a line per decision that mattered: what each
/// iteration scored and what the monitor decided, the rollback and what it restored, and the
/// success that let the node go on. Empty when no node ran the loop step.
pub fn narration(store: &Store) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for b in store.read_all()? {
        let its: Vec<_> = b
            .pipeline
            .trajectory
            .iter()
            .filter(|i| i.step == STEP)
            .collect();
        if its.is_empty() {
            continue;
        }
        let scores: Vec<String> = its
            .iter()
            .map(|i| i.score.map_or("stage failed".into(), |s| s.to_string()))
            .collect();
        if let Some(r) = b
            .pipeline
            .routing
            .iter()
            .find(|r| r.to_step.as_deref() == Some(STEP))
        {
            lines.push(format!(
                "demo: {}'s spec asked to \"{}\", so its {} branch moved it from route {} to {} \
                 at {STEP}",
                b.id, r.matched, r.step, r.from_route, ROUTE
            ));
        }
        lines.push(format!(
            "demo: {} ran {STEP} {} times; `sh {CHECK_PATH}` scored each iteration: {}",
            b.id,
            its.len(),
            scores.join(" → ")
        ));
        for i in &its {
            let n = i.state.iteration;
            let decision = i.monitor["decision"].as_str().unwrap_or("continue");
            let t = &i.state.tests;
            let plural = if t.passed == 1 { "" } else { "s" };
            let checks = format!("{} check{plural} passed, {} failed", t.passed, t.failed);
            let line = match (&i.effect, decision) {
                (Some(Effect::RolledBack { restored, snapshot }), _) => format!(
                    "demo: {} iteration {n} regressed ({checks}; score {} is below the first \
                     iteration's {}): the monitor rolled the worktree back to iteration \
                     {restored}, the best so far ({snapshot})",
                    b.id,
                    i.score.unwrap_or_default(),
                    its[0].score.unwrap_or_default()
                ),
                (Some(e), _) => format!("demo: {} iteration {n}: {decision}, {}", b.id, e.name()),
                (None, "success") => format!(
                    "demo: {} iteration {n} passed every check ({checks}): success; {STEP} \
                     completed and the node went on to {}",
                    b.id,
                    next_after(&b).unwrap_or("its next step")
                ),
                (None, d) => format!("demo: {} iteration {n}: {checks}; monitor: {d}", b.id),
            };
            lines.push(line);
        }
    }
    Ok(lines)
}

/// The step the node entered after the loop step, from its history.
fn next_after(b: &crate::model::Bead) -> Option<&str> {
    let h = &b.pipeline.history;
    let at = h.iter().rposition(|e| e.step == STEP)?;
    h.get(at + 1).map(|e| e.step.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_manifest_loads_with_its_loop_route() {
        let text = manifest().unwrap();
        let m = crate::model::Manifest::parse(&text).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            m.route(ROUTE).unwrap(),
            ["generate-spec", STEP, "review", "deliver"]
        );
        assert!(m.step(STEP).unwrap().loop_.is_some());
    }
}
