//! `splice drive`: the interactive cockpit ([`crate::drive`]).

use std::io::IsTerminal;

use super::Global;
use crate::error::Result;
use crate::store::Store;
use crate::transition::authority::{self, Verb, Who};

/// The cockpit: a full-screen view of the scope's tree, the selected node's detail and the log
/// of its dispatch in flight, with keys to start or stop a run, run one pass, approve or reject a
/// gate, clear a dead holder's claim, unpark, guide, and open an artifact (`?` lists them). It
/// follows the journal and the newest run's events, so it also watches a run started in another
/// terminal. Exits 0 when left with `q`; 1 for a dispatched session (it is a person's command);
/// 2 when stdout is not a terminal (`splice status` reads the state and `splice run` drives it
/// without one).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only this bead's tree (the bead and its descendants).
    #[arg(long, value_name = "ID")]
    pub scope: Option<String>,
    /// Dispatches in flight at once in a run started here (default: `[limits] jobs`, else 1);
    /// at least 1.
    #[arg(long, value_name = "J", value_parser = crate::model::config::parse_jobs)]
    pub jobs: Option<u32>,
    /// No cockpit: print the state it would open on, as `splice status --json` does (one JSON
    /// object; no terminal needed), and exit.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, global: &Global) -> Result<i32> {
    let store = Store::discover(global.dir.as_deref())?;
    let who = Who::command_line(store.dir());
    authority::admit(Verb::Drive, &who)?;
    if args.json {
        let status = super::status::Args {
            scope: args.scope,
            json: true,
            color: super::status::Color::Never,
        };
        return super::status::run(global, status);
    }
    if !std::io::stdout().is_terminal() {
        super::output::err(
            "splice: drive needs a terminal (stdout is not one); \
             use `splice status` to read the state and `splice run` to drive it\n",
        );
        return Ok(2);
    }
    let opts = crate::drive::app::Opts {
        scope: args.scope,
        jobs: args.jobs,
        who,
    };
    crate::drive::app::drive(&store, opts)?;
    super::output::report_repairs(&store);
    Ok(0)
}
