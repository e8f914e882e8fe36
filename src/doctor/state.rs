//! The `config`, `manifest`, `claims` and `worktrees` checks: what the state directory holds.

use std::collections::BTreeSet;

use super::{Ctx, Finding};
use crate::driver::runner::holder_alive;
use crate::model::decision::Action;
use crate::model::printable::printable;

pub const CONFIG: &str = "config";
pub const MANIFEST: &str = "manifest";
pub const CLAIMS: &str = "claims";
pub const WORKTREES: &str = "worktrees";
pub const BEADS: &str = "beads";

/// Every bead file reads (`Store::scan`): one that does not is a node decide escalates, and it
/// keeps a run without a scope from being `done`.
pub fn beads(cx: &Ctx) -> Vec<Finding> {
    let scan = match cx.store.scan() {
        Ok(s) => s,
        Err(e) => return vec![Finding::not_checked(BEADS, e)],
    };
    if scan.unreadable.is_empty() {
        let plain = scan.beads.iter().filter(|b| !b.is_node()).count();
        return vec![Finding::ok(
            BEADS,
            format!(
                "{} bead file(s) read ({plain} plain: imported or created, not started)",
                scan.beads.len()
            ),
        )];
    }
    scan.unreadable
        .iter()
        .map(|u| {
            // The file's name may hold anything: escaped, so it stays on its line.
            let path = printable(&u.path.display().to_string());
            let name = u.path.file_name().unwrap_or_default().to_string_lossy();
            let aside = crate::worktree::verify::aside(&cx.store.worktrees_dir(), &name);
            let (file, aside_dir, aside) = (word(cx, &u.path), aside.parent(), word(cx, &aside));
            let aside_dir = aside_dir.map(|d| word(cx, d)).unwrap_or_default();
            Finding::needs_person(
                BEADS,
                format!("{path} cannot be read: {}", u.error),
                format!(
                    "keep a copy of it (`mkdir -p {aside_dir} && cp -- {file} {aside}`), then \
                     restore it from git (`git checkout -- {file}`) or from the journal's last \
                     image of {}, or remove it if the bead should not exist",
                    crate::model::id::shown(&u.id)
                ),
            )
        })
        .collect()
}

/// `path` as a command a person runs in the repository's root takes it: relative to the root,
/// quoted for a shell; escaped instead when it holds a control character, which no command
/// shown on a line should carry (it is then not meant to be pasted).
fn word(cx: &Ctx, path: &std::path::Path) -> String {
    let shown = super::shown(cx, path);
    match shown.chars().any(char::is_control) {
        true => printable(&shown),
        false => crate::hooks::shell_word(std::path::Path::new(&shown)),
    }
}

/// `.splice/config.toml` loads (`Store::config`).
pub fn config(cx: &Ctx) -> Vec<Finding> {
    let path = cx.store.dir().join("config.toml");
    vec![match &cx.config {
        Ok(_) if path.exists() => Finding::ok(CONFIG, ".splice/config.toml loads"),
        Ok(_) => Finding::ok(CONFIG, "no .splice/config.toml: the defaults apply"),
        Err(e) => Finding::needs_person(
            CONFIG,
            e.to_string(),
            "edit .splice/config.toml where the message says (the keys: docs/agents.md), then \
             run splice doctor again",
        ),
    }]
}

/// The effective manifest loads (`Store::manifest`: `.splice/manifest.json` or the default,
/// with config.toml's `[agent.steps.<step>]` merged in).
pub fn manifest(cx: &Ctx) -> Vec<Finding> {
    let path = cx.store.dir().join("manifest.json");
    vec![match (&cx.manifest, &cx.config) {
        (Ok(_), _) if path.exists() => Finding::ok(MANIFEST, ".splice/manifest.json loads"),
        (Ok(_), _) => Finding::ok(MANIFEST, "no .splice/manifest.json: the default pipeline"),
        (Err(_), Err(_)) => Finding::not_checked(MANIFEST, "config.toml does not load"),
        (Err(e), Ok(_)) => Finding::needs_person(
            MANIFEST,
            e.to_string(),
            "edit the file at the JSON path (or config.toml key) the message names \
             (docs/manifest.md); splice manifest show prints the manifest once it loads",
        ),
    }]
}

/// No claim is held by a runner of this host that is no longer running (the runner's own test,
/// [`holder_alive`]); a claim whose holder splice cannot test (a person, another host) is not
/// a finding. It reads the bead files itself, so a manifest that does not load hides no claim.
pub fn claims(cx: &Ctx) -> Vec<Finding> {
    let scan = match cx.store.scan() {
        Ok(s) => s,
        Err(e) => return vec![Finding::warn(CLAIMS, format!("not checked: {e}"), None)],
    };
    let mut held = 0;
    let mut dead = Vec::new();
    for bead in &scan.beads {
        let Some(lease) = &bead.pipeline.lease else {
            continue;
        };
        held += 1;
        if holder_alive(&lease.holder) == Some(false) {
            dead.push(Finding::needs_person(
                CLAIMS,
                format!(
                    "{} is claimed since {} by {}, a runner on this host that is no longer \
                     running: no run will touch the node until the claim is cleared",
                    bead.id, lease.since, lease.holder
                ),
                format!(
                    "splice transition release --bead {} --clear --reason \"its runner died\"",
                    crate::hooks::shell_word(std::path::Path::new(bead.id.as_str()))
                ),
            ));
        }
    }
    if dead.is_empty() {
        return vec![Finding::ok(
            CLAIMS,
            format!("{held} claim(s), none held by a dead runner"),
        )];
    }
    dead
}

/// Every checkout under `.splice/worktrees/` belongs to an open node. One a run's cleanup will
/// remove (`decide`'s `cleanup-fanout`, the runner's own rule) is a warning whose fix is a run;
/// one no run will remove (no such bead, or a closed node whose cleanup does not take it) is a
/// warning with the commands that set it aside, losing nothing (`remove`, below).
pub fn worktrees(cx: &Ctx) -> Vec<Finding> {
    let snap = match cx.snapshot_for(WORKTREES) {
        Ok(s) => s,
        Err(f) => return vec![f],
    };
    let dir = cx.store.worktrees_dir();
    let listed = match crate::worktree::list(&dir) {
        Ok(l) => l,
        Err(e) => return vec![Finding::warn(WORKTREES, e.to_string(), None)],
    };
    let decision = crate::decide::decide(snap);
    let cleaned: BTreeSet<&str> = decision
        .actions
        .iter()
        .flat_map(|a| match a {
            Action::CleanupFanout {
                bead,
                children,
                own,
            } => {
                let own = own.then_some(bead.as_str());
                children.iter().map(String::as_str).chain(own).collect()
            }
            _ => Vec::new(),
        })
        .collect();
    let mut out = Vec::new();
    let mut owned = 0;
    for id in &listed {
        let bead = snap.beads.iter().find(|b| b.id == id);
        let message = match bead {
            Some(b) if !b.is_closed() => {
                owned += 1;
                continue;
            }
            _ if cleaned.contains(id.as_str()) => {
                out.push(Finding::warn(
                    WORKTREES,
                    format!("{id} is closed; the next run removes its checkouts"),
                    Some("splice run".to_string()),
                ));
                continue;
            }
            Some(_) => format!("{id} is closed, and no run removes its checkouts"),
            None => {
                format!("no bead {id}: its checkouts under .splice/worktrees/ belong to no node")
            }
        };
        out.push(Finding::warn(WORKTREES, message, Some(remove(cx, id))));
    }
    if out.is_empty() {
        out.push(Finding::ok(
            WORKTREES,
            format!("{owned} checkout(s), each of an open node"),
        ));
    }
    out
}

/// The commands that take `id`'s checkouts out of the way and lose nothing: each directory (the
/// worktree, the target checkout, the git quarantine of a dispatch, which may hold commits not
/// yet imported) is set aside under `.splice/worktrees/.set-aside/` (`verify::set_aside`: no git
/// is run in a checkout no node owns, whose `.git` no one has checked), then `git worktree
/// prune` forgets the registrations. `git worktree remove --force` or `rm -rf` would delete
/// the uncommitted and ignored files in them.
fn remove(cx: &Ctx, id: &str) -> String {
    let dir = cx.store.worktrees_dir();
    let paths = [
        crate::worktree::node_path(&dir, id),
        crate::worktree::target_path(&dir, id),
        crate::worktree::quarantine::gitdir(&dir, id),
    ];
    // The quarantine is named after the node, as its worktree is: it is set aside under a name
    // of its own.
    let name = |p: &std::path::Path| {
        p.file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    };
    let names = [
        name(&paths[0]),
        name(&paths[1]),
        format!("{id}.dispatch-git"),
    ];
    let shown = |p: &std::path::Path| super::shown(cx, p);
    let mut commands: Vec<String> = paths
        .iter()
        .zip(&names)
        .filter(|(p, _)| p.is_dir())
        .map(|(p, name)| {
            let to = crate::worktree::verify::aside(&dir, name);
            crate::worktree::verify::set_aside(p, &to, &shown)
        })
        .collect();
    commands.push("git worktree prune".to_string());
    commands.join(" && ")
}
