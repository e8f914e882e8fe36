//! `splice import bd FILE` and `splice export bd [-o FILE]`: bd and br's `issues.jsonl`
//! (`docs/bd-interop.md`).

use std::path::PathBuf;

use clap::Subcommand;

use super::{Global, output};
use crate::error::{Error, Result};
use crate::model::bd;
use crate::store::{Store, atomic};
use crate::transition::authority::{self, Verb, Who};
use crate::transition::import::{self, Report};
use crate::transition::{Ctx, create};

/// Import from another tool's export.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub from: ImportFrom,
}

#[derive(Subcommand, Debug)]
pub enum ImportFrom {
    /// A bd or br `issues.jsonl` export (one JSON object a line), as plain beads: decide and
    /// `splice status` pass them by until `splice start ID` puts one on a route. One journaled
    /// batch; importing the same file again writes nothing.
    Bd(ImportBd),
}

#[derive(clap::Args, Debug)]
pub struct ImportBd {
    /// The export to read (e.g. `.beads/issues.jsonl`).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Import nothing if any record has a problem (without it: the good records are imported
    /// and the others listed, exit 3).
    #[arg(long)]
    pub strict: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Export to another tool's format.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    #[command(subcommand)]
    pub to: ExportTo,
}

#[derive(Subcommand, Debug)]
pub enum ExportTo {
    /// Every bead as a line of a bd `issues.jsonl` (an imported bead gives back the keys its
    /// record had, and what splice changed: status, close fields, updated_at).
    Bd(ExportBd),
}

#[derive(clap::Args, Debug)]
pub struct ExportBd {
    /// Write the export to FILE (atomically: a temporary file, then a rename) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Add splice's `pipeline` object to each record (an import never reads it back).
    #[arg(long)]
    pub with_pipeline: bool,
    #[command(flatten)]
    pub json: super::args::JsonAlias,
}

pub fn import(args: ImportArgs, global: &Global) -> Result<i32> {
    let ImportFrom::Bd(args) = args.from;
    let store = Store::open_or_plan(global.dir.as_deref())?;
    create::admit_creation(&store, Verb::ImportBd)?;
    let shown = args.file.display().to_string();
    let bytes = crate::safe_read::read(&args.file, crate::safe_read::INPUT)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| Error::bad_file(&args.file, format!("not UTF-8: {e}")))?;
    let store = Store::open_or_create(global.dir.as_deref())?;
    let now = crate::clock::now_string()?;
    let ctx = Ctx::command_line(&store, now);
    let report = import::import(&ctx, &shown, &text, args.strict);
    output::report_repairs(&store);
    let report = report?;
    if args.json {
        output::print_json(&report);
    } else {
        output::out(&describe(&report));
    }
    Ok(if report.problems.is_empty() { 0 } else { 3 })
}

/// The report in words: the counts, then each merge and each problem on a line of its own (what
/// they quote from the file or the store escaped).
fn describe(r: &Report) -> String {
    let mut out = format!(
        "{}: {} record(s): {} created, {} updated, {} merged, {} unchanged, {} not imported\n",
        r.file,
        r.records,
        r.created.len(),
        r.updated.len(),
        r.merged.len(),
        r.unchanged,
        r.problems.len()
    );
    for m in &r.merged {
        out.push_str(&format!(
            "  merged {} (line {}): {}\n",
            m.id,
            m.line,
            output::printable(&m.note)
        ));
    }
    for d in &r.dangling {
        out.push_str(&format!(
            "  line {} {}: kept its {} dependency on {}: {}\n",
            d.line,
            d.id,
            output::printable(&d.dep_type),
            crate::model::id::shown(&d.depends_on),
            d.note
        ));
    }
    for p in r.ignored.iter().chain(&r.problems) {
        let id = p.id.as_deref().map(|i| format!(" {i}")).unwrap_or_default();
        let text = output::printable(&p.problem);
        out.push_str(&format!("  line {}{id}: {text}\n", p.line));
    }
    out
}

pub fn export(args: ExportArgs, global: &Global) -> Result<i32> {
    let ExportTo::Bd(args) = args.to;
    let store = Store::discover(global.dir.as_deref())?;
    authority::admit(Verb::ExportBd, &Who::command_line(store.dir()))?;
    let scan = store.scan()?;
    // Every bead or none: an export that left one out would lose it on the way back.
    if let Some(u) = scan.unreadable.into_iter().next() {
        return Err(u.error);
    }
    let text = bd::export(&scan.beads, args.with_pipeline);
    match &args.output {
        Some(path) => atomic::replace_file(path, text.as_bytes())?,
        None => output::out(&text),
    }
    Ok(0)
}
