//! bd's editing verbs, as a person types them: `update`, `reopen`, `label add` and `label rm`
//! (`docs/bd-interop.md`, "bd verbs"). Each takes one or several ids and changes them in one
//! journal record (all or none), through the writer like every verb.
//!
//! They are a person's verbs and change only bd's fields: never `pipeline` (the shell bumps its
//! `seq`, as on every write). A bead a holder has claimed is refused (`foreign-lease`): the
//! agent working on it would not see the change. A pipeline node's status follows its route,
//! so `update --status` and `reopen` refuse a node (`node-status`); its title, description,
//! priority, labels and kept bd fields may change.

use serde::Serialize;

use super::{Caller, Ctx, Refusal, Verb, require_lease_free_for};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::model::bead::Status;
use crate::model::id as ids;
use crate::store::{Change, Fresh, Reads};

/// The statuses `update --status` may set: bd's open statuses. `closed` is `splice close`'s
/// (it needs a reason, and ends children and claims as it should); `tombstone` is bd's delete.
pub const SETTABLE: &[&str] = &[
    "open",
    "in_progress",
    "blocked",
    "deferred",
    "pinned",
    "hooked",
];

/// bd's text fields splice keeps in the bead's `extra`, by the flag that sets them.
pub const KEPT_FIELDS: &[(&str, &str)] = &[
    ("assignee", "assignee"),
    ("design", "design"),
    ("notes", "notes"),
    ("acceptance", "acceptance_criteria"),
    ("external-ref", "external_ref"),
];

/// What `update` is asked to change; `None` leaves a field as it is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Update {
    pub title: Option<String>,
    pub description: Option<String>,
    pub status: Option<String>,
    pub priority: Option<i64>,
    pub issue_type: Option<String>,
    pub add_labels: Vec<String>,
    pub remove_labels: Vec<String>,
    /// Kept bd fields (`extra` keys of [`KEPT_FIELDS`]) and their new text; an empty text
    /// removes the key, as bd clears a field.
    pub kept: Vec<(&'static str, String)>,
}

/// What an editing verb did.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Edited {
    /// The journal's verb: `update`, `reopen`, `label add`, `label rm`.
    pub verb: &'static str,
    /// The beads changed, in the order given.
    pub updated: Vec<String>,
    /// The beads given that already were as asked (nothing written for them).
    pub unchanged: Vec<String>,
}

/// Refuse bad input before anything is read, naming the flag.
pub fn check(u: &Update) -> Result<()> {
    if *u == Update::default() {
        return Err(Error::Invalid(
            "nothing to update: give at least one of --title, --description, --status, \
             --priority, --type, --assignee, --add-label, --remove-label, --design, --notes, \
             --acceptance, --external-ref"
                .into(),
        ));
    }
    if let Some(t) = &u.title {
        one_line("--title", t)?;
    }
    if let Some(s) = &u.status
        && !SETTABLE.contains(&s.as_str())
    {
        let hint = match s.as_str() {
            "closed" => "; a bead is closed with `splice close ID --reason R`",
            "tombstone" => "; splice does not delete beads: `splice cancel ID --reason R`",
            _ => "",
        };
        return Err(Error::Invalid(format!(
            "--status {}: one of {}{hint}",
            ids::shown(s),
            SETTABLE.join(", ")
        )));
    }
    if let Some(p) = u.priority
        && !super::plain::PRIORITIES.contains(&p)
    {
        return Err(Error::Invalid(format!(
            "--priority {p}: a priority is 0-4 or P0-P4, as in bd"
        )));
    }
    if let Some(t) = &u.issue_type {
        issue_type(t)?;
    }
    for l in u.add_labels.iter().chain(&u.remove_labels) {
        label(l)?;
    }
    for (key, text) in &u.kept {
        if *key == "assignee" || *key == "external_ref" {
            one_line(&format!("--{}", key.replace('_', "-")), text)?;
        }
    }
    Ok(())
}

/// A one-line text: no control characters, and not empty.
fn one_line(flag: &str, text: &str) -> Result<()> {
    if text.trim().is_empty() && flag == "--title" {
        return Err(Error::Invalid("--title must not be empty".into()));
    }
    if text.chars().any(char::is_control) {
        return Err(Error::Invalid(format!(
            "{flag} {}: must be one line, without control characters",
            ids::shown(text)
        )));
    }
    Ok(())
}

/// An issue type: one word, as `create --type` takes it.
fn issue_type(t: &str) -> Result<()> {
    let word = !t.is_empty()
        && t.len() <= 64
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !word {
        return Err(Error::Invalid(format!(
            "--type {}: an issue type is one word of letters, digits, '-' and '_'",
            ids::shown(t)
        )));
    }
    Ok(())
}

/// A label: a non-empty word without control characters.
pub fn label(l: &str) -> Result<()> {
    if l.trim().is_empty() || l.chars().any(char::is_control) {
        return Err(Error::Invalid(format!(
            "label {}: a label is non-empty and has no control characters",
            ids::shown(l)
        )));
    }
    Ok(())
}

/// Every id well formed, none twice.
fn check_ids(ids_given: &[String]) -> Result<()> {
    if ids_given.is_empty() {
        return Err(Error::Invalid("give at least one bead id".into()));
    }
    for (i, id) in ids_given.iter().enumerate() {
        if !ids::is_valid(id) {
            return Err(Error::Invalid(format!("{}: not a bead id", ids::shown(id))));
        }
        if ids_given[..i].contains(id) {
            return Err(Error::Invalid(format!("{id} is given twice")));
        }
    }
    Ok(())
}

/// Apply `u` to every bead of `ids` (one journal record).
pub fn update(ctx: &Ctx, ids_given: &[String], u: &Update) -> Result<Edited> {
    ctx.admit(Verb::Update)?;
    check_ids(ids_given)?;
    check(u)?;
    edit(ctx, Verb::Update, ids_given, |b, _| {
        plan_update(b, u).map(|()| None)
    })
}

/// Reopen every bead of `ids`: status `open`, `closed_at` and `close_reason` cleared.
pub fn reopen(ctx: &Ctx, ids_given: &[String], reason: Option<&str>) -> Result<Edited> {
    ctx.admit(Verb::Reopen)?;
    check_ids(ids_given)?;
    if let Some(r) = reason {
        one_line("--reason", r)?;
    }
    edit(ctx, Verb::Reopen, ids_given, |b, _| {
        if b.is_node() {
            return Err(Refusal::NodeStatus {
                bead: b.id.to_string(),
                step: b.pipeline.step.to_string(),
            });
        }
        if !b.is_closed() {
            return Err(Refusal::NotClosed {
                bead: b.id.to_string(),
                status: b.status.as_str().to_string(),
            });
        }
        b.status = Status::Open;
        b.closed_at = None;
        b.close_reason = None;
        Ok(reason.map(|r| format!("reopened: {r}")))
    })
}

/// Add (`add`) or remove `label` on every bead of `ids`.
pub fn relabel(ctx: &Ctx, ids_given: &[String], label_given: &str, add: bool) -> Result<Edited> {
    let verb = if add {
        Verb::LabelAdd
    } else {
        Verb::LabelRemove
    };
    ctx.admit(verb)?;
    check_ids(ids_given)?;
    label(label_given)?;
    edit(ctx, verb, ids_given, |b, _| {
        let at = b.labels.iter().position(|l| l == label_given);
        match (add, at) {
            (true, None) => b.labels.push(label_given.into()),
            (false, Some(i)) => {
                b.labels.remove(i);
            }
            _ => {}
        }
        Ok(None)
    })
}

/// Run an edit of each bead of `ids` through the writer: `change` edits a copy of each (it may
/// give a line for the journal's reason); a claimed bead is refused first.
fn edit(
    ctx: &Ctx,
    verb: Verb,
    ids_given: &[String],
    change: impl Fn(&mut Bead, Caller) -> Result<Option<String>, Refusal>,
) -> Result<Edited> {
    let reads = Reads::subject(&ids_given[0]).with_others(ids_given[1..].to_vec());
    ctx.apply(verb, &reads, |fresh, who| {
        Ok(plan(verb, fresh, ids_given, who, change)?)
    })
}

/// The pure plan of every editing verb (see [`edit`]).
pub fn plan(
    verb: Verb,
    fresh: &Fresh,
    ids_given: &[String],
    who: Caller,
    change: impl Fn(&mut Bead, Caller) -> Result<Option<String>, Refusal>,
) -> Result<Change<Edited>, Refusal> {
    who.admit(verb)?;
    let mut out = Edited {
        verb: verb.name(),
        updated: Vec::new(),
        unchanged: Vec::new(),
    };
    let mut beads = Vec::new();
    let mut notes = Vec::new();
    for id in ids_given {
        let Some(before) = fresh.get(id) else {
            continue;
        };
        require_lease_free_for(before, None)?;
        let mut after = before.clone();
        if let Some(note) = change(&mut after, who)? {
            notes.push(note);
        }
        if after == *before {
            out.unchanged.push(id.clone());
        } else {
            out.updated.push(id.clone());
            beads.push(after);
        }
    }
    let mut reason = format!("{}: {}", verb.name(), out.updated.join(", "));
    for n in notes {
        reason.push_str(&format!("; {n}"));
    }
    Ok(Change {
        beads,
        reason: Some(reason),
        output: out,
    })
}

/// `update`'s change to one bead (pure).
pub fn plan_update(b: &mut Bead, u: &Update) -> Result<(), Refusal> {
    if let Some(s) = &u.status
        && s != b.status.as_str()
    {
        if b.is_node() {
            return Err(Refusal::NodeStatus {
                bead: b.id.to_string(),
                step: b.pipeline.step.to_string(),
            });
        }
        // Leaving `closed` this way is `reopen`: the close's record goes with it.
        if b.is_closed() {
            b.closed_at = None;
            b.close_reason = None;
        }
        b.status = Status::parse(s);
    }
    if let Some(t) = &u.title {
        b.title = t.as_str().into();
    }
    if let Some(d) = &u.description {
        b.description = d.clone();
    }
    if let Some(p) = u.priority {
        b.priority = p;
    }
    if let Some(t) = &u.issue_type {
        b.issue_type = t.as_str().into();
    }
    for l in &u.add_labels {
        if !b.labels.iter().any(|x| x == l) {
            b.labels.push(l.as_str().into());
        }
    }
    b.labels.retain(|x| !u.remove_labels.iter().any(|r| r == x));
    for (key, text) in &u.kept {
        if text.is_empty() {
            b.extra.remove(*key);
        } else {
            b.extra
                .insert((*key).to_string(), serde_json::Value::String(text.clone()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::bead::Lease;

    fn bead(id: &str) -> Bead {
        Bead::new(id.into(), "T".into(), String::new(), "then")
    }

    fn fresh(beads: Vec<Bead>) -> Fresh {
        let mut it = beads.into_iter();
        Fresh {
            subject: it.next().unwrap(),
            ancestors: Vec::new(),
            others: it.collect(),
            taken: Default::default(),
        }
    }

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn an_update_changes_only_what_it_names_and_reports_what_was_already_so() {
        let mut same = bead("bd-b");
        same.priority = 1;
        let f = fresh(vec![bead("bd-a"), same]);
        let u = Update {
            priority: Some(1),
            add_labels: ids(&["ui"]),
            kept: vec![("assignee", "ann".into())],
            ..Update::default()
        };
        let change = plan(
            Verb::Update,
            &f,
            &ids(&["bd-a"]),
            Caller::default(),
            |b, _| plan_update(b, &u).map(|()| None),
        )
        .unwrap();
        let a = &change.beads[0];
        assert_eq!((a.priority, a.labels.len()), (1, 1));
        assert_eq!(a.extra["assignee"], "ann");
        assert_eq!(a.title, "T");
        let p = Update {
            priority: Some(1),
            ..Update::default()
        };
        let change = plan(
            Verb::Update,
            &f,
            &ids(&["bd-a", "bd-b"]),
            Caller::default(),
            |b, _| plan_update(b, &p).map(|()| None),
        )
        .unwrap();
        assert_eq!(change.output.updated, ["bd-a"]);
        assert_eq!(change.output.unchanged, ["bd-b"]);
    }

    #[test]
    fn a_claimed_bead_and_a_node_s_status_are_refused() {
        let mut claimed = bead("sp-a");
        claimed.pipeline.route = "leaf".into();
        claimed.pipeline.step = "implement".into();
        claimed.pipeline.lease = Some(Box::new(Lease {
            holder: "run:h:1:r".into(),
            since: "then".into(),
            credential_sha256: None,
            job: None,
        }));
        let u = Update {
            title: Some("New".into()),
            ..Update::default()
        };
        let f = fresh(vec![claimed.clone()]);
        let r = plan(
            Verb::Update,
            &f,
            &ids(&["sp-a"]),
            Caller::default(),
            |b, _| plan_update(b, &u).map(|()| None),
        )
        .unwrap_err();
        assert_eq!(r.kind(), "foreign-lease");
        claimed.pipeline.lease = None;
        let s = Update {
            status: Some("blocked".into()),
            ..Update::default()
        };
        assert_eq!(
            plan_update(&mut claimed, &s).unwrap_err().kind(),
            "node-status"
        );
    }

    #[test]
    fn bad_input_names_the_flag() {
        let cases = [
            (Update::default(), "nothing to update"),
            (
                Update {
                    title: Some(" ".into()),
                    ..Update::default()
                },
                "--title",
            ),
            (
                Update {
                    status: Some("closed".into()),
                    ..Update::default()
                },
                "splice close",
            ),
            (
                Update {
                    add_labels: ids(&["a\u{7}b"]),
                    ..Update::default()
                },
                "label",
            ),
            (
                Update {
                    issue_type: Some("a b".into()),
                    ..Update::default()
                },
                "--type",
            ),
        ];
        for (u, says) in cases {
            let e = check(&u).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
    }
}
