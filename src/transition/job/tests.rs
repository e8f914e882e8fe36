use super::*;
use crate::model::bead::{Dispatch, Lease};

const NOW: &str = "2026-01-01T00:00:00Z";

/// A node at `implement`, claimed by `holder` for its second attempt, with `job` on the claim.
fn claimed(holder: &str, job: Option<&str>) -> Bead {
    let mut b = Bead::new("sp-a.1".into(), "t".into(), String::new(), "then");
    b.pipeline.step = "implement".into();
    b.pipeline.seq = 9;
    b.pipeline.attempts.insert("implement", 2);
    b.pipeline.lease = Some(Box::new(Lease {
        holder: holder.into(),
        since: "then".into(),
        credential_sha256: Some("ab".into()),
        job: job.map(str::to_string),
    }));
    b.pipeline.last_dispatch = Some(Box::new(Dispatch {
        step: "implement".into(),
        attempt: 2,
        seq: 8,
        holder: holder.into(),
        at: "then".into(),
    }));
    b
}

fn proof<'a>(job: &'a str, name: &'a str) -> Proof<'a> {
    Proof {
        job,
        name,
        known: true,
        holder_dead: true,
        repo: "0123abcd",
    }
}

#[test]
fn the_job_goes_on_its_holders_claim_once() {
    let b = claimed("run:h:1:r1", None);
    let change = plan_record(&b, "run:h:1:r1", "77").unwrap();
    let after = &change.beads[0];
    assert_eq!(
        after.pipeline.lease.as_ref().unwrap().job.as_deref(),
        Some("77")
    );
    assert_eq!((change.output.attempt, change.output.seq), (2, 8));
    // Another holder, or another job on the same claim, is refused.
    assert_eq!(
        plan_record(&b, "run:h:2:r2", "77").unwrap_err().kind(),
        "not-claimed-by-you"
    );
    let recorded = claimed("run:h:1:r1", Some("77"));
    assert_eq!(
        plan_record(&recorded, "run:h:1:r1", "78")
            .unwrap_err()
            .kind(),
        "not-the-job"
    );
}

#[test]
fn a_dead_runners_claim_is_adopted_only_with_its_jobs_proof() {
    let name = "splice-sp-a.1-implement-2-0123abcd";
    let b = claimed("run:h:1:r1", Some("77"));
    let change = plan_adopt(&b, "run:h:2:r2", &proof("77", name), NOW).unwrap();
    let after = &change.beads[0];
    let lease = after.pipeline.lease.as_ref().unwrap();
    assert_eq!(
        (lease.holder.as_str(), lease.job.as_deref()),
        ("run:h:2:r2", Some("77"))
    );
    // The credential stays: the job's proposals still prove themselves with it.
    assert_eq!(lease.credential_sha256.as_deref(), Some("ab"));
    assert_eq!(
        after.pipeline.last_dispatch.as_ref().unwrap().holder,
        "run:h:2:r2"
    );
    assert_eq!(change.output.adopted_from.as_deref(), Some("run:h:1:r1"));

    let refused = |b: &Bead, p: &Proof| plan_adopt(b, "run:h:2:r2", p, NOW).unwrap_err();
    // Another job's id, a wrong name (another attempt), a job Slurm does not know, a live
    // holder: each is refused, and the claim is left alone.
    assert_eq!(refused(&b, &proof("78", name)).kind(), "not-the-job");
    let r = refused(&b, &proof("77", "splice-sp-a.1-implement-1-0123abcd"));
    assert!(
        r.to_string()
            .contains("not \"splice-sp-a.1-implement-2-0123abcd\""),
        "{r}"
    );
    let unknown = Proof {
        known: false,
        ..proof("77", name)
    };
    assert_eq!(refused(&b, &unknown).kind(), "not-the-job");
    let alive = Proof {
        holder_dead: false,
        ..proof("77", name)
    };
    assert!(refused(&b, &alive).to_string().contains("left alone"));
    // Its own claim, or no claim: nothing to adopt.
    assert!(plan_adopt(&b, "run:h:1:r1", &proof("77", name), NOW).is_err());
    let mut free = b.clone();
    free.pipeline.lease = None;
    assert!(
        refused(&free, &proof("77", name))
            .to_string()
            .contains("no claim")
    );
}

#[test]
fn a_claim_without_a_job_yet_is_adopted_by_its_dispatchs_job_name() {
    // The runner died between `sbatch` and `record-job`.
    let b = claimed("run:h:1:r1", None);
    let change = plan_adopt(
        &b,
        "run:h:2:r2",
        &proof("90", "splice-sp-a.1-implement-2-0123abcd"),
        NOW,
    )
    .unwrap();
    assert_eq!(
        change.beads[0]
            .pipeline
            .lease
            .as_ref()
            .unwrap()
            .job
            .as_deref(),
        Some("90")
    );
    let other = plan_adopt(
        &b,
        "run:h:2:r2",
        &proof("90", "splice-sp-b-implement-2-0123abcd"),
        NOW,
    );
    assert_eq!(other.unwrap_err().kind(), "not-the-job");
}
