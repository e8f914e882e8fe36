//! `splice create`: a *plain* bead, as bd's `create` makes one — a work item with no route
//! ([`Bead::is_node`] false), which `decide` passes by until a person starts it (`splice start`).
//!
//! Its id is `sp-` and a hash, as `init` gives one ([`ids::candidates`]); with a parent `P`, bd's
//! hierarchical id `P.N`, the next number after the highest child of `P` on disk. The parent
//! must be a plain bead: a pipeline node's children come from its split.

use super::{Ctx, Refusal, Verb};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::store::{Change, Reads, ids};

/// The journal's verb.
const VERB: &str = "create";

/// bd's priorities: 0 (critical) to 4 (backlog).
pub const PRIORITIES: std::ops::RangeInclusive<i64> = 0..=4;

/// A priority as bd and br take it: `0`–`4`, or `P0`–`P4` (`p1` too). The one parser of a
/// priority on the command line (`create -p`, `update -p`, `list --priority`).
pub fn parse_priority(s: &str) -> std::result::Result<i64, String> {
    let t = s.trim();
    let digits = t.strip_prefix(['P', 'p']).unwrap_or(t);
    match digits.parse::<i64>() {
        Ok(n) if PRIORITIES.contains(&n) && digits.len() == 1 => Ok(n),
        _ => Err(format!(
            "{}: a priority is 0-4 or P0-P4 (0 critical, 4 backlog), as in bd",
            ids::shown(s)
        )),
    }
}

/// How many child ids past the highest on disk are probed under the lock (a concurrent
/// `create --parent` may take the first).
const CHILD_PROBE: usize = 32;

/// What `splice create` is given.
#[derive(Clone, Debug, PartialEq)]
pub struct NewPlain {
    pub title: String,
    pub description: String,
    pub priority: i64,
    pub issue_type: String,
    pub labels: Vec<String>,
    pub parent: Option<String>,
}

/// Refuse bad input before anything is read: an empty title or one with control characters, a
/// priority outside 0–4, an issue type that is not one word.
pub fn check(new: &NewPlain) -> Result<()> {
    if new.title.trim().is_empty() {
        return Err(Error::Invalid("the title must not be empty".into()));
    }
    if new.title.chars().any(char::is_control) {
        return Err(Error::Invalid(
            "the title must be one line, without control characters".into(),
        ));
    }
    if !PRIORITIES.contains(&new.priority) {
        return Err(Error::Invalid(format!(
            "--priority {}: a priority is 0 (critical) to 4 (backlog), as in bd",
            new.priority
        )));
    }
    let t = &new.issue_type;
    if t.is_empty()
        || t.len() > 64
        || !t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(Error::Invalid(format!(
            "--type {}: an issue type is one word of letters, digits, '-' and '_' (bug, \
             feature, task, epic, chore…)",
            ids::shown(t)
        )));
    }
    if let Some(l) = new
        .labels
        .iter()
        .find(|l| l.trim().is_empty() || l.chars().any(char::is_control))
    {
        return Err(Error::Invalid(format!(
            "--label {}: a label is a non-empty word without control characters",
            ids::shown(l)
        )));
    }
    if let Some(p) = &new.parent
        && !ids::is_valid(p)
    {
        return Err(Error::Invalid(format!(
            "--parent {}: not a bead id",
            ids::shown(p)
        )));
    }
    Ok(())
}

/// Create the plain bead through the writer (journaled); returns its id.
pub fn create(ctx: &Ctx, new: &NewPlain) -> Result<String> {
    ctx.admit(Verb::Create)?;
    check(new)?;
    let actor = ctx.actor();
    let Some(parent) = new.parent.as_deref() else {
        let seed = format!("{}\n{}\n{}", new.title, new.description, ctx.now);
        let candidates: Vec<String> = ids::candidates(&seed).collect();
        return ctx.store.create(
            &ctx.transition(Verb::Create, &actor),
            &candidates,
            |taken| {
                let id = super::create::free_id(&candidates, taken, &seed)?;
                Ok(plan(new, id, &ctx.now))
            },
        );
    };
    let first = highest_child(&ctx.store.beads_dir(), parent)? + 1;
    let probe: Vec<String> = (first..first + CHILD_PROBE)
        .map(|n| ids::child_id(parent, n))
        .collect();
    if let Some(long) = probe.iter().find(|id| !ids::is_valid(id)) {
        return Err(Error::Invalid(format!(
            "--parent {parent}: its child id {} would be longer than an id may be",
            ids::shown(long)
        )));
    }
    let reads = Reads::subject(parent).probing(probe.clone());
    ctx.apply(Verb::Create, &reads, |fresh, _| {
        let p = &fresh.subject;
        if p.is_node() {
            return Err(Refusal::ParentIsNode {
                parent: p.id.to_string(),
                step: p.pipeline.step.to_string(),
            }
            .into());
        }
        let id = probe
            .iter()
            .find(|id| !fresh.taken.contains(*id))
            .ok_or_else(|| Error::Invalid(format!("the next child ids of {parent} are taken")))?;
        Ok(plan(new, id, &ctx.now))
    })
}

/// The new plain bead `id` (pure).
pub fn plan(new: &NewPlain, id: &str, now: &str) -> Change<String> {
    let mut bead = Bead::new(
        id.to_string(),
        new.title.clone(),
        new.description.clone(),
        now,
    );
    bead.priority = new.priority;
    bead.issue_type = new.issue_type.as_str().into();
    bead.labels = new.labels.iter().map(|l| l.as_str().into()).collect();
    bead.parent = new.parent.as_deref().map(Into::into);
    let reason = format!("{VERB}: {}", new.title);
    Change::one(bead, Some(reason), id.to_string())
}

/// The highest `N` of a bead file `<parent>.N.json` in `beads`, 0 when there is none.
fn highest_child(beads: &std::path::Path, parent: &str) -> Result<usize> {
    let prefix = format!("{parent}.");
    let mut highest = 0;
    for entry in std::fs::read_dir(beads).map_err(|e| Error::io(beads, e))? {
        let entry = entry.map_err(|e| Error::io(beads, e))?;
        let name = entry.file_name();
        let n = name
            .to_str()
            .and_then(|n| n.strip_suffix(".json")?.strip_prefix(&prefix)?.parse().ok());
        highest = highest.max(n.unwrap_or(0));
    }
    Ok(highest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(title: &str) -> NewPlain {
        NewPlain {
            title: title.into(),
            description: String::new(),
            priority: 2,
            issue_type: "task".into(),
            labels: Vec::new(),
            parent: None,
        }
    }

    #[test]
    fn bad_input_is_refused_before_anything_is_read() {
        assert!(check(&new("Fix it")).is_ok());
        for bad in [
            new(" "),
            new("two\nlines"),
            NewPlain {
                priority: 5,
                ..new("x")
            },
            NewPlain {
                priority: -1,
                ..new("x")
            },
            NewPlain {
                issue_type: "a b".into(),
                ..new("x")
            },
            NewPlain {
                parent: Some("../x".into()),
                ..new("x")
            },
        ] {
            assert!(check(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_priority_is_a_digit_or_a_p_and_a_digit() {
        for (given, n) in [("0", 0), ("4", 4), ("P1", 1), ("p3", 3), (" P0 ", 0)] {
            assert_eq!(parse_priority(given), Ok(n), "{given}");
        }
        for bad in ["5", "-1", "P5", "PP1", "high", "", "01", "P"] {
            assert!(parse_priority(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_plan_makes_a_plain_bead() {
        let n = NewPlain {
            parent: Some("bd-a".into()),
            priority: 0,
            issue_type: "bug".into(),
            ..new("Crash")
        };
        let change = plan(&n, "bd-a.3", "t");
        let b = &change.beads[0];
        assert!(!b.is_node());
        assert_eq!(
            (
                b.id.as_str(),
                b.parent.as_deref(),
                b.priority,
                b.issue_type.as_str()
            ),
            ("bd-a.3", Some("bd-a"), 0, "bug")
        );
        assert_eq!(change.output, "bd-a.3");
    }
}
