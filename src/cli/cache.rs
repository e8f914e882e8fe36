//! `splice cache rebuild`: read every bead file and write the derived snapshot cache,
//! `.splice/cache/beads` (`docs/architecture.md`, "State on disk"). Read-only in the actor
//! table: it writes only that derived file, which any read may rebuild.

use clap::Subcommand;
use serde::Serialize;

use super::{Global, output};
use crate::error::Result;
use crate::store::Store;

/// The derived snapshot cache.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Subcommand, Debug)]
pub enum Action {
    /// Read every bead file (the cache unused) and write the cache anew.
    Rebuild(RebuildArgs),
}

#[derive(clap::Args, Debug)]
pub struct RebuildArgs {
    /// Print JSON: `{"schema_version", "path", "beads", "bytes"}`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize, Debug)]
struct Rebuilt {
    schema_version: u32,
    /// The cache file, relative to the repository root.
    path: String,
    /// The beads it holds (a file that cannot be read is not cached: every read reads it).
    beads: usize,
    bytes: u64,
}

pub fn run(global: &Global, args: Args) -> Result<i32> {
    let Action::Rebuild(args) = args.action;
    let store = Store::discover(global.dir.as_deref())?;
    let done = store.rebuild_cache()?;
    let path = store
        .cache_path()
        .strip_prefix(store.repo())
        .map_or_else(|_| store.cache_path(), |p| p.to_path_buf())
        .display()
        .to_string();
    let out = Rebuilt {
        schema_version: output::OUTPUT_SCHEMA,
        path,
        beads: done.beads,
        bytes: done.bytes,
    };
    if args.json {
        output::print_json(&out);
    } else {
        output::out(&format!(
            "cache rebuilt: {} beads, {} bytes in {}\n",
            out.beads, out.bytes, out.path
        ));
    }
    Ok(0)
}
