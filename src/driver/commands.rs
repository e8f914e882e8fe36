//! The commands a run may start, and where each is set. Before a run claims anything, every
//! one is looked up ([`check_all`]): a missing one is a fault naming the command and the key
//! (or manifest path) that sets it, unless its step is `optional: true` — then the step is
//! unavailable to the run, which skips it as not applicable (`decide`'s rule 25). A dispatch that could not start after all names them too
//! ([`hint`]), in the park reason.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::exec::dispatch::{Found, find_program};
use crate::model::manifest::Run;
use crate::model::{Config, Manifest};

const CONFIG: &str = ".splice/config.toml";
const MANIFEST: &str = ".splice/manifest.json";

/// The command one step runs, and where it is set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepCommand {
    pub step: String,
    /// The argv template (`{{…}}` not rendered).
    pub argv: Vec<String>,
    /// The config key or manifest path that sets it, e.g. `` `[agent] command` ``.
    pub key: String,
    /// The file that holds it.
    pub file: &'static str,
    /// It is the default agent, Claude Code (no `[agent] command` is set).
    pub default_agent: bool,
}

impl StepCommand {
    /// `argv[0]`.
    pub fn program(&self) -> &str {
        self.argv.first().map_or("", String::as_str)
    }

    /// Where to change it: `` `[agent] command` in .splice/config.toml ``.
    pub fn set_at(&self) -> String {
        let unset = match self.default_agent {
            true => " (unset: `[agent] kind`'s built-in command, Claude Code's by default)",
            false => "",
        };
        match self.file {
            MANIFEST => format!("{} {}", self.file, self.key),
            _ => format!("{} in {}{unset}", self.key, self.file),
        }
    }
}

/// The command `step` runs, if it runs one: a prompt step the configured agent, an argv step
/// its argv (a `[agent.steps.<step>] command` has replaced it in the effective manifest).
pub fn of_step(config: &Config, manifest: &Manifest, step: &str) -> Option<StepCommand> {
    let (i, s) = manifest
        .steps
        .iter()
        .enumerate()
        .find(|(_, s)| s.name == step)?;
    let own = config
        .agent
        .steps
        .get(step)
        .is_some_and(|a| a.command.is_some());
    let own_key = || format!("`[agent.steps.{step}] command`");
    let (argv, key, file, default_agent) = match s.run.as_ref()? {
        // The program is the same sandboxed or not (`AgentKind::default_command`).
        Run::Prompt { .. } if own => (
            config.agent.command_for(step, true),
            own_key(),
            CONFIG,
            false,
        ),
        Run::Prompt { .. } => (
            config.agent.command_for(step, true),
            "`[agent] command`".to_string(),
            CONFIG,
            config.agent.command.is_none(),
        ),
        Run::Argv { argv } if own => (argv.clone(), own_key(), CONFIG, false),
        Run::Argv { argv } => (
            argv.clone(),
            format!("steps[{i}].run.argv"),
            MANIFEST,
            false,
        ),
    };
    Some(StepCommand {
        step: step.to_string(),
        argv,
        key,
        file,
        default_agent,
    })
}

/// The agent `[agent] command` names (unset: the default agent, Claude Code), as the prompt
/// steps without their own command run it.
pub fn agent(config: &Config) -> StepCommand {
    StepCommand {
        step: String::new(),
        argv: config
            .agent
            .command
            .clone()
            .unwrap_or_else(|| config.agent.command_for("", true)),
        key: "`[agent] command`".to_string(),
        file: CONFIG,
        default_agent: config.agent.command.is_none(),
    }
}

/// Look up every command the manifest's steps may start. The first that cannot be found for a
/// required step is a fault naming it, its step and where it is set; those of `optional: true`
/// steps are returned, by step, with why ([`unavailable`]): the run skips those steps.
pub fn check_all(config: &Config, manifest: &Manifest) -> Result<BTreeMap<String, String>> {
    judge(manifest, missing(config, manifest))
}

/// [`check_all`] for a Slurm run: the commands are looked up where the jobs run, in a first
/// job (`srun`), with the `PATH` a dispatch gets, not on the runner's host.
pub fn check_all_in_job(config: &Config, manifest: &Manifest) -> Result<BTreeMap<String, String>> {
    let commands: Vec<StepCommand> = manifest
        .steps
        .iter()
        .filter_map(|s| of_step(config, manifest, &s.name))
        .collect();
    let mut programs: Vec<String> = commands.iter().map(|c| c.program().to_string()).collect();
    programs.sort();
    programs.dedup();
    let found = crate::exec::slurm::programs_in_job(&config.executor.defaults(), &programs)?;
    let missing = commands
        .into_iter()
        .filter(|c| !found.contains(c.program()))
        .map(|c| {
            let why = "was not found by a Slurm job (looked up on a compute node, with the \
                       PATH a dispatch gets)"
                .to_string();
            (c, why)
        })
        .collect();
    judge(manifest, missing)
}

/// A required step's missing command is a fault; an optional step's is why the run skips it.
fn judge(
    manifest: &Manifest,
    missing: Vec<(StepCommand, String)>,
) -> Result<BTreeMap<String, String>> {
    let mut unavailable = BTreeMap::new();
    for (command, why) in missing {
        if manifest.step(&command.step).is_some_and(|s| s.optional) {
            unavailable.insert(command.step.clone(), not_applicable(&command, &why));
            continue;
        }
        return Err(Error::Invalid(format!(
            "step {} would run `{}`, which {why}: install it, or change {}; the run starts \
             nothing until every command it may run can be found (docs/agents.md)",
            command.step,
            command.program(),
            command.set_at()
        )));
    }
    Ok(unavailable)
}

/// The `optional: true` steps a run would skip, by step, with why (the snapshot's
/// `unavailable`, for `splice snapshot` and `pass --dry-run`): none when a required step's
/// command cannot be found either, since such a run starts nothing.
pub fn unavailable(config: &Config, manifest: &Manifest) -> BTreeMap<String, String> {
    check_all(config, manifest).unwrap_or_default()
}

/// The reason an optional step is skipped.
fn not_applicable(command: &StepCommand, why: &str) -> String {
    format!(
        "step {} would run `{}`, which {why} (set by {})",
        command.step,
        command.program(),
        command.set_at()
    )
}

/// Each step's command that cannot be found, in the manifest's order, with why; each program
/// (and where it is set) is looked up once.
pub fn missing(config: &Config, manifest: &Manifest) -> Vec<(StepCommand, String)> {
    let mut looked: BTreeMap<(String, String), Option<String>> = BTreeMap::new();
    let mut out = Vec::new();
    for step in &manifest.steps {
        let Some(command) = of_step(config, manifest, &step.name) else {
            continue;
        };
        let key = (command.program().to_string(), command.set_at());
        let why = looked
            .entry(key)
            .or_insert_with(|| match find_program(command.program()) {
                Found::Missing(why) => Some(why),
                _ => None,
            })
            .clone();
        if let Some(why) = why {
            out.push((command, why));
        }
    }
    out
}

/// What to check when `command` could not start, for the park reason.
pub fn hint(command: &StepCommand) -> String {
    let program = command.program();
    let look = if !program.contains('/') {
        "is it on PATH?"
    } else if program.starts_with('/') {
        "is it there, and executable?"
    } else {
        "a relative path starts from the node's worktree;"
    };
    format!("{look} set {}", command.set_at())
}

/// How long an agent CLI may take to print its `--help`.
const HELP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Where a prompt step runs the kind's built-in command (`[agent] kind`, no command set), the
/// installed CLI's `--help` (`codex exec --help` for Codex) must list every flag that command
/// passes: a version whose options differ is refused before anything is claimed, naming the
/// flags and the fix. Only a CLI splice knows is run; a missing one is [`check_all`]'s to say.
pub fn check_builtin_flags(config: &Config, manifest: &Manifest, sandboxed: bool) -> Result<()> {
    let Some(kind) = config.agent.kind() else {
        return Ok(());
    };
    let builtin = manifest
        .steps
        .iter()
        .any(|s| matches!(s.run, Some(Run::Prompt { .. })) && config.agent.builtin_for(&s.name));
    let program = kind.name();
    let Found::At(path) = find_program(program) else {
        return Ok(());
    };
    if !builtin {
        return Ok(());
    }
    let mut argv = vec![path.display().to_string()];
    if kind == crate::model::config::AgentKind::Codex {
        argv.push("exec".into());
    }
    argv.push("--help".into());
    let dir = std::env::temp_dir();
    let mut cmd = crate::process::Cmd::new(&argv, &dir);
    cmd.timeout = Some(HELP_TIMEOUT);
    let ran = crate::process::capture(&cmd, 1 << 20);
    let text = format!("{}{}", ran.stdout, ran.stderr);
    let missing: Vec<&str> = kind
        .flags(sandboxed)
        .into_iter()
        .filter(|f| !text.contains(f))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "`{}` ({}) does not list {} in its help: splice's built-in command for \
         [agent] kind = \"{program}\" passes them (checked against the versions docs/agents.md \
         names); update {program}, or set [agent] command to the options your version takes; \
         nothing was dispatched",
        argv[1..]
            .iter()
            .fold(program.to_string(), |a, w| format!("{a} {w}")),
        path.display(),
        missing.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_command_is_named_by_the_key_that_sets_it() {
        let manifest = Manifest::default_manifest();
        let config = Config::parse("[agent.steps.review]\ncommand = [\"rev\"]\n").unwrap();
        let spec = of_step(&config, &manifest, "generate-spec").unwrap();
        assert_eq!(spec.program(), "claude");
        assert_eq!(
            hint(&spec),
            "is it on PATH? set `[agent] command` in .splice/config.toml (unset: `[agent] kind`'s \
             built-in command, Claude Code's by default)"
        );
        let review = of_step(&config, &manifest, "review").unwrap();
        assert_eq!(review.argv, ["rev"]);
        assert_eq!(
            review.set_at(),
            "`[agent.steps.review] command` in .splice/config.toml"
        );
        assert_eq!(of_step(&config, &manifest, "delegate"), None, "no command");
    }
}
