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
    page.extend_from_slice(TOP_SECTIONS.as_bytes());
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
    let mut page = Vec::new();
    man.render(&mut page).map_err(|e| Error::io(&path, e))?;
    let top = cmd.get_name() == "splice";
    page.extend_from_slice(if top { TOP_SECTIONS } else { COMMAND_SECTIONS }.as_bytes());
    crate::store::atomic::replace_file(&path, &page)?;
    written.push(path.to_string_lossy().into_owned());
    Ok(())
}

/// The sections of the top-level page after clap's: exit codes (`docs/cli.md`, "Exit codes", is
/// their one home), environment, files.
const TOP_SECTIONS: &str = concat!(
    r#".SH "EXIT STATUS"
"#,
    r#".TP
\fB0\fR
The command ran (a verb with nothing to do ran too).
.TP
\fB1\fR
A refusal: a precondition, a floor or the authority rule said no; the reason is on stderr and nothing was written (but the check a refused step's floor recorded).
.TP
\fB2\fR
A fault of the machinery or the input: a missing or unreadable file (named), bad JSON, an unknown bead, git, I/O, an internal error; and every usage error.
.TP
\fB3\fR
\fBimport bd\fR, \fBsync bd\fR: some records were not taken, or a conflict stands (each listed).
.TP
\fB10\fR\(en\fB16\fR
\fBrun \-\-exit\-status\fR, \fBexec\fR, \fBplan approve\fR: the run's final status (suspended\-human 10, suspended\-running 11, escalated 12, budget 13, stalled 14, idle 15).
.TP
\fB130\fR
\fBrun\fR or \fBpass\fR stopped by Ctrl\-C or SIGTERM.
.PP
Each command's own cases are in docs/cli.md, "Exit codes".
"#,
    r#".SH ENVIRONMENT
.TP
\fBSPLICE_DIR\fR
The state directory (\fI.splice\fR) or the directory holding it, when \fB\-\-dir\fR is not given; else the nearest ancestor of the working directory holding \fI.splice/\fR.
.TP
\fBSPLICE_NOW\fR
A fixed clock (RFC 3339, UTC) for every time splice records: tests and replays.
.TP
\fBSPLICE_HOLDER\fR
The holder a command acts as (a claim's holder); a dispatched agent's can only narrow its claim's.
.TP
\fBSPLICE_SANDBOX\fR
\fBoff\fR in a runner's environment runs that run's dispatches unsandboxed (docs/security.md).
.TP
\fBSPLICE_DISPATCHED\fR, \fBSPLICE_CREDENTIAL\fR, \fBSPLICE_PROPOSALS\fR, \fBSPLICE_INBOX\fR
Set by the runner for the agents it dispatches (docs/agents.md); they can only narrow what a caller may do, never widen it.
.TP
\fBNO_COLOR\fR
The cockpit (\fBsplice drive\fR) draws without colour.
.TP
\fBPATH\fR
Where agent, critic and forge commands are looked up.
"#,
    r#".SH FILES
.TP
\fI.splice/config.toml\fR
Project settings (agent command, limits, prices, autonomy, delivery, sandbox, [bd]); every key typed when it loads.
.TP
\fI.splice/manifest.json\fR
The pipeline, replacing the built\-in one.
.TP
\fI.splice/beads/<id>.json\fR, \fI.splice/journal.jsonl\fR, \fI.splice/journal/\fR (its closed segments)
The state: one file a bead and the journal of every change; commit them.
.TP
\fI.splice/sync/bd.jsonl\fR
The base of \fBsplice sync bd\fR: commit it with the store.
.TP
\fI.splice/runs/\fR, \fI.splice/worktrees/\fR, \fI.splice/cache/\fR, \fI.splice/lock\fR
Run logs, the agents' checkouts, the derived cache and the writer's lock; ignored by git.
.SH "SEE ALSO"
The README, docs/cli.md (output, exit codes, event schemas), docs/security.md, docs/agents.md, docs/manifest.md, docs/bd\-interop.md.
"#
);

/// The sections of a command's page after clap's.
const COMMAND_SECTIONS: &str = r#".SH "EXIT STATUS"
\fB0\fR: it ran; \fB1\fR: refused (the reason on stderr, nothing written); \fB2\fR: a fault of the machinery or the input, or a usage error. This command's own cases, and the codes some commands add, are in docs/cli.md, "Exit codes", and \fBsplice\fR(1).
.SH ENVIRONMENT
\fBSPLICE_DIR\fR, \fBSPLICE_NOW\fR, \fBSPLICE_HOLDER\fR: as in \fBsplice\fR(1).
.SH FILES
The state directory \fI.splice/\fR, as in \fBsplice\fR(1).
.SH "SEE ALSO"
\fBsplice\fR(1), docs/cli.md.
"#;

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
