//! `splice demo`: copy the example campaign into a scratch git repository and drive it to `done`
//! with the simulated agent, approving planning gates as the person and saying so.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{files, git, looping, plan::Plan};
use crate::driver::events::{Event, Events, Output};
use crate::driver::runner::{self, Options};
use crate::error::{Error, Result};
use crate::model::bead::DeliveryMethod;
use crate::model::{Autonomy, Envelope, Rest, RunStatus};
use crate::store::Store;
use crate::transition::{Ctx, create, gate, settings};

/// How a demo ended.
pub struct DemoResult {
    pub dir: PathBuf,
    pub status: RunStatus,
    pub passes: u64,
    pub dispatches: u64,
    pub tokens: u64,
    pub wall_ms: u64,
}

/// Where the scratch repository goes: `keep`, which must be missing or empty, else a new
/// directory under the system temp dir.
fn scratch(keep: Option<&Path>) -> Result<PathBuf> {
    let dir = match keep {
        Some(d) => d.to_path_buf(),
        None => {
            let stamp = crate::clock::now()?.format("%Y%m%d-%H%M%S");
            std::env::temp_dir().join(format!("splice-demo-{stamp}-{}", std::process::id()))
        }
    };
    if dir.exists() {
        let mut entries = std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))?;
        if entries.next().is_some() {
            return Err(Error::bad_file(
                &dir,
                "the demo needs a missing or empty directory",
            ));
        }
    }
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    Ok(dir)
}

/// How the demo runs: where its dispatches go, and how many at once.
#[derive(Clone, Debug)]
pub struct Setup {
    /// A Slurm job per dispatch (`[executor] kind = "slurm"`, the scratch repository as the
    /// shared root).
    pub slurm: bool,
    pub jobs: u32,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup {
            slurm: false,
            jobs: 2,
        }
    }
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The config the demo runs with: the simulated agent, its jobs, a price for its model, and
/// with Slurm the executor with `dir` as its shared root.
fn config_toml(exe: &Path, dir: &Path, setup: &Setup) -> String {
    let exe = toml_string(&exe.display().to_string());
    let mut text = format!(
        "# Written by `splice demo`.\n[agent]\ncommand = [{exe}, \"sim-agent\"]\nusage = \"file\"\n\n\
         [limits]\njobs = {}\nmax_passes = 400\n\n[delivery]\nmethod = \"direct\"\n\n\
         [prices.sim-1]\ninput = 3.0\noutput = 15.0\ncache_read = 0.3\ncache_write = 3.75\n",
        setup.jobs
    );
    if setup.slurm {
        let root = toml_string(&dir.display().to_string());
        text.push_str(&format!(
            "\n[executor]\nkind = \"slurm\"\nshared_root = {root}\ncpus = 1\n"
        ));
    }
    text
}

/// The project's files committed on `main`, the campaign branch, and `.splice/` with the demo's
/// config.
fn prepare(dir: &Path, plan: &Plan, setup: &Setup) -> Result<Store> {
    for (path, text) in files::PROJECT {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        std::fs::write(&file, text).map_err(|e| Error::io(&file, e))?;
    }
    // The loop step's check script, committed with the project.
    let check = dir.join(looping::CHECK_PATH);
    if let Some(parent) = check.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    std::fs::write(&check, looping::CHECK_SCRIPT).map_err(|e| Error::io(&check, e))?;
    let tip = git::init_with_commit(dir, "main", "calc: the project before the campaign")?;
    let repo = git::open(dir)?;
    git::branch(&repo, &plan.target, tip)?;
    let store = Store::open_or_create(Some(dir))?;
    let exe = std::env::current_exe().map_err(|e| Error::io("current executable", e))?;
    let config = store.dir().join("config.toml");
    let canonical = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
    let text = config_toml(&exe, &canonical, setup);
    std::fs::write(&config, text).map_err(|e| Error::io(&config, e))?;
    let manifest = store.dir().join("manifest.json");
    std::fs::write(&manifest, looping::manifest()?).map_err(|e| Error::io(&manifest, e))?;
    Ok(store)
}

/// The scratch repository at `dir` (else a new one under the temp dir), `.splice/` with the
/// demo's config (the simulated agent) and the campaign created at deep autonomy, its planning
/// gates held for a person. Returns the store and the campaign's root.
fn set_up(dir: Option<&Path>, events: &Events, setup: &Setup) -> Result<(PathBuf, Store, String)> {
    let plan = Plan::embedded()?;
    let dir = scratch(dir)?;
    say(
        events,
        &format!("demo: scratch repository {}", dir.display()),
    );
    let store = prepare(&dir, &plan, setup)?;

    let person = Ctx::person(&store, crate::clock::now_string()?);
    let out = create::init(
        &person,
        create::NewNode {
            title: plan.title.clone(),
            description: plan.description.clone(),
            autonomy: Autonomy::parse(&plan.autonomy),
            target: Some(plan.target.clone()),
            delivery: Some(DeliveryMethod::Direct),
            ..create::NewNode::default()
        },
    )?;
    let root = out.id;
    settings::set_config(
        &person,
        &root,
        Some(plan.suite_cmd.clone()),
        Some(plan.test_paths.clone()),
    )?;
    say(
        events,
        &format!(
            "demo: campaign {root} \"{}\" at deep autonomy, landing on {}",
            plan.title, plan.target
        ),
    );
    say(
        events,
        &format!(
            "demo: the parsing leaf implements in a loop ({}): after each iteration `sh {}` \
             measures the change and the pass monitor decides what comes next",
            looping::STEP,
            looping::CHECK_PATH
        ),
    );
    Ok((dir, store, root))
}

/// `splice demo --setup-only DIR`: the scratch repository at `dir` and the campaign, configured
/// as the demo runs it, and no pass run. Returns the campaign's root.
pub fn setup_only(dir: &Path, output: Output, setup: &Setup) -> Result<String> {
    let (_, _, root) = set_up(Some(dir), &Events::new(output), setup)?;
    Ok(root)
}

/// Set up the scratch repository and drive the campaign to `done`.
pub fn demo(dir: Option<&Path>, output: Output, setup: &Setup) -> Result<DemoResult> {
    let started = Instant::now();
    let events = Events::new(output);
    let (dir, store, root) = set_up(dir, &events, setup)?;

    let mut result = DemoResult {
        dir,
        status: RunStatus::Idle,
        passes: 0,
        dispatches: 0,
        tokens: 0,
        wall_ms: 0,
    };
    for _ in 0..20 {
        let opts = Options {
            scope: Some(root.clone()),
            ..Options::default()
        };
        let sum = runner::run(&store, &opts, &events)?;
        result.passes += sum.passes;
        result.dispatches += sum.dispatches;
        result.tokens += sum.tokens;
        result.status = sum.status;
        if sum.status != RunStatus::SuspendedHuman {
            break;
        }
        let pending = pending_gates(sum.envelope.as_ref());
        if pending.is_empty() {
            break;
        }
        for (bead, step) in pending {
            say(
                &events,
                &format!(
                    "demo: {bead} waits for a person at {step} (a planning gate never relaxes); approving as the person"
                ),
            );
            let person = Ctx::person(&store, crate::clock::now_string()?);
            gate::approve(&person, &bead, Some(&step))?;
        }
    }
    for line in looping::narration(&store)? {
        say(&events, &line);
    }
    result.wall_ms = started.elapsed().as_millis() as u64;
    Ok(result)
}

/// Nodes resting `awaiting-human` on a pending gate.
fn pending_gates(envelope: Option<&Envelope>) -> Vec<(String, String)> {
    envelope
        .into_iter()
        .flat_map(|e| &e.nodes)
        .filter_map(|(id, n)| match n.rest.as_ref().map(|r| &r.rest) {
            Some(Rest::AwaitingHuman { gate: Some(_), .. }) => Some((id.clone(), n.step.clone())),
            _ => None,
        })
        .collect()
}

fn say(events: &Events, line: &str) {
    events.emit(&Event::Note {
        text: line.to_string(),
    });
}

/// The closing table: every node, its steps, attempts, dispatches and tokens.
pub fn summary_table(store: &Store, result: &DemoResult) -> Result<String> {
    let beads = store.read_all()?;
    let mut out = String::new();
    out.push_str(&format!(
        "\n{:<14} {:<9} {:<8} {:>5} {:>8} {:>10} {:>9}  {}\n",
        "node", "kind", "status", "steps", "attempts", "dispatches", "tokens", "title"
    ));
    let (mut all_tokens, mut all_cost, mut cost_known) = (0u64, 0f64, true);
    for b in &beads {
        let p = &b.pipeline;
        let attempts: u32 = p.attempts.values().sum();
        let usage = p.usage.as_ref();
        let tokens = usage.map_or(0, |u| u.input_tokens.saturating_add(u.output_tokens));
        all_tokens = all_tokens.saturating_add(tokens);
        match usage.map(|u| u.cost_usd) {
            Some(Some(c)) => all_cost += c,
            Some(None) => cost_known = false,
            None => {}
        }
        let title: String = b.title.chars().take(40).collect();
        out.push_str(&format!(
            "{:<14} {:<9} {:<8} {:>5} {:>8} {:>10} {:>9}  {}\n",
            b.id,
            p.kind.as_str(),
            b.status.as_str(),
            p.history.len(),
            attempts,
            p.exits.len(),
            tokens,
            title
        ));
    }
    let cost = if cost_known {
        format!("${all_cost:.4}")
    } else {
        "unknown".into()
    };
    out.push_str(&format!(
        "\nstatus {} · {} passes · {} dispatches · {} tokens ({} simulated) · wall time {:.1}s\n",
        result.status.as_str(),
        result.passes,
        result.dispatches,
        all_tokens,
        cost,
        result.wall_ms as f64 / 1000.0
    ));
    Ok(out)
}
