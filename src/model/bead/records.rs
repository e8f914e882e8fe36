//! The records a bead's `pipeline` keeps: the lease, proposals, checks, gates, dispatches and
//! their exits, splits and step entries. Each carries the `seq` at which it happened.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::Text;

use crate::model::manifest::Autonomy;
use crate::model::usage::Usage;

/// A claim on a node. It never expires: only its holder or a person removes it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The holder identity: a runner, a dispatched session, or a person.
    pub holder: String,
    /// When the claim was taken (RFC 3339 UTC).
    pub since: String,
    /// The sha256 (hex) of the credential of the dispatch this claim started: while the claim
    /// lasts, that dispatch may act on this node (and on no other). The credential itself is never
    /// stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_sha256: Option<String>,
    /// The Slurm job running this claim's dispatch (`[executor] kind = "slurm"`): recorded by
    /// `record-job` once `sbatch` answers, and what `adopt-job` proves a takeover by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}

/// Work submitted for acceptance on a step.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Proposal {
    /// The step it was made on.
    pub step: String,
    /// The bead's `seq` when it was recorded.
    pub seq: u64,
    /// The artifact's path (or another handle, such as a commit).
    pub artifact: String,
    /// The step's result text (a spec verdict, a summary), which result branches match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// A pull request already open for the delivery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr_url: Option<String>,
    /// The holder that proposed, when a dispatched session did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// The agent's confidence in it, 0..1 (`propose --confidence`): a loop step's monitor
    /// reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// When it was recorded (RFC 3339 UTC).
    pub at: String,
}

/// Outcome of running a step's floors (or of a person's rejection).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The floors passed.
    Pass,
    /// The work is incomplete (or a person rejected it).
    Refuse,
    /// The floors could not check (e.g. unset config).
    Escalate,
}

impl Verdict {
    /// Its name in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Refuse => "refuse",
            Verdict::Escalate => "escalate",
        }
    }
}

/// The last check of the node's current (or just-left) step.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Check {
    /// The step checked.
    pub step: String,
    /// The bead's `seq` when it was recorded.
    pub seq: u64,
    /// How it came out.
    pub verdict: Verdict,
    /// Why, in a line.
    pub reason: String,
    /// What the floors found, as each reports it.
    #[serde(default)]
    pub evidence: Value,
    /// Who made it: a run id, `person`, or a holder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Set when the refusal means "a PR is open and not yet merged" (`decide`'s rule 24).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub awaiting_merge: bool,
    /// Set when every refusing answer is a transient landing fault (the target kept moving, or
    /// its checkout's index lock stayed held): nothing on the branch needs to change, so the
    /// next check answers it, not the agent (`decide`'s rule 24: once per run, spending no
    /// attempt).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recheck: bool,
    /// When it was made (RFC 3339 UTC).
    pub at: String,
}

impl Check {
    /// The configuration keys the suite floor found unset on the campaign root (its evidence's
    /// `unset`), the escalation `splice transition set-config` answers; read from the floor's
    /// report, never from its words.
    pub fn unset_config(&self) -> Vec<&str> {
        let suite = serde_json::json!(crate::model::manifest::FloorKind::Suite);
        self.evidence
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r.get("kind") == Some(&suite))
            .filter_map(|r| r.get("evidence")?.get("unset")?.as_array())
            .flatten()
            .filter_map(Value::as_str)
            .collect()
    }
}

/// Whether a gate waits for a person.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum GateState {
    /// Waiting for `transition approve`.
    Pending,
    /// Approved by a person, or relaxed by autonomy.
    Approved,
}

/// A human gate on a step: pending until a person approves, or relaxed by autonomy.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Gate {
    /// The step it gates.
    pub step: String,
    /// Pending or approved.
    pub state: GateState,
    /// The bead's `seq` when it was recorded.
    pub seq: u64,
    /// The person who approved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The autonomy level that relaxed it, when no person approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autonomy: Option<Autonomy>,
    /// The node whose autonomy setting supplied that level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supplied_by: Option<String>,
    /// A route gate: a result branch suggested this route (`suggest_route`); approving switches
    /// the node to it, rejecting keeps it on its route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// A landing gate (issue 33): the person's approval to move `target` to the branch's tip
    /// `sha`, recorded before the move. No autonomy relaxes it, and an approval holds only for
    /// that commit: a branch that moves after it asks again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub land: Option<GateLand>,
    /// When it was recorded (RFC 3339 UTC).
    pub at: String,
}

/// What a landing gate approves: `target` moved to `sha`, the tip of the node's branch.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct GateLand {
    /// The branch tip approved to land.
    pub sha: String,
    /// The branch it lands on.
    pub target: String,
}

/// Why a node is parked: it rests until `transition unpark`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct DeadLetter {
    /// The step it was parked on.
    pub step: String,
    /// Why, for a person.
    pub reason: String,
    /// The bead's `seq` when it was recorded.
    pub seq: u64,
    /// When it was recorded (RFC 3339 UTC).
    pub at: String,
}

/// The marker `splice cancel` leaves on a bead it closes: the work will not be done. A cancelled
/// bead counts for no run status and satisfies no `blocks` dependency.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Cancelled {
    /// The person's reason.
    pub reason: String,
    /// The bead's `seq` when it was recorded.
    pub seq: u64,
    /// When it was recorded (RFC 3339 UTC).
    pub at: String,
}

/// A dispatch started on a step (one attempt).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Dispatch {
    /// The step dispatched.
    pub step: String,
    /// Its attempt on the step, from 1.
    pub attempt: u32,
    /// The bead's `seq` when it started.
    pub seq: u64,
    /// The holder that started it.
    pub holder: String,
    /// When it started (RFC 3339 UTC).
    pub at: String,
}

/// How a dispatch ended.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ExitKind {
    /// The command exited 0.
    Ok,
    /// The command exited non-zero.
    Failed,
    /// The command ran past the step's timeout and was killed.
    Timeout,
    /// The command died by a signal, or splice lost track of it.
    Error,
    /// The command could not be started (not found, not executable, …). Counts no attempt; the
    /// node is parked with the cause.
    NotStarted,
    /// The runner itself stopped the command (Ctrl-C or SIGTERM). Counts no attempt.
    Cancelled,
    /// The agent's API was unavailable for a while (overloaded, rate limited, unreachable;
    /// `exec::ended`): retried after the backoff, counting no attempt, at most
    /// [`MAX_TRANSIENT`] times on a step; past that it is recorded as `Failed`, saying so.
    Transient,
    /// The agent cannot authenticate (not logged in, a bad key). Counts no attempt; the node is
    /// parked with the cause at once: a person must log in.
    Unauthorized,
    /// The command made no progress for `[limits] stall_s` (no output, next to no CPU, reads or
    /// writes) and was killed: a hang, stopped long before the step's timeout.
    Stalled,
}

/// How many transient ends a step may have since it was entered before the next counts as a
/// failed attempt.
pub const MAX_TRANSIENT: usize = 5;

impl ExitKind {
    /// Every kind, as `record-exit --exit` takes it.
    pub const NAMES: &[&str] = &[
        "ok",
        "failed",
        "timeout",
        "error",
        "not-started",
        "cancelled",
        "transient",
        "unauthorized",
        "stalled",
    ];

    /// The kind its kebab-case name names; `None` for any other word.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ok" => Some(Self::Ok),
            "failed" => Some(Self::Failed),
            "timeout" => Some(Self::Timeout),
            "error" => Some(Self::Error),
            "not-started" => Some(Self::NotStarted),
            "cancelled" => Some(Self::Cancelled),
            "transient" => Some(Self::Transient),
            "unauthorized" => Some(Self::Unauthorized),
            "stalled" => Some(Self::Stalled),
            _ => None,
        }
    }

    /// Does a dispatch that ended so use up its attempt? One that never started, that the
    /// runner cancelled, that met a transient API failure or could not authenticate gives it
    /// back when its exit is recorded.
    pub fn counts_attempt(self) -> bool {
        !matches!(
            self,
            Self::NotStarted | Self::Cancelled | Self::Transient | Self::Unauthorized
        )
    }
}

/// A typed dispatch exit, recorded by `record-exit`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ExitRecord {
    /// The step dispatched.
    pub step: String,
    /// The attempt it ended.
    pub attempt: u32,
    /// The bead's `seq` when it was recorded.
    pub seq: u64,
    /// How it ended.
    pub exit: ExitKind,
    /// The command's exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// What splice knows of why it ended so, in a line: why it could not start, the signal, or
    /// the last line the command printed before it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// Whether a proposal was recorded on the step during this dispatch.
    pub proposed: bool,
    /// The dispatch's log file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    /// What the dispatch used, when the agent reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// A `transient` end's wait, in seconds, that the agent's API asked for (its
    /// `retry-after`): `decide`'s rule 27 waits at least that long, within its cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<u64>,
    /// When it ended (RFC 3339 UTC).
    pub at: String,
}

/// A review's own verdict: the worst of its four verdict lines.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "UPPERCASE")]
pub enum ReviewVerdict {
    /// Every verdict line is PASS.
    Pass,
    /// A line is WARNING, none FAIL.
    Warning,
    /// A line is FAIL.
    Fail,
}

impl ReviewVerdict {
    /// Its word in a review.
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewVerdict::Pass => "PASS",
            ReviewVerdict::Warning => "WARNING",
            ReviewVerdict::Fail => "FAIL",
        }
    }
}

/// A review a check read, kept in the state (`.splice/reviews/<bead>/<sha256>.md`, written by
/// the writer before the check is journaled): the journal and the bead carry only its hash.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct KeptReview {
    /// sha256 (hex) of the kept text: its file's name.
    pub sha256: String,
    /// The step whose check read it.
    pub step: String,
    /// The check's seq.
    pub seq: u64,
    /// The commit its latest `## Review` section names (`Reviewed-SHA:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewed_sha: Option<String>,
    /// Its verdict; none when a verdict line is missing or not PASS, WARNING or FAIL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<ReviewVerdict>,
    /// Its FAIL sent the node back (acted on): a FAIL of the same commit is not acted on again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sent_back: bool,
    /// When the check read it (RFC 3339 UTC).
    pub at: String,
}

/// Which node's split created this one.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Provenance {
    /// The node whose split created it.
    pub split_by: String,
    /// The splitting node's `seq` at the split.
    pub seq: u64,
    /// Its position among the split's children, from 0.
    pub index: usize,
}

/// On a parent: the children its split sanctioned. Ids, short ones kept inline: `decide` reads
/// every one of them (its rule 12), and at 100,000 beads a pointer to each was a miss to memory.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SplitRecord {
    /// The children's ids, in the split's order.
    pub children: Vec<Text>,
    /// The bead's `seq` at the split.
    pub seq: u64,
}

/// When the node entered a step.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct StepEntry {
    /// The step entered.
    pub step: Text,
    /// The bead's `seq` at entry: `pipeline.entered`.
    pub seq: u64,
    /// When (RFC 3339 UTC).
    pub at: Text,
    /// The worktree's commit when the step's first dispatch claimed it (its base).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<super::ThinText>,
    /// The attempts the step had used on earlier visits when the node entered it again (a loop
    /// step's iterations count from its entry); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts_before: Option<u32>,
}

/// An acceptance check a saved plan gives a task (`docs/plan.md`): an id and the argv that
/// checks it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Acceptance {
    /// The check's id.
    pub id: String,
    /// The command that checks it.
    pub argv: Vec<String>,
}

/// A person's approval of a saved plan, recorded on its campaign root: the plan stands for the
/// root's planning steps (`create-prp`, `to-issues`), whose gates never relax.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PlanApproval {
    /// The plan file as given.
    pub file: String,
    /// sha256 of the plan file's bytes, hex.
    pub sha256: String,
    /// The gates the plan's approval stands for, each recorded as approved.
    pub gates: Vec<Gate>,
    /// The person who approved.
    pub by: String,
    /// The root's `seq` at the approval.
    pub seq: u64,
    /// When (RFC 3339 UTC).
    pub at: String,
    /// The critic's verdict the approval stood on, when a critic is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critic: Option<CriticStanding>,
}

/// The critic's verdict a plan's approval stood on (`docs/plan.md`, "The critic").
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CriticStanding {
    /// When the critic judged the plan (in the form approved: the same sha256).
    pub judged_at: String,
    /// How many findings the critic made.
    pub findings: usize,
    /// The must-fix findings' issues, when there were any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub must_fix: Vec<String>,
    /// The person's reason for approving over must-fix findings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overridden: Option<String>,
}

/// A dispatch's final response, recorded on the node for result branches.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct StepResponse {
    /// Bounded to 8 KiB; redacted with the rest of the bead.
    pub text: String,
    /// The `confidence` of the agent's result file, when it gave one (`field: confidence`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
}

/// A result branch that fired (`on_result` in the manifest): which, on what, and where it took
/// the node. Also written when a person settles a suggested route.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Routing {
    /// The step whose branch fired.
    pub step: String,
    /// The branch's index in that step's `on_result` (none for a person's settlement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<usize>,
    /// `refused`, `accepted`, `approved` or `rejected` (a suggested route settled), or
    /// `skipped` (a called route's last step skipped: the return).
    pub when: String,
    /// The text the matcher matched (the substring, the regex match, the field's value, the
    /// exit code; empty for `always`).
    pub matched: String,
    /// What the firing did to the node.
    pub effect: RoutingEffect,
    /// The route the node was on.
    pub from_route: String,
    /// The step whose result fired it.
    pub from_step: String,
    /// The route it switched to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_route: Option<String>,
    /// The step it moved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_step: Option<String>,
    /// The park's or abort's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A `call`: the step of the caller's route it comes back to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_to: Option<String>,
    /// A `call` or a `return`: how many calls are open after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<usize>,
    /// The bead's `seq` when it fired.
    pub seq: u64,
    /// When it fired (RFC 3339 UTC).
    pub at: String,
}

impl Routing {
    /// Did this firing move the node (a `goto`, a route switch, a call or a return)? The switch
    /// cap counts these.
    pub fn switched(&self) -> bool {
        use RoutingEffect::*;
        matches!(self.effect, Goto | Route | Call | Return)
    }
}

/// What a [`Routing`] record did, as the bead file spells it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RoutingEffect {
    /// A branch matched and the pipeline went on as declared.
    Continue,
    /// Entered another step of the node's route.
    Goto,
    /// Switched the node to another route (a branch, or a person approving a suggested one).
    Route,
    /// Parked the node with the branch's reason.
    Abort,
    /// Left a route gate for a person to settle.
    SuggestRoute,
    /// Entered a called route, to come back at its `return_to`.
    Call,
    /// A called route ended: back to the caller.
    Return,
    /// Parked the node (a branch's `park`, or a call that cannot return).
    Park,
    /// A person rejected a suggested route: the node stays.
    Stay,
}

impl RoutingEffect {
    /// The name the bead file and the journal record.
    pub fn as_str(self) -> &'static str {
        match self {
            RoutingEffect::Continue => "continue",
            RoutingEffect::Goto => "goto",
            RoutingEffect::Route => "route",
            RoutingEffect::Abort => "abort",
            RoutingEffect::SuggestRoute => "suggest_route",
            RoutingEffect::Call => "call",
            RoutingEffect::Return => "return",
            RoutingEffect::Park => "park",
            RoutingEffect::Stay => "stay",
        }
    }
}

/// An open call (`pipeline.calls`): a result branch's `call` moved the node onto another route,
/// and when that route ends the node comes back here instead of closing. Strict: a frame with a
/// field this build does not know is refused, naming it, as the file loads.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CallFrame {
    /// The route called.
    pub callee: String,
    /// The caller's route.
    pub route: String,
    /// The kind of node that walked the caller's route.
    pub kind: super::Kind,
    /// The caller's step whose branch called.
    pub step: String,
    /// The caller's step the node returns to.
    pub return_to: String,
    /// The seq of the transition that called.
    pub seq: u64,
    /// When it called (RFC 3339 UTC).
    pub at: String,
}
