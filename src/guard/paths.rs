//! Where a path really points, and whether writing (or removing) it harms splice's state.
//!
//! A path is resolved the way the kernel would open it: made absolute (from the working
//! directory, `~`), then the longest prefix that exists is canonicalized (so `..` and symlinked
//! directories go where they really go; a dangling symlink is followed to its target), and the
//! rest, which does not exist yet, is normalized lexically. Names are compared byte for byte: a
//! look-alike (`.splıce`, a full-width dot) is another file, harmless unless it lies outside a
//! dispatch's worktree.
//!
//! A word with a glob or an unknown part is a [`Target::Prefix`]: every path that starts with
//! its literal part, compared conservatively (a hidden name matches only a prefix starting with
//! `.`, as in `sh` without `dotglob`, unless the unknown part is a variable).

use std::path::{Component, Path, PathBuf};

use super::Context;

/// What a write names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// One path, resolved.
    Exact(PathBuf),
    /// Any path in `dir` whose next name starts with `frag` (and anything below it).
    Prefix {
        dir: PathBuf,
        frag: String,
        /// A hidden name (`.x`) may match although `frag` does not start with `.`.
        hidden: bool,
    },
}

/// Why a write harms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Harm {
    /// It writes splice's state: what it is.
    State(&'static str),
    /// It writes another node's worktree (its name).
    OtherWorktree(String),
    /// It removes or moves a directory holding splice's state.
    Holds,
    /// A dispatched session writes outside its worktree.
    Outside,
}

/// `path` with `.` and `..` taken lexically (no file system access).
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() && !out.has_root() {
                    out.push("..");
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `raw` made absolute from `cwd` (`~` and `$HOME` from `home`), not yet resolved.
pub fn absolute(raw: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    let home_rest = raw
        .strip_prefix("~")
        .or_else(|| raw.strip_prefix("$HOME"))
        .or_else(|| raw.strip_prefix("${HOME}"))
        .filter(|rest| rest.is_empty() || rest.starts_with('/'));
    match (home_rest, home) {
        (Some(rest), Some(h)) => h.join(rest.trim_start_matches('/')),
        _ => cwd.join(raw),
    }
}

/// Where the absolute path `path` leads: the longest existing prefix canonicalized (a dangling
/// symlink followed), the rest normalized lexically.
pub fn resolve(path: &Path) -> PathBuf {
    resolve_bounded(path, 0)
}

fn resolve_bounded(path: &Path, depth: usize) -> PathBuf {
    let comps: Vec<Component> = path.components().collect();
    for k in (1..=comps.len()).rev() {
        let prefix: PathBuf = comps[..k].iter().collect();
        let Ok(meta) = prefix.symlink_metadata() else {
            continue;
        };
        let rest: PathBuf = comps[k..].iter().collect();
        if let Ok(real) = prefix.canonicalize() {
            return lexical(&real.join(rest));
        }
        if meta.file_type().is_symlink()
            && depth < 16
            && let Ok(to) = std::fs::read_link(&prefix)
        {
            let base = prefix.parent().unwrap_or(Path::new("/")).join(to);
            return resolve_bounded(&base.join(rest), depth + 1);
        }
        return lexical(&prefix.join(rest));
    }
    lexical(path)
}

/// The target a word names: its text (`open` = only a prefix of it is known: `Some(true)` for
/// a glob, `Some(false)` for an unknown value), resolved from `cwd`. `None`: nothing is known.
pub fn target(text: &str, open: Option<bool>, cwd: &Path, home: Option<&Path>) -> Option<Target> {
    let Some(glob) = open else {
        if text.is_empty() {
            return None;
        }
        return Some(Target::Exact(resolve(&absolute(text, cwd, home))));
    };
    if text.is_empty() && !glob {
        return None;
    }
    let (dir, frag) = match text.rfind('/') {
        Some(at) => (&text[..=at], &text[at + 1..]),
        None => ("", text),
    };
    let dir = if dir.is_empty() { "." } else { dir };
    Some(Target::Prefix {
        dir: resolve(&absolute(dir, cwd, home)),
        frag: frag.to_string(),
        hidden: !glob || frag.starts_with('.'),
    })
}

/// The names under `.splice/` that hold state, and what each is.
const STATE: &[(&str, &str)] = &[
    ("beads", "the bead files"),
    ("journal.jsonl", "the journal"),
    ("journal", "the journal's closed segments"),
    ("lock", "the writer's lock"),
    ("lock.holder", "the writer's lock"),
    ("config.toml", "the configuration"),
    ("manifest.json", "the manifest"),
    ("prompts", "the prompts"),
];

/// What the path `p` (resolved) is inside `state`, if it is state.
fn state_part(p: &Path, ctx: &Context) -> Option<Harm> {
    let state = ctx.state.as_deref()?;
    let rel = p.strip_prefix(state).ok()?;
    let mut names = rel.components().map(|c| c.as_os_str().to_string_lossy());
    let first = names.next()?;
    if let Some((_, what)) = STATE.iter().find(|(n, _)| *n == first) {
        return Some(Harm::State(what));
    }
    if first.starts_with("journal") {
        return Some(Harm::State("the journal"));
    }
    let second = names.next();
    match (first.as_ref(), second) {
        ("runs", Some(s)) if s == "runners" => Some(Harm::State("the runners' records")),
        ("worktrees", Some(name)) if name.starts_with('.') => Some(Harm::State("a landing lock")),
        ("worktrees", Some(name)) => {
            let own = ctx.own_worktree.as_deref();
            let here = state.join("worktrees").join(name.as_ref());
            (own.is_none_or(|o| !o.starts_with(&here)))
                .then(|| Harm::OtherWorktree(name.into_owned()))
        }
        _ => None,
    }
}

/// The protected places a prefix target might reach: each state name, the runners' records,
/// and every other node's worktree now present.
fn protected_roots(ctx: &Context) -> Vec<PathBuf> {
    let Some(state) = ctx.state.as_deref() else {
        return Vec::new();
    };
    let mut roots: Vec<PathBuf> = STATE.iter().map(|(n, _)| state.join(n)).collect();
    roots.push(state.join("runs").join("runners"));
    if let Ok(entries) = std::fs::read_dir(state.join("worktrees")) {
        for e in entries.flatten() {
            let p = e.path();
            if ctx
                .own_worktree
                .as_deref()
                .is_none_or(|o| !o.starts_with(&p))
            {
                roots.push(p);
            }
        }
    }
    roots
}

/// Writing `t` harms splice's state? With `remove`, removing or moving it (so a directory that
/// holds state harms too).
pub fn harm(t: &Target, ctx: &Context, remove: bool) -> Option<Harm> {
    match t {
        Target::Exact(p) => {
            if let Some(h) = state_part(p, ctx) {
                return Some(h);
            }
            let state = ctx.state.as_deref()?;
            let holds =
                state.starts_with(p) || *p == state.join("runs") || *p == state.join("worktrees");
            (remove && holds).then_some(Harm::Holds)
        }
        Target::Prefix { dir, frag, hidden } => {
            if let Some(h) = state_part(dir, ctx) {
                return Some(h);
            }
            if ctx.state.as_deref().is_some_and(|s| *dir == s) && {
                let j = "journal";
                frag.starts_with(j) || j.starts_with(frag.as_str())
            } {
                return Some(Harm::State("the journal"));
            }
            let reach = protected_roots(ctx)
                .into_iter()
                .find(|r| reaches(dir, frag, *hidden, r))?;
            Some(state_part(&reach, ctx).unwrap_or(Harm::Holds))
        }
    }
}

/// Some path in `dir` starting with `frag` is `root` or holds it.
fn reaches(dir: &Path, frag: &str, hidden: bool, root: &Path) -> bool {
    let Ok(rel) = root.strip_prefix(dir) else {
        return false;
    };
    let Some(next) = rel.components().next() else {
        return false;
    };
    let name = next.as_os_str().to_string_lossy();
    name.starts_with(frag) && (hidden || !name.starts_with('.') || frag.starts_with('.'))
}

/// Paths every dispatched session may write outside its worktree, lexically.
fn exempt_raw(p: &Path) -> bool {
    let s = p.to_string_lossy();
    matches!(
        s.as_ref(),
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
    ) || s.starts_with("/dev/fd/")
}

/// A dispatched session writing `t` writes outside its worktree (and outside what it may write
/// besides: scratch files in the temp directory, `/dev/null` and the like, its usage file, its
/// own directory and run files under `.splice/runs/<run>/`)?
pub fn outside(t: &Target, raw: Option<&Path>, ctx: &Context) -> bool {
    let Some(d) = ctx.dispatch.as_ref() else {
        return false;
    };
    if raw.is_some_and(exempt_raw) {
        return false;
    }
    let path = match t {
        Target::Exact(p) => p,
        Target::Prefix { dir, .. } => dir,
    };
    if exempt_raw(path) || scratch(t, path, ctx) {
        return false;
    }
    if ctx
        .own_worktree
        .as_deref()
        .is_some_and(|w| path.starts_with(w))
    {
        return false;
    }
    if own_dir(ctx).is_some_and(|own| path.starts_with(own)) {
        return false;
    }
    if let Target::Exact(p) = t {
        if d.usage_file.as_deref() == Some(p.as_path()) {
            return false;
        }
        if own_run_file(p, ctx) {
            return false;
        }
    }
    true
}

/// `t` (whose directory part is `path`) is a scratch file: in a temp directory, and touching
/// neither the repository (its main checkout, `.git`, `.splice/`) nor the home directory when
/// that lies inside the temp directory. A repository cloned under `/tmp`, or a `HOME` there (a
/// container's), is not scratch space: the protected places win over the temp directory.
fn scratch(t: &Target, path: &Path, ctx: &Context) -> bool {
    let Some(temp) = ctx.temp.iter().find(|d| path.starts_with(d)) else {
        return false;
    };
    let home = ctx.home.as_deref().map(resolve);
    let home = home.filter(|h| h.starts_with(temp) && h != temp);
    let touches = |place: &Path| match t {
        Target::Exact(p) => p.starts_with(place),
        Target::Prefix { dir, frag, hidden } => {
            dir.starts_with(place) || reaches(dir, frag, *hidden, place)
        }
    };
    !ctx.repo
        .iter()
        .map(PathBuf::as_path)
        .chain(home.as_deref())
        .any(touches)
}

/// The dispatch's own directory, `.splice/runs/<run>/<bead>-<step>-<attempt>/`: its usage and
/// result files, its inbox and its temp directory (a sandboxed dispatch's `TMPDIR`), which the
/// sandbox lets it write too. Known only when the environment names every part, each a plain
/// name.
fn own_dir(ctx: &Context) -> Option<PathBuf> {
    let (state, d) = (ctx.state.as_deref()?, ctx.dispatch.as_ref()?);
    let parts = [&d.run, &d.bead, &d.step, &d.attempt];
    let plain = |s: &&str| !s.is_empty() && *s != "." && *s != ".." && !s.contains('/');
    let [run, bead, step, attempt] = parts.map(|p| p.as_deref().filter(plain));
    Some(
        state
            .join("runs")
            .join(run?)
            .join(format!("{}-{}-{}", bead?, step?, attempt?)),
    )
}

/// `.splice/runs/<run>/<bead>-<step>-<attempt>.*`: the dispatch's own log, prompt and usage —
/// but not its `.settings.json`, which registers this guard for the session (rewriting it would
/// unhook the guard).
fn own_run_file(p: &Path, ctx: &Context) -> bool {
    if p.file_name()
        .is_some_and(|n| n.to_string_lossy().ends_with(".settings.json"))
    {
        return false;
    }
    let (Some(state), Some(d)) = (ctx.state.as_deref(), ctx.dispatch.as_ref()) else {
        return false;
    };
    let (Some(run), Some(bead)) = (d.run.as_deref(), d.bead.as_deref()) else {
        return false;
    };
    if p.parent() != Some(state.join("runs").join(run).as_path()) {
        return false;
    }
    let stem = match (d.step.as_deref(), d.attempt.as_deref()) {
        (Some(s), Some(a)) => format!("{bead}-{s}-{a}."),
        _ => format!("{bead}-"),
    };
    p.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(&stem))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_takes_dot_and_dot_dot() {
        assert_eq!(
            lexical(Path::new("/r/./.splice/../.splice/beads/x")),
            PathBuf::from("/r/.splice/beads/x")
        );
        assert_eq!(lexical(Path::new("/../a")), PathBuf::from("/a"));
    }

    #[test]
    fn absolute_expands_home_only_at_the_start() {
        let home = Path::new("/home/u");
        let cwd = Path::new("/w");
        assert_eq!(absolute("~/x", cwd, Some(home)), PathBuf::from("/home/u/x"));
        assert_eq!(
            absolute("$HOME/x", cwd, Some(home)),
            PathBuf::from("/home/u/x")
        );
        assert_eq!(absolute("~", cwd, Some(home)), PathBuf::from("/home/u"));
        assert_eq!(absolute("a/~", cwd, Some(home)), PathBuf::from("/w/a/~"));
        assert_eq!(absolute("~x", cwd, Some(home)), PathBuf::from("/w/~x"));
        assert_eq!(absolute("/abs", cwd, Some(home)), PathBuf::from("/abs"));
    }

    #[test]
    fn resolve_follows_symlinked_directories_and_dangling_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("real/beads")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("real/beads/new.json"), root.join("dangling"))
            .unwrap();
        assert_eq!(
            resolve(&root.join("link/beads/../beads/x.json")),
            root.join("real/beads/x.json")
        );
        assert_eq!(
            resolve(&root.join("dangling")),
            root.join("real/beads/new.json")
        );
        assert_eq!(resolve(&root.join("none/../x")), root.join("x"));
    }

    /// A dispatched session's context: the repository `/scratch/c/repo` (its worktree `sp-a`),
    /// `home`, and the temp directory `temp`. No path here exists, so none is resolved.
    fn dispatched(home: &str, temp: &str) -> Context {
        Context {
            state: Some("/scratch/c/repo/.splice".into()),
            repo: Some("/scratch/c/repo".into()),
            home: Some(home.into()),
            temp: vec![temp.into()],
            own_worktree: Some("/scratch/c/repo/.splice/worktrees/sp-a".into()),
            dispatch: Some(super::super::Dispatch::default()),
            ..Context::default()
        }
    }

    #[test]
    fn the_temp_directory_is_scratch_space_but_not_the_repository_or_a_home_inside_it() {
        let ctx = dispatched("/scratch/h", "/scratch");
        let exact = |p: &str| Target::Exact(p.into());
        let prefix = |dir: &str, frag: &str| Target::Prefix {
            dir: dir.into(),
            frag: frag.into(),
            hidden: false,
        };
        let out = |t: &Target, ctx: &Context| outside(t, None, ctx);
        for t in [
            exact("/scratch/c/repo/.git/config"),
            exact("/scratch/c/repo/.git/hooks/pre-commit"),
            exact("/scratch/c/repo/README.md"),
            exact("/scratch/c/repo"),
            exact("/scratch/h/.bashrc"),
            prefix("/scratch/c", "re"),
            prefix("/scratch/c/repo", ""),
            prefix("/scratch", ""),
        ] {
            assert!(out(&t, &ctx), "{t:?} is scratch");
        }
        for t in [
            exact("/scratch/x.log"),
            exact("/scratch/c/notes"),
            exact("/scratch/c/repo/.splice/worktrees/sp-a/src/lib.rs"),
            prefix("/scratch/c", "x"),
            prefix("/scratch/build", ""),
        ] {
            assert!(!out(&t, &ctx), "{t:?} is not scratch");
        }
        // A temp directory inside the home directory is scratch space all the same.
        let ctx = dispatched("/scratch/h", "/scratch/h/tmp");
        assert!(!out(&exact("/scratch/h/tmp/x"), &ctx));
        assert!(out(&exact("/scratch/h/.bashrc"), &ctx));
    }

    #[test]
    fn a_glob_prefix_reaches_what_starts_with_it() {
        let root = Path::new("/r/.splice/beads");
        assert!(reaches(Path::new("/r"), ".spl", false, root));
        assert!(
            !reaches(Path::new("/r"), "", false, root),
            "* skips hidden names"
        );
        assert!(
            reaches(Path::new("/r"), "", true, root),
            "$X may be anything"
        );
        assert!(reaches(Path::new("/r/.splice"), "bead", false, root));
        assert!(!reaches(Path::new("/r/.splice"), "x", false, root));
        assert!(!reaches(Path::new("/q"), "", true, root));
    }
}
