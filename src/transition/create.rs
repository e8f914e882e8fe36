//! `init` (a campaign root at create-prp) and `init-task` (a lone leaf at generate-spec).

use serde_json::json;

use super::{Ctx, Outcome};
use crate::error::{Error, Result};
use crate::model::bead::{DeliveryMethod, Kind};
use crate::model::{Autonomy, Bead};

/// The tiers `init-task --tier` accepts.
pub const TIERS: &[&str] = &["auto", "trivial", "light", "substantial", "architectural"];

/// What a new node starts with.
#[derive(Clone, Debug, Default)]
pub struct NewNode {
    pub title: String,
    pub description: String,
    pub scenarios: Vec<String>,
    pub autonomy: Option<Autonomy>,
    pub target: Option<String>,
    pub delivery: Option<DeliveryMethod>,
    pub tier: Option<String>,
}

/// The branch checked out in the repository holding the store, if any.
pub fn current_branch(store: &crate::store::Store) -> Option<String> {
    let repo = git2::Repository::discover(store.repo()).ok()?;
    let head = repo.head().ok()?;
    if !head.is_branch() {
        return None;
    }
    head.shorthand().map(str::to_string)
}

/// Create a campaign root at the root route's entry step.
pub fn init(ctx: &Ctx, node: NewNode) -> Result<Outcome> {
    create(ctx, node, Kind::Root, "init")
}

/// Create a lone task: a leaf at the leaf route's entry step.
pub fn init_task(ctx: &Ctx, node: NewNode) -> Result<Outcome> {
    if let Some(tier) = &node.tier {
        check_tier(tier)?;
    }
    create(ctx, node, Kind::Leaf, "init-task")
}

/// Refuse a tier `init-task --tier` does not know.
pub fn check_tier(tier: &str) -> Result<()> {
    if TIERS.contains(&tier) {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "--tier {tier:?}: unknown tier (one of {})",
        TIERS.join(", ")
    )))
}

fn create(ctx: &Ctx, node: NewNode, kind: Kind, verb: &str) -> Result<Outcome> {
    let route = kind.route();
    if node.title.trim().is_empty() {
        return Err(Error::Invalid("--title must not be empty".into()));
    }
    let manifest = ctx.store.manifest()?;
    let config = ctx.store.config()?;
    let entry = manifest
        .entry_step(route)
        .ok_or_else(|| Error::Invalid(format!("the manifest has no {route} route")))?
        .to_string();
    let scenarios = normalize_scenarios(&node.scenarios)?;
    let target = node
        .target
        .clone()
        .or_else(|| config.delivery.target.clone())
        .or_else(|| current_branch(ctx.store));
    let bead = ctx.store.transact(verb, &ctx.actor(), |tx| {
        let seed = format!("{}\n{}\n{}", node.title, node.description, tx.now);
        let id = tx.new_id(&seed)?;
        let mut bead = Bead::new(id, node.title.clone(), node.description.clone(), &tx.now);
        let now = tx.now.clone();
        let seq = bead.bump(&now);
        let p = &mut bead.pipeline;
        p.kind = kind;
        p.route = route.to_string();
        p.scenarios = scenarios.clone();
        p.autonomy = node.autonomy;
        p.target = target.clone();
        p.delivery = node.delivery;
        p.tier = node.tier.clone();
        bead.enter_step(&entry, seq, &now);
        tx.set_reason(format!("{verb}: {}", node.title));
        tx.put(bead.clone());
        Ok(bead)
    })?;
    let mut warnings = Vec::new();
    if kind == Kind::Root {
        warnings.push(
            "suite_cmd and test_paths are unset: integrate will escalate until \
             `splice transition set-config --bead ID --suite-cmd C --test-paths P` records them"
                .to_string(),
        );
    }
    Ok(Outcome::ok(json!({
        "id": bead.id,
        "kind": kind.as_str(),
        "step": bead.pipeline.step,
        "target": bead.pipeline.target,
        "warnings": warnings,
    })))
}

/// Scenario ids: trimmed, non-empty, unique case-insensitively.
pub fn normalize_scenarios(ids: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for id in ids.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        if !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(Error::Invalid(format!(
                "scenario id {id:?} may hold only letters, digits, '-' and '_'"
            )));
        }
        if out.iter().any(|o| o.eq_ignore_ascii_case(id)) {
            return Err(Error::Invalid(format!("scenario id {id} is given twice")));
        }
        out.push(id.to_string());
    }
    Ok(out)
}
