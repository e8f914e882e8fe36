//! The `hooks` check: Claude Code's guard registration and git's pre-commit hook are installed
//! and run a splice that exists (`splice hooks status`'s reading, [`crate::hooks::status`]).
//! Without them splice still works (dispatched Claude sessions are guarded anyway), so a
//! missing hook is a warning.

use super::{Ctx, Finding};
use crate::hooks::{self, Binary};

pub const HOOKS: &str = "hooks";

pub fn hooks(cx: &Ctx) -> Vec<Finding> {
    let status = hooks::status(cx.store.repo());
    let c = &status.claude;
    let g = &status.git;
    let claude_at = super::shown(cx, &c.path);
    let git_at = g
        .path
        .as_deref()
        .map_or("the git hooks directory".to_string(), |p| {
            super::shown(cx, p)
        });
    vec![
        one(
            "claude",
            &claude_at,
            c.problem.as_deref(),
            c.installed,
            c.splice.as_ref(),
        ),
        match (g.installed, g.foreign, &g.problem) {
            (false, true, None) => Finding::warn(
                HOOKS,
                format!(
                    "git: not installed: {git_at} is another pre-commit hook (installing keeps \
                     it as pre-commit.local, run first)"
                ),
                Some("splice hooks install --git".to_string()),
            ),
            _ => one(
                "git",
                &git_at,
                g.problem.as_deref(),
                g.installed,
                g.splice.as_ref(),
            ),
        },
    ]
}

/// The finding for one hook.
fn one(
    hook: &str,
    at: &str,
    problem: Option<&str>,
    installed: bool,
    splice: Option<&Binary>,
) -> Finding {
    let install = format!("splice hooks install --{hook}");
    match (problem, installed, splice) {
        (Some(p), _, _) => Finding::warn(
            HOOKS,
            format!("{hook}: {at}: {p}"),
            Some(format!("repair {at}, then {install}")),
        ),
        // The committed Claude hook finds `splice` on PATH: where it is not, it blocks.
        (None, true, Some(b)) if !b.exists && !b.path.contains('/') => Finding::warn(
            HOOKS,
            format!(
                "{hook}: installed in {at}, but `{}` is not on PATH, so the hook blocks every \
                 tool call it judges until it is",
                b.path
            ),
            Some("put splice on PATH (`cargo install --path .` from its checkout)".into()),
        ),
        (None, true, Some(b)) if !b.exists => Finding::warn(
            HOOKS,
            format!(
                "{hook}: installed in {at}, but the splice it runs, {}, is missing",
                b.path
            ),
            Some(install),
        ),
        (None, true, _) => Finding::ok(HOOKS, format!("{hook}: installed in {at}")),
        (None, false, _) => Finding::warn(
            HOOKS,
            format!("{hook}: not installed ({at})"),
            Some(install),
        ),
    }
}
