//! `find [-H|-L|-P] PATHS… EXPRESSION`: what a removing `find` (`-delete`, or `-exec`,
//! `-execdir`, `-ok`, `-okdir` running one of [`REMOVING`]) removes lies under its start paths.
//! Each start path is judged by where it lies:
//!
//! | start path                          | judged                                              |
//! |-------------------------------------|-----------------------------------------------------|
//! | inside splice's state               | as removing it (`find .splice/beads -delete`)       |
//! | holding the state (`.` at the root) | denied unless the expression spares the state       |
//! | elsewhere                           | only for a dispatch, as a write outside its worktree |
//!
//! The expression spares the state when it provably selects nothing in it: it has no `-o`,
//! `-or`, `,`, `!` or `-not` (so it is a conjunction, evaluated left to right), is entirely known
//! (no variable, no unquoted glob), and before its first removing action has a `-name` or
//! `-iname` test whose pattern ([`glob`](super::glob)) matches none of the names `find` meets
//! on its way into and through the state — the start path's own name, the directories between
//! it and `.splice`, `.splice` and every name under it as it is now (at most [`MAX_ENTRIES`]).
//! So `find . -name '*.o' -delete` at the repository's root is allowed and
//! `find . -name journal.jsonl -delete` is not. A removing `-exec` must also run a program, not
//! a shell, whose other words do not name the state; `-L`/`-follow` never spare it (a link may
//! lead anywhere). A `-prune` is not read: a pruning expression has `-o`, so it is denied.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::bash::{Arg, Val, Walk, basename};
use super::glob::Glob;
use super::paths::{self, Target};

/// Programs that change the files an `-exec` hands them.
const REMOVING: &[&str] = &[
    "rm", "rmdir", "mv", "shred", "unlink", "truncate", "chmod", "chown", "sed", "perl", "tee",
    "cp", "sh", "bash",
];

/// Of [`REMOVING`], the shells: the script they run may remove anything.
const SHELLS: &[&str] = &["sh", "bash"];

/// At most this many entries of the state are compared with a `-name` pattern; past them, it
/// may match.
const MAX_ENTRIES: usize = 100_000;

/// Primaries that take one argument (`-newerXY` too, and `-fprintf` two).
const WITH_VALUE: &str = "-amin -anewer -atime -cmin -cnewer -context -ctime -files0-from -fls \
     -fprint -fprint0 -fstype -gid -group -ilname -inum -ipath -iregex -iwholename -links -lname \
     -maxdepth -mindepth -mmin -mtime -newer -path -perm -printf -regex -regextype -samefile \
     -size -type -uid -used -user -wholename -xtype";

/// Why an expression that follows symbolic links (`-L`, `-follow`) spares nothing.
fn follows_links(option: &str) -> String {
    format!("with `{option}`, find follows symbolic links, which may lead anywhere")
}

/// Judge `find` with its words `rest` (after the program); `what` is the command as quoted.
pub(super) fn judge(w: &mut Walk, rest: &[Arg], what: &str) {
    let (first, follows) = leading_options(rest);
    let rest = &rest[first..];
    let n = rest
        .iter()
        .take_while(|a| !a.text().starts_with(['-', '(', '!']))
        .count();
    let (starts, expr) = rest.split_at(n);
    let dot = [Arg::lit(".")];
    let starts = if starts.is_empty() { &dot[..] } else { starts };
    for (k, a) in expr.iter().enumerate() {
        if matches!(a.text(), "-fprint" | "-fprintf" | "-fls" | "-fprint0")
            && let Some(f) = expr.get(k + 1)
        {
            w.write(f, what, false);
        }
    }
    if !removes(expr) {
        return;
    }
    let spare = Spare::read(expr, follows);
    for s in starts {
        for v in &s.alts {
            start(w, v, &spare, what);
        }
    }
}

/// `-H`, `-L`, `-P`, `-D LIST`, `-OLEVEL` before the start paths: where the start paths begin,
/// and whether symbolic links are followed (`-L`).
fn leading_options(rest: &[Arg]) -> (usize, bool) {
    let mut i = 0;
    let mut follows = false;
    while let Some(t) = rest.get(i).map(Arg::text) {
        match t {
            "-H" | "-P" => i += 1,
            "-L" => {
                follows = true;
                i += 1;
            }
            "-D" => i += 2,
            t if t.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    (i.min(rest.len()), follows)
}

/// The expression removes: `-delete`, or an `-exec`-like action running one of [`REMOVING`].
fn removes(expr: &[Arg]) -> bool {
    expr.iter().enumerate().any(|(k, a)| match a.text() {
        "-delete" => true,
        "-exec" | "-execdir" | "-ok" | "-okdir" => expr
            .get(k + 1)
            .is_some_and(|c| REMOVING.contains(&basename(c.text()))),
        _ => false,
    })
}

/// What the expression says about sparing the state, before the file system is looked at.
struct Spare {
    /// The `-name`/`-iname` tests before the first removing action (pattern, `-iname`), or why
    /// no test can spare the state.
    tests: Result<Vec<(String, bool)>, String>,
    /// The words of removing `-exec`s besides the program and `{}`, with `true` for `-execdir`
    /// and `-okdir` (run from each directory found).
    words: Vec<(String, bool)>,
}

impl Spare {
    fn read(expr: &[Arg], follows: bool) -> Spare {
        let mut words = Vec::new();
        let tests = if follows {
            Err(follows_links("-L"))
        } else {
            tests(expr, &mut words)
        };
        Spare { tests, words }
    }
}

const NOT_KNOWN: &str = "part of its expression is not known before it runs (a variable or an \
     unquoted glob; quote a `-name` pattern)";

/// The text of `a` when it is known in full and has one value.
fn known(a: Option<&Arg>) -> Result<&str, String> {
    match a.map(|a| a.alts.as_slice()) {
        Some([v]) if v.open.is_none() => Ok(&v.text),
        _ => Err(NOT_KNOWN.to_string()),
    }
}

/// The `-name`/`-iname` tests before the first removing action; the removing `-exec`s' words
/// go to `words`.
fn tests(expr: &[Arg], words: &mut Vec<(String, bool)>) -> Result<Vec<(String, bool)>, String> {
    let mut out = Vec::new();
    let mut acted = false;
    let mut named = false;
    let mut i = 0;
    while i < expr.len() {
        let t = known(expr.get(i))?;
        i += 1;
        match t {
            "-o" | "-or" | "," | "!" | "-not" => {
                return Err(format!(
                    "with `{t}` in its expression, a `-name` test does not keep it out"
                ));
            }
            "-follow" => return Err(follows_links(t)),
            "-delete" => acted = true,
            "-name" | "-iname" => {
                let pattern = known(expr.get(i))?;
                i += 1;
                named = true;
                if !acted {
                    out.push((pattern.to_string(), t == "-iname"));
                }
            }
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let mut cmd = Vec::new();
                while i < expr.len() {
                    let c = known(expr.get(i))?;
                    i += 1;
                    if c == ";" || (c == "+" && cmd.last() == Some(&"{}")) {
                        break;
                    }
                    cmd.push(c);
                }
                let prog = cmd.first().map_or("", |p| basename(p));
                if !REMOVING.contains(&prog) {
                    continue;
                }
                if SHELLS.contains(&prog) {
                    return Err(format!(
                        "its `{t} {prog}` runs a script that may remove anything"
                    ));
                }
                acted = true;
                let from_each = matches!(t, "-execdir" | "-okdir");
                words.extend(cmd[1..].iter().map(|c| (c.to_string(), from_each)));
            }
            "-fprintf" => {
                known(expr.get(i))?;
                known(expr.get(i + 1))?;
                i += 2;
            }
            t if WITH_VALUE.split_whitespace().any(|p| p == t)
                || (t.starts_with("-newer") && t.len() == 8) =>
            {
                known(expr.get(i))?;
                i += 1;
            }
            _ => {}
        }
    }
    match (out.is_empty(), named) {
        (false, _) => Ok(out),
        (true, false) => Err("it has no `-name` test to keep it out".to_string()),
        (true, true) => {
            Err("its `-name` test comes after what it removes, too late to keep it out".into())
        }
    }
}

/// One value of a start path.
fn start(w: &mut Walk, v: &Val, spare: &Spare, what: &str) {
    let home = w.ctx.home.clone();
    let Some(t) = paths::target(&v.text, v.open, &w.cwd, home.as_deref()) else {
        return;
    };
    let arg = Arg {
        alts: vec![v.clone()],
    };
    if let Some(state) = w.ctx.state.clone() {
        let (inside, holds) = match &t {
            Target::Exact(p) => (p.starts_with(&state), state.starts_with(p)),
            Target::Prefix { dir, .. } => (
                dir.starts_with(&state),
                paths::harm(&t, w.ctx, true).is_some(),
            ),
        };
        if inside {
            return w.write(&arg, what, true);
        }
        if holds && let Err(why) = spares(w, v, &t, &state, spare) {
            let shown = if v.open.is_some() {
                format!("{}…", v.text)
            } else {
                v.text.clone()
            };
            return w.deny(format!(
                "splice guard: `{}` would remove splice's state: .splice/ lies under `{shown}`, \
                 and {why}. Give find a quoted `-name` test that matches nothing in .splice/ \
                 (`-name '*.o'`), with no `-o`, `!` or `,`, or start it from a directory that \
                 does not hold .splice/; splice changes its state only through its verbs.",
                super::shorten(what)
            ));
        }
    }
    if w.ctx.dispatch.is_some() && matches!(t, Target::Exact(_)) {
        w.write(&arg, what, false);
    }
}

/// The expression, from the start path `t` (the value `v`), selects nothing in `state`; else why
/// it may.
fn spares(w: &Walk, v: &Val, t: &Target, state: &Path, spare: &Spare) -> Result<(), String> {
    let tests = spare.tests.as_ref().map_err(String::clone)?;
    for (word, from_each) in &spare.words {
        exec_word(w, word, *from_each)?;
    }
    let mut names = Names::new(tests)?;
    let from = match t {
        Target::Exact(p) => {
            let trimmed = v.text.trim_end_matches('/');
            let own = match trimmed.rsplit('/').next() {
                Some("") | None => "/",
                Some(n) => n,
            };
            names.meet(OsStr::new(own), || format!("`{}` itself", v.text))?;
            p
        }
        Target::Prefix { dir, .. } => dir,
    };
    let mut on_the_way = from.to_path_buf();
    for c in state
        .strip_prefix(from)
        .unwrap_or(Path::new(""))
        .components()
    {
        on_the_way.push(c);
        names.meet(c.as_os_str(), || on_the_way.display().to_string())?;
    }
    names.walk(state)
}

/// A word of a removing `-exec` (not the program): it names nothing in the state.
fn exec_word(w: &Walk, word: &str, from_each: bool) -> Result<(), String> {
    if word == "{}" {
        return Ok(());
    }
    if word.contains("{}") {
        return Err(format!(
            "its command's `{word}` is made from the paths found, so it may name anything"
        ));
    }
    let path = match word.strip_prefix('-') {
        Some(opt) => match opt.split_once('=') {
            Some((_, value)) => value,
            None => return Ok(()),
        },
        None => word,
    };
    if path.is_empty() {
        return Ok(());
    }
    if from_each && !path.starts_with(['/', '~']) {
        return Err(format!(
            "its command's `{word}` is taken from each directory found, so it may name anything"
        ));
    }
    let home = w.ctx.home.as_deref();
    let harms = paths::target(path, None, &w.cwd, home)
        .is_some_and(|t| paths::harm(&t, w.ctx, true).is_some());
    if harms {
        return Err(format!(
            "its command names `{word}`, which is or holds the state"
        ));
    }
    Ok(())
}

/// The `-name` tests, each crossed out once a name find meets matches it.
struct Names {
    /// Each test's pattern, as the option and pattern it came from, and whether a name matched.
    tests: Vec<(Glob, String, bool)>,
    seen: usize,
    /// At most this many entries are met ([`MAX_ENTRIES`]).
    limit: usize,
}

impl Names {
    fn new(tests: &[(String, bool)]) -> Result<Names, String> {
        let mut out = Vec::new();
        for (pattern, fold) in tests {
            let glob = Glob::new(pattern, *fold).ok_or_else(|| {
                format!("the guard cannot read the pattern `{pattern}` for certain")
            })?;
            let option = if *fold { "-iname" } else { "-name" };
            out.push((glob, format!("{option} {pattern}"), false));
        }
        Ok(Names {
            tests: out,
            seen: 0,
            limit: MAX_ENTRIES,
        })
    }

    /// Find meets `name` (at `shown`): an error once every test has matched a name.
    fn meet(&mut self, name: &OsStr, shown: impl FnOnce() -> String) -> Result<(), String> {
        let mut last = None;
        for (glob, test, matched) in &mut self.tests {
            if !*matched && glob.matches(name) {
                *matched = true;
                last = Some(test.clone());
            }
        }
        match last {
            Some(test) if self.tests.iter().all(|t| t.2) => {
                Err(format!("its `{test}` matches {}", shown()))
            }
            _ => Ok(()),
        }
    }

    /// Meet every name under `state`, as `find` would without following links.
    fn walk(&mut self, state: &Path) -> Result<(), String> {
        let parent = state.parent().unwrap_or(Path::new("/"));
        let shown = |p: &Path| p.strip_prefix(parent).unwrap_or(p).display().to_string();
        let mut dirs: Vec<PathBuf> = vec![state.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            let unreadable = || format!("the guard cannot read {} to compare it", shown(&dir));
            for entry in std::fs::read_dir(&dir).map_err(|_| unreadable())? {
                let entry = entry.map_err(|_| unreadable())?;
                self.seen += 1;
                if self.seen > self.limit {
                    return Err(format!(
                        ".splice/ holds more than {} entries, too many to compare with its \
                         `-name` test",
                        self.limit
                    ));
                }
                let path = entry.path();
                self.meet(&entry.file_name(), || shown(&path))?;
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    dirs.push(path);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "find_tests.rs"]
mod tests;
