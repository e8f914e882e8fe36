//! Request tiers (seed 000): how much pipeline a request gets.
//!
//! Five tiers, smallest first. The classifier ([`crate::policy::tier`]) picks one of four:
//! `standard` is accepted where a person names a tier (`init-task --tier`, a saved plan) and never
//! chosen by the classifier. An unknown tier is an error wherever it appears: a flag, the
//! manifest's `tiers` section, a bead file. A bead file written before tiers were typed may hold
//! `"tier": "auto"` (the old `init-task` default, meaning "not chosen"); it reads as no tier and
//! is written back without one.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

use super::bead::Kind;

/// A request tier.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// The smallest request (the `trivial` route by default).
    Trivial,
    /// A small task (the `light` route by default).
    Light,
    /// A task a person or a plan names; no classifier chooses it (the `leaf` route by default).
    Standard,
    /// A large task (the `leaf` route by default).
    Substantial,
    /// A campaign, split into tasks (the `root` route by default).
    Architectural,
}

/// What `--tier` takes besides a tier: let the classifier choose.
pub const AUTO: &str = "auto";

impl Tier {
    /// Every tier, smallest first.
    pub const ALL: [Tier; 5] = [
        Tier::Trivial,
        Tier::Light,
        Tier::Standard,
        Tier::Substantial,
        Tier::Architectural,
    ];

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Trivial => "trivial",
            Tier::Light => "light",
            Tier::Standard => "standard",
            Tier::Substantial => "substantial",
            Tier::Architectural => "architectural",
        }
    }

    /// The tier named `s`, if it is one.
    pub fn parse(s: &str) -> Option<Tier> {
        Tier::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// The kind of node a request of this tier becomes: a campaign root for `architectural`,
    /// a leaf for every other tier.
    pub fn kind(self) -> Kind {
        match self {
            Tier::Architectural => Kind::Root,
            _ => Kind::Leaf,
        }
    }

    /// The tier names, for messages: "trivial, light, standard, substantial, architectural".
    pub fn names() -> String {
        Tier::ALL.map(Tier::as_str).join(", ")
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown tier name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownTier(pub String);

impl fmt::Display for UnknownTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown tier {:?} (one of {})", self.0, Tier::names())
    }
}

impl std::error::Error for UnknownTier {}

impl FromStr for Tier {
    type Err = UnknownTier;
    fn from_str(s: &str) -> Result<Tier, UnknownTier> {
        Tier::parse(s).ok_or_else(|| UnknownTier(s.to_string()))
    }
}

impl<'de> Deserialize<'de> for Tier {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A tier as a person asks for it: a named tier, or `auto` (classify the request).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TierChoice {
    /// Let the classifier choose.
    Auto,
    /// This tier.
    Named(Tier),
}

impl FromStr for TierChoice {
    type Err = UnknownTier;
    fn from_str(s: &str) -> Result<TierChoice, UnknownTier> {
        if s == AUTO {
            return Ok(TierChoice::Auto);
        }
        s.parse()
            .map(TierChoice::Named)
            .map_err(|_| UnknownTier(s.to_string()))
    }
}

/// How the classifier chose a node's tier, recorded on the bead beside the tier.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct TierRule {
    /// The deciding rule's position in `tiers.classify`, from 1.
    pub index: usize,
    /// The deciding rule's name.
    pub name: String,
    /// Why it matched, in one sentence.
    pub rationale: String,
}

/// A bead's `pipeline.tier`: a tier, or absent; `"auto"` (written by versions that stored the
/// flag as given) reads as absent; any other name is an error.
pub fn deserialize_bead_tier<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Tier>, D::Error> {
    let Some(name) = Option::<String>::deserialize(d)? else {
        return Ok(None);
    };
    if name == AUTO {
        return Ok(None);
    }
    name.parse().map(Some).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_errors() {
        for t in Tier::ALL {
            assert_eq!(t.as_str().parse::<Tier>(), Ok(t));
        }
        let err = "huge".parse::<Tier>().unwrap_err().to_string();
        assert!(
            err.contains("trivial, light, standard, substantial, architectural"),
            "{err}"
        );
        assert_eq!("auto".parse::<TierChoice>(), Ok(TierChoice::Auto));
        assert!("auto".parse::<Tier>().is_err());
        assert_eq!(Tier::Architectural.kind(), Kind::Root);
        assert_eq!(Tier::Trivial.kind(), Kind::Leaf);
    }
}
