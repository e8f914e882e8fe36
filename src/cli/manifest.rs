//! `splice manifest show`: the effective manifest as JSON on stdout.

use super::{Global, output};
use crate::error::Result;
use crate::store::Store;
use crate::transition::authority::{self, Verb, Who};

/// Read the manifest a run goes by.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Print the effective manifest as JSON: `.splice/manifest.json`, else the default, with the
    /// config's `[agent.steps.<step>]` overrides (`timeout_s`, `max_attempts`, an argv step's
    /// `command`) merged in. What it prints loads as a `.splice/manifest.json`.
    Show {
        #[command(flatten)]
        json: super::args::JsonAlias,
    },
}

pub fn run(global: &Global, args: Args) -> Result<i32> {
    let store = Store::discover(global.dir.as_deref())?;
    authority::admit(Verb::Manifest, &Who::command_line(store.dir()))?;
    match args.command {
        Command::Show { .. } => output::print_json(&store.manifest()?),
    }
    Ok(0)
}
