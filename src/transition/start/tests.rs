//! The start plan without a file system.

use super::*;
use crate::model::Status;

const AT: &str = "2026-01-01T00:00:00Z";

fn plain(id: &str, parent: Option<&str>) -> Bead {
    let mut b = Bead::new(id.into(), format!("title {id}"), String::new(), AT);
    b.parent = parent.map(Into::into);
    b.pipeline.seq = 1;
    b
}

fn scan(beads: Vec<Bead>) -> Scan {
    Scan {
        beads,
        unreadable: Vec::new(),
    }
}

fn go(beads: Vec<Bead>, id: &str, args: &StartArgs) -> Result<Change<Started>> {
    plan(
        &Manifest::default_manifest(),
        &scan(beads),
        id,
        args,
        "main",
        AT,
    )
}

#[test]
fn a_task_goes_on_its_tiers_route_keeping_its_id_and_fields() {
    let mut b = plain("bd-7", None);
    b.extra.insert("design".into(), "kept".into());
    let args = StartArgs {
        tier: Some("trivial".into()),
        ..StartArgs::default()
    };
    let c = go(vec![b], "bd-7", &args).unwrap();
    let n = &c.beads[0];
    assert!(n.is_node());
    assert_eq!(
        (n.pipeline.route.as_str(), n.pipeline.step.as_str()),
        ("trivial", "implement")
    );
    assert_eq!(n.extra["design"], "kept");
    assert_eq!(n.pipeline.target.as_deref(), Some("main"));
    assert_eq!(n.pipeline.seq, 1, "the shell bumps it");

    let again = go(c.beads, "bd-7", &args).unwrap_err();
    assert!(
        again.to_string().contains("already on route trivial"),
        "{again}"
    );
}

#[test]
fn an_epic_adopts_its_children_as_its_split_in_natural_order() {
    let beads = vec![
        plain("bd-e", None),
        plain("bd-e.10", Some("bd-e")),
        plain("bd-e.2", Some("bd-e")),
        plain("bd-x", None),
    ];
    let args = StartArgs {
        campaign: true,
        scenarios: [("bd-e.2".to_string(), vec!["S1".to_string()])].into(),
        ..StartArgs::default()
    };
    let c = go(beads, "bd-e", &args).unwrap();
    assert_eq!(c.output.adopted, ["bd-e.2", "bd-e.10"]);
    let epic = c.beads.last().unwrap();
    assert_eq!(epic.pipeline.step, "to-issues");
    assert_eq!(epic.pipeline.kind, Kind::Root);
    assert_eq!(epic.pipeline.scenarios, ["S1"]);
    let split = epic.pipeline.split.as_ref().unwrap();
    assert_eq!(split.children, ["bd-e.2", "bd-e.10"]);
    for (i, child) in c.beads[..2].iter().enumerate() {
        let prov = child.pipeline.provenance.as_ref().unwrap();
        assert_eq!(
            (prov.split_by.as_str(), prov.seq, prov.index),
            ("bd-e", 2, i + 1)
        );
        assert_eq!(child.pipeline.step, "generate-spec");
    }
    assert_eq!(c.beads[0].pipeline.scenarios, ["S1"]);
}

#[test]
fn refusals_name_what_is_wrong() {
    let campaign = StartArgs {
        campaign: true,
        ..StartArgs::default()
    };
    let err = |beads: Vec<Bead>, id: &str, a: &StartArgs| go(beads, id, a).unwrap_err().to_string();
    assert!(err(vec![], "bd-9", &StartArgs::default()).contains("no bead \"bd-9\""));
    assert!(err(vec![plain("bd-e", None)], "bd-e", &campaign).contains("no children"));
    let mut closed = plain("bd-c", None);
    closed.status = Status::Closed;
    assert!(err(vec![closed], "bd-c", &StartArgs::default()).contains("closed"));
    let stray = StartArgs {
        scenarios: [("bd-z".to_string(), vec!["S1".to_string()])].into(),
        ..campaign
    };
    let beads = vec![plain("bd-e", None), plain("bd-e.1", Some("bd-e"))];
    assert!(err(beads, "bd-e", &stray).contains("not a child of bd-e"));
}
