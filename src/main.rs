//! The `splice` binary: parse, run, map the error to the exit code (DESIGN §5).

use clap::Parser;

fn main() {
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
