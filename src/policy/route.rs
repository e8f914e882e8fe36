//! Where a node goes when its step passes (as declared), and when a parent lets its children start.

use crate::model::bead::{GateState, Verdict};
use crate::model::{Bead, Manifest, Role};

use super::call::Return;

/// Where a passed step takes the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Advance<'m> {
    /// The next step on its route.
    Next(&'m str),
    /// The step was the route's last: the node closes.
    Close,
    /// The step was the route's last, inside a call: the innermost call returns.
    Return(Return),
    /// The step was the route's last, inside a call that cannot return: park, saying why.
    Park(String),
}

/// Where `bead` goes once its current step passes, as its route declares (result branches,
/// [`super::branch`], are tried first by the writer). At its route's end a node with a call
/// open goes back to its caller ([`super::call::returning`]) instead of closing.
pub fn advance<'m>(manifest: &'m Manifest, bead: &Bead) -> Advance<'m> {
    let p = &bead.pipeline;
    match manifest.next_step(&p.route, &p.step) {
        Some(step) => Advance::Next(step),
        None if p.calls.is_empty() => Advance::Close,
        None => match super::call::returning(manifest, bead) {
            Ok(back) => Advance::Return(back),
            Err(why) => Advance::Park(why),
        },
    }
}

/// Has `parent` reached the step that releases its children (the delegate step), or does its
/// route have none? A step its route does not list releases nothing.
pub fn releases_children(manifest: &Manifest, parent: &Bead) -> bool {
    let (Some(route), Some(delegate)) = (
        manifest.route(&parent.pipeline.route),
        manifest.step_with(Role::Delegate),
    ) else {
        return true;
    };
    let at = route.iter().position(|s| *s == parent.pipeline.step);
    let delegate = route.iter().position(|s| *s == delegate.name);
    !matches!((at, delegate), (Some(a), Some(d)) if a < d)
}

/// Did `bead` close by finishing its route: it is closed at its route's last step (deliver,
/// integrate), whose check since it entered passed, with no gate pending there? Then its work is
/// on its target (proven delivered, or integrated there), and the checkouts splice made for it
/// have served. A node a person closed or cancelled elsewhere has not.
pub fn finished(manifest: &Manifest, bead: &Bead) -> bool {
    let p = &bead.pipeline;
    bead.is_closed()
        && manifest
            .route(&p.route)
            .and_then(<[String]>::last)
            .is_some_and(|last| *last == p.step)
        && bead
            .check_since_entry()
            .is_some_and(|c| c.verdict == Verdict::Pass)
        && bead
            .gate_on_step()
            .is_none_or(|g| g.state != GateState::Pending)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(route: &str, step: &str) -> Bead {
        let mut b = Bead::new("x".into(), "x".into(), String::new(), "t");
        b.pipeline.route = route.into();
        b.pipeline.step = step.into();
        b.pipeline.kind = Manifest::default_manifest()
            .route_kind(route)
            .unwrap_or_default();
        b
    }

    #[test]
    fn the_next_step_and_the_last_step_closes() {
        let m = Manifest::default_manifest();
        let b = at("leaf", "generate-spec");
        assert_eq!(advance(&m, &b), Advance::Next("implement"));
        assert_eq!(advance(&m, &at("leaf", "deliver")), Advance::Close);
    }

    #[test]
    fn a_routes_end_inside_a_call_returns_instead_of_closing() {
        use crate::model::bead::CallFrame;
        let m = Manifest::default_manifest();
        let mut b = at("compound", "integrate");
        b.pipeline.calls.push(CallFrame {
            callee: "compound".into(),
            route: "leaf".into(),
            kind: crate::model::Kind::Leaf,
            step: "review".into(),
            return_to: "implement".into(),
            seq: 1,
            at: "t".into(),
        });
        let Advance::Return(back) = advance(&m, &b) else {
            panic!("returns");
        };
        assert_eq!(
            (back.route.as_str(), back.step.as_str()),
            ("leaf", "implement")
        );
        let mid = at("compound", "to-issues");
        assert_eq!(
            advance(&m, &mid),
            Advance::Next("delegate"),
            "not at the end"
        );
        b.pipeline.calls[0].return_to = "integrate".into();
        assert!(matches!(advance(&m, &b), Advance::Park(why) if why.contains("return_to")));
    }

    #[test]
    fn children_wait_until_the_parent_delegates() {
        let m = Manifest::default_manifest();
        assert!(!releases_children(&m, &at("root", "to-issues")));
        assert!(releases_children(&m, &at("root", "delegate")));
        assert!(releases_children(&m, &at("root", "integrate")));
        assert!(
            releases_children(&m, &at("leaf", "implement")),
            "no delegate step"
        );
    }

    #[test]
    fn a_node_finished_when_it_closed_on_its_routes_last_step_after_a_passing_check() {
        use crate::model::bead::Check;
        let m = Manifest::default_manifest();
        let mut b = at("leaf", "deliver");
        b.pipeline.entered = 5;
        b.close("done", "t");
        assert!(!finished(&m, &b), "no check since entry");
        b.pipeline.last_check = Some(Box::new(Check {
            step: "deliver".into(),
            seq: 6,
            verdict: Verdict::Pass,
            reason: String::new(),
            evidence: serde_json::Value::Null,
            run: None,
            awaiting_merge: false,
            recheck: false,
            at: "t".into(),
        }));
        assert!(finished(&m, &b));
        let mut open = b.clone();
        open.status = crate::model::bead::Status::Open;
        assert!(!finished(&m, &open), "not closed");
        let mut early = b.clone();
        early.pipeline.step = "review".into();
        early.pipeline.last_check.as_mut().unwrap().step = "review".into();
        assert!(!finished(&m, &early), "closed before its route's last step");
    }
}
