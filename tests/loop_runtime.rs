//! Issue 13: loop steps in a run, with scripted agents — each iteration measured and recorded,
//! and every effect of the pass monitor carried out through the writer: continue (the next
//! prompt's context), rollback (the files of the best iteration restored), escalation (the
//! command switched once across two runs), step back (an analysis dispatch), ask the user
//! (`transition guide`; `exec` parks), and stop (park with the limit).

mod common;

use common::Repo;
use serde_json::{Value, json};

/// A manifest whose leaf route is one loop step, `work`, running `script` (sh) with a tests
/// stage that reads the libtest lines the agent left in `results`.
fn loop_manifest(r: &Repo, script: &str, looping: Value) {
    let mut spec = json!({
        "max_iterations": 5,
        "stages": [ { "kind": "tests", "argv": ["cat", "results"] } ]
    });
    if let (Some(s), Some(extra)) = (spec.as_object_mut(), looping.as_object()) {
        for (k, v) in extra {
            s.insert(k.clone(), v.clone());
        }
    }
    let manifest = json!({
        "routes": { "root": ["plan", "delegate"], "compound": ["plan", "delegate"], "leaf": ["work"] },
        "steps": [
            { "name": "plan", "role": "split", "floors": [] },
            { "name": "delegate", "floors": [ { "kind": "children_finished" } ] },
            { "name": "work", "run": { "argv": ["sh", "-c", script] }, "floors": [],
              "timeout_s": 60, "loop": spec }
        ]
    });
    r.write(
        ".splice/manifest.json",
        &serde_json::to_string_pretty(&manifest).unwrap(),
    );
}

/// A script that, at iteration N (`SPLICE_ITERATION`), writes `results` from the Nth line of
/// `plan` (tests separated by spaces, `name=ok|FAILED`), writes `marker` = N, commits, and
/// appends what it saw (the marker before it wrote, and whether it had loop context) to `seen`.
fn scripted(r: &Repo) -> String {
    let dir = r.path().display().to_string();
    format!(
        "n=$SPLICE_ITERATION; echo \"$n $(cat marker 2>/dev/null || echo none) ${{SPLICE_LOOP_CONTEXT:+ctx}}\" >> {dir}/seen; \
         line=$(sed -n \"${{n}}p\" {dir}/plan); : > results; \
         for t in $line; do echo \"test ${{t%%=*}} ... ${{t#*=}}\" >> results; done; \
         echo $n > marker; git add -A >/dev/null; \
         git -c user.name=a -c user.email=a@x commit -qm \"iteration $n\" >/dev/null; exit 0"
    )
}

fn run(r: &Repo, args: &[&str]) -> Value {
    let mut all = vec!["run", "--output", "json"];
    all.extend_from_slice(args);
    r.ok(&all)
}

fn trajectory(b: &Value) -> Vec<Value> {
    b["pipeline"]["trajectory"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_regression_is_rolled_back_to_the_best_iteration_and_the_loop_then_succeeds() {
    let r = Repo::new();
    std::fs::write(
        r.path().join("plan"),
        "a=ok b=FAILED c=ok\na=ok b=ok c=FAILED d=ok\na=FAILED b=FAILED c=FAILED\na=ok b=ok c=ok d=ok\n",
    )
    .unwrap();
    loop_manifest(&r, &scripted(&r), json!({}));
    let id = r.task("Loop", &[]);
    let out = r.run(&["run"]);
    let b = r.bead(&id);
    assert_eq!(
        b["status"],
        "closed",
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let t = trajectory(&b);
    let scores: Vec<i64> = t.iter().map(|i| i["score"].as_i64().unwrap()).collect();
    assert_eq!(scores, vec![12, 22, -24, 40], "{t:#?}");
    assert_eq!(t[2]["monitor"]["decision"], "rollback");
    assert_eq!(t[2]["effect"]["effect"], "rolled_back");
    assert_eq!(t[2]["effect"]["restored"], 2);
    assert_eq!(t[3]["monitor"]["decision"], "success");
    let seen = std::fs::read_to_string(r.path().join("seen")).unwrap();
    let lines: Vec<&str> = seen.lines().collect();
    assert_eq!(lines[0], "1 none ", "{seen}");
    assert_eq!(lines[1], "2 1 ctx", "{seen}");
    // After the rollback, iteration 4 starts from iteration 2's files.
    assert_eq!(lines[3], "4 2 ctx", "{seen}");
}
