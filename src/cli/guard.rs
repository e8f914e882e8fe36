//! `splice guard`: the Claude Code `PreToolUse` hook (`crate::guard` judges; this file reads
//! stdin and prints). It always exits 0: Claude Code reads exit 2 as "block", so a fault of the
//! guard — input it cannot read, a bug, a panic — must never look like one. A denial is the hook
//! JSON on stdout; a fault allows the call and says so on stderr.

use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::args::JsonAlias;
use super::{Global, output};
use crate::error::Result;
use crate::guard::{self, Context, Decision};

/// Read at most this much of stdin (a Write tool's content rides along in the input).
const MAX_INPUT: u64 = 64 << 20;

/// Judge one tool call. Reads Claude Code's hook JSON on stdin; prints nothing to allow, or the
/// `PreToolUse` deny decision (JSON) on stdout; always exits 0.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub json: JsonAlias,
}

/// Run the hook: judge, print, exit 0 whatever happens.
pub fn run(_args: Args, global: &Global) -> Result<i32> {
    judge_and_report(global);
    Ok(0)
}

/// `splice guard` with no option, as hooks register it: the same, without clap (`main.rs`).
/// Returns the exit code, always 0.
pub fn hook() -> i32 {
    judge_and_report(&Global {
        dir: None,
        no_cache: false,
    });
    0
}

fn judge_and_report(global: &Global) {
    std::panic::set_hook(Box::new(|_| {}));
    let decision = catch_unwind(AssertUnwindSafe(|| decide(global))).unwrap_or_else(|p| {
        let why = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        Decision::Fault(format!("internal error: {why}"))
    });
    report(&decision);
}

fn decide(global: &Global) -> Decision {
    let mut bytes = Vec::new();
    if let Err(e) = std::io::stdin()
        .lock()
        .take(MAX_INPUT + 1)
        .read_to_end(&mut bytes)
    {
        return Decision::Fault(format!("stdin could not be read: {e}"));
    }
    if bytes.len() as u64 > MAX_INPUT {
        return Decision::Fault(format!("the input is larger than {MAX_INPUT} bytes"));
    }
    guard::judge_bytes(&bytes, |cwd| {
        Context::from_process(cwd, global.dir.as_deref())
    })
}

fn report(decision: &Decision) {
    match decision {
        Decision::Allow => {}
        Decision::Deny(reason) => output::out(&format!("{}\n", guard::deny_json(reason))),
        Decision::Fault(why) => output::err(&format!(
            "splice guard: could not judge this call ({}); allowed\n",
            output::printable(why)
        )),
    }
}

/// The command line did not parse. For `splice guard …` that is a fault of the hook's setup, not
/// a decision: say so and allow (exit 0); anything else exits as clap says.
pub fn parse_failed(e: clap::Error) -> ! {
    let guard = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .as_deref()
        == Some("guard");
    if guard && e.use_stderr() {
        output::err(&format!(
            "splice guard: could not judge this call (bad arguments: {}); allowed\n",
            e.kind()
        ));
        std::process::exit(0);
    }
    e.exit()
}
