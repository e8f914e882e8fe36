//! The selected node's detail: what happens next (as `splice status` says it), its evidence and
//! last check, the gate and who may pass it, its artifacts, its claim, attempts, usage, a loop's
//! scores and the last park or refusal.

use crate::driver::advice::{self, Next, Node};
use crate::driver::prompts;
use crate::model::bead::GateState;
use crate::model::manifest::FloorKind;
use crate::model::{Bead, Rest, Verdict};
use crate::policy::lineage;
use crate::store::reviews::review_rel;

use super::Model;

/// One labelled line of the detail pane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub label: &'static str,
    pub value: String,
}

/// The selected node's detail.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Detail {
    pub id: String,
    pub title: String,
    /// What happens next, or what a person can do.
    pub next: Next,
    pub fields: Vec<Field>,
    /// A loop step's scores since entry, for a sparkline (a failed stage counts 0).
    pub scores: Vec<u64>,
}

impl Model {
    /// What happens next for `id`, or why it rests (`driver::advice`); a claim's holder is alive
    /// or dead as the app found, never probed here.
    pub(crate) fn next_of(&self, id: &str) -> Next {
        let bead = self.bead(id);
        let node = Node {
            id,
            step: bead.map_or("", |b| b.pipeline.step.as_str()),
            review: self.artifact(id),
            max_attempts: self.step_of(id).map(|s| s.dispatch_limit(None)),
            escalated_check: bead.and_then(advice::escalated_check),
            absent: Vec::new(),
            clear_key: Some('c'),
        };
        match (self.action(id), self.rest(id)) {
            (Some(a), _) => advice::for_action(&node, a),
            (None, Some(r)) => advice::for_rest(&node, r, |h| self.holder_alive(h)),
            (None, None) => Next::default(),
        }
    }

    fn step_of(&self, id: &str) -> Option<&crate::model::Step> {
        let bead = self.bead(id)?;
        self.state
            .as_ref()?
            .snapshot
            .manifest
            .step(&bead.pipeline.step)
    }

    /// The campaign root of `bead` (the farthest ancestor in the snapshot).
    pub(crate) fn root_of<'a>(&'a self, bead: &'a Bead) -> &'a Bead {
        let snap = &self
            .state
            .as_ref()
            .expect("a bead comes from a state")
            .snapshot;
        let find = |id: &str| {
            self.bead(id)
                .or_else(|| snap.ancestors.iter().find(|b| b.id == id))
        };
        lineage::chain(bead, find).last().unwrap_or(bead)
    }

    /// Where `id`'s checkout is, relative to the repository (`.` when it has none).
    fn dir_of(&self, id: &str) -> String {
        let has = self
            .state
            .as_ref()
            .is_some_and(|s| s.snapshot.worktrees.binary_search(&id.to_string()).is_ok());
        if has {
            format!(".splice/worktrees/{id}")
        } else {
            ".".into()
        }
    }

    /// The artifacts of `id` with paths: each step of its route that declares one (rendered as
    /// the prompt renders it: the spec, the review…), and the proposal's, in route order. A
    /// review step's is the latest kept review (`.splice/reviews/<id>/<sha256>.md`) unless the
    /// node is at that step with a worktree, where the reviewer writes the next one: the file in
    /// the worktree goes with it, the kept one stays.
    pub fn artifacts(&self, id: &str) -> Vec<(String, String)> {
        let (Some(bead), Some(state)) = (self.bead(id), self.state.as_ref()) else {
            return Vec::new();
        };
        let manifest = &state.snapshot.manifest;
        let root = self.root_of(bead);
        let dir = self.dir_of(id);
        let mut out = Vec::new();
        let route = manifest.route(&bead.pipeline.route).unwrap_or_default();
        for name in route {
            let Some(step) = manifest.step(name) else {
                continue;
            };
            let Ok(path) = prompts::artifact_for(step, &bead.id, &root.id) else {
                continue;
            };
            let reviewing = step.floors.iter().any(|f| f.kind == FloorKind::Review);
            let writing = bead.pipeline.step == *name && dir != ".";
            if let (true, false, Some(kept)) = (reviewing, writing, bead.latest_review()) {
                out.push((name.clone(), review_rel(&bead.id, &kept.sha256)));
            } else if path.contains('/') {
                out.push((name.clone(), in_dir(&dir, &path)));
            }
        }
        if let Some(p) = &bead.pipeline.proposal
            && !p.artifact.is_empty()
            && !out.iter().any(|(_, path)| path.ends_with(&p.artifact))
        {
            out.push((format!("{} (proposed)", p.step), in_dir(&dir, &p.artifact)));
        }
        out
    }

    /// The artifact `o`/`e` open and a person reviews at the gate: the current step's, else
    /// the last proposed, else the first.
    pub fn artifact(&self, id: &str) -> Option<String> {
        let bead = self.bead(id)?;
        let all = self.artifacts(id);
        let step = &bead.pipeline.step;
        all.iter()
            .find(|(s, _)| s == step)
            .or_else(|| all.iter().find(|(s, _)| s.ends_with("(proposed)")))
            .or_else(|| all.first())
            .map(|(_, p)| p.clone())
    }

    /// The selected node's detail.
    pub fn detail(&self) -> Option<Detail> {
        let id = self.selected.as_deref()?;
        let next = self.next_of(id);
        let Some(bead) = self.bead(id) else {
            return Some(Detail {
                id: id.into(),
                title: "(unreadable)".into(),
                next,
                ..Detail::default()
            });
        };
        let p = &bead.pipeline;
        let mut fields = Vec::new();
        let mut add = |label, value: String| fields.push(Field { label, value });
        let (status, _) = self.status_of(id);
        add(
            "node",
            format!("{} · {} · {status}", p.kind.as_str(), p.step),
        );
        if let Some(gate) = self.gate_line(bead) {
            add("gate", gate);
        }
        if let Some(c) = &p.last_check {
            add(
                "check",
                format!("{} on {}: {}", c.verdict.as_str(), c.step, c.reason),
            );
            if !c.evidence.is_null() && c.evidence != serde_json::json!({}) {
                add("evidence", c.evidence.to_string());
            }
        }
        for (step, path) in self.artifacts(id) {
            add("artifact", format!("{step}: {path}"));
        }
        if let Some(r) = bead.latest_review() {
            let verdict = r.verdict.map_or("no verdict", |v| v.as_str());
            let of = r.reviewed_sha.as_deref().map_or(String::new(), |s| {
                format!(" of {}", s.get(..12).unwrap_or(s))
            });
            let back = if r.sent_back { ", sent back" } else { "" };
            add("review", format!("{verdict}{of}{back}"));
        }
        if let Some(l) = &p.lease {
            let alive = match self.holder_alive(&l.holder) {
                Some(true) => "alive",
                Some(false) => "dead",
                None => "cannot tell",
            };
            add("claim", format!("{} since {} ({alive})", l.holder, l.since));
        }
        let max = self.step_of(id).map(|s| s.max_attempts);
        add(
            "attempts",
            match max {
                Some(m) => format!("{}/{m} on {}", bead.attempts_on(&p.step), p.step),
                None => format!("{} on {}", bead.attempts_on(&p.step), p.step),
            },
        );
        if let Some(u) = &p.usage {
            let cost = u
                .cost_usd
                .map_or("cost unknown".into(), |c| format!("${c:.2}"));
            add(
                "usage",
                format!(
                    "{} in, {} out tokens, {cost}",
                    u.input_tokens, u.output_tokens
                ),
            );
        }
        let its: Vec<_> = bead.iterations_since_entry().collect();
        if !its.is_empty() {
            let words: Vec<String> = its
                .iter()
                .map(|i| i.score.map_or("×".into(), |s| s.to_string()))
                .collect();
            add("scores", words.join(" → "));
        }
        if let Some(d) = &p.dead_letter {
            add("parked", format!("on {}: {}", d.step, d.reason));
        } else if let Some(c) = p
            .last_check
            .as_ref()
            .filter(|c| c.verdict == Verdict::Refuse)
        {
            add("refused", c.reason.clone());
        }
        let low = its.iter().filter_map(|i| i.score).min().unwrap_or(0).min(0);
        Some(Detail {
            id: id.into(),
            title: bead.title.to_string(),
            next,
            fields,
            scores: its
                .iter()
                .map(|i| i.score.map_or(0, |s| (s - low) as u64))
                .collect(),
        })
    }

    /// The gate on the node's step: pending (and who may pass it) or how it was passed.
    fn gate_line(&self, bead: &Bead) -> Option<String> {
        if let Some(Rest::AwaitingHuman {
            gate: Some(step),
            autonomy,
            autonomy_source,
            ..
        }) = self.rest(&bead.id)
        {
            return Some(format!(
                "pending on {step}, for a person (autonomy {} from {autonomy_source})",
                autonomy.as_str()
            ));
        }
        let g = bead.gate_on_step()?;
        Some(match (g.state, &g.by, g.autonomy) {
            (GateState::Pending, ..) => format!("pending on {}", g.step),
            (GateState::Approved, Some(by), _) => format!("approved on {} by {by}", g.step),
            (GateState::Approved, None, Some(a)) => {
                format!("relaxed on {} (autonomy {})", g.step, a.as_str())
            }
            (GateState::Approved, None, None) => format!("approved on {}", g.step),
        })
    }
}

fn in_dir(dir: &str, path: &str) -> String {
    if dir == "." || path.starts_with('/') {
        path.to_string()
    } else {
        format!("{dir}/{path}")
    }
}
