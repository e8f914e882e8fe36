//! The pass envelope: the status and every open node's reason, written to
//! `.splice/runs/<run-id>/pass-NNNN.json` and, in compact form, recorded on the scope root
//! (`record-run`).

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{Value, json};

use super::act::{Acted, RunCtx};
use super::runner::holder_alive;
use crate::error::{Error, Result};
use crate::model::{Action, Decision, Rest, Snapshot};
use crate::transition::record;

/// The envelope of one pass. Closed nodes are counted, not listed, so it stays small.
pub fn build(
    snapshot: &Snapshot,
    decision: &Decision,
    pass: u64,
    acted: Vec<Value>,
    inflight: &BTreeMap<String, (String, u32, Instant)>,
) -> Value {
    let mut nodes = serde_json::Map::new();
    let mut reasons: BTreeMap<&str, u64> = BTreeMap::new();
    let mut closed = 0u64;
    for (id, node) in &decision.nodes {
        let reason = node.rest.as_ref().map_or("action", Rest::name);
        *reasons.entry(reason).or_default() += 1;
        if matches!(node.rest, Some(Rest::Closed)) {
            closed += 1;
            continue;
        }
        let mut entry = serde_json::to_value(node).unwrap_or(Value::Null);
        if let Some(Rest::Running { holder, .. }) = &node.rest
            && let Some(rest) = entry.get_mut("rest").and_then(Value::as_object_mut)
        {
            rest.insert("holder_alive".into(), json!(holder_alive(holder)));
        }
        nodes.insert(id.clone(), entry);
    }
    let in_flight: Vec<Value> = inflight
        .iter()
        .map(|(bead, (step, attempt, since))| {
            json!({ "bead": bead, "step": step, "attempt": attempt, "elapsed_s": since.elapsed().as_secs() })
        })
        .collect();
    json!({
        "run": snapshot.run,
        "holder": snapshot.holder,
        "pass": pass,
        "now": snapshot.now,
        "status": decision.status,
        "counters": snapshot.counters,
        "limits": snapshot.limits,
        "actions": acted,
        "in_flight": in_flight,
        "reasons": reasons,
        "closed": closed,
        "nodes": nodes,
    })
}

/// Write the pass file and record the compact envelope on the scope root (or the one top-level
/// bead when there is no scope and exactly one).
pub fn record(
    rc: &RunCtx,
    scope: Option<&str>,
    snapshot: &Snapshot,
    pass: u64,
    env: &Value,
) -> Result<()> {
    let dir = rc.store.runs_dir().join(&rc.run_id);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let path = dir.join(format!("pass-{pass:04}.json"));
    let mut text = serde_json::to_vec_pretty(env).unwrap_or_default();
    text.push(b'\n');
    std::fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
    let root = match scope {
        Some(s) => Some(s.to_string()),
        None => {
            let mut tops = snapshot.beads.iter().filter(|b| b.parent.is_none());
            match (tops.next(), tops.next()) {
                (Some(only), None) => Some(only.id.clone()),
                _ => None,
            }
        }
    };
    if let Some(root) = root {
        let compact = json!({
            "run": env["run"], "pass": pass, "status": env["status"], "at": env["now"],
            "actions": env["actions"].as_array().map_or(0, Vec::len), "reasons": env["reasons"],
            "envelope": path.strip_prefix(rc.store.dir()).unwrap_or(&path),
        });
        let ctx = crate::transition::Ctx {
            store: &rc.store,
            holder: Some(rc.holder.clone()),
            dispatched: false,
            run: Some(rc.run_id.clone()),
            expect_seq: None,
            now: crate::clock::now_string()?,
        };
        record::record_run(&ctx, &root, compact)?;
    }
    Ok(())
}

/// One line for a person about an action and how it went.
pub fn describe_action(action: &Action, result: &Acted) -> String {
    let what = match action {
        Action::Check { bead, step } => format!("check {bead} {step}"),
        Action::Dispatch {
            bead,
            step,
            attempt,
        } => format!("dispatch {bead} {step} (attempt {attempt})"),
        Action::Park { bead, step, reason } => format!("park {bead} at {step}: {reason}"),
        Action::CleanupFanout { bead, children } => {
            format!("clean up {} worktree(s) under {bead}", children.len())
        }
    };
    match result {
        Acted::Done(v) => match v.get("status").and_then(Value::as_str) {
            Some(s) => format!("{what}: {s}"),
            None => what,
        },
        Acted::Started { .. } => format!("{what}: started"),
        Acted::Skipped(why) => format!("{what}: skipped ({why})"),
    }
}

/// The final envelope for a person: the status and every open node's reason.
pub fn print_human(env: &Value) {
    println!("status: {}", env["status"].as_str().unwrap_or("?"));
    if let Some(nodes) = env["nodes"].as_object() {
        for (id, node) in nodes {
            let step = node["step"].as_str().unwrap_or("");
            let rest = &node["rest"];
            let reason = match rest["kind"].as_str() {
                None => env["actions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|a| a["bead"].as_str() == Some(id.as_str()))
                    .map_or("action".to_string(), |a| {
                        format!(
                            "{} ({})",
                            a["action"].as_str().unwrap_or("action"),
                            a["result"].as_str().unwrap_or("?")
                        )
                    }),
                Some(kind) => {
                    let detail: Vec<String> = rest
                        .as_object()
                        .into_iter()
                        .flatten()
                        .filter(|(k, _)| *k != "kind")
                        .map(|(k, v)| {
                            format!("{k}={}", v.as_str().map_or(v.to_string(), str::to_string))
                        })
                        .collect();
                    if detail.is_empty() {
                        kind.to_string()
                    } else {
                        format!("{kind} ({})", detail.join(", "))
                    }
                }
            };
            println!("  {id:<16} {step:<16} {reason}");
        }
    }
    if let Some(n) = env["closed"].as_u64().filter(|n| *n > 0) {
        println!("  ({n} closed)");
    }
}
