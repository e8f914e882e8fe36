//! `splice demo`: the example campaign driven to `done` in a scratch repository.

use std::path::PathBuf;

use super::Global;
use crate::demo::run::{demo, summary_table};
use crate::driver::events::{Output, out};
use crate::error::Result;
use crate::model::RunStatus;
use crate::store::Store;

/// Copy the example campaign (a tiny Rust crate, five scenarios, three leaves) into a scratch git
/// repository and drive it to `done` with the built-in simulated agent (`splice sim-agent`), which
/// does each step's real work: the PRP, the split, specs, code and tests named with scenario ids,
/// reviews at HEAD, merges into the campaign branch, the reconciliation. Planning gates wait for a
/// person; the demo approves them as the person and says so. Exits 0 when the campaign is done.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Build the scratch repository here (a missing or empty directory) instead of a temp dir.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// human: progress and a summary table; stream-json: the runner's events.
    #[arg(long, value_enum, default_value = "human")]
    pub output: Output,
}

pub fn run(args: Args, _global: &Global) -> Result<i32> {
    let result = demo(args.keep.as_deref(), args.output)?;
    let store = Store::discover(Some(&result.dir))?;
    if args.output == Output::Human {
        let dir = result.dir.display();
        out(&format!(
            "{}repository: {dir}\n  git -C {dir} log --oneline --graph campaign/calc\n  \
             splice --dir {dir} status\n",
            summary_table(&store, &result)?
        ));
    }
    Ok(if result.status == RunStatus::Done {
        0
    } else {
        1
    })
}
