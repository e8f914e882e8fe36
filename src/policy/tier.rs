//! The request classifier (seed 000): which tier a request gets, by the manifest's ordered rules
//! (`tiers.classify`, [`crate::model::manifest::Tiers`]).
//!
//! Pure and deterministic: the same request and rules give the same tier, rule and sentence.
//! The request's whitespace is collapsed (runs become one space, ends trimmed) and its length
//! counted in code points. A rule's conditions all hold when it matches: one of its `words`
//! appears as whole words (case-insensitive, so "auth" does not match "author" nor "format"
//! "information", unlike the upstream's substring test), the length is at most `max_chars`, at
//! least `min_chars`. The first rule that matches decides; the last rule has no condition.

use serde::Serialize;

use crate::model::manifest::{TierRuleSpec, Tiers, words_of};
use crate::model::tier::{Tier, TierRule};

/// What the classifier chose, and why.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    /// The tier chosen.
    pub tier: Tier,
    /// The deciding rule's position in `tiers.classify`, from 1.
    pub rule: usize,
    /// The deciding rule's name.
    pub rule_name: String,
    /// Why, in words: what in the request matched.
    pub rationale: String,
    /// The request's length in code points, whitespace collapsed.
    pub chars: usize,
}

impl Classification {
    /// `rule N "name": why`, one line.
    pub fn describe(&self) -> String {
        format!(
            "rule {} \"{}\": {}",
            self.rule, self.rule_name, self.rationale
        )
    }

    /// What a bead records beside its tier.
    pub fn record(&self) -> TierRule {
        TierRule {
            index: self.rule,
            name: self.rule_name.clone(),
            rationale: self.rationale.clone(),
        }
    }
}

/// `request` collapsed: whitespace runs become one space, the ends trimmed.
pub fn collapse(request: &str) -> String {
    request.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Classify `request` by `tiers`' rules. `None` only when the rules end without a final rule,
/// which manifest validation refuses.
#[must_use]
pub fn classify(request: &str, tiers: &Tiers) -> Option<Classification> {
    let text = collapse(request);
    let chars = text.chars().count();
    let words = words_of(&text);
    tiers.classify.iter().enumerate().find_map(|(i, rule)| {
        let why = matches(rule, chars, &words)?;
        Some(Classification {
            tier: rule.tier,
            rule: i + 1,
            rule_name: rule.name.clone(),
            rationale: why,
            chars,
        })
    })
}

/// Why `rule` matches a request of `chars` code points and these `words`, or `None`.
fn matches(rule: &TierRuleSpec, chars: usize, words: &[String]) -> Option<String> {
    let mut why = Vec::new();
    if !rule.words.is_empty() {
        let hit = rule
            .words
            .iter()
            .find(|w| has_phrase(words, &words_of(w)))?;
        why.push(format!("the request has the word {hit:?}"));
    }
    if let Some(max) = rule.max_chars {
        if chars > max {
            return None;
        }
        why.push(format!("{chars} characters, at most {max}"));
    }
    if let Some(min) = rule.min_chars {
        if chars < min {
            return None;
        }
        why.push(format!("{chars} characters, at least {min}"));
    }
    if why.is_empty() {
        why.push("no earlier rule matched".to_string());
    }
    Some(why.join(" and "))
}

/// Does `phrase` (a run of words) appear in `words`, word for word?
fn has_phrase(words: &[String], phrase: &[String]) -> bool {
    !phrase.is_empty() && words.windows(phrase.len()).any(|w| w == phrase)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Manifest;

    fn tier_of(request: &str) -> (Tier, String) {
        let c = classify(request, &Manifest::default_manifest().tiers()).unwrap();
        (c.tier, c.rule_name)
    }

    #[test]
    fn whole_words_only_and_phrases_span_separators() {
        assert_eq!(tier_of("Credit the author").0, Tier::Light);
        assert_eq!(tier_of("Fix auth").0, Tier::Substantial);
        assert_eq!(tier_of("Show more information").0, Tier::Light);
        assert_eq!(tier_of("Fix the typo").0, Tier::Trivial);
        assert_eq!(tier_of("A multi service split").0, Tier::Architectural);
        assert_eq!(tier_of("A multi-service split").0, Tier::Architectural);
        assert_eq!(tier_of("A new storage   layer").0, Tier::Architectural);
    }

    #[test]
    fn length_is_code_points_after_collapsing_whitespace() {
        let long_spaces = format!("fix typo{}", " ".repeat(500));
        assert_eq!(tier_of(&long_spaces).0, Tier::Trivial);
        let c = classify("é  é", &Manifest::default_manifest().tiers()).unwrap();
        assert_eq!(c.chars, 3);
        assert!(
            c.rationale.contains("no earlier rule matched"),
            "{}",
            c.rationale
        );
    }
}
