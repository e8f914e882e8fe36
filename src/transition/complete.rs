//! `complete` (and `integrate`, `deliver`, which are `complete` for those steps): run the step's
//! floors, record the check, and advance — through the human gate, which the node's autonomy may
//! relax — or close the node when the step was its route's last.
//!
//! The floors are the slow part: they run first, without the lock ([`gather`]), and their
//! outcomes are an input of the pure [`plan`], which the shell runs under the lock against the
//! node as it is then. A check whose floors refuse or escalate is committed too; `complete` then
//! returns the matching [`Refusal`] carrying the recorded check.

use std::path::PathBuf;

use super::branch::{self, Applied};
use super::{
    Caller, Ctx, Refusal, Verb, advance, ancestors_unlocked, current_step, defaults, land,
    next_seq, pr, require_not_foreign, require_open, require_seq, require_step,
};
use crate::error::Result;
use crate::floors::{self, Effect};
use crate::model::bead::{Check, Gate, GateLand, GateState, KeptReview, Proposal, Verdict};
pub use crate::model::check::{Checked, FloorReport, GateMet};
use crate::model::{Bead, Config, Kind, Manifest, Step};
use crate::policy::branch::Firing;
use crate::policy::{GateOutcome, Lineage, gate};
use crate::store::{Change, Reads};
use crate::worktree::current_branch;

/// What the floors found, gathered before the lock: the input of [`plan`].
#[derive(Clone, Debug)]
pub struct Evidence {
    /// The step checked, as the manifest defines it.
    pub step: Step,
    /// `deliver --pr-url`, or the pull request this check opened.
    pub pr_url: Option<String>,
    /// This check opened that pull request (`pr.rs`): it is kept whatever the verdict, so no
    /// later check opens another.
    pub opened_pr: bool,
    /// The node's `seq` when the floors ran: the check stands only if it is still that.
    pub seen_seq: u64,
    /// Every floor's answer, in the step's order.
    pub outcomes: Vec<floors::Outcome>,
    /// Where the floors read.
    pub read_in: PathBuf,
}

impl From<&floors::Outcome> for FloorReport {
    fn from(o: &floors::Outcome) -> FloorReport {
        FloorReport {
            kind: o.kind.to_string(),
            verdict: o.verdict,
            reason: o.reason.clone(),
            evidence: o.evidence.clone(),
        }
    }
}

/// Check `step` of `id` and advance it when the evidence holds. `pr_url` is `deliver --pr-url`;
/// `verb` (`complete`, `integrate` or `deliver`) is the transition the journal names and the
/// authority rule judges. Floors that refuse or escalate are recorded, then returned as
/// [`Refusal::FloorRefused`] / [`Refusal::FloorEscalated`].
pub fn complete(
    ctx: &Ctx,
    id: &str,
    step: &str,
    pr_url: Option<String>,
    verb: Verb,
) -> Result<Checked> {
    let class = verb;
    ctx.admit(class)?;
    let manifest = ctx.store.manifest()?;
    let config = ctx.store.config()?;
    let branch = current_branch(ctx.store.repo());
    let evidence = gather(ctx, id, step, pr_url, (&manifest, &config, &branch))?;
    // The floors' seq is the compare-and-swap (`--expect-seq` was checked against it already).
    let checking = Ctx {
        expect_seq: None,
        ..ctx.clone()
    };
    let reads = Reads::subject(id).with_ancestors();
    let checked = checking.apply(class, &reads, |fresh, who| {
        let lineage = Lineage::new(&fresh.ancestors, defaults(&config, &branch));
        Ok(plan(
            &evidence,
            who,
            &fresh.subject,
            &lineage,
            &manifest,
            &ctx.now,
        )?)
    })?;
    match checked.verdict {
        Verdict::Pass => Ok(checked),
        Verdict::Refuse => Err(Refusal::FloorRefused(Box::new(checked)).into()),
        Verdict::Escalate => Err(Refusal::FloorEscalated(Box::new(checked)).into()),
    }
}

/// The slow part, without the lock: check the preconditions on the node as read, then run the
/// step's floors.
pub fn gather(
    ctx: &Ctx,
    id: &str,
    step: &str,
    mut pr_url: Option<String>,
    (manifest, config, branch): (&Manifest, &Config, &Option<String>),
) -> Result<Evidence> {
    let store = ctx.store;
    let bead = store.read_bead(id)?;
    require_open(&bead)?;
    require_step(&bead, step)?;
    require_seq(&bead, ctx.expect_seq)?;
    require_not_foreign(&bead, ctx.holder.as_deref())?;
    let step_def = current_step(manifest, &bead)?.clone();
    let ancestors = ancestors_unlocked(store, &bead)?;
    let mut proposal: Option<Proposal> = bead.proposal_since_entry().cloned();
    if let Some(url) = &pr_url {
        note_pr(&mut proposal, step, url);
    }
    let read_in = floors::workdir_for(store, &bead);
    let lineage = Lineage::new(&ancestors, defaults(config, branch));
    // PR delivery: splice pushes the reviewed commit and opens the pull request (`pr.rs`).
    let known = known_pr(&pr_url, &proposal, &bead).is_some();
    let mut opening = None;
    if let Some(target) = pr::wanted(manifest, &step_def, &bead, &lineage, known) {
        match pr::open(store, config, &bead, &target) {
            Ok((url, outcome)) => {
                note_pr(&mut proposal, step, &url);
                pr_url = Some(url);
                opening = Some(outcome);
            }
            Err(escalated) => {
                return Ok(Evidence {
                    step: step_def,
                    pr_url,
                    opened_pr: false,
                    seen_seq: bead.pipeline.seq,
                    outcomes: vec![*escalated],
                    read_in,
                });
            }
        }
    }
    let floor_ctx = floors::Ctx {
        store,
        manifest,
        config,
        bead: &bead,
        lineage,
        step: &step_def,
        workdir: read_in.clone(),
        proposal: proposal.as_ref(),
    };
    let mut opened_pr = opening.is_some();
    let mut outcomes: Vec<floors::Outcome> = opening.into_iter().collect();
    outcomes.extend(check_and_land(&floor_ctx));
    // A container's documents under PR delivery, once its integrate floors pass (`pr.rs`).
    if let Some(target) = pr::wanted_documents(manifest, &step_def, &bead, &floor_ctx.lineage)
        && floors::combine(&outcomes) == crate::model::bead::Verdict::Pass
    {
        let known = known_pr(&pr_url, &proposal, &bead);
        let (answers, opened) = pr::deliver_documents(&floor_ctx, &target, known.as_deref());
        outcomes.extend(answers);
        if let Some(url) = opened {
            opened_pr = true;
            pr_url = Some(url);
        }
    }
    keep_reviews(store, id, &mut outcomes)?;
    Ok(Evidence {
        step: step_def,
        pr_url,
        opened_pr,
        seen_seq: bead.pipeline.seq,
        outcomes,
        read_in,
    })
}

/// The pull request `url` goes on the step's proposal the floors read (one made for it when
/// there is none).
fn note_pr(proposal: &mut Option<Proposal>, step: &str, url: &str) {
    let p = proposal.get_or_insert_with(|| Proposal {
        step: step.to_string(),
        artifact: url.to_string(),
        ..Proposal::default()
    });
    p.pr_url = Some(url.to_string());
}

/// The pull request known for the check: the caller's (`deliver --pr-url`, or the one this
/// check opened), the step's proposal's, or the node's.
fn known_pr(given: &Option<String>, proposal: &Option<Proposal>, bead: &Bead) -> Option<String> {
    given
        .clone()
        .or_else(|| proposal.as_ref().and_then(|p| p.pr_url.clone()))
        .or_else(|| bead.pipeline.pr_url.as_deref().map(str::to_string))
}

/// Keep the text of every review a floor read (`store::reviews`), before the lock: the check
/// journaled next names it by its hash, so it must be on disk first.
fn keep_reviews(
    store: &crate::store::Store,
    id: &str,
    outcomes: &mut [floors::Outcome],
) -> Result<()> {
    for effect in outcomes.iter_mut().flat_map(|o| &mut o.effects) {
        if let Effect::KeepReview(review) = effect {
            review.sha256 = Some(store.keep_review(id, &review.text)?);
            review.text = String::new();
        }
    }
    Ok(())
}

/// The step's floors, and for a direct delivery the landing of the node's branch around them
/// ([`land`]): before the floors on a deliver step (whose proof needs it; a landing that does
/// not pass, or waits for a person's approval, leaves them unrun), after they pass on an
/// integrate step.
fn check_and_land(ctx: &floors::Ctx) -> Vec<floors::Outcome> {
    let when = land::when(ctx.manifest, ctx.step, ctx.bead, &ctx.lineage);
    let landing = || {
        land::land(
            ctx.store,
            (ctx.manifest, ctx.config),
            ctx.step,
            ctx.bead,
            &ctx.lineage,
        )
    };
    let mut outcomes: Vec<floors::Outcome> = Vec::new();
    if ctx.step.loop_.is_some() {
        let answer = loop_evidence(ctx.bead);
        let passed = answer.verdict == Verdict::Pass;
        outcomes.push(answer);
        if !passed {
            return outcomes;
        }
    }
    if when == Some(land::When::BeforeFloors) {
        outcomes.extend(landing());
        if floors::combine(&outcomes) != Verdict::Pass || awaits_land(&outcomes).is_some() {
            return outcomes;
        }
    }
    outcomes.extend(floors::run_all(ctx));
    if ctx.step.floors.is_empty()
        && ctx.bead.proposal_since_entry().is_none()
        && ctx.step.loop_.is_none()
    {
        outcomes.push(floors::Outcome::nothing_proposed(format!(
            "{} declares no floors and nothing was proposed: an empty check list proves \
             nothing; propose the step's result first",
            ctx.step.name
        )));
    }
    if when == Some(land::When::AfterFloors) && floors::combine(&outcomes) == Verdict::Pass {
        outcomes.extend(landing());
    }
    outcomes
}

/// The landing a person must approve first, when the check's landing waits for one.
fn awaits_land(outcomes: &[floors::Outcome]) -> Option<GateLand> {
    outcomes
        .iter()
        .flat_map(|o| &o.effects)
        .find_map(|e| match e {
            Effect::AwaitLand { sha, target } => Some(GateLand {
                sha: sha.clone(),
                target: target.clone(),
            }),
            _ => None,
        })
}

/// A loop step's own evidence (`docs/monitor.md`): its latest iteration since the node entered
/// the step succeeded. It comes before the step's floors, which still apply.
fn loop_evidence(bead: &crate::model::Bead) -> floors::Outcome {
    let p = &bead.pipeline;
    let latest = bead.iterations_since_entry().last();
    let (verdict, reason) = match latest {
        Some(it) if it.state.succeeded() => (
            Verdict::Pass,
            format!("iteration {} of {} succeeded", it.state.iteration, p.step),
        ),
        Some(it) => (
            Verdict::Refuse,
            format!(
                "iteration {} of loop step {} did not succeed (a test or acceptance fact failed \
                 or errored, a stage failed, or a high or critical finding): the loop runs \
                 until one does",
                it.state.iteration, p.step
            ),
        ),
        None => (
            Verdict::Refuse,
            format!("no iteration of loop step {} has been measured yet", p.step),
        ),
    };
    let evidence = serde_json::json!({
        "iteration": latest.map(|i| i.state.iteration),
        "score": latest.and_then(|i| i.score),
    });
    floors::Outcome::named("loop", verdict, reason, evidence)
}

/// Record the check `ev` makes of `bead` (which must not have moved since the floors ran) and
/// act on its verdict: a pass applies the floors' effects and meets the gate (advance, wait for
/// a person, or close on the route's last step); a refusal may send the node back; an
/// escalation only records. The campaign root's after-image comes first when a floor set its
/// scenarios.
pub fn plan(
    ev: &Evidence,
    who: Caller,
    bead: &Bead,
    lineage: &Lineage,
    manifest: &Manifest,
    now: &str,
) -> Result<Change<Checked>, Refusal> {
    let step = &ev.step.name;
    // `integrate` and `deliver` are `complete` for their steps, and of its class.
    who.admit(Verb::Complete)?;
    require_open(bead)?;
    require_step(bead, step)?;
    require_not_foreign(bead, who.holder)?;
    if bead.pipeline.seq != ev.seen_seq {
        return Err(Refusal::StaleSeq {
            bead: bead.id.to_string(),
            seq: bead.pipeline.seq,
            expected: ev.seen_seq,
            while_checking: true,
        });
    }
    let seq = next_seq(bead);
    let verdict = floors::combine(&ev.outcomes);
    let reason = summary(verdict, &ev.outcomes, step);
    let reports: Vec<FloorReport> = ev.outcomes.iter().map(FloorReport::from).collect();
    let mut after = bead.clone();
    after.pipeline.last_check = Some(Box::new(Check {
        step: step.clone(),
        seq,
        verdict,
        reason: reason.clone(),
        evidence: serde_json::to_value(&reports).unwrap_or_default(),
        run: Some(who.run.map_or_else(|| who.actor(), str::to_string)),
        awaiting_merge: verdict == Verdict::Refuse && ev.outcomes.iter().any(|o| o.awaiting_merge),
        recheck: verdict == Verdict::Refuse && land::only_transient(&ev.outcomes),
        at: now.to_string(),
    }));
    // A pull request goes on the node only once its delivery is proven (the `delivered` floor's
    // effect, below). While the forge says it is open, the URL a person gave (`deliver
    // --pr-url`) is kept on the step's proposal, where the wait and later checks find it.
    if let (Some(url), Some(check)) = (&ev.pr_url, &after.pipeline.last_check)
        && (check.awaiting_merge || (ev.opened_pr && verdict != Verdict::Pass))
    {
        keep_pending_pr(&mut after, url, seq, now);
    }
    let mut root = None;
    let (gate, next) = match verdict {
        Verdict::Pass => {
            for effect in ev.outcomes.iter().flat_map(|o| &o.effects) {
                apply_effect(&mut after, &mut root, lineage, effect);
            }
            match awaits_land(&ev.outcomes) {
                Some(land) => await_land(&mut after, step, land, (seq, now)),
                None => meet_gate(&mut after, ev, lineage, manifest, (seq, now)),
            }
        }
        Verdict::Refuse => (None, refused(&mut after, ev, manifest, seq, now)),
        Verdict::Escalate => (None, None),
    };
    record_reviews(&mut after, bead, ev, seq, now);
    let output = Checked {
        bead: bead.id.to_string(),
        step: step.clone(),
        verdict,
        reason: reason.clone(),
        floors: reports,
        read_in: ev.read_in.clone(),
        gate,
        next,
        closed: after.is_closed(),
        seq,
    };
    Ok(Change {
        beads: root.into_iter().chain([after]).collect(),
        reason: Some(format!("{step}: {reason}")),
        output,
    })
}

/// Keep the open pull request `url` on the node's proposal for its current step (made for it
/// when the person's `deliver --pr-url` is the only proposal).
fn keep_pending_pr(bead: &mut Bead, url: &str, seq: u64, now: &str) {
    if bead.proposal_since_entry().is_none() {
        bead.pipeline.proposal = Some(Box::new(Proposal {
            step: bead.pipeline.step.to_string(),
            seq,
            artifact: url.to_string(),
            at: now.to_string(),
            ..Proposal::default()
        }));
    }
    if let Some(p) = bead.pipeline.proposal.as_mut() {
        p.pr_url = Some(url.to_string());
    }
}

/// A passed check whose landing waits for a person: a pending landing gate on `step`, bound to
/// the tip that would land; nothing advances.
fn await_land(
    bead: &mut Bead,
    step: &str,
    land: GateLand,
    (seq, now): (u64, &str),
) -> (Option<GateMet>, Option<String>) {
    bead.pipeline.gate = Some(Box::new(Gate {
        step: step.to_string(),
        state: GateState::Pending,
        seq,
        by: None,
        autonomy: None,
        supplied_by: None,
        route: None,
        land: Some(land),
        at: now.to_string(),
    }));
    (Some(GateMet::Pending), None)
}

/// A passed check at the step's gate: advance (open or relaxed), or wait for a person. A step
/// whose landing a person approved (and which then landed) has met its gate.
fn meet_gate(
    bead: &mut Bead,
    ev: &Evidence,
    lineage: &Lineage,
    manifest: &Manifest,
    (seq, now): (u64, &str),
) -> (Option<GateMet>, Option<String>) {
    let landed_approved = bead
        .gate_on_step()
        .is_some_and(|g| g.state == GateState::Approved && g.land.is_some());
    if landed_approved {
        return (None, advance(bead, manifest, seq, now));
    }
    let at_gate = gate::at_pass(&ev.step, bead, lineage.autonomy(bead), lineage.target(bead));
    let mut record = |state, autonomy, supplied_by| {
        bead.pipeline.gate = Some(Box::new(Gate {
            step: ev.step.name.clone(),
            state,
            seq,
            by: None,
            autonomy,
            supplied_by,
            route: None,
            land: None,
            at: now.to_string(),
        }));
    };
    match at_gate {
        GateOutcome::Open => (None, advance(bead, manifest, seq, now)),
        GateOutcome::Relaxed { level, source } => {
            record(GateState::Approved, Some(level), Some(source.label()));
            let met = GateMet::Relaxed {
                autonomy: level,
                supplied_by: source.label(),
            };
            (Some(met), advance(bead, manifest, seq, now))
        }
        GateOutcome::Pending => {
            record(GateState::Pending, None, None);
            (Some(GateMet::Pending), None)
        }
    }
}

/// A refused check: the step's first `refused` result branch that fires decides (a `goto`
/// enters its step with its guidance, joined by every refusing floor's own guidance); without
/// one, the landing floor's send-back to review (the one route a floor names itself, because the
/// review step is found on the node's route) sends the node there.
fn refused(
    bead: &mut Bead,
    ev: &Evidence,
    manifest: &Manifest,
    seq: u64,
    now: &str,
) -> Option<String> {
    let effects = || ev.outcomes.iter().flat_map(|o| &o.effects);
    let mut guidance: Vec<String> = Vec::new();
    let back = match branch::try_branches(bead, manifest, Firing::Refused, (seq, now)) {
        Applied::Decided(next) => return next,
        Applied::Goto { step, guidance: g } => {
            guidance.extend(g);
            step
        }
        Applied::Declared => effects().find_map(|e| match e {
            Effect::SendBack { step, .. } => Some(step.clone()),
            _ => None,
        })?,
    };
    guidance.extend(effects().filter_map(|e| match e {
        Effect::SendBack { guidance, .. } | Effect::Guidance(guidance) => Some(guidance.clone()),
        _ => None,
    }));
    bead.pipeline.guidance = (!guidance.is_empty()).then(|| guidance.join("\n\n").into());
    bead.enter_step(&back, seq, now);
    Some(back)
}

/// Record every review kept for this check, whatever its verdict; a FAIL the refusal acted on
/// (the node left the step, was parked or waits at a route gate) is marked so, and is not acted
/// on again.
fn record_reviews(after: &mut Bead, before: &Bead, ev: &Evidence, seq: u64, now: &str) {
    let (a, b) = (&after.pipeline, &before.pipeline);
    let acted = a.entered != b.entered || a.dead_letter != b.dead_letter || a.gate != b.gate;
    for effect in ev.outcomes.iter().flat_map(|o| &o.effects) {
        let Effect::KeepReview(review) = effect else {
            continue;
        };
        let Some(sha256) = &review.sha256 else {
            continue;
        };
        after.push_review(KeptReview {
            sha256: sha256.clone(),
            step: ev.step.name.clone(),
            seq,
            reviewed_sha: review.reviewed_sha.clone(),
            verdict: review.verdict,
            sent_back: review.fail && acted,
            at: now.to_string(),
        });
    }
}

/// One line saying why: the pass, or every refusing/escalating floor's reason.
fn summary(verdict: Verdict, outcomes: &[floors::Outcome], step: &str) -> String {
    let failing: Vec<String> = outcomes
        .iter()
        .filter(|o| o.verdict == verdict && verdict != Verdict::Pass)
        .map(|o| format!("{}: {}", o.kind, o.reason))
        .collect();
    if failing.is_empty() {
        if outcomes.is_empty() {
            format!("{step} has no floors; the proposal stands")
        } else {
            format!("{step}: every floor passed")
        }
    } else {
        failing.join("; ")
    }
}

/// Record what a passing floor asked for, on the node or (scenarios of a node under a campaign)
/// on the campaign root, whose after-image `root` then holds.
fn apply_effect(bead: &mut Bead, root: &mut Option<Bead>, lineage: &Lineage, effect: &Effect) {
    match effect {
        Effect::SetScenarios(ids) => {
            if bead.pipeline.kind == Kind::Root || bead.parent.is_none() {
                bead.pipeline.scenarios = ids.clone().into();
            } else if let Some(campaign) = lineage.ancestors.last() {
                let root = root.get_or_insert_with(|| campaign.clone());
                root.pipeline.scenarios = ids.clone().into();
            }
        }
        Effect::DefineScenarios(ids) if bead.pipeline.scenarios.is_empty() => {
            bead.pipeline.scenarios = ids.clone().into();
        }
        Effect::DefineScenarios(_) => {}
        Effect::SetVerdict(v) => bead.pipeline.verdict = Some(*v),
        Effect::SetFiles(files) => {
            bead.pipeline.files = files.iter().map(|f| f.as_str().into()).collect()
        }
        Effect::SetReviewedSha(sha) => bead.pipeline.reviewed_sha = Some(sha.clone().into()),
        Effect::SetPrUrl(url) => bead.pipeline.pr_url = Some(url.clone().into()),
        Effect::SendBack { .. }
        | Effect::Guidance(_)
        | Effect::AwaitLand { .. }
        | Effect::KeepReview(_) => {}
    }
}
