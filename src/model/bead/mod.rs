//! A bead: one work item, one pretty-printed JSON file under `.splice/beads/`.
//!
//! The top-level fields follow bd's issue format where bd has the field. `pipeline` is splice's
//! reserved metadata: only the writer (`src/transition/`) changes it. Fields this version does not
//! know, at the top level and inside `pipeline`, are kept in `extra` and written back untouched.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::Text;

use super::manifest::Autonomy;
use super::tier::{Tier, TierRule};
use super::usage::Usage;

mod records;
mod state;

mod counts;
mod sparse;
mod thin;

pub use counts::Counts;
pub use records::{
    Acceptance, CallFrame, Cancelled, Check, CriticStanding, DeadLetter, Dispatch, ExitKind,
    ExitRecord, Gate, GateLand, GateState, KeptReview, Lease, MAX_TRANSIENT, PlanApproval,
    Proposal, Provenance, ReviewVerdict, Routing, RoutingEffect, SplitRecord, StepEntry,
    StepResponse, Verdict,
};
pub use sparse::{Extra, Few, Sparse};
pub use state::NodeState;
pub use thin::ThinText;

/// The bead file shape this build writes. A file without `schema_version` is of the shape before
/// it was recorded (read as is, rewritten in this shape); a newer one is refused.
pub const BEAD_SCHEMA: u32 = 1;

/// Lifecycle status, as bd spells it. bd and br have more statuses than splice acts on; every
/// one is kept verbatim (an unknown one too, as [`Status::Other`]) and written back as read.
/// Two count as closed, for dependencies and the run status: `closed` and `tombstone` (bd's
/// deleted issue); every other status is open (`docs/bd-interop.md`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Status {
    /// `open`.
    #[default]
    Open,
    /// `in_progress`.
    InProgress,
    /// `blocked`.
    Blocked,
    /// `deferred` (bd).
    Deferred,
    /// `hooked` (bd).
    Hooked,
    /// `pinned` (bd).
    Pinned,
    /// `closed`.
    Closed,
    /// `tombstone`: bd's deleted issue.
    Tombstone,
    /// A status this build does not know, as the file spells it (a thin text: it keeps
    /// `Status` one word wide in every bead).
    Other(ThinText),
}

impl Status {
    /// The statuses this build names, in the documented table's order.
    pub const KNOWN: &[Status] = &[
        Status::Open,
        Status::InProgress,
        Status::Blocked,
        Status::Deferred,
        Status::Hooked,
        Status::Pinned,
        Status::Closed,
        Status::Tombstone,
    ];

    /// The status `word` spells (an unknown word is kept as [`Status::Other`]).
    pub fn parse(word: &str) -> Status {
        Status::KNOWN
            .iter()
            .find(|s| s.as_str() == word)
            .cloned()
            .unwrap_or_else(|| Status::Other(word.into()))
    }

    /// Its word in the file.
    pub fn as_str(&self) -> &str {
        match self {
            Status::Open => "open",
            Status::InProgress => "in_progress",
            Status::Blocked => "blocked",
            Status::Deferred => "deferred",
            Status::Hooked => "hooked",
            Status::Pinned => "pinned",
            Status::Closed => "closed",
            Status::Tombstone => "tombstone",
            Status::Other(word) => word,
        }
    }

    /// Does this status count as closed (for dependencies and the run status)?
    pub fn is_closed(&self) -> bool {
        matches!(self, Status::Closed | Status::Tombstone)
    }
}

impl Serialize for Status {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Status, D::Error> {
        let word = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(Status::parse(&word))
    }
}

/// Which route family a node walks.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A campaign root: design, PRP, issues, delegation, integration.
    Root,
    /// A container: a spec, split into children, then integrated.
    Compound,
    /// One unit of work: spec, implement, review, deliver.
    #[default]
    Leaf,
}

impl Kind {
    /// Its word in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Root => "root",
            Kind::Compound => "compound",
            Kind::Leaf => "leaf",
        }
    }

    /// The route a node of this kind walks (the manifest must declare it).
    pub fn route(self) -> &'static str {
        self.as_str()
    }

    /// The kind whose route is `route`, if it is one of the three families.
    pub fn for_route(route: &str) -> Option<Kind> {
        [Kind::Root, Kind::Compound, Kind::Leaf]
            .into_iter()
            .find(|k| k.route() == route)
    }
}

/// What a spec says its node is: one unit of work, or a container to split.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SpecVerdict {
    /// One unit of work.
    Leaf,
    /// A container to split.
    Compound,
}

impl SpecVerdict {
    /// The verdict a spec's front matter names, if it is one.
    pub fn parse(word: &str) -> Option<SpecVerdict> {
        [SpecVerdict::Leaf, SpecVerdict::Compound]
            .into_iter()
            .find(|v| v.as_str() == word)
    }

    /// Its word in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            SpecVerdict::Leaf => Kind::Leaf.as_str(),
            SpecVerdict::Compound => Kind::Compound.as_str(),
        }
    }
}

/// Where a node's work lands and how.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryMethod {
    /// Open a pull request.
    Pr,
    /// Merge into the target directly (splice merges).
    Direct,
}

impl DeliveryMethod {
    /// The method its word names; `None` for any other.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pr" => Some(Self::Pr),
            "direct" => Some(Self::Direct),
            _ => None,
        }
    }
    /// Its word in config and the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pr => "pr",
            Self::Direct => "direct",
        }
    }
}

/// A dependency on another bead, as bd records it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Dependency {
    /// The bead depended on.
    pub depends_on_id: Text,
    /// The dependency's type; only `blocks` blocks.
    #[serde(rename = "type", default = "blocks")]
    pub dep_type: Text,
    /// Fields this version does not know, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

fn blocks() -> Text {
    "blocks".into()
}

/// splice's reserved metadata on a bead. Only the writer changes it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Pipeline {
    /// Incremented by the writer on every transition of this bead.
    pub seq: u64,
    /// Which route family it walks.
    pub kind: Kind,
    /// Its current route.
    pub route: Text,
    /// Its current step on `route`.
    pub step: Text,
    /// The `seq` at which the node entered `step`; "since entry" means a seq above this.
    #[serde(default)]
    pub entered: u64,
    /// The request tier (`"auto"` in an older file reads as none: [`crate::model::tier`]).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::tier::deserialize_bead_tier"
    )]
    pub tier: Option<Tier>,
    /// The classifier's rule that chose `tier`; absent when a person named the tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier_rule: Option<Box<TierRule>>,
    /// Its own autonomy level, when set (else inherited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autonomy: Option<Autonomy>,
    /// Its own delivery target branch, when set (else inherited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<ThinText>,
    /// Its own delivery method, when set (else inherited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<DeliveryMethod>,
    /// The scenario ids it owns.
    #[serde(default, skip_serializing_if = "Few::is_empty")]
    pub scenarios: Few<String>,
    /// Its declared file scope: paths that serialize sibling dispatches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<Text>,
    /// The claim on it, when claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Box<Lease>>,
    /// Step name → attempts used on it.
    #[serde(default, skip_serializing_if = "Counts::is_empty")]
    pub attempts: Counts,
    /// The last dispatch started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_dispatch: Option<Box<Dispatch>>,
    /// Its typed dispatch exits, oldest first (at most [`MAX_EXITS`]).
    #[serde(default, skip_serializing_if = "Few::is_empty")]
    pub exits: Few<ExitRecord>,
    /// The latest proposal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<Box<Proposal>>,
    /// The latest check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_check: Option<Box<Check>>,
    /// The latest gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Box<Gate>>,
    /// Set when it is parked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead_letter: Option<Box<DeadLetter>>,
    /// Set by `splice cancel`: closed, and the work will not be done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<Box<Cancelled>>,
    /// Revision guidance for the next dispatch: a review's text or a person's rejection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guidance: Option<ThinText>,
    /// A loop step's iterations, each measured and judged (`docs/monitor.md`; at most
    /// [`MAX_TRAJECTORY`](crate::model::trajectory::MAX_TRAJECTORY), the oldest go first).
    #[serde(default, skip_serializing_if = "Few::is_empty")]
    pub trajectory: Few<crate::model::trajectory::Iteration>,
    /// The node's one escalation to `[agent] escalation_command`, when it escalated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<Box<crate::model::trajectory::Escalation>>,
    /// Totals over the node's dispatches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<Usage>>,
    /// The commit its review reviewed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewed_sha: Option<ThinText>,
    /// The reviews its checks read, kept in `.splice/reviews/<id>/` (oldest first, at most
    /// [`MAX_REVIEWS`]; the files stay).
    #[serde(default, skip_serializing_if = "Few::is_empty")]
    pub reviews: Few<KeptReview>,
    /// Its delivery's pull request, once recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr_url: Option<ThinText>,
    /// Which split created it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Box<Provenance>>,
    /// On a parent: the children its split sanctioned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<Box<SplitRecord>>,
    /// The spec's verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<SpecVerdict>,
    /// Every step entry, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<StepEntry>,
    /// On the scope root: the suite command the `suite` and `coverage` floors run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite_cmd: Option<ThinText>,
    /// On the scope root: where `coverage` looks for scenario ids on test declarations.
    #[serde(default, skip_serializing_if = "Few::is_empty")]
    pub test_paths: Few<String>,
    /// On the scope root: the last pass's envelope, compact (`record-run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_last: Option<Box<Value>>,
    /// The acceptance checks a saved plan gave this task (`docs/plan.md`).
    #[serde(default, skip_serializing_if = "Few::is_empty")]
    pub acceptance: Few<Acceptance>,
    /// On a request's root (a lone task, a campaign): the intent its steps receive, as
    /// `[plan] distiller` distilled it (`model::intent`; without it, the deterministic cut).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Box<crate::model::intent::Intent>>,
    /// On a plan's campaign root: the person's approval of the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Box<PlanApproval>>,
    /// Step name → the final response of its latest dispatch, bounded and redacted, for result
    /// branches (`{{ step.<name>.response }}`, `contains`, `matches`).
    #[serde(default, skip_serializing_if = "Sparse::is_empty")]
    pub responses: Sparse<BTreeMap<String, StepResponse>>,
    /// On a bead imported from bd: what its export needs to give the record back
    /// (`docs/bd-interop.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<Box<crate::model::bd::Imported>>,
    /// Every result branch that fired on this node, oldest first.
    #[serde(default, skip_serializing_if = "Few::is_empty")]
    pub routing: Few<Routing>,
    /// The open calls (a branch's `call`), outermost first: where the node returns when its
    /// route ends (`docs/manifest.md`, "Call and return").
    #[serde(default, skip_serializing_if = "Few::is_empty")]
    pub calls: Few<CallFrame>,
    /// Fields this version does not know, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// How many open calls a park reason names (the innermost); the rest are counted.
const CALLS_NAMED: usize = 4;

/// A name as a park reason shows it: at most 64 characters, then `…`.
fn clip(name: &str) -> std::borrow::Cow<'_, str> {
    match name.char_indices().nth(64) {
        Some((end, _)) => format!("{}…", &name[..end]).into(),
        None => name.into(),
    }
}

impl Pipeline {
    /// The open calls in words, innermost first, for a park reason: which route was called from
    /// which step, and where it returns. `None` outside a call.
    pub fn call_context(&self) -> Option<String> {
        let frames = &self.calls;
        let last = frames.last()?;
        // A frame is read from a file anyone may have edited: each name is cut short.
        let one = |f: &CallFrame| {
            format!(
                "route {} was called from {} (route {}) and returns to {}",
                clip(&f.callee),
                clip(&f.step),
                clip(&f.route),
                clip(&f.return_to)
            )
        };
        if frames.len() == 1 {
            return Some(format!("inside a call: {}", one(last)));
        }
        let named: Vec<String> = frames.iter().rev().take(CALLS_NAMED).map(one).collect();
        let more = frames.len().saturating_sub(CALLS_NAMED);
        let tail = match more {
            0 => String::new(),
            n => format!("; and {n} more"),
        };
        Some(format!(
            "inside {} calls, innermost first: {}{tail}",
            frames.len(),
            named.join("; ")
        ))
    }

    /// Is the bead a pipeline node (on a route)? A *plain* bead (imported from bd, or made by
    /// `splice create`) has no route until a person starts it (`splice start`): decide and the
    /// run status pass it by, though a node may depend on it.
    pub fn is_node(&self) -> bool {
        !self.route.is_empty()
    }
}

/// One work item.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Bead {
    /// The file's shape ([`BEAD_SCHEMA`]); 0 when the file predates the field.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub schema_version: u32,
    /// Its id: `sp-` and base36, children `parent.N`.
    pub id: Text,
    /// A one-line title.
    pub title: Text,
    /// What the work is.
    #[serde(default)]
    pub description: String,
    /// Its lifecycle status.
    #[serde(default)]
    pub status: Status,
    /// 0 (highest) to 4, as bd orders it.
    #[serde(default = "default_priority")]
    pub priority: i64,
    /// bd's issue type (`task`, `bug`, …).
    #[serde(default = "default_issue_type")]
    pub issue_type: Text,
    /// bd's labels.
    #[serde(default)]
    pub labels: Vec<Text>,
    /// The parent's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Text>,
    /// Its dependencies on other beads.
    #[serde(default)]
    pub dependencies: Vec<Dependency>,
    /// When it was created (RFC 3339 UTC).
    #[serde(default)]
    pub created_at: Text,
    /// When it last changed (RFC 3339 UTC).
    #[serde(default)]
    pub updated_at: Text,
    /// When it was closed (RFC 3339 UTC).
    #[serde(default)]
    pub closed_at: Option<Text>,
    /// Why it was closed.
    #[serde(default)]
    pub close_reason: Option<ThinText>,
    /// bd's free-form metadata, kept.
    #[serde(default)]
    pub metadata: Extra,
    /// splice's reserved metadata: only the writer changes it.
    #[serde(default)]
    pub pipeline: Pipeline,
    /// Fields this version does not know, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn default_priority() -> i64 {
    2
}

fn default_issue_type() -> Text {
    "task".into()
}

/// How many typed exits a bead keeps; older ones live on in the journal.
pub const MAX_EXITS: usize = 20;

/// How many kept reviews a bead lists; older ones live on in the journal and their files.
pub const MAX_REVIEWS: usize = 20;

impl Bead {
    /// A new open bead with no pipeline: a plain bead until it is put on a route.
    pub fn new(id: String, title: String, description: String, now: &str) -> Bead {
        Bead {
            schema_version: BEAD_SCHEMA,
            id: id.into(),
            title: title.into(),
            description,
            status: Status::Open,
            priority: default_priority(),
            issue_type: default_issue_type(),
            labels: Vec::new(),
            parent: None,
            dependencies: Vec::new(),
            created_at: now.into(),
            updated_at: now.into(),
            closed_at: None,
            close_reason: None,
            metadata: Extra::new(),
            pipeline: Pipeline::default(),
            extra: Extra::new(),
        }
    }

    /// On a route ([`Pipeline::is_node`]).
    pub fn is_node(&self) -> bool {
        self.pipeline.is_node()
    }

    /// Closed or tombstoned ([`Status::is_closed`]).
    pub fn is_closed(&self) -> bool {
        self.status.is_closed()
    }

    /// Advance `seq` for a transition and stamp `updated_at`; returns the new seq. The writer
    /// writes every bead it touches in this build's shape.
    pub fn bump(&mut self, now: &str) -> u64 {
        self.schema_version = BEAD_SCHEMA;
        self.pipeline.seq = self.pipeline.seq.saturating_add(1);
        self.updated_at = now.into();
        self.pipeline.seq
    }

    /// Move the node to `step` (a new entry: attempts, proposal and checks of the old step no
    /// longer count). `seq` must be the seq of the transition doing it.
    pub fn enter_step(&mut self, step: &str, seq: u64, now: &str) {
        let before = self.attempts_on(step);
        self.pipeline.step = step.into();
        self.pipeline.entered = seq;
        self.pipeline.history.push(StepEntry {
            step: step.into(),
            seq,
            at: now.into(),
            head: None,
            attempts_before: (before > 0).then_some(before),
        });
    }

    /// Park (dead-letter) the node at `step` for `reason`; inside a call the recorded reason
    /// also names the call ([`Pipeline::call_context`]). Returns the reason recorded.
    ///
    /// The one place a node is parked; what parks a node, every caller:
    ///
    /// | cause | decided by | applied by |
    /// |---|---|---|
    /// | attempts (or a loop's iterations) exhausted on a step | decide's `Action::Park` (`decide/rules.rs`) | the runner's `park` act → `transition::park` |
    /// | a loop out of time, iterations or budget; the pass monitor asking a person with none there | decide's `Action::Park` (`decide/looping.rs`) | the same |
    /// | a person | `splice transition park` | `transition::park` |
    /// | a dispatch whose command could not start (`not-started`), or an unauthorized exit without a proposal | `transition record-exit` | `transition::record` |
    /// | a result branch's `abort` or `park`, or a template that does not resolve | the step's `on_result` (`policy::branch`) | `transition::branch` |
    /// | a called route that ends and cannot return (its frame does not fit the manifest) | `policy::call` | `transition::advance` (`transition/mod.rs`) |
    ///
    /// A parked node rests `parked` (decide's dead-letter rule) until `splice transition
    /// unpark`.
    pub fn park(&mut self, step: &str, reason: &str, seq: u64, now: &str) -> String {
        let reason = match self.pipeline.call_context() {
            Some(call) => format!("{reason} ({call})"),
            None => reason.to_string(),
        };
        self.pipeline.dead_letter = Some(Box::new(DeadLetter {
            step: step.to_string(),
            reason: reason.clone(),
            seq,
            at: now.to_string(),
        }));
        reason
    }

    /// Close the bead (the last step of its route passed).
    pub fn close(&mut self, reason: &str, now: &str) {
        self.status = Status::Closed;
        self.closed_at = Some(now.into());
        self.close_reason = Some(reason.into());
        self.pipeline.lease = None;
    }

    /// Closed by `splice cancel`: the work will not be done. A bead reopened by hand (bd) is not.
    pub fn is_cancelled(&self) -> bool {
        self.is_closed() && self.pipeline.cancelled.is_some()
    }

    /// Closed and not cancelled: its work was done (by its route, or another way).
    pub fn is_done(&self) -> bool {
        self.is_closed() && self.pipeline.cancelled.is_none()
    }

    /// The blocking dependencies' ids.
    pub fn blockers(&self) -> impl Iterator<Item = &str> {
        self.dependencies
            .iter()
            .filter(|d| d.dep_type == "blocks")
            .map(|d| d.depends_on_id.as_str())
    }

    /// Attempts spent on `step` since the last unpark.
    pub fn attempts_on(&self, step: &str) -> u32 {
        self.pipeline.attempts.get(step).copied().unwrap_or(0)
    }

    /// The attempts used on the current step since the node entered it (a loop step's
    /// iterations and unmeasured dispatches of this visit).
    pub fn attempts_since_entry(&self) -> u32 {
        let p = &self.pipeline;
        let before = p
            .history
            .iter()
            .rev()
            .find(|e| e.step == p.step && e.seq == p.entered)
            .and_then(|e| e.attempts_before)
            .unwrap_or(0);
        self.attempts_on(&p.step).saturating_sub(before)
    }

    /// A loop step's iterations on the current step since the node entered it, in order.
    pub fn iterations_since_entry(
        &self,
    ) -> impl Iterator<Item = &crate::model::trajectory::Iteration> {
        let p = &self.pipeline;
        crate::model::trajectory::since_entry(&p.trajectory, &p.step, p.entered)
    }

    /// The proposal on the current step made since entry, if any.
    pub fn proposal_since_entry(&self) -> Option<&Proposal> {
        let p = &self.pipeline;
        p.proposal
            .as_deref()
            .filter(|pr| pr.step == p.step && pr.seq > p.entered)
    }

    /// The last check of the current step made since entry, if any.
    pub fn check_since_entry(&self) -> Option<&Check> {
        let p = &self.pipeline;
        p.last_check
            .as_deref()
            .filter(|c| c.step == p.step && c.seq > p.entered)
    }

    /// The last dispatch on the current step made since entry, if any.
    pub fn dispatch_since_entry(&self) -> Option<&Dispatch> {
        let p = &self.pipeline;
        p.last_dispatch
            .as_deref()
            .filter(|d| d.step == p.step && d.seq > p.entered)
    }

    /// The last typed exit on the current step since entry, if any.
    /// How many dispatches of the current step since it was entered met a transient failure of
    /// their API (`ExitKind::Transient`).
    pub fn transient_since_entry(&self) -> usize {
        let p = &self.pipeline;
        p.exits
            .iter()
            .filter(|e| e.step == p.step && e.seq > p.entered && e.exit == ExitKind::Transient)
            .count()
    }

    /// How many dispatches of attempt `attempt` of the current step since entry met a transient
    /// failure of their API: the retry a new dispatch of that attempt is (0 for its first try),
    /// which names its log apart ([`crate::exec::DispatchPaths::retry`]).
    pub fn retries_at(&self, attempt: u32) -> u32 {
        let p = &self.pipeline;
        let n = p
            .exits
            .iter()
            .filter(|e| {
                e.step == p.step
                    && e.seq > p.entered
                    && e.attempt == attempt
                    && e.exit == ExitKind::Transient
            })
            .count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// The last dispatch exit on the current step since entry.
    pub fn exit_since_entry(&self) -> Option<&ExitRecord> {
        let p = &self.pipeline;
        p.exits
            .last()
            .filter(|e| e.step == p.step && e.seq > p.entered)
    }

    /// The gate on the current step since entry, if any.
    pub fn gate_on_step(&self) -> Option<&Gate> {
        let p = &self.pipeline;
        p.gate
            .as_deref()
            .filter(|g| g.step == p.step && g.seq > p.entered)
    }

    /// Record `exit`, keeping the newest [`MAX_EXITS`].
    pub fn push_exit(&mut self, exit: ExitRecord) {
        let exits = &mut self.pipeline.exits;
        exits.push(exit);
        if exits.len() > MAX_EXITS {
            let drop = exits.len() - MAX_EXITS;
            exits.drain(..drop);
        }
    }

    /// Record a kept review: one entry per text (a text read again moves to the end, keeping
    /// whether it was acted on), at most [`MAX_REVIEWS`].
    pub fn push_review(&mut self, review: KeptReview) {
        let reviews = &mut self.pipeline.reviews;
        let mut review = review;
        if let Some(at) = reviews.iter().position(|r| r.sha256 == review.sha256) {
            review.sent_back |= reviews.remove(at).sent_back;
        }
        reviews.push(review);
        if reviews.len() > MAX_REVIEWS {
            let drop = reviews.len() - MAX_REVIEWS;
            reviews.drain(..drop);
        }
    }

    /// The latest kept review, if any.
    pub fn latest_review(&self) -> Option<&KeptReview> {
        self.pipeline.reviews.last()
    }

    /// Has a FAIL review of `commit` sent the node back already? It is acted on once per
    /// reviewed commit.
    pub fn sent_back_for(&self, commit: &str) -> bool {
        self.pipeline
            .reviews
            .iter()
            .any(|r| r.sent_back && r.reviewed_sha.as_deref() == Some(commit))
    }

    /// Serialize as the on-disk form: pretty JSON with a trailing newline.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).expect("a bead always serializes");
        out.push(b'\n');
        out
    }
}
