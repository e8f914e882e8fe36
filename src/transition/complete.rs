//! `complete` (and `integrate`, `deliver`, which are `complete` for those steps): run the step's
//! floors, record the check, and advance — through the human gate, which the node's autonomy may
//! relax — or close the node when the step was its route's last.

use serde_json::{Value, json};

use super::{
    Ctx, Outcome, Status, advance, ancestors, ancestors_unlocked, create::current_branch,
    current_step, defaults, require_not_foreign, require_open, require_seq, require_step,
};
use crate::error::{Error, Result};
use crate::floors::{self, Effect};
use crate::model::bead::{Check, Gate, GateState, Proposal, Verdict};
use crate::model::{Bead, Kind};
use crate::policy::{GateOutcome, Lineage, gate};

/// Check `step` of `id` and advance it when the evidence holds. `pr_url` is `deliver --pr-url`.
pub fn complete(
    ctx: &Ctx,
    id: &str,
    step: &str,
    pr_url: Option<String>,
    verb: &str,
) -> Result<Outcome> {
    let store = ctx.store;
    let manifest = store.manifest()?;
    let config = store.config()?;

    // Slow evidence work first, without the lock.
    let bead = store.read_bead(id)?;
    require_open(&bead)?;
    require_step(&bead, step)?;
    require_seq(&bead, ctx.expect_seq)?;
    require_not_foreign(&bead, ctx.holder.as_deref())?;
    let seen_seq = bead.pipeline.seq;
    let step_def = current_step(&manifest, &bead)?.clone();
    let branch = current_branch(store);
    let ancestors_before = ancestors_unlocked(store, &bead)?;
    let mut proposal: Option<Proposal> = bead.proposal_since_entry().cloned();
    if let Some(url) = &pr_url {
        let p = proposal.get_or_insert_with(|| Proposal {
            step: step.to_string(),
            artifact: url.clone(),
            ..Proposal::default()
        });
        p.pr_url = Some(url.clone());
    }
    let workdir = floors::workdir_for(store, &bead);
    let floor_ctx = floors::Ctx {
        store,
        manifest: &manifest,
        config: &config,
        bead: &bead,
        lineage: Lineage::new(&ancestors_before, defaults(&config, &branch)),
        step: &step_def,
        workdir: workdir.clone(),
        proposal: proposal.as_ref(),
    };
    let mut outcomes = floors::run_all(&floor_ctx);
    if step_def.floors.is_empty() && bead.proposal_since_entry().is_none() {
        outcomes.push(floors::Outcome::nothing_proposed(format!(
            "{step} declares no floors and nothing was proposed: an empty check list proves \
             nothing; propose the step's result first"
        )));
    }
    let verdict = floors::combine(&outcomes);
    let reason = summary(verdict, &outcomes, step);
    let evidence: Vec<Value> = outcomes
        .iter()
        .map(|o| json!({ "kind": o.kind, "verdict": o.verdict, "reason": o.reason, "evidence": o.evidence }))
        .collect();
    let awaiting_merge = verdict == Verdict::Refuse && outcomes.iter().any(|o| o.awaiting_merge);

    store.transact(verb, &ctx.actor(), |tx| {
        let mut bead = tx.read(id)?;
        require_open(&bead)?;
        require_step(&bead, step)?;
        require_not_foreign(&bead, ctx.holder.as_deref())?;
        if bead.pipeline.seq != seen_seq {
            return Err(Error::refused(format!(
                "bead {id} changed while its floors ran (seq {seen_seq} → {}); run the check again",
                bead.pipeline.seq
            )));
        }
        let now = tx.now.clone();
        let seq = bead.bump(&now);
        bead.pipeline.last_check = Some(Check {
            step: step.to_string(),
            seq,
            verdict,
            reason: reason.clone(),
            evidence: Value::Array(evidence.clone()),
            run: ctx.run.clone().or_else(|| Some(ctx.actor())),
            awaiting_merge,
            at: now.clone(),
        });
        if pr_url.is_some() {
            bead.pipeline.pr_url = pr_url.clone();
        }
        tx.set_reason(format!("{step}: {reason}"));
        let mut gate = Value::Null;
        let mut next = Value::Null;
        let status = match verdict {
            Verdict::Pass => {
                for effect in outcomes.iter().flat_map(|o| &o.effects) {
                    apply_effect(tx, &mut bead, effect)?;
                }
                let ancestors = ancestors(tx, &bead)?;
                let lineage = Lineage::new(&ancestors, defaults(&config, &branch));
                let at_gate = gate::at_pass(
                    &step_def,
                    &bead,
                    lineage.autonomy(&bead),
                    lineage.target(&bead),
                );
                match at_gate {
                    GateOutcome::Open => {
                        next = json!(advance(&mut bead, &manifest, seq, &now));
                    }
                    GateOutcome::Relaxed { level, source } => {
                        bead.pipeline.gate = Some(Gate {
                            step: step.to_string(),
                            state: GateState::Approved,
                            seq,
                            by: None,
                            autonomy: Some(level),
                            supplied_by: Some(source.label()),
                            at: now.clone(),
                        });
                        gate = json!({ "state": "relaxed", "autonomy": level, "supplied_by": source.label() });
                        next = json!(advance(&mut bead, &manifest, seq, &now));
                    }
                    GateOutcome::Pending => {
                        bead.pipeline.gate = Some(Gate {
                            step: step.to_string(),
                            state: GateState::Pending,
                            seq,
                            by: None,
                            autonomy: None,
                            supplied_by: None,
                            at: now.clone(),
                        });
                        gate = json!("pending");
                    }
                }
                Status::Ok
            }
            Verdict::Refuse => {
                for effect in outcomes.iter().flat_map(|o| &o.effects) {
                    if let Effect::SendBack { step: back, guidance } = effect {
                        bead.pipeline.guidance = Some(guidance.clone());
                        bead.enter_step(back, seq, &now);
                        next = json!(back);
                    }
                }
                Status::Refused(reason.clone())
            }
            Verdict::Escalate => Status::Escalated(reason.clone()),
        };
        let json = json!({
            "bead": id,
            "step": step,
            "verdict": verdict,
            "reason": reason,
            "floors": evidence,
            "read_in": workdir,
            "gate": gate,
            "next": next,
            "closed": bead.is_closed(),
            "seq": seq,
        });
        tx.put(bead);
        Ok(Outcome { json, status })
    })
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

/// Record what a passing floor asked for.
fn apply_effect(tx: &mut crate::store::Tx, bead: &mut Bead, effect: &Effect) -> Result<()> {
    match effect {
        Effect::SetScenarios(ids) => {
            if bead.pipeline.kind == Kind::Root || bead.parent.is_none() {
                bead.pipeline.scenarios = ids.clone();
            } else {
                let lineage = ancestors(tx, bead)?;
                if let Some(mut root) = lineage.last().cloned() {
                    let now = tx.now.clone();
                    root.bump(&now);
                    root.pipeline.scenarios = ids.clone();
                    tx.put(root);
                }
            }
        }
        Effect::SetVerdict(v) => bead.pipeline.verdict = Some(*v),
        Effect::SetFiles(files) => bead.pipeline.files = files.clone(),
        Effect::SetReviewedSha(sha) => bead.pipeline.reviewed_sha = Some(sha.clone()),
        Effect::SetPrUrl(url) => bead.pipeline.pr_url = Some(url.clone()),
        Effect::SendBack { .. } => {}
    }
    Ok(())
}
