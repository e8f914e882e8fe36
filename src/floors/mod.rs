//! Deterministic checks ("floors") on the evidence a step leaves.
//!
//! A floor answers one question about files, git or a command's result: pass, refuse (the work is
//! incomplete, with the reason and the evidence) or escalate (it cannot check, e.g. unset
//! configuration). Floors run before the writer takes its lock; what they want recorded on the
//! bead travels back as [`Effect`]s the writer applies under the lock.
//!
//! One floor per file; [`floor_for`] maps a manifest's [`FloorKind`] to its implementation (an
//! exhaustive match: a kind without a floor does not compile).
//!
//! Floors that run a command (`command`, `suite`, `tests`, `sarif`, and `delivered`'s forge
//! command or `gh`) do so through [`run_command`]: [`crate::process`] with a time bound, the command's
//! process group killed at the limit and once the command exits (a background job it leaves
//! cannot hold the floor), and each output stream bounded ([`OUTPUT_CAP`]). `coverage` and
//! `suite` read the target checkout of [`Ctx::target_checkout`] ([`crate::worktree`]).

pub mod children_conserved;
pub mod children_finished;
pub mod command;
pub mod confine;
pub mod coverage;
pub mod coverage_credit;
pub mod delivered;
pub mod file_exists;
pub mod gherkin;
pub mod github;
pub mod headings;
pub mod iteration;
pub mod review;
pub mod sarif;
pub mod scenarios_declared;
pub mod spec;
pub mod suite;
pub mod test_results;
pub mod tests_only;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::model::bead::{Proposal, ReviewVerdict, SpecVerdict, Verdict};
use crate::model::manifest::{FloorKind, FloorSpec};
use crate::model::{Bead, Config, Manifest, Step};
use crate::policy::Lineage;
use crate::process::{self, Captured, Cmd, Exit};
use crate::safe_read::{self, Unread};
use crate::store::Store;
use crate::worktree::{self, TargetCheckout};

/// How much of each output stream of a floor's command is kept by default (half from the start,
/// half from the end). Generous, so that `tests` can read the per-test lines of a large suite.
pub const OUTPUT_CAP: usize = 8 * 1024 * 1024;

/// What a floor asks the writer to record when the check is committed.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Scenario ids the PRP declares, recorded on the campaign root.
    SetScenarios(Vec<String>),
    /// Scenario ids a spec defines for a node that owned none, recorded on the node itself.
    DefineScenarios(Vec<String>),
    /// The spec's verdict.
    SetVerdict(SpecVerdict),
    /// The spec's declared file scope.
    SetFiles(Vec<String>),
    /// The commit a passing review was made against.
    SetReviewedSha(String),
    /// A delivered pull request's URL.
    SetPrUrl(String),
    /// The branch moved past the commit its review read: send the node back to the review
    /// `step` with `guidance` for the next dispatch (the landing floor's; see `transition::land`).
    SendBack { step: String, guidance: String },
    /// A refusing floor's advice for the next dispatch, joined to the guidance of the result
    /// branch that sends the node back (the coverage floor's missing ids).
    Guidance(String),
    /// The landing of `sha` on the protected `target` (or through the step's own gate) waits
    /// for a person's approval: the check records a pending landing gate, and nothing moved.
    AwaitLand { sha: String, target: String },
    /// A review the floor read, to be kept whatever the verdict: the writer stores its text
    /// (`.splice/reviews/<id>/<sha256>.md`) before its lock and records it on the node.
    KeepReview(Box<ReviewText>),
}

/// A review's text and what the review floor read in it ([`Effect::KeepReview`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ReviewText {
    /// The whole file (at most [`crate::store::reviews::MAX_REVIEW_BYTES`]); emptied by the
    /// writer once it is kept.
    pub text: String,
    /// The sha256 of the kept text, set by the writer when it keeps it.
    pub sha256: Option<String>,
    /// The commit its latest section names.
    pub reviewed_sha: Option<String>,
    /// Its verdict, when its four verdict lines are all there and valid.
    pub verdict: Option<ReviewVerdict>,
    /// The floor refused with this review's FAIL (of the current HEAD, not acted on before):
    /// the refusal that sends the node back.
    pub fail: bool,
}

/// One floor's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The floor kind's name (`proposal` for the check that an empty floor list was proposed).
    pub kind: &'static str,
    pub verdict: Verdict,
    pub reason: String,
    pub evidence: Value,
    pub effects: Vec<Effect>,
    /// The refusal means "a pull request is open and not merged yet".
    pub awaiting_merge: bool,
}

impl Outcome {
    pub fn pass(kind: FloorKind, reason: impl Into<String>, evidence: Value) -> Outcome {
        Outcome::new(kind.name(), Verdict::Pass, reason, evidence)
    }
    pub fn refuse(kind: FloorKind, reason: impl Into<String>, evidence: Value) -> Outcome {
        Outcome::new(kind.name(), Verdict::Refuse, reason, evidence)
    }
    pub fn escalate(kind: FloorKind, reason: impl Into<String>, evidence: Value) -> Outcome {
        Outcome::new(kind.name(), Verdict::Escalate, reason, evidence)
    }
    /// A step without floors was checked with nothing proposed: an empty check list proves
    /// nothing.
    pub fn nothing_proposed(reason: impl Into<String>) -> Outcome {
        Outcome::new("proposal", Verdict::Refuse, reason, json!({}))
    }
    /// The answer of a check that is not a floor of the manifest, named `kind` (the writer's
    /// landing of a direct delivery, `land`).
    pub fn named(
        kind: &'static str,
        verdict: Verdict,
        reason: impl Into<String>,
        evidence: Value,
    ) -> Outcome {
        Outcome::new(kind, verdict, reason, evidence)
    }
    fn new(
        kind: &'static str,
        verdict: Verdict,
        reason: impl Into<String>,
        evidence: Value,
    ) -> Outcome {
        Outcome {
            kind,
            verdict,
            reason: reason.into(),
            evidence,
            effects: Vec::new(),
            awaiting_merge: false,
        }
    }
    pub fn with_effect(mut self, effect: Effect) -> Outcome {
        self.effects.push(effect);
        self
    }
}

/// What a floor may look at.
pub struct Ctx<'a> {
    pub store: &'a Store,
    pub manifest: &'a Manifest,
    pub config: &'a Config,
    /// The node being checked.
    pub bead: &'a Bead,
    /// Its ancestors, nearest first (read once by the writer before the floors run), and the
    /// defaults: what it inherits.
    pub lineage: Lineage<'a>,
    /// The step being checked.
    pub step: &'a Step,
    /// Where the floor reads: the node's worktree when it has one, else the repository root.
    pub workdir: PathBuf,
    /// The proposal's artifact, result text and PR URL, when one was made on this step.
    pub proposal: Option<&'a Proposal>,
}

impl Ctx<'_> {
    /// Run a command on the node's content (a SARIF tool) in `dir`, here, inside the sandbox
    /// ([`confine`]).
    pub fn run_confined(
        &self,
        argv: &[String],
        dir: &Path,
        env: &[(&str, &str)],
        timeout: Duration,
        cap: usize,
    ) -> Result<Captured, String> {
        let confined = confine::for_dir(self.store, self.config, dir)?;
        run_in(argv, dir, env, timeout, cap, confined.as_ref())
    }

    /// Run a command-running floor's `argv` (`command`, `tests`, `suite`) in `dir`, inside the
    /// sandbox: here, or with `[executor] floors = "slurm"` on a cluster node through `srun`
    /// (a job named `splice-floor-<bead>-<step>`), where `splice sandbox exec` enters the same
    /// sandbox from a policy file the runner writes ([`confine::on_cluster`]); `srun` itself
    /// runs unconfined here, as it needs munge's UNIX socket.
    pub fn run_floor(
        &self,
        argv: &[String],
        dir: &Path,
        env: &[(&str, &str)],
        timeout: Duration,
        cap: usize,
    ) -> Result<Captured, String> {
        let executor = &self.config.executor;
        let on_cluster = executor.kind() == crate::model::executor::ExecutorKind::Slurm
            && executor.floors() == crate::model::executor::FloorsOn::Slurm;
        if !on_cluster {
            return self.run_confined(argv, dir, env, timeout, cap);
        }
        let name = format!("splice-floor-{}-{}", self.bead.id, self.step.name);
        let Some(confined) = confine::for_dir(self.store, self.config, dir)? else {
            let sent = executor.floor_argv(&self.step.name, &name, timeout.as_secs(), argv);
            return run_in(&sent, dir, env, timeout, cap, None);
        };
        let inner = confine::on_cluster(self.store, &confined, &name, argv)?;
        let sent = executor.floor_argv(&self.step.name, &name, timeout.as_secs(), &inner);
        let mut all: Vec<(&str, &str)> = env.to_vec();
        all.extend(confined.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        run_in(&sent, dir, &all, timeout, cap, None)
    }

    /// The node's campaign root (the node itself when it has no parent).
    pub fn root(&self) -> &Bead {
        self.lineage.root(self.bead)
    }

    /// Where the node's work lands.
    pub fn target(&self) -> Option<&str> {
        self.lineage.target(self.bead)
    }

    /// Expand `{{bead.id}}`, `{{root.id}}`, `{{parent.id}}` and `{{step}}` in a template.
    pub fn render(&self, template: &str) -> String {
        template
            .replace("{{bead.id}}", &self.bead.id)
            .replace("{{root.id}}", &self.root().id)
            .replace(
                "{{parent.id}}",
                self.bead.parent.as_deref().unwrap_or(&self.root().id),
            )
            .replace("{{step}}", &self.step.name)
    }

    /// Create or refresh the node's detached checkout of its integration target's tip
    /// (`.splice/worktrees/<id>@target`), where `coverage` and `suite` read (DESIGN §6). `Err`
    /// is a plain reason: the floor cannot check.
    ///
    /// A campaign root at deep autonomy on the main line integrates on its own branch, where its
    /// pieces landed (`Lineage::integrates_on_own_branch`): that branch is read instead.
    pub fn target_checkout(&self) -> Result<TargetCheckout, String> {
        let target = self.target().ok_or(
            "no integration target: set one with `splice transition set-target`, or `[delivery] target` in config.toml",
        )?;
        let own = self
            .lineage
            .integrates_on_own_branch(self.bead)
            .then(|| worktree::branch_name(&self.bead.id));
        worktree::checkout_target(
            self.store.repo(),
            &self.store.worktrees_dir(),
            &self.bead.id,
            own.as_deref().unwrap_or(target),
        )
        .map_err(|e| e.to_string())
    }

    /// The text of the artifact at the floor's `path`: `Err` is the floor's answer when there is
    /// no path (escalate) or no readable file (refuse).
    pub fn read_artifact(
        &self,
        spec: &FloorSpec,
        kind: FloorKind,
    ) -> Result<(String, String), Box<Outcome>> {
        let Some((rel, _)) = self.path_param(spec) else {
            return Err(Box::new(Outcome::escalate(
                kind,
                "the floor declares no `path`",
                json!({}),
            )));
        };
        match self.read_inside(&rel) {
            Ok(text) => Ok((rel, text)),
            Err(why) => Err(Box::new(Outcome::refuse(kind, why, json!({ "path": rel })))),
        }
    }

    /// The text of the file at `rel` inside the working directory (see [`read_inside`]), at most
    /// [`MAX_EVIDENCE_BYTES`]. Evidence is read only inside it, and no link is followed: an
    /// absolute path, `..`, or a link is refused (the text would be copied into bead files and
    /// the journal, which users commit). `Err` is a reason to refuse.
    pub fn read_inside(&self, rel: &str) -> Result<String, String> {
        read_inside(&self.workdir, rel)
    }

    /// A floor's `argv` parameter, each argument rendered.
    pub fn argv_param(&self, spec: &FloorSpec) -> Vec<String> {
        spec.list_param("argv")
            .iter()
            .map(|a| self.render(a))
            .collect()
    }

    /// A floor's `path` parameter rendered and resolved against the workdir.
    pub fn path_param(&self, spec: &FloorSpec) -> Option<(String, PathBuf)> {
        let rel = self.render(spec.str_param("path")?);
        let abs = self.workdir.join(&rel);
        Some((rel, abs))
    }
}

/// Why the file at `rel` inside the working directory was not read, as a floor's reason.
pub fn unread(rel: &str, why: &Unread) -> String {
    match why {
        Unread::Link => format!(
            "{rel} has a symbolic link on its path; evidence is read only from regular files \
             inside the working directory, following no link (one could lead outside it, or to \
             /dev/zero); commit the file itself"
        ),
        Unread::TooLarge(cap) => format!(
            "{rel} is larger than {}; evidence that large is not read",
            safe_read::size(*cap)
        ),
        other => format!("{rel} {}", other.says()),
    }
}

/// The text of the file at `rel` inside `root`, at most [`MAX_EVIDENCE_BYTES`]: a regular file
/// reached with no link on its path, opened without blocking ([`safe_read::read_beneath`]).
/// `Err` is a reason to refuse.
pub fn read_inside(root: &Path, rel: &str) -> Result<String, String> {
    let bytes =
        safe_read::read_beneath(root, rel, MAX_EVIDENCE_BYTES).map_err(|u| unread(rel, &u))?;
    String::from_utf8(bytes).map_err(|_| format!("{rel} is not readable text (not UTF-8)"))
}

/// The largest file a floor reads as evidence.
pub const MAX_EVIDENCE_BYTES: u64 = 16 << 20;

/// A deterministic check of one kind.
pub trait Floor {
    fn check(&self, spec: &FloorSpec, ctx: &Ctx) -> Outcome;
}

/// The implementation of a floor kind.
pub fn floor_for(kind: FloorKind) -> Box<dyn Floor> {
    match kind {
        FloorKind::FileExists => Box::new(file_exists::FileExists),
        FloorKind::Headings => Box::new(headings::Headings),
        FloorKind::Command => Box::new(command::Command),
        FloorKind::ScenariosDeclared => Box::new(scenarios_declared::ScenariosDeclared),
        FloorKind::Spec => Box::new(spec::Spec),
        FloorKind::Review => Box::new(review::Review),
        FloorKind::ChildrenConserved => Box::new(children_conserved::ChildrenConserved),
        FloorKind::ChildrenFinished => Box::new(children_finished::ChildrenFinished),
        FloorKind::Coverage => Box::new(coverage::Coverage),
        FloorKind::Suite => Box::new(suite::Suite),
        FloorKind::Delivered => Box::new(delivered::Delivered),
        FloorKind::Tests => Box::new(test_results::Tests),
        FloorKind::Sarif => Box::new(sarif::Sarif),
        FloorKind::TestsOnly => Box::new(tests_only::TestsOnly),
    }
}

/// Run every floor of `ctx.step` in order.
pub fn run_all(ctx: &Ctx) -> Vec<Outcome> {
    ctx.step
        .floors
        .iter()
        .map(|spec| floor_for(spec.kind).check(spec, ctx))
        .collect()
}

/// The combined verdict: any escalation escalates, else any refusal refuses, else pass.
pub fn combine(outcomes: &[Outcome]) -> Verdict {
    if outcomes.iter().any(|o| o.verdict == Verdict::Escalate) {
        Verdict::Escalate
    } else if outcomes.iter().any(|o| o.verdict == Verdict::Refuse) {
        Verdict::Refuse
    } else {
        Verdict::Pass
    }
}

/// Where floors read for `bead`: its worktree when one exists, else the repository root.
pub fn workdir_for(store: &Store, bead: &Bead) -> PathBuf {
    let wt = worktree::node_path(&store.worktrees_dir(), &bead.id);
    if wt.is_dir() {
        wt
    } else {
        store.repo().to_path_buf()
    }
}

/// The time bound for a floor's command: its `timeout_s` parameter, else the step's.
pub fn timeout_for(spec: &FloorSpec, step_timeout_s: u64) -> Duration {
    let secs = spec
        .params
        .get("timeout_s")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(step_timeout_s)
        .max(1);
    Duration::from_secs(secs)
}

/// Run a floor's command through [`crate::process`]: `argv` in `dir` with `env`, its process
/// group killed at `timeout` and once the command exits, each stream kept up to `cap` bytes
/// (usually [`OUTPUT_CAP`]). `Err` says why it did not run: the floor cannot check.
pub fn run_command(
    argv: &[String],
    dir: &Path,
    env: &[(&str, &str)],
    timeout: Duration,
    cap: usize,
) -> Result<Captured, String> {
    run_in(argv, dir, env, timeout, cap, None)
}

/// [`run_command`] inside `confined` ([`confine`]) when given: for a command that runs what an
/// agent wrote.
pub fn run_in(
    argv: &[String],
    dir: &Path,
    env: &[(&str, &str)],
    timeout: Duration,
    cap: usize,
    confined: Option<&confine::Confined>,
) -> Result<Captured, String> {
    let mut vars: Vec<(std::ffi::OsString, std::ffi::OsString)> = env
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect();
    if let Some(c) = confined {
        vars.extend(c.env.iter().map(|(k, v)| (k.into(), v.into())));
    }
    let cmd = Cmd {
        env: vars,
        timeout: Some(timeout),
        sandbox: confined.map(|c| &c.sandbox),
        ..Cmd::new(argv, dir)
    };
    let mut out = process::capture(&cmd, cap);
    match &out.ran.exit {
        Exit::NotStarted(reason) => return Err(reason.clone()),
        Exit::Lost(reason) => return Err(format!("lost track of it: {reason}")),
        _ => {}
    }
    if !out.ran.drained {
        out.stderr.push_str(
            "\n[splice: output after the command ended was not waited for (a process outside its group holds it)]\n",
        );
    }
    Ok(out)
}

/// The last `max` bytes of `text`, on a char boundary, for evidence.
pub fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}

/// Is `rel` a safe repository-relative path (no absolute path, no `..`)?
pub fn is_relative_inside(rel: &str) -> bool {
    let p = Path::new(rel);
    !rel.is_empty()
        && p.is_relative()
        && p.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
}

/// The first `max` bytes of `text`, on a char boundary, marked when cut.
pub fn head(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[… truncated]", &text[..end])
}

/// Is `s` a full 40-hex commit sha?
pub fn is_full_sha(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_stays_inside_the_working_directory_and_follows_no_link() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "x").unwrap();
        std::fs::create_dir(root.path().join("tests")).unwrap();
        std::fs::write(root.path().join("tests/a.rs"), "x").unwrap();
        let link = |name: &str, to: &Path| std::os::unix::fs::symlink(to, root.path().join(name));
        link("out", outside.path()).unwrap();
        link("in", &root.path().join("tests")).unwrap();
        let read = |rel: &str| read_inside(root.path(), rel);
        assert_eq!(read("tests/a.rs").unwrap(), "x");
        for rel in ["out/secret", "out", "in/a.rs"] {
            assert!(read(rel).unwrap_err().contains("symbolic link"), "{rel}");
        }
        assert!(read("/etc/passwd").unwrap_err().contains("absolute"));
        assert!(read("tests/../../x").unwrap_err().contains("`..`"));
        assert_eq!(read("missing").unwrap_err(), "missing does not exist");
        assert!(read("tests").unwrap_err().contains("not a regular file"));
    }

    #[test]
    fn head_and_sha_helpers() {
        assert_eq!(head("abc", 10), "abc");
        assert!(head("ééé", 3).starts_with('é'));
        assert!(is_full_sha("0123456789abcdef0123456789ABCDEF01234567"));
        assert!(!is_full_sha("0123456"));
    }
}
