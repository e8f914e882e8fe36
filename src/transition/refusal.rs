//! Why a verb said no: one enum, matched by kind, printed as the reason a person reads.
//!
//! A refusal is never a fault (exit 1, not 2) and travels one way only: as
//! [`Error::Refused`](crate::Error::Refused). Every kind but two writes nothing. The two that do,
//! [`Refusal::FloorRefused`] and [`Refusal::FloorEscalated`], are a `complete` whose check was
//! recorded: they carry that check's output, so a caller can tell "the check was recorded and
//! said no" from "a precondition said no and nothing was written".

use std::path::PathBuf;

use super::complete::Checked;

/// A verb's refusal. [`Refusal::kind`] is stable for matching; `Display` is the reason.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// The bead is closed.
    Closed { bead: String },
    /// The bead is at another step than the caller named.
    WrongStep {
        bead: String,
        at: String,
        asked: String,
    },
    /// The bead's `seq` moved: not the `--expect-seq` the caller gave, or changed while its
    /// floors ran.
    StaleSeq {
        bead: String,
        seq: u64,
        expected: u64,
        while_checking: bool,
    },
    /// Another holder has the bead.
    ForeignLease {
        bead: String,
        holder: String,
        since: String,
    },
    /// The caller names a holder, but nobody holds the bead any more.
    ClaimLost { bead: String, holder: String },
    /// `record-exit` by a holder that does not hold the bead.
    NotClaimedBy { bead: String, holder: String },
    /// `release` by a holder other than the one holding the bead.
    HeldByOther {
        bead: String,
        holder: String,
        asker: String,
    },
    /// `release --clear` on a bead nobody holds.
    NotClaimed { bead: String },
    /// `record-exit` with no dispatch by that holder to record.
    NoDispatch { bead: String, holder: String },
    /// A person's verb called from a dispatched session.
    NotAPerson { verb: String },
    /// `approve` (or a reject's wish to clear) with no gate pending on the step.
    NothingPending { bead: String, step: String },
    /// `park` on a parked bead.
    AlreadyParked { bead: String, reason: String },
    /// `unpark` on a bead that is not parked.
    NotParked { bead: String },
    /// A dispatch claim on a parked bead.
    Parked { bead: String, reason: String },
    /// A dispatch claim with every attempt on the step spent.
    AttemptsExhausted {
        bead: String,
        step: String,
        spent: u32,
        max: u32,
    },
    /// `split` on a leaf.
    LeafSplit { bead: String },
    /// `split` on a node that split already.
    AlreadySplit {
        bead: String,
        children: Vec<String>,
        seq: u64,
    },
    /// A split's child id is taken.
    ChildExists { child: String },
    /// `set-config --test-paths` names no directory.
    NoSuchDirectory { path: String, repo: PathBuf },
    /// `set-target main` on a node at deep autonomy.
    DeepOnMainline {
        bead: String,
        source: String,
        target: String,
    },
    /// `route --to` a route the manifest does not declare.
    UnknownRoute { route: String, known: Vec<String> },
    /// `route --at` a step that is not on the route.
    StepNotOnRoute { step: String, route: String },
    /// `complete`'s floors refused; the check is recorded.
    FloorRefused(Box<Checked>),
    /// `complete`'s floors could not check; the check is recorded.
    FloorEscalated(Box<Checked>),
}

impl Refusal {
    /// A stable kebab-case name for the kind of refusal.
    pub fn kind(&self) -> &'static str {
        match self {
            Refusal::Closed { .. } => "closed",
            Refusal::WrongStep { .. } => "wrong-step",
            Refusal::StaleSeq { .. } => "stale-seq",
            Refusal::ForeignLease { .. } => "foreign-lease",
            Refusal::ClaimLost { .. } => "claim-lost",
            Refusal::NotClaimedBy { .. } => "not-claimed-by-you",
            Refusal::HeldByOther { .. } => "held-by-other",
            Refusal::NotClaimed { .. } => "not-claimed",
            Refusal::NoDispatch { .. } => "no-dispatch",
            Refusal::NotAPerson { .. } => "not-a-person",
            Refusal::NothingPending { .. } => "nothing-pending",
            Refusal::AlreadyParked { .. } => "already-parked",
            Refusal::NotParked { .. } => "not-parked",
            Refusal::Parked { .. } => "parked",
            Refusal::AttemptsExhausted { .. } => "attempts-exhausted",
            Refusal::LeafSplit { .. } => "leaf-split",
            Refusal::AlreadySplit { .. } => "already-split",
            Refusal::ChildExists { .. } => "child-exists",
            Refusal::NoSuchDirectory { .. } => "no-such-directory",
            Refusal::DeepOnMainline { .. } => "deep-on-mainline",
            Refusal::UnknownRoute { .. } => "unknown-route",
            Refusal::StepNotOnRoute { .. } => "step-not-on-route",
            Refusal::FloorRefused(_) => "floor-refused",
            Refusal::FloorEscalated(_) => "floor-escalated",
        }
    }

    /// The word a person reads before the reason: `escalated` when a floor could not check,
    /// else `refused`.
    pub fn headline(&self) -> &'static str {
        match self {
            Refusal::FloorEscalated(_) => "escalated",
            _ => "refused",
        }
    }

    /// The recorded check, when the refusal is a `complete` whose floors said no.
    pub fn checked(&self) -> Option<&Checked> {
        match self {
            Refusal::FloorRefused(c) | Refusal::FloorEscalated(c) => Some(c),
            _ => None,
        }
    }

    /// Did this refusal write something (a recorded check)?
    pub fn recorded(&self) -> bool {
        self.checked().is_some()
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Closed { bead } => write!(f, "bead {bead} is closed"),
            Refusal::WrongStep { bead, at, asked } => {
                write!(f, "bead {bead} is at step {at}, not {asked}")
            }
            Refusal::StaleSeq {
                bead,
                seq,
                expected,
                while_checking: false,
            } => write!(
                f,
                "bead {bead} changed: its seq is {seq}, expected {expected}"
            ),
            Refusal::StaleSeq {
                bead,
                seq,
                expected,
                while_checking: true,
            } => write!(
                f,
                "bead {bead} changed while its floors ran (seq {expected} → {seq}); run the check again"
            ),
            Refusal::ForeignLease {
                bead,
                holder,
                since,
            } => write!(
                f,
                "bead {bead} is claimed by {holder} since {since}; wait for it, or clear it with \
                 `splice transition release --bead {bead} --clear --reason R`"
            ),
            Refusal::ClaimLost { bead, holder } => write!(
                f,
                "bead {bead} is not claimed by {holder} (its claim was released or cleared)"
            ),
            Refusal::NotClaimedBy { bead, holder } => {
                write!(f, "bead {bead} is not claimed by {holder}")
            }
            Refusal::HeldByOther {
                bead,
                holder,
                asker,
            } => write!(f, "bead {bead} is claimed by {holder}, not {asker}"),
            Refusal::NotClaimed { bead } => write!(f, "bead {bead} is not claimed"),
            Refusal::NoDispatch { bead, holder } => write!(
                f,
                "bead {bead} has no dispatch by {holder} to record an exit for"
            ),
            Refusal::NotAPerson { verb } => write!(
                f,
                "`{verb}` is a person's verb; a dispatched session (SPLICE_DISPATCHED=1) cannot run it"
            ),
            Refusal::NothingPending { bead, step } => write!(
                f,
                "no gate is pending on {step} of bead {bead}; a gate is pending only after \
                 `complete` passed its floors"
            ),
            Refusal::AlreadyParked { bead, reason } => {
                write!(f, "bead {bead} is already parked: {reason}")
            }
            Refusal::NotParked { bead } => write!(f, "bead {bead} is not parked"),
            Refusal::Parked { bead, reason } => {
                write!(f, "bead {bead} is parked ({reason}); unpark it first")
            }
            Refusal::AttemptsExhausted {
                bead,
                step,
                spent,
                max,
            } => write!(
                f,
                "bead {bead}: attempts on {step} exhausted ({spent} of {max})"
            ),
            Refusal::LeafSplit { bead } => write!(
                f,
                "bead {bead} is a leaf; only a root or compound node splits (a spec with \
                 `verdict: compound` makes a leaf compound)"
            ),
            Refusal::AlreadySplit {
                bead,
                children,
                seq,
            } => write!(
                f,
                "bead {bead} was already split into {} (at seq {seq}); a node splits once",
                children.join(", ")
            ),
            Refusal::ChildExists { child } => write!(f, "bead {child} already exists"),
            Refusal::NoSuchDirectory { path, repo } => write!(
                f,
                "--test-paths {path:?} names no existing directory under {}",
                repo.display()
            ),
            Refusal::DeepOnMainline {
                bead,
                source,
                target,
            } => write!(
                f,
                "bead {bead} runs at deep autonomy (from {source}); deep work lands on a campaign \
                 branch, never on {target}"
            ),
            Refusal::UnknownRoute { route, known } => write!(
                f,
                "unknown route {route:?} (the manifest has: {})",
                known.join(", ")
            ),
            Refusal::StepNotOnRoute { step, route } => {
                write!(f, "step {step:?} is not on route {route}")
            }
            Refusal::FloorRefused(c) | Refusal::FloorEscalated(c) => f.write_str(&c.reason),
        }
    }
}
