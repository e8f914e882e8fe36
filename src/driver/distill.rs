//! `[plan] distiller`: the request (and a design session's conversation) distilled into the
//! bounded intent its steps receive (`{{intent}}`, `model::intent`, `docs/plan.md` "Intent").
//!
//! The distiller runs where a request is given to splice — `splice exec "REQUEST"`,
//! `init-task`, and a plan's approval (`exec --plan`, `plan approve`, `design approve`, the
//! cockpit's `A` and `/approve`) — before its root is created. It is given a file holding the
//! request (its path appended to its argv, and in `$SPLICE_REQUEST`), in a scratch directory
//! of its own, confined as the critic is; what it prints on stdout is the intent, escaped and
//! bounded. A distiller that cannot start, fails, times out or prints nothing is not the
//! request's failure: the root is created without a recorded intent, its steps get the
//! deterministic cut, and the caller shows the warning.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::model::intent::{self, Intent};
use crate::model::plan::Plan;
use crate::process::{self, Cmd};
use crate::store::Store;

/// How long the distiller may run.
const TIMEOUT: Duration = Duration::from_secs(600);
/// The most the distiller's output is read.
const CAP: usize = 64 * 1024;
/// The most of a design conversation the request file holds (its start is kept).
const CONVERSATION_CAP: usize = 64 * 1024;

/// What distilling gave: the intent to record, or why there is none.
#[derive(Debug, Default)]
pub struct Distilled {
    pub intent: Option<Intent>,
    /// Why the configured distiller's answer is not used (the cut is, instead).
    pub warning: Option<String>,
}

/// Distill a lone task's request. Nothing to do without `[plan] distiller`.
pub fn request(store: &Store, request: &str, now: &str) -> Distilled {
    run(
        store,
        &format!("# The request\n\n{}\n", request.trim()),
        now,
    )
}

/// Distill a plan's request: its title and description, and the conversation of the design
/// session it was crystallized in, when it was.
pub fn plan(store: &Store, plan: &Plan, file: &std::path::Path, now: &str) -> Distilled {
    let mut text = format!(
        "# The request\n\n{}\n\n{}\n",
        plan.title.trim(),
        plan.description.trim()
    );
    if let Some(conversation) = conversation(store, file) {
        text.push_str("\n# The design conversation\n\n");
        text.push_str(&crate::exec::prompt::truncate(
            &conversation,
            CONVERSATION_CAP,
        ));
        text.push('\n');
    }
    run(store, &text, now)
}

/// Give a plan's approval its intent, once the critic lets it stand (a refused approval runs
/// no distiller): `input.intent` set, and the distiller's warning, if any, returned.
pub fn approval(
    store: &Store,
    input: &mut crate::transition::plan::PlanInput,
    now: &str,
) -> Result<Option<String>> {
    crate::transition::plan::critic_standing(input)?;
    let distilled = plan(store, input.plan, std::path::Path::new(&input.file), now);
    input.intent = distilled.intent;
    Ok(distilled.warning)
}

/// The design conversation a plan file was crystallized in, in words.
fn conversation(store: &Store, file: &std::path::Path) -> Option<String> {
    use crate::driver::design::{self, Role};
    let id = design::session_of_plan(store, file)
        .or_else(|| design::session_of_plan(store, &std::env::current_dir().ok()?.join(file)))?;
    let c = design::load(store, &id).ok()?;
    Some(
        c.turns
            .iter()
            .map(|t| {
                let who = match t.role {
                    Role::Person => "person",
                    Role::Agent => "design agent",
                };
                format!("{who}: {}", t.text.trim())
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
    )
}

fn run(store: &Store, text: &str, now: &str) -> Distilled {
    let config = match store.config() {
        Ok(c) => c,
        Err(e) => return warned(format!("config.toml could not be read: {e}")),
    };
    let Some(argv) = config.plan.distiller.clone() else {
        return Distilled::default();
    };
    match distill(store, &config, argv, text, now) {
        Ok(intent) => Distilled {
            intent: Some(intent),
            warning: None,
        },
        Err(why) => warned(why),
    }
}

fn warned(why: String) -> Distilled {
    Distilled {
        intent: None,
        warning: Some(format!(
            "{why}; the request's steps get its deterministic cut ({} characters)",
            intent::CUT_CHARS
        )),
    }
}

fn distill(
    store: &Store,
    config: &crate::model::Config,
    mut argv: Vec<String>,
    text: &str,
    now: &str,
) -> std::result::Result<Intent, String> {
    let program = argv[0].clone();
    let scratch = crate::driver::crystallize::scratch_dir().map_err(|e| e.to_string())?;
    let ran = (|| -> Result<process::Captured> {
        let file = scratch.join("request.md");
        std::fs::write(&file, text).map_err(|e| Error::io(&file, e))?;
        argv.push(file.display().to_string());
        let confined = crate::driver::crystallize::confine(
            store,
            config,
            &scratch,
            std::slice::from_ref(&file),
            &argv,
        )?;
        let mut cmd = Cmd::new(&argv, &scratch);
        cmd.env = vec![("SPLICE_REQUEST".into(), file.clone().into())];
        if let Some((sandbox, env)) = &confined {
            cmd.sandbox = Some(sandbox);
            cmd.env
                .extend(env.iter().cloned().map(|(k, v)| (k.into(), v)));
        }
        cmd.timeout = Some(TIMEOUT);
        Ok(process::capture(&cmd, CAP))
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    let ran = ran.map_err(|e| format!("[plan] distiller `{program}` could not run: {e}"))?;
    if ran.code() != Some(0) {
        return Err(format!(
            "[plan] distiller `{program}` ended {:?}: {}",
            ran.ran.exit,
            crate::model::printable::printable(&crate::exec::prompt::truncate(
                ran.combined().trim(),
                300
            ))
        ));
    }
    let text = intent::bounded(&ran.stdout)
        .ok_or_else(|| format!("[plan] distiller `{program}` printed no intent"))?;
    Ok(Intent {
        text,
        by: program,
        at: now.to_string(),
    })
}
