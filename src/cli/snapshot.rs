//! `splice snapshot`: the snapshot JSON a pass would decide from, on stdout.

use std::io::Write;

use crate::driver::snapshot::{self, Identity};
use crate::error::{Error, Result};
use crate::store::Store;

use super::Global;

/// Print the snapshot JSON (manifest, beads in scope, worktrees, time, holder, limits).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only this bead and its descendants.
    #[arg(long, value_name = "ID")]
    pub scope: Option<String>,
    /// The runner's holder identity. Default: $SPLICE_HOLDER, else `snapshot`.
    #[arg(long, value_name = "H", env = "SPLICE_HOLDER")]
    pub holder: Option<String>,
    /// The run id. Default: $SPLICE_RUN, else `snapshot`.
    #[arg(long, value_name = "R", env = "SPLICE_RUN")]
    pub run: Option<String>,
    /// Indent the JSON for reading (the default is one compact line, for machines).
    #[arg(long)]
    pub pretty: bool,
    #[command(flatten)]
    pub json: super::args::JsonAlias,
}

/// The snapshot as printed: `schema_version` first, then the snapshot's fields (its older
/// `version` among them, kept for readers that know it).
#[derive(serde::Serialize)]
struct Versioned<'a> {
    schema_version: u32,
    #[serde(flatten)]
    snapshot: &'a crate::model::Snapshot,
}

/// The identity a read-only command decides as.
pub fn identity(holder: Option<String>, run: Option<String>) -> Identity {
    let or_default = |v: Option<String>| v.filter(|s| !s.is_empty()).unwrap_or("snapshot".into());
    Identity {
        holder: or_default(holder),
        run: or_default(run),
    }
}

pub fn run(global: &Global, args: Args) -> Result<i32> {
    let store = Store::discover(global.dir.as_deref())?;
    let snap = snapshot::build(
        &store,
        args.scope.as_deref(),
        identity(args.holder, args.run),
    )?;
    // Streamed: a campaign's snapshot runs to megabytes.
    let mut out = super::output::stdout();
    let printed = Versioned {
        schema_version: crate::model::snapshot::SNAPSHOT_VERSION,
        snapshot: &snap,
    };
    let written = if args.pretty {
        serde_json::to_writer_pretty(&mut out, &printed)
    } else {
        serde_json::to_writer(&mut out, &printed)
    };
    written
        .map_err(std::io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("<stdout>", e))?;
    // The process exits next: freeing every bead one by one (100,000 in a big campaign) would
    // cost about a tenth of the command's time for nothing.
    std::mem::forget(snap);
    Ok(0)
}
