//! Settings on nodes: `set-config` (suite command and test paths on the campaign root),
//! `set-autonomy`, `set-target`, and `route` (move a node to another route).

use std::collections::HashMap;

use serde_json::json;

use super::{Ctx, Outcome, ancestors, ancestors_unlocked, defaults, require_open, require_seq};
use crate::error::{Error, Result};
use crate::model::Autonomy;
use crate::model::bead::{DeliveryMethod, Kind, Verdict};
use crate::policy::Lineage;
use crate::policy::lineage::is_mainline;

/// Record `suite_cmd` and `test_paths` on the campaign root of `id`, and clear the last check of
/// every escalated node under that root so it is checked again.
pub fn set_config(
    ctx: &Ctx,
    id: &str,
    suite_cmd: Option<String>,
    test_paths: Option<Vec<String>>,
) -> Result<Outcome> {
    ctx.person_only("set-config")?;
    if suite_cmd.is_none() && test_paths.is_none() {
        return Err(Error::Invalid(
            "give --suite-cmd, --test-paths, or both".into(),
        ));
    }
    if let Some(paths) = &test_paths {
        for p in paths {
            let dir = ctx.store.repo().join(p);
            if !crate::floors::is_relative_inside(p) || !dir.is_dir() {
                return Err(Error::refused(format!(
                    "--test-paths {p:?} names no existing directory under {}",
                    ctx.store.repo().display()
                )));
            }
        }
    }
    // Which nodes of the tree are escalated: found without the lock, re-checked under it.
    let all = ctx.store.read_all()?;
    let target = ctx.store.read_bead(id)?;
    let root_id = ancestors_unlocked(ctx.store, &target)?
        .last()
        .map_or(target.id.clone(), |r| r.id.clone());
    let parents: HashMap<&str, Option<&str>> = all
        .iter()
        .map(|b| (b.id.as_str(), b.parent.as_deref()))
        .collect();
    let in_tree = |start: &str| {
        let mut node = Some(start);
        for _ in 0..1024 {
            match node {
                Some(n) if n == root_id => return true,
                Some(n) => node = parents.get(n).copied().flatten(),
                None => return false,
            }
        }
        false
    };
    let escalated: Vec<String> = all
        .iter()
        .filter(|b| b.id != root_id && in_tree(&b.id) && is_escalated(b))
        .map(|b| b.id.clone())
        .collect();
    ctx.store.transact("set-config", &ctx.actor(), |tx| {
        let bead = tx.read(id)?;
        let lineage = ancestors(tx, &bead)?;
        let mut root = lineage.last().cloned().unwrap_or(bead);
        let now = tx.now.clone();
        root.bump(&now);
        if let Some(cmd) = &suite_cmd {
            root.pipeline.suite_cmd = Some(cmd.clone());
        }
        if let Some(paths) = &test_paths {
            root.pipeline.test_paths = paths.clone();
        }
        let root_id = root.id.clone();
        let mut cleared = Vec::new();
        if is_escalated(&root) {
            root.pipeline.last_check = None;
            cleared.push(root_id.clone());
        }
        tx.put(root);
        for other in &escalated {
            let mut b = tx.read(other)?;
            if is_escalated(&b) {
                b.bump(&now);
                b.pipeline.last_check = None;
                cleared.push(b.id.clone());
                tx.put(b);
            }
        }
        tx.set_reason("suite_cmd/test_paths set".to_string());
        Ok(Outcome::ok(json!({
            "root": root_id, "suite_cmd": suite_cmd, "test_paths": test_paths, "rechecked": cleared,
        })))
    })
}

fn is_escalated(bead: &crate::model::Bead) -> bool {
    bead.pipeline
        .last_check
        .as_ref()
        .is_some_and(|c| c.verdict == Verdict::Escalate)
}

/// Set a node's own autonomy level.
pub fn set_autonomy(ctx: &Ctx, id: &str, level: Autonomy) -> Result<Outcome> {
    ctx.person_only("set-autonomy")?;
    ctx.store.transact("set-autonomy", &ctx.actor(), |tx| {
        let mut bead = tx.read(id)?;
        require_seq(&bead, ctx.expect_seq)?;
        let now = tx.now.clone();
        bead.bump(&now);
        bead.pipeline.autonomy = Some(level);
        tx.set_reason(format!("autonomy {}", level.as_str()));
        tx.put(bead);
        Ok(Outcome::ok(json!({ "bead": id, "autonomy": level })))
    })
}

/// Set where a node's work lands, and optionally how. `main` is refused at deep autonomy: deep
/// work lands on a campaign branch, and the final merge to main stays a person's job.
pub fn set_target(
    ctx: &Ctx,
    id: &str,
    target: &str,
    delivery: Option<DeliveryMethod>,
) -> Result<Outcome> {
    ctx.person_only("set-target")?;
    if target.trim().is_empty() {
        return Err(Error::Invalid("--target must name a branch".into()));
    }
    let config = ctx.store.config()?;
    ctx.store.transact("set-target", &ctx.actor(), |tx| {
        let mut bead = tx.read(id)?;
        require_seq(&bead, ctx.expect_seq)?;
        let ancestors = ancestors(tx, &bead)?;
        let lineage = Lineage::new(&ancestors, defaults(&config, &None));
        let (level, source) = lineage.autonomy(&bead);
        if level == Autonomy::Deep && is_mainline(target) {
            return Err(Error::refused(format!(
                "bead {id} runs at deep autonomy (from {}); deep work lands on a campaign branch, \
                 never on {target}",
                source.label()
            )));
        }
        let now = tx.now.clone();
        bead.bump(&now);
        bead.pipeline.target = Some(target.to_string());
        if delivery.is_some() {
            bead.pipeline.delivery = delivery;
        }
        tx.set_reason(format!("target {target}"));
        tx.put(bead);
        Ok(Outcome::ok(
            json!({ "bead": id, "target": target, "delivery": delivery }),
        ))
    })
}

/// Move a node onto route `to`, at step `at` (default: the route's entry step).
pub fn route(ctx: &Ctx, id: &str, to: &str, at: Option<&str>) -> Result<Outcome> {
    let manifest = ctx.store.manifest()?;
    let Some(steps) = manifest.route(to) else {
        return Err(Error::refused(format!(
            "unknown route {to:?} (the manifest has: {})",
            manifest
                .routes
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let step = match at {
        Some(s) if steps.iter().any(|x| x == s) => s.to_string(),
        Some(s) => return Err(Error::refused(format!("step {s:?} is not on route {to}"))),
        None => manifest.entry_step(to).unwrap_or(&steps[0]).to_string(),
    };
    ctx.store.transact("route", &ctx.actor(), |tx| {
        let mut bead = tx.read(id)?;
        require_open(&bead)?;
        require_seq(&bead, ctx.expect_seq)?;
        super::require_not_foreign(&bead, ctx.holder.as_deref())?;
        let now = tx.now.clone();
        let seq = bead.bump(&now);
        bead.pipeline.route = to.to_string();
        bead.pipeline.kind = Kind::for_route(to).unwrap_or(bead.pipeline.kind);
        bead.enter_step(&step, seq, &now);
        tx.set_reason(format!("routed to {to} at {step}"));
        tx.put(bead);
        Ok(Outcome::ok(
            json!({ "bead": id, "route": to, "step": step }),
        ))
    })
}
