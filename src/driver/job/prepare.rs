//! Making a dispatch ready ([`Job::prepare`]): its worktree prepared for the attempt and put in
//! its git quarantine, its files named, its prompt and argv rendered (behind the guard when it
//! is on), its environment and its kernel sandbox built; and the spec `exec::dispatch` runs.

use std::time::Duration;

use crate::authority::Credential;
use crate::driver::act::RunCtx;
use crate::driver::prompts;
use crate::error::{Error, Result};
use crate::exec::{self, DispatchPaths, DispatchSpec, guard, prompt, template, usage};
use crate::model::manifest::Run;
use crate::model::{Bead, Role};
use crate::worktree;

use super::{Env, Job};

/// A dispatch made ready to run: the bead as read for it, its files, its argv and the
/// environment it gets besides the `SPLICE_*` of [`exec::dispatch::env_for`].
pub(in crate::driver) struct Prepared {
    pub(in crate::driver) bead: Bead,
    pub(in crate::driver) paths: DispatchPaths,
    pub(in crate::driver) argv: Vec<String>,
    pub(in crate::driver) env: Env,
    /// The dispatch's kernel sandbox, when the run's dispatches are sandboxed.
    pub(in crate::driver) sandbox: Option<crate::sandbox::Sandbox>,
}

impl Job {
    /// A loop step's dispatch environment (`SPLICE_ITERATION`, and from iteration 2
    /// `SPLICE_LOOP_CONTEXT`, whose file is written here) and the prompt's loop section.
    fn loop_env(&self, bead: &Bead, paths: &DispatchPaths) -> Result<(Env, Option<String>)> {
        if self.step.loop_.is_none() {
            return Ok((Vec::new(), None));
        }
        let n = bead.iterations_since_entry().count() + 1;
        let mut env = vec![("SPLICE_ITERATION".to_string(), n.to_string())];
        let limit = self.step.dispatch_limit(self.rc.max_turns);
        let Some((section, data)) = crate::driver::looping::context(bead, limit) else {
            return Ok((env, None));
        };
        std::fs::create_dir_all(&paths.run_dir).map_err(|e| Error::io(&paths.run_dir, e))?;
        let file = paths.log.with_extension("context.json");
        let bytes = serde_json::to_vec_pretty(&data).unwrap_or_default();
        crate::store::atomic::replace_file(&file, &bytes)?;
        env.push((
            "SPLICE_LOOP_CONTEXT".to_string(),
            file.display().to_string(),
        ));
        Ok((env, Some(section)))
    }

    /// Make the dispatch ready: its worktree prepared for the attempt, its files named, its
    /// argv rendered (behind the guard when it is on).
    pub(in crate::driver) fn prepare(&self) -> Result<Prepared> {
        let rc = &self.rc;
        let bead = rc.store.read_bead(&self.bead)?;
        // A loop step's iterations build on each other (a rollback restores a snapshot first).
        let resume = match self.step.loop_ {
            Some(_) => crate::model::manifest::Resume::Continue,
            None => self.step.resume,
        };
        worktree::prepare_for_attempt(
            &self.worktree,
            resume,
            worktree::is_retry(&bead, self.attempt),
            worktree::step_base(&bead),
        )?;
        crate::driver::looping::before_dispatch(rc, &bead, &self.step, &self.worktree)?;
        // From here until `conclude`, the worktree's git is the dispatch's own quarantine.
        worktree::quarantine::enter(rc.store.repo(), &rc.store.worktrees_dir(), &self.bead)?;
        let paths = DispatchPaths::new(
            &rc.store.runs_dir(),
            &rc.run_id,
            &self.bead,
            &self.step.name,
            self.attempt,
        )?
        .retry(bead.retries_at(self.attempt));
        let vars = template::ArgvVars {
            bead: &self.bead,
            step: &self.step.name,
            attempt: self.attempt,
            worktree: &self.worktree,
            holder: &rc.holder,
            run: &rc.run_id,
            model: rc.config.agent.model_for(&self.step.name),
        };
        let (mut env, section) = self.loop_env(&bead, &paths)?;
        // What the kind's built-in command needs (Claude Code's `IS_SANDBOX`).
        if bead.pipeline.escalation.is_none()
            && rc.config.agent.builtin_for(&self.step.name)
            && matches!(self.step.run, Some(Run::Prompt { .. }))
            && let Some(kind) = rc.config.agent.kind()
        {
            env.extend(kind.env(rc.sandbox.is_ok()));
        }
        let mut argv = self.argv(&bead, &vars, &paths, section.as_deref())?;
        if rc.config.guard.dispatch() {
            argv = guard::guard_argv(argv, &paths.settings_file, &crate::hooks::splice_exe())?;
        }
        // A Slurm job is confined on its compute node (`slurm::confined_argv`), not here.
        let sandbox = match (&rc.sandbox, rc.poller.is_some()) {
            (Ok(_), false) => {
                let (sandbox, more) = self.sandbox(&paths, &argv)?;
                env.extend(more);
                Some(sandbox)
            }
            _ => None,
        };
        Ok(Prepared {
            bead,
            paths,
            argv,
            env,
            sandbox,
        })
    }

    /// The project memory bundle when the prompt `template` names `{{memory}}` (`driver::memory`;
    /// other prompts never read it). What could not be read is kept for the run's progress.
    fn memory_for(&self, template: &str, bead: &Bead) -> String {
        let named = template::names(template, "prompt template")
            .is_ok_and(|names| names.iter().any(|n| n == "memory"));
        if !named {
            return String::new();
        }
        let b = crate::driver::memory::bundle(self.rc.store.dir(), &self.worktree, bead);
        self.warnings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(
                b.warnings
                    .into_iter()
                    .map(|w| format!("{} {}: {w}", self.bead, self.step.name)),
            );
        b.text
    }

    /// The dispatch's sandbox and the variables it adds ([`dispatch_sandbox`]).
    fn sandbox(
        &self,
        paths: &DispatchPaths,
        argv: &[String],
    ) -> Result<(crate::sandbox::Sandbox, Env)> {
        dispatch_sandbox(&self.rc, &self.bead, &self.worktree, paths, argv)
    }

    /// The dispatch's spec (local; a Slurm job takes its environment from it).
    pub(in crate::driver) fn spec<'s>(&'s self, p: &'s Prepared) -> DispatchSpec<'s> {
        let rc = &self.rc;
        DispatchSpec {
            timeout: Some(Duration::from_secs(self.step.timeout_s.max(1))),
            stall: rc.config.limits.stall(),
            usage: usage::Adapter::from(rc.config.agent.usage),
            prices: &rc.config.prices,
            model: crate::driver::looping::configured_model(rc, &p.bead, &self.step.name),
            cancel: Some(&*self.cancel),
            credential: self.credential.as_ref().map(Credential::secret),
            target: Some(&self.target),
            env: p.env.clone(),
            sandbox: p.sandbox.as_ref(),
            ..DispatchSpec::new(
                &self.bead,
                &self.step.name,
                self.attempt,
                &rc.holder,
                &rc.run_id,
                rc.store.dir(),
                &self.worktree,
                &p.paths,
                &p.argv,
            )
        }
    }

    /// The command line of this dispatch: the agent's command with the step's rendered prompt,
    /// or the step's own argv.
    fn argv(
        &self,
        bead: &Bead,
        vars: &template::ArgvVars,
        paths: &DispatchPaths,
        loop_section: Option<&str>,
    ) -> Result<Vec<String>> {
        let rc = &self.rc;
        match &self.step.run {
            Some(Run::Prompt { prompt: name }) => {
                let text = prompts::template_for(&rc.store, name, self.delivery)?;
                let artifact = prompts::artifact_for(&self.step, &self.bead, &self.root_id)?;
                let pv = prompt::PromptVars {
                    defines_scenarios: self.step.has_role(Role::Spec),
                    target: self.target.clone(),
                    intent: self.intent.clone(),
                    memory: self.memory_for(&text, bead),
                    ..prompt::PromptVars::for_dispatch(
                        bead,
                        self.parent.as_ref(),
                        &self.root_id,
                        self.attempt,
                        &artifact,
                    )
                };
                let mut rendered = prompt::render(&text, &pv)?;
                rendered.push_str(loop_section.unwrap_or_default());
                let command = crate::driver::looping::agent_command(rc, bead, &self.step.name);
                template::command_argv(&command, vars, Some(&rendered), &paths.prompt_file)
            }
            // A node that escalated runs the escalation command, with the loop's context as
            // its prompt.
            Some(Run::Argv { .. }) if bead.pipeline.escalation.is_some() => {
                let command = crate::driver::looping::agent_command(rc, bead, &self.step.name);
                let prompt = loop_section.unwrap_or_default().trim_start();
                template::command_argv(&command, vars, Some(prompt), &paths.prompt_file)
            }
            Some(Run::Argv { argv }) => {
                template::command_argv(argv, vars, None, &paths.prompt_file)
            }
            None => Err(Error::Invalid(format!(
                "step {} has no command to dispatch",
                self.step.name
            ))),
        }
    }
}

/// The sandbox of a dispatch on `node` in `worktree` and the variables it adds
/// (`exec::sandbox`): a sandbox that cannot be built stops the dispatch, never lets it run
/// unconfined.
pub(in crate::driver) fn dispatch_sandbox(
    rc: &RunCtx,
    node: &str,
    worktree: &std::path::Path,
    paths: &DispatchPaths,
    argv: &[String],
) -> Result<(crate::sandbox::Sandbox, Env)> {
    let git_dir = worktree::open_repo(rc.store.repo())?
        .commondir()
        .to_path_buf();
    let place = exec::sandbox::Place {
        repo: rc.store.repo(),
        splice_dir: rc.store.dir(),
        git_dir: &git_dir,
        node,
        worktree,
        paths,
        argv,
        config: &rc.config.sandbox,
    };
    let (policy, env) = exec::sandbox::for_dispatch(&place)?;
    let sandbox = crate::sandbox::Sandbox::prepare(&policy)
        .map_err(|why| Error::Invalid(format!("the dispatch's sandbox cannot be built: {why}")))?;
    let env = env
        .into_iter()
        .map(|(k, v)| (k, v.to_string_lossy().into_owned()))
        .collect();
    Ok((sandbox, env))
}
