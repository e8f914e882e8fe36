//! git commands: for every session, the ones that overwrite or delete files of splice's state
//! (`checkout -- PATHS`, `restore`, `rm`, `mv`, `clean`); for a dispatched session also the ones
//! that move a branch it does not own (its target, `main`/`master`, the main checkout's branch,
//! another node's `splice/…`), change the main checkout, or skip the pre-commit hook.
//!
//! Where a git command runs is the walk's directory, moved by `-C DIR` (and `--work-tree`).

use std::path::PathBuf;

use super::bash::{Arg, Walk, describe};

/// Subcommands that change the checkout they run in (its files, index or branch).
const CHANGES_CHECKOUT: &[&str] = &[
    "commit",
    "merge",
    "reset",
    "checkout",
    "switch",
    "rebase",
    "cherry-pick",
    "revert",
    "pull",
    "am",
    "stash",
    "restore",
    "rm",
    "mv",
    "add",
    "clean",
    "apply",
];

/// Options of subcommands that take a value (so it is not read as a path or a branch).
const WITH_VALUE: &[&str] = &[
    "-b",
    "-B",
    "--orphan",
    "-s",
    "--source",
    "-m",
    "-F",
    "-C",
    "-c",
    "-t",
    "-o",
    "--conflict",
    "-e",
    "--exclude",
    "--push-option",
    "--receive-pack",
    "--repo",
    "--set-upstream-to",
    "--author",
    "--date",
    "--message",
    "--file",
    "--pathspec-from-file",
];

/// Judge `git ARGS…`.
pub(super) fn judge(w: &mut Walk, args: &[Arg]) {
    let what = format!("git {}", describe(args));
    let mut dir = w.cwd.clone();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let t = a.text();
        let value = args.get(i + 1).map(Arg::text).unwrap_or("");
        match t {
            "-C" => {
                dir = super::paths::resolve(&dir.join(value));
                i += 2;
            }
            "-c" => {
                hooks_path(w, value, &what);
                i += 2;
            }
            "--work-tree" => {
                dir = super::paths::resolve(&dir.join(value));
                i += 2;
            }
            "--git-dir" | "--namespace" | "--config-env" => i += 2,
            _ if t.starts_with("--work-tree=") => {
                dir = super::paths::resolve(&dir.join(&t["--work-tree=".len()..]));
                i += 1;
            }
            _ if t.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let Some(sub) = args.get(i).map(|a| a.text().to_string()) else {
        return;
    };
    let rest = &args[i + 1..];
    let saved = std::mem::replace(&mut w.cwd, dir.clone());
    files(w, &sub, rest, &what);
    if w.ctx.dispatch.is_some() {
        branches(w, &sub, rest, &what, dir);
    }
    w.cwd = saved;
}

/// Operands of a subcommand: not options, not option values; after `--`, everything.
fn operands(rest: &[Arg]) -> (Vec<&Arg>, bool) {
    operands_with(rest, WITH_VALUE)
}

fn operands_with<'a>(rest: &'a [Arg], with_value: &[&str]) -> (Vec<&'a Arg>, bool) {
    let mut out = Vec::new();
    let mut it = rest.iter();
    let mut dashdash = false;
    while let Some(a) = it.next() {
        let t = a.text();
        if dashdash || !t.starts_with('-') || t == "-" {
            out.push(a);
        } else if t == "--" {
            dashdash = true;
        } else if with_value.contains(&t) {
            it.next();
        }
    }
    (out, dashdash)
}

fn has(rest: &[Arg], flags: &[&str]) -> bool {
    rest.iter().any(|a| flags.contains(&a.text()))
}

/// The subcommands that overwrite or remove files: judged as removals of their paths.
fn files(w: &mut Walk, sub: &str, rest: &[Arg], what: &str) {
    let (ops, _) = operands(rest);
    let paths: Vec<&Arg> = match sub {
        "checkout" | "mv" => ops,
        "restore" if has(rest, &["--staged", "-S"]) && !has(rest, &["--worktree", "-W"]) => {
            return;
        }
        "restore" => ops,
        "rm" if has(rest, &["--cached"]) => return,
        "rm" => ops,
        "clean" if has(rest, &["-n", "--dry-run"]) => return,
        "clean" if ops.is_empty() => return w.write(&Arg::lit("."), what, true),
        "clean" => ops,
        // `git worktree remove|move|add PATH…`: a checkout removed, moved or made there.
        "worktree" => ops.into_iter().skip(1).collect(),
        _ => return,
    };
    for p in paths {
        w.write(p, what, true);
    }
}

/// A dispatched session's git: branches it does not own, the main checkout, hooks.
fn branches(w: &mut Walk, sub: &str, rest: &[Arg], what: &str, dir: PathBuf) {
    let ctx = w.ctx;
    let in_main = ctx.repo.as_deref().is_some_and(|r| dir.starts_with(r))
        && !ctx
            .own_worktree
            .as_deref()
            .is_some_and(|o| dir.starts_with(o));
    if in_main && CHANGES_CHECKOUT.contains(&sub) {
        return w.deny(format!(
            "splice guard: `{what}` would change the main checkout ({}), not your worktree. \
             Commit in your worktree{}; splice delivers to the target itself.",
            dir.display(),
            worktree_shown(w)
        ));
    }
    match sub {
        "commit" if no_verify(rest) => w.deny(format!(
            "splice guard: `{what}` skips the repository's pre-commit hook. Commit without \
             --no-verify/-n and fix what the hook reports."
        )),
        "config" => config(w, rest, what),
        "update-ref" => w.deny(format!(
            "splice guard: `{what}` moves a ref directly. A dispatched session changes only its \
             own branch, by committing in its worktree; splice delivers to the target itself."
        )),
        "symbolic-ref" if operands(rest).0.len() >= 2 => w.deny(format!(
            "splice guard: `{what}` repoints a ref. Commit in your worktree; splice delivers to \
             the target itself."
        )),
        "push" | "fetch" => push(w, sub, rest, what, in_main),
        "branch" => branch(w, rest, what),
        _ => {}
    }
}

fn worktree_shown(w: &Walk) -> String {
    w.ctx
        .own_worktree
        .as_ref()
        .map(|p| format!(" ({})", p.display()))
        .unwrap_or_default()
}

/// `-n`/`--no-verify` among `git commit`'s options (`-am` is not; `-nm` is).
fn no_verify(rest: &[Arg]) -> bool {
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        let t = a.text();
        if t == "--no-verify" {
            return true;
        }
        if t == "--" {
            return false;
        }
        let Some(cluster) = t.strip_prefix('-').filter(|c| !c.starts_with('-')) else {
            continue;
        };
        for c in cluster.chars() {
            match c {
                'n' => return true,
                'm' | 'F' | 'C' | 'c' | 't' => {
                    if cluster.ends_with(c) {
                        it.next();
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    false
}

/// `-c core.hooksPath=…`.
fn hooks_path(w: &mut Walk, value: &str, what: &str) {
    if w.ctx.dispatch.is_some() && value.to_ascii_lowercase().starts_with("core.hookspath") {
        w.deny(hooks_reason(what));
    }
}

fn hooks_reason(what: &str) -> String {
    format!(
        "splice guard: `{what}` changes core.hooksPath, which would skip the repository's \
         hooks. Leave the hooks as they are and fix what they report."
    )
}

/// `git config core.hooksPath VALUE` (or `--unset`, `set`): a write of the key.
fn config(w: &mut Walk, rest: &[Arg], what: &str) {
    let reads = [
        "--get",
        "--get-all",
        "--get-regexp",
        "--list",
        "-l",
        "get",
        "list",
    ];
    if has(rest, &reads) {
        return;
    }
    let (ops, _) = operands(rest);
    let key_at = ops
        .iter()
        .position(|a| a.text().eq_ignore_ascii_case("core.hookspath"));
    let writes = has(
        rest,
        &[
            "--unset",
            "--unset-all",
            "unset",
            "set",
            "--add",
            "--replace-all",
        ],
    );
    if let Some(k) = key_at
        && (writes || ops.len() > k + 1)
    {
        w.deny(hooks_reason(what));
    }
}

/// A branch a dispatch does not own.
fn not_owned(w: &Walk, name: &str) -> Option<String> {
    let name = name.trim_start_matches('+');
    let name = name.strip_prefix("refs/heads/").unwrap_or(name);
    let d = w.ctx.dispatch.as_ref()?;
    if d.branches.iter().any(|b| b == name) {
        return Some(name.to_string());
    }
    let own = d.bead.clone().or_else(|| {
        w.ctx
            .own_worktree
            .as_ref()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
    });
    let other = name
        .strip_prefix("splice/")
        .is_some_and(|id| own.as_deref() != Some(id));
    other.then(|| name.to_string())
}

/// `git push` / `git fetch`: force, delete, mirror, or a refspec whose destination it does not own.
fn push(w: &mut Walk, sub: &str, rest: &[Arg], what: &str, in_main: bool) {
    let forced = rest.iter().any(|a| {
        let t = a.text();
        matches!(
            t,
            "--force" | "--mirror" | "--delete" | "--all" | "--prune" | "--force-if-includes"
        ) || t.starts_with("--force-with-lease")
            || (t.starts_with('-') && !t.starts_with("--") && t.contains(['f', 'd']))
    });
    let (ops, _) = operands(rest);
    let specs: Vec<&str> = ops.iter().skip(1).map(|a| a.text()).collect();
    let plus = specs.iter().any(|s| s.starts_with('+'));
    if sub == "push" && (forced || plus) {
        return w.deny(format!(
            "splice guard: `{what}` force-pushes, deletes or mirrors branches. Push only your own \
             branch, without force; splice delivers to the target itself."
        ));
    }
    let bare_head = sub == "push" && in_main && (specs.is_empty() || specs.contains(&"HEAD"));
    let dest = specs.iter().find_map(|s| {
        // A fetch without `:DST` moves only remote-tracking refs.
        if sub == "fetch" && !s.contains(':') {
            return None;
        }
        let dst = s.rsplit(':').next().unwrap_or(s);
        let dst = if dst == "HEAD" { "" } else { dst };
        not_owned(w, dst).or_else(|| (s.starts_with(':') && sub == "push").then(|| dst.into()))
    });
    if let Some(branch) = dest.or_else(|| bare_head.then(|| "the main checkout's branch".into())) {
        w.deny(format!(
            "splice guard: `{what}` would move `{branch}`, a branch this dispatch does not own (its \
             target, main, or another node's). Commit on your own branch in your worktree; splice \
             delivers to the target itself."
        ));
    }
}

/// `git branch -f/-D/-M/-d/-m/-C` of a branch it does not own.
fn branch(w: &mut Walk, rest: &[Arg], what: &str) {
    let moves = rest.iter().any(|a| {
        let t = a.text();
        matches!(t, "--force" | "--delete" | "--move" | "--copy")
            || (t.starts_with('-')
                && !t.starts_with("--")
                && t.contains(['f', 'd', 'D', 'm', 'M', 'C']))
    });
    if !moves {
        return;
    }
    let (ops, _) = operands_with(rest, &[]);
    if let Some(b) = ops.iter().find_map(|a| not_owned(w, a.text())) {
        w.deny(format!(
            "splice guard: `{what}` would move or delete `{b}`, a branch this dispatch does not \
             own. Work on your own branch in your worktree; splice delivers to the target itself."
        ));
    }
}
