//! `splice start ID`: a person puts a plain bead (imported from bd, or made by `splice create`)
//! on a route, keeping its id and bd fields (`docs/bd-interop.md`).
//!
//! - A task: as `init-task` places a new one — classified (`--tier auto`, the default) or on a
//!   named tier's route — at the route's entry step, with a delivery target.
//! - `--campaign`, an epic: a campaign root at its route's split step (the default manifest's
//!   `to-issues`), its existing children *adopted* as that step's split: each becomes a leaf at
//!   the leaf route's entry with the provenance a split gives (`split_by`, `seq`, `index`), so the
//!   step's `children_conserved` floor and the children floors see a split like any other. What
//!   scenarios each child owns comes from `--scenarios FILE` (`{"child-id": ["S1", …]}`; the
//!   epic owns their union); without it the start says the scenarios are missing, and the split
//!   step's human gate is where a person gives them before the campaign runs on.
//!
//! One journaled batch: the epic and its children change together or not at all.

use std::collections::BTreeMap;

use serde::Serialize;

use super::create::{NewNode, check_tier, normalize_scenarios, place_task};
use super::{Ctx, Refusal, Verb, next_seq};
use crate::error::{Error, Result};
use crate::model::bead::{Kind, Provenance, SplitRecord};
use crate::model::tier::{Tier, TierRule};
use crate::model::{Bead, Manifest, Role, Text};
use crate::store::{Change, Scan};

/// What `start` is asked.
#[derive(Clone, Debug, Default)]
pub struct StartArgs {
    /// `auto` (or none) to classify; a tier's name. Refused with `campaign`.
    pub tier: Option<String>,
    pub campaign: bool,
    /// The delivery target (`--target`), else `[delivery] target`, else the branch.
    pub target: Option<String>,
    /// `--campaign`: child id → the scenario ids it owns.
    pub scenarios: BTreeMap<String, Vec<String>>,
}

/// A started bead.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Started {
    pub id: String,
    pub kind: Kind,
    pub route: String,
    pub step: String,
    pub target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier_rule: Option<TierRule>,
    /// `--campaign`: the children adopted as the split, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub adopted: Vec<String>,
    pub warnings: Vec<String>,
}

/// Start `id` as a person.
pub fn start(ctx: &Ctx, id: &str, args: StartArgs) -> Result<Started> {
    ctx.admit(Verb::Start)?;
    if args.campaign && args.tier.is_some() {
        return Err(Error::Invalid(
            "--tier with --campaign: a campaign root has no request tier".into(),
        ));
    }
    if !args.campaign && !args.scenarios.is_empty() {
        return Err(Error::Invalid(
            "--scenarios is for --campaign (the scenarios each adopted child owns)".into(),
        ));
    }
    let mut scenarios = BTreeMap::new();
    for (child, ids) in &args.scenarios {
        scenarios.insert(child.clone(), normalize_scenarios(ids)?);
    }
    let manifest = ctx.store.manifest()?;
    let config = ctx.store.config()?;
    let target = super::target::for_new_node(ctx.store.repo(), &config, args.target.as_deref())?;
    let args = StartArgs { scenarios, ..args };
    let actor = ctx.actor();
    let t = ctx.transition(Verb::Start, &actor);
    ctx.store.batch(&t, |scan| {
        plan(&manifest, scan, id, &args, &target, &ctx.now)
    })
}

/// The pure plan: see the module doc.
pub fn plan(
    manifest: &Manifest,
    scan: &Scan,
    id: &str,
    args: &StartArgs,
    target: &str,
    now: &str,
) -> Result<Change<Started>> {
    let Some(bead) = scan.beads.iter().find(|b| b.id == id) else {
        if let Some(u) = scan.unreadable.iter().find(|u| u.id == id) {
            return Err(Error::bad_file(&u.path, u.error.to_string()));
        }
        return Err(Error::Invalid(format!(
            "no bead {}: `splice list` shows them",
            crate::model::id::shown(id)
        )));
    };
    startable(bead)?;
    if args.campaign {
        return campaign(manifest, scan, bead, args, target, now);
    }
    refuse_children(scan, bead)?;
    let node = NewNode {
        title: bead.title.to_string(),
        description: bead.description.clone(),
        ..NewNode::default()
    };
    let choice = check_tier(args.tier.as_deref().unwrap_or(crate::model::tier::AUTO))?;
    let place = place_task(manifest, &node, choice)?;
    let entry = entry_of(manifest, &place.route)?;
    let mut after = bead.clone();
    let seq = next_seq(&after);
    let p = &mut after.pipeline;
    p.kind = place.kind;
    p.route = place.route.as_str().into();
    p.tier = place.tier;
    p.tier_rule = place.tier_rule.clone().map(Box::new);
    p.target = Some(target.into());
    after.enter_step(&entry, seq, now);
    let started = Started {
        id: bead.id.to_string(),
        kind: place.kind,
        route: place.route.clone(),
        step: entry,
        target: Some(target.to_string()),
        tier: place.tier,
        tier_rule: place.tier_rule,
        adopted: Vec::new(),
        warnings: Vec::new(),
    };
    let reason = format!("start: {} on route {}", bead.title, place.route);
    Ok(Change::one(after, Some(reason), started))
}

/// Refuse to start a bead with children (but tombstones, as `--campaign` adopts them) as a
/// task: it would be one leaf, its children left out of its run.
fn refuse_children(scan: &Scan, bead: &Bead) -> Result<(), Refusal> {
    let children: Vec<&str> = scan
        .beads
        .iter()
        .filter(|b| b.parent.as_deref() == Some(bead.id.as_str()))
        .filter(|b| b.status != crate::model::bead::Status::Tombstone)
        .map(|b| b.id.as_str())
        .collect();
    if children.is_empty() {
        return Ok(());
    }
    let mut listed = children
        .iter()
        .take(3)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if children.len() > 3 {
        listed.push_str(&format!(" and {} more", children.len() - 3));
    }
    Err(Refusal::HasChildren {
        bead: bead.id.to_string(),
        count: children.len(),
        listed,
    })
}

/// Refuse a bead that is a node already, or closed.
fn startable(bead: &Bead) -> Result<(), Refusal> {
    if bead.is_node() {
        return Err(Refusal::AlreadyStarted {
            bead: bead.id.to_string(),
            route: bead.pipeline.route.to_string(),
            step: bead.pipeline.step.to_string(),
        });
    }
    if bead.is_closed() {
        return Err(Refusal::Closed {
            bead: bead.id.to_string(),
        });
    }
    Ok(())
}

fn entry_of(manifest: &Manifest, route: &str) -> Result<String> {
    manifest
        .entry_step(route)
        .map(str::to_string)
        .ok_or_else(|| Error::Invalid(format!("the manifest has no {route} route")))
}

/// The epic's children to adopt (its beads but tombstones, in natural id order); refused when
/// it has none, one is a node already, or `--scenarios` names a bead that is not one of them.
fn children_of<'a>(scan: &'a Scan, epic: &Bead, args: &StartArgs) -> Result<Vec<&'a Bead>> {
    let mut children: Vec<&Bead> = scan
        .beads
        .iter()
        .filter(|b| b.parent.as_deref() == Some(epic.id.as_str()))
        .filter(|b| b.status != crate::model::Status::Tombstone)
        .collect();
    children.sort_by(|a, b| crate::model::id::natural_cmp(&a.id, &b.id));
    if children.is_empty() {
        return Err(Error::Invalid(format!(
            "{} has no children to adopt: start it as a task (without --campaign), or create its \
             children first",
            epic.id
        )));
    }
    if let Some(node) = children.iter().find(|c| c.is_node()) {
        return Err(Refusal::AlreadyStarted {
            bead: node.id.to_string(),
            route: node.pipeline.route.to_string(),
            step: node.pipeline.step.to_string(),
        }
        .into());
    }
    if let Some(stray) = args
        .scenarios
        .keys()
        .find(|k| !children.iter().any(|c| c.id == **k))
    {
        return Err(Error::Invalid(format!(
            "--scenarios names {}, which is not a child of {}",
            crate::model::id::shown(stray),
            epic.id
        )));
    }
    Ok(children)
}

/// `child` as a leaf at `entry`, adopted by a split with `provenance`, owning `scenarios`.
fn adopt(
    child: &Bead,
    provenance: Provenance,
    scenarios: Vec<String>,
    entry: &str,
    now: &str,
) -> Bead {
    let mut c = child.clone();
    let seq = next_seq(&c);
    let p = &mut c.pipeline;
    p.kind = Kind::Leaf;
    p.route = Kind::Leaf.route().into();
    p.scenarios = scenarios.into();
    p.provenance = Some(Box::new(provenance));
    c.enter_step(entry, seq, now);
    c
}

/// An epic as a campaign root at the split step, its children adopted as the split.
fn campaign(
    manifest: &Manifest,
    scan: &Scan,
    epic: &Bead,
    args: &StartArgs,
    target: &str,
    now: &str,
) -> Result<Change<Started>> {
    let route = Kind::Root.route();
    let split_step = manifest
        .step_with(Role::Split)
        .map(|s| s.name.clone())
        .filter(|s| manifest.route(route).is_some_and(|r| r.contains(s)))
        .ok_or_else(|| {
            Error::Invalid(format!(
                "the manifest's {route} route has no step with role `split`: an epic's children \
                 cannot be adopted"
            ))
        })?;
    let leaf_entry = entry_of(manifest, Kind::Leaf.route())?;
    let children = children_of(scan, epic, args)?;
    let seq = next_seq(epic);
    let mut beads: Vec<Bead> = children
        .iter()
        .enumerate()
        .map(|(i, child)| {
            let owned = args
                .scenarios
                .get(child.id.as_str())
                .cloned()
                .unwrap_or_default();
            let provenance = Provenance {
                split_by: epic.id.to_string(),
                seq,
                index: i + 1,
            };
            adopt(child, provenance, owned, &leaf_entry, now)
        })
        .collect();
    let adopted: Vec<String> = beads.iter().map(|b| b.id.to_string()).collect();
    let mut owned: Vec<String> = args.scenarios.values().flatten().cloned().collect();
    owned.sort();
    owned.dedup();
    let mut after = epic.clone();
    let p = &mut after.pipeline;
    p.kind = Kind::Root;
    p.route = route.into();
    p.target = Some(target.into());
    p.scenarios = owned.clone().into();
    p.split = Some(Box::new(SplitRecord {
        children: adopted.iter().map(Text::from).collect(),
        seq,
    }));
    after.enter_step(&split_step, seq, now);
    beads.push(after);
    let mut warnings = vec![super::create::ROOT_UNCONFIGURED.to_string()];
    if owned.is_empty() {
        warnings.push(format!(
            "no scenarios given (--scenarios FILE): the {split_step} step's conservation check \
             has nothing to conserve; a person reviews the adopted split at its gate"
        ));
    }
    let started = Started {
        id: epic.id.to_string(),
        kind: Kind::Root,
        route: route.into(),
        step: split_step,
        target: Some(target.to_string()),
        tier: None,
        tier_rule: None,
        adopted: adopted.clone(),
        warnings,
    };
    let reason = format!(
        "start --campaign: {} adopting {} children as its split",
        epic.title,
        adopted.len()
    );
    Ok(Change {
        beads,
        reason: Some(reason),
        output: started,
    })
}

#[cfg(test)]
mod tests;
