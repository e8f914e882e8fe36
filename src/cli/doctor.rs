//! `splice doctor [--json]`: read-only checks of the repository, the targets, the agent, the
//! config and manifest, claims, worktrees, the journal and the hooks ([`crate::doctor`]), each
//! finding with its severity and what fixes it. Exit 0 when nothing needs a person (warnings
//! allowed), 1 when something does. It never takes the lock or writes.

use super::{Global, output};
use crate::doctor::{self, Report, Severity};
use crate::error::Result;

/// `splice doctor`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, global: &Global) -> Result<i32> {
    let report = doctor::run(global.dir.as_deref());
    if args.json {
        output::print_json(&report);
    } else {
        output::out(&text(&report));
    }
    Ok(i32::from(report.needs_person))
}

/// One line per finding (`severity check: message`), its fix indented below; then a summary.
/// A message and a fix name files and quote what they hold (a loader's message, a claim's
/// holder): escaped ([`output::printable_message`]).
fn text(report: &Report) -> String {
    let mut out = String::new();
    for f in &report.findings {
        out.push_str(&format!(
            "{:<12} {}: {}\n",
            f.severity.name(),
            f.check,
            output::printable_message(&f.message)
        ));
        if let Some(fix) = &f.fix {
            let fix = output::printable_message(fix);
            out.push_str(&format!("{:<12} fix: {fix}\n", ""));
        }
    }
    let count = |s: Severity| report.findings.iter().filter(|f| f.severity == s).count();
    let (needs, warns) = (count(Severity::NeedsPerson), count(Severity::Warn));
    out.push_str(&match (needs, warns) {
        (0, 0) => "doctor: all checks passed\n".to_string(),
        (0, w) => format!("doctor: {w} warning(s), nothing needs a person\n"),
        (n, w) => format!("doctor: {n} finding(s) need a person, {w} warning(s)\n"),
    });
    out
}
