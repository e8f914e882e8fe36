//! `splice sim-agent`: the demo and test agent.
//!
//! A stand-in for Claude Code that does each step's real work in the worktree it is dispatched
//! into, in exactly the formats the floors check, and then signals completion the way a real
//! agent does: by running `splice transition propose` (and `split` at to-issues). It reads the
//! `SPLICE_*` environment the executor sets. `--fail` makes it exit 1 without proposing (an agent
//! that always fails); `--sleep-ms` makes it slow (for timeout and crash tests).
//!
//! `--generic` (what `splice exec --agent sim` runs) works for any request instead of the demo's
//! calculator campaign: its plan is made from the node itself (the root's title, description and
//! scenarios, one child owning them all), and `implement` writes, for any node, a note
//! `work/<id>.md` quoting the request and a test `<test dir>/<id>.feature` naming each scenario
//! the node owns (the test dir is the root's first `test_paths` entry when it is a plain
//! directory, else `tests`), so every floor of the default pipeline can pass. On a route with a
//! `generate-tests` step after implement (the default `leaf`), implement writes only the code
//! (the note, or a demo child's `src/` files) and generate-tests only the tests.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use super::{files, git, plan::Plan};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::store::Store;

/// Options of `splice sim-agent`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Args {
    /// Exit 1 without doing anything (an agent that always fails).
    #[arg(long)]
    pub fail: bool,
    /// Sleep this long before working.
    #[arg(long, default_value_t = 0)]
    pub sleep_ms: u64,
    /// Write the artifact but do not propose it.
    #[arg(long)]
    pub no_propose: bool,
    /// Work on any request (not only the demo's campaign): a note and a test for each node.
    #[arg(long)]
    pub generic: bool,
    /// The rendered prompt, passed by the executor as the last argument (ignored).
    #[arg(trailing_var_arg = true, hide = true)]
    pub prompt: Vec<String>,
}

/// The dispatch this agent was started for.
struct Job {
    store: Store,
    bead: Bead,
    root: Bead,
    step: String,
    worktree: PathBuf,
    generic: bool,
}

fn env(name: &str) -> Result<String> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            Error::Invalid(format!(
                "sim-agent: {name} is not set; it runs under the executor"
            ))
        })
}

pub fn run(args: &Args) -> Result<i32> {
    if args.sleep_ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(args.sleep_ms));
    }
    if args.fail {
        crate::stdio::err("sim-agent: failing on purpose (--fail)\n");
        return Ok(1);
    }
    let store = Store::discover(Some(Path::new(&env("SPLICE_DIR")?)))?;
    let bead = store.read_bead(&env("SPLICE_BEAD")?)?;
    let root = match crate::transition::ancestors_unlocked(&store, &bead)?.pop() {
        Some(r) => r,
        None => bead.clone(),
    };
    let step = env("SPLICE_STEP")?;
    let worktree = PathBuf::from(env("SPLICE_WORKTREE")?);
    let job = Job {
        store,
        bead,
        root,
        step,
        worktree,
        generic: args.generic,
    };
    let plan = if job.generic {
        generic_plan(&job)
    } else {
        Plan::embedded()?
    };
    let artifact = match job.step.as_str() {
        "generate-design" => design(&job, &plan)?,
        "create-prp" => prp(&job, &plan)?,
        "refine-design" => format!("docs/prp/{}.md", job.root.id),
        "to-issues" => to_issues(&job, &plan)?,
        "generate-spec" => spec(&job, &plan)?,
        "implement" => implement(&job)?,
        "generate-tests" => generate_tests(&job)?,
        super::looping::STEP => implement_iteration(&job)?,
        "review" => review(&job)?,
        "deliver" => deliver(&job)?,
        "integrate" => reconcile(&job, &plan)?,
        other => {
            return Err(Error::Invalid(format!(
                "sim-agent: no simulated work for step {other}"
            )));
        }
    };
    write_usage(&job)?;
    if !args.no_propose {
        splice(&[
            "transition",
            "propose",
            "--bead",
            &job.bead.id,
            "--step",
            &job.step,
            "--artifact",
            &artifact,
        ])?;
    }
    // The response (its last line) of the loop child's spec asks for the loop route.
    let ask = if job.step == "generate-spec" && loops(&job) {
        format!("; the parser is easy to get wrong: {}", super::looping::ASK)
    } else {
        String::new()
    };
    crate::stdio::out(&format!(
        "sim-agent: {} {} → {artifact}{ask}\n",
        job.bead.id, job.step
    ));
    Ok(0)
}

/// Run this same binary as `splice …`, as a real agent would run the splice on its PATH.
fn splice(args: &[&str]) -> Result<()> {
    let exe = std::env::current_exe().map_err(|e| Error::io("current executable", e))?;
    let out = Command::new(exe)
        .args(args)
        .output()
        .map_err(|e| Error::io("splice", e))?;
    if !out.status.success() {
        return Err(Error::Invalid(format!(
            "sim-agent: `splice {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

fn write(job: &Job, rel: &str, text: &str) -> Result<()> {
    let path = job.worktree.join(rel);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    std::fs::write(&path, text).map_err(|e| Error::io(&path, e))
}

fn commit(job: &Job, message: &str) -> Result<String> {
    let repo = git::open(&job.worktree)?;
    Ok(git::commit_all(&repo, &format!("{}: {message}", job.bead.id))?.to_string())
}

fn design(job: &Job, plan: &Plan) -> Result<String> {
    let rel = format!("docs/design/{}.md", job.root.id);
    let text = format!(
        "# Design: {}\n\n## Problem\n\n{}\n\n## Approach\n\nOne module per behaviour, each a leaf.\n\n\
         ## Risks\n\nParsing depends on arithmetic; the split orders them.\n",
        plan.title, plan.description
    );
    write(job, &rel, &text)?;
    commit(job, "design")?;
    Ok(rel)
}

fn prp(job: &Job, plan: &Plan) -> Result<String> {
    let rel = format!("docs/prp/{}.md", job.root.id);
    let mut text = format!(
        "# PRP: {}\n\n{}\n\n## Scenarios\n\n```gherkin\nFeature: calc\n\n",
        plan.title, plan.description
    );
    for s in &plan.scenarios {
        text.push_str(&plan.gherkin(&s.id));
        text.push('\n');
    }
    text.push_str("```\n");
    write(job, &rel, &text)?;
    commit(job, "PRP")?;
    Ok(rel)
}

fn to_issues(job: &Job, plan: &Plan) -> Result<String> {
    if job.bead.id != job.root.id {
        return Err(Error::Invalid(
            "sim-agent: the demo plan splits only the campaign root".into(),
        ));
    }
    let children: Vec<serde_json::Value> = plan
        .children
        .iter()
        .map(|c| {
            json!({
                "title": c.title, "description": c.description, "scenarios": c.scenarios,
                "files": c.files, "depends_on": c.depends_on,
            })
        })
        .collect();
    let path = std::env::temp_dir().join(format!(
        "splice-children-{}-{}.json",
        job.bead.id,
        std::process::id()
    ));
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&children).unwrap_or_default(),
    )
    .map_err(|e| Error::io(&path, e))?;
    let result = splice(&[
        "transition",
        "split",
        "--bead",
        &job.bead.id,
        "--children",
        &path.to_string_lossy(),
    ]);
    let _ = std::fs::remove_file(&path);
    result?;
    Ok("split".into())
}

fn spec(job: &Job, plan: &Plan) -> Result<String> {
    let rel = format!("specs/{}.md", job.bead.id);
    let base = git::head(&git::open(&job.worktree)?)?;
    let p = &job.bead.pipeline;
    // A lone task declares the note `implement` writes for it.
    let mut note = vec![format!("work/{}.md", job.bead.id)];
    if job.generic {
        note.push(test_file(job));
        note.splice(0..0, p.files.iter().map(|f| f.to_string()));
    }
    let scope: Vec<&str> = if p.files.is_empty() || job.generic {
        note.iter().map(String::as_str).collect()
    } else {
        p.files.iter().map(|f| f.as_str()).collect()
    };
    let files: String = scope.iter().map(|f| format!("  - {f}\n")).collect();
    let mut text = format!(
        "---\nbead: {}\nbase_commit: {base}\nfiles:\n{files}verdict: leaf\n---\n\n# {}\n\n{}\n\n```gherkin\nFeature: {}\n\n",
        job.bead.id, job.bead.title, job.bead.description, job.bead.title
    );
    for id in &p.scenarios {
        text.push_str(&plan.gherkin(id));
    }
    if p.scenarios.is_empty() {
        text.push_str("  Scenario: S1 the task is done\n    Then the note exists\n");
    }
    text.push_str("```\n");
    write(job, &rel, &text)?;
    commit(job, "spec")?;
    Ok(rel)
}

/// The child's index in its parent's split (`<parent>.N`).
fn child_index(bead: &Bead) -> Option<usize> {
    bead.pipeline.provenance.as_ref().map(|p| p.index)
}

/// Where the generic mode's test for this node goes: under the root's first `test_paths` entry
/// when it is a plain directory, else under `tests/`.
fn test_file(job: &Job) -> String {
    let dir = job
        .root
        .pipeline
        .test_paths
        .first()
        .map(|d| d.trim_end_matches('/'))
        .filter(|d| {
            !d.is_empty() && !d.contains(['*', '?', '[']) && crate::floors::is_relative_inside(d)
        })
        .unwrap_or("tests");
    format!("{dir}/{}.feature", job.bead.id)
}

/// The generic mode's plan: made from the campaign root (or the lone task) itself.
fn generic_plan(job: &Job) -> Plan {
    use super::plan::{Child, Scenario};
    let root = &job.root;
    let mut ids = root.pipeline.scenarios.clone();
    if ids.is_empty() {
        ids.push("S1".into());
    }
    Plan {
        title: root.title.to_string(),
        description: root.description.clone(),
        autonomy: String::new(),
        target: String::new(),
        suite_cmd: String::new(),
        test_paths: root.pipeline.test_paths.to_vec(),
        scenarios: ids
            .iter()
            .map(|id| Scenario {
                id: id.clone(),
                title: "the request is done".into(),
                given: format!("the request \"{}\"", root.title),
                then: "its note and test exist".into(),
            })
            .collect(),
        children: vec![Child {
            title: root.title.to_string(),
            description: root.description.clone(),
            scenarios: ids.to_vec(),
            files: Vec::new(),
            depends_on: Vec::new(),
        }],
    }
}

/// Does a `generate-tests` step follow the current one on the node's route? Then that step
/// writes the tests, and `implement` writes only the code.
fn tests_come_later(job: &Job) -> Result<bool> {
    let manifest = job.store.manifest()?;
    let p = &job.bead.pipeline;
    Ok(manifest.route(&p.route).is_some_and(|steps| {
        steps
            .iter()
            .skip_while(|s| **s != p.step)
            .any(|s| s == "generate-tests")
    }))
}

/// A note quoting the request, so there is a real commit to review, and (unless a test
/// generator follows) a test naming each scenario the node owns (the review's coverage floor
/// looks for them).
fn note_and_test(job: &Job) -> Result<String> {
    let id = &job.bead.id;
    let text = format!("# {}\n\n{}\n", job.bead.title, job.bead.description);
    write(job, &format!("work/{id}.md"), &text)?;
    if tests_come_later(job)? {
        return commit(job, "implement");
    }
    scenario_test(job)?;
    commit(job, "implement")
}

/// The generic mode's test: a feature file naming each scenario the node owns.
fn scenario_test(job: &Job) -> Result<()> {
    let id = &job.bead.id;
    let owned = &job.bead.pipeline.scenarios;
    let s1 = ["S1".to_string()];
    let ids = if owned.is_empty() {
        &s1[..]
    } else {
        &owned[..]
    };
    let mut feature = format!("Feature: {}\n", job.bead.title);
    for s in ids {
        feature.push_str(&format!(
            "  Scenario: {s} the note exists\n    Then work/{id}.md exists\n"
        ));
    }
    let test = if job.generic {
        test_file(job)
    } else {
        format!("tests/{id}.feature")
    };
    write(job, &test, &feature)
}

/// Write child `n`'s share of the demo's work: its code (`tests` false) or its tests.
fn demo_work(job: &Job, n: usize, tests: bool) -> Result<()> {
    let mut wrote = 0;
    for (_, path, text) in files::WORK
        .iter()
        .filter(|(i, p, _)| *i == n && crate::floors::coverage::is_test_file(Path::new(p)) == tests)
    {
        write(job, path, text)?;
        wrote += 1;
    }
    if wrote == 0 {
        return Err(Error::Invalid(format!(
            "sim-agent: the demo has no {} for child {n}",
            if tests { "tests" } else { "code" }
        )));
    }
    Ok(())
}

fn implement(job: &Job) -> Result<String> {
    let Some(n) = child_index(&job.bead).filter(|_| !job.generic) else {
        return note_and_test(job);
    };
    demo_work(job, n, false)?;
    if !tests_come_later(job)? {
        demo_work(job, n, true)?;
    }
    commit(job, "implement")
}

/// The test generator: the tests the code writer left to it, and only those.
fn generate_tests(job: &Job) -> Result<String> {
    match child_index(&job.bead).filter(|_| !job.generic) {
        Some(n) => demo_work(job, n, true)?,
        None => scenario_test(job)?,
    }
    commit(job, "generate-tests")
}

/// Does this node implement in the demo's loop step?
fn loops(job: &Job) -> bool {
    !job.generic && child_index(&job.bead) == Some(super::looping::LOOP_CHILD)
}

/// One iteration of the demo's loop step (`SPLICE_ITERATION`): a draft, a better draft, a
/// regression, then the finished work (`looping::iteration_files`).
fn implement_iteration(job: &Job) -> Result<String> {
    if !loops(job) {
        return Err(Error::Invalid(format!(
            "sim-agent: the demo's loop step is only for child {}",
            super::looping::LOOP_CHILD
        )));
    }
    let n: u32 = env("SPLICE_ITERATION")?
        .parse()
        .map_err(|_| Error::Invalid("sim-agent: SPLICE_ITERATION is not a number".into()))?;
    for (path, text) in super::looping::iteration_files(n) {
        write(job, path, text)?;
    }
    commit(job, &format!("implement, iteration {n}"))
}

fn review(job: &Job) -> Result<String> {
    let rel = format!("reviews/{}.md", job.bead.id);
    let head = git::head(&git::open(&job.worktree)?)?;
    // The review is left uncommitted: committing it would move HEAD past the reviewed commit.
    let text = format!(
        "# Review of {}\n\n## Review\n\nReviewed-SHA: {head}\nStandards: PASS\nSpec: PASS — every owned scenario has a test named with its id\n\
         Architecture: PASS\nEvidence: PASS — tests added beside the code\n",
        job.bead.id
    );
    write(job, &rel, &text)?;
    Ok(rel)
}

/// A direct delivery's preparation: the target merged into this branch when they diverged;
/// splice itself lands the branch (the target ref is never moved here).
fn deliver(job: &Job) -> Result<String> {
    use crate::transition::read::{Answer, Query, query};
    let target = match query(&job.store, &job.bead.id, Query::Target)? {
        Answer::Target {
            target: Some(t), ..
        } => t,
        _ => {
            return Err(Error::Invalid(format!(
                "sim-agent: {} has no delivery target",
                job.bead.id
            )));
        }
    };
    let repo = git::open(&job.worktree)?;
    Ok(git::prepare_delivery(&repo, &target)?.to_string())
}

fn reconcile(job: &Job, plan: &Plan) -> Result<String> {
    let rel = format!("docs/reconcile/{}.md", job.bead.id);
    let mut text = format!(
        "# Reconciliation: {}\n\n## Summary\n\nEvery child delivered into the campaign branch.\n\n## Scenarios\n\n",
        plan.title
    );
    for id in &job.bead.pipeline.scenarios {
        let title = plan.scenario(id).map_or("", |s| s.title.as_str());
        text.push_str(&format!(
            "- {id}: {title} — covered by a test named `{}_…`\n",
            id.to_lowercase()
        ));
    }
    text.push_str("\n## Deviations\n\nNone.\n");
    write(job, &rel, &text)?;
    commit(job, "reconcile")?;
    Ok(rel)
}

/// Simulated usage, deterministic per step, in the usage-file format the executor reads.
fn write_usage(job: &Job) -> Result<()> {
    let Ok(path) = std::env::var("SPLICE_USAGE_FILE") else {
        return Ok(());
    };
    if path.is_empty() {
        return Ok(());
    }
    let weight = 1000 + 37 * job.step.len() as u64 + 11 * job.bead.description.len() as u64;
    let usage = json!({
        "model": "sim-1",
        "input_tokens": weight * 3,
        "output_tokens": weight / 2,
        "cache_read_tokens": weight,
        "cache_write_tokens": 0,
        "reasoning_tokens": 0,
    });
    std::fs::write(&path, serde_json::to_vec(&usage).unwrap_or_default())
        .map_err(|e| Error::io(&path, e))
}
