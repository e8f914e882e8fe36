//! A node's state: what its own bead says of it before its step's rules apply, derived once and
//! in one place ([`Bead::state`]).
//!
//! A bead stores these facts as independent fields (`status`, `pipeline.lease`,
//! `pipeline.dead_letter`, `pipeline.gate`), and an older or hand-edited file may hold several
//! at once: a closed bead with a stale lease, a claimed bead that is also dead-lettered. Which
//! one counts is decided here, in this order, so `decide` matches on one value instead of probing
//! the fields in its own order. The stored format does not change.

use super::{Bead, DeadLetter, Gate, GateState, Lease};

/// A node's state, the first that holds in this order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NodeState<'a> {
    /// Closed (finished, halted or cancelled), whatever else it records.
    Closed,
    /// Claimed by a holder: a dispatch is in flight, here or elsewhere.
    Leased(&'a Lease),
    /// Dead-lettered (parked) on a step.
    DeadLettered(&'a DeadLetter),
    /// A gate pending on its current step since it entered it.
    Gated(&'a Gate),
    /// None of the above: its step's rules decide.
    Active,
}

impl Bead {
    /// This bead's [`NodeState`]. Pure: reads only the bead.
    pub fn state(&self) -> NodeState<'_> {
        let p = &self.pipeline;
        if self.is_closed() {
            NodeState::Closed
        } else if let Some(lease) = p.lease.as_deref() {
            NodeState::Leased(lease)
        } else if let Some(dl) = p.dead_letter.as_deref() {
            NodeState::DeadLettered(dl)
        } else if let Some(gate) = self
            .gate_on_step()
            .filter(|g| g.state == GateState::Pending)
        {
            NodeState::Gated(gate)
        } else {
            NodeState::Active
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Status;

    fn bead() -> Bead {
        let mut b = Bead::new(
            "sp-1".into(),
            "t".into(),
            String::new(),
            "2025-01-01T00:00:00Z",
        );
        b.pipeline.route = "leaf".into();
        b.pipeline.step = "implement".into();
        b.pipeline.entered = 5;
        b.pipeline.seq = 10;
        b
    }

    fn lease() -> Box<Lease> {
        Box::new(Lease {
            holder: "runner-2".into(),
            since: "2025-01-01T00:00:00Z".into(),
            credential_sha256: None,
            job: None,
        })
    }

    fn dead_letter() -> Box<DeadLetter> {
        Box::new(DeadLetter {
            step: "implement".into(),
            reason: "attempts exhausted".into(),
            seq: 7,
            at: "2025-01-01T00:00:00Z".into(),
        })
    }

    fn gate(step: &str, seq: u64, state: GateState) -> Box<Gate> {
        Box::new(Gate {
            step: step.into(),
            seq,
            state,
            by: None,
            autonomy: None,
            supplied_by: None,
            route: None,
            land: None,
            at: "2025-01-01T00:00:00Z".into(),
        })
    }

    #[test]
    fn each_state_is_the_first_that_holds() {
        let mut b = bead();
        assert_eq!(b.state(), NodeState::Active);
        b.pipeline.gate = Some(gate("implement", 6, GateState::Pending));
        assert!(matches!(b.state(), NodeState::Gated(_)));
        b.pipeline.dead_letter = Some(dead_letter());
        assert!(matches!(b.state(), NodeState::DeadLettered(_)));
        b.pipeline.lease = Some(lease());
        assert!(matches!(b.state(), NodeState::Leased(_)));
        b.status = Status::Closed;
        assert_eq!(b.state(), NodeState::Closed);
    }

    #[test]
    fn only_a_pending_gate_on_the_step_since_entry_gates() {
        let mut b = bead();
        for g in [
            gate("implement", 6, GateState::Approved),
            gate("generate-spec", 6, GateState::Pending),
            gate("implement", 5, GateState::Pending),
        ] {
            b.pipeline.gate = Some(g);
            assert_eq!(b.state(), NodeState::Active);
        }
    }
}
