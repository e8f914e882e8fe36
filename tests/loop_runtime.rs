//! Issue 13: loop steps in a run, with scripted agents — each iteration measured and recorded,
//! and the pass monitor's effects that go on carried out through the writer: continue (the next
//! prompt's context), rollback (the files of the best iteration restored), escalation (the
//! command switched once across two runs) and step back (an analysis dispatch).
//! `tests/loop_effects.rs` has ask the user, stop and the snapshots' lifetime.

mod common;
mod loop_support;

use common::Repo;
use loop_support::{
    argv_step, config, ctx, decisions, dump, manifest, run, script, seen, toml_argv, trajectory,
};
use serde_json::{Value, json};

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

#[test]
fn a_regression_is_rolled_back_to_the_best_iteration_and_the_loop_then_succeeds() {
    let r = Repo::unconfined();
    std::fs::write(
        r.path().join("plan"),
        "a=ok b=FAILED c=ok\na=ok b=ok c=FAILED d=ok\na=FAILED b=FAILED c=FAILED\na=ok b=ok c=ok d=ok\n",
    )
    .unwrap();
    manifest(&r, json!({ "argv": ["sh", "-c", scripted(&r)] }), json!({}));
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

#[test]
fn continue_hands_the_next_dispatch_the_score_history_failing_tests_and_changed_files() {
    let r = Repo::unconfined();
    argv_step(
        &r,
        "note \"$n ${SPLICE_LOOP_CONTEXT:+ctx}\"; keep_ctx; \
         case $n in 1) echo one > a.txt; results a=ok b=FAILED;; \
         *) echo two > a.txt; results a=ok b=ok;; esac; commit",
        json!({}),
    );
    let id = r.task("Loop", &[]);
    run(&r, &[]);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{}", dump(&r, &id));
    assert_eq!(seen(&r), vec!["1 ", "2 ctx"]);
    // The first dispatch has no context; the second's is what iteration 1 measured.
    assert!(!r.path().join("ctx-1.json").exists());
    let c = ctx(&r, 2);
    assert_eq!(c["iteration"], 2, "{c:#}");
    assert_eq!(c["max_iterations"], 5, "{c:#}");
    assert_eq!(
        c["scores"],
        json!([{ "iteration": 1, "score": 2 }]),
        "{c:#}"
    );
    assert_eq!(c["context"]["failing_tests"], json!(["b"]), "{c:#}");
    assert_eq!(
        c["context"]["changed_files"],
        json!(["a.txt", "results"]),
        "{c:#}"
    );
    assert_eq!(
        c["last"]["tests"],
        json!({ "passed": 1, "failed": 1, "errored": 0 })
    );
    assert_eq!(c["effects"], json!([]));
}

#[test]
fn a_prompt_steps_next_prompt_gets_the_loop_section_with_the_same_facts() {
    let r = Repo::unconfined();
    // The prompt is the agent command's last argument: `$1` after `sh -c SCRIPT agent`.
    let agent = script(
        &r,
        "printf '%s' \"$1\" > $D/prompt-$n.md; \
         case $n in 1) echo one > a.txt; results a=ok b=FAILED;; \
         *) echo two > a.txt; results a=ok b=ok;; esac; commit",
    );
    config(
        &r,
        &format!(
            "[agent]\ncommand = {}\n",
            toml_argv(&["sh", "-c", &agent, "agent"])
        ),
    );
    manifest(&r, json!({ "prompt": "implement" }), json!({}));
    let id = r.task("Loop with a prompt", &[]);
    run(&r, &[]);
    assert_eq!(r.bead(&id)["status"], "closed", "{}", dump(&r, &id));
    let first = std::fs::read_to_string(r.path().join("prompt-1.md")).unwrap();
    let second = std::fs::read_to_string(r.path().join("prompt-2.md")).unwrap();
    assert!(first.contains("Loop with a prompt"), "{first}");
    assert!(!first.contains("## Loop"), "{first}");
    assert!(second.contains("Loop with a prompt"), "{second}");
    let section = &second[second
        .find("## Loop: iteration 2")
        .unwrap_or_else(|| panic!("no loop section: {second}"))..];
    assert!(
        section.contains("Score history (iteration: score): 1: 2"),
        "{section}"
    );
    assert!(section.contains("Failing tests:\n- b\n"), "{section}");
    assert!(
        section.contains("Changed files:\n- a.txt\n- results\n"),
        "{section}"
    );
}

/// The work agent proposes the same change every time; the escalation agent repeats it once
/// more (iteration 3), then fixes it.
fn escalation_repo(r: &Repo) -> Vec<String> {
    let esc = script(
        r,
        "note \"esc $n ${SPLICE_LOOP_CONTEXT:+ctx}\"; printf '%s' \"$1\" > $D/esc-prompt-$n.md; \
         keep_ctx; case $n in 3) echo same > a.txt; results a=ok b=FAILED;; \
         *) echo fixed > a.txt; results a=ok b=ok;; esac; commit",
    );
    let esc = vec!["sh".to_string(), "-c".into(), esc, "esc".into()];
    let refs: Vec<&str> = esc.iter().map(String::as_str).collect();
    config(
        r,
        &format!(
            "[agent]\nescalation_command = {}\n\n[limits]\nbackoff_s = 0\n",
            toml_argv(&refs)
        ),
    );
    argv_step(
        r,
        "note \"work $n\"; echo same > a.txt; results a=ok b=FAILED; commit",
        json!({}),
    );
    esc
}

#[test]
fn a_repeated_change_escalates_once_and_a_second_run_keeps_the_escalation_command() {
    let r = Repo::unconfined();
    let esc = escalation_repo(&r);
    let id = r.task("Loop", &[]);
    // Pass 1 and 2 dispatch iterations 1 and 2 (the same change), pass 3 escalates.
    run(&r, &["--max-passes", "3"]);
    let b = r.bead(&id);
    let t = trajectory(&b);
    assert_eq!(t.len(), 2, "{}", dump(&r, &id));
    assert_eq!(t[0]["state"]["change_hash"], t[1]["state"]["change_hash"]);
    assert_eq!(t[1]["monitor"]["decision"], "escalate_repeated");
    assert_eq!(
        t[1]["effect"],
        json!({ "effect": "escalated", "rule": "escalate_repeated", "command": esc })
    );
    assert_eq!(b["pipeline"]["escalation"]["command"], json!(esc));
    assert_eq!(b["pipeline"]["escalation"]["iteration"], 2);
    assert_eq!(seen(&r), vec!["work 1", "work 2"]);

    // A second run: the node's dispatches run the escalation command; its repeat of the change
    // (iteration 3) does not escalate again.
    run(&r, &[]);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{}", dump(&r, &id));
    assert_eq!(
        seen(&r),
        vec!["work 1", "work 2", "esc 3 ctx", "esc 4 ctx"],
        "{}",
        dump(&r, &id)
    );
    let t = trajectory(&b);
    assert_eq!(t[2]["monitor"]["decision"], "escalate_repeated");
    assert_eq!(t[2]["effect"]["effect"], "recovery", "{:#}", t[2]);
    assert!(
        t[2]["effect"]["why"]
            .as_str()
            .unwrap()
            .contains("already escalated"),
        "{:#}",
        t[2]
    );
    assert_eq!(t[3]["monitor"]["decision"], "success");
    assert_eq!(
        b["pipeline"]["escalation"]["iteration"], 2,
        "escalated once"
    );
    // An escalated argv step gets the loop's context as its prompt.
    let prompt = std::fs::read_to_string(r.path().join("esc-prompt-3.md")).unwrap();
    assert!(prompt.starts_with("## Loop: iteration 3"), "{prompt}");
    assert!(prompt.contains("repeat themselves"), "{prompt}");
    let effects: Vec<String> = ctx(&r, 4)["effects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["effect"]["effect"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(effects, vec!["escalated", "recovery"]);
}

#[test]
fn without_an_escalation_command_a_repeated_change_adds_recovery_context_and_keeps_the_command() {
    let r = Repo::unconfined();
    argv_step(
        &r,
        "note \"work $n\"; keep_ctx; case $n in 1|2) echo same > a.txt; results a=ok b=FAILED;; \
         *) echo fixed > a.txt; results a=ok b=ok;; esac; commit",
        json!({}),
    );
    let id = r.task("Loop", &[]);
    run(&r, &[]);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{}", dump(&r, &id));
    assert_eq!(seen(&r), vec!["work 1", "work 2", "work 3"]);
    let t = trajectory(&b);
    assert_eq!(t[1]["monitor"]["decision"], "escalate_repeated");
    assert_eq!(t[1]["effect"]["effect"], "recovery", "{:#}", t[1]);
    assert!(
        t[1]["effect"]["why"]
            .as_str()
            .unwrap()
            .contains("no `[agent] escalation_command`"),
        "{:#}",
        t[1]
    );
    assert!(b["pipeline"]["escalation"].is_null(), "{:#}", b["pipeline"]);
    let c = ctx(&r, 3);
    assert_eq!(c["effects"][0]["iteration"], 2, "{c:#}");
    assert_eq!(c["effects"][0]["effect"]["effect"], "recovery", "{c:#}");
}

#[test]
fn a_plateau_steps_back_once_without_costing_an_iteration_and_the_root_cause_reaches_the_next() {
    let r = Repo::unconfined();
    argv_step(
        &r,
        "if [ \"${SPLICE_STEP_BACK:-}\" = 1 ]; then note \"step-back $n\"; \
         echo junk > junk.txt; echo stray > stray.txt; git add junk.txt; commit; \
         echo '{\"root_cause\": \"the fixture file is missing\"}' > \"$SPLICE_RESULT_FILE\"; exit 0; fi; \
         [ -e junk.txt ] || [ -e stray.txt ] && note \"the analysis left files\"; \
         note \"work $n attempt $SPLICE_ATTEMPT\"; keep_ctx; echo $n > marker; \
         case $n in 1|2|3) results a=ok b=FAILED;; *) results a=ok b=ok;; esac; commit",
        json!({}),
    );
    let id = r.task("Loop", &[]);
    run(&r, &[]);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{}", dump(&r, &id));
    assert_eq!(
        seen(&r),
        vec![
            "work 1 attempt 1",
            "work 2 attempt 2",
            "work 3 attempt 3",
            "step-back 3",
            "work 4 attempt 4"
        ],
        "{}",
        dump(&r, &id)
    );
    // (What the analysis wrote or committed in the worktree was reset: no line above says so.)
    let t = trajectory(&b);
    assert_eq!(t.len(), 4);
    assert_eq!(t[2]["monitor"]["decision"], "step_back");
    assert_eq!(t[2]["effect"]["effect"], "stepped_back", "{:#}", t[2]);
    assert_eq!(t[2]["effect"]["root_cause"], "the fixture file is missing");
    // The analysis is no attempt: four dispatches of the step, four attempts.
    assert_eq!(b["pipeline"]["attempts"]["work"], 4);
    let c = ctx(&r, 4);
    assert_eq!(c["iteration"], 4);
    assert_eq!(
        c["effects"][0]["effect"]["root_cause"], "the fixture file is missing",
        "{c:#}"
    );
}

#[test]
fn a_dispatch_that_exits_non_zero_is_still_a_measured_iteration_not_a_failed_attempt() {
    let r = Repo::unconfined();
    // No `[limits] backoff_s`: a measured iteration is not retried after a backoff, and the
    // step's `max_attempts` (3 by default) does not limit its iterations. Scores rise (2, 12,
    // 22), so the monitor continues.
    argv_step(
        &r,
        "note \"work $n\"; echo $n > marker; \
         case $n in 1) results b=FAILED x=ok; commit; exit 1;; \
         2) results b=FAILED x=ok y=ok; commit; exit 1;; \
         3) results b=FAILED x=ok y=ok z=ok; commit; exit 1;; \
         *) results a=ok b=ok; commit;; esac",
        json!({}),
    );
    let id = r.task("Loop", &[]);
    run(&r, &[]);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{}", dump(&r, &id));
    assert_eq!(seen(&r), vec!["work 1", "work 2", "work 3", "work 4"]);
    assert_eq!(
        decisions(&b),
        vec!["continue", "continue", "continue", "success"]
    );
}

#[test]
fn a_success_the_steps_own_floors_refuse_goes_on_to_another_iteration() {
    let r = Repo::unconfined();
    argv_step(
        &r,
        "note \"work $n\"; echo $n > marker; results a=ok; \
         if [ $n -ge 2 ]; then echo notes > NOTES.md; fi; commit",
        json!({}),
    );
    // The step's floor wants NOTES.md, which iteration 1 does not write.
    let mut m: Value =
        serde_json::from_str(&std::fs::read_to_string(r.state().join("manifest.json")).unwrap())
            .unwrap();
    m["steps"][2]["floors"] = json!([{ "kind": "file_exists", "path": "NOTES.md" }]);
    r.write(".splice/manifest.json", &m.to_string());
    let id = r.task("Loop", &[]);
    run(&r, &[]);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{}", dump(&r, &id));
    assert_eq!(seen(&r), vec!["work 1", "work 2"]);
    assert_eq!(decisions(&b), vec!["success", "success"]);
}

#[test]
fn a_prompt_steps_step_back_runs_the_agent_with_the_step_back_prompt() {
    let r = Repo::unconfined();
    // The project's own step-back prompt (`.splice/prompts/`), over the default.
    r.write(
        ".splice/prompts/step-back.md",
        "Step back on {{bead.title}} at {{step}}: {{reason}}.\n",
    );
    let agent = script(
        &r,
        "if [ \"${SPLICE_STEP_BACK:-}\" = 1 ]; then printf '%s' \"$1\" > $D/step-back-prompt.md; \
         echo '{\"root_cause\": \"the wrong module is patched\"}' > \"$SPLICE_RESULT_FILE\"; exit 0; fi; \
         printf '%s' \"$1\" > $D/prompt-$n.md; echo $n > marker; \
         case $n in 1|2|3) results a=ok b=FAILED;; *) results a=ok b=ok;; esac; commit",
    );
    config(
        &r,
        &format!(
            "[agent]\ncommand = {}\n",
            toml_argv(&["sh", "-c", &agent, "agent"])
        ),
    );
    manifest(&r, json!({ "prompt": "implement" }), json!({}));
    let id = r.task("Plateau", &[]);
    run(&r, &[]);
    let b = r.bead(&id);
    assert_eq!(b["status"], "closed", "{}", dump(&r, &id));
    let asked = std::fs::read_to_string(r.path().join("step-back-prompt.md")).unwrap();
    assert!(
        asked.starts_with(
            "Step back on Plateau at work: the last three scores (2, 2, 2) did not rise."
        ),
        "{asked}"
    );
    assert!(asked.contains("Failing tests:\n- b\n"), "{asked}");
    assert_eq!(
        trajectory(&b)[2]["effect"]["root_cause"],
        "the wrong module is patched"
    );
    let next = std::fs::read_to_string(r.path().join("prompt-4.md")).unwrap();
    assert!(next.contains("## Loop: iteration 4"), "{next}");
    assert!(
        next.contains("root cause: the wrong module is patched"),
        "{next}"
    );
}

#[test]
fn a_rollback_without_the_nodes_worktree_parks_the_node() {
    let r = Repo::unconfined();
    std::fs::write(
        r.path().join("plan"),
        "a=ok b=FAILED c=ok\na=ok b=ok c=FAILED d=ok\na=FAILED b=FAILED c=FAILED\n",
    )
    .unwrap();
    manifest(&r, json!({ "argv": ["sh", "-c", scripted(&r)] }), json!({}));
    let id = r.task("Loop", &[]);
    // Three passes, three iterations: the third regressed below the first.
    run(&r, &["--max-passes", "3"]);
    let t = trajectory(&r.bead(&id));
    assert_eq!(t.len(), 3, "{}", dump(&r, &id));
    assert_eq!(t[2]["monitor"]["decision"], "rollback");
    let wt = format!(".splice/worktrees/{id}");
    r.git(&["worktree", "remove", "--force", &wt]);
    run(&r, &[]);
    let b = r.bead(&id);
    let why = b["pipeline"]["dead_letter"]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        why.contains("needs the node's worktree"),
        "{}",
        dump(&r, &id)
    );
    assert!(trajectory(&b)[2]["effect"].is_null());
    assert_eq!(seen(&r).len(), 3);
}
