//! The few git operations the simulated agent needs, with git2 (no `git` binary required).

use std::path::Path;

use git2::{IndexAddOption, Oid, Repository, Signature};

use crate::error::{Error, Result};

fn signature() -> Result<Signature<'static>> {
    // A fixed time keeps the demo's commits reproducible under SPLICE_NOW.
    let secs = crate::clock::now()?.timestamp();
    Ok(Signature::new(
        "splice sim-agent",
        "sim-agent@splice.invalid",
        &git2::Time::new(secs, 0),
    )?)
}

pub fn open(dir: &Path) -> Result<Repository> {
    Repository::open(dir).map_err(|e| Error::Git(format!("{}: {}", dir.display(), e.message())))
}

pub fn head(repo: &Repository) -> Result<Oid> {
    Ok(repo.head()?.peel_to_commit()?.id())
}

/// Stage everything and commit it on HEAD. Returns the new HEAD (unchanged if nothing changed).
pub fn commit_all(repo: &Repository, message: &str) -> Result<Oid> {
    let mut index = repo.index()?;
    index.add_all(["*"], IndexAddOption::DEFAULT, None)?;
    index.update_all(["*"], None)?;
    index.write()?;
    let tree_id = index.write_tree()?;
    let parent = repo.head()?.peel_to_commit()?;
    if parent.tree_id() == tree_id {
        return Ok(parent.id());
    }
    let tree = repo.find_tree(tree_id)?;
    let sig = signature()?;
    Ok(repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &[&parent])?)
}

/// Initialise `dir` as a repository on `branch` and commit everything in it.
pub fn init_with_commit(dir: &Path, branch: &str, message: &str) -> Result<Oid> {
    let repo = Repository::init(dir)?;
    repo.set_head(&format!("refs/heads/{branch}"))?;
    let mut index = repo.index()?;
    index.add_all(["*"], IndexAddOption::DEFAULT, None)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let sig = signature()?;
    Ok(repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &[])?)
}

/// Create branch `name` at `at`.
pub fn branch(repo: &Repository, name: &str, at: Oid) -> Result<()> {
    repo.branch(name, &repo.find_commit(at)?, false)?;
    Ok(())
}

/// Prepare HEAD for a direct delivery into `target`, as the deliver prompt asks: when the two
/// have diverged, merge the target's tip into HEAD (a merge commit on this branch). The target
/// ref is never moved: splice lands the branch itself.
pub fn prepare_delivery(repo: &Repository, target: &str) -> Result<Oid> {
    let theirs = repo.refname_to_id(&format!("refs/heads/{target}"))?;
    let ours = head(repo)?;
    if ours == theirs
        || repo.graph_descendant_of(ours, theirs)?
        || repo.graph_descendant_of(theirs, ours)?
    {
        return Ok(ours);
    }
    let (our_commit, their_commit) = (repo.find_commit(ours)?, repo.find_commit(theirs)?);
    let mut index = repo.merge_commits(&our_commit, &their_commit, None)?;
    if index.has_conflicts() {
        return Err(Error::Git(format!("merging {target} into HEAD conflicts")));
    }
    let tree = repo.find_tree(index.write_tree_to(repo)?)?;
    let sig = signature()?;
    let id = repo.commit(
        Some("HEAD"),
        &sig,
        &sig,
        &format!("Merge {target}"),
        &tree,
        &[&our_commit, &their_commit],
    )?;
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout.force();
    repo.checkout_head(Some(&mut checkout))?;
    Ok(id)
}
