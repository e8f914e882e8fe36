//! `splice close ID --reason R` and `splice cancel ID --reason R`: a person ends a bead (the work
//! was done another way; it will not be done). Who holds a claim, and whether they live, is the
//! runner's record of this host (`driver::runner::holder_alive`): the writer releases a claim
//! only of a runner known dead, or alive on this host (which kills its dispatch when it sees the
//! bead closed).

use super::args::{BeadId, JsonAlias};
use super::{Global, output};
use crate::error::Result;
use crate::store::Store;
use crate::transition::Ctx;
use crate::transition::close::{self, CloseArgs};

/// End a bead. Prints JSON: the beads ended and the claims released.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub bead: BeadId,
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
    output::emit(&store, close::close(&ctx, args.bead.id(), what, &alive))
}
