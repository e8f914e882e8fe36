//! The sandbox a floor's command runs in (issue 31): a suite, a `command` or `tests` floor, a
//! SARIF tool and a loop's stages run what an agent wrote (`build.rs`, a test calling
//! `splice transition approve`), so they are confined as a dispatch is — without its inbox or
//! credential: the checkout they run in (a node's worktree, a target's) and a temp directory
//! are writable, `.splice/` and the main checkout are not, and a `splice transition` inside can
//! only read.

use std::path::Path;

use crate::model::Config;
use crate::sandbox::{Sandbox, places};
use crate::store::Store;

/// Where the policies of floor commands sent to a cluster node are written, under `runs/`: no
/// sandboxed process may write there.
pub const FLOORS_DIR: &str = "floors";

/// A sandbox and the variables a command in it gets (its temp directory, caches).
#[derive(Debug)]
pub struct Confined {
    pub sandbox: Sandbox,
    pub env: Vec<(String, String)>,
}

impl PartialEq for Confined {
    fn eq(&self, other: &Confined) -> bool {
        self.sandbox.policy() == other.sandbox.policy() && self.env == other.env
    }
}

/// The sandbox for a command run in `dir` on `store`'s content: `Ok(None)` where commands run
/// unconfined (the sandbox switched off, or a kernel without one, and `[sandbox] required`
/// unset); `Err`: why it cannot run, in words.
pub fn for_dir(store: &Store, config: &Config, dir: &Path) -> Result<Option<Confined>, String> {
    if crate::sandbox::choose(config.sandbox.enabled(), config.sandbox.required())?.is_some() {
        return Ok(None);
    }
    let home = store.runs_dir().join(places::AGENT_HOME);
    let tmp = home.join("floor-tmp");
    let cache = home.join("cache");
    for d in [&tmp, &cache] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    // A checkout splice made (a node's worktree, a target's) is the command's to write; the
    // main checkout, where a check runs before a node has a worktree, is never writable: it
    // holds `.splice/` and the person's own files.
    let cargo = places::cargo_home(&home)?;
    let mut write = vec![tmp.clone(), cache.clone(), cargo.clone()];
    if dir.starts_with(store.worktrees_dir()) && dir != store.worktrees_dir() {
        write.push(dir.to_path_buf());
    }
    let policy = places::content(&places::Content {
        repo: store.repo(),
        splice_dir: store.dir(),
        write,
        read: Vec::new(),
        extra_read: &config.sandbox.read,
        extra_write: &config.sandbox.write,
        extra_env: &config.sandbox.env,
    })?;
    let sandbox = Sandbox::prepare(&policy)?;
    let mut env: Vec<(String, String)> = ["TMPDIR", "TMP", "TEMP"]
        .iter()
        .map(|k| (k.to_string(), tmp.display().to_string()))
        .collect();
    env.push(("XDG_CACHE_HOME".into(), cache.display().to_string()));
    env.push(("CARGO_HOME".into(), cargo.display().to_string()));
    Ok(Some(Confined { sandbox, env }))
}

/// A confined floor command sent to a cluster node (`[executor] floors = "slurm"`): `srun` runs
/// `splice sandbox exec --policy <file> -- argv` there, from the policy the runner writes to
/// `runs/floors/<name>.sandbox.json`, keeping the variables `confined` adds (the caller passes
/// them on). A node that cannot sandbox fails the command rather than run it unconfined.
pub fn on_cluster(
    store: &Store,
    confined: &Confined,
    name: &str,
    argv: &[String],
) -> Result<Vec<String>, String> {
    let mut policy = confined.sandbox.policy().clone();
    policy
        .env
        .extend(confined.env.iter().map(|(k, _)| k.clone()));
    policy.env.extend(["SPLICE_BEAD".into(), "SLURM_*".into()]);
    let dir = store.runs_dir().join(FLOORS_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let file = dir.join(format!("{name}.sandbox.json"));
    let bytes = serde_json::to_vec_pretty(&policy).map_err(|e| e.to_string())?;
    crate::store::atomic::replace_file(&file, &bytes).map_err(|e| e.to_string())?;
    Ok(crate::sandbox::exec_argv(
        &crate::hooks::splice_exe(),
        &file,
        argv,
    ))
}
