//! Model-based property test: random verb sequences applied to a reference model and to the real
//! store (through the library), with the invariants checked after every step: every file parses,
//! outcomes and state agree with the model, `seq` counts transitions, and replaying the journal's
//! committed after-images reproduces the files exactly.

use std::collections::BTreeMap;

use proptest::prelude::*;
use splice::model::Bead;
use splice::store::Store;
use splice::transition::{self, Ctx, Refusal, claim, complete, gate, park, propose, settings};

/// The transitions' time.
const NOW: &str = "2026-01-01T00:00:00Z";

const MANIFEST: &str = r#"{
  "routes": { "root": ["spec"], "compound": ["spec"], "leaf": ["spec", "implement", "deliver"] },
  "steps": [
    { "name": "spec", "run": { "prompt": "spec" }, "gate": "human", "relax": ["wave"], "max_attempts": 2,
      "floors": [ { "kind": "file_exists", "path": "ok/{{bead.id}}" } ] },
    { "name": "implement", "run": { "prompt": "implement" }, "max_attempts": 2, "floors": [] },
    { "name": "deliver", "run": { "prompt": "deliver" }, "max_attempts": 2,
      "floors": [ { "kind": "file_exists", "path": "ok/{{bead.id}}" } ] }
  ]
}"#;

/// A git repository with one (empty) commit on `main`: a new node needs a delivery target that
/// names a commit (issue 10, item 9).
fn git_repo(dir: &std::path::Path) {
    let mut opts = git2::RepositoryInitOptions::new();
    opts.initial_head("main");
    let repo = git2::Repository::init_opts(dir, &opts).unwrap();
    let sig = git2::Signature::now("t", "t@example.com").unwrap();
    let tree = repo.index().unwrap().write_tree().unwrap();
    let tree = repo.find_tree(tree).unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "initial", &tree, &[])
        .unwrap();
}

const STEPS: [&str; 3] = ["spec", "implement", "deliver"];
const BEADS: usize = 2;

#[derive(Clone, Debug)]
enum Op {
    Claim {
        b: usize,
        h: u8,
        dispatch: bool,
    },
    Release {
        b: usize,
        h: u8,
    },
    Clear {
        b: usize,
    },
    Propose {
        b: usize,
        h: Option<u8>,
        current: bool,
    },
    Complete {
        b: usize,
    },
    Approve {
        b: usize,
    },
    Park {
        b: usize,
    },
    Unpark {
        b: usize,
    },
    Evidence {
        b: usize,
        present: bool,
    },
    SetAutonomy {
        b: usize,
        wave: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let b = 0..BEADS;
    prop_oneof![
        (b.clone(), 0..3u8, any::<bool>()).prop_map(|(b, h, dispatch)| Op::Claim {
            b,
            h,
            dispatch
        }),
        (b.clone(), 0..3u8).prop_map(|(b, h)| Op::Release { b, h }),
        b.clone().prop_map(|b| Op::Clear { b }),
        (b.clone(), proptest::option::of(0..3u8), any::<bool>())
            .prop_map(|(b, h, current)| Op::Propose { b, h, current }),
        b.clone().prop_map(|b| Op::Complete { b }),
        b.clone().prop_map(|b| Op::Complete { b }),
        b.clone().prop_map(|b| Op::Approve { b }),
        b.clone().prop_map(|b| Op::Park { b }),
        b.clone().prop_map(|b| Op::Unpark { b }),
        (b.clone(), any::<bool>()).prop_map(|(b, present)| Op::Evidence { b, present }),
        (b, any::<bool>()).prop_map(|(b, wave)| Op::SetAutonomy { b, wave }),
    ]
}

/// The reference model of one bead.
#[derive(Clone, Debug, Default, PartialEq)]
struct Model {
    step: usize,
    closed: bool,
    lease: Option<u8>,
    parked: bool,
    attempts: BTreeMap<usize, u32>,
    /// Holder and step of the last dispatch, until a clear takes it back.
    dispatch: Option<(u8, usize)>,
    proposed: bool,
    gate_pending: bool,
    wave: bool,
    /// The level last set (`wave` or not), none before the first `set-autonomy`.
    autonomy: Option<bool>,
    seq: u64,
}

/// What the model predicts a verb does.
#[derive(Debug, PartialEq)]
enum Expect {
    /// Exit 0.
    Ok,
    /// A refusal that writes nothing.
    Refused,
    /// A refusal recorded as a check (`complete` whose floors refused).
    RecordedRefusal,
}

impl Model {
    fn enter(&mut self, step: usize) {
        self.step = step;
        self.proposed = false;
        self.gate_pending = false;
    }

    fn advance(&mut self) {
        if self.step + 1 < STEPS.len() {
            self.enter(self.step + 1);
        } else {
            self.closed = true;
            self.lease = None;
        }
    }

    fn apply(&mut self, op: &Op, evidence: bool) -> Expect {
        use Expect::*;
        match *op {
            Op::Claim { h, dispatch, .. } => {
                if self.closed || self.lease.is_some_and(|l| l != h) {
                    return Refused;
                }
                if dispatch {
                    let spent = self.attempts.get(&self.step).copied().unwrap_or(0);
                    if self.parked || spent >= 2 {
                        return Refused;
                    }
                    self.attempts.insert(self.step, spent + 1);
                    self.dispatch = Some((h, self.step));
                } else if self.lease == Some(h) {
                    return Ok;
                }
                self.lease = Some(h);
                self.seq += 1;
                Ok
            }
            Op::Release { h, .. } => match self.lease {
                None => Ok,
                Some(l) if l != h => Refused,
                Some(_) => {
                    self.lease = None;
                    self.seq += 1;
                    Ok
                }
            },
            Op::Clear { .. } => {
                // Clearing a claim that is not there is a no-op, as releasing one is.
                let Some(l) = self.lease.take() else {
                    return Ok;
                };
                if let Some((dh, ds)) = self.dispatch.take() {
                    if dh == l {
                        if let Some(n) = self.attempts.get_mut(&ds) {
                            *n = n.saturating_sub(1);
                        }
                    } else {
                        self.dispatch = Some((dh, ds));
                    }
                }
                self.seq += 1;
                Ok
            }
            Op::Propose { h, current, .. } => {
                if self.closed || !current {
                    return Refused;
                }
                let allowed = match (self.lease, h) {
                    (None, None) => true,
                    (Some(l), Some(h)) => l == h,
                    _ => false,
                };
                if !allowed {
                    return Refused;
                }
                self.proposed = true;
                self.seq += 1;
                Ok
            }
            Op::Complete { .. } => {
                if self.closed || self.lease.is_some() {
                    return Refused;
                }
                self.seq += 1;
                let pass = match STEPS[self.step] {
                    "implement" => self.proposed,
                    _ => evidence,
                };
                if !pass {
                    return RecordedRefusal;
                }
                if STEPS[self.step] == "spec" && !self.wave {
                    self.gate_pending = true;
                } else {
                    self.advance();
                }
                Ok
            }
            Op::Approve { .. } => {
                if self.closed || !self.gate_pending || self.lease.is_some() {
                    return Refused;
                }
                self.seq += 1;
                self.advance();
                Ok
            }
            Op::Park { .. } => {
                if self.closed || self.lease.is_some() || self.parked {
                    return Refused;
                }
                self.parked = true;
                self.seq += 1;
                Ok
            }
            Op::Unpark { .. } => {
                if self.closed || !self.parked {
                    return Refused;
                }
                self.parked = false;
                self.attempts.remove(&self.step);
                self.seq += 1;
                Ok
            }
            Op::SetAutonomy { wave, .. } => {
                // Setting the level already set is a no-op write: no bump, no record.
                if self.autonomy == Some(wave) {
                    return Ok;
                }
                self.autonomy = Some(wave);
                self.wave = wave;
                self.seq += 1;
                Ok
            }
            Op::Evidence { .. } => Ok,
        }
    }
}

fn holder(h: u8) -> String {
    format!("h{h}")
}

/// Run `op` through the library; the verb's output does not matter here, only how it ended.
fn run_real(store: &Store, id: &str, op: &Op) -> Result<(), splice::Error> {
    let person = Ctx::person(store, NOW);
    match op {
        Op::Claim { h, dispatch, .. } => {
            claim::claim(&person, id, &holder(*h), *dispatch, None).map(drop)
        }
        Op::Release { h, .. } => claim::release(&person, id, &holder(*h)).map(drop),
        Op::Clear { .. } => claim::clear(&person, id, "judged dead").map(drop),
        Op::Propose { h, current, .. } => {
            let bead = store.read_bead(id)?;
            let step = if *current {
                bead.pipeline.step.clone()
            } else {
                "elsewhere".into()
            };
            let ctx = Ctx {
                holder: h.map(holder),
                ..person.clone()
            };
            propose::propose(
                &ctx,
                id,
                propose::ProposeArgs {
                    step: step.to_string(),
                    artifact: "a".into(),
                    ..Default::default()
                },
            )
            .map(drop)
        }
        Op::Complete { .. } => {
            let step = store.read_bead(id)?.pipeline.step;
            complete::complete(&person, id, &step, None, splice::transition::Verb::Complete)
                .map(drop)
        }
        Op::Approve { .. } => {
            let step = store.read_bead(id)?.pipeline.step;
            gate::approve(&person, id, Some(&step)).map(drop)
        }
        Op::Park { .. } => park::park(&person, id, "stuck").map(drop),
        Op::Unpark { .. } => park::unpark(&person, id, "unstuck").map(drop),
        Op::SetAutonomy { wave, .. } => {
            let level = if *wave {
                splice::model::Autonomy::Wave
            } else {
                splice::model::Autonomy::Hitl
            };
            settings::set_autonomy(&person, id, level).map(drop)
        }
        Op::Evidence { .. } => unreachable!("not a verb"),
    }
}

fn check_bead(model: &Model, bead: &Bead) {
    let p = &bead.pipeline;
    assert_eq!(bead.is_closed(), model.closed, "closed");
    assert_eq!(p.step, STEPS[model.step], "step");
    assert_eq!(
        p.lease.as_ref().map(|l| l.holder.clone()),
        model.lease.map(holder),
        "lease"
    );
    assert_eq!(p.dead_letter.is_some(), model.parked, "parked");
    assert_eq!(
        bead.attempts_on(&p.step),
        model.attempts.get(&model.step).copied().unwrap_or(0),
        "attempts"
    );
    assert_eq!(p.seq, model.seq, "seq counts transitions");
    let pending = bead
        .gate_on_step()
        .is_some_and(|g| g.state == splice::model::bead::GateState::Pending);
    assert_eq!(pending, model.gate_pending, "gate pending");
}

/// Replaying the committed after-images in order gives exactly the files on disk.
fn check_journal_replays(store: &Store) {
    let (records, _) = splice::store::journal::read_committed(&store.journal_path(), 0).unwrap();
    let mut images: BTreeMap<String, splice::model::Bead> = BTreeMap::new();
    for r in records {
        for p in &r.patches {
            let base = images
                .get(&p.id)
                .unwrap_or_else(|| panic!("a patch of {} before any image of it", p.id));
            let after = p.apply(base, &r.at).unwrap_or_else(|e| panic!("{e}"));
            images.insert(p.id.clone(), after);
        }
        for b in r.beads {
            images.insert(b.id.to_string(), b);
        }
    }
    let replayed: BTreeMap<String, Vec<u8>> = images
        .into_iter()
        .map(|(id, b)| (id, b.to_file_bytes()))
        .collect();
    for bead in store.read_all().expect("every bead file parses") {
        let on_disk = std::fs::read(store.bead_path(&bead.id)).unwrap();
        assert_eq!(
            replayed.get(bead.id.as_str()),
            Some(&on_disk),
            "journal replay of {}",
            bead.id
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn the_store_follows_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        git_repo(dir.path());
        std::fs::create_dir_all(dir.path().join(".splice/beads")).unwrap();
        std::fs::write(dir.path().join(".splice/manifest.json"), MANIFEST).unwrap();
        let store = Store::discover(Some(dir.path())).unwrap();
        let person = Ctx::person(&store, NOW);
        let mut ids = Vec::new();
        let mut models = Vec::new();
        for n in 0..BEADS {
            let node = transition::create::NewNode { title: format!("bead {n}"), ..Default::default() };
            let out = transition::create::init_task(&person, node).unwrap();
            ids.push(out.id);
            models.push(Model { seq: 1, ..Model::default() });
        }
        let mut evidence = [false; BEADS];
        for op in &ops {
            let b = match *op {
                Op::Claim { b, .. } | Op::Release { b, .. } | Op::Clear { b } | Op::Propose { b, .. }
                | Op::Complete { b } | Op::Approve { b } | Op::Park { b } | Op::Unpark { b }
                | Op::Evidence { b, .. } | Op::SetAutonomy { b, .. } => b,
            };
            if let Op::Evidence { present, .. } = op {
                let path = dir.path().join("ok").join(&ids[b]);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                if *present { std::fs::write(&path, "x").unwrap(); } else { let _ = std::fs::remove_file(&path); }
                evidence[b] = *present;
                continue;
            }
            let expect = models[b].apply(op, evidence[b]);
            let got = match run_real(&store, &ids[b], op) {
                Ok(()) => Expect::Ok,
                Err(splice::Error::Refused(Refusal::FloorRefused(_))) => Expect::RecordedRefusal,
                Err(splice::Error::Refused(e @ Refusal::FloorEscalated(_))) => panic!("{op:?} escalated: {e}"),
                Err(splice::Error::Refused(_)) => Expect::Refused,
                Err(e) => panic!("{op:?}: fault {e}"),
            };
            prop_assert_eq!(&got, &expect, "{:?} on {:?}", op, models[b]);
            for (i, id) in ids.iter().enumerate() {
                check_bead(&models[i], &store.read_bead(id).unwrap());
            }
        }
        check_journal_replays(&store);
    }
}
