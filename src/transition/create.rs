//! `init` (a campaign root at create-prp) and `init-task` (a lone leaf at generate-spec).

use serde::Serialize;

use super::{Ctx, Verb, next_seq};
use crate::error::{Error, Result};
use crate::model::bead::{DeliveryMethod, Kind};
use crate::model::{Autonomy, Bead};
use crate::store::{Change, ids};

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

/// Create a campaign root at the root route's entry step.
pub fn init(ctx: &Ctx, node: NewNode) -> Result<Created> {
    create(ctx, node, Kind::Root, Verb::Init)
}

/// Create a lone task: a leaf at the leaf route's entry step.
pub fn init_task(ctx: &Ctx, node: NewNode) -> Result<Created> {
    if let Some(tier) = &node.tier {
        check_tier(tier)?;
    }
    create(ctx, node, Kind::Leaf, Verb::InitTask)
}

/// Refuse `init`/`init-task` from a dispatched session before anything is written, the state
/// directory included (seed 003's fresh-session check at the entry boundary): `store` is the
/// state directory `init` would use, which need not exist yet. [`create`] checks again.
pub fn admit_creation(store: &crate::store::Store, verb: Verb) -> Result<()> {
    super::authority::admit(verb, &super::authority::Who::command_line(store.dir()))?;
    Ok(())
}

/// Refuse a new node's target before `.splice/` is created: the checks of
/// [`super::target::for_new_node`] against the state directory `init` would use (nothing is
/// created when they refuse). [`create`] checks again.
pub fn check_target(store: &crate::store::Store, given: Option<&str>) -> Result<()> {
    super::target::for_new_node(store.repo(), &store.config()?, given)?;
    Ok(())
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

/// A created node.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Created {
    pub id: String,
    pub kind: Kind,
    pub step: String,
    pub target: Option<String>,
    /// What a person should know about the new node (also printed on stderr by `init`).
    pub warnings: Vec<String>,
}

/// What a create plan needs besides the new node's fields.
#[derive(Clone, Copy, Debug)]
pub struct CreateInput<'a> {
    pub kind: Kind,
    /// The route's entry step.
    pub entry: &'a str,
    /// The id, free on disk.
    pub id: &'a str,
    /// The target resolved for the node (`--target`, else `[delivery] target`, else the branch).
    pub target: Option<&'a str>,
    /// The journal's verb (`init` or `init-task`).
    pub verb: &'a str,
}

fn create(ctx: &Ctx, node: NewNode, kind: Kind, verb: Verb) -> Result<Created> {
    ctx.admit(verb)?;
    let verb = verb.name();
    let route = kind.route();
    if node.title.trim().is_empty() {
        return Err(Error::Invalid("--title must not be empty".into()));
    }
    let manifest = ctx.store.manifest()?;
    let config = ctx.store.config()?;
    let entry = manifest
        .entry_step(route)
        .ok_or_else(|| Error::Invalid(format!("the manifest has no {route} route")))?;
    let target = super::target::for_new_node(ctx.store.repo(), &config, node.target.as_deref())?;
    let node = NewNode {
        scenarios: normalize_scenarios(&node.scenarios)?,
        target: Some(target),
        ..node
    };
    let seed = format!("{}\n{}\n{}", node.title, node.description, ctx.now);
    let candidates: Vec<String> = ids::candidates(&seed).collect();
    ctx.store
        .create(&ctx.transition(verb, &ctx.actor()), &candidates, |taken| {
            let id = candidates
                .iter()
                .find(|id| !taken.contains(*id))
                .ok_or_else(|| {
                    Error::Invalid(format!("every id derived from {seed:?} is taken"))
                })?;
            let input = CreateInput {
                kind,
                entry,
                id,
                target: node.target.as_deref(),
                verb,
            };
            Ok(plan(&node, &input, &ctx.now))
        })
}

/// The new node: `kind` at its route's entry step.
pub fn plan(node: &NewNode, input: &CreateInput, now: &str) -> Change<Created> {
    let mut bead = Bead::new(
        input.id.to_string(),
        node.title.clone(),
        node.description.clone(),
        now,
    );
    let seq = next_seq(&bead);
    let p = &mut bead.pipeline;
    p.kind = input.kind;
    p.route = input.kind.route().to_string();
    p.scenarios = node.scenarios.clone();
    p.autonomy = node.autonomy;
    p.target = input.target.map(str::to_string);
    p.delivery = node.delivery;
    p.tier = node.tier.clone();
    bead.enter_step(input.entry, seq, now);
    let mut warnings = Vec::new();
    if input.kind == Kind::Root {
        warnings.push(
            "suite_cmd and test_paths are unset: integrate will escalate until \
             `splice transition set-config --bead ID --suite-cmd C --test-paths P` records them"
                .to_string(),
        );
    }
    let output = Created {
        id: bead.id.clone(),
        kind: input.kind,
        step: bead.pipeline.step.clone(),
        target: bead.pipeline.target.clone(),
        warnings,
    };
    let reason = format!("{}: {}", input.verb, node.title);
    Change::one(bead, Some(reason), output)
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
