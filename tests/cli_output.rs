//! Snapshot tests of what the `splice` command line shows its users.
//!
//! Each case runs the built binary in a real temporary git repository (fixed clock, clean
//! environment: `tests/common`) and renders ONE text document: the command line, the exit code,
//! stdout and stderr. It is compared with the checked-in `tests/cli_output/<group>-<case>.txt`;
//! a difference fails with a line diff. A missing expected file is a failure too, never created
//! silently.
//!
//! Re-approve after an intended change, in one command, then review and commit the diff:
//!
//! ```text
//! SPLICE_BLESS=1 cargo test --test cli_output
//! git diff tests/cli_output/
//! ```
//!
//! Blessing rewrites every differing or missing expected file and deletes a file of a group that
//! no case produces any more. Only what legitimately varies between runs is normalized, in one
//! function, `harness::redact` (temp paths, holder identities and run ids that carry a pid or
//! host, elapsed times, durations, commit shas); everything else is compared byte for byte.
//! `tests/cli_output/README.md` lists the cases.

mod common;
#[path = "cli_output/harness.rs"]
mod harness;

use common::Repo;
use harness::{Snapshots, json};

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");

/// The agent is the simulated one (`splice sim-agent`), as in `tests/runner_e2e.rs`.
fn use_sim_agent(r: &Repo) {
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"{SPLICE}\", \"sim-agent\"]\nusage = \"file\"\n\n\
             [delivery]\nmethod = \"direct\"\n"
        ),
    );
}

/// A spec for `id` that the default manifest's `spec` floor accepts.
fn write_spec(r: &Repo, id: &str) {
    let head = r.git(&["rev-parse", "HEAD"]);
    r.write(
        &format!("specs/{id}.md"),
        &format!(
            "---\nbead: {id}\nbase_commit: {head}\nfiles:\n  - src/parse.rs\nverdict: leaf\n---\n\n\
             # Fix the parser\n\n```gherkin\nFeature: parser\n\n  Scenario: S1 empty input\n    \
             Then no panic\n```\n"
        ),
    );
}

fn id_of(out: &std::process::Output) -> String {
    json(out)["id"].as_str().expect("an id").to_string()
}

/// A lone task from `init-task` through every single-bead verb, with the default manifest.
#[test]
fn task() {
    let mut s = Snapshots::new("task");
    let r = Repo::new();
    let out = s.check(
        "init-task",
        &r,
        &[
            "init-task",
            "--title",
            "Fix the parser",
            "--description",
            "Empty input panics.",
            "--tier",
            "light",
        ],
    );
    let id = id_of(&out);
    let id = id.as_str();
    s.check("status", &r, &["status"]);
    s.check("status-json", &r, &["status", "--json"]);
    s.check("show-fresh", &r, &["transition", "show", "--bead", id]);
    for field in ["step", "kind", "autonomy", "target", "delivery"] {
        s.check(field, &r, &["show", id, "--field", field, "--json"]);
    }
    let complete = [
        "transition",
        "complete",
        "--bead",
        id,
        "--step",
        "generate-spec",
    ];
    s.check("complete-refused", &r, &complete);
    write_spec(&r, id);
    let spec = format!("specs/{id}.md");
    s.check(
        "propose",
        &r,
        &[
            "transition",
            "propose",
            "--bead",
            id,
            "--step",
            "generate-spec",
            "--artifact",
            &spec,
            "--result",
            "leaf",
        ],
    );
    s.check("complete-gate-pending", &r, &complete);
    s.check(
        "reject",
        &r,
        &[
            "transition",
            "reject",
            "--bead",
            id,
            "--step",
            "generate-spec",
            "--reason",
            "cover the empty input",
        ],
    );
    r.ok(&complete);
    s.check(
        "approve",
        &r,
        &[
            "transition",
            "approve",
            "--bead",
            id,
            "--step",
            "generate-spec",
        ],
    );
    s.check(
        "claim",
        &r,
        &["transition", "claim", "--bead", id, "--holder", "alice"],
    );
    s.check(
        "claim-again",
        &r,
        &["transition", "claim", "--bead", id, "--holder", "alice"],
    );
    s.check(
        "release",
        &r,
        &["transition", "release", "--bead", id, "--holder", "alice"],
    );
    s.check(
        "claim-dispatch",
        &r,
        &[
            "transition",
            "claim",
            "--bead",
            id,
            "--holder",
            "runner-1",
            "--dispatch",
        ],
    );
    s.check(
        "record-exit",
        &r,
        &[
            "transition",
            "record-exit",
            "--bead",
            id,
            "--holder",
            "runner-1",
            "--exit",
            "failed",
            "--code",
            "3",
            "--log",
            "logs/implement-1.log",
            "--usage",
            r#"{"input_tokens": 10, "output_tokens": 2, "cost_usd": null}"#,
        ],
    );
    s.check(
        "release-clear",
        &r,
        &[
            "transition",
            "release",
            "--bead",
            id,
            "--clear",
            "--reason",
            "runner died",
        ],
    );
    s.check(
        "park",
        &r,
        &[
            "transition",
            "park",
            "--bead",
            id,
            "--reason",
            "needs a person",
        ],
    );
    s.check(
        "unpark",
        &r,
        &[
            "transition",
            "unpark",
            "--bead",
            id,
            "--reason",
            "the spec was fixed",
        ],
    );
    s.check(
        "set-autonomy",
        &r,
        &[
            "transition",
            "set-autonomy",
            "--bead",
            id,
            "--level",
            "wave",
        ],
    );
    // A target must name a commit (issue 10, item 9).
    r.git(&["branch", "dev"]);
    s.check(
        "set-target",
        &r,
        &[
            "transition",
            "set-target",
            "--bead",
            id,
            "--target",
            "dev",
            "--delivery",
            "direct",
        ],
    );
    s.check(
        "route",
        &r,
        &[
            "transition",
            "route",
            "--bead",
            id,
            "--to",
            "leaf",
            "--at",
            "review",
        ],
    );
    s.check("show-worked", &r, &["transition", "show", "--bead", id]);
}

/// A campaign root from `init`, then split into two children at to-issues.
#[test]
fn campaign() {
    let mut s = Snapshots::new("campaign");
    let r = Repo::new();
    let out = s.check(
        "init",
        &r,
        &["init", "--title", "Calculator", "--scenarios", "S1,S2"],
    );
    let root = id_of(&out);
    let root = root.as_str();
    s.check("status", &r, &["status"]);
    s.check("status-json", &r, &["status", "--json"]);
    std::fs::create_dir_all(r.path().join("tests")).unwrap();
    s.check(
        "set-config",
        &r,
        &[
            "transition",
            "set-config",
            "--bead",
            root,
            "--suite-cmd",
            "cargo test",
            "--test-paths",
            "tests",
        ],
    );
    s.check(
        "route",
        &r,
        &[
            "transition",
            "route",
            "--bead",
            root,
            "--to",
            "root",
            "--at",
            "to-issues",
        ],
    );
    r.write(
        "children.json",
        r#"[{"title": "Parser", "description": "parse the input", "scenarios": ["S1"], "files": ["src/parse.rs"]},
            {"title": "Printer", "scenarios": ["S2"], "files": ["src/print.rs"], "depends_on": [0]}]"#,
    );
    s.check(
        "split",
        &r,
        &[
            "transition",
            "split",
            "--bead",
            root,
            "--children",
            "children.json",
        ],
    );
    s.check("status-split", &r, &["status"]);
    s.check("status-split-json", &r, &["status", "--json"]);
}

/// A lone task with the simulated agent, driven until it stops at its first human gate.
#[test]
fn run() {
    let mut s = Snapshots::new("run");
    let sim_task = || {
        let r = Repo::new();
        r.task("Write the notes", &[]);
        use_sim_agent(&r);
        r
    };
    let r = sim_task();
    s.check("pass-dry-run", &r, &["pass", "--dry-run"]);
    s.check("human", &r, &["run", "--output", "human"]);
    s.check("status-after", &r, &["status"]);
    s.check("json", &sim_task(), &["run", "--output", "json"]);
    s.check(
        "stream-json",
        &sim_task(),
        &["run", "--output", "stream-json"],
    );
}

/// Preconditions that say no: exit 1 and the reason on stderr.
#[test]
fn refusals() {
    let mut s = Snapshots::new("refusals");
    let r = Repo::new();
    let id = r.task("Guard the gate", &[]);
    let id = id.as_str();
    let approve = [
        "transition",
        "approve",
        "--bead",
        id,
        "--step",
        "generate-spec",
    ];
    s.check("approve-no-gate", &r, &approve);
    write_spec(&r, id);
    r.ok(&[
        "transition",
        "complete",
        "--bead",
        id,
        "--step",
        "generate-spec",
    ]);
    s.check_env(
        "approve-dispatched",
        &r,
        &[("SPLICE_DISPATCHED", "1")],
        &approve,
    );
    s.check(
        "expect-seq-stale",
        &r,
        &[
            "transition",
            "claim",
            "--bead",
            id,
            "--holder",
            "alice",
            "--expect-seq",
            "1",
        ],
    );
    s.check(
        "set-target-missing",
        &r,
        &["transition", "set-target", id, "--target", "nosuchbranch"],
    );
    r.ok(&["transition", "claim", "--bead", id, "--holder", "alice"]);
    s.check(
        "claim-held",
        &r,
        &["transition", "claim", "--bead", id, "--holder", "bob"],
    );
}

/// Machinery faults: exit 2 and a message naming the file or what is missing.
#[test]
fn faults() {
    let mut s = Snapshots::new("faults");
    let r = Repo::new();
    let id = r.task("Sound", &[]);
    let broken = r.task("Broken", &[]);
    s.check("unknown-bead", &r, &["show", "sp-nope"]);
    let broken_path = r.state().join("beads").join(format!("{broken}.json"));
    std::fs::write(&broken_path, "{\"id\": \"x\", ").unwrap();
    s.check("corrupt-bead-show", &r, &["show", &broken]);
    s.check("corrupt-bead-status", &r, &["status"]);
    std::fs::remove_file(&broken_path).unwrap();
    let manifest = splice::model::manifest::DEFAULT_MANIFEST.replace(
        "\"leaf\": [\"generate-spec\", \"implement\"",
        "\"leaf\": [\"generate-spec\", \"implemnt\"",
    );
    assert_ne!(manifest, splice::model::manifest::DEFAULT_MANIFEST);
    r.write(".splice/manifest.json", &manifest);
    s.check(
        "manifest-unknown-step",
        &r,
        &[
            "transition",
            "claim",
            "--bead",
            &id,
            "--holder",
            "a",
            "--dispatch",
        ],
    );
    s.check("manifest-unknown-step-status", &r, &["status"]);
    let bare = Repo::new();
    s.check("no-state-dir", &bare, &["status"]);
    s.check(
        "no-state-dir-transition",
        &bare,
        &["transition", "show", "--bead", "sp-1234"],
    );
    s.check(
        "no-state-dir-flag",
        &bare,
        &[
            "transition",
            "step",
            "--bead",
            "sp-1234",
            "--dir",
            "elsewhere",
        ],
    );
}

/// `splice decide` replaying one case of the corpus in `snapshots/`.
#[test]
fn decide() {
    let mut s = Snapshots::new("decide");
    let r = Repo::new();
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots");
    let read = |name: &str| std::fs::read_to_string(corpus.join(name)).unwrap();
    r.write("snap.json", &read("waiting-parent.json"));
    s.check("snapshot", &r, &["decide", "--snapshot", "snap.json"]);
    let expected = read("waiting-parent.expected.json");
    r.write("expected.json", &expected);
    s.check(
        "expect-matches",
        &r,
        &[
            "decide",
            "--snapshot",
            "snap.json",
            "--expect",
            "expected.json",
        ],
    );
    let wrong = expected.replace(
        "\"parent_step\": \"to-issues\"",
        "\"parent_step\": \"delegate\"",
    );
    assert_ne!(wrong, expected);
    r.write("wrong.json", &wrong);
    s.check(
        "expect-differs",
        &r,
        &[
            "decide",
            "--snapshot",
            "snap.json",
            "--expect",
            "wrong.json",
        ],
    );
}

/// A person undoes mistakes (issue 10, item 8): close, cancel, and a re-split.
#[test]
fn undo() {
    let mut s = Snapshots::new("undo");
    let r = Repo::new();
    let task = r.task("Done elsewhere", &[]);
    s.check(
        "close",
        &r,
        &["close", &task, "--reason", "fixed by hand in 1a2b3c"],
    );
    let mistake = r.task("Created by mistake", &[]);
    r.ok(&["transition", "park", &mistake, "--reason", "not wanted"]);
    s.check(
        "cancel-parked",
        &r,
        &["cancel", &mistake, "--reason", "created by mistake"],
    );
    s.check("status-after", &r, &["status"]);

    let r = Repo::new();
    let root = r.init(&["--scenarios", "S1,S2"]);
    let root = root.as_str();
    r.ok(&[
        "transition",
        "route",
        root,
        "--to",
        "root",
        "--at",
        "to-issues",
    ]);
    r.write(
        "children.json",
        r#"[{"title": "Parser", "scenarios": ["S1"]}, {"title": "Printer", "scenarios": ["S2"], "depends_on": [0]}]"#,
    );
    r.ok(&["transition", "split", root, "--children", "children.json"]);
    s.check(
        "cancel-open-children",
        &r,
        &["cancel", root, "--reason", "wrong campaign"],
    );
    let first = format!("{root}.1");
    s.check(
        "cancel-child",
        &r,
        &["cancel", &first, "--reason", "split wrongly"],
    );
    s.check("status-blocked", &r, &["status"]);
    s.check(
        "complete-not-conserved",
        &r,
        &["transition", "complete", root, "--step", "to-issues"],
    );
    r.write(
        "again.json",
        r#"[{"title": "Parser and printer", "scenarios": ["S1", "S2"]}]"#,
    );
    s.check(
        "resplit",
        &r,
        &["transition", "resplit", root, "--children", "again.json"],
    );
}

/// A loop step (issue 13): what a person sees of iterations, the monitor's decisions and a
/// rollback, in a run's lines and in `status`.
#[test]
fn loops() {
    let mut s = Snapshots::new("loops");
    let r = Repo::new();
    let dir = r.path().display().to_string();
    std::fs::write(
        r.path().join("plan"),
        "a=ok b=FAILED c=ok\na=ok b=ok c=FAILED d=ok\na=FAILED b=FAILED c=FAILED\na=ok b=ok c=ok d=ok\n",
    )
    .unwrap();
    let script = format!(
        "n=$SPLICE_ITERATION; line=$(sed -n \"${{n}}p\" {dir}/plan); : > results; \
         for t in $line; do echo \"test ${{t%%=*}} ... ${{t#*=}}\" >> results; done; \
         git add -A >/dev/null; git -c user.name=a -c user.email=a@x commit -qm \"it $n\" >/dev/null"
    );
    let manifest = serde_json::json!({
        "routes": { "root": ["plan", "delegate"], "compound": ["plan", "delegate"], "leaf": ["work"] },
        "steps": [
            { "name": "plan", "role": "split", "floors": [] },
            { "name": "delegate", "floors": [ { "kind": "children_finished" } ] },
            { "name": "work", "run": { "argv": ["sh", "-c", script] }, "floors": [],
              "timeout_s": 60,
              "loop": { "stages": [ { "kind": "tests", "argv": ["cat", "results"] } ] } }
        ]
    });
    r.write(
        ".splice/manifest.json",
        &serde_json::to_string_pretty(&manifest).unwrap(),
    );
    let id = r.task("Loop", &[]);
    s.check(
        "guide-not-asking",
        &r,
        &["transition", "guide", "--bead", &id, "--text", "go"],
    );
    s.check(
        "run-human",
        &r,
        &["run", "--output", "human", "--max-passes", "5"],
    );
    s.check("status", &r, &["status"]);
    s.check("status-json", &r, &["status", "--json"]);
}
