//! A synthetic campaign for benches: a root, compounds of `leaves` leaves each, `n` beads in all,
//! in id order. Shared by `benches/drive.rs` and `benches/cache.rs` (each includes it with
//! `#[path]`); every bead is one splice itself could have written.

use splice::model::bead::SplitRecord;
use splice::model::{Bead, Kind};

/// A node of `kind` at `step` with a description of `text` bytes, `seq` 10, entered at 5.
pub fn node(
    id: String,
    parent: Option<&str>,
    kind: Kind,
    step: &str,
    text: usize,
    at: &str,
) -> Bead {
    let mut b = Bead::new(id, "synthetic task".into(), "x".repeat(text), at);
    b.parent = parent.map(Into::into);
    b.pipeline.kind = kind;
    b.pipeline.route = kind.route().into();
    b.pipeline.step = step.into();
    b.pipeline.seq = 10;
    b.pipeline.entered = 5;
    b
}

/// The campaign: `leaf(compound id, l)` makes each compound's `l`-th leaf; compounds and the
/// root carry a description of `text` bytes.
pub fn campaign(
    n: usize,
    leaves: usize,
    text: usize,
    at: &str,
    leaf: impl Fn(&str, usize) -> Bead,
) -> Vec<Bead> {
    let mut beads = Vec::with_capacity(n);
    let mut root = node("sp-root".into(), None, Kind::Root, "delegate", text, at);
    let mut compounds = Vec::new();
    let mut c = 0;
    while beads.len() + 1 < n {
        let cid = format!("sp-root.{c}");
        let mut compound = node(
            cid.clone(),
            Some("sp-root"),
            Kind::Compound,
            "delegate",
            text,
            at,
        );
        let mut children = Vec::new();
        for l in 0..leaves.min(n - beads.len() - 2) {
            let b = leaf(&cid, l);
            children.push(b.id.clone());
            beads.push(b);
        }
        compound.pipeline.split = Some(Box::new(SplitRecord { children, seq: 4 }));
        beads.push(compound);
        compounds.push(cid.as_str().into());
        c += 1;
    }
    root.pipeline.split = Some(Box::new(SplitRecord {
        children: compounds,
        seq: 4,
    }));
    beads.push(root);
    beads.sort_by(|a, b| a.id.cmp(&b.id));
    beads
}
