//! Result branches (`on_result`): what a step's result may do to its node, typed and validated
//! at load. The pure evaluation is [`crate::policy::branch`]; the writer applies it.
//!
//! Each branch is one firing point (`when`), one matcher (`match`) and one action (`action`).
//! Matchers and actions are objects with one key each (plus `equals` with `field`, `guidance`
//! with `goto` or `call`, `at` with `route` or `call`, `return_to` with `call`, which needs it);
//! anything else is refused with its JSON path, as is a regex that does not compile within
//! [`REGEX_SIZE_LIMIT`].

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Manifest, Step};

/// The longest `matches` pattern, in bytes.
pub(super) const REGEX_MAX_LEN: usize = 1024;
/// The compiled size a `matches` regex may take (bytes, the `regex` crate's `size_limit`).
pub(super) const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// When a branch is tried.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum When {
    /// After a check of the step refused.
    Refused,
    /// When the step is accepted and advances (floors passed, gate approved or relaxed).
    Accepted,
    /// Either.
    Any,
}

/// The matcher, as written: exactly one of its keys (validated at load).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// Matches when the result text contains this, case-insensitively.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    /// Matches when the result text matches this regex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<String>,
    /// With `equals`: matches when this field of the result (JSON) equals it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The value `field` must equal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Value>,
    /// Matches when the dispatch exited with this code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Matches always (`true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always: Option<bool>,
}

/// The action, as written: exactly one directive (validated at load).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// Go on as the route declares (`true`).
    #[serde(default, rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_: Option<bool>,
    /// Move the node to this step of its route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goto: Option<String>,
    /// Revision guidance for the next dispatch (with `goto`, `route` or `call`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guidance: Option<String>,
    /// Switch the node to this route (a template).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// With `route` or `call`: the step to enter at (default the route's first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// Park the node with this reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort: Option<String>,
    /// Ask a person to approve a switch to this route (a route gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggest_route: Option<String>,
    /// Run this route for the node, then come back (`return_to`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// Where a `call` comes back to: a step of a route holding the calling step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_to: Option<String>,
}

/// One branch of a step's `on_result`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Branch {
    /// When it is tried: after a refusal, an acceptance, or either.
    pub when: When,
    /// What it matches on.
    #[serde(rename = "match")]
    pub matcher: Match,
    /// What it does when it matches.
    pub action: Action,
}

/// A validated matcher.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Matcher<'b> {
    /// `contains`.
    Contains(&'b str),
    /// `matches`.
    Matches(&'b str),
    /// `field` + `equals`.
    FieldEquals(&'b str, &'b Value),
    /// `exit_code`.
    ExitCode(i64),
    /// `always`.
    Always,
}

/// A validated action.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Directive<'b> {
    /// `continue`.
    Continue,
    /// `goto` a step, with optional guidance.
    Goto {
        /// The step.
        step: &'b str,
        /// Guidance for its next dispatch.
        guidance: Option<&'b str>,
    },
    /// `route`: switch routes.
    Route {
        /// The route (a template).
        route: &'b str,
        /// The step to enter at.
        at: Option<&'b str>,
    },
    /// `abort` with a reason.
    Abort(&'b str),
    /// `suggest_route`: a route gate.
    SuggestRoute(&'b str),
    /// Run `route` from `at` (default its entry), then return to `return_to` on the caller's
    /// route; `guidance` is given to the callee's first dispatch.
    Call {
        /// The route called.
        route: &'b str,
        /// The step to enter at.
        at: Option<&'b str>,
        /// The caller's step to return to.
        return_to: &'b str,
        /// Guidance for the callee's first dispatch.
        guidance: Option<&'b str>,
    },
}

impl Match {
    /// The matcher, when exactly one is written (`always` only as `true`).
    pub fn matcher(&self) -> Option<Matcher<'_>> {
        let mut found = Vec::new();
        if let Some(t) = &self.contains {
            found.push(Matcher::Contains(t));
        }
        if let Some(p) = &self.matches {
            found.push(Matcher::Matches(p));
        }
        if let (Some(f), Some(v)) = (&self.field, &self.equals) {
            found.push(Matcher::FieldEquals(f, v));
        }
        if let Some(c) = self.exit_code {
            found.push(Matcher::ExitCode(c));
        }
        if self.always == Some(true) {
            found.push(Matcher::Always);
        }
        match found.as_slice() {
            [one]
                if self.field.is_some() == self.equals.is_some() && self.always != Some(false) =>
            {
                Some(*one)
            }
            _ => None,
        }
    }
}

impl Action {
    /// The directive, when exactly one is written (with only its own companions).
    pub fn directive(&self) -> Option<Directive<'_>> {
        let mut found = Vec::new();
        if self.continue_ == Some(true) {
            found.push(Directive::Continue);
        }
        if let Some(step) = &self.goto {
            found.push(Directive::Goto {
                step,
                guidance: self.guidance.as_deref(),
            });
        }
        if let Some(route) = &self.route {
            found.push(Directive::Route {
                route,
                at: self.at.as_deref(),
            });
        }
        if let Some(r) = &self.abort {
            found.push(Directive::Abort(r));
        }
        if let Some(r) = &self.suggest_route {
            found.push(Directive::SuggestRoute(r));
        }
        if let (Some(route), Some(return_to)) = (&self.call, &self.return_to) {
            found.push(Directive::Call {
                route,
                at: self.at.as_deref(),
                return_to,
                guidance: self.guidance.as_deref(),
            });
        }
        let companions_fit =
            (self.guidance.is_none() || self.goto.is_some() || self.call.is_some())
                && (self.at.is_none() || self.route.is_some() || self.call.is_some())
                && self.call.is_some() == self.return_to.is_some()
                && self.continue_ != Some(false);
        match found.as_slice() {
            [one] if companions_fit => Some(*one),
            _ => None,
        }
    }
}

/// Compile a `matches` pattern within the limits.
pub fn compile(pattern: &str) -> Result<regex::Regex, String> {
    if pattern.len() > REGEX_MAX_LEN {
        return Err(format!(
            "pattern is {} bytes, over the {REGEX_MAX_LEN}-byte limit",
            pattern.len()
        ));
    }
    regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| e.to_string().replace('\n', " "))
}

/// Does `text` hold a `{{ … }}` template?
pub(super) fn is_template(text: &str) -> bool {
    text.contains("{{")
}

/// The template variables a branch may name (plus `step.<name>.response` for a declared step).
pub(super) const BRANCH_VARIABLES: &[&str] = &["result.verdict", "result.text", "bead.id"];

impl Manifest {
    /// The problems of step `i`'s branches, each with its JSON path.
    pub(super) fn branch_problems(&self, i: usize, step: &Step, out: &mut Vec<String>) {
        let steps: BTreeSet<&str> = self.steps.iter().map(|s| s.name.as_str()).collect();
        // The steps a `goto` may name: those of every route that holds this step.
        let reachable: BTreeSet<&str> = self
            .routes
            .values()
            .filter(|r| r.contains(&step.name))
            .flatten()
            .map(String::as_str)
            .collect();
        for (j, b) in step.on_result.iter().enumerate() {
            let at = format!("steps[{i}].on_result[{j}]");
            self.matcher_problems(&at, &b.matcher, out);
            let Some(directive) = b.action.directive() else {
                if b.action.call.is_some() != b.action.return_to.is_some() {
                    out.push(format!(
                        "{at}.action: `call` and `return_to` go together (the route to run, and \
                         the step of this route the node comes back to)"
                    ));
                    continue;
                }
                out.push(format!(
                    "{at}.action: give exactly one of continue (true), goto (with optional \
                     guidance), route (with optional at), abort, suggest_route or call (with \
                     return_to, and optional at and guidance)"
                ));
                continue;
            };
            let mut texts: Vec<(&str, &str)> = Vec::new();
            match directive {
                Directive::Continue => {}
                Directive::Goto { step: to, guidance } => {
                    texts.push(("goto", to));
                    if let Some(g) = guidance {
                        texts.push(("guidance", g));
                    }
                    if !is_template(to) && !reachable.contains(to) {
                        out.push(format!(
                            "{at}.action.goto: \"{to}\" is not a step of a route holding \
                             \"{}\" (one of {})",
                            step.name,
                            join(&reachable)
                        ));
                    }
                }
                Directive::Route { route, at: entry } => {
                    texts.push(("route", route));
                    self.route_target_problem(&format!("{at}.action.route"), route, out);
                    if let Some(s) = entry {
                        texts.push(("at", s));
                        self.entry_problem(&at, route, s, out);
                    }
                }
                Directive::Abort(reason) => {
                    texts.push(("abort", reason));
                    if reason.trim().is_empty() {
                        out.push(format!("{at}.action.abort: say why the node is parked"));
                    }
                }
                Directive::SuggestRoute(route) => {
                    texts.push(("suggest_route", route));
                    self.route_target_problem(&format!("{at}.action.suggest_route"), route, out);
                }
                Directive::Call {
                    route,
                    at: entry,
                    return_to,
                    guidance,
                } => {
                    texts.push(("call", route));
                    texts.push(("return_to", return_to));
                    self.route_target_problem(&format!("{at}.action.call"), route, out);
                    if let Some(s) = entry {
                        texts.push(("at", s));
                        self.entry_problem(&at, route, s, out);
                    }
                    if let Some(g) = guidance {
                        texts.push(("guidance", g));
                    }
                    if !is_template(return_to) && !reachable.contains(return_to) {
                        out.push(format!(
                            "{at}.action.return_to: \"{return_to}\" is not a step of a route \
                             holding \"{}\" (one of {})",
                            step.name,
                            join(&reachable)
                        ));
                    }
                }
            }
            for (key, text) in texts {
                template_problems(&format!("{at}.action.{key}"), text, &steps, out);
            }
        }
    }

    fn matcher_problems(&self, at: &str, m: &Match, out: &mut Vec<String>) {
        if m.always == Some(false) {
            out.push(format!(
                "{at}.match.always: only `true` (a branch that never fires is a typo)"
            ));
        }
        if m.field.is_some() != m.equals.is_some() {
            out.push(format!("{at}.match: `field` and `equals` go together"));
        }
        match m.matcher() {
            None => out.push(format!(
                "{at}.match: give exactly one of contains, matches, field + equals, exit_code \
                 or always: true"
            )),
            Some(Matcher::Matches(p)) => {
                if let Err(e) = compile(p) {
                    out.push(format!(
                        "{at}.match.matches: bad regex {}: {e}",
                        crate::model::id::shown(p)
                    ));
                }
            }
            Some(_) => {}
        }
    }

    /// An `at` (of a `route` or a `call`) that is no step of the route it names.
    fn entry_problem(&self, at: &str, route: &str, step: &str, out: &mut Vec<String>) {
        if !is_template(step)
            && !is_template(route)
            && self
                .route(route)
                .is_some_and(|r| !r.iter().any(|x| x == step))
        {
            out.push(format!(
                "{at}.action.at: \"{step}\" is not a step of route {route}"
            ));
        }
    }

    fn route_target_problem(&self, at: &str, route: &str, out: &mut Vec<String>) {
        if !is_template(route) && self.route(route).is_none() {
            out.push(format!(
                "{at}: \"{route}\" is not a declared route (one of {})",
                self.route_names()
            ));
        }
    }
}

fn join(names: &BTreeSet<&str>) -> String {
    names.iter().copied().collect::<Vec<_>>().join(", ")
}

/// Every `{{ name }}` of a branch's text is closed and a variable a branch may read.
fn template_problems(at: &str, text: &str, steps: &BTreeSet<&str>, out: &mut Vec<String>) {
    let Some(names) = super::check::template_names(text) else {
        out.push(format!("{at}: `{{{{` without a closing `}}}}`"));
        return;
    };
    for name in names {
        let known = BRANCH_VARIABLES.contains(&name)
            || name
                .strip_prefix("step.")
                .and_then(|r| r.strip_suffix(".response"))
                .is_some_and(|s| steps.contains(s));
        if !known {
            out.push(format!(
                "{at}: unknown template variable `{{{{{name}}}}}` (one of {}, or \
                 step.<a declared step>.response)",
                BRANCH_VARIABLES.join(", ")
            ));
        }
    }
}
