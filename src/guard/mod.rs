//! `splice guard`: a Claude Code `PreToolUse` hook that refuses the tool calls an agent must not
//! make (issue 11). It is a second line: the writer's authority rule
//! ([`crate::transition::authority`]) refuses the same verbs whatever the guard says; the guard
//! also stops what the writer cannot see — files written behind its back, branches moved with
//! git — and says what to do instead, so the agent can correct course.
//!
//! What it denies, for every session: a write (a Write/Edit/NotebookEdit tool — and MultiEdit,
//! which Claude Code no longer has, should an old session send it — or a Bash command that
//! writes: [`bash`]) to splice's live state under `.splice/` ([`paths`]), into
//! another node's worktree, or removing a directory that holds them (a removing `find` from such
//! a directory, unless a `-name` test keeps it out of the state: [`find`]). For a dispatched
//! session ([`crate::authority::recognize`]) also: a `splice` verb its class may not run (the
//! writer's table, [`crate::transition::authority::Verb::actor`]), a write outside its worktree,
//! git commands that move branches it does not own or bypass the pre-commit hook ([`git`]), and
//! EnterWorktree, which would move the session out of the worktree splice made for it.
//!
//! It never blocks a read, and on a fault (input it cannot parse, a command too large or nested
//! too deep) it allows: a guard that blocks what it cannot judge would stop the agent's work.
//! A pattern-matching guard has limits (`docs/security.md`, "The guard").
//!
//! [`judge`] is pure but for reading the file system to resolve paths; [`Context`] carries
//! everything it reads from the environment, built by [`Context::from_process`].

pub mod bash;
mod context;
mod expand;
mod find;
pub mod git;
mod glob;
mod lex;
pub mod paths;
pub mod shell;
mod verbs;
mod writes;

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Commands longer than this are not judged: denied, with a reason asking for smaller ones.
pub const MAX_COMMAND: usize = 1 << 20;
/// How deep `bash -c`, `eval` and substitutions may nest before the guard gives up (denied, as
/// [`MAX_COMMAND`]).
pub const MAX_DEPTH: usize = 12;

/// The hook's input (Claude Code's `PreToolUse` JSON); fields the guard does not read are ignored.
#[derive(Deserialize, Debug, Clone)]
pub struct HookInput {
    pub hook_event_name: String,
    #[serde(default)]
    pub tool_name: Option<String>,
    #[serde(default)]
    pub tool_input: serde_json::Value,
    /// The session's working directory: relative paths and discovery start here.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
}

/// The guard's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nothing to say: the call goes on.
    Allow,
    /// Refused, with a reason the agent can act on.
    Deny(String),
    /// The guard could not judge the call (why); it goes on.
    Fault(String),
}

/// A dispatched session's facts, from its environment (`docs/agents.md`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dispatch {
    pub usage_file: Option<PathBuf>,
    pub run: Option<String>,
    pub bead: Option<String>,
    pub step: Option<String>,
    pub attempt: Option<String>,
    /// Branches it must not move: its target, `main`, `master`, the main checkout's branch.
    pub branches: Vec<String>,
}

/// What the guard knows besides the call: where the live state is, who is calling.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The live state directory, canonical.
    pub state: Option<PathBuf>,
    /// The repository root (the directory holding `state`), canonical.
    pub repo: Option<PathBuf>,
    pub home: Option<PathBuf>,
    /// Temp directories, canonical and as named.
    pub temp: Vec<PathBuf>,
    /// The caller's own worktree: `SPLICE_WORKTREE`, else the splice checkout holding `cwd`.
    pub own_worktree: Option<PathBuf>,
    /// The environment, for `$VAR` in commands.
    pub env: std::collections::HashMap<String, String>,
    /// Set when the caller is a dispatched session.
    pub dispatch: Option<Dispatch>,
    /// The working directory commands start in.
    pub cwd: PathBuf,
}

/// Parse the hook's stdin. `Err`: why it is not hook JSON.
pub fn parse_input(bytes: &[u8]) -> Result<HookInput, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("the input is not hook JSON: {e}"))
}

/// Judge the hook's stdin as it came: a fault, never a denial, when it is not hook JSON.
/// `context` builds the context from the hook's `cwd`.
pub fn judge_bytes(bytes: &[u8], context: impl FnOnce(Option<&Path>) -> Context) -> Decision {
    match parse_input(bytes) {
        Ok(input) => judge(&input, &context(input.cwd.as_deref())),
        Err(e) => Decision::Fault(e),
    }
}

/// Judge one tool call.
#[must_use]
pub fn judge(input: &HookInput, ctx: &Context) -> Decision {
    if input.hook_event_name != "PreToolUse" {
        return Decision::Allow;
    }
    let field = |name: &str| input.tool_input.get(name).and_then(|v| v.as_str());
    let tool = input.tool_name.as_deref().unwrap_or("");
    let path_field = match tool {
        // MultiEdit is gone from Claude Code and no longer registered; an old session may still
        // send it, and it is judged as the Edit it is.
        "Write" | "Edit" | "MultiEdit" => "file_path",
        "NotebookEdit" => "notebook_path",
        "Bash" => {
            return match field("command") {
                Some(c) => bash::judge(c, ctx),
                None => Decision::Fault("a Bash call without a command".into()),
            };
        }
        "EnterWorktree" => return enter_worktree(input, ctx),
        _ => return Decision::Allow,
    };
    match field(path_field) {
        Some(p) => edit(tool, p, ctx),
        None => Decision::Fault(format!("a {tool} call without {path_field}")),
    }
}

/// A Write, Edit or NotebookEdit (or an old session's MultiEdit) of `raw`.
fn edit(tool: &str, raw: &str, ctx: &Context) -> Decision {
    let abs = paths::absolute(raw, &ctx.cwd, ctx.home.as_deref());
    let t = paths::Target::Exact(paths::resolve(&abs));
    match write_harm(&t, Some(&abs), ctx, false) {
        Some(h) => Decision::Deny(reason_for(&format!("{tool} {raw}"), &h, ctx)),
        None => Decision::Allow,
    }
}

/// EnterWorktree switches the session into another git worktree (a new one under
/// `.claude/worktrees/`, or one it names): a person may, a dispatched session may not leave the
/// worktree splice made for it, whose branch is the one splice delivers.
fn enter_worktree(input: &HookInput, ctx: &Context) -> Decision {
    if ctx.dispatch.is_none() {
        return Decision::Allow;
    }
    let named = ["name", "path"]
        .iter()
        .find_map(|k| input.tool_input.get(*k).and_then(|v| v.as_str()));
    let what = shorten(&match named {
        Some(n) => format!("EnterWorktree {n}"),
        None => "EnterWorktree".to_string(),
    });
    Decision::Deny(format!(
        "splice guard: `{what}` would move this session out of its worktree{} into another git \
         worktree. A dispatched session works and commits only in the worktree splice made for \
         it, and splice delivers that branch: stay there, and say in your proposal if the work \
         needs another.",
        ctx.own_worktree
            .as_ref()
            .map(|w| format!(" ({})", w.display()))
            .unwrap_or_default()
    ))
}

/// What writing (or with `remove`, removing) `t` harms, for this caller.
fn write_harm(
    t: &paths::Target,
    raw: Option<&Path>,
    ctx: &Context,
    remove: bool,
) -> Option<paths::Harm> {
    paths::harm(t, ctx, remove)
        .or_else(|| paths::outside(t, raw, ctx).then_some(paths::Harm::Outside))
}

/// The deny reason for `what` (the call or command, as the agent wrote it).
fn reason_for(what: &str, harm: &paths::Harm, ctx: &Context) -> String {
    let what = shorten(what);
    match harm {
        paths::Harm::State(part) => format!(
            "splice guard: `{what}` would write {part} of splice's state (.splice/), which only \
             splice's writer changes. Use a verb instead: {}; reading the state is fine.",
            verbs::agent_hint(ctx)
        ),
        paths::Harm::OtherWorktree(name) => format!(
            "splice guard: `{what}` would write into .splice/worktrees/{name}, another node's \
             worktree. Work only in your own worktree{}.",
            ctx.own_worktree
                .as_ref()
                .map(|w| format!(" ({})", w.display()))
                .unwrap_or_default()
        ),
        paths::Harm::Holds => format!(
            "splice guard: `{what}` would remove, move or overwrite splice's state directory \
             (.splice/) or a directory holding it. Name the files you mean, outside .splice/; \
             splice cleans up its own worktrees and runs."
        ),
        paths::Harm::Outside => format!(
            "splice guard: `{what}` writes outside your worktree{}. A dispatched session changes \
             files only in its worktree (and the temp directory); make the change there, and say \
             in your proposal what else is needed.",
            ctx.own_worktree
                .as_ref()
                .map(|w| format!(" {}", w.display()))
                .unwrap_or_default()
        ),
    }
}

/// A command as quoted in a reason: at most 200 characters.
fn shorten(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= 200 {
        return s.to_string();
    }
    let mut out: String = s.chars().take(200).collect();
    out.push('…');
    out
}

/// The JSON a denial prints on stdout (Claude Code's `PreToolUse` decision).
pub fn deny_json(reason: &str) -> String {
    serde_json::json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    })
    .to_string()
}
