//! Carrying out a result branch (`on_result`) inside a verb's plan, under the lock: the pure
//! [`crate::policy::branch`] picked it and resolved its targets; this moves the node and writes
//! the [`Routing`] record the journal carries with the node's after-image.

use crate::model::bead::{CallFrame, Gate, GateState, Routing, RoutingEffect};
use crate::model::{Bead, Manifest};
use crate::policy::branch::{self, Effect, Fired, Firing, StepResult};

/// What a branch did with a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// No branch fired, or one said `continue`: the pipeline goes on as declared.
    Declared,
    /// The node went to `next` (a step), or stays where it is (`None`: parked, or waiting at a
    /// route gate).
    Decided(Option<String>),
    /// A `goto` fired: enter `step`, with `guidance` (the caller joins other floors' guidance).
    Goto {
        step: String,
        guidance: Option<String>,
    },
}

/// Try `bead`'s step's branches at `firing` and apply the one that fires, except a `goto`,
/// which is returned for the caller to enter.
pub fn try_branches(
    bead: &mut Bead,
    manifest: &Manifest,
    firing: Firing,
    (seq, now): (u64, &str),
) -> Applied {
    let result = StepResult::of(bead, firing);
    let Some(fired) = branch::fire(manifest, bead, firing, &result) else {
        return Applied::Declared;
    };
    let from = (bead.pipeline.route.clone(), bead.pipeline.step.clone());
    let Fired {
        index,
        matched,
        effect,
    } = fired;
    let mut record = Routing {
        step: from.1.to_string(),
        branch: Some(index),
        when: firing.as_str().to_string(),
        matched,
        effect: effect.recorded(),
        from_route: from.0.to_string(),
        from_step: from.1.to_string(),
        to_route: None,
        to_step: None,
        reason: None,
        return_to: None,
        depth: None,
        seq,
        at: now.to_string(),
    };
    let applied = match effect {
        Effect::Continue => Applied::Declared,
        Effect::Goto { step, guidance } => {
            record.to_route = Some(from.0.to_string());
            record.to_step = Some(step.clone());
            Applied::Goto { step, guidance }
        }
        Effect::Route { route, kind, step } => {
            record.to_route = Some(route.clone());
            record.to_step = Some(step.clone());
            switch(bead, &route, kind, &step, (seq, now));
            Applied::Decided(Some(step))
        }
        Effect::Call {
            route,
            kind,
            step,
            return_to,
            guidance,
        } => {
            record.to_route = Some(route.clone());
            record.to_step = Some(step.clone());
            record.return_to = Some(return_to.clone());
            bead.pipeline.calls.push(CallFrame {
                callee: route.clone(),
                route: from.0.to_string(),
                kind: bead.pipeline.kind,
                step: from.1.to_string(),
                return_to,
                seq,
                at: now.to_string(),
            });
            record.depth = Some(bead.pipeline.calls.len());
            switch(bead, &route, kind, &step, (seq, now));
            bead.pipeline.guidance = guidance.map(Into::into);
            Applied::Decided(Some(step))
        }
        Effect::Abort(reason) | Effect::Park(reason) => {
            let step = bead.pipeline.step.to_string();
            record.reason = Some(bead.park(&step, &reason, seq, now));
            Applied::Decided(None)
        }
        Effect::SuggestRoute(route) => {
            record.to_route = Some(route.clone());
            open_route_gate(bead, &route, (seq, now));
            Applied::Decided(None)
        }
    };
    bead.pipeline.routing.push(record);
    applied
}

/// Put `bead` on `route` (walked by `kind` nodes) at `step`.
pub fn switch(
    bead: &mut Bead,
    route: &str,
    kind: crate::model::Kind,
    step: &str,
    (seq, now): (u64, &str),
) {
    bead.pipeline.route = route.into();
    bead.pipeline.kind = kind;
    bead.enter_step(step, seq, now);
}

/// A pending gate on the node's step that a person settles: approve switches to `route`,
/// reject keeps the node on its own.
fn open_route_gate(bead: &mut Bead, route: &str, (seq, now): (u64, &str)) {
    bead.pipeline.gate = Some(Box::new(Gate {
        step: bead.pipeline.step.to_string(),
        state: GateState::Pending,
        seq,
        by: None,
        autonomy: None,
        supplied_by: None,
        route: Some(route.to_string()),
        land: None,
        at: now.to_string(),
    }));
}

/// The record of a person settling a route gate (`approved`: switched; `rejected`: stayed).
pub fn settled(bead: &Bead, when: &str, to: Option<(&str, &str)>, seq: u64, now: &str) -> Routing {
    Routing {
        step: bead.pipeline.step.to_string(),
        branch: None,
        when: when.to_string(),
        matched: String::new(),
        effect: match to {
            Some(_) => RoutingEffect::Route,
            None => RoutingEffect::Stay,
        },
        from_route: bead.pipeline.route.to_string(),
        from_step: bead.pipeline.step.to_string(),
        to_route: to.map(|t| t.0.to_string()),
        to_step: to.map(|t| t.1.to_string()),
        reason: None,
        return_to: None,
        depth: None,
        seq,
        at: now.to_string(),
    }
}

/// The journal's record of a node leaving `route` at `step` for somewhere not chosen by a
/// branch: a call's return (`to` its caller), or a park when it cannot return (`reason`).
/// `when` is how the step ended (`accepted`, `skipped`).
pub fn ended(bead: &Bead, when: &str, effect: RoutingEffect, (seq, now): (u64, &str)) -> Routing {
    Routing {
        step: bead.pipeline.step.to_string(),
        branch: None,
        when: when.to_string(),
        matched: String::new(),
        effect,
        from_route: bead.pipeline.route.to_string(),
        from_step: bead.pipeline.step.to_string(),
        to_route: None,
        to_step: None,
        reason: None,
        return_to: None,
        depth: None,
        seq,
        at: now.to_string(),
    }
}

/// Switch `bead` to the route its pending route gate suggests (a person approved it).
pub fn approve_route(
    bead: &mut Bead,
    manifest: &Manifest,
    route: &str,
    (seq, now): (u64, &str),
) -> Option<String> {
    let step = branch::landing(manifest, route, &bead.pipeline.step);
    let kind = manifest.route_kind(route).unwrap_or(bead.pipeline.kind);
    let record = settled(bead, "approved", Some((route, &step)), seq, now);
    bead.pipeline.routing.push(record);
    bead.pipeline.guidance = None;
    switch(bead, route, kind, &step, (seq, now));
    Some(step)
}
