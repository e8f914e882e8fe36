//! `command`: an acceptance fact. Runs `argv` in the workdir (bounded by `timeout_s`, else the
//! step's) and passes when it exits with `expect_exit` (default 0); the output's tail is the
//! evidence. A command that cannot be started escalates: splice cannot check, which is not the
//! same as the work being incomplete.

use serde_json::json;

use super::{Ctx, Floor, OUTPUT_CAP, Outcome, tail, timeout_for};
use crate::model::manifest::{FloorKind, FloorSpec};
use crate::process::Exit;

pub struct Command;

/// How much of the output is kept as evidence.
const TAIL_BYTES: usize = 2000;

impl Floor for Command {
    fn check(&self, spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        const KIND: FloorKind = FloorKind::Command;
        let argv = ctx.argv_param(spec);
        if argv.is_empty() {
            return Outcome::escalate(KIND, "the floor declares no `argv`", json!({}));
        }
        let expect = spec
            .params
            .get("expect_exit")
            .and_then(serde_json::Value::as_i64)
            .unwrap_or(0);
        let timeout = timeout_for(spec, ctx.step.timeout_s);
        let ran = match ctx.run_floor(
            &argv,
            &ctx.workdir,
            &[("SPLICE_BEAD", &ctx.bead.id)],
            timeout,
            OUTPUT_CAP,
        ) {
            Ok(r) => r,
            Err(e) => {
                return Outcome::escalate(
                    KIND,
                    format!("cannot run `{}`: {e}", argv[0]),
                    json!({ "argv": argv }),
                );
            }
        };
        let code = ran.code();
        let text = ran.combined();
        let evidence = json!({
            "argv": argv,
            "exit_code": code,
            "expected": expect,
            "output_tail": tail(&text, TAIL_BYTES),
        });
        if code.map(i64::from) == Some(expect) {
            Outcome::pass(
                KIND,
                format!("`{}` exited {expect}", argv.join(" ")),
                evidence,
            )
        } else {
            let got = match &ran.ran.exit {
                Exit::Code(c) => c.to_string(),
                Exit::TimedOut => format!("nothing: killed after {}s", timeout.as_secs()),
                Exit::Signal(s) => format!("nothing: killed by signal {s}"),
                other => format!("nothing: {other:?}"),
            };
            Outcome::refuse(
                KIND,
                format!("`{}` exited {got}, expected {expect}", argv.join(" ")),
                evidence,
            )
        }
    }
}
