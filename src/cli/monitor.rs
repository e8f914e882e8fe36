//! `splice monitor --trajectory FILE`: replay a loop step's trajectory through the pure pass
//! monitor (`policy::monitor`), like `splice decide --snapshot` for the decide core.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::model::trajectory::{MonitorInput, TrajectoryFile};
use crate::policy::monitor::report;

use super::Global;

/// Print the monitor's decision for a saved trajectory; identical output every run.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The trajectory JSON (`-` for stdin): `{"schema_version", "settings", "budget",
    /// "trajectory"}`, as `docs/monitor.md` describes it.
    #[arg(long, value_name = "FILE")]
    pub trajectory: PathBuf,
    /// Compare with this expected decision instead of printing: exit 1 with a line diff if it
    /// differs.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    #[command(flatten)]
    pub json: super::args::JsonAlias,
}

pub fn run(_global: &Global, args: Args) -> Result<i32> {
    // Read-only (`Verb::Monitor`): it reads one file and no state directory, so there is no
    // caller to admit.
    let input = read_trajectory(&args.trajectory)?;
    let actual = report(&input).to_pretty_json();
    super::decide::print_or_expect(
        "the monitor's decision",
        &args.trajectory,
        args.expect.as_deref(),
        &actual,
    )
}

/// Read and check a trajectory file, or stdin for `-`; a bad one names the file and the JSON
/// path.
pub fn read_trajectory(path: &Path) -> Result<MonitorInput> {
    let (text, name) = super::decide::read_input(path)?;
    TrajectoryFile::parse(&text)
        .map_err(|e| Error::bad_file(&name, format!("not a splice trajectory: {e}")))
}
