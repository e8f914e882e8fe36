//! `command`: an acceptance fact. Runs `argv` in the workdir and passes when it exits with
//! `expect_exit` (default 0); the output's tail is the evidence. A command that cannot be
//! started escalates: splice cannot check, which is not the same as the work being incomplete.

use std::process::Command as Process;

use serde_json::json;

use super::{Ctx, Floor, Outcome, tail};
use crate::model::manifest::FloorSpec;

pub struct Command;

/// How much of the output is kept as evidence.
const TAIL_BYTES: usize = 2000;

impl Floor for Command {
    fn check(&self, spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        const KIND: &str = "command";
        let argv: Vec<String> = spec
            .list_param("argv")
            .iter()
            .map(|a| ctx.render(a))
            .collect();
        let Some((program, args)) = argv.split_first() else {
            return Outcome::escalate(KIND, "the floor declares no `argv`", json!({}));
        };
        let expect = spec
            .params
            .get("expect_exit")
            .and_then(serde_json::Value::as_i64)
            .unwrap_or(0);
        let output = match Process::new(program)
            .args(args)
            .current_dir(&ctx.workdir)
            .env("SPLICE_BEAD", &ctx.bead.id)
            .output()
        {
            Ok(o) => o,
            Err(e) => {
                return Outcome::escalate(
                    KIND,
                    format!("cannot run `{program}`: {e}"),
                    json!({ "argv": argv }),
                );
            }
        };
        let code = output.status.code();
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
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
            let got = code.map_or("by a signal".to_string(), |c| c.to_string());
            Outcome::refuse(
                KIND,
                format!("`{}` exited {got}, expected {expect}", argv.join(" ")),
                evidence,
            )
        }
    }
}
