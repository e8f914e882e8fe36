//! Result branches: given a node whose step just refused or was accepted, the first of the
//! step's `on_result` branches that matches its result, and what it does — or `None`, and the
//! pipeline goes on as declared.
//!
//! Pure: the result is read from the node itself (its recorded check, exit and response), and
//! every target is resolved and checked against the manifest here, so the writer only applies
//! a [`Fired`]. A target that does not resolve — an unknown variable, an empty value, a name
//! that is no route or step — a node past [`MAX_SWITCHES`], and a call past
//! [`MAX_CALL_DEPTH`] become [`Effect::Park`] with a reason naming the template, the value and
//! the valid names (or the limit); never an empty string or a silent default.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::model::bead::{Check, RoutingEffect, Verdict};
use crate::model::manifest::{Branch, Directive, Matcher, When, compile_regex};
use crate::model::{Bead, Kind, Manifest};

use super::call::MAX_CALL_DEPTH;

/// A node moved (goto or route) more than this many times by branches parks: a cycle guard.
pub const MAX_SWITCHES: usize = 16;

/// Where a branch is tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Firing {
    /// A check of the step refused.
    Refused,
    /// The step was accepted and advances (its floors passed and its gate let it through).
    Accepted,
}

impl Firing {
    /// Its word in the journal.
    pub fn as_str(self) -> &'static str {
        match self {
            Firing::Refused => "refused",
            Firing::Accepted => "accepted",
        }
    }

    fn fires(self, when: When) -> bool {
        matches!(
            (self, when),
            (_, When::Any) | (Firing::Refused, When::Refused) | (Firing::Accepted, When::Accepted)
        )
    }
}

/// What a branch reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepResult {
    /// `{{ result.text }}`, and what `contains` / `matches` read.
    pub text: Option<String>,
    /// The dispatch's exit code.
    pub exit_code: Option<i64>,
    /// The floors' evidence fields (refusing floors first), for `field` + `equals`.
    pub fields: Map<String, Value>,
}

impl StepResult {
    /// The result of `bead`'s current step as recorded on it: its check's evidence (the
    /// refusing floors' first), for a refusal a floor's `text` or else the check's reason as the
    /// text, else the step's recorded response; the exit code of its latest dispatch.
    pub fn of(bead: &Bead, firing: Firing) -> StepResult {
        let step = &bead.pipeline.step;
        let check = bead
            .pipeline
            .last_check
            .as_deref()
            .filter(|c| c.step == *step);
        let fields = check.map(evidence_fields).unwrap_or_default();
        let response = bead.pipeline.responses.get(step.as_str());
        let text = match firing {
            Firing::Refused => fields
                .get("text")
                .and_then(Value::as_str)
                .map(String::from)
                .or_else(|| check.map(|c| c.reason.clone())),
            Firing::Accepted => response.map(|r| r.text.clone()),
        };
        let mut fields = fields;
        if let Some(r) = response {
            fields
                .entry("response")
                .or_insert_with(|| Value::String(r.text.clone()));
            if let Some(c) = r.confidence {
                fields.entry("confidence").or_insert_with(|| c.into());
            }
        }
        let exit_code = bead
            .pipeline
            .exits
            .iter()
            .rev()
            .find(|e| e.step == *step)
            .and_then(|e| e.code)
            .map(i64::from);
        StepResult {
            text,
            exit_code,
            fields,
        }
    }
}

/// The check's floors' evidence, flattened: each key from the first floor that has it, the
/// refusing floors read first.
fn evidence_fields(check: &Check) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(reports) = check.evidence.as_array() else {
        return out;
    };
    let refusing = |r: &&Value| r.get("verdict") == Some(&serde_json::json!(Verdict::Refuse));
    let ordered = reports
        .iter()
        .filter(refusing)
        .chain(reports.iter().filter(|r| !refusing(r)));
    for report in ordered {
        if let Some(ev) = report.get("evidence").and_then(Value::as_object) {
            for (k, v) in ev {
                out.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    out
}

/// What a fired branch does to the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Nothing: the pipeline goes on as declared.
    Continue,
    /// Enter `step` on the node's route, with `guidance` for the next dispatch.
    Goto {
        /// The step entered.
        step: String,
        /// Guidance for the next dispatch.
        guidance: Option<String>,
    },
    /// Switch to `route` (walked by `kind` nodes), entering `step`.
    Route {
        /// The route switched to.
        route: String,
        /// The kind of node that walks it.
        kind: Kind,
        /// The step entered.
        step: String,
    },
    /// Park with the branch's reason.
    Abort(String),
    /// Open a route gate for a person to switch to `route` (approve) or stay (reject).
    SuggestRoute(String),
    /// Call `route` (walked by `kind` nodes), entering `step`, with `guidance` for its first
    /// dispatch; when it ends the node comes back to `return_to` on its current route
    /// ([`super::call`]).
    Call {
        /// The route called.
        route: String,
        /// The kind of node that walks it.
        kind: Kind,
        /// The step entered.
        step: String,
        /// The caller's step the node comes back to.
        return_to: String,
        /// Guidance for the callee's first dispatch.
        guidance: Option<String>,
    },
    /// The branch could not be carried out: park, saying why.
    Park(String),
}

impl Effect {
    /// What the routing record says it did.
    pub fn recorded(&self) -> RoutingEffect {
        match self {
            Effect::Continue => RoutingEffect::Continue,
            Effect::Goto { .. } => RoutingEffect::Goto,
            Effect::Route { .. } => RoutingEffect::Route,
            Effect::Abort(_) => RoutingEffect::Abort,
            Effect::SuggestRoute(_) => RoutingEffect::SuggestRoute,
            Effect::Call { .. } => RoutingEffect::Call,
            Effect::Park(_) => RoutingEffect::Park,
        }
    }
}

/// The branch that fired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fired {
    /// Its index in the step's `on_result`.
    pub index: usize,
    /// What its matcher matched.
    pub matched: String,
    /// What it does to the node.
    pub effect: Effect,
}

/// The first branch of `bead`'s current step that fires at `firing` on `result`, resolved.
#[must_use]
pub fn fire(
    manifest: &Manifest,
    bead: &Bead,
    firing: Firing,
    result: &StepResult,
) -> Option<Fired> {
    let step = manifest.step(&bead.pipeline.step)?;
    step.on_result.iter().enumerate().find_map(|(index, b)| {
        if !firing.fires(b.when) {
            return None;
        }
        let matched = matched(b, result)?;
        let effect = resolve(manifest, bead, b, result);
        Some(Fired {
            index,
            matched,
            effect,
        })
    })
}

/// What `b`'s matcher matched in `result`, if it matches.
fn matched(b: &Branch, result: &StepResult) -> Option<String> {
    let text = result.text.as_deref();
    match b.matcher.matcher()? {
        Matcher::Contains(needle) => {
            let text = text?;
            let at = text.to_lowercase().find(&needle.to_lowercase())?;
            // Lowercasing may change byte lengths; fall back to the needle as written.
            Some(
                text.get(at..at + needle.len())
                    .unwrap_or(needle)
                    .to_string(),
            )
        }
        Matcher::Matches(pattern) => {
            let re = compile_regex(pattern).ok()?;
            re.find(text?).map(|m| m.as_str().to_string())
        }
        Matcher::FieldEquals(field, want) => {
            let got = result.fields.get(field)?;
            (got == want).then(|| plain(got))
        }
        Matcher::ExitCode(code) => (result.exit_code? == code).then(|| code.to_string()),
        Matcher::Always => Some(String::new()),
    }
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// How many times branches moved `bead` (gotos, route switches, calls and returns): what the
/// cap [`MAX_SWITCHES`] counts.
pub fn switches(bead: &Bead) -> usize {
    bead.pipeline
        .routing
        .iter()
        .filter(|r| r.switched())
        .count()
}

/// Why a node moved `switches` times parks on its next move.
pub fn cap_reason(switches: usize) -> String {
    format!(
        "result branches moved this node {switches} times, the most splice allows \
         ({MAX_SWITCHES}); a person should look for a routing cycle"
    )
}

/// The effect of `b`'s action on `bead`, its templates rendered and its targets checked.
fn resolve(manifest: &Manifest, bead: &Bead, b: &Branch, result: &StepResult) -> Effect {
    let render = |t: &str| render(t, bead, result);
    let switches = switches(bead);
    let open = bead.pipeline.calls.len();
    let Some(directive) = b.action.directive() else {
        return Effect::Park("a result branch with no single action".into());
    };
    let out = match directive {
        Directive::Continue => Ok(Effect::Continue),
        Directive::Goto { step, guidance } => goto(manifest, bead, step, guidance, &render),
        Directive::Route { route, at } => switch(manifest, bead, route, at, &render),
        Directive::Abort(reason) => render(reason).map(Effect::Abort),
        Directive::SuggestRoute(route) => render(route).and_then(|name| {
            known_route(manifest, route, &name).map(|_| Effect::SuggestRoute(name))
        }),
        Directive::Call {
            route,
            at,
            return_to,
            guidance,
        } => call(manifest, bead, (route, at, return_to, guidance), &render),
    };
    match out {
        Ok(Effect::Goto { .. } | Effect::Route { .. } | Effect::Call { .. })
            if switches >= MAX_SWITCHES =>
        {
            Effect::Park(cap_reason(switches))
        }
        Ok(Effect::Call { route, .. }) if open >= MAX_CALL_DEPTH => Effect::Park(format!(
            "call {route} from {}: {open} calls are open already, the most splice allows \
             ({MAX_CALL_DEPTH}); a person should look for a call cycle",
            bead.pipeline.step
        )),
        Ok(effect) => effect,
        Err(reason) => Effect::Park(reason),
    }
}

type Render<'a> = dyn Fn(&str) -> Result<String, String> + 'a;

fn goto(
    manifest: &Manifest,
    bead: &Bead,
    step: &str,
    guidance: Option<&str>,
    render: &Render,
) -> Result<Effect, String> {
    let name = render(step)?;
    let here = &bead.pipeline.step;
    let valid: BTreeSet<&str> = manifest
        .route(&bead.pipeline.route)
        .unwrap_or_default()
        .iter()
        .map(String::as_str)
        .collect();
    if !valid.contains(name.as_str()) {
        return Err(format!(
            "goto {step:?} from {here} resolved to {name:?}, which is not a step of route {} \
             (one of {})",
            bead.pipeline.route,
            valid.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let guidance = guidance.map(render).transpose()?;
    Ok(Effect::Goto {
        step: name,
        guidance,
    })
}

fn switch(
    manifest: &Manifest,
    bead: &Bead,
    route: &str,
    at: Option<&str>,
    render: &Render,
) -> Result<Effect, String> {
    let name = render(route)?;
    let steps = known_route(manifest, route, &name)?;
    let step = match at {
        Some(t) => step_of(&name, steps, t, render)?,
        None => landing(manifest, &name, &bead.pipeline.step),
    };
    let kind = manifest.route_kind(&name).unwrap_or(bead.pipeline.kind);
    Ok(Effect::Route {
        route: name,
        kind,
        step,
    })
}

/// The step `template` (an `at`) names on route `name`, whose steps are `steps`.
fn step_of(
    name: &str,
    steps: &[String],
    template: &str,
    render: &Render,
) -> Result<String, String> {
    let s = render(template)?;
    if !steps.contains(&s) {
        return Err(format!(
            "route {name} at {template:?} resolved to {s:?}, which is not a step of route \
             {name} (one of {})",
            steps.join(", ")
        ));
    }
    Ok(s)
}

/// A `call`: the callee (its entry, or `at`), and `return_to` checked against the node's
/// current route, the caller's.
fn call(
    manifest: &Manifest,
    bead: &Bead,
    (route, at, return_to, guidance): (&str, Option<&str>, &str, Option<&str>),
    render: &Render,
) -> Result<Effect, String> {
    let name = render(route)?;
    let steps = known_route(manifest, route, &name)?;
    let step = match at {
        Some(t) => step_of(&name, steps, t, render)?,
        None => manifest
            .entry_step(&name)
            .ok_or_else(|| format!("call {name}: the route has no steps"))?
            .to_string(),
    };
    let back = render(return_to)?;
    let caller = &bead.pipeline.route;
    let valid = manifest.route(caller).unwrap_or_default();
    if !valid.contains(&back) {
        return Err(format!(
            "call {name} from {}: return_to {return_to:?} resolved to {back:?}, which is not a \
             step of route {caller} (one of {})",
            bead.pipeline.step,
            valid.join(", ")
        ));
    }
    let guidance = guidance.map(render).transpose()?;
    let kind = manifest.route_kind(&name).unwrap_or(bead.pipeline.kind);
    Ok(Effect::Call {
        route: name,
        kind,
        step,
        return_to: back,
        guidance,
    })
}

/// Where a node switched to `route` from `step` lands without `at`: the step after `step` when
/// `route` holds it (and it is not the last), else the route's entry.
pub fn landing(manifest: &Manifest, route: &str, step: &str) -> String {
    manifest
        .next_step(route, step)
        .or_else(|| manifest.entry_step(route))
        .unwrap_or_default()
        .to_string()
}

fn known_route<'m>(
    manifest: &'m Manifest,
    template: &str,
    name: &str,
) -> Result<&'m [String], String> {
    manifest.route(name).ok_or_else(|| {
        format!(
            "route {template:?} resolved to {name:?}, which is not a declared route (one of {})",
            manifest.route_names()
        )
    })
}

/// Substitute every `{{ name }}` of `template` in one pass and trim the value; an unknown or
/// empty variable, or an empty value, is an error naming the template.
pub fn render(template: &str, bead: &Bead, result: &StepResult) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after
            .find("}}")
            .ok_or_else(|| format!("template {template:?}: `{{{{` without `}}}}`"))?;
        let name = after[..close].trim();
        let value = variable(name, bead, result).ok_or_else(|| {
            format!(
                "template {template:?}: `{{{{ {name} }}}}` has no value on this node (its \
                 result has text: {}, verdict: {}; recorded responses: {})",
                result.text.is_some(),
                result.fields.contains_key("verdict"),
                names(bead.pipeline.responses.keys())
            )
        })?;
        out.push_str(value.trim());
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    let out = out.trim().to_string();
    if out.is_empty() {
        return Err(format!("template {template:?} resolved to an empty value"));
    }
    Ok(out)
}

fn names<'a>(it: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = it.map(String::as_str).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

fn variable(name: &str, bead: &Bead, result: &StepResult) -> Option<String> {
    let found = match name {
        "result.text" => result.text.clone(),
        "result.verdict" => result.fields.get("verdict").map(plain),
        "bead.id" => Some(bead.id.to_string()),
        _ => {
            let step = name.strip_prefix("step.")?.strip_suffix(".response")?;
            bead.pipeline.responses.get(step).map(|r| r.text.clone())
        }
    };
    found.filter(|v| !v.trim().is_empty())
}

#[cfg(test)]
mod tests;
