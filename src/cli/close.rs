//! `splice close ID --reason R` and `splice cancel ID --reason R`: a person ends a bead (the work
//! was done another way; it will not be done). Who holds a claim, and whether they live, is the
//! runner's record of this host (`driver::runner::holder_alive`): the writer releases a claim
//! only of a runner known dead, or alive on this host (which kills its dispatch when it sees the
//! bead closed).

use super::args::JsonAlias;
use super::{Global, output};
use crate::error::Result;
use crate::store::Store;
use crate::transition::Ctx;
use crate::transition::close::{self, CloseArgs};

/// End one or more beads. Prints JSON: the beads ended and the claims released (several ids:
/// `{"schema_version", "beads": [one such object per id]}`).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The beads to end, each in its own transition, in order; the first refusal stops there.
    #[arg(value_name = "ID", required_unless_present = "bead")]
    pub ids: Vec<String>,
    /// A bead to end: the same as a positional ID (repeatable).
    #[arg(long, value_name = "ID")]
    pub bead: Vec<String>,
    /// Why: recorded as the bead's close reason and in the journal.
    #[arg(long)]
    pub reason: String,
    /// End its open descendants too (without it, a bead with open children is refused).
    #[arg(long)]
    pub recursive: bool,
    #[command(flatten)]
    pub json: JsonAlias,
}

/// `close` (`cancel` false) or `cancel`.
pub fn run(args: Args, global: &Global, cancel: bool) -> Result<i32> {
    let store = Store::discover(global.dir.as_deref())?;
    let now = crate::clock::now_string()?;
    let ctx = Ctx::command_line(&store, now);
    let what = CloseArgs {
        reason: &args.reason,
        cancel,
        recursive: args.recursive,
    };
    let alive = crate::driver::runner::holder_alive;
    let ids: Vec<&String> = args.ids.iter().chain(&args.bead).collect();
    if let [id] = ids[..] {
        return output::emit(&store, close::close(&ctx, id, what, &alive));
    }
    // Every id is looked at before any is closed: a typo closes nothing.
    for id in &ids {
        super::show::read_one(&store, id)?;
    }
    let mut done = Vec::new();
    let mut failed = None;
    for id in ids {
        match close::close(&ctx, id, what, &alive) {
            Ok(closed) => done.push(closed),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    output::report_repairs(&store);
    output::print_json(&serde_json::json!({
        "schema_version": output::OUTPUT_SCHEMA,
        "beads": done,
    }));
    match failed {
        Some(e) => Err(e),
        None => Ok(0),
    }
}
