//! `exec --plan` / `plan approve`: a saved plan's campaign in ONE transition (one journal record):
//! the root, with the plan's scenarios, `suite_cmd` and `test_paths` (set as `set-config` sets
//! them), split into the plan's tasks as `split` splits (`ChildSpec`s, dependencies by index in
//! the plan's topological order), each child carrying its tier and acceptance checks; and the
//! person's approval of the plan recorded on the root as the approval of its planning gates
//! (who, when, the plan file's sha256).
//!
//! How the root enters the pipeline: the plan *is* the PRP and the split, so the root passes
//! through the root route's steps up to the split step (each recorded in its history), splits,
//! and advances to the step after it (`delegate` in the default manifest), where it waits for
//! its children as any split root does. Its gated steps on that way (`create-prp`, `to-issues`;
//! an optional step such as `generate-design` is skipped, as when its command is absent) are
//! recorded as approved by the person in [`PlanApproval`]. Nothing is written unless every check
//! passes.

use serde::Serialize;

use super::settings::{ConfigArgs, plan_config};
use super::split::{self, ChildSpec, SplitInput};
use super::{Caller, Ctx, Verb, advance, create, next_seq};
use crate::error::{Error, Result};
use crate::model::bead::{CriticStanding, DeliveryMethod, Gate, GateState, Kind, PlanApproval};
use crate::model::critique::Critique;
use crate::model::plan::Plan;
use crate::model::{Bead, Manifest, Role, Tier};
use crate::refusal::Refusal;
use crate::store::{Change, Fresh, ids};

/// The plan and its identity, as the person approved it.
#[derive(Clone, Debug)]
pub struct PlanInput<'a> {
    pub plan: &'a Plan,
    /// The file as the person gave it.
    pub file: String,
    /// sha256 of its bytes, hex.
    pub sha256: String,
    /// `--delivery`, set on the root (its children inherit it).
    pub delivery: Option<DeliveryMethod>,
    /// What the critic said about the plan in this form.
    pub critic: Critic,
    /// `--override-critic REASON`: the person approves over the verdict's must-fix findings.
    pub override_critic: Option<String>,
    /// The request's distilled intent (`[plan] distiller`), recorded on the root.
    pub intent: Option<crate::model::intent::Intent>,
}

/// The critic's standing on a plan, as approval sees it.
#[derive(Clone, Debug)]
pub enum Critic {
    /// No `[plan] critic` is configured.
    Unset,
    /// A critic is configured and has not judged the plan's current bytes.
    Unjudged,
    /// Its verdict on the plan's current bytes.
    Judged(Box<Critique>),
}

/// The critic's rule: with a critic configured, a plan is approved only on its verdict on the
/// plan's current form, and over a must-fix finding only with a person's reason. What the
/// approval stood on is recorded with it.
pub fn critic_standing(input: &PlanInput) -> Result<Option<CriticStanding>> {
    let overridden = input
        .override_critic
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty());
    if input.override_critic.is_some() && overridden.is_none() {
        return Err(Error::Invalid(
            "--override-critic needs a reason, recorded with the approval".into(),
        ));
    }
    let judged = match &input.critic {
        Critic::Unset => {
            return match overridden {
                Some(_) => Err(Error::Invalid(
                    "--override-critic: no critic is configured ([plan] critic), so there is \
                     no verdict to override"
                        .into(),
                )),
                None => Ok(None),
            };
        }
        Critic::Unjudged => {
            return Err(Error::Refused(Refusal::PlanUnjudged {
                file: input.file.clone(),
                sha256: input.sha256.clone(),
            }));
        }
        Critic::Judged(c) => c,
    };
    let must_fix: Vec<String> = judged.must_fix().map(|f| f.issue.clone()).collect();
    match (must_fix.is_empty(), overridden) {
        (true, Some(_)) => Err(Error::Invalid(format!(
            "--override-critic: the critic's verdict on {} holds no must-fix finding, so there \
             is nothing to override",
            input.file
        ))),
        (false, None) => Err(Error::Refused(Refusal::PlanMustFix {
            file: input.file.clone(),
            count: must_fix.len(),
            listed: must_fix
                .iter()
                .map(|f| format!("{f:?}"))
                .collect::<Vec<_>>()
                .join(", "),
        })),
        _ => Ok(Some(CriticStanding {
            judged_at: judged.at.clone(),
            findings: judged.findings.len(),
            must_fix,
            overridden: overridden.map(str::to_string),
        })),
    }
}

/// A started plan.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Started {
    pub id: String,
    pub step: String,
    pub children: Vec<String>,
    /// Task id → child bead id.
    pub tasks: Vec<(String, String)>,
    pub sha256: String,
    pub approved: Vec<String>,
    /// What a person should know: tasks whose acceptance facts no step of their route runs.
    pub warnings: Vec<String>,
}

/// Read and validate a plan file: the plan (tasks in topological order) and its sha256.
pub fn read_file(path: &std::path::Path) -> Result<(Plan, String)> {
    let bytes = crate::safe_read::read(path, crate::safe_read::INPUT)?;
    let text =
        std::str::from_utf8(&bytes).map_err(|_| Error::bad_file(path, "a plan is UTF-8 JSON"))?;
    let plan = Plan::parse(text).map_err(|msg| Error::bad_file(path, msg))?;
    Ok((plan, crate::authority::credential::sha256_hex_of(&bytes)))
}

/// Create the plan's campaign: `verb` is `exec` or `plan approve` (both a person's).
pub fn start(ctx: &Ctx, verb: Verb, input: &PlanInput) -> Result<Started> {
    ctx.admit(verb)?;
    let manifest = ctx.store.manifest()?;
    let config = ctx.store.config()?;
    let target =
        super::target::for_new_node(ctx.store.repo(), &config, input.plan.target.as_deref())?;
    let seed = format!("{}\n{}\n{}", input.plan.title, input.sha256, ctx.now);
    let candidates: Vec<String> = ids::candidates(&seed).collect();
    // A root whose children's ids are taken (a bead file left at `<root>.1`) is not used.
    let tasks = input.plan.tasks.len();
    let children =
        |id: &str| -> Vec<String> { (1..=tasks).map(|i| ids::child_id(id, i)).collect() };
    let probe: Vec<String> = candidates
        .iter()
        .flat_map(|c| std::iter::once(c.clone()).chain(children(c)))
        .collect();
    let actor = ctx.actor();
    let caller = ctx.caller();
    let branch = crate::worktree::current_branch(ctx.store.repo());
    let defaults = super::defaults(&config, &branch);
    let mut integration = None;
    let started = ctx
        .store
        .create(&ctx.transition(verb, &actor), &probe, |taken| {
            let id = candidates
                .iter()
                .find(|id| !taken.contains(*id) && children(id).iter().all(|c| !taken.contains(c)))
                .ok_or_else(|| {
                    Error::Invalid(format!("every id derived from {seed:?} is taken"))
                })?;
            let mut change = plan(input, caller, &manifest, (id, &target), &ctx.now)?;
            // A deep campaign on the main line integrates on its own branch (`split.rs`).
            integration = change
                .beads
                .iter()
                .find(|b| b.id.as_str() == id.as_str())
                .and_then(|root| split::integration_branch(root, &defaults));
            if let Some(branch) = &integration {
                split::aim_children(&mut change.beads, id, branch);
            }
            Ok(change)
        })?;
    if let Some(branch) = &integration {
        split::ensure_branch(ctx.store.repo(), branch, &target)?;
    }
    Ok(started)
}

/// The pure plan: the root and its children, or a refusal naming what the manifest lacks.
pub fn plan(
    input: &PlanInput,
    who: Caller,
    manifest: &Manifest,
    (id, target): (&str, &str),
    now: &str,
) -> Result<Change<Started>> {
    // `exec` and `plan approve` share the class (person): the rule applied again, as every plan does.
    who.admit(Verb::Exec)?;
    let p = input.plan;
    let route = Kind::Root.route();
    let steps = manifest
        .route(route)
        .ok_or_else(|| Error::Invalid(format!("the manifest has no {route} route")))?;
    let split_step = manifest
        .step_with(Role::Split)
        .map(|s| s.name.clone())
        .filter(|s| steps.contains(s))
        .ok_or_else(|| Error::Invalid("the manifest's root route has no split step".into()))?;
    let leaf_entry = manifest
        .entry_step(Kind::Leaf.route())
        .ok_or_else(|| Error::Invalid("the manifest has no leaf route".into()))?;
    let critic = critic_standing(input)?;
    let (root, gates, seq) =
        root_through_planning(input, who, manifest, (id, target, &split_step), now)?;
    let mut root = configured(root, p, who)?;
    root.pipeline.plan = Some(Box::new(PlanApproval {
        file: input.file.clone(),
        sha256: input.sha256.clone(),
        gates: gates.clone(),
        by: who.actor(),
        seq,
        at: now.to_string(),
        critic,
    }));
    let children = child_specs(p);
    let split = split::plan(
        &SplitInput {
            children: &children,
            entry: leaf_entry,
            taken: &Default::default(),
            split_step: Some(&split_step),
        },
        who,
        &root,
        now,
    )?;
    finish(split.beads, input, manifest, gates, seq, now)
}

/// The new root, walked through its route up to the split step (each step in its history), and
/// the approved gates of the gated, non-optional steps on that way.
fn root_through_planning(
    input: &PlanInput,
    who: Caller,
    manifest: &Manifest,
    (id, target, split_step): (&str, &str, &str),
    now: &str,
) -> Result<(Bead, Vec<Gate>, u64)> {
    let p = input.plan;
    let route = Kind::Root.route();
    let steps = manifest.route(route).unwrap_or_default();
    let node = create::NewNode {
        title: p.title.clone(),
        description: p.description.clone(),
        scenarios: create::normalize_scenarios(
            &p.scenarios.iter().map(|s| s.id.clone()).collect::<Vec<_>>(),
        )?,
        autonomy: p.autonomy_level(),
        target: Some(target.to_string()),
        delivery: input.delivery,
        tier: Some("architectural".into()),
        intent: input.intent.clone(),
    };
    let entry = manifest.entry_step(route).unwrap_or(split_step);
    let made = create::plan(
        &node,
        &create::CreateInput {
            placement: &create::Placement {
                tier: Some(Tier::Architectural),
                ..create::Placement::of_kind(Kind::Root)
            },
            entry,
            id,
            target: Some(target),
            verb: Verb::Exec.name(),
        },
        now,
    );
    let mut root = made
        .beads
        .into_iter()
        .next()
        .unwrap_or_else(|| unreachable_root(id));
    let seq = next_seq(&root);
    let first = steps.iter().position(|s| s == entry).unwrap_or(0);
    let upto = steps.iter().position(|s| s == split_step).unwrap_or(0);
    let mut gates = Vec::new();
    for step in &steps[first..=upto.max(first)] {
        if root.pipeline.step != *step {
            root.enter_step(step, seq, now);
        }
        let declared = manifest.step(step);
        if declared.is_some_and(|s| s.gate.is_some() && !s.optional) {
            gates.push(approved_gate(step, who.actor(), seq, now));
        }
    }
    Ok((root, gates, seq))
}

fn unreachable_root(id: &str) -> Bead {
    // `create::plan` always returns the one new bead.
    Bead::new(id.to_string(), String::new(), String::new(), "")
}

fn approved_gate(step: &str, by: String, seq: u64, now: &str) -> Gate {
    Gate {
        step: step.to_string(),
        state: GateState::Approved,
        seq,
        by: Some(by),
        autonomy: None,
        supplied_by: None,
        route: None,
        land: None,
        at: now.to_string(),
    }
}

/// `suite_cmd` and `test_paths` set on the root by `set-config`'s own plan.
fn configured(root: Bead, p: &Plan, who: Caller) -> Result<Bead> {
    let args = ConfigArgs {
        suite_cmd: Some(p.suite_cmd.clone()),
        test_paths: Some(p.test_paths.clone()),
    };
    let fresh = Fresh {
        subject: root,
        ancestors: Vec::new(),
        others: Vec::new(),
        taken: Default::default(),
    };
    let change = plan_config(&args, who, &fresh)?;
    Ok(change.beads.into_iter().next().unwrap_or(fresh.subject))
}

/// The plan's tasks (in topological order) as a split's children.
pub fn child_specs(p: &Plan) -> Vec<ChildSpec> {
    let index = crate::model::plan::index_of(&p.tasks);
    p.tasks
        .iter()
        .map(|t| ChildSpec {
            title: t.title.clone(),
            description: t.description.clone(),
            scenarios: t.scenarios.clone(),
            files: t.files.clone(),
            depends_on: t
                .depends_on
                .iter()
                .filter_map(|d| index.get(d.as_str()).copied())
                .collect(),
            priority: None,
        })
        .collect()
}

/// The children (tier and acceptance recorded) and the root advanced past its split step.
fn finish(
    mut beads: Vec<Bead>,
    input: &PlanInput,
    manifest: &Manifest,
    gates: Vec<Gate>,
    seq: u64,
    now: &str,
) -> Result<Change<Started>> {
    let mut root = beads
        .pop()
        .ok_or_else(|| Error::Internal("a split returned no parent".into()))?;
    for (child, task) in beads.iter_mut().zip(&input.plan.tasks) {
        child.pipeline.tier = match task.tier.as_deref().map(str::parse::<Tier>) {
            Some(Ok(tier)) => Some(tier),
            // The plan was validated before this plan ran.
            Some(Err(e)) => return Err(Error::Invalid(e.to_string())),
            None => None,
        };
        child.pipeline.acceptance = task.acceptance.clone().into();
        // The agents read the checks where every prompt quotes the task: its description.
        if !task.acceptance.is_empty() {
            child
                .description
                .push_str(&acceptance_text(&task.acceptance));
        }
    }
    advance(&mut root, manifest, seq, now);
    let output = Started {
        id: root.id.to_string(),
        step: root.pipeline.step.to_string(),
        children: beads.iter().map(|b| b.id.to_string()).collect(),
        tasks: input
            .plan
            .tasks
            .iter()
            .zip(&beads)
            .map(|(t, b)| (t.id.clone(), b.id.to_string()))
            .collect(),
        sha256: input.sha256.clone(),
        approved: gates.iter().map(|g| g.step.clone()).collect(),
        warnings: beads
            .iter()
            .filter_map(|b| super::acceptance::unrun_warning(manifest, b))
            .collect(),
    };
    let reason = format!(
        "plan {} (sha256 {}) approved by {}: {} split into {} children",
        input.file,
        input.sha256,
        root.pipeline
            .plan
            .as_ref()
            .map_or("person", |a| a.by.as_str()),
        root.id,
        beads.len()
    );
    beads.push(root);
    Ok(Change {
        beads,
        reason: Some(reason),
        output,
    })
}

/// The acceptance checks as the task's description ends with them.
fn acceptance_text(checks: &[crate::model::bead::Acceptance]) -> String {
    let mut out = String::from("\n\nAcceptance checks (each must exit 0 when the task is done):\n");
    for a in checks {
        out.push_str(&format!("- {}: `{}`\n", a.id, a.argv.join(" ")));
    }
    out
}
