//! `init` (a campaign root at create-prp) and `init-task` (a lone task: classified, and placed
//! on its tier's route when a person names the tier).

use serde::Serialize;

use super::{Ctx, Verb, next_seq};
use crate::error::{Error, Result};
use crate::model::bead::{DeliveryMethod, Kind};
use crate::model::tier::{AUTO, Tier, TierChoice, TierRule};
use crate::model::{Autonomy, Bead, Manifest};
use crate::policy::tier::classify;
use crate::store::{Change, ids};

/// What a new node starts with.
#[derive(Clone, Debug, Default)]
pub struct NewNode {
    pub title: String,
    pub description: String,
    pub scenarios: Vec<String>,
    pub autonomy: Option<Autonomy>,
    pub target: Option<String>,
    pub delivery: Option<DeliveryMethod>,
    /// For a lone task: `"auto"` (or `None`) to classify the request, else a tier's name
    /// ([`check_tier`] parses it). `init` refuses it: a campaign root has no tier.
    pub tier: Option<String>,
    /// The request's distilled intent (`[plan] distiller`), recorded on the node.
    pub intent: Option<crate::model::intent::Intent>,
}

/// Where a new node starts: its kind, route and tier, and how the tier was chosen.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    pub kind: Kind,
    pub route: String,
    pub tier: Option<Tier>,
    pub tier_rule: Option<TierRule>,
    /// Steps of the kind's route that `route` leaves out (`optional: true` in the manifest).
    pub not_applicable: Vec<String>,
}

impl Placement {
    pub fn of_kind(kind: Kind) -> Placement {
        Placement {
            kind,
            route: kind.route().to_string(),
            tier: None,
            tier_rule: None,
            not_applicable: Vec::new(),
        }
    }
}

/// Create a campaign root at the root route's entry step. A root has no request tier: a tier
/// is refused, not ignored (`init_task` with tier `architectural` makes a root too).
pub fn init(ctx: &Ctx, node: NewNode) -> Result<Created> {
    if let Some(tier) = &node.tier {
        return Err(Error::Invalid(format!(
            "tier {tier:?}: `init` creates a campaign root, which has no tier; create a task \
             with a tier through init-task"
        )));
    }
    create(ctx, node, Placement::of_kind(Kind::Root), Verb::Init)
}

/// Create a lone task. With tier `auto` (or none) the request (title and description) is
/// classified and the tier and deciding rule are recorded; the task is a leaf at the leaf route's
/// entry, as before tiers. With a named tier the task starts on that tier's route
/// (`tiers.routes`) at its entry: `architectural` makes a campaign root, as `init` does.
pub fn init_task(ctx: &Ctx, node: NewNode) -> Result<Created> {
    let choice = check_tier(node.tier.as_deref().unwrap_or(AUTO))?;
    let placement = place_task(&ctx.store.manifest()?, &node, choice)?;
    create(ctx, node, placement, Verb::InitTask)
}

/// A lone task `splice exec` creates: as [`init_task`], but a classified task also starts on
/// its tier's route (the route changes only with an explicit tier, or through `exec`), with the
/// deciding rule recorded. An `architectural` request becomes a campaign root at create-prp,
/// whose planning gate a headless run stops at.
pub fn exec_task(ctx: &Ctx, node: NewNode) -> Result<Created> {
    let manifest = ctx.store.manifest()?;
    let placement = match check_tier(node.tier.as_deref().unwrap_or(AUTO))? {
        TierChoice::Auto => {
            let classified = place_task(&manifest, &node, TierChoice::Auto)?;
            let tier = classified.tier.ok_or_else(|| {
                Error::Invalid("the manifest's tiers.classify chose no tier".into())
            })?;
            Placement {
                tier_rule: classified.tier_rule,
                ..place_task(&manifest, &node, TierChoice::Named(tier))?
            }
        }
        named => place_task(&manifest, &node, named)?,
    };
    create(ctx, node, placement, Verb::Exec)
}

/// Where a lone task of `choice` starts (pure): see [`init_task`].
pub fn place_task(manifest: &Manifest, node: &NewNode, choice: TierChoice) -> Result<Placement> {
    let tiers = manifest.tiers();
    match choice {
        TierChoice::Auto => {
            let request = format!("{}\n{}", node.title, node.description);
            let c = classify(&request, &tiers).ok_or_else(|| {
                Error::Invalid("the manifest's tiers.classify has no final rule".into())
            })?;
            Ok(Placement {
                tier: Some(c.tier),
                tier_rule: Some(c.record()),
                ..Placement::of_kind(Kind::Leaf)
            })
        }
        TierChoice::Named(tier) => {
            let route = tiers.routes.get(&tier).cloned().ok_or_else(|| {
                Error::Invalid(format!(
                    "the manifest's tiers.routes has no route for {tier}"
                ))
            })?;
            let kind = tier.kind();
            let not_applicable = manifest
                .left_out(kind.route(), &route)
                .into_iter()
                .map(String::from)
                .collect();
            Ok(Placement {
                kind,
                route,
                tier: Some(tier),
                tier_rule: None,
                not_applicable,
            })
        }
    }
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

/// The tier `--tier` names: `auto` or a tier; anything else is refused naming the valid ones.
pub fn check_tier(tier: &str) -> Result<TierChoice> {
    tier.parse().map_err(|_| {
        Error::Invalid(format!(
            "--tier {tier:?}: unknown tier (one of {AUTO}, {})",
            Tier::names()
        ))
    })
}

/// What a new campaign root lacks until a person records it.
pub const ROOT_UNCONFIGURED: &str = "suite_cmd and test_paths are unset: integrate will escalate \
     until `splice transition set-config --bead ID --suite-cmd C --test-paths P` records them";

/// A created node.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Created {
    pub id: String,
    pub kind: Kind,
    pub step: String,
    pub target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
    /// The classifier's deciding rule (tier `auto`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier_rule: Option<TierRule>,
    /// Steps of the kind's route this node's route leaves out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_applicable: Vec<String>,
    /// What a person should know about the new node (also printed on stderr by `init`).
    pub warnings: Vec<String>,
}

/// What a create plan needs besides the new node's fields.
#[derive(Clone, Copy, Debug)]
pub struct CreateInput<'a> {
    /// The node's kind, route and tier.
    pub placement: &'a Placement,
    /// The route's entry step.
    pub entry: &'a str,
    /// The id, free on disk.
    pub id: &'a str,
    /// The target resolved for the node (`--target`, else `[delivery] target`, else the branch).
    pub target: Option<&'a str>,
    /// The journal's verb (`init` or `init-task`).
    pub verb: &'a str,
}

fn create(ctx: &Ctx, node: NewNode, placement: Placement, verb: Verb) -> Result<Created> {
    ctx.admit(verb)?;
    let journaled = verb;
    let verb = verb.name();
    let route = placement.route.as_str();
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
    ctx.store.create(
        &ctx.transition(journaled, &ctx.actor()),
        &candidates,
        |taken| {
            let id = free_id(&candidates, taken, &seed)?;
            let input = CreateInput {
                placement: &placement,
                entry,
                id,
                target: node.target.as_deref(),
                verb,
            };
            Ok(plan(&node, &input, &ctx.now))
        },
    )
}

/// The first of `candidates` (ids derived from `seed`) not `taken`.
pub(super) fn free_id<'c>(
    candidates: &'c [String],
    taken: &std::collections::BTreeSet<String>,
    seed: &str,
) -> Result<&'c String> {
    candidates
        .iter()
        .find(|id| !taken.contains(*id))
        .ok_or_else(|| Error::Invalid(format!("every id derived from {seed:?} is taken")))
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
    let place = input.placement;
    p.kind = place.kind;
    p.route = place.route.as_str().into();
    p.scenarios = node.scenarios.clone().into();
    p.autonomy = node.autonomy;
    p.target = input.target.map(Into::into);
    p.delivery = node.delivery;
    p.tier = place.tier;
    p.tier_rule = place.tier_rule.clone().map(Box::new);
    p.intent = node.intent.clone().map(Box::new);
    bead.enter_step(input.entry, seq, now);
    let mut warnings = Vec::new();
    if place.kind == Kind::Root {
        warnings.push(ROOT_UNCONFIGURED.to_string());
    }
    let output = Created {
        id: bead.id.to_string(),
        kind: place.kind,
        step: bead.pipeline.step.to_string(),
        target: bead.pipeline.target.as_deref().map(str::to_string),
        tier: place.tier,
        tier_rule: place.tier_rule.clone(),
        not_applicable: place.not_applicable.clone(),
        warnings,
    };
    let reason = create_reason(input.verb, &node.title, place);
    Change::one(bead, Some(reason), output)
}

/// The journal's reason for a new node: the verb and title, and its tier and route when it has
/// one (with the rule that chose it, and the steps not applicable to its route).
fn create_reason(verb: &str, title: &str, place: &Placement) -> String {
    let mut reason = format!("{verb}: {title}");
    if let Some(tier) = place.tier {
        reason.push_str(&format!(" (tier {tier}, route {}", place.route));
        if let Some(rule) = &place.tier_rule {
            reason.push_str(&format!(
                "; rule {} \"{}\": {}",
                rule.index, rule.name, rule.rationale
            ));
        }
        if !place.not_applicable.is_empty() {
            reason.push_str(&format!(
                "; not applicable: {}",
                place.not_applicable.join(", ")
            ));
        }
        reason.push(')');
    }
    reason
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn node(title: &str) -> NewNode {
        NewNode {
            title: title.into(),
            ..NewNode::default()
        }
    }

    #[test]
    fn a_task_is_placed_by_its_tier() {
        let m = Manifest::default_manifest();
        let auto = place_task(&m, &node("Fix the typo"), TierChoice::Auto).unwrap();
        assert_eq!((auto.kind, auto.route.as_str()), (Kind::Leaf, "leaf"));
        assert_eq!(auto.tier, Some(Tier::Trivial));
        assert_eq!(auto.tier_rule.unwrap().name, "short-trivial-edit");
        let named = place_task(&m, &node("x"), TierChoice::Named(Tier::Trivial)).unwrap();
        assert_eq!(named.route, "trivial");
        assert_eq!(named.not_applicable, ["generate-spec", "generate-tests"]);
        assert_eq!(named.tier_rule, None);
        let root = place_task(&m, &node("x"), TierChoice::Named(Tier::Architectural)).unwrap();
        assert_eq!((root.kind, root.route.as_str()), (Kind::Root, "root"));
        assert!(
            root.not_applicable.is_empty(),
            "the root route is the root's own"
        );
    }

    #[test]
    fn a_root_refuses_a_tier_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_plan(Some(dir.path())).unwrap();
        let tiered = NewNode {
            tier: Some("light".into()),
            ..node("Campaign")
        };
        let err = init(&Ctx::command_line(&store, "t"), tiered).unwrap_err();
        assert!(err.to_string().contains("has no tier"), "{err}");
        assert!(!dir.path().join(".splice").exists());
    }
}
