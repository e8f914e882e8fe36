//! Saved plans: `splice exec --plan` / `splice plan approve` run one to `done` with the simulated
//! agent, record the person's approval of the planning gates with the plan's hash, refuse a
//! dispatched session, and refuse every kind of bad plan before anything is written;
//! `splice plan crystallize` with a scripted designer and critic.

mod common;

use common::Repo;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn good_plan() -> Value {
    json!({
        "schema_version": 1,
        "title": "Greeter",
        "scenarios": [{"id": "S1", "title": "greets"}, {"id": "S2", "title": "says bye"}],
        "suite_cmd": "test -f README.md",
        "test_paths": ["tests"],
        "autonomy": "deep",
        "target": "campaign",
        "tasks": [
            {"id": "bye", "title": "Bye", "scenarios": ["S2"], "depends_on": ["hello"],
             "tier": "light", "acceptance": [{"id": "A1", "argv": ["true"]}]},
            {"id": "hello", "title": "Hello", "scenarios": ["S1"], "files": ["src/hello.txt"]}
        ]
    })
}

fn repo_with_plan(plan: &Value) -> Repo {
    let r = Repo::new();
    r.git(&["branch", "campaign"]);
    r.write("plan.json", &serde_json::to_string_pretty(plan).unwrap());
    r
}

fn sha256_of(r: &Repo, rel: &str) -> String {
    let bytes = std::fs::read(r.path().join(rel)).unwrap();
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn exec_plan_runs_the_campaign_to_done_and_records_the_plans_approval() {
    let r = repo_with_plan(&good_plan());
    let args = [
        "exec",
        "--plan",
        "plan.json",
        "--agent",
        "sim",
        "--delivery",
        "direct",
        "--json",
    ];
    let out = r.run(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(out["status"], "done", "{out:#}");
    let root = out["id"].as_str().unwrap().to_string();
    // Topological order: `hello` (declared second) is the first child, `bye` waits for it.
    assert_eq!(
        out["children"],
        json!([format!("{root}.1"), format!("{root}.2")])
    );
    let hello = r.bead(&format!("{root}.1"));
    let bye = r.bead(&format!("{root}.2"));
    assert_eq!(hello["title"], "Hello");
    assert_eq!(hello["pipeline"]["scenarios"], json!(["S1"]));
    assert_eq!(bye["dependencies"][0]["depends_on_id"], format!("{root}.1"));
    assert_eq!(bye["pipeline"]["tier"], "light");
    assert_eq!(
        bye["pipeline"]["acceptance"],
        json!([{"id": "A1", "argv": ["true"]}])
    );
    assert!(
        bye["description"]
            .as_str()
            .unwrap()
            .contains("- A1: `true`")
    );
    // The root: configured as set-config does, its planning gates approved by the person.
    let b = r.bead(&root);
    let p = &b["pipeline"];
    assert_eq!(p["suite_cmd"], "test -f README.md");
    assert_eq!(p["test_paths"], json!(["tests"]));
    assert_eq!(p["scenarios"], json!(["S1", "S2"]));
    let approval = &p["plan"];
    assert_eq!(approval["sha256"], sha256_of(&r, "plan.json"));
    assert_eq!(approval["by"], "person");
    assert_eq!(approval["at"], common::NOW);
    let gates: Vec<(&str, &str, &str)> = approval["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["step"].as_str().unwrap(),
                g["state"].as_str().unwrap(),
                g["by"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        gates,
        [
            ("create-prp", "approved", "person"),
            ("to-issues", "approved", "person")
        ]
    );
    // One journal record made the root and both children.
    let journal = r.journal();
    let first = journal.lines().next().unwrap();
    let record: Value = serde_json::from_str(first).unwrap();
    assert_eq!(record["verb"], "exec", "{record:#}");
    assert!(first.contains(&format!("\"{root}.2\"")), "{first}");
    // The work landed on the campaign's target.
    let files = r.git(&["ls-tree", "-r", "--name-only", "campaign"]);
    assert!(
        files.contains(&format!("tests/{root}.1.feature")),
        "{files}"
    );
    assert!(
        files.contains(&format!("docs/reconcile/{root}.md")),
        "{files}"
    );
}

#[test]
fn plan_approve_is_exec_plan_and_a_dispatched_session_is_refused_both() {
    let r = repo_with_plan(&good_plan());
    r.task("Something else", &[]);
    let before = r.beads_bytes();
    let journal = r.journal();
    for args in [
        vec!["exec", "--plan", "plan.json", "--agent", "sim"],
        vec!["plan", "approve", "plan.json", "--agent", "sim"],
    ] {
        let out = r.cmd(&args).env("SPLICE_DISPATCHED", "1").output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("person"), "{args:?}: {err}");
        assert_eq!(r.beads_bytes(), before, "{args:?}: state unchanged");
        assert_eq!(r.journal(), journal);
    }
    // A person's `plan approve` creates the campaign (one pass is enough to see it).
    let out = r.run(&[
        "plan",
        "approve",
        "plan.json",
        "--agent",
        "sim",
        "--max-passes",
        "1",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(13),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out: Value = serde_json::from_slice(&out.stdout).unwrap();
    let root = r.bead(out["id"].as_str().unwrap());
    assert_eq!(root["pipeline"]["step"], "delegate");
    assert_eq!(root["pipeline"]["plan"]["gates"][0]["step"], "create-prp");
}

/// Each bad plan: a change to the good one, and what the message names.
fn bad_plans() -> Vec<(&'static str, Value, &'static str)> {
    let mut cases = Vec::new();
    let mut with = |name: &'static str, f: &dyn Fn(&mut Value), expect: &'static str| {
        let mut p = good_plan();
        f(&mut p);
        cases.push((name, p, expect));
    };
    with(
        "unknown tier",
        &|p| p["tasks"][0]["tier"] = json!("huge"),
        "tasks[0] (bye).tier: unknown tier \"huge\"",
    );
    with(
        "architectural task",
        &|p| p["tasks"][1]["tier"] = json!("architectural"),
        "tasks[1] (hello).tier: architectural is a campaign",
    );
    with(
        "dependency cycle",
        &|p| p["tasks"][1]["depends_on"] = json!(["bye"]),
        "tasks: a dependency cycle among bye, hello",
    );
    with(
        "unknown dependency",
        &|p| p["tasks"][0]["depends_on"] = json!(["nope"]),
        "tasks[0] (bye).depends_on: \"nope\" names no task",
    );
    with(
        "duplicate task id",
        &|p| p["tasks"][1]["id"] = json!("bye"),
        "tasks[1] (bye).id: bye is the id of an earlier task",
    );
    with(
        "scenario owned by no task",
        &|p| {
            p["scenarios"]
                .as_array_mut()
                .unwrap()
                .push(json!({"id": "S3", "title": "x"}))
        },
        "scenarios: S3 is owned by no task",
    );
    with(
        "undeclared scenario",
        &|p| p["tasks"][1]["scenarios"] = json!(["S1", "S9"]),
        "tasks[1] (hello).scenarios: S9 is not declared",
    );
    with(
        "unknown field",
        &|p| p["tasks"][0]["owner"] = json!("me"),
        "tasks[0].owner: unknown field `owner`",
    );
    with(
        "unknown top-level field",
        &|p| p["priority"] = json!(1),
        "unknown field `priority`",
    );
    with(
        "schema version",
        &|p| p["schema_version"] = json!(2),
        "schema_version: 2",
    );
    with(
        "path outside the repository",
        &|p| p["tasks"][1]["files"] = json!(["../x"]),
        "tasks[1] (hello).files: \"../x\"",
    );
    with(
        "acceptance without a program",
        &|p| p["tasks"][0]["acceptance"] = json!([{"id": "A1", "argv": []}]),
        "tasks[0] (bye).acceptance[0] (A1).argv",
    );
    with(
        "bad autonomy",
        &|p| p["autonomy"] = json!("full"),
        "autonomy: \"full\"",
    );
    cases
}

#[test]
fn every_bad_plan_is_refused_naming_the_file_and_field_with_nothing_written() {
    for (name, plan, expect) in bad_plans() {
        let r = repo_with_plan(&plan);
        let err = r.fails(2, &["exec", "--plan", "plan.json", "--agent", "sim"]);
        assert!(err.contains("plan.json"), "{name}: {err}");
        assert!(err.contains(expect), "{name}: expected {expect:?} in {err}");
        assert!(!r.state().exists(), "{name}: nothing was written");
    }
    let r = repo_with_plan(&good_plan());
    r.write("plan.json", "{not json");
    let err = r.fails(2, &["plan", "approve", "plan.json"]);
    assert!(err.contains("plan.json"), "{err}");
    assert!(!r.state().exists());
}

/// `[plan] designer` copies `src` to the plan file and keeps the prompt it got; `critic` prints
/// `critic_out`. The designer keeps the prompt in the repository's root, which its sandbox
/// refuses, so these run unconfined (`tests/sandbox_hostile.rs` runs a confined designer).
fn crystallize_repo(src: &Value, critic: &str) -> Repo {
    let r = Repo::unconfined();
    r.write("good.json", &serde_json::to_string(src).unwrap());
    r.write("notes.md", "# Greeter\n\nSay hello, then bye.\n");
    let dir = r.path().display().to_string();
    r.write(
        ".splice/config.toml",
        &format!(
            "[plan]\ndesigner = [\"sh\", \"-c\", \"cp {dir}/good.json \\\"$SPLICE_PLAN_FILE\\\" && printf '%s' \\\"$0\\\" > {dir}/prompt.txt\"]\n\
             critic = [\"sh\", \"-c\", {critic:?}]\n"
        ),
    );
    r
}

#[test]
fn crystallize_writes_a_valid_plan_and_reports_the_critics_verdict() {
    let critic =
        "test -f \"$0\" && echo '{\"verdict\": \"PASS\", \"findings\": [\"two tasks, ordered\"]}'";
    let r = crystallize_repo(&good_plan(), critic);
    let out = r.ok(&[
        "plan",
        "crystallize",
        "notes.md",
        "-o",
        "out.plan.json",
        "--json",
    ]);
    assert_eq!(out["tasks"], 2, "{out:#}");
    assert_eq!(out["critic"]["sha256"], out["sha256"]);
    assert_eq!(
        out["critic"]["findings"],
        json!([{"category": "unclassified", "severity": "info", "must_fix": false,
                "issue": "two tasks, ordered"}])
    );
    assert_eq!(out["sha256"], sha256_of(&r, "out.plan.json"));
    let prompt = std::fs::read_to_string(r.path().join("prompt.txt")).unwrap();
    assert!(prompt.contains("Say hello, then bye."), "{prompt}");
    assert!(r.path().join("out.plan.json").is_file());
    // Starting a design agent is a person's act.
    let out = r
        .cmd(&["plan", "crystallize", "notes.md", "-o", "other.json"])
        .env("SPLICE_DISPATCHED", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!r.path().join("other.json").exists());

    let r = crystallize_repo(&good_plan(), "echo FAIL; echo 'task bye has no files'");
    let out = r.run(&["plan", "crystallize", "notes.md", "-o", "p.json"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("critic: 1 must-fix finding(s) of 1"),
        "{text}"
    );
    assert!(
        text.contains("- MUST FIX high unclassified: task bye has no files"),
        "{text}"
    );
}

/// The verdict `critic` prints: `verdict.json` in the repository, which the test rewrites.
fn critic_gate_repo() -> Repo {
    let r = Repo::unconfined();
    r.git(&["branch", "campaign"]);
    r.write(
        "plan.json",
        &serde_json::to_string_pretty(&good_plan()).unwrap(),
    );
    let dir = r.path().display().to_string();
    r.write(
        ".splice/config.toml",
        &format!("[plan]\ncritic = [\"sh\", \"-c\", \"cat {dir}/verdict.json\"]\n"),
    );
    r
}

fn verdict(r: &Repo, severity: &str) {
    let must_fix = matches!(severity, "high" | "critical");
    r.write(
        "verdict.json",
        &json!({
            "critiques": [{"category": "correctness", "severity": severity,
                           "issue": "task bye owns S2 but no file",
                           "suggested_mitigation": "give it src/bye.txt"}],
            "must_fix_before_execution": must_fix,
            "overall_assessment": "one gap"
        })
        .to_string(),
    );
}

fn beads(r: &Repo) -> Vec<Value> {
    r.beads_bytes()
        .into_iter()
        .map(|(_, bytes)| serde_json::from_slice(&bytes).unwrap())
        .collect()
}

fn bead_files(r: &Repo) -> usize {
    std::fs::read_dir(r.state().join("beads")).map_or(0, |d| d.count())
}

/// Issue 35: with a critic configured, `plan approve` (and `exec --plan`) stands on the critic's
/// verdict on the plan in its current form. A must-fix finding refuses it, with nothing
/// written, unless a person overrides it with a reason that is recorded; a plan changed since
/// it was judged is refused until it is judged again.
#[test]
fn a_critics_must_fix_finding_blocks_approval_until_the_plan_is_fixed_or_overridden() {
    let r = critic_gate_repo();
    let approve = [
        "plan",
        "approve",
        "plan.json",
        "--agent",
        "sim",
        "--max-passes",
        "1",
    ];
    // Not judged yet: refused, both ways in.
    let err = r.fails(1, &approve);
    assert!(
        err.contains("has not judged plan.json in its current form"),
        "{err}"
    );
    assert!(err.contains("splice plan critique plan.json"), "{err}");
    let err = r.fails(1, &["exec", "--plan", "plan.json", "--agent", "sim"]);
    assert!(err.contains("has not judged"), "{err}");
    assert_eq!(bead_files(&r), 0);

    // Judged with a must-fix finding: `plan critique` says so (exit 1), approval is refused.
    verdict(&r, "high");
    let out = r.run(&["plan", "critique", "plan.json", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let judged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(judged["sha256"], sha256_of(&r, "plan.json"));
    assert_eq!(judged["findings"][0]["must_fix"], true, "{judged:#}");
    assert_eq!(judged["findings"][0]["category"], "correctness");
    let journal = r.journal();
    let err = r.fails(1, &approve);
    assert!(err.contains("1 must-fix finding(s)"), "{err}");
    assert!(err.contains("task bye owns S2 but no file"), "{err}");
    assert!(err.contains("--override-critic REASON"), "{err}");
    assert_eq!(bead_files(&r), 0);
    assert_eq!(r.journal(), journal, "a refused approval writes nothing");
    // An override needs a reason.
    let mut empty = approve.to_vec();
    empty.extend(["--override-critic", " "]);
    let err = r.fails(2, &empty);
    assert!(err.contains("needs a reason"), "{err}");

    // The plan is fixed: its new form is not judged until the critic runs again.
    let mut fixed = good_plan();
    fixed["tasks"][0]["files"] = json!(["src/bye.txt"]);
    r.write("plan.json", &serde_json::to_string_pretty(&fixed).unwrap());
    let err = r.fails(1, &approve);
    assert!(err.contains("has not judged"), "{err}");
    verdict(&r, "low");
    let out = r.run(&["plan", "critique", "plan.json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("critic: passed, 1 finding(s), none must be fixed"),
        "{text}"
    );
    assert!(text.contains("mitigation: give it src/bye.txt"), "{text}");
    // Nothing to override now.
    let mut over = approve.to_vec();
    over.extend(["--override-critic", "because"]);
    let err = r.fails(2, &over);
    assert!(err.contains("nothing to override"), "{err}");
    let out = r.run(&approve);
    assert_eq!(out.status.code(), Some(13), "{out:?}");
    let root = beads(&r)
        .into_iter()
        .find(|b| b["pipeline"]["plan"].is_object())
        .expect("the plan's root");
    let standing = &root["pipeline"]["plan"]["critic"];
    assert_eq!(standing["findings"], 1, "{root:#}");
    assert!(standing.get("must_fix").is_none(), "{standing:#}");
    assert!(standing.get("overridden").is_none(), "{standing:#}");
}

#[test]
fn a_person_may_approve_over_a_must_fix_finding_with_a_reason_that_is_journaled() {
    let r = critic_gate_repo();
    verdict(&r, "critical");
    r.fails(1, &["plan", "critique", "plan.json"]);
    let out = r.run(&[
        "plan",
        "approve",
        "plan.json",
        "--agent",
        "sim",
        "--max-passes",
        "1",
        "--override-critic",
        "S2's file comes with the bye task itself",
    ]);
    assert_eq!(out.status.code(), Some(13), "{out:?}");
    let root = beads(&r)
        .into_iter()
        .find(|b| b["pipeline"]["plan"].is_object())
        .expect("the plan's root");
    let standing = &root["pipeline"]["plan"]["critic"];
    assert_eq!(
        standing["overridden"], "S2's file comes with the bye task itself",
        "{standing:#}"
    );
    assert_eq!(
        standing["must_fix"],
        json!(["task bye owns S2 but no file"])
    );
    assert!(
        r.journal()
            .contains("S2's file comes with the bye task itself")
    );
}

#[test]
fn a_recorded_verdict_that_is_not_one_is_a_fault_naming_its_file() {
    let r = critic_gate_repo();
    let sha = sha256_of(&r, "plan.json");
    r.write(
        &format!(".splice/runs/critiques/{sha}.json"),
        "{\"verdict\": \"PASS\"}",
    );
    let err = r.fails(2, &["plan", "approve", "plan.json", "--agent", "sim"]);
    assert!(err.contains(&format!("critiques/{sha}.json")), "{err}");
    assert_eq!(bead_files(&r), 0);
}

#[test]
fn crystallize_refuses_an_invalid_plan_and_writes_nothing() {
    let mut bad = good_plan();
    bad["tasks"][0]["tier"] = json!("architectural");
    let r = crystallize_repo(&bad, "echo PASS");
    let err = r.fails(2, &["plan", "crystallize", "notes.md", "-o", "p.json"]);
    assert!(err.contains("tasks[0] (bye).tier"), "{err}");
    assert!(!r.path().join("p.json").exists());
}

/// A plan's root id is chosen so that its children's ids are free too: a bead file left at
/// `<root>.1` (a hand copy, an older campaign) is neither overwritten nor adopted.
#[test]
fn a_plans_root_id_leaves_existing_child_files_alone() {
    let args = [
        "exec",
        "--plan",
        "plan.json",
        "--agent",
        "sim",
        "--max-passes",
        "1",
        "--json",
    ];
    let first = repo_with_plan(&good_plan());
    let out = first.run(&args);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let root = v["id"].as_str().expect("the root's id").to_string();

    // The same plan at the same time derives the same first id.
    let r = repo_with_plan(&good_plan());
    r.task("make the state directory", &[]);
    let leftover = r.state().join("beads").join(format!("{root}.1.json"));
    let text = std::fs::read_to_string(first.state().join("beads").join(format!("{root}.1.json")))
        .unwrap();
    std::fs::write(&leftover, &text).unwrap();
    let out = r.run(&args);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let second = v["id"].as_str().expect("the root's id");
    assert_ne!(
        second, root,
        "the root whose child file exists is not reused"
    );
    assert_eq!(
        std::fs::read_to_string(&leftover).unwrap(),
        text,
        "left alone"
    );
}

#[test]
fn a_deep_plan_on_main_integrates_on_its_roots_branch_and_waits_for_a_person_to_land_it() {
    // Issue 33: at deep the pieces land on the campaign's integration branch, `splice/<root>`,
    // made with the campaign; the merge of that branch to the main line is a person's act.
    let mut plan = good_plan();
    plan["target"] = json!("main");
    let r = repo_with_plan(&plan);
    let main_before = r.git(&["rev-parse", "main"]);
    let out = r.run(&[
        "exec",
        "--plan",
        "plan.json",
        "--agent",
        "sim",
        "--delivery",
        "direct",
        "--json",
    ]);
    let out: Value = serde_json::from_slice(&out.stdout).unwrap();
    let root = out["id"].as_str().unwrap().to_string();
    let integration = format!("splice/{root}");
    for child in out["children"].as_array().unwrap() {
        let b = r.bead(child.as_str().unwrap());
        assert_eq!(b["pipeline"]["target"], integration.as_str(), "{b:#}");
        assert_eq!(b["status"], "closed", "{:#}", b["pipeline"]);
    }
    let b = r.bead(&root);
    assert_eq!(b["pipeline"]["step"], "integrate", "{:#}", b["pipeline"]);
    assert_eq!(
        b["pipeline"]["gate"]["land"]["target"], "main",
        "{:#}",
        b["pipeline"]
    );
    assert_eq!(r.git(&["rev-parse", "main"]), main_before, "main moved");
    // The children's work is on the integration branch, and not on main.
    let log = r.git(&[
        "log",
        "--format=%s",
        &format!("{main_before}..{integration}"),
    ]);
    for child in out["children"].as_array().unwrap() {
        let child = child.as_str().unwrap();
        assert!(
            log.contains(&format!("{child}: implement")),
            "{child}: {log}"
        );
    }
}
