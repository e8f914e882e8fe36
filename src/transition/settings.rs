//! Settings on nodes: `set-config` (suite command and test paths on the campaign root),
//! `set-autonomy`, `set-target`, and `route` (move a node to another route).

use std::collections::HashMap;

use serde::Serialize;

use super::{
    Caller, Ctx, Refusal, Verb, ancestors_unlocked, defaults, next_seq, require_not_foreign,
    require_open,
};
use crate::error::{Error, Result};
use crate::model::bead::{DeliveryMethod, Verdict};
use crate::model::{Autonomy, Bead, Manifest};
use crate::policy::Lineage;
use crate::policy::lineage::is_mainline;
use crate::store::{Change, Fresh, Reads};

/// What `set-config` records.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConfigArgs {
    pub suite_cmd: Option<String>,
    pub test_paths: Option<Vec<String>>,
}

/// The campaign root's new settings, and the nodes to be checked again.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Configured {
    pub root: String,
    pub suite_cmd: Option<String>,
    pub test_paths: Option<Vec<String>>,
    /// Escalated nodes whose last check was cleared.
    pub rechecked: Vec<String>,
}

/// A node's own autonomy level, set.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct AutonomySet {
    pub bead: String,
    pub autonomy: Autonomy,
}

/// A node's target (and delivery method), set.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct TargetSet {
    pub bead: String,
    pub target: String,
    pub delivery: Option<DeliveryMethod>,
}

/// A node moved to another route.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Routed {
    pub bead: String,
    pub route: String,
    pub step: String,
}

/// Record `suite_cmd` and `test_paths` on the campaign root of `id`, and clear the last check of
/// every escalated node under that root so it is checked again.
pub fn set_config(
    ctx: &Ctx,
    id: &str,
    suite_cmd: Option<String>,
    test_paths: Option<Vec<String>>,
) -> Result<Configured> {
    ctx.admit(Verb::SetConfig)?;
    if suite_cmd.is_none() && test_paths.is_none() {
        return Err(Error::Invalid(
            "give --suite-cmd, --test-paths, or both".into(),
        ));
    }
    for p in test_paths.iter().flatten() {
        let dir = ctx.store.repo().join(p);
        if !crate::floors::is_relative_inside(p) || !dir.is_dir() {
            return Err(Refusal::NoSuchDirectory {
                path: p.clone(),
                repo: ctx.store.repo().to_path_buf(),
            }
            .into());
        }
    }
    let args = ConfigArgs {
        suite_cmd,
        test_paths,
    };
    // Which nodes of the tree are escalated: found without the lock, read again under it.
    let escalated = escalated_in_tree(ctx, id)?;
    let reads = Reads::subject(id).with_ancestors().with_others(escalated);
    ctx.apply(Verb::SetConfig, &reads, |fresh, who| {
        Ok(plan_config(&args, who, fresh)?)
    })
}

/// The escalated nodes under `id`'s campaign root, other than the root itself.
fn escalated_in_tree(ctx: &Ctx, id: &str) -> Result<Vec<String>> {
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
    Ok(all
        .iter()
        .filter(|b| b.id != root_id && in_tree(&b.id) && is_escalated(b))
        .map(|b| b.id.to_string())
        .collect())
}

/// Set the campaign root's suite command and test paths; clear the last check of the root and
/// of every node of `fresh.others` (the tree's nodes found escalated before the lock) that is
/// still escalated. The root is the subject's farthest ancestor, or the subject itself.
pub fn plan_config(
    args: &ConfigArgs,
    who: Caller,
    fresh: &Fresh,
) -> Result<Change<Configured>, Refusal> {
    who.admit(Verb::SetConfig)?;
    let mut root = fresh.ancestors.last().unwrap_or(&fresh.subject).clone();
    if let Some(cmd) = &args.suite_cmd {
        root.pipeline.suite_cmd = Some(cmd.clone().into());
    }
    if let Some(paths) = &args.test_paths {
        root.pipeline.test_paths = paths.clone().into();
    }
    let mut rechecked = Vec::new();
    if is_escalated(&root) {
        root.pipeline.last_check = None;
        rechecked.push(root.id.to_string());
    }
    let root_id = root.id.clone();
    let mut beads = vec![root];
    for b in fresh.others.iter().filter(|b| b.id != root_id) {
        if !is_escalated(b) || beads.iter().any(|done| done.id == b.id) {
            continue;
        }
        let mut b = b.clone();
        b.pipeline.last_check = None;
        rechecked.push(b.id.to_string());
        beads.push(b);
    }
    let output = Configured {
        root: root_id.to_string(),
        suite_cmd: args.suite_cmd.clone(),
        test_paths: args.test_paths.clone(),
        rechecked,
    };
    Ok(Change {
        beads,
        reason: Some("suite_cmd/test_paths set".to_string()),
        output,
    })
}

fn is_escalated(bead: &Bead) -> bool {
    bead.pipeline
        .last_check
        .as_ref()
        .is_some_and(|c| c.verdict == Verdict::Escalate)
}

/// Set a node's own autonomy level.
pub fn set_autonomy(ctx: &Ctx, id: &str, level: Autonomy) -> Result<AutonomySet> {
    let reads = Reads::subject(id);
    ctx.apply(Verb::SetAutonomy, &reads, |fresh, who| {
        Ok(plan_autonomy(level, who, &fresh.subject)?)
    })
}

/// `bead` at its own autonomy `level`.
pub fn plan_autonomy(
    level: Autonomy,
    who: Caller,
    bead: &Bead,
) -> Result<Change<AutonomySet>, Refusal> {
    who.admit(Verb::SetAutonomy)?;
    let mut after = bead.clone();
    after.pipeline.autonomy = Some(level);
    let output = AutonomySet {
        bead: bead.id.to_string(),
        autonomy: level,
    };
    let reason = format!("autonomy {}", level.as_str());
    Ok(Change::one(after, Some(reason), output))
}

/// Set where a node's work lands, and optionally how. `main` is refused at deep autonomy: deep
/// work lands on a campaign branch, and the final merge to main stays a person's job.
pub fn set_target(
    ctx: &Ctx,
    id: &str,
    target: &str,
    delivery: Option<DeliveryMethod>,
) -> Result<TargetSet> {
    ctx.admit(Verb::SetTarget)?;
    if target.trim().is_empty() {
        return Err(Error::Invalid("--target must name a branch".into()));
    }
    super::target::require_exists(ctx.store.repo(), target)?;
    let config = ctx.store.config()?;
    let reads = Reads::subject(id).with_ancestors();
    ctx.apply(Verb::SetTarget, &reads, |fresh, who| {
        let lineage = Lineage::new(&fresh.ancestors, defaults(&config, &None));
        let args = TargetSet {
            bead: fresh.subject.id.to_string(),
            target: target.to_string(),
            delivery,
        };
        Ok(plan_target(args, who, &fresh.subject, &lineage)?)
    })
}

/// `bead` delivering to `args.target` (by `args.delivery` when given).
pub fn plan_target(
    args: TargetSet,
    who: Caller,
    bead: &Bead,
    lineage: &Lineage,
) -> Result<Change<TargetSet>, Refusal> {
    who.admit(Verb::SetTarget)?;
    let (level, source) = lineage.autonomy(bead);
    if level == Autonomy::Deep && is_mainline(&args.target) {
        return Err(Refusal::DeepOnMainline {
            bead: bead.id.to_string(),
            supplied_by: source.label(),
            target: args.target,
        });
    }
    let mut after = bead.clone();
    after.pipeline.target = Some(args.target.clone().into());
    if args.delivery.is_some() {
        after.pipeline.delivery = args.delivery;
    }
    let reason = format!("target {}", args.target);
    Ok(Change::one(after, Some(reason), args))
}

/// Move a node onto route `to`, at step `at` (default: the route's entry step).
pub fn route(ctx: &Ctx, id: &str, to: &str, at: Option<&str>) -> Result<Routed> {
    ctx.admit(Verb::Route)?;
    let manifest = ctx.store.manifest()?;
    // A route or step the manifest lacks is refused before the bead is read.
    resolve_route(&manifest, to, at)?;
    ctx.apply(Verb::Route, &Reads::subject(id), |fresh, who| {
        Ok(plan_route(
            to,
            at,
            who,
            &fresh.subject,
            &manifest,
            &ctx.now,
        )?)
    })
}

/// `bead` on route `to`, entering step `at` (default: the route's entry step). It leaves any
/// open call (`pipeline.calls`) and the last branch's guidance behind.
pub fn plan_route(
    to: &str,
    at: Option<&str>,
    who: Caller,
    bead: &Bead,
    manifest: &Manifest,
    now: &str,
) -> Result<Change<Routed>, Refusal> {
    who.admit(Verb::Route)?;
    let step = resolve_route(manifest, to, at)?;
    require_open(bead)?;
    require_not_foreign(bead, who.holder)?;
    let mut after = bead.clone();
    after.pipeline.route = to.into();
    after.pipeline.kind = manifest.route_kind(to).unwrap_or(bead.pipeline.kind);
    after.enter_step(&step, next_seq(bead), now);
    // A person's move is the node's new place: no branch's guidance, and no open call returns
    // from it (its route's end closes the node).
    after.pipeline.guidance = None;
    let left = after.pipeline.calls.len();
    after.pipeline.calls = Default::default();
    let output = Routed {
        bead: bead.id.to_string(),
        route: to.to_string(),
        step: step.clone(),
    };
    let reason = match left {
        0 => format!("routed to {to} at {step}"),
        n => format!("routed to {to} at {step}, leaving {n} open call(s)"),
    };
    Ok(Change::one(after, Some(reason), output))
}

/// The step a node routed to `to` enters: `at` when the route has it, else the route's entry.
pub fn resolve_route(manifest: &Manifest, to: &str, at: Option<&str>) -> Result<String, Refusal> {
    let Some(steps) = manifest.route(to) else {
        return Err(Refusal::UnknownRoute {
            route: to.to_string(),
            known: manifest.routes.keys().cloned().collect(),
        });
    };
    let step = match at {
        Some(s) if steps.iter().any(|x| x == s) => s.to_string(),
        Some(s) => {
            return Err(Refusal::StepNotOnRoute {
                step: s.to_string(),
                route: to.to_string(),
            });
        }
        None => manifest.entry_step(to).unwrap_or(&steps[0]).to_string(),
    };
    Ok(step)
}
