//! A claim's Slurm job (issue 17, `docs/scale-out.md`): `record-job`, the runner noting the job
//! `sbatch` gave its dispatch, and `adopt-job`, a restarted runner taking over the claim of a
//! dead runner whose job Slurm still knows. Both are the runner's verbs.
//!
//! DESIGN's rule that another holder's claim is left alone has this one exception, and only
//! when the job proves the claim's dispatch: the job id on the claim (or, for a runner that died
//! between `sbatch` and `record-job`, no id yet), the job's name
//! `splice-<bead>-<step>-<attempt>-<repo>` for the claim's step and attempt and this repository, and Slurm knowing the job. That the old holder is dead is
//! the runner's finding (its record and process), given here as `holder_dead`.

use serde::Serialize;

use super::{Ctx, Refusal, Verb};
use crate::error::Result;
use crate::model::Bead;
use crate::model::executor::job_name;
use crate::store::{Change, Reads};

/// A recorded or adopted job.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct JobClaim {
    pub bead: String,
    pub job: String,
    pub holder: String,
    /// The claim's dispatch: its step, attempt and the seq it was handed (its proposals name
    /// them).
    pub step: String,
    pub attempt: u32,
    pub seq: u64,
    /// The holder whose claim was taken over (`adopt-job`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adopted_from: Option<String>,
}

/// `record-job`: the job `sbatch` gave this runner's dispatch of `id`.
pub fn record_job(ctx: &Ctx, id: &str, job: &str) -> Result<JobClaim> {
    let holder = ctx.holder.clone().unwrap_or_default();
    ctx.apply(Verb::RecordJob, &Reads::subject(id), |fresh, who| {
        who.admit(Verb::RecordJob)?;
        Ok(plan_record(&fresh.subject, &holder, job)?)
    })
}

pub fn plan_record(bead: &Bead, holder: &str, job: &str) -> Result<Change<JobClaim>, Refusal> {
    let (lease, dispatch) = match (&bead.pipeline.lease, &bead.pipeline.last_dispatch) {
        (Some(l), Some(d)) if l.holder == holder && d.holder == holder => (l, d),
        _ => {
            return Err(Refusal::NotClaimedBy {
                bead: bead.id.to_string(),
                holder: holder.to_string(),
            });
        }
    };
    if let Some(other) = lease.job.as_deref().filter(|j| *j != job) {
        return Err(Refusal::NotTheJob {
            bead: bead.id.to_string(),
            why: format!("its claim is job {other}'s already, not job {job}'s"),
        });
    }
    let mut after = bead.clone();
    if let Some(l) = after.pipeline.lease.as_mut() {
        l.job = Some(job.to_string());
    }
    let output = JobClaim {
        bead: bead.id.to_string(),
        job: job.to_string(),
        holder: holder.to_string(),
        step: dispatch.step.clone(),
        attempt: dispatch.attempt,
        seq: dispatch.seq,
        adopted_from: None,
    };
    Ok(Change::one(after, Some(format!("slurm job {job}")), output))
}

/// What proves a job is a claim's dispatch: the runner read it from Slurm.
#[derive(Clone, Debug)]
pub struct Proof<'a> {
    pub job: &'a str,
    /// The job's name as Slurm reports it.
    pub name: &'a str,
    /// Slurm knows the job (queued, running, or ended and not yet purged).
    pub known: bool,
    /// The runner found the claim's holder dead.
    pub holder_dead: bool,
    /// This repository's part of a job name ([`job_name`]).
    pub repo: &'a str,
}

/// `adopt-job`: take over the claim on `id` whose job `proof` shows.
pub fn adopt_job(ctx: &Ctx, id: &str, proof: &Proof) -> Result<JobClaim> {
    let holder = ctx.holder.clone().unwrap_or_default();
    ctx.apply(Verb::AdoptJob, &Reads::subject(id), |fresh, who| {
        who.admit(Verb::AdoptJob)?;
        Ok(plan_adopt(&fresh.subject, &holder, proof, &ctx.now)?)
    })
}

pub fn plan_adopt(
    bead: &Bead,
    holder: &str,
    proof: &Proof,
    now: &str,
) -> Result<Change<JobClaim>, Refusal> {
    let refuse = |why: String| {
        Err(Refusal::NotTheJob {
            bead: bead.id.to_string(),
            why,
        })
    };
    let Some(lease) = &bead.pipeline.lease else {
        return refuse("it has no claim to adopt".into());
    };
    if lease.holder == holder {
        return refuse(format!("its claim is {holder}'s already"));
    }
    if !proof.holder_dead {
        return refuse(format!(
            "its holder {} is not known to be dead; a live holder's claim is left alone",
            lease.holder
        ));
    }
    if let Some(recorded) = lease.job.as_deref().filter(|j| *j != proof.job) {
        return refuse(format!(
            "its claim is job {recorded}'s, not job {}'s",
            proof.job
        ));
    }
    let Some(dispatch) = bead
        .pipeline
        .last_dispatch
        .as_deref()
        .filter(|d| d.holder == lease.holder)
    else {
        return refuse(format!("{} started no dispatch to adopt", lease.holder));
    };
    let expected = job_name(&bead.id, &dispatch.step, dispatch.attempt, proof.repo);
    if proof.name != expected {
        return refuse(format!(
            "job {} is named {:?}, not {expected:?} (this claim's dispatch)",
            proof.job, proof.name
        ));
    }
    if !proof.known {
        return refuse(format!("slurm does not know job {}", proof.job));
    }
    let mut after = bead.clone();
    let old = lease.holder.clone();
    if let Some(l) = after.pipeline.lease.as_mut() {
        l.holder = holder.to_string();
        l.since = now.to_string();
        l.job = Some(proof.job.to_string());
    }
    if let Some(d) = after.pipeline.last_dispatch.as_mut()
        && d.holder == old
    {
        d.holder = holder.to_string();
    }
    let output = JobClaim {
        bead: bead.id.to_string(),
        job: proof.job.to_string(),
        holder: holder.to_string(),
        step: dispatch.step.clone(),
        attempt: dispatch.attempt,
        seq: dispatch.seq,
        adopted_from: Some(old.clone()),
    };
    let why = format!("adopted slurm job {} from {old}, which is dead", proof.job);
    Ok(Change::one(after, Some(why), output))
}

#[cfg(test)]
mod tests;
