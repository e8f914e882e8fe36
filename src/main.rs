//! The `splice` binary: parse, run, map the error to the exit code (DESIGN §5).

use clap::Parser;

fn main() {
    // `splice guard` runs before every tool call of a guarded session: the plain form skips
    // building the whole command line parser (most of its start-up cost).
    if std::env::args_os().skip(1).eq(["guard"]) {
        std::process::exit(splice::cli::guard::hook());
    }
    let cli = splice::cli::Cli::try_parse().unwrap_or_else(|e| splice::cli::guard::parse_failed(e));
    let code = match splice::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            splice::cli::output::err(&format!("splice: {e}\n"));
            e.exit_code()
        }
    };
    // A command whose output could not be written (not a closed pipe: `docs/cli.md`, "Output")
    // did not do what it was asked, though what it changed stands.
    let code = match splice::stdio::lost() {
        Some(why) if code == 0 => {
            splice::cli::output::err(&format!(
                "splice: stdout: {why}: the output is incomplete\n"
            ));
            2
        }
        _ => code,
    };
    std::process::exit(code);
}
