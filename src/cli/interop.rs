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
use crate::transition::sync::{self, Take};
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

/// Keep another tool's file and the store in step.
#[derive(clap::Args, Debug)]
pub struct SyncArgs {
    #[command(subcommand)]
    pub with: SyncWith,
}

#[derive(Subcommand, Debug)]
pub enum SyncWith {
    /// A bd or br `issues.jsonl` and the store, both ways: what bd changed since the last sync
    /// goes into the store, what splice changed goes into the file, and a field both changed is
    /// a conflict, reported and left as each side has it (exit 3) until the sides agree or
    /// `--take` settles it. The last synced state is kept in `.splice/sync/bd.jsonl` (commit it
    /// with the store). A claimed bead takes nothing from bd until its claim ends; on a started
    /// bead, status, close fields and parent are its route's.
    #[command(
        after_help = "Examples:\n  splice sync bd\n  splice sync bd --dry-run --json\n  \
                            splice sync bd --path other/issues.jsonl --take splice"
    )]
    Bd(SyncBd),
}

#[derive(clap::Args, Debug)]
pub struct SyncBd {
    /// The bd file, relative to the current directory (default: `.beads/issues.jsonl` beside
    /// the store's `.splice/`). It must exist: `splice export bd -o FILE` writes a first one.
    #[arg(long, value_name = "FILE")]
    pub path: Option<PathBuf>,
    /// Settle every conflict for one side: `bd` (the file's value goes into the store; never a
    /// started bead's route fields) or `splice` (the store's value goes into the file).
    #[arg(long, value_enum, value_name = "SIDE")]
    pub take: Option<SideArg>,
    /// Say what a sync would do; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `--take`'s values.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum SideArg {
    Bd,
    Splice,
}

pub fn sync(args: SyncArgs, global: &Global) -> Result<i32> {
    let SyncWith::Bd(args) = args.with;
    let store = Store::discover(global.dir.as_deref())?;
    let path = match &args.path {
        Some(p) => p.clone(),
        None => store
            .dir()
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join(".beads/issues.jsonl"),
    };
    let shown = match &args.path {
        Some(p) => p.display().to_string(),
        None => ".beads/issues.jsonl".to_string(),
    };
    let take = args.take.map(|t| match t {
        SideArg::Bd => Take::Bd,
        SideArg::Splice => Take::Splice,
    });
    let now = crate::clock::now_string()?;
    let ctx = Ctx::command_line(&store, now);
    let report = if args.dry_run {
        sync::dry_run(&ctx, &path, &shown, take)
    } else {
        sync::sync(&ctx, &path, &shown, take)
    };
    output::report_repairs(&store);
    let report = report?;
    if args.json {
        output::print_json(&report);
    } else {
        output::out(&describe_sync(&report));
    }
    Ok(if report.left_over() { 3 } else { 0 })
}

/// The sync's report in words: the counts, then a line for each issue that moved, each
/// conflict, each held bead and each line not taken (what they quote escaped).
fn describe_sync(r: &sync::Report) -> String {
    let open = r.conflicts.iter().filter(|c| c.taken.is_none()).count();
    let mut out = format!(
        "{}{}: {} record(s): {} to splice, {} to bd, {} in step, {} conflict(s), {} held, {} \
         line(s) not taken\n",
        if r.dry_run { "(dry run) " } else { "" },
        r.file,
        r.records,
        r.to_splice.len(),
        r.to_bd.len(),
        r.unchanged,
        open,
        r.held.len(),
        r.problems.len()
    );
    let fields = |f: &[String]| match f {
        [] => String::new(),
        f => format!(": {}", f.join(", ")),
    };
    for m in &r.to_splice {
        out.push_str(&format!(
            "  bd → splice {} {}{}\n",
            m.change,
            m.id,
            fields(&m.fields)
        ));
    }
    for m in &r.to_bd {
        out.push_str(&format!(
            "  splice → bd {} {}{}\n",
            m.change,
            m.id,
            fields(&m.fields)
        ));
    }
    let value = |v: &Option<serde_json::Value>| match v {
        None => "(none)".to_string(),
        Some(v) => {
            let text = v.to_string();
            let cut: String = text.chars().take(80).collect();
            let more = if cut.len() < text.len() { "…" } else { "" };
            format!("{}{more}", output::printable(&cut))
        }
    };
    for c in &r.conflicts {
        let what = c.field.as_deref().unwrap_or("the record");
        let head = match c.taken {
            Some(Take::Bd) => "settled for bd",
            Some(Take::Splice) => "settled for splice",
            None => "conflict",
        };
        out.push_str(&format!("  {head} {} {what}: {}\n", c.id, c.why));
        if c.field.is_some() {
            out.push_str(&format!(
                "    base {}  bd {}  splice {}\n",
                value(&c.base),
                value(&c.bd),
                value(&c.splice)
            ));
        }
    }
    for h in &r.held {
        out.push_str(&format!(
            "  held {} (claimed by {}): bd's {} taken when the claim ends\n",
            h.id,
            output::printable(&h.holder),
            h.fields.join(", ")
        ));
    }
    for p in &r.problems {
        let id = p.id.as_deref().map(|i| format!(" {i}")).unwrap_or_default();
        out.push_str(&format!(
            "  line {}{id}: {} (kept as it is)\n",
            p.line,
            output::printable(&p.problem)
        ));
    }
    if open > 0 {
        out.push_str(
            "  a conflict stays until both sides agree (`splice update`, `bd update`) or \
             `--take bd|splice` settles it\n",
        );
    }
    out
}
