//! `splice status`'s text for a person: a status line, then one entry per row, each written as
//! it is made (a tree of 100,000 nodes is never one string).
//!
//! What a row holds from a bead file (its id, title, step, claim, the reason and the command
//! built from them) is escaped ([`printable`]): a newline in a title would fake a row, an
//! escape sequence would drive the terminal.

use std::io::{self, Write};

use crate::cli::output::printable;
use crate::model::RunStatus;

use super::{LoopRow, Row, UNREADABLE};

/// ANSI styles, or none.
#[derive(Clone, Copy)]
pub(super) struct Paint(pub bool);

impl Paint {
    fn wrap(self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    fn bold(self, text: &str) -> String {
        self.wrap("1", text)
    }
    fn dim(self, text: &str) -> String {
        self.wrap("2", text)
    }
    fn status(self, status: RunStatus) -> String {
        let code = match status {
            RunStatus::Done | RunStatus::Idle => "32",
            RunStatus::Ready => "36",
            RunStatus::Escalated | RunStatus::Stalled => "31",
            _ => "33",
        };
        self.wrap(&format!("1;{code}"), status.as_str())
    }
}

/// The status line (`headline`: [`crate::driver::advice::headline`]), then each row as it comes.
pub(super) fn write<'a>(
    out: &mut impl Write,
    (status, headline): (RunStatus, &str),
    rows: impl Iterator<Item = Row<'a>>,
    paint: Paint,
) -> io::Result<()> {
    writeln!(
        out,
        "status: {} — {}",
        paint.status(status),
        printable(headline)
    )?;
    for r in rows {
        row(out, &r, paint)?;
    }
    Ok(())
}

/// The last line: what every node shown used (nothing when none has dispatched).
pub(super) fn total(out: &mut impl Write, usage: Option<&crate::model::Usage>) -> io::Result<()> {
    match usage {
        Some(u) => writeln!(out, "used: {}", u.summary()),
        None => Ok(()),
    }
}

fn row(out: &mut impl Write, r: &Row, paint: Paint) -> io::Result<()> {
    let indent = "  ".repeat(r.depth);
    if r.status == UNREADABLE {
        return writeln!(
            out,
            "{indent}{}  {} {}",
            paint.bold(&printable(r.id)),
            paint.dim(&format!("({UNREADABLE}, escalated):")),
            printable(&r.next.text)
        );
    }
    let (id, title) = (printable(r.id), printable(r.title));
    if r.status == "closed" {
        let how = if r.cancelled { "cancelled" } else { "closed" };
        let used = r
            .usage
            .map(|u| format!(", {}", u.summary()))
            .unwrap_or_default();
        let line = paint.dim(&format!("{indent}{id} {title} ({how}{used})"));
        return writeln!(out, "{line}");
    }
    let mut facts = vec![r.kind.to_string(), printable(r.step)];
    match (&r.looping, r.max_attempts) {
        (Some(l), _) => facts.push(loop_facts(l)),
        (None, Some(max)) => facts.push(format!("attempts {}/{max}", r.attempts)),
        (None, None) => facts.push(format!("attempts {}", r.attempts)),
    }
    if let Some(l) = r.lease {
        facts.push(format!("claimed by {}", printable(&l.holder)));
    }
    if let Some(u) = r.usage {
        facts.push(u.summary());
    }
    if let Some(call) = r.calls.last() {
        facts.push(format!(
            "in a call from {}, returns to {}{}",
            printable(&call.step),
            printable(&call.return_to),
            match r.calls.len() {
                1 => String::new(),
                n => format!(" ({n} open)"),
            }
        ));
    }
    if r.floors_dir != "." {
        facts.push(format!("work in {}", printable(&r.floors_dir)));
    }
    writeln!(
        out,
        "{indent}{} {title}  {}\n{indent}    {}",
        paint.bold(&id),
        paint.dim(&format!("({})", facts.join(", "))),
        printable(&r.next.text)
    )?;
    if let Some(cmd) = r.next.command.as_deref().filter(|c| *c != "splice run") {
        writeln!(out, "{indent}    → {}", printable(cmd))?;
    }
    Ok(())
}

/// `iteration 3/5, scores 12 → 14 → -10, rollback (rolled_back)`; the recorded decision and
/// command escaped.
fn loop_facts(l: &LoopRow) -> String {
    let mut out = format!("iteration {}/{}", l.iterations, l.max_iterations);
    if !l.scores.is_empty() {
        let scores: Vec<String> = l
            .scores
            .iter()
            .map(|s| s.map_or("×".to_string(), |s| s.to_string()))
            .collect();
        out.push_str(&format!(", scores {}", scores.join(" → ")));
    }
    if let Some(d) = &l.decision {
        out.push_str(&format!(", monitor {}", printable(d)));
        if let Some(e) = l.effect {
            out.push_str(&format!(" ({e})"));
        }
    }
    if let Some(cmd) = &l.escalated_to {
        out.push_str(&format!(", escalated to `{}`", printable(&cmd.join(" "))));
    }
    if !l.stages.is_empty() {
        let stages: Vec<String> = l
            .stages
            .iter()
            .map(|s| {
                format!(
                    "{} `{}` {}",
                    s.stage,
                    printable(&s.tool),
                    printable(&s.status)
                )
            })
            .collect();
        out.push_str(&format!("; stages: {}", stages.join(", ")));
    }
    out
}
