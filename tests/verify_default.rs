//! Issue 34: the default manifest verifies every leaf. Its implement step is a loop whose
//! stages are the repository's detected test command (compared with the step's base), the
//! node's acceptance facts and the built-in analyzers: a new failing test or a failing fact
//! keeps the leaf from review and the next prompt names it; a regressing iteration is rolled
//! back; a saved plan whose acceptance command fails never reaches `done`.
//!
//! The repository is a real Cargo crate (`cargo` is the one toolchain every machine running
//! these tests has), so the detected command is `cargo test`, run in the node's worktree.

mod common;

use common::Repo;
use serde_json::{Value, json};

/// A crate with two passing tests and one that already fails at the base.
fn crate_repo() -> Repo {
    let r = Repo::new();
    r.write(
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    r.write(
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 { a + b }\n\
         pub fn sub(a: i32, b: i32) -> i32 { a - b }\n\
         pub fn mul(a: i32, b: i32) -> i32 { a + b }\n\n\
         #[cfg(test)]\nmod tests {\n    use super::*;\n\
         \x20   #[test]\n    fn adds() { assert_eq!(add(2, 2), 4); }\n\
         \x20   #[test]\n    fn subtracts() { assert_eq!(sub(5, 3), 2); }\n\
         \x20   #[test]\n    fn multiplies() { assert_eq!(mul(2, 3), 6); }\n}\n",
    );
    r.write(".gitignore", "target/\nnotes/\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "calc"]);
    r
}

/// The agent: a shell script that, at iteration `n` (`SPLICE_ITERATION`), runs the `case`
/// arm for `n`, keeps its prompt and loop context under `notes/` (git-ignored) and commits.
fn agent(r: &Repo, arms: &str) {
    let script = format!(
        "n=${{SPLICE_ITERATION:-0}}; mkdir -p notes; cp \"$1\" notes/prompt-$n.md; \
         if [ -n \"${{SPLICE_LOOP_CONTEXT:-}}\" ]; then cp \"$SPLICE_LOOP_CONTEXT\" notes/ctx-$n.json; fi; \
         case $n in {arms} esac; \
         git add -A >/dev/null; git -c user.name=a -c user.email=a@x commit -qm \"iteration $n\" >/dev/null 2>&1 || true"
    );
    let command = serde_json::to_string(&["sh", "-c", &script, "sh", "{{prompt_file}}"]).unwrap();
    r.write(
        ".splice/config.toml",
        &format!("[agent]\ncommand = {command}\n"),
    );
}

/// `sed -i` a line of `src/lib.rs` (the shell arm's text).
fn set_sub(body: &str) -> String {
    format!("sed -i 's/^pub fn sub.*/pub fn sub(a: i32, b: i32) -> i32 {{ {body} }}/' src/lib.rs;")
}

/// `splice ARGS` with the real `HOME`: the sandbox lets a stage run the toolchains under it
/// (`~/.cargo/bin`, `~/.rustup`), and `cargo` is one (the tests' own `HOME` is the repository).
#[must_use]
fn splice(r: &Repo, args: &[&str]) -> std::process::Output {
    let mut c = r.cmd(args);
    for key in ["HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN"] {
        if let Some(v) = std::env::var_os(key) {
            c.env(key, v);
        }
    }
    c.output().expect("splice runs")
}

fn run(r: &Repo) {
    let out = splice(r, &["run", "--output", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn trajectory(b: &Value) -> Vec<Value> {
    b["pipeline"]["trajectory"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn note(r: &Repo, id: &str, name: &str) -> String {
    let path = r.worktree(id).join("notes").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_new_failing_test_or_a_failing_fact_keeps_the_leaf_from_review_and_the_next_prompt_names_it() {
    let r = crate_repo();
    let id = r.task("Tidy sub", &["--tier", "trivial"]);
    r.write(
        "facts.json",
        r#"[{"id": "A1", "argv": ["test", "-f", "DONE"]}]"#,
    );
    r.ok(&[
        "transition",
        "set-acceptance",
        "--bead",
        &id,
        "--facts",
        "facts.json",
    ]);
    agent(
        &r,
        &format!(
            "1) {} ;; 2) {} touch DONE ;;",
            set_sub("a + b"),
            set_sub("a - b")
        ),
    );
    run(&r);
    let b = r.bead(&id);
    let t = trajectory(&b);
    assert_eq!(t.len(), 2, "{:#}", json!(t));
    // Iteration 1 broke `subtracts` and left A1 unmet; `multiplies` failed at the base too.
    let first = &t[0];
    assert_eq!(
        first["state"]["tests"],
        json!({"passed": 1, "failed": 1, "errored": 0}),
        "{first:#}"
    );
    assert_eq!(first["state"]["acceptance"]["failed"], 1, "{first:#}");
    assert_eq!(
        first["context"]["failing_tests"],
        json!(["tests::subtracts"])
    );
    assert_eq!(
        first["context"]["known_failures"],
        json!(["tests::multiplies"])
    );
    assert_eq!(first["context"]["acceptance"][0]["id"], "A1");
    assert_eq!(first["monitor"]["decision"], "continue");
    let stages: Vec<(&str, &str, &str)> = first["context"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["stage"].as_str().unwrap(),
                s["tool"].as_str().unwrap(),
                s["status"].as_str().unwrap(),
            )
        })
        .filter(|(stage, ..)| matches!(*stage, "tests" | "acceptance"))
        .collect();
    assert_eq!(
        stages,
        [
            ("tests", "cargo test", "failed"),
            ("acceptance", "1 fact(s)", "failed")
        ]
    );
    // The retry prompt names what failed, and what was failing before the agent began.
    let prompt = note(&r, &id, "prompt-2.md");
    assert!(prompt.contains("## Loop: iteration 2"), "{prompt}");
    assert!(prompt.contains("tests::subtracts"), "{prompt}");
    assert!(prompt.contains("A1 (failed)"), "{prompt}");
    assert!(prompt.contains("tests::multiplies"), "{prompt}");
    let ctx: Value = serde_json::from_str(&note(&r, &id, "ctx-2.json")).unwrap();
    assert_eq!(
        ctx["context"]["failing_tests"],
        json!(["tests::subtracts"]),
        "{ctx:#}"
    );
    // Iteration 2 passed: the leaf is at implement's gate, a person's, and review never ran.
    assert_eq!(t[1]["monitor"]["decision"], "success", "{:#}", t[1]);
    assert_eq!(b["pipeline"]["step"], "implement");
    assert_eq!(
        b["pipeline"]["gate"]["state"], "pending",
        "{:#}",
        b["pipeline"]
    );
    assert!(
        !r.journal().contains("\"step\":\"review\""),
        "review was never dispatched"
    );
    // `status` says which stages ran.
    let status = String::from_utf8_lossy(&r.run(&["status"]).stdout).to_string();
    assert!(
        status.contains("stages: tests `cargo test` passed"),
        "{status}"
    );
}

#[test]
fn a_regressing_iteration_is_rolled_back_to_the_best_before_it() {
    let r = crate_repo();
    let id = r.task("Tidy sub", &["--tier", "trivial"]);
    let break_add =
        "sed -i 's/^pub fn add.*/pub fn add(a: i32, b: i32) -> i32 { a * b + 1 }/' src/lib.rs;";
    agent(
        &r,
        &format!(
            "1) {one} ;; 2) {two} ;; 3) {two} {break_add} ;; *) test -f notes/rolled || {{ touch notes/rolled; git log -1 --format=%s > notes/head-after-rollback; }}; {fix} ;;",
            one = set_sub("a + b"),
            two = set_sub("b - a"),
            fix = set_sub("a - b"),
        ),
    );
    run(&r);
    let b = r.bead(&id);
    let t = trajectory(&b);
    let decisions: Vec<&str> = t
        .iter()
        .map(|i| i["monitor"]["decision"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        decisions,
        ["continue", "continue", "rollback", "success"],
        "{:#}",
        json!(t)
    );
    assert_eq!(t[2]["effect"]["effect"], "rolled_back", "{:#}", t[2]);
    // The fourth iteration began on the restored snapshot: iteration 2's commit.
    assert_eq!(note(&r, &id, "head-after-rollback").trim(), "iteration 2");
    assert_eq!(b["pipeline"]["gate"]["state"], "pending");
}

#[test]
fn a_saved_plan_whose_acceptance_command_fails_never_reaches_done() {
    let r = crate_repo();
    r.git(&["branch", "campaign"]);
    let plan = json!({
        "schema_version": 1,
        "title": "Calc",
        "scenarios": [{"id": "S1", "title": "adds"}],
        "suite_cmd": "true",
        "test_paths": ["tests"],
        "autonomy": "deep",
        "target": "campaign",
        "tasks": [
            {"id": "add", "title": "Add", "scenarios": ["S1"],
             "acceptance": [{"id": "A1", "argv": ["false"]}]}
        ]
    });
    r.write("plan.json", &serde_json::to_string_pretty(&plan).unwrap());
    let out = splice(
        &r,
        &[
            "exec",
            "--plan",
            "plan.json",
            "--agent",
            "sim",
            "--delivery",
            "direct",
            "--max-turns",
            "2",
            "--json",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "{stdout}");
    let got: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    assert_ne!(got["status"], "done", "{stdout}");
    let root = got["id"].as_str().expect("the root's id").to_string();
    let leaf = r.bead(&format!("{root}.1"));
    assert_ne!(leaf["status"], "closed", "{leaf:#}");
    let t = trajectory(&leaf);
    assert!(!t.is_empty(), "the acceptance fact was measured: {leaf:#}");
    for it in &t {
        assert_eq!(it["state"]["acceptance"]["failed"], 1, "{it:#}");
        assert_eq!(it["context"]["acceptance"][0]["id"], "A1");
    }
}

/// A `semgrep` stand-in on `PATH`: one SARIF `error` result while `danger.py` exists.
fn fake_semgrep(r: &Repo) -> String {
    let bin = r.path().join("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    let result = r#"{"ruleId": "py.eval-use", "level": "error", "message": {"text": "eval of input"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "danger.py"}, "region": {"startLine": 1}}}]}"#;
    let sarif = |results: &str| {
        format!(
            r#"{{"version": "2.1.0", "runs": [{{"tool": {{"driver": {{"name": "semgrep"}}}}, "results": [{results}]}}]}}"#
        )
    };
    let script = format!(
        "#!/bin/sh\nif [ -f danger.py ]; then echo '{}'; else echo '{}'; fi\n",
        sarif(result),
        sarif("")
    );
    let path = bin.join("semgrep");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn a_high_finding_keeps_the_leaf_from_review_and_a_missing_analyzer_is_incomplete() {
    let r = Repo::new();
    r.write("app.py", "print('hello')\n");
    r.write(".semgrep.yml", "rules: []\n");
    r.write(".gitignore", "notes/\nfakebin/\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "app"]);
    let path = fake_semgrep(&r);
    let id = r.task("Read input", &["--tier", "trivial"]);
    agent(
        &r,
        "1) echo 'eval(input())' > danger.py ;; 2) git rm -q danger.py ;;",
    );
    let out = r
        .cmd(&["run", "--output", "json"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b = r.bead(&id);
    let t = trajectory(&b);
    assert_eq!(t.len(), 2, "{:#}", json!(t));
    let first = &t[0];
    assert_eq!(first["state"]["security"]["high"], 1, "{first:#}");
    assert_eq!(first["monitor"]["decision"], "continue");
    assert_eq!(first["context"]["findings"][0]["rule"], "py.eval-use");
    let stage = |it: &Value, tool: &str| -> Value {
        it["context"]["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["tool"] == tool)
            .cloned()
            .unwrap_or_else(|| panic!("no {tool} stage: {it:#}"))
    };
    assert_eq!(stage(first, "semgrep")["status"], "failed");
    // ruff is not installed here: incomplete evidence, never a failure.
    let ruff = stage(first, "ruff");
    assert_eq!(ruff["status"], "incomplete", "{ruff:#}");
    assert!(
        ruff["found"].as_str().unwrap().contains("not installed"),
        "{ruff:#}"
    );
    assert!(
        first["state"]["incomplete_verifications"].as_u64().unwrap() >= 1,
        "{first:#}"
    );
    let prompt = note(&r, &id, "prompt-2.md");
    assert!(prompt.contains("py.eval-use"), "{prompt}");
    // Without the finding the iteration succeeds, incomplete verifications notwithstanding.
    assert_eq!(t[1]["monitor"]["decision"], "success", "{:#}", t[1]);
    assert_eq!(stage(&t[1], "semgrep")["status"], "passed");
    assert_eq!(b["pipeline"]["gate"]["state"], "pending");
}

/// The default manifest's test generator, on the trivial route for the test (the default puts
/// it on `leaf`, which starts with a spec): implement fixes `mul`, then generate-tests writes a
/// test and also touches the code (refused: test files only), then a test that shows a bug
/// (a failing test, named to its next iteration, never "fixed" in the code), then passes.
#[test]
fn the_test_generator_changes_test_files_only_and_a_failing_test_it_writes_is_named_to_it() {
    let r = crate_repo();
    let mut m: Value =
        serde_json::from_str(include_str!("../manifest/coding-pipeline.json")).unwrap();
    m["routes"]["trivial"] = json!(["implement", "generate-tests", "review", "deliver"]);
    for step in m["steps"].as_array_mut().unwrap() {
        match step["name"].as_str() {
            Some("implement") => {
                let s = step.as_object_mut().unwrap();
                s.remove("gate");
                s.remove("relax");
            }
            // Held at a person's gate once it passes, so the test ends there.
            Some("generate-tests") => step["gate"] = json!("human"),
            _ => {}
        }
    }
    r.write(".splice/manifest.json", &m.to_string());
    let id = r.task("Fix mul", &["--tier", "trivial"]);
    let test = |body: &str| {
        format!(
            "mkdir -p tests; printf '%s\\n' 'use calc::*;' '#[test] fn s1_subtracts() {{ assert_eq!(sub(5, 3), 2); }}' {body} > tests/gen.rs;"
        )
    };
    let script = format!(
        "n=${{SPLICE_ITERATION:-0}}; mkdir -p notes; cp \"$1\" notes/$SPLICE_STEP-$n.md; \
         case $SPLICE_STEP:$n in \
           implement:*) sed -i 's/^pub fn mul.*/pub fn mul(a: i32, b: i32) -> i32 {{ a * b }}/' src/lib.rs ;; \
           generate-tests:1) {t1} echo '// touched' >> src/lib.rs ;; \
           generate-tests:2) git checkout HEAD~1 -- src/lib.rs; {t2} ;; \
           generate-tests:*) {t1} ;; \
         esac; \
         git add -A >/dev/null; git -c user.name=a -c user.email=a@x commit -qm \"$SPLICE_STEP $n\" >/dev/null 2>&1 || true; \
         echo \"$SPLICE_STEP $n: mul now multiplies\"",
        t1 = test(""),
        t2 = test("'#[test] fn sub_saturates() { assert_eq!(sub(i32::MIN, 1), i32::MIN); }'"),
    );
    let command = serde_json::to_string(&["sh", "-c", &script, "sh", "{{prompt_file}}"]).unwrap();
    r.write(
        ".splice/config.toml",
        &format!("[agent]\ncommand = {command}\n"),
    );
    run(&r);
    let b = r.bead(&id);
    assert_eq!(b["pipeline"]["step"], "generate-tests", "{b:#}");
    assert_eq!(b["pipeline"]["gate"]["state"], "pending", "{b:#}");
    let t: Vec<Value> = trajectory(&b)
        .into_iter()
        .filter(|i| i["step"] == "generate-tests")
        .collect();
    assert_eq!(t.len(), 3, "{:#}", json!(t));
    // The first iteration's stages passed; its floor refused the change to src/lib.rs.
    assert_eq!(t[0]["monitor"]["decision"], "success", "{:#}", t[0]);
    let second = note(&r, &id, "generate-tests-2.md");
    assert!(
        second.contains("may change test files only") && second.contains("src/lib.rs"),
        "{second}"
    );
    // The second wrote a test the code fails: it is counted and named to the third.
    assert_eq!(t[1]["state"]["tests"]["failed"], 1, "{:#}", t[1]);
    assert_eq!(t[1]["context"]["failing_tests"], json!(["sub_saturates"]));
    let third = note(&r, &id, "generate-tests-3.md");
    assert!(third.contains("sub_saturates"), "{third}");
    // The code writer's summary reached the test generator's first prompt.
    let first = note(&r, &id, "generate-tests-1.md");
    assert!(first.contains("implement 1: mul now multiplies"), "{first}");
    // What was committed at the end: the code as implement left it, plus the test file.
    let wt = r.worktree(&id);
    let lib = std::fs::read_to_string(wt.join("src/lib.rs")).unwrap();
    assert!(!lib.contains("touched") && lib.contains("a * b"), "{lib}");
    let last = &b["pipeline"]["last_check"];
    assert_eq!(last["step"], "generate-tests", "{last:#}");
    assert_eq!(last["verdict"], "pass", "{last:#}");
    assert!(
        r.journal()
            .contains("tests_only: step generate-tests may change test files only"),
        "the refusal is journaled"
    );
}

/// Acceptance facts on a node whose route has no step running them (a manifest whose implement
/// is no loop) would never run: setting them says so; on the default manifest they run, and
/// nothing is said.
#[test]
fn facts_no_step_of_the_route_runs_are_warned_about_when_set() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    r.write("facts.json", r#"[{"id": "A1", "argv": ["false"]}]"#);
    let set = [
        "transition",
        "set-acceptance",
        "--bead",
        &id,
        "--facts",
        "facts.json",
    ];
    assert_eq!(r.ok(&set)["warnings"], json!([]));
    common::single_pass_implement(&r);
    let out = r.ok(&set);
    let warned = out["warnings"][0].as_str().unwrap_or_default();
    assert!(
        warned.contains(&id) && warned.contains("no step of its route leaf runs them"),
        "{out:#}"
    );
    assert_eq!(
        r.bead(&id)["pipeline"]["acceptance"][0]["id"],
        "A1",
        "still set"
    );
}
