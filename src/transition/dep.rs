//! `dep add` and `dep rm`: a person adds or removes a dependency, as bd's `dep add ISSUE
//! DEPENDS_ON [--type T]` and `dep rm` do (`docs/bd-interop.md`, "bd verbs").
//!
//! The store is read whole under the lock (as `import` reads it): a `blocks` dependency that
//! would close a cycle is refused at write time, as bd refuses it, so the cycle's nodes are
//! never left waiting on each other. A self-dependency is bad input. The entry carries
//! `created_at`, the time of the change, as bd writes it. `parent-child` is not a dependency
//! splice adds: its tree is the beads' `parent` (`create --parent`). A claimed bead is refused
//! (`foreign-lease`), as every person's edit refuses one.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::{Ctx, Refusal, Verb, require_lease_free_for};
use crate::error::{Error, Result};
use crate::model::Bead;
use crate::model::bead::{Dependency, Extra};
use crate::model::id as ids;
use crate::store::{Change, Scan};

/// What `dep add`/`dep rm` did.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct DepChanged {
    pub bead: String,
    pub depends_on: String,
    /// The dependency's type (`dep rm`: the types removed, comma-separated).
    #[serde(rename = "type")]
    pub dep_type: String,
    /// `added`, `removed`, `retyped` (it existed with another type) or `unchanged`.
    pub change: &'static str,
}

/// A dependency type: one word, as bd's (`blocks`, `related`, `discovered-from`, `tracks`…).
fn check_type(t: &str) -> Result<()> {
    if t == "parent-child" {
        return Err(Error::Invalid(
            "--type parent-child: splice keeps the tree in each bead's `parent` (`splice create \
             --parent`), not as a dependency"
                .into(),
        ));
    }
    let word = !t.is_empty()
        && t.len() <= 64
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !word {
        return Err(Error::Invalid(format!(
            "--type {}: a dependency type is one word (blocks, related, discovered-from, tracks…)",
            ids::shown(t)
        )));
    }
    Ok(())
}

/// An `external:<project>:<id>` reference, kept verbatim as bd keeps it.
fn is_external(id: &str) -> bool {
    id.starts_with("external:") && !id.chars().any(char::is_control)
}

fn check_pair(bead: &str, on: &str) -> Result<()> {
    if !ids::is_valid(bead) {
        return Err(Error::Invalid(format!(
            "{}: not a bead id",
            ids::shown(bead)
        )));
    }
    if !ids::is_valid(on) && !is_external(on) {
        return Err(Error::Invalid(format!(
            "{}: not a bead id (nor an external:<project>:<id> reference)",
            ids::shown(on)
        )));
    }
    if bead == on {
        return Err(Error::Invalid(format!("{bead} cannot depend on itself")));
    }
    Ok(())
}

/// `bead` depends on `on` with type `dep_type`.
pub fn add(ctx: &Ctx, bead: &str, on: &str, dep_type: &str) -> Result<DepChanged> {
    ctx.admit(Verb::DepAdd)?;
    check_pair(bead, on)?;
    check_type(dep_type)?;
    let actor = ctx.actor();
    let t = ctx.transition(Verb::DepAdd, &actor);
    ctx.store
        .batch(&t, |scan| plan_add(scan, bead, on, dep_type, &ctx.now))
}

/// `bead` no longer depends on `on` (whatever the type).
pub fn remove(ctx: &Ctx, bead: &str, on: &str) -> Result<DepChanged> {
    ctx.admit(Verb::DepRemove)?;
    check_pair(bead, on)?;
    let actor = ctx.actor();
    let t = ctx.transition(Verb::DepRemove, &actor);
    ctx.store.batch(&t, |scan| plan_remove(scan, bead, on))
}

fn find<'s>(scan: &'s Scan, id: &str) -> Result<&'s Bead> {
    if let Some(b) = scan.beads.iter().find(|b| b.id == id) {
        return Ok(b);
    }
    if let Some(u) = scan.unreadable.iter().find(|u| u.id == id) {
        return Err(Error::bad_file(&u.path, u.error.to_string()));
    }
    Err(Error::Invalid(format!(
        "no bead {}: `splice list --all` shows them",
        ids::shown(id)
    )))
}

/// The pure plan of `dep add`.
pub fn plan_add(
    scan: &Scan,
    bead: &str,
    on: &str,
    dep_type: &str,
    now: &str,
) -> Result<Change<DepChanged>> {
    let subject = find(scan, bead)?;
    if !is_external(on) {
        find(scan, on)?;
    }
    require_lease_free_for(subject, None)?;
    let mut out = DepChanged {
        bead: bead.to_string(),
        depends_on: on.to_string(),
        dep_type: dep_type.to_string(),
        change: "added",
    };
    let existing = subject
        .dependencies
        .iter()
        .position(|d| d.depends_on_id == on);
    if let Some(at) = existing
        && subject.dependencies[at].dep_type == dep_type
    {
        out.change = "unchanged";
        return Ok(Change::nothing(out));
    }
    if dep_type == "blocks"
        && let Some(path) = blocks_path(scan, on, bead)
    {
        return Err(Refusal::DependencyCycle {
            bead: bead.to_string(),
            on: on.to_string(),
            path: path.join(" → "),
        }
        .into());
    }
    let mut after = subject.clone();
    match existing {
        Some(at) => {
            after.dependencies[at].dep_type = dep_type.into();
            out.change = "retyped";
        }
        None => {
            let mut extra = Extra::new();
            extra.insert("created_at".into(), now.into());
            after.dependencies.push(Dependency {
                depends_on_id: on.into(),
                dep_type: dep_type.into(),
                extra,
            });
        }
    }
    let reason = format!("dep add: {bead} depends on {on} ({dep_type})");
    Ok(Change::one(after, Some(reason), out))
}

/// The pure plan of `dep rm`.
pub fn plan_remove(scan: &Scan, bead: &str, on: &str) -> Result<Change<DepChanged>> {
    let subject = find(scan, bead)?;
    require_lease_free_for(subject, None)?;
    let types: Vec<String> = subject
        .dependencies
        .iter()
        .filter(|d| d.depends_on_id == on)
        .map(|d| d.dep_type.to_string())
        .collect();
    if types.is_empty() {
        return Err(Error::Invalid(format!(
            "{bead} has no dependency on {}: `splice dep tree {bead}` shows its dependencies",
            ids::shown(on)
        )));
    }
    let mut after = subject.clone();
    after.dependencies.retain(|d| d.depends_on_id != on);
    let out = DepChanged {
        bead: bead.to_string(),
        depends_on: on.to_string(),
        dep_type: types.join(","),
        change: "removed",
    };
    let reason = format!("dep rm: {bead} no longer depends on {on}");
    Ok(Change::one(after, Some(reason), out))
}

/// A path of `blocks` dependencies from `from` to `to` (both ends included), if there is one.
pub fn blocks_path(scan: &Scan, from: &str, to: &str) -> Option<Vec<String>> {
    let by_id: HashMap<&str, &Bead> = scan.beads.iter().map(|b| (b.id.as_str(), b)).collect();
    let mut came_from: HashMap<&str, &str> = HashMap::new();
    let mut seen: HashSet<&str> = HashSet::from([from]);
    let mut queue = std::collections::VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        if at == to {
            let mut path = vec![to.to_string()];
            let mut cur = to;
            while let Some(prev) = came_from.get(cur) {
                path.push(prev.to_string());
                cur = prev;
            }
            path.reverse();
            return Some(path);
        }
        for next in by_id.get(at).into_iter().flat_map(|b| b.blockers()) {
            if seen.insert(next) {
                came_from.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bead(id: &str, blocks_on: &[&str]) -> Bead {
        let mut b = Bead::new(id.into(), id.into(), String::new(), "then");
        for on in blocks_on {
            b.dependencies.push(Dependency {
                depends_on_id: (*on).into(),
                dep_type: "blocks".into(),
                extra: Extra::new(),
            });
        }
        b
    }

    fn scan(beads: Vec<Bead>) -> Scan {
        Scan {
            beads,
            ..Scan::default()
        }
    }

    #[test]
    fn a_blocks_cycle_is_refused_naming_its_path_and_other_types_are_not() {
        let s = scan(vec![bead("a", &[]), bead("b", &["a"]), bead("c", &["b"])]);
        let e = plan_add(&s, "a", "c", "blocks", "now").unwrap_err();
        let Error::Refused(r) = e else { panic!("{e}") };
        assert_eq!(r.kind(), "dependency-cycle");
        assert!(r.to_string().contains("c → b → a"), "{r}");
        let related = plan_add(&s, "a", "c", "related", "now").unwrap();
        let dep = &related.beads[0].dependencies[0];
        assert_eq!(
            (dep.depends_on_id.as_str(), dep.dep_type.as_str()),
            ("c", "related")
        );
        assert_eq!(dep.extra["created_at"], "now");
    }

    #[test]
    fn adding_what_is_there_changes_nothing_and_removing_what_is_not_is_bad_input() {
        let s = scan(vec![bead("a", &[]), bead("b", &["a"])]);
        let same = plan_add(&s, "b", "a", "blocks", "now").unwrap();
        assert!(same.beads.is_empty());
        assert_eq!(same.output.change, "unchanged");
        assert!(plan_remove(&s, "a", "b").is_err());
        let rm = plan_remove(&s, "b", "a").unwrap();
        assert!(rm.beads[0].dependencies.is_empty());
        assert!(check_pair("a", "a").is_err());
        assert!(check_type("parent-child").is_err());
        assert!(check_pair("a", "external:beads:x").is_ok());
    }
}
