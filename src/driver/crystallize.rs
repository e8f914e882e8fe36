//! `splice plan crystallize`: seed 000's design phase without a chat UI. The design agent
//! (`[plan] designer`, else `[agent] command`, else Claude Code headless) runs in a scratch
//! directory with the crystallize prompt (`manifest/prompts/crystallize.md`, the notes inlined)
//! as its last argument and `SPLICE_PLAN_FILE` naming where to write the plan. The plan is
//! validated by the same validator as `exec --plan` ([`Plan::parse`]); only a valid plan is
//! copied to the output file. Then the optional critic (`[plan] critic`, the plan's path as its
//! last argument) is run ([`critique`], also `splice plan critique`): its typed findings
//! (`model::critique`) are recorded under the plan's sha256 (`.splice/runs/critiques/`), where
//! `plan approve` reads them ([`recorded`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::critique::{self, Critique};
use crate::model::plan::Plan;
use crate::model::printable::printable;
use crate::process::{self, Cmd};
use crate::store::Store;

const PROMPT: &str = include_str!("../../manifest/prompts/crystallize.md");
/// The design agent and the critic each get this long.
const TIMEOUT: Duration = Duration::from_secs(1800);
const CAP: usize = 256 * 1024;

/// How a crystallize ended.
#[derive(Serialize, Clone, Debug)]
pub struct Crystallized {
    /// The plan file written.
    pub plan: String,
    pub sha256: String,
    pub title: String,
    pub tasks: usize,
    pub scenarios: usize,
    pub critic: Option<Critique>,
}

/// Run the designer on `notes`, validate its plan, write it to `out`, run the critic.
pub fn crystallize(store: &Store, notes: &Path, out: &Path) -> Result<Crystallized> {
    let config = store.config()?;
    let text = crate::safe_read::read_text(notes, crate::safe_read::INPUT)?;
    let scratch = scratch_dir()?;
    let plan_file = scratch.join("plan.json");
    let prompt = PROMPT
        .replace("{{plan_file}}", &plan_file.display().to_string())
        .replace("{{notes_file}}", &notes.display().to_string())
        .replace("{{notes}}", &text);
    let notes_path = notes.canonicalize().unwrap_or(notes.into());
    let (program, ran) = run_agent(
        store,
        &config,
        config.plan.designer.as_deref(),
        prompt,
        &scratch,
        std::slice::from_ref(&notes_path),
        vec![
            ("SPLICE_PLAN_FILE".into(), plan_file.clone().into()),
            ("SPLICE_NOTES".into(), notes_path.clone().into()),
        ],
    )?;
    let result = written_plan(&program, &ran, &plan_file);
    let outcome = result.and_then(|bytes| publish(&bytes, out));
    let _ = std::fs::remove_dir_all(&scratch);
    let mut done = outcome?;
    if config.plan.critic.is_some() {
        done.critic = Some(critique(store, out)?);
    }
    Ok(done)
}

/// Run a design agent — `argv`, else `[agent] command`, else the kind's built-in command (as a
/// dispatch gets it, in the sandbox when it is enforced) — with `prompt` where the built-in
/// names it, else last, in `scratch`, confined where the kernel can (`read` readable, `scratch`
/// writable), with `env`. Returns its program's name and what it printed.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_agent(
    store: &Store,
    config: &crate::model::Config,
    argv: Option<&[String]>,
    prompt: String,
    scratch: &Path,
    read: &[PathBuf],
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
) -> Result<(String, process::Captured)> {
    let sandboxed = crate::sandbox::choose(config.sandbox.enabled(), config.sandbox.required())
        .is_ok_and(|why| why.is_none());
    let builtin = argv.is_none() && config.agent.command.is_none();
    if builtin {
        // Codex's and Gemini's built-ins turn their approvals off: only inside the sandbox.
        config
            .agent
            .check_for_run(sandboxed)
            .map_err(Error::Invalid)?;
    }
    let mut argv = argv
        .map(<[String]>::to_vec)
        .or_else(|| config.agent.command.clone())
        .unwrap_or_else(|| config.agent.command_for("", sandboxed));
    match argv.iter().position(|a| a == "{{prompt}}") {
        Some(at) if builtin => argv[at] = prompt,
        _ => argv.push(prompt),
    }
    let confined = confine(store, config, scratch, read, &argv)?;
    let mut cmd = Cmd::new(&argv, scratch);
    cmd.env = env;
    if builtin && let Some(kind) = config.agent.kind() {
        let sandboxed = confined.is_some();
        cmd.env.extend(
            kind.env(sandboxed)
                .into_iter()
                .map(|(k, v)| (k.into(), v.into())),
        );
    }
    if let Some((sandbox, env)) = &confined {
        cmd.sandbox = Some(sandbox);
        cmd.env
            .extend(env.iter().cloned().map(|(k, v)| (k.into(), v)));
    }
    cmd.timeout = Some(TIMEOUT);
    Ok((argv[0].clone(), process::capture(&cmd, CAP)))
}

pub(crate) fn scratch_dir() -> Result<PathBuf> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir =
        std::env::temp_dir().join(format!("splice-crystallize-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    Ok(dir)
}

/// The sandbox for the design agent or the critic (`exec::sandbox::for_agent`): `None` where
/// commands run unconfined.
pub(crate) type Confined = (crate::sandbox::Sandbox, Vec<(String, std::ffi::OsString)>);

pub(crate) fn confine(
    store: &Store,
    config: &crate::model::Config,
    scratch: &Path,
    read: &[PathBuf],
    argv: &[String],
) -> Result<Option<Confined>> {
    let (enabled, required) = (config.sandbox.enabled(), config.sandbox.required());
    if crate::sandbox::choose(enabled, required)
        .map_err(Error::Invalid)?
        .is_some()
    {
        return Ok(None);
    }
    let (policy, env) = crate::exec::sandbox::for_agent(
        store.repo(),
        store.dir(),
        scratch,
        read,
        argv,
        &config.sandbox,
    )?;
    let sandbox = crate::sandbox::Sandbox::prepare(&policy)
        .map_err(|why| Error::Invalid(format!("the agent's sandbox cannot be built: {why}")))?;
    Ok(Some((sandbox, env)))
}

/// The plan the designer wrote, or why there is none.
fn written_plan(program: &str, ran: &process::Captured, plan_file: &Path) -> Result<Vec<u8>> {
    if ran.code() != Some(0) {
        return Err(Error::Invalid(format!(
            "the design agent `{program}` ended {:?}: {}",
            ran.ran.exit,
            ran.combined().trim()
        )));
    }
    crate::safe_read::read(plan_file, crate::safe_read::INPUT).map_err(|_| {
        Error::Invalid(format!(
            "the design agent `{program}` wrote no plan to $SPLICE_PLAN_FILE"
        ))
    })
}

/// Validate the designer's plan and write it to `out` (only when valid).
fn publish(bytes: &[u8], out: &Path) -> Result<Crystallized> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| Error::bad_file("the designer's plan", "a plan is UTF-8 JSON"))?;
    let plan = Plan::parse(text).map_err(|msg| {
        Error::bad_file(
            "the designer's plan",
            format!("{msg} (not written to {})", out.display()),
        )
    })?;
    std::fs::write(out, bytes).map_err(|e| Error::io(out, e))?;
    let sha256 = crate::authority::credential::sha256_hex_of(bytes);
    Ok(Crystallized {
        plan: out.display().to_string(),
        sha256,
        title: plan.title.clone(),
        tasks: plan.tasks.len(),
        scenarios: plan.scenarios.len(),
        critic: None,
    })
}

/// Run `[plan] critic` on the plan file at `plan` and record its verdict under the plan's
/// sha256 (`.splice/runs/critiques/<sha256>.json`, replaced atomically: the one owner of those
/// files). The verdict binds the bytes the critic was given, read once before it runs.
pub fn critique(store: &Store, plan: &Path) -> Result<Critique> {
    let config = store.config()?;
    let Some(critic) = &config.plan.critic else {
        return Err(Error::Invalid(
            "no critic is configured ([plan] critic in config.toml)".into(),
        ));
    };
    let (_, sha256) = crate::transition::plan::read_file(plan)?;
    let here = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    // The critic reads a plan an agent wrote: it runs sandboxed, in a scratch directory of its
    // own (the plan readable, named by its absolute path), never writing the person's
    // directory.
    let plan_path = plan.canonicalize().unwrap_or(plan.into());
    let mut argv = critic.to_vec();
    argv.push(plan_path.display().to_string());
    let scratch = scratch_dir()?;
    let confined = confine(store, &config, &scratch, &[plan_path], &argv);
    let confined = match confined {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&scratch);
            return Err(e);
        }
    };
    let dir = if confined.is_some() { &scratch } else { &here };
    let mut cmd = Cmd::new(&argv, dir);
    if let Some((sandbox, env)) = &confined {
        cmd.sandbox = Some(sandbox);
        cmd.env
            .extend(env.iter().cloned().map(|(k, v)| (k.into(), v)));
    }
    cmd.timeout = Some(TIMEOUT);
    let ran = process::capture(&cmd, CAP);
    let _ = std::fs::remove_dir_all(&scratch);
    if matches!(ran.ran.exit, process::Exit::NotStarted(_)) {
        return Err(Error::Invalid(format!(
            "[plan] critic `{}` could not start: {:?}",
            argv[0], ran.ran.exit
        )));
    }
    let (findings, cross_cutting_concerns, overall_assessment) =
        critique::read(&ran.stdout, ran.code());
    let judged = Critique {
        schema_version: critique::SCHEMA_VERSION,
        plan: plan.display().to_string(),
        sha256,
        at: crate::clock::now_string()?,
        exit_code: ran.code(),
        findings,
        cross_cutting_concerns,
        overall_assessment,
    };
    let file = critique_file(store, &judged.sha256);
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    let bytes = serde_json::to_vec_pretty(&judged).expect("a critique serializes");
    crate::store::atomic::replace_file(&file, &bytes)?;
    Ok(judged)
}

/// The critic's standing on the plan with this sha256, for its approval.
pub fn standing(store: &Store, sha256: &str) -> Result<crate::transition::plan::Critic> {
    use crate::transition::plan::Critic;
    if store.config()?.plan.critic.is_none() {
        return Ok(Critic::Unset);
    }
    Ok(match recorded(store, sha256)? {
        Some(c) => Critic::Judged(Box::new(c)),
        None => Critic::Unjudged,
    })
}

/// Where the verdict on the plan with this sha256 is kept.
fn critique_file(store: &Store, sha256: &str) -> std::path::PathBuf {
    store
        .runs_dir()
        .join("critiques")
        .join(format!("{sha256}.json"))
}

/// The critic's recorded verdict on the plan whose bytes have this sha256, if it judged that
/// form. A record that cannot be read, or that names another sha256, is a fault naming the file.
pub fn recorded(store: &Store, sha256: &str) -> Result<Option<Critique>> {
    let file = critique_file(store, sha256);
    if !file.exists() {
        return Ok(None);
    }
    let bytes = crate::safe_read::read(&file, crate::safe_read::INPUT)?;
    let judged: Critique = serde_json::from_slice(&bytes)
        .map_err(|e| Error::bad_file(&file, format!("not a critic's verdict: {e}")))?;
    if judged.sha256 != sha256 || judged.schema_version != critique::SCHEMA_VERSION {
        return Err(Error::bad_file(
            &file,
            format!("a verdict on another plan (sha256 {})", judged.sha256),
        ));
    }
    Ok(Some(judged))
}

/// The report for a person; the plan's title and what the critic said escaped (the designer and
/// the critic are agents).
pub fn human(r: &Crystallized) -> String {
    let mut out = format!(
        "plan {} written: \"{}\", {} tasks, {} scenarios (sha256 {})\n",
        r.plan,
        printable(&r.title),
        r.tasks,
        r.scenarios,
        r.sha256
    );
    match &r.critic {
        None => out.push_str("no critic ([plan] critic is unset)\n"),
        Some(c) => out.push_str(&findings_text(c)),
    }
    out.push_str(&format!("run it with: splice plan approve {}\n", r.plan));
    out
}

/// The critic's verdict in words: must fix or not, then each finding (its text escaped: the
/// critic is an agent).
pub fn findings_text(c: &Critique) -> String {
    let fix = c.must_fix().count();
    let mut out = match fix {
        0 => format!(
            "critic: passed, {} finding(s), none must be fixed\n",
            c.findings.len()
        ),
        n => format!(
            "critic: {n} must-fix finding(s) of {}: `splice plan approve` refuses the plan until \
             it is fixed and judged again, or overridden (--override-critic REASON)\n",
            c.findings.len()
        ),
    };
    for f in &c.findings {
        out.push_str(&format!(
            "  - {}{} {}: {}\n",
            if f.must_fix { "MUST FIX " } else { "" },
            f.severity.name(),
            printable(&f.category),
            printable(&f.issue)
        ));
        if let Some(m) = &f.suggested_mitigation {
            out.push_str(&format!("      mitigation: {}\n", printable(m)));
        }
    }
    if !c.overall_assessment.trim().is_empty() {
        out.push_str(&format!(
            "  overall: {}\n",
            printable(&c.overall_assessment)
        ));
    }
    out
}
