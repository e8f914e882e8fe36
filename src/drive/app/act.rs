//! The cockpit's commands carried out: the writer's verbs as a person (the same functions the
//! CLI verbs call, the same refusals), and runs and passes on a background thread.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use crate::authority::Presence;
use crate::driver::envelope::describe_action;
use crate::driver::events::{Events, Output};
use crate::driver::interrupt::INTERRUPTED;
use crate::driver::runner::{self, Options, Summary};
use crate::error::Result;
use crate::store::Store;
use crate::transition::authority::Verb;
use crate::transition::plan::PlanInput;
use crate::transition::{Ctx, Who, claim, gate, loops, park, settings};

use super::super::model::{Command, DesignPane};

/// A writing command through the writer, as `who` (a person): `None` when `cmd` is not one.
pub(super) fn write(
    store: &Store,
    who: &Who,
    cmd: &Command,
) -> Option<std::result::Result<String, String>> {
    let now = match crate::clock::now_string() {
        Ok(now) => now,
        Err(e) => return Some(Err(e.to_string())),
    };
    let ctx = Ctx {
        store,
        holder: None,
        who: who.clone(),
        run: None,
        expect_seq: None,
        now,
    };
    let done: Result<String> = match cmd {
        Command::Approve { bead, step } => {
            gate::approve(&ctx, bead, Some(step)).map(|_| format!("approved {bead} at {step}"))
        }
        Command::Reject { bead, step, reason } => gate::reject(&ctx, bead, Some(step), reason)
            .map(|_| format!("rejected {bead} at {step}: {reason}")),
        Command::ClearClaim { bead, reason } => {
            claim::clear(&ctx, bead, reason).map(|_| format!("cleared {bead}'s claim"))
        }
        Command::Unpark { bead, reason } => {
            park::unpark(&ctx, bead, reason).map(|_| format!("unparked {bead}"))
        }
        Command::Guide { bead, text } => {
            loops::guide(&ctx, bead, text).map(|_| format!("guided {bead}"))
        }
        Command::SetSuiteCmd { bead, cmd } => {
            settings::set_config(&ctx, bead, Some(cmd.clone()), None)
                .map(|_| format!("{bead}'s suite command is `{cmd}`"))
        }
        Command::ApprovePlan { plan } => approve_plan(&ctx, plan),
        Command::Crystallize { notes } => crystallize(store, notes),
        _ => return None,
    };
    Some(done.map_err(|e| e.to_string()))
}

/// `plan approve PLAN` as a person: the plan read and checked (a bad one names the file and
/// the field), its campaign created with its planning gates approved.
fn approve_plan(ctx: &Ctx, path: &str) -> Result<String> {
    let started = start_plan(ctx, path, None)?;
    let warned = match started.warnings.len() {
        0 => String::new(),
        n => format!(" ({n} warning(s): {})", started.warnings.join("; ")),
    };
    Ok(format!(
        "plan approved: campaign {} with {} task(s) at {}; `r` runs it{warned}",
        started.id,
        started.children.len(),
        started.step
    ))
}

fn start_plan(
    ctx: &Ctx,
    path: &str,
    override_critic: Option<String>,
) -> Result<crate::transition::plan::Started> {
    let (plan, sha256) = crate::transition::plan::read_file(std::path::Path::new(path))?;
    let mut input = PlanInput {
        plan: &plan,
        file: path.to_string(),
        critic: crate::driver::crystallize::standing(ctx.store, &sha256)?,
        sha256,
        delivery: None,
        override_critic,
        intent: None,
    };
    let warning = crate::driver::distill::approval(ctx.store, &mut input, &ctx.now)?;
    let mut started = crate::transition::plan::start(ctx, Verb::PlanApprove, &input)?;
    started.warnings.extend(warning);
    Ok(started)
}

/// The design pane's commands (`splice design`'s, as a person): how it went, and the session
/// as it now stands for the pane. `None` when `cmd` is not one.
pub(super) fn design(
    store: &Store,
    who: &Who,
    cmd: &Command,
) -> Option<(std::result::Result<String, String>, Option<DesignPane>)> {
    use crate::driver::design;
    let run = || -> Result<(String, Option<design::Conversation>)> {
        let now = crate::clock::now_string()?;
        let verb = match cmd {
            Command::DesignOpen => Verb::DesignShow,
            Command::DesignApprove { .. } => Verb::PlanApprove,
            _ => Verb::Design,
        };
        crate::transition::authority::admit(verb, who)?;
        let open = |id: &str| design::load(store, id);
        Ok(match cmd {
            Command::DesignOpen => match design::resolve(store, None)? {
                Some(c) => (
                    format!(
                        "design session {} resumed ({} turn(s)): type, ⏎ sends",
                        c.session.id,
                        c.turns.len()
                    ),
                    Some(c),
                ),
                None => (
                    "a new design session: say what the work is, ⏎ sends".into(),
                    None,
                ),
            },
            Command::DesignSay { session, text } => {
                let c = match session {
                    Some(id) => open(id)?,
                    None => design::new_session(store, &now),
                };
                let c = design::say(store, c, text, &now)?;
                let asks = c.pending_request().map_or(String::new(), |r| {
                    format!("; the design agent asks to {0}: /{0} does it", r.name())
                });
                (format!("the design agent answered{asks}"), Some(c))
            }
            Command::DesignCrystallize { session } => {
                let (c, done) = design::crystallize(store, open(session)?, &now)?;
                let said = match &done.critic {
                    Some(v) if !v.passed() => format!(
                        "; {} must-fix finding(s): /approve refuses until it is fixed, or \
                         /approve REASON overrides",
                        v.must_fix().count()
                    ),
                    Some(_) => "; the critic passed it: /approve starts it".into(),
                    None => "; /approve starts it".into(),
                };
                (
                    format!("plan {} ({} task(s)){said}", done.plan, done.tasks),
                    Some(c),
                )
            }
            Command::DesignApprove {
                session,
                override_critic,
            } => {
                let c = open(session)?;
                let plan = design::plan_file(&c)?;
                let ctx = Ctx {
                    store,
                    holder: None,
                    who: who.clone(),
                    run: None,
                    expect_seq: None,
                    now: now.clone(),
                };
                let started =
                    start_plan(&ctx, &plan.display().to_string(), override_critic.clone())?;
                let c = design::approved(store, c, &started.id, &now)?;
                (
                    format!(
                        "plan approved: campaign {} with {} task(s); `r` runs it",
                        started.id,
                        started.children.len()
                    ),
                    Some(c),
                )
            }
            Command::DesignAbort { session } => {
                let c = design::abort(store, open(session)?, &now)?;
                (format!("design session {} aborted", c.session.id), Some(c))
            }
            _ => unreachable!("only design commands come here"),
        })
    };
    if !matches!(
        cmd,
        Command::DesignOpen
            | Command::DesignSay { .. }
            | Command::DesignCrystallize { .. }
            | Command::DesignApprove { .. }
            | Command::DesignAbort { .. }
    ) {
        return None;
    }
    Some(match run() {
        Ok((line, c)) => (Ok(line), Some(pane(store, c.as_ref()))),
        Err(e) => (Err(e.to_string()), None),
    })
}

/// The pane for a session (none yet: an empty one), with the critic's recorded verdict on its
/// plan.
fn pane(store: &Store, c: Option<&crate::driver::design::Conversation>) -> DesignPane {
    use crate::driver::design::Role;
    let Some(c) = c else {
        return DesignPane {
            status: "new".into(),
            ..DesignPane::default()
        };
    };
    let s = &c.session;
    let findings = s
        .sha256
        .as_deref()
        .and_then(|sha| {
            crate::driver::crystallize::recorded(store, sha)
                .ok()
                .flatten()
        })
        .map(|v| {
            crate::driver::crystallize::findings_text(&v)
                .lines()
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    DesignPane {
        session: Some(s.id.clone()),
        status: s.status.name().to_string(),
        turns: c
            .turns
            .iter()
            .map(|t| (t.role == Role::Person, t.text.clone()))
            .collect(),
        request: c.pending_request().map(|r| r.name().to_string()),
        plan: s.plan.clone(),
        findings,
        input: String::new(),
    }
}

/// `plan crystallize NOTES` (the designer, then the critic), the plan written beside the notes.
/// The cockpit waits for them.
fn crystallize(store: &Store, notes: &str) -> Result<String> {
    crate::transition::authority::admit(Verb::PlanCrystallize, &Who::command_line(store.dir()))?;
    let notes = std::path::Path::new(notes);
    let out = notes.with_extension("plan.json");
    let done = crate::driver::crystallize::crystallize(store, notes, &out)?;
    let critic = match &done.critic {
        Some(c) if !c.passed() => format!(
            "; the critic's must-fix findings (`A` refuses until it is fixed and judged again): {}",
            c.must_fix()
                .map(|f| format!("{} {}: {}", f.severity.name(), f.category, f.issue))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Some(c) => format!(
            "; the critic passed it ({} finding(s), none must be fixed)",
            c.findings.len()
        ),
        None => String::new(),
    };
    Ok(format!(
        "plan {} written ({} task(s)){critic}; `A` approves it",
        done.plan, done.tasks
    ))
}

/// A dry-run pass of `scope`: the actions it would take, in a line.
pub(super) fn dry_run(store: &Store, scope: Option<String>) -> std::result::Result<String, String> {
    let opts = Options {
        scope,
        dry_run: true,
        one_pass: true,
        ..Options::default()
    };
    let sum = runner::run(store, &opts, &Events::new(Output::Quiet)).map_err(|e| e.to_string())?;
    let Some(env) = sum.envelope else {
        return Ok("dry run: no decision".into());
    };
    if env.actions.is_empty() {
        return Ok(format!("dry run: nothing to do ({})", env.status.as_str()));
    }
    let actions: Vec<String> = env.actions.iter().map(describe_action).collect();
    Ok(format!("dry run: {}", actions.join("; ")))
}

/// A run or a pass of this cockpit, on its own thread.
pub(super) struct Background {
    job: Option<(&'static str, JoinHandle<Result<Summary>>)>,
    presence_tx: Sender<Arc<Presence>>,
    presence_rx: Receiver<Arc<Presence>>,
    /// The runner records of this cockpit's runs (gone when their run ends).
    presences: Vec<Weak<Presence>>,
    /// The ids of the runs started here.
    own: Vec<String>,
}

impl Background {
    pub(super) fn new() -> Background {
        let (presence_tx, presence_rx) = mpsc::channel();
        Background {
            job: None,
            presence_tx,
            presence_rx,
            presences: Vec::new(),
            own: Vec::new(),
        }
    }

    pub(super) fn is_live(&self) -> bool {
        self.job.is_some()
    }

    /// Start a run (`one_pass`: a pass) of `scope` with `jobs` dispatches at once.
    pub(super) fn start(
        &mut self,
        store: &Store,
        scope: Option<String>,
        jobs: Option<u32>,
        one_pass: bool,
    ) -> std::result::Result<String, String> {
        if let Some((what, _)) = &self.job {
            return Err(format!("a {what} of this cockpit is going; `s` stops it"));
        }
        let opts = Options {
            scope,
            jobs,
            one_pass,
            presence: Some(self.presence_tx.clone()),
            ..Options::default()
        };
        let store = store.clone();
        let what = if one_pass { "pass" } else { "run" };
        let handle = std::thread::Builder::new()
            .name(format!("drive-{what}"))
            .spawn(move || runner::run(&store, &opts, &Events::new(Output::Quiet)))
            .map_err(|e| format!("cannot start a {what}: {e}"))?;
        self.job = Some((what, handle));
        Ok(format!("{what} started"))
    }

    /// Ask the run to stop as Ctrl-C stops `splice run`: its dispatches are killed with their
    /// process groups, their exits recorded and their claims released. The flag is cleared when
    /// the run has ended ([`Background::poll`]).
    pub(super) fn stop(&self) -> std::result::Result<String, String> {
        match &self.job {
            Some((what, _)) => {
                INTERRUPTED.store(true, Ordering::SeqCst);
                Ok(format!("stopping the {what}…"))
            }
            None => Err(
                "no run of this cockpit is going (a run started in another terminal \
                         is stopped there, with Ctrl-C)"
                    .into(),
            ),
        }
    }

    /// How the run went, once it has ended.
    pub(super) fn poll(&mut self) -> Option<std::result::Result<String, String>> {
        self.take_presences();
        if !self.job.as_ref()?.1.is_finished() {
            return None;
        }
        self.finish()
    }

    /// Stop the run and wait for it to end (quitting).
    pub(super) fn stop_and_wait(&mut self) -> Option<std::result::Result<String, String>> {
        self.job.as_ref()?;
        let _ = self.stop();
        self.finish()
    }

    fn finish(&mut self) -> Option<std::result::Result<String, String>> {
        let (what, handle) = self.job.take()?;
        let joined = handle.join();
        INTERRUPTED.store(false, Ordering::SeqCst);
        Some(match joined {
            Ok(Ok(sum)) if sum.interrupted => Ok(format!("{what} stopped")),
            Ok(Ok(sum)) => Ok(format!("{what} ended: {}", sum.status.as_str())),
            Ok(Err(e)) => Err(format!("{what} failed: {e}")),
            Err(_) => Err(format!("{what} failed: its thread panicked")),
        })
    }

    fn take_presences(&mut self) {
        while let Ok(p) = self.presence_rx.try_recv() {
            self.own.push(p.record().run);
            self.presences.push(Arc::downgrade(&p));
        }
        self.presences.retain(|p| p.strong_count() > 0);
    }

    /// Was run `run` started here?
    pub(super) fn is_own(&mut self, run: &str) -> bool {
        self.take_presences();
        self.own.iter().any(|r| r == run)
    }

    /// `pid`, a process this cockpit started for a person (an editor, a pager), is recorded as
    /// the person's by every run of this cockpit that is live: verbs run from it are a person's.
    pub(super) fn person_process(&mut self, pid: u32) -> std::result::Result<(), String> {
        self.take_presences();
        for presence in self.presences.iter().filter_map(Weak::upgrade) {
            presence
                .add_person_process(pid as i32)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &std::path::Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn approving_a_plan_creates_its_campaign_and_a_bad_plan_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        git(repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README.md"), "x\n").unwrap();
        git(repo, &["add", "-A"]);
        git(repo, &["commit", "-q", "-m", "initial"]);
        let store = Store::open_or_create(Some(&repo.join(".splice"))).unwrap();
        let plan = serde_json::json!({
            "schema_version": 1,
            "title": "Greeter",
            "scenarios": [{"id": "S1", "title": "greets"}],
            "suite_cmd": "true",
            "test_paths": ["tests"],
            "tasks": [{"id": "hello", "title": "Hello", "scenarios": ["S1"]}]
        });
        let file = repo.join("plan.json");
        std::fs::write(&file, plan.to_string()).unwrap();
        let who = Who::Person;
        let cmd = Command::ApprovePlan {
            plan: file.display().to_string(),
        };
        let done = write(&store, &who, &cmd).unwrap().unwrap();
        assert!(done.starts_with("plan approved: campaign "), "{done}");
        let beads = std::fs::read_dir(store.dir().join("beads"))
            .unwrap()
            .count();
        assert_eq!(beads, 2, "the root and its one task");
        std::fs::write(&file, r#"{"schema_version": 1, "title": "x"}"#).unwrap();
        let err = write(&store, &who, &cmd).unwrap().unwrap_err();
        assert!(err.contains("plan.json"), "{err}");
        let beads = std::fs::read_dir(store.dir().join("beads"))
            .unwrap()
            .count();
        assert_eq!(beads, 2, "nothing written");
    }
}
