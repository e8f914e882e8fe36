//! The `agent` check: the agent `[agent] command` names is found as a dispatch would start it
//! (the runner's own look-up, [`crate::driver::commands`]) and, when it is a CLI splice knows
//! (`[agent] kind`: claude, codex, gemini), answers `--version` — a program splice does not know
//! is never run by `doctor`; every other command a step may start (a step's own agent, an argv
//! step) is found too; and with PR delivery, what delivering by a PR needs (a remote; `gh`, or
//! `[delivery] pr_command` and `forge_command`) is there.

use std::path::Path;
use std::time::Duration;

use super::{Ctx, Finding};
use crate::driver::commands::{self, StepCommand};
use crate::exec::dispatch::{Found, find_program};
use crate::model::config::AgentKind;
use crate::process::{self, Cmd, Exit};

pub const AGENT: &str = "agent";

/// How long the agent may take to print its version.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// The agent command and every other command the manifest's steps may start.
pub fn agent(cx: &Ctx) -> Vec<Finding> {
    let config = match &cx.config {
        Ok(c) => c,
        Err(_) => return vec![Finding::not_checked(AGENT, "config.toml does not load")],
    };
    let agent = commands::agent(config);
    let mut out = vec![match find_program(agent.program()) {
        Found::Missing(why) => Finding::needs_person(
            AGENT,
            format!(
                "the agent command `{}` {why} (set by {}): no prompt step can be dispatched",
                agent.program(),
                agent.set_at()
            ),
            install_or_set(&agent),
        ),
        Found::Unknown => Finding::warn(
            AGENT,
            format!(
                "the agent command `{}` cannot be looked up before a dispatch (a relative path \
                 starts from the node's worktree; a template is rendered then)",
                agent.program()
            ),
            None,
        ),
        Found::At(path) if AgentKind::of_program(agent.program()).is_some() => {
            version(&agent, &path, cx.store.repo())
        }
        Found::At(path) => Finding::ok(
            AGENT,
            format!(
                "`{}` is {} (not run: doctor runs `--version` only for the agent CLIs splice \
                 knows)",
                agent.program(),
                path.display()
            ),
        ),
    }];
    out.extend(pull_requests(cx, config));
    if let Ok(manifest) = &cx.manifest {
        out.extend(others(
            &agent,
            commands::missing(config, manifest),
            manifest,
        ));
    }
    out
}

/// With PR delivery (`[delivery] method = "pr"`, the default): a git remote to push to, a way to
/// open the pull request (`[delivery] pr_command`, or `gh` on `PATH`) and one to ask about its
/// merge (`[delivery] forge_command`, or `gh`); a warning naming what is missing.
fn pull_requests(cx: &Ctx, config: &crate::model::Config) -> Vec<Finding> {
    use crate::model::bead::DeliveryMethod;
    if config.delivery.method.unwrap_or(DeliveryMethod::Pr) != DeliveryMethod::Pr {
        return Vec::new();
    }
    let mut missing = Vec::new();
    let path = std::env::var_os("PATH");
    let gh = crate::floors::github::find_gh(path.as_deref()).is_some();
    if config.delivery.pr_command.is_none() && !gh {
        missing.push("`gh` is not on PATH and no [delivery] pr_command is set to open one");
    }
    if config.delivery.forge_command.is_none() && !gh {
        missing.push(
            "`gh` is not on PATH and no [delivery] forge_command is set to ask about its merge",
        );
    }
    let remotes = git2::Repository::open(cx.store.repo())
        .and_then(|r| r.remotes().map(|n| n.len()))
        .unwrap_or(0);
    if remotes == 0 {
        missing.push("the repository has no git remote to push a branch to");
    }
    if missing.is_empty() {
        return vec![Finding::ok(
            AGENT,
            "PR delivery: a git remote, and commands to open a pull request and ask about its merge, are there",
        )];
    }
    vec![Finding::warn(
        AGENT,
        format!(
            "PR delivery (the default method) cannot deliver by pull request: {}",
            missing.join("; ")
        ),
        Some("install and log in to `gh`, set [delivery] pr_command and forge_command, or set [delivery] method = \"direct\"".into()),
    )]
}

/// What fixes a command that cannot be found.
fn install_or_set(command: &StepCommand) -> String {
    format!(
        "install `{}` on PATH, or change {}; docs/agents.md shows a working config.toml for each agent",
        command.program(),
        command.set_at()
    )
}

/// Run `<path> --version` in `dir` within [`VERSION_TIMEOUT`] and report its first line.
fn version(agent: &StepCommand, path: &Path, dir: &Path) -> Finding {
    let argv = vec![path.display().to_string(), "--version".to_string()];
    let mut cmd = Cmd::new(&argv, dir);
    cmd.timeout = Some(VERSION_TIMEOUT);
    let ran = process::capture(&cmd, 4096);
    let first = |text: &str| {
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string()
    };
    let line = match first(&ran.stdout) {
        l if l.is_empty() => first(&ran.stderr),
        l => l,
    };
    let program = agent.program();
    let at = path.display();
    match &ran.ran.exit {
        Exit::Code(0) => Finding::ok(AGENT, format!("`{program}` is {at}: {line}")),
        Exit::TimedOut => Finding::warn(
            AGENT,
            format!(
                "`{program}` is {at}, and `--version` did not answer within {}s",
                VERSION_TIMEOUT.as_secs()
            ),
            None,
        ),
        Exit::Code(code) => Finding::warn(
            AGENT,
            format!("`{program}` is {at}, and `--version` exited {code}: {line}"),
            None,
        ),
        other => Finding::warn(
            AGENT,
            format!("`{program}` is {at}, and `--version` did not run: {other:?}"),
            None,
        ),
    }
}

/// The steps' commands that cannot be found, other than the agent reported already, one
/// finding per program and place that sets it: needs a person when a required step runs it,
/// a warning when only `optional: true` steps do (a run skips them).
fn others(
    agent: &StepCommand,
    missing: Vec<(StepCommand, String)>,
    manifest: &crate::model::Manifest,
) -> Vec<Finding> {
    let mut groups: Vec<(StepCommand, String, Vec<String>, bool)> = Vec::new();
    for (command, why) in missing {
        if command.program() == agent.program() && command.set_at() == agent.set_at() {
            continue;
        }
        let required = !manifest.step(&command.step).is_some_and(|s| s.optional);
        let same = |g: &&mut (StepCommand, String, Vec<String>, bool)| {
            g.0.program() == command.program() && g.0.set_at() == command.set_at()
        };
        match groups.iter_mut().find(same) {
            Some(g) => {
                g.2.push(command.step.clone());
                g.3 |= required;
            }
            None => groups.push((command.clone(), why, vec![command.step.clone()], required)),
        }
    }
    groups
        .into_iter()
        .map(|(command, why, steps, required)| {
            let message = format!(
                "step(s) {} would run `{}`, which {why} (set by {})",
                steps.join(", "),
                command.program(),
                command.set_at()
            );
            match required {
                true => Finding::needs_person(AGENT, message, install_or_set(&command)),
                false => Finding::warn(
                    AGENT,
                    format!("{message}; the steps are optional: a run skips them"),
                    Some(install_or_set(&command)),
                ),
            }
        })
        .collect()
}
