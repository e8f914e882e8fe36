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
    std::process::exit(code);
}
