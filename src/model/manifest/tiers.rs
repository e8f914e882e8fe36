//! The manifest's `tiers` section: the classifier's rules (`classify`) and the route each
//! request tier takes (`routes`), typed and validated at load. The classifier that reads the
//! rules is [`crate::policy::tier`]; `docs/manifest.md` ("Request tiers") documents both.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{DEFAULT_MANIFEST, Manifest};
use crate::model::tier::Tier;

/// `tiers`: ordered classifier rules and a route per tier.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Tiers {
    /// Tried in order; the first rule whose every condition holds decides. The last rule has no
    /// condition (the final rule), and only the last.
    pub classify: Vec<TierRuleSpec>,
    /// Tier → the route a node of that tier walks; every tier names one.
    pub routes: BTreeMap<Tier, String>,
}

/// One classifier rule. Its conditions all hold when it matches; a rule without any matches
/// every request.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TierRuleSpec {
    /// Its name, for the classification's reason.
    pub name: String,
    /// The tier it chooses.
    pub tier: Tier,
    /// One of these appears in the request as whole words (case-insensitive; a phrase such as
    /// "storage layer" or "multi-service" is a run of words).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub words: Vec<String>,
    /// The request is at most this many characters (code points, whitespace collapsed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
    /// The request is at least this many characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_chars: Option<usize>,
}

impl TierRuleSpec {
    /// Does the rule match every request?
    pub fn unconditional(&self) -> bool {
        self.words.is_empty() && self.max_chars.is_none() && self.min_chars.is_none()
    }
}

/// The lowercase words of `text`: runs of letters and digits (anything else separates them).
pub fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl Manifest {
    /// The tiers this manifest classifies and routes by: its own `tiers`, else the default
    /// manifest's rules with every leaf tier on the `leaf` route and `architectural` on `root`.
    pub fn tiers(&self) -> Tiers {
        if let Some(t) = &self.tiers {
            return t.clone();
        }
        let default = Manifest::parse(DEFAULT_MANIFEST)
            .ok()
            .and_then(|m| m.tiers)
            .expect("the embedded manifest declares tiers");
        Tiers {
            classify: default.classify,
            routes: Tier::ALL
                .into_iter()
                .map(|t| (t, t.kind().route().to_string()))
                .collect(),
        }
    }

    /// The steps of `base` (the route of a tier's node kind) that `route` leaves out: each must
    /// be `optional: true`, and they are not applicable to a node on `route`.
    pub fn left_out<'m>(&'m self, base: &str, route: &str) -> Vec<&'m str> {
        let on = self.route(route).unwrap_or_default();
        self.route(base)
            .unwrap_or_default()
            .iter()
            .filter(|s| !on.contains(s))
            .map(String::as_str)
            .collect()
    }
}

impl Tiers {
    /// Every problem of the section, each with its JSON path.
    pub fn problems(&self, manifest: &Manifest) -> Vec<String> {
        let mut out = Vec::new();
        self.rule_problems(&mut out);
        for tier in Tier::ALL {
            let Some(route) = self.routes.get(&tier) else {
                out.push(format!(
                    "tiers.routes: no route for tier \"{tier}\" (every tier names one)"
                ));
                continue;
            };
            let at = format!("tiers.routes.{tier}");
            if manifest.route(route).is_none() {
                out.push(format!(
                    "{at}: \"{route}\" is not a route of this manifest (one of {})",
                    manifest.route_names()
                ));
                continue;
            }
            let kind = manifest.route_kind(route);
            if kind.is_some_and(|k| k != tier.kind()) {
                out.push(format!(
                    "{at}: route \"{route}\" is a {} route, but a {tier} request becomes a {} \
                     node (its route's kind in `route_kinds`)",
                    kind.map_or("", |k| k.as_str()),
                    tier.kind().as_str()
                ));
            }
            let base = tier.kind().route();
            for step in manifest.left_out(base, route) {
                if manifest.step(step).is_some_and(|s| !s.optional) {
                    out.push(format!(
                        "{at}: route \"{route}\" leaves out \"{step}\", a required step of route \
                         {base} (a {tier} request becomes a {base} node; only `optional: true` \
                         steps may be left out)"
                    ));
                }
            }
        }
        out
    }

    fn rule_problems(&self, out: &mut Vec<String>) {
        if self.classify.is_empty() {
            out.push(
                "tiers.classify: no rules (the last rule, without conditions, decides every \
                      request no earlier rule matched)"
                    .into(),
            );
        }
        let mut names = BTreeSet::new();
        let last = self.classify.len().saturating_sub(1);
        for (i, rule) in self.classify.iter().enumerate() {
            let at = format!("tiers.classify[{i}]");
            if rule.name.trim().is_empty() {
                out.push(format!("{at}.name: empty rule name"));
            } else if !names.insert(rule.name.as_str()) {
                out.push(format!("{at}.name: duplicate rule \"{}\"", rule.name));
            }
            if rule.tier == Tier::Standard {
                out.push(format!(
                    "{at}.tier: the classifier never chooses \"standard\" (a person names it: \
                     `--tier standard`, a saved plan)"
                ));
            }
            for (j, w) in rule.words.iter().enumerate() {
                if words_of(w).is_empty() {
                    out.push(format!("{at}.words[{j}]: {w:?} holds no letter or digit"));
                }
            }
            if let (Some(min), Some(max)) = (rule.min_chars, rule.max_chars)
                && min > max
            {
                out.push(format!(
                    "{at}: min_chars {min} is above max_chars {max}; it never matches"
                ));
            }
            if i < last && rule.unconditional() {
                out.push(format!(
                    "{at}: a rule without conditions matches every request, so the rules after it \
                     never run; make it the last"
                ));
            }
            if i == last && !rule.unconditional() {
                out.push(format!(
                    "{at}: the last rule must have no conditions (no words, max_chars or \
                     min_chars), so every request gets a tier"
                ));
            }
        }
    }
}
