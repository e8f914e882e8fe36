//! `suite`: one green run of the root's `suite_cmd` (via `sh -c`) in a detached checkout of the
//! integration target's tip, where the children's work landed. Exit 0 passes; the output's tail
//! is the evidence. Unset `suite_cmd` or `test_paths` escalates: missing configuration is not
//! incomplete work.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Ctx, Floor, OUTPUT_CAP, Outcome, tail, timeout_for};
use crate::model::manifest::{FloorKind, FloorSpec};
use crate::process::Exit;
use crate::worktree::TargetCheckout;

pub struct Suite;

const KIND: FloorKind = FloorKind::Suite;

/// How much of the suite's output is kept as evidence.
const TAIL_BYTES: usize = 4000;

impl Floor for Suite {
    fn check(&self, spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        let root = &ctx.root().pipeline;
        let mut unset = Vec::new();
        if root
            .suite_cmd
            .as_deref()
            .is_none_or(|c| c.trim().is_empty())
        {
            unset.push("suite_cmd");
        }
        if root.test_paths.is_empty() {
            unset.push("test_paths");
        }
        if !unset.is_empty() {
            return Outcome::escalate(
                KIND,
                format!(
                    "{} unset on the campaign root {}: missing configuration is not incomplete work; run `splice transition set-config`",
                    unset.join(" and "),
                    ctx.root().id
                ),
                json!({ "unset": unset }),
            );
        }
        let cmd = root.suite_cmd.as_deref().unwrap_or_default().to_string();
        let checkout = match ctx.target_checkout() {
            Ok(c) => c,
            Err(reason) => {
                return Outcome::escalate(
                    KIND,
                    format!("cannot check out the integration target: {reason}"),
                    json!({ "suite_cmd": cmd }),
                );
            }
        };
        let argv = vec!["sh".to_string(), "-c".to_string(), cmd.to_string()];
        let timeout = timeout_for(spec, ctx.step.timeout_s);
        let ran = match ctx.run_floor(
            &argv,
            &checkout.path,
            &[("SPLICE_BEAD", &ctx.bead.id)],
            timeout,
            OUTPUT_CAP,
        ) {
            Ok(r) => r,
            Err(e) => {
                return Outcome::escalate(
                    KIND,
                    format!("cannot run the suite: {e}"),
                    json!({ "suite_cmd": cmd }),
                );
            }
        };
        let evidence = json!({
            "suite_cmd": cmd,
            "read_in": checkout.path,
            "target": checkout.target,
            "tip": checkout.tip,
            "exit_code": ran.code(),
            "timed_out": ran.timed_out(),
            "output_tail": tail(&ran.combined(), TAIL_BYTES),
        });
        verdict(&cmd, &checkout, &ran.ran.exit, timeout, evidence)
    }
}

fn verdict(
    cmd: &str,
    checkout: &TargetCheckout,
    exit: &Exit,
    timeout: Duration,
    evidence: Value,
) -> Outcome {
    match exit {
        Exit::Code(0) => Outcome::pass(
            KIND,
            format!("`{cmd}` passed on {} at {}", checkout.target, checkout.tip),
            evidence,
        ),
        Exit::TimedOut => Outcome::refuse(
            KIND,
            format!("`{cmd}` ran past {}s and was killed", timeout.as_secs()),
            evidence,
        ),
        Exit::Code(code) => Outcome::refuse(
            KIND,
            format!("`{cmd}` exited {code} on {}", checkout.target),
            evidence,
        ),
        Exit::Signal(s) => {
            Outcome::refuse(KIND, format!("`{cmd}` was killed by signal {s}"), evidence)
        }
        other => Outcome::refuse(KIND, format!("`{cmd}` ended: {other:?}"), evidence),
    }
}
