//! The `repository` and `targets` checks: splice branches every node's work from a commit of
//! the repository holding `.splice/`, so that repository must be a git work tree whose HEAD
//! resolves, and every target a node may branch from or land on must name a commit.

use super::{Ctx, Finding};
use crate::driver::snapshot::missing_targets;

pub const REPOSITORY: &str = "repository";
pub const TARGETS: &str = "targets";

/// The state directory's parent is a git work tree, and its HEAD resolves to a commit.
pub fn repository(cx: &Ctx) -> Vec<Finding> {
    let root = cx.store.repo();
    let repo = match crate::worktree::open_repo(root) {
        Ok(r) => r,
        Err(e) => {
            return vec![Finding::needs_person(
                REPOSITORY,
                format!("{e}: splice needs the git repository its work lands in"),
                "git init && git add -A && git commit -m \"initial commit\"",
            )];
        }
    };
    let Some(workdir) = repo.workdir() else {
        return vec![Finding::needs_person(
            REPOSITORY,
            format!("{} is in a bare git repository", root.display()),
            "keep .splice/ in a clone with a work tree (git clone …), and run splice there",
        )];
    };
    let workdir = workdir.display().to_string();
    let workdir = workdir.trim_end_matches('/');
    match repo.head().and_then(|h| h.peel_to_commit()) {
        Ok(commit) => {
            let on = crate::worktree::current_branch(root)
                .map_or("a detached HEAD".to_string(), |b| format!("branch {b}"));
            let sha = commit.id().to_string();
            vec![Finding::ok(
                REPOSITORY,
                format!("git work tree {workdir}, on {on} at {}", &sha[..12]),
            )]
        }
        Err(e) => vec![Finding::needs_person(
            REPOSITORY,
            format!(
                "HEAD of {workdir} does not resolve to a commit (a repository with no commit \
                 yet?): {}",
                e.message()
            ),
            "git add -A && git commit -m \"initial commit\"",
        )],
    }
}

/// The configured `[delivery] target` and the targets recorded on open nodes name commits: the
/// runner's own check ([`missing_targets`]) over the open nodes, so a closed node's deleted
/// branch is not a finding.
pub fn targets(cx: &Ctx) -> Vec<Finding> {
    let snap = match cx.snapshot_for(TARGETS) {
        Ok(s) => s,
        Err(f) => return vec![f],
    };
    let mut open = snap.clone();
    open.beads.retain(|b| !b.is_closed());
    let missing = missing_targets(&cx.store, &open);
    if missing.is_empty() {
        let configured = snap
            .delivery_target
            .as_deref()
            .map_or("unset: the checked-out branch".to_string(), str::to_string);
        return vec![Finding::ok(
            TARGETS,
            format!(
                "every target names a commit ([delivery] target: {configured}; {} open node(s))",
                open.beads.len()
            ),
        )];
    }
    missing.iter().map(|t| missing_target(&open, t)).collect()
}

/// One target that names no commit: who names it, and how to fix it.
fn missing_target(open: &crate::model::Snapshot, target: &str) -> Finding {
    let nodes: Vec<&str> = open
        .beads
        .iter()
        .filter(|b| b.pipeline.target.as_deref() == Some(target))
        .map(|b| b.id.as_str())
        .collect();
    let configured = open.delivery_target.as_deref() == Some(target);
    let mut by = Vec::new();
    if configured {
        by.push("`[delivery] target` in .splice/config.toml".to_string());
    }
    if !nodes.is_empty() {
        by.push(format!("the open node(s) {}", nodes.join(", ")));
    }
    if by.is_empty() {
        by.push("the checked-out branch".to_string());
    }
    // Both are read from files anyone may edit, and git allows `;`, `$` and `(` in a branch's
    // name: quoted, so a pasted command runs no part of them.
    let quoted = |s: &str| crate::hooks::shell_word(std::path::Path::new(s));
    let shown = quoted(target);
    let fix = match nodes.first().map(|id| quoted(id)) {
        Some(id) => format!(
            "splice transition set-target --bead {id} --target BRANCH (for each node named), \
             or create it: git branch {shown} COMMIT"
        ),
        None => format!(
            "create it (git branch {shown} COMMIT), or set `[delivery] target` in \
             .splice/config.toml to a branch that exists"
        ),
    };
    Finding::needs_person(
        TARGETS,
        format!(
            "target `{target}` names no commit (set by {}): no node branching from it or \
             landing on it can be dispatched",
            by.join(" and ")
        ),
        fix,
    )
}
