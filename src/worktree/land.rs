//! Landing: splice itself merges a node's branch `splice/<id>` into its integration target
//! (direct delivery, issue 10). Agents prepare their branch and never move the target ref; the
//! merge is a real effect on the user's repository, so it is done here, deterministically, with
//! git2, one landing per target at a time.
//!
//! [`land`], under the target's lock (`.splice/worktrees/.land-<hash>.lock`, so two runners or a
//! runner and a person never race on the ref):
//!
//! 1. nothing to do when there is no branch `splice/<id>`, or its tip is already on the target;
//! 2. refuse a branch that lacks the reviewed commit, or adds commits after it other than
//!    merges (the target merged in to resolve a conflict): only reviewed work lands;
//! 3. refuse a branch whose changes (since it left the target) touch `.splice/`: a worktree
//!    holds a checked-out copy of the state when users commit it, and merging it back would
//!    overwrite the live state;
//! 4. fast-forward when the target is an ancestor of the branch, else make a merge commit
//!    naming the bead (a conflict refuses with the conflicting paths; nothing is written);
//!    when the branch moved past the reviewed commit (the target merged in), refuse unless the
//!    tree that would land is exactly the reviewed commit merged cleanly with the target: a
//!    conflict's resolution, or anything else a merge commit adds, is new code for review
//!    ([`Refused::BeyondReview`]);
//! 5. a dry run ([`Landing::dry_run`], a landing that waits for a person's approval) stops
//!    here, saying what would move ([`Landed::Would`]), unless step 6 would refuse: it reads
//!    the target's checkout, writing nothing, and refuses as step 6 would
//!    ([`checkout::would_block`]), so no one approves a landing the checkout then refuses;
//! 6. where the target is checked out (the main checkout or another worktree), bring that
//!    checkout's index and files to the new commit first, as `git merge --ff-only` would, or
//!    refuse when it has uncommitted changes ([`super::checkout`]);
//! 7. move the target ref, only if it still points where it did (when it does not, someone
//!    committed on it: all of it again from its new tip, a few times; git's lock on the ref
//!    held by someone else is waited for, as the checkout's index lock is).
//!
//! A branch is never moved while it is checked out with another tree, so a person's `git
//! commit -a` in the main checkout can never undo a delivery.

use std::path::{Path, PathBuf};

use git2::{BranchType, Commit, DiffOptions, ErrorCode, Oid, Repository, Signature, Sort};
use sha2::{Digest, Sha256};

use super::checkout::{self, Update};
use super::{branch_name, check_id, is_on, open_repo, retry_busy};
use crate::error::Result;
use crate::store::STATE_DIR;

/// What to land.
#[derive(Clone, Copy, Debug)]
pub struct Landing<'a> {
    pub repo_root: &'a Path,
    pub worktrees_dir: &'a Path,
    /// The node whose branch `splice/<id>` lands.
    pub id: &'a str,
    /// The node's title, for the merge commit's message.
    pub title: &'a str,
    /// A local branch.
    pub target: &'a str,
    /// The commit the review passed on (a delivery): the branch must hold it, and add nothing
    /// after it but merges, and what lands must be it merged cleanly with the target.
    pub reviewed: Option<&'a str>,
    /// Check everything and say what would move, moving nothing.
    pub dry_run: bool,
}

/// What landing did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Landed {
    /// There is no branch `splice/<id>`: nothing of splice's to land.
    NoBranch { branch: String },
    /// The branch's tip is already on the target.
    Already { branch: String, tip: String },
    /// A dry run: the target at `from` would move to the branch's tip `tip` (by a merge commit
    /// of the two when `merge`).
    Would {
        branch: String,
        from: String,
        tip: String,
        merge: bool,
    },
    /// The target was moved from `from` to `to`: the branch's tip (a fast-forward), or a merge
    /// commit of the two. `checkout` is where the target is checked out, brought to `to`.
    Moved {
        branch: String,
        from: String,
        to: String,
        merge: bool,
        checkout: Option<PathBuf>,
    },
}

/// Why nothing landed. Nothing was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The target is not a local branch (a tag, a remote branch, a sha).
    NotABranch { target: String },
    /// The branch does not hold the reviewed commit.
    NotReviewed { branch: String, reviewed: String },
    /// The branch adds commits after the reviewed one that are not merges (`sha summary`).
    Unreviewed {
        branch: String,
        reviewed: String,
        commits: Vec<String>,
    },
    /// The branch's changes touch `.splice/`.
    TouchesState { branch: String, paths: Vec<String> },
    /// The branch moved past the reviewed commit by merges, and what would land is not the
    /// reviewed commit merged cleanly with the target: `paths` differ from that clean merge (or,
    /// when `conflicted`, the clean merge conflicts there and the branch resolved them). New
    /// code, for review.
    BeyondReview {
        branch: String,
        reviewed: String,
        paths: Vec<String>,
        conflicted: bool,
    },
    /// Merging the branch into the target conflicts on these paths.
    Conflict {
        branch: String,
        target: String,
        paths: Vec<String>,
    },
    /// The target is checked out at `checkout` with uncommitted changes to these paths (or
    /// untracked files the new commit would overwrite).
    Dirty {
        checkout: PathBuf,
        target: String,
        paths: Vec<String>,
    },
    /// The target kept moving while landing (someone committed on it, [`MOVED_TRIES`] times
    /// over): nothing landed; the next check lands it.
    TargetMoved { target: String },
    /// The target's checkout stayed busy: git's index lock held by another process (or a file
    /// changing as git read it) for as long as splice waits (`cause`, git's words). Nothing
    /// landed; the next check lands it.
    Busy {
        checkout: PathBuf,
        target: String,
        cause: String,
    },
}

impl Refused {
    /// A person must act (the work itself is fine): the checkout, or the target, is theirs. A
    /// target that moved, or a checkout busy for a moment, needs no one: the node's next check
    /// lands it (issue 33).
    pub fn needs_person(&self) -> bool {
        matches!(self, Refused::NotABranch { .. } | Refused::Dirty { .. })
    }
}

/// The branches the repository's remotes name as their default (`refs/remotes/<remote>/HEAD`,
/// as `git clone` and `git remote set-head` leave it): each is a main line, protected like
/// `main` and `master`. Unreadable refs name none.
pub fn remote_main_lines(repo_root: &Path) -> Vec<String> {
    let Ok(repo) = open_repo(repo_root) else {
        return Vec::new();
    };
    let Ok(refs) = repo.references_glob("refs/remotes/*/HEAD") else {
        return Vec::new();
    };
    let mut lines: Vec<String> = refs
        .flatten()
        .filter_map(|r| {
            let name = r.name()?.strip_suffix("/HEAD")?.to_string();
            let target = r.symbolic_target()?;
            target.strip_prefix(&format!("{name}/")).map(str::to_string)
        })
        .collect();
    lines.sort();
    lines.dedup();
    lines
}

/// The lock file serializing landings on `target`.
fn lock_path(worktrees_dir: &Path, target: &str) -> PathBuf {
    let hash = Sha256::digest(target.as_bytes());
    let hex: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    worktrees_dir.join(format!(".land-{hex}.lock"))
}

/// How many times [`land`] tries again when the target moved under it.
const MOVED_TRIES: usize = 3;

/// Land `splice/<id>` on the target (see the module doc). `Ok(Err(_))` is a refusal; `Err` a
/// git or I/O fault. A target someone else moved meanwhile (the ref's compare-and-swap failed:
/// splice's own landings hold the target's lock, a person's commit does not) is landed on again,
/// from its new tip, up to [`MOVED_TRIES`] times.
pub fn land(req: &Landing) -> Result<std::result::Result<Landed, Refused>> {
    let mut tries = 1;
    loop {
        match land_once(req)? {
            Err(Refused::TargetMoved { .. }) if tries < MOVED_TRIES => tries += 1,
            answer => return Ok(answer),
        }
    }
}

/// One try of [`land`].
fn land_once(req: &Landing) -> Result<std::result::Result<Landed, Refused>> {
    check_id(req.id)?;
    let repo = open_repo(req.repo_root)?;
    let branch = branch_name(req.id);
    let tip = match repo.find_branch(&branch, BranchType::Local) {
        Ok(b) => b.get().peel_to_commit()?.id(),
        Err(e) if e.code() == ErrorCode::NotFound => return Ok(Ok(Landed::NoBranch { branch })),
        Err(e) => return Err(e.into()),
    };
    let refname = format!("refs/heads/{}", req.target);
    if repo.find_reference(&refname).is_err() {
        return Ok(Err(Refused::NotABranch {
            target: req.target.to_string(),
        }));
    }
    let _lock = super::lock_file(
        &lock_path(req.worktrees_dir, req.target),
        &format!("landing a branch on {}", req.target),
    )?;
    // Read under the lock: another landing may have just moved it.
    let old = repo.refname_to_id(&refname)?;
    if is_on(&repo, tip, old)? {
        let tip = tip.to_string();
        return Ok(Ok(Landed::Already { branch, tip }));
    }
    if let Some(refused) = check_branch(&repo, req, &branch, tip, old)? {
        return Ok(Err(refused));
    }
    let fast_forward = is_on(&repo, old, tip)?;
    let tree = if fast_forward {
        repo.find_commit(tip)?.tree_id()
    } else {
        match merged_tree(&repo, old, tip)? {
            Ok(tree) => tree,
            Err(paths) => {
                let (branch, target) = (branch, req.target.to_string());
                return Ok(Err(Refused::Conflict {
                    branch,
                    target,
                    paths,
                }));
            }
        }
    };
    if let Some(refused) = beyond_review(&repo, req, &branch, (old, tip), tree)? {
        return Ok(Err(refused));
    }
    if req.dry_run {
        if let Some(blocked) = checkout::would_block(&repo, &refname, old, tree)?
            && let Err(refused) = at_checkout(blocked, req.target)
        {
            return Ok(Err(refused));
        }
        return Ok(Ok(Landed::Would {
            branch,
            from: old.to_string(),
            tip: tip.to_string(),
            merge: !fast_forward,
        }));
    }
    let (new, merge) = if fast_forward {
        (tip, false)
    } else {
        (merge_commit(&repo, req, &branch, (old, tip), tree)?, true)
    };
    let checkout = match at_checkout(checkout::update(&repo, &refname, old, new)?, req.target) {
        Ok(checkout) => checkout,
        Err(refused) => return Ok(Err(refused)),
    };
    let message = format!("splice: land {branch} on {}", req.target);
    if let Err(e) = retry_busy(|| repo.reference_matching(&refname, new, true, old, &message)) {
        if e.code() != ErrorCode::Modified && e.code() != ErrorCode::Locked {
            return Err(e.into());
        }
        if let Some(path) = &checkout {
            checkout::restore(path, old, new)?;
        }
        let target = req.target.to_string();
        return Ok(Err(Refused::TargetMoved { target }));
    }
    Ok(Ok(Landed::Moved {
        branch,
        from: old.to_string(),
        to: new.to_string(),
        merge,
        checkout,
    }))
}

/// Step 6's answer for `target`: the checkout brought to the new commit (`None` when the target
/// is not checked out), or why it refused.
fn at_checkout(update: Update, target: &str) -> std::result::Result<Option<PathBuf>, Refused> {
    let target = target.to_string();
    match update {
        Update::NotCheckedOut => Ok(None),
        Update::Updated(path) => Ok(Some(path)),
        Update::Dirty { checkout, paths } => Err(Refused::Dirty {
            checkout,
            target,
            paths,
        }),
        Update::Busy { checkout, cause } => Err(Refused::Busy {
            checkout,
            target,
            cause,
        }),
    }
}

/// Steps 2 and 3: only reviewed work, and nothing under `.splice/`.
fn check_branch(
    repo: &Repository,
    req: &Landing,
    branch: &str,
    tip: Oid,
    target: Oid,
) -> Result<Option<Refused>> {
    if let Some(reviewed) = req.reviewed {
        let holds = Oid::from_str(reviewed)
            .ok()
            .filter(|oid| repo.find_commit(*oid).is_ok())
            .map(|oid| is_on(repo, oid, tip).map(|on| on.then_some(oid)))
            .transpose()?
            .flatten();
        let Some(reviewed_oid) = holds else {
            return Ok(Some(Refused::NotReviewed {
                branch: branch.to_string(),
                reviewed: reviewed.to_string(),
            }));
        };
        let commits = added_after(repo, tip, &[reviewed_oid, target])?;
        if !commits.is_empty() {
            return Ok(Some(Refused::Unreviewed {
                branch: branch.to_string(),
                reviewed: reviewed.to_string(),
                commits,
            }));
        }
    }
    let base = repo.merge_base(target, tip)?;
    let paths = state_paths(repo, base, tip)?;
    if !paths.is_empty() {
        return Ok(Some(Refused::TouchesState {
            branch: branch.to_string(),
            paths,
        }));
    }
    Ok(None)
}

/// The commits reachable from `tip` and from none of `hidden` that are not merges, as
/// `<short sha> <summary>`, oldest first.
fn added_after(repo: &Repository, tip: Oid, hidden: &[Oid]) -> Result<Vec<String>> {
    let mut walk = repo.revwalk()?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::REVERSE)?;
    walk.push(tip)?;
    for h in hidden {
        walk.hide(*h)?;
    }
    let mut out = Vec::new();
    for oid in walk {
        let commit = repo.find_commit(oid?)?;
        if commit.parent_count() < 2 {
            let sha = commit.id().to_string();
            out.push(format!("{} {}", &sha[..10], commit.summary().unwrap_or("")));
        }
    }
    Ok(out)
}

/// Paths under `.splice/` that differ between `base` and `tip`, sorted.
fn state_paths(repo: &Repository, base: Oid, tip: Oid) -> Result<Vec<String>> {
    let (base, tip) = (
        repo.find_commit(base)?.tree()?,
        repo.find_commit(tip)?.tree()?,
    );
    let mut opts = DiffOptions::new();
    opts.pathspec(STATE_DIR);
    let diff = repo.diff_tree_to_tree(Some(&base), Some(&tip), Some(&mut opts))?;
    let mut paths: Vec<String> = diff
        .deltas()
        .filter_map(|d| d.new_file().path().or_else(|| d.old_file().path()))
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| p == STATE_DIR || p.starts_with(&format!("{STATE_DIR}/")))
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// The tree of `ours` and `theirs` merged, written to the object database only; `Err` holds the
/// conflicting paths.
fn merged_tree(
    repo: &Repository,
    ours: Oid,
    theirs: Oid,
) -> Result<std::result::Result<Oid, Vec<String>>> {
    let (ours, theirs) = (repo.find_commit(ours)?, repo.find_commit(theirs)?);
    let mut index = repo.merge_commits(&ours, &theirs, None)?;
    if index.has_conflicts() {
        let mut paths: Vec<String> = index
            .conflicts()?
            .filter_map(|c| c.ok())
            .filter_map(|c| c.our.or(c.their).or(c.ancestor))
            .map(|e| String::from_utf8_lossy(&e.path).into_owned())
            .collect();
        paths.sort();
        paths.dedup();
        return Ok(Err(paths));
    }
    Ok(Ok(index.write_tree_to(repo)?))
}

/// Step 4's check of a branch that moved past its reviewed commit: what would land (`tree`)
/// must be the reviewed commit merged cleanly with the target.
fn beyond_review(
    repo: &Repository,
    req: &Landing,
    branch: &str,
    (target, tip): (Oid, Oid),
    tree: Oid,
) -> Result<Option<Refused>> {
    let Some(reviewed) = req.reviewed.and_then(|r| Oid::from_str(r).ok()) else {
        return Ok(None);
    };
    if reviewed == tip {
        return Ok(None);
    }
    let clean = if is_on(repo, target, reviewed)? {
        Ok(repo.find_commit(reviewed)?.tree_id())
    } else {
        merged_tree(repo, target, reviewed)?
    };
    let refused = |paths, conflicted| Refused::BeyondReview {
        branch: branch.to_string(),
        reviewed: reviewed.to_string(),
        paths,
        conflicted,
    };
    match clean {
        Err(paths) => Ok(Some(refused(paths, true))),
        Ok(clean) if clean == tree => Ok(None),
        Ok(clean) => {
            let (clean, tree) = (repo.find_tree(clean)?, repo.find_tree(tree)?);
            let diff = repo.diff_tree_to_tree(Some(&clean), Some(&tree), None)?;
            let mut paths: Vec<String> = diff
                .deltas()
                .filter_map(|d| d.new_file().path().or_else(|| d.old_file().path()))
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            paths.sort();
            paths.dedup();
            Ok(Some(refused(paths, false)))
        }
    }
}

/// Step 4, when the target is not an ancestor of the branch: the merge commit of the two (the
/// target first) with the merged `tree`, written to the object database only; no ref moves.
fn merge_commit(
    repo: &Repository,
    req: &Landing,
    branch: &str,
    (target, tip): (Oid, Oid),
    tree: Oid,
) -> Result<Oid> {
    let (ours, theirs) = (repo.find_commit(target)?, repo.find_commit(tip)?);
    let tree = repo.find_tree(tree)?;
    let sig = signature(repo)?;
    let message = merge_message(req, branch, &theirs);
    Ok(repo.commit(None, &sig, &sig, &message, &tree, &[&ours, &theirs])?)
}

/// The merge commit's message: the bead, its branch and where it lands.
fn merge_message(req: &Landing, branch: &str, tip: &Commit) -> String {
    let title: String = req.title.chars().take(72).collect();
    format!(
        "splice: land {} ({title}) on {}\n\nMerged by splice (direct delivery) from {branch} at {}.\n",
        req.id,
        req.target,
        tip.id()
    )
}

/// The repository's `user.name`/`user.email`, else `splice <splice@localhost>`, at the time
/// `SPLICE_NOW` fixes (tests and the demo are reproducible).
fn signature(repo: &Repository) -> Result<Signature<'static>> {
    let config = repo.config().ok();
    let get = |key: &str, default: &str| {
        config
            .as_ref()
            .and_then(|c| c.get_string(key).ok())
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| default.to_string())
    };
    let when = git2::Time::new(crate::clock::now()?.timestamp(), 0);
    Ok(Signature::new(
        &get("user.name", "splice"),
        &get("user.email", "splice@localhost"),
        &when,
    )?)
}
