//! `splice monitor --trajectory FILE`: replay a loop step's trajectory through the pure pass
//! monitor (`policy::monitor`), like `splice decide --snapshot` for the decide core.

use std::io::{Read, Write};
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
    let Some(expect) = args.expect else {
        let mut out = std::io::stdout().lock();
        out.write_all(actual.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| Error::io("<stdout>", e))?;
        return Ok(0);
    };
    let expected = std::fs::read_to_string(&expect).map_err(|e| Error::io(&expect, e))?;
    if expected == actual {
        return Ok(0);
    }
    super::output::err(&format!(
        "splice: the monitor's decision for {} differs from {} (- expected, + actual):\n{}",
        args.trajectory.display(),
        expect.display(),
        super::decide::line_diff(&expected, &actual)
    ));
    Ok(1)
}

/// Read and check a trajectory file, or stdin for `-`; a bad one names the file and the JSON
/// path.
pub fn read_trajectory(path: &Path) -> Result<MonitorInput> {
    let (text, name) = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Error::io("<stdin>", e))?;
        (text, PathBuf::from("<stdin>"))
    } else {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        (text, path.to_path_buf())
    };
    TrajectoryFile::parse(&text)
        .map_err(|e| Error::bad_file(&name, format!("not a splice trajectory: {e}")))
}
