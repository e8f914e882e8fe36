//! Building the guard's [`Context`] from this process: the hook's working directory, the
//! environment, the live state directory and who is calling. Fast on purpose (the hook runs
//! before every tool call): no store is opened and no manifest or config parsed.

use std::path::{Path, PathBuf};

use super::{Context, Dispatch};
use crate::authority;

impl Context {
    /// The context of a hook call whose session works in `cwd` (else this process's directory);
    /// `dir` is `--dir` (the state directory or the directory holding it).
    pub fn from_process(cwd: Option<&Path>, dir: Option<&Path>) -> Context {
        let cwd = cwd
            .filter(|c| c.is_absolute())
            .map(Path::to_path_buf)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"));
        let env: std::collections::HashMap<String, String> = std::env::vars().collect();
        let get = |k: &str| env.get(k).filter(|v| !v.is_empty()).cloned();
        let given =
            dir.map(
                |d| match d.file_name().is_some_and(|n| n == crate::store::STATE_DIR) {
                    true => d.to_path_buf(),
                    false => d.join(crate::store::STATE_DIR),
                },
            );
        let state = given
            .or_else(|| crate::store::locate_from(&cwd))
            .and_then(|s| s.canonicalize().ok())
            .filter(|s| s.is_dir());
        let repo = state
            .as_deref()
            .and_then(Path::parent)
            .map(Path::to_path_buf);
        let recognized =
            authority::recognize(state.as_deref().unwrap_or(Path::new("/nonexistent")));
        let own_worktree = get("SPLICE_WORKTREE")
            .map(|w| super::paths::resolve(&cwd.join(w)))
            .or_else(|| holding_worktree(&cwd, state.as_deref()));
        let dispatch = recognized.dispatched.is_some().then(|| Dispatch {
            usage_file: get("SPLICE_USAGE_FILE").map(|u| super::paths::resolve(&cwd.join(u))),
            run: get("SPLICE_RUN"),
            bead: get("SPLICE_BEAD"),
            step: get("SPLICE_STEP"),
            attempt: get("SPLICE_ATTEMPT"),
            branches: protected_branches(get("SPLICE_TARGET"), repo.as_deref()),
        });
        let mut temp = vec![PathBuf::from("/tmp"), std::env::temp_dir()];
        let canonical: Vec<PathBuf> = temp.iter().filter_map(|t| t.canonicalize().ok()).collect();
        temp.extend(canonical);
        temp.dedup();
        Context {
            state,
            repo,
            home: get("HOME").map(PathBuf::from),
            temp,
            own_worktree,
            env,
            dispatch,
            cwd,
        }
    }
}

/// The splice checkout (`<state>/worktrees/<name>`) that holds `cwd`, if any.
fn holding_worktree(cwd: &Path, state: Option<&Path>) -> Option<PathBuf> {
    let worktrees = state?.join("worktrees");
    let cwd = super::paths::resolve(cwd);
    let name = cwd.strip_prefix(&worktrees).ok()?.components().next()?;
    Some(worktrees.join(name))
}

/// The branches a dispatch must not move: its target, `main`, `master`, and the branch the main
/// checkout has checked out (read from `.git/HEAD`, without opening the repository).
fn protected_branches(target: Option<String>, repo: Option<&Path>) -> Vec<String> {
    let mut out: Vec<String> = target.into_iter().collect();
    out.extend(["main".to_string(), "master".to_string()]);
    let head =
        repo.and_then(|r| crate::safe_read::read_text(&r.join(".git").join("HEAD"), 4096).ok());
    if let Some(branch) = head
        .as_deref()
        .and_then(|h| h.trim().strip_prefix("ref: refs/heads/"))
    {
        out.push(branch.to_string());
    }
    out.sort();
    out.dedup();
    out
}
