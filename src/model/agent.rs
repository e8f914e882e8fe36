//! What `[agent]` says of each step: the command it runs (`{{model}}` in it), and the
//! `[agent.steps.<step>]` overrides merged into the effective manifest.

use super::config::{AgentConfig, AgentKind};
use super::manifest::{MAX_TIMEOUT_S, Manifest, Run, argv_problems};

/// What Claude Code may do without asking where splice's sandbox is not enforced
/// (`--permission-mode acceptEdits` and these): edit files and run `git` and `splice`.
const CLAUDE_ALLOWED: &str =
    "Read,Edit,Write,NotebookEdit,Glob,Grep,TodoWrite,Bash(git:*),Bash(splice:*)";

impl AgentKind {
    /// Its name in config (`claude`, `codex`, `gemini`).
    pub fn name(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
        }
    }

    /// The kind whose CLI `program` (a name or a path) runs, by its file name.
    pub fn of_program(program: &str) -> Option<AgentKind> {
        let name = program.rsplit('/').next().unwrap_or(program);
        [AgentKind::Claude, AgentKind::Codex, AgentKind::Gemini]
            .into_iter()
            .find(|k| k.name() == name)
    }

    /// The command splice runs the CLI with when `[agent] command` is unset: headless, its
    /// events on stdout for the usage adapter and the log pane, and allowed to edit files,
    /// run the project's commands, commit and call `splice` without asking — nobody is there
    /// to answer. `sandboxed`: the dispatch runs in splice's kernel sandbox, which then holds
    /// the boundary, so the CLI's own checks are off (Claude Code `bypassPermissions`; Codex
    /// without its own sandbox, which cannot nest inside splice's and keeps the git directory
    /// read-only, and with no login shell, whose profile would reset `PATH`; Gemini `--yolo`).
    /// Unsandboxed, Claude Code gets `acceptEdits` and an explicit list of tools
    /// ([`CLAUDE_ALLOWED`]); Codex and Gemini have no such default (`check_for_run`).
    pub fn default_command(self, sandboxed: bool) -> Vec<String> {
        let words: &[&str] = match (self, sandboxed) {
            (AgentKind::Claude, true) => &[
                "claude",
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "bypassPermissions",
            ],
            // `--allowedTools` takes every argument after it: the prompt goes after `-p`.
            (AgentKind::Claude, false) => &[
                "claude",
                "-p",
                "{{prompt}}",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "acceptEdits",
                "--allowedTools",
                CLAUDE_ALLOWED,
            ],
            // Without a bound on its reconnects, Codex with no way to its API never exits.
            (AgentKind::Codex, _) => &[
                "codex",
                "exec",
                "--json",
                "--dangerously-bypass-approvals-and-sandbox",
                "-c",
                "allow_login_shell=false",
                "--disable",
                "unbounded_connection_retries",
            ],
            (AgentKind::Gemini, _) => &["gemini", "--output-format", "json", "--yolo"],
        };
        words.iter().map(|w| w.to_string()).collect()
    }

    /// The flags of [`AgentKind::default_command`] an installed CLI's `--help` must list
    /// (`driver::commands` checks them before a run claims anything).
    pub fn flags(self, sandboxed: bool) -> Vec<&'static str> {
        match (self, sandboxed) {
            (AgentKind::Claude, true) => vec![
                "--output-format",
                "--verbose",
                "--permission-mode",
                "bypassPermissions",
            ],
            (AgentKind::Claude, false) => vec![
                "--output-format",
                "--verbose",
                "--permission-mode",
                "acceptEdits",
                "--allowedTools",
            ],
            (AgentKind::Codex, _) => vec![
                "--json",
                "--dangerously-bypass-approvals-and-sandbox",
                "--disable",
            ],
            (AgentKind::Gemini, _) => vec!["--output-format", "--yolo", "--prompt"],
        }
    }

    /// The variables the built-in command needs: Claude Code refuses `bypassPermissions` as
    /// root unless told it runs in a sandbox; and it is kept from traffic an unattended session
    /// has no use for (telemetry, update checks), whose retries would also look like progress
    /// to stall detection while its API hangs.
    pub fn env(self, sandboxed: bool) -> Vec<(String, String)> {
        let quiet = (
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".to_string(),
            "1".to_string(),
        );
        match (self, sandboxed) {
            (AgentKind::Claude, true) => vec![("IS_SANDBOX".into(), "1".into()), quiet],
            (AgentKind::Claude, false) => vec![quiet],
            _ => Vec::new(),
        }
    }
}

impl AgentConfig {
    /// The kind of agent the prompt steps run: `[agent] kind`, else the one `[agent] command`'s
    /// program names, else Claude Code when no command is set (`None`: a command splice does
    /// not know).
    pub fn kind(&self) -> Option<AgentKind> {
        match (&self.kind, &self.command) {
            (Some(kind), _) => Some(*kind),
            (None, Some(argv)) => argv.first().and_then(|p| AgentKind::of_program(p)),
            (None, None) => Some(AgentKind::Claude),
        }
    }

    /// Does `step` run the kind's built-in command (no command of its own, none in `[agent]`)?
    pub fn builtin_for(&self, step: &str) -> bool {
        self.command.is_none() && self.steps.get(step).is_none_or(|s| s.command.is_none())
    }

    /// The argv template for `step`: its override, else the agent command, else the kind's
    /// built-in command for a run `sandboxed` or not (with `--model {{model}}` when the step
    /// has a model; Gemini's prompt after `-p`, last).
    pub fn command_for(&self, step: &str, sandboxed: bool) -> Vec<String> {
        self.steps
            .get(step)
            .and_then(|s| s.command.clone())
            .or_else(|| self.command.clone())
            .unwrap_or_else(|| {
                let kind = self.kind().unwrap_or(AgentKind::Claude);
                let mut argv = kind.default_command(sandboxed);
                if self.model_for(step).is_some() {
                    // Before a variadic `--allowedTools`, if there is one.
                    let at = argv
                        .iter()
                        .position(|a| a == "--allowedTools")
                        .unwrap_or(argv.len());
                    argv.splice(at..at, ["--model".to_string(), "{{model}}".to_string()]);
                }
                if kind == AgentKind::Gemini {
                    argv.extend(["-p".to_string(), "{{prompt}}".to_string()]);
                }
                argv
            })
    }

    /// Can this config's agent run in a run `sandboxed` or not? Codex's and Gemini's built-in
    /// commands turn their own checks off, which splice allows only inside its sandbox.
    pub fn check_for_run(&self, sandboxed: bool) -> Result<(), String> {
        let builtin = self.command.is_none();
        match self.kind() {
            Some(kind @ (AgentKind::Codex | AgentKind::Gemini)) if builtin && !sandboxed => {
                Err(format!(
                    "[agent] kind = \"{}\": its built-in command turns the CLI's own approvals \
                     off, which splice does only inside its kernel sandbox, and this run is \
                     unsandboxed; enable the sandbox, or set [agent] command to the options \
                     you want (docs/agents.md)",
                    kind.name()
                ))
            }
            _ => Ok(()),
        }
    }

    /// `kind` and `command` agree: a command whose program is another known CLI is refused.
    pub(super) fn kind_problems(&self) -> Result<(), String> {
        let (Some(kind), Some(argv)) = (self.kind, &self.command) else {
            return Ok(());
        };
        let named = argv.first().and_then(|p| AgentKind::of_program(p));
        match named {
            Some(other) if other != kind => Err(format!(
                "[agent] kind = \"{}\", but [agent] command runs {}; make them agree, or \
                 drop one",
                kind.name(),
                other.name()
            )),
            _ => Ok(()),
        }
    }

    /// The model of `step`, for `{{model}}`: its own, else `[agent] model`.
    pub fn model_for(&self, step: &str) -> Option<&str> {
        self.steps
            .get(step)
            .and_then(|s| s.model.as_deref())
            .or(self.model.as_deref())
    }

    /// `{{model}}` is named where a model is set, and a model is set where it is named: each
    /// problem with its key.
    pub(super) fn model_problems(&self) -> Result<(), String> {
        let own = |c: &Option<Vec<String>>| c.as_ref().map(|argv| names_model(argv));
        if own(&self.command) == Some(true) && self.model.is_none() {
            return Err(
                "[agent] command names {{model}}, but no [agent] model is set for the \
                 steps without their own `[agent.steps.<step>] model`"
                    .into(),
            );
        }
        for (step, agent) in &self.steps {
            let key = format!("[agent.steps.{step}]");
            match own(&agent.command).or(own(&self.command)) {
                Some(true) if self.model_for(step).is_none() => {
                    return Err(format!(
                        "{key} command names {{{{model}}}}, but no model is set: add `model` to \
                         {key}, or [agent] model"
                    ));
                }
                Some(false) if agent.model.is_some() => {
                    return Err(format!(
                        "{key} model: the command step {step} runs does not name {{{{model}}}}, \
                         so the model would do nothing; add {{{{model}}}} to its command"
                    ));
                }
                _ => {}
            }
        }
        if own(&self.command) == Some(false)
            && self.model.is_some()
            && !self.steps.values().any(|s| own(&s.command) == Some(true))
        {
            return Err(
                "[agent] model: no command names {{model}}, so the model would do \
                 nothing; add {{model}} to [agent] command"
                    .into(),
            );
        }
        Ok(())
    }
}

impl AgentConfig {
    /// Merge the `[agent.steps.<step>]` overrides into `manifest` (the effective manifest): a
    /// step's `timeout_s` and `max_attempts`, and an argv step's `command` (a prompt step's is
    /// the agent's argv, read by [`AgentConfig::command_for`]). Each problem is named by its
    /// key: a step the manifest does not declare, a value out of range, a command for a step
    /// that runs none, an argv naming a variable an argv step cannot.
    pub fn apply_to(&self, manifest: &mut Manifest) -> Result<(), String> {
        let known: Vec<String> = manifest.steps.iter().map(|s| s.name.clone()).collect();
        for (name, over) in &self.steps {
            let key = format!("[agent.steps.{name}]");
            let Some(step) = manifest.steps.iter_mut().find(|s| &s.name == name) else {
                return Err(format!(
                    "{key}: the manifest declares no step `{name}` (its steps: {})",
                    known.join(", ")
                ));
            };
            if let Some(t) = over.timeout_s {
                if t == 0 || t > MAX_TIMEOUT_S {
                    return Err(format!(
                        "{key} timeout_s: {t} is outside 1..={MAX_TIMEOUT_S} seconds"
                    ));
                }
                step.timeout_s = t;
            }
            if let Some(n) = over.max_attempts {
                if n == 0 {
                    return Err(format!("{key} max_attempts: must be at least 1"));
                }
                step.max_attempts = n;
            }
            let Some(command) = &over.command else {
                continue;
            };
            match &mut step.run {
                None => {
                    return Err(format!(
                        "{key} command: step {name} runs no command (a person does it and proposes)"
                    ));
                }
                Some(Run::Prompt { .. }) => {}
                Some(Run::Argv { argv }) => {
                    let problems = argv_problems(&format!("{key} command"), command);
                    if !problems.is_empty() {
                        return Err(problems.join("; "));
                    }
                    argv.clone_from(command);
                }
            }
        }
        self.argv_model_problems(manifest)
    }

    /// An argv step names `{{model}}` only with a model set, and a step's model is named by
    /// its argv.
    fn argv_model_problems(&self, manifest: &Manifest) -> Result<(), String> {
        for step in &manifest.steps {
            let Some(Run::Argv { argv }) = &step.run else {
                continue;
            };
            let name = &step.name;
            let own = self.steps.get(name).and_then(|s| s.model.as_ref());
            if names_model(argv) && self.model_for(name).is_none() {
                return Err(format!(
                    "step {name}'s command names {{{{model}}}}, but no model is set: add `model` \
                     to [agent.steps.{name}], or [agent] model"
                ));
            }
            if !names_model(argv) && own.is_some() {
                return Err(format!(
                    "[agent.steps.{name}] model: step {name}'s command does not name \
                     {{{{model}}}}, so the model would do nothing"
                ));
            }
        }
        Ok(())
    }
}

/// Does an argv template name `{{model}}`?
fn names_model(argv: &[String]) -> bool {
    argv.iter().any(|a| {
        a.split("{{")
            .skip(1)
            .any(|rest| rest.split("}}").next().is_some_and(|n| n.trim() == "model"))
    })
}

/// `[agent.steps.<step>]`: how one step runs, over what the manifest says.
#[cfg(test)]
mod tests {
    use crate::model::Config;
    use crate::model::Manifest;
    use crate::model::config::{AgentKind, default_agent_command};

    #[test]
    fn a_model_goes_where_the_command_names_it() {
        let c = Config::parse("[agent.steps.review]\nmodel = \"opus\"\n").unwrap();
        let review = c.agent.command_for("review", true);
        assert_eq!(review[review.len() - 2..], ["--model", "{{model}}"]);
        assert_eq!(c.agent.model_for("review"), Some("opus"));
        assert_eq!(
            c.agent.command_for("implement", true),
            default_agent_command()
        );
        assert_eq!(c.agent.model_for("implement"), None);
        let c = Config::parse("[agent]\nmodel = \"m\"\ncommand = [\"a\", \"-m{{ model }}\"]\n");
        assert_eq!(c.unwrap().agent.model_for("x"), Some("m"));
        let e = |t: &str| Config::parse(t).unwrap_err();
        assert!(e("[agent]\ncommand = [\"a\"]\nmodel = \"m\"\n").starts_with("[agent] model"));
        let step = "[agent]\ncommand = [\"a\"]\n[agent.steps.s]\nmodel = \"m\"\n";
        assert!(e(step).starts_with("[agent.steps.s] model"));
        let step = "[agent.steps.s]\ncommand = [\"a\", \"{{model}}\"]\n";
        assert!(e(step).contains("no model is set"));
    }

    #[test]
    fn overrides_merge_into_the_manifest_and_an_argv_steps_model_is_checked() {
        let mut m = Manifest::parse(
            r#"{ "routes": { "root": ["p"], "compound": ["p"], "leaf": ["w"] },
                 "steps": [ { "name": "p", "role": "split", "floors": [] },
                            { "name": "w", "run": { "argv": ["t", "{{model}}"] } } ] }"#,
        )
        .unwrap();
        let c = Config::parse("[agent.steps.w]\nmodel = \"m\"\nmax_attempts = 7\n").unwrap();
        c.agent.apply_to(&mut m).unwrap();
        assert_eq!(m.step("w").unwrap().max_attempts, 7);
        let none = Config::default();
        assert!(
            none.agent
                .apply_to(&mut m)
                .unwrap_err()
                .contains("no model is set")
        );
        // A model for an argv step whose argv does not name it would do nothing.
        let c = Config::parse("[agent.steps.w]\nmodel = \"m\"\n").unwrap();
        let mut plain = m.clone();
        plain.steps[1].run = Some(crate::model::manifest::Run::Argv {
            argv: vec!["t".into()],
        });
        let e = c.agent.apply_to(&mut plain).unwrap_err();
        assert!(e.starts_with("[agent.steps.w] model"), "{e}");
    }

    #[test]
    fn a_kind_names_its_built_in_command_and_a_command_names_its_kind() {
        let c = |t: &str| Config::parse(t).unwrap().agent;
        let codex = c("[agent]\nkind = \"codex\"\n");
        let argv = codex.command_for("implement", true);
        assert_eq!(argv[..3], ["codex", "exec", "--json"]);
        assert!(argv.contains(&"allow_login_shell=false".to_string()));
        assert!(argv.contains(&"--dangerously-bypass-approvals-and-sandbox".to_string()));
        assert_eq!(codex.kind(), Some(AgentKind::Codex));
        // Claude Code: its checks off in the sandbox (and `IS_SANDBOX` for root), else edits
        // and an explicit list of tools, the prompt before that variadic flag.
        let claude = c("[agent]\nmodel = \"m\"\n");
        let inside = claude.command_for("implement", true);
        assert!(inside.ends_with(&["--model".to_string(), "{{model}}".to_string()]));
        assert!(inside.contains(&"bypassPermissions".to_string()));
        assert_eq!(
            AgentKind::Claude.env(true)[0],
            ("IS_SANDBOX".into(), "1".into())
        );
        let outside = claude.command_for("implement", false);
        assert_eq!(outside[..3], ["claude", "-p", "{{prompt}}"]);
        let tools = outside.iter().position(|a| a == "--allowedTools").unwrap();
        assert_eq!(outside[tools - 1], "{{model}}");
        assert!(outside.contains(&"acceptEdits".to_string()));
        let gemini = c("[agent]\nkind = \"gemini\"\n").command_for("x", true);
        assert_eq!(gemini[gemini.len() - 2..], ["-p", "{{prompt}}"]);
        // Detected from the program's file name; a command splice does not know has no kind.
        assert_eq!(
            c("[agent]\ncommand = [\"/opt/bin/codex\", \"exec\"]\n").kind(),
            Some(AgentKind::Codex)
        );
        assert_eq!(c("[agent]\ncommand = [\"my-agent\"]\n").kind(), None);
        assert_eq!(c("").kind(), Some(AgentKind::Claude));
        let e = Config::parse("[agent]\nkind = \"codex\"\ncommand = [\"claude\", \"-p\"]\n");
        assert!(
            e.unwrap_err()
                .contains("kind = \"codex\", but [agent] command runs claude")
        );
        assert!(Config::parse("[agent]\nkind = \"cursor\"\n").is_err());
    }

    #[test]
    fn codex_and_gemini_built_ins_run_only_in_the_sandbox() {
        let c = |t: &str| Config::parse(t).unwrap().agent;
        for kind in ["codex", "gemini"] {
            let agent = c(&format!("[agent]\nkind = \"{kind}\"\n"));
            assert!(agent.check_for_run(true).is_ok());
            let e = agent.check_for_run(false).unwrap_err();
            assert!(e.contains("unsandboxed"), "{e}");
        }
        assert!(c("").check_for_run(false).is_ok());
        let own = c("[agent]\nkind = \"codex\"\ncommand = [\"codex\", \"exec\"]\n");
        assert!(
            own.check_for_run(false).is_ok(),
            "the person chose the options"
        );
    }
}
