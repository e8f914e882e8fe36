//! What `[agent]` says of each step: the command it runs (`{{model}}` in it), and the
//! `[agent.steps.<step>]` overrides merged into the effective manifest.

use super::config::{AgentConfig, default_agent_command};
use super::manifest::{MAX_TIMEOUT_S, Manifest, Run, argv_problems};

impl AgentConfig {
    /// The argv template for `step`: its override, else the agent command, else Claude Code
    /// (with `--model {{model}}` when the step has a model).
    pub fn command_for(&self, step: &str) -> Vec<String> {
        self.steps
            .get(step)
            .and_then(|s| s.command.clone())
            .or_else(|| self.command.clone())
            .unwrap_or_else(|| {
                let mut argv = default_agent_command();
                if self.model_for(step).is_some() {
                    argv.extend(["--model".to_string(), "{{model}}".to_string()]);
                }
                argv
            })
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
    use crate::model::config::default_agent_command;

    #[test]
    fn a_model_goes_where_the_command_names_it() {
        let c = Config::parse("[agent.steps.review]\nmodel = \"opus\"\n").unwrap();
        let review = c.agent.command_for("review");
        assert_eq!(review[review.len() - 2..], ["--model", "{{model}}"]);
        assert_eq!(c.agent.model_for("review"), Some("opus"));
        assert_eq!(c.agent.command_for("implement"), default_agent_command());
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
}
