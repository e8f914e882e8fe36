//! `splice hooks install|status` and the hidden `splice hooks pre-commit`: install the hooks
//! that keep agents off splice's state where the writer cannot stand between them
//! ([`crate::hooks`]; `docs/security.md`, "Hooks").
//!
//! `install` is a person's verb: a dispatched session is refused through the writer's table
//! (`hooks install`, class person) before anything is read, since an agent must not rewrite
//! the hooks that watch it. `status` and `pre-commit` only read.

use std::path::Path;

use clap::Subcommand;

use super::{Global, output};
use crate::error::Result;
use crate::hooks::{self, Action, Installed, Which, precommit};
use crate::store::Store;
use crate::transition::authority::{self, Verb, Who};

/// Install or inspect the Claude Code guard hook and the git pre-commit hook.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: HooksCommand,
}

/// The `hooks` subcommands.
#[derive(Subcommand, Debug)]
pub enum HooksCommand {
    /// Install the hooks (both, unless --claude or --git picks one); installing again changes
    /// nothing.
    Install(InstallArgs),
    /// Say whether each hook is installed, where, and whether the splice it runs exists.
    Status(StatusArgs),
    /// The check the installed git pre-commit hook runs: refuse a dispatched session's commit
    /// that changes .splice/.
    #[command(hide = true)]
    PreCommit,
}

/// `splice hooks install`.
#[derive(clap::Args, Debug)]
pub struct InstallArgs {
    /// Register `splice guard` as a PreToolUse hook in .claude/settings.json (merged into what
    /// is there).
    #[arg(long)]
    pub claude: bool,
    /// Install the git pre-commit hook (core.hooksPath if set, else the repository's hooks
    /// directory); a pre-commit hook already there is kept as pre-commit.local and run first.
    #[arg(long)]
    pub git: bool,
    /// Print what was done as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `splice hooks status`.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Run a `hooks` subcommand for the repository holding the state directory (or where `init`
/// would create one).
pub fn run(args: Args, global: &Global) -> Result<i32> {
    let store = Store::open_or_plan(global.dir.as_deref())?;
    match args.command {
        HooksCommand::Install(a) => install(&store, &a),
        HooksCommand::Status(a) => status(&store, &a),
        HooksCommand::PreCommit => pre_commit(&store),
    }
}

fn install(store: &Store, args: &InstallArgs) -> Result<i32> {
    authority::admit(Verb::HooksInstall, &Who::command_line(store.dir()))?;
    let which = match (args.claude, args.git) {
        (false, false) => Which {
            claude: true,
            git: true,
        },
        (claude, git) => Which { claude, git },
    };
    let done = hooks::install(store.repo(), which, &hooks::splice_exe())?;
    if args.json {
        output::print_json(&serde_json::json!({ "installed": done }));
    } else {
        output::out(&done.iter().map(installed_line).collect::<String>());
    }
    Ok(0)
}

/// One line a person reads for one hook installed.
fn installed_line(i: &Installed) -> String {
    let what = match i.action {
        Action::Created => "installed",
        Action::Updated => "updated",
        Action::Unchanged => "already installed, unchanged:",
    };
    let runs = match i.hook {
        "claude" => format!("a PreToolUse hook runs `{}`", i.command),
        _ => format!("it runs `{}`", i.command),
    };
    let mut line = format!("{}: {what} {} ({runs})", i.hook, shown(&i.path));
    if i.hooks_path_config {
        line.push_str("; the directory is core.hooksPath");
    }
    if let Some(kept) = &i.chained {
        line.push_str(&format!(
            "; the earlier pre-commit hook is {} and runs first",
            shown(kept)
        ));
    }
    line.push('\n');
    line
}

/// What is installed, in words. What it quotes from the files it read (a settings file's
/// command and matcher, git's `core.hooksPath`, why a file could not be read) is escaped.
fn status(store: &Store, args: &StatusArgs) -> Result<i32> {
    let s = hooks::status(store.repo());
    if args.json {
        output::print_json(&s);
        return Ok(0);
    }
    let found = |b: &Option<hooks::Binary>| match b {
        Some(b) if b.exists => format!("runs {}", output::printable(&b.path)),
        Some(b) => format!(
            "runs {}, which is missing: install again",
            output::printable(&b.path)
        ),
        None => String::new(),
    };
    let c = &s.claude;
    let claude = match (&c.problem, c.installed) {
        (Some(p), _) => format!("claude: {}: {}\n", shown(&c.path), output::printable(p)),
        (None, true) => format!(
            "claude: installed in {} ({}, matcher {})\n",
            shown(&c.path),
            found(&c.splice),
            output::printable(c.matcher.as_deref().unwrap_or("none"))
        ),
        (None, false) => format!("claude: not installed ({})\n", shown(&c.path)),
    };
    let g = &s.git;
    let at = g.path.as_deref().map(shown).unwrap_or_default();
    let config = if g.hooks_path_config {
        " (core.hooksPath)"
    } else {
        ""
    };
    let git = match (&g.problem, g.installed, g.foreign) {
        (Some(p), _, _) => format!("git: {}\n", output::printable(p)),
        (None, true, _) => {
            let chained = g
                .chained
                .as_ref()
                .map(|c| format!("; {} runs first", shown(c)))
                .unwrap_or_default();
            format!(
                "git: installed in {at}{config} ({}{chained})\n",
                found(&g.splice)
            )
        }
        (None, false, true) => format!(
            "git: not installed: {at}{config} is another pre-commit hook (installing keeps it \
             as pre-commit.local)\n"
        ),
        (None, false, false) => format!("git: not installed ({at}{config})\n"),
    };
    output::out(&format!("{claude}{git}"));
    Ok(0)
}

fn pre_commit(store: &Store) -> Result<i32> {
    match precommit::check(store.dir())? {
        precommit::Verdict::Person | precommit::Verdict::Clean => Ok(0),
        precommit::Verdict::Refused(paths) => {
            let listed: String = paths
                .iter()
                .map(|p| format!("  {}\n", output::printable(p)))
                .collect();
            output::err(&format!(
                "splice: refused: this commit changes splice's state, and it is made from a \
                 session splice dispatched:\n{listed}An agent never commits .splice/: splice \
                 records state through `splice transition`. Unstage them \
                 (`git restore --staged -- .splice`, and `git restore -- .splice` to drop the \
                 edits), then commit the rest.\n"
            ));
            Ok(1)
        }
    }
}

/// A path on one line, escaped: a repository's paths and git's config may hold anything.
fn shown(path: &Path) -> String {
    output::printable(&path.display().to_string())
}
