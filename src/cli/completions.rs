//! `splice completions SHELL` and `splice man`: the shell completion script (clap_complete) and
//! the manual page (clap_mangen), both generated from the command line clap knows, so they
//! cannot fall behind it. Read-only (`Verb::Completions`, `Verb::Man`): they read no state
//! directory, so there is no caller to admit; `man --dir` writes only the directory it is given.
//!
//! Hidden commands (`sim-agent`, `hooks pre-commit`) stay out of both: clap_mangen leaves them
//! out itself, clap_complete does not, so the completion script is made from a copy of the
//! command line without them.

use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;
use serde_json::json;

use crate::error::{Error, Result};

use super::{Cli, Global, output};

/// Print a completion script for a shell on stdout.
#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, powershell (or elvish).
    #[arg(value_name = "SHELL")]
    pub shell: Shell,
    /// Print `{"schema_version", "shell", "script"}` instead of the bare script.
    #[arg(long)]
    pub json: bool,
}

/// Print splice's manual page (roff) on stdout, or write one page per command.
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Write `splice.1` and one page per command (`splice-transition-approve.1`, …) into this
    /// existing directory instead of printing the top-level page.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print `{"schema_version", "page"}` (the roff), or with `--dir` `{"schema_version",
    /// "written"}` (the pages' paths), instead of the page or a line per page.
    #[arg(long)]
    pub json: bool,
}

pub fn completions(_global: &Global, args: CompletionsArgs) -> Result<i32> {
    let mut cmd = visible(&Cli::command());
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "splice", &mut script);
    let script = String::from_utf8_lossy(&script);
    if args.json {
        output::print_json(&json!({ "shell": args.shell.to_string(), "script": script }));
    } else {
        output::out(&script);
    }
    Ok(0)
}

pub fn man(_global: &Global, args: ManArgs) -> Result<i32> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    if let Some(dir) = args.dir {
        if !dir.is_dir() {
            return Err(Error::bad_file(&dir, "not a directory"));
        }
        cmd.build();
        let mut written = Vec::new();
        write_pages(&cmd, &dir, &mut written)?;
        if args.json {
            output::print_json(&json!({ "written": written }));
        } else {
            let lines: String = written.iter().map(|p| format!("wrote {p}\n")).collect();
            output::out(&lines);
        }
        return Ok(0);
    }
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut page)
        .map_err(|e| Error::Internal(format!("rendering the manual page: {e}")))?;
    let page = String::from_utf8_lossy(&page);
    if args.json {
        output::print_json(&json!({ "page": page }));
    } else {
        output::out(&page);
    }
    Ok(0)
}

/// Write the page of `cmd` and of each visible subcommand (depth first) into `dir`, as
/// `clap_mangen::generate_to` does, noting each path written.
fn write_pages(cmd: &clap::Command, dir: &Path, written: &mut Vec<String>) -> Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    let man = clap_mangen::Man::new(cmd.clone());
    let path = dir.join(man.get_filename());
    man.generate_to(dir).map_err(|e| Error::io(&path, e))?;
    written.push(path.to_string_lossy().into_owned());
    Ok(())
}

/// `cmd` without its hidden subcommands, at every level (clap_complete completes hidden
/// subcommands). Their options are kept whole: a derive's argument group names all of them.
fn visible(cmd: &clap::Command) -> clap::Command {
    let mut copy = clap::Command::new(cmd.get_name().to_string())
        .args(cmd.get_arguments().cloned())
        .groups(cmd.get_groups().cloned())
        .subcommands(
            cmd.get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(visible),
        );
    if let Some(about) = cmd.get_about() {
        copy = copy.about(about.clone());
    }
    if let Some(version) = cmd.get_version() {
        copy = copy.version(version.to_string());
    }
    copy
}
