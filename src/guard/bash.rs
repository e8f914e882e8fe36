//! What a Bash tool call does, from its parse ([`super::shell`]): each command's words are
//! expanded as far as the guard can know them (assignments earlier in the script, then the
//! environment; `~`; `cd` changing where relative paths start), wrappers are unwrapped (`env`,
//! `sudo`, `timeout`, `xargs`, `bash -c`, `eval`, …), and what is left is judged: the write
//! forms of [`writes`](super::writes), `splice` verbs ([`super::verbs`]) and git
//! ([`super::git`]). Substitutions and `sh -c` scripts are walked recursively, to a bounded
//! depth.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::expand::MAX_ALTS;
use super::shell::{self, Item, Part, RedirOp};
use super::{Context, Decision, MAX_COMMAND, MAX_DEPTH, paths, reason_for, write_harm};

/// One value a word may have after expansion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Val {
    /// The text, up to the first part that is not known when `open` is set.
    pub text: String,
    /// `None`: the whole text is known; `Some(true)`: a glob follows; `Some(false)`: a value the
    /// guard cannot know follows.
    pub open: Option<bool>,
    /// The first variable that could not be resolved.
    pub unknown: Option<String>,
}

/// An expanded word: the values it may have (more than one after `for x in a b`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arg {
    pub alts: Vec<Val>,
}

impl Arg {
    /// A known literal argument.
    pub fn lit(text: &str) -> Arg {
        Arg {
            alts: vec![Val {
                text: text.into(),
                open: None,
                unknown: None,
            }],
        }
    }

    /// The first value's text (what the guard reads an option or a name from).
    pub fn text(&self) -> &str {
        self.alts.first().map_or("", |v| v.text.as_str())
    }

    /// The first value's text, when it is entirely known.
    pub fn known(&self) -> Option<&str> {
        self.alts
            .first()
            .filter(|v| v.open.is_none())
            .map(|v| v.text.as_str())
    }
}

/// A command past the guard's limits is denied, not let through unjudged: padding a command
/// past them would otherwise be a way around the guard. No real tool call comes near them.
fn too_big(why: String) -> Decision {
    Decision::Deny(format!(
        "splice guard: {why}; split it into smaller commands"
    ))
}

/// At most this many commands are judged in one call.
const MAX_COMMANDS: usize = 20_000;

/// Judge a Bash command.
pub fn judge(command: &str, ctx: &Context) -> Decision {
    if command.len() > MAX_COMMAND {
        return too_big(format!(
            "the command is too long to judge ({} bytes; the guard reads up to {MAX_COMMAND})",
            command.len()
        ));
    }
    let mut w = Walk {
        ctx,
        vars: HashMap::new(),
        cwd: ctx.cwd.clone(),
        deny: None,
        commands: 0,
    };
    match w.script(command, 0) {
        Err(limit) => too_big(limit),
        Ok(()) => w.deny.map_or(Decision::Allow, Decision::Deny),
    }
}

/// The walk over one Bash call: variables and the directory as they stand, the first denial.
pub(super) struct Walk<'a> {
    pub ctx: &'a Context,
    pub(super) vars: HashMap<String, Vec<Val>>,
    pub cwd: PathBuf,
    deny: Option<String>,
    commands: usize,
}

/// Why a command is past the guard's limits (it is denied, see [`too_big`]).
pub(super) type Fault = String;

impl Walk<'_> {
    /// Record a denial (the first one is the reason given).
    pub(super) fn deny(&mut self, reason: String) {
        if self.deny.is_none() {
            self.deny = Some(reason);
        }
    }

    /// `arg` is written by `what` (with `remove`, removed, moved or re-permissioned).
    pub(super) fn write(&mut self, arg: &Arg, what: &str, remove: bool) {
        let home = self.ctx.home.clone();
        for v in &arg.alts {
            let Some(t) = paths::target(&v.text, v.open, &self.cwd, home.as_deref()) else {
                continue;
            };
            let raw = v
                .open
                .is_none()
                .then(|| paths::lexical(&paths::absolute(&v.text, &self.cwd, home.as_deref())));
            if let Some(h) = write_harm(&t, raw.as_deref(), self.ctx, remove) {
                let reason = reason_for(what, &h, self.ctx);
                return self.deny(reason);
            }
        }
    }

    /// `path` resolved from the walk's directory.
    pub(super) fn resolve(&self, text: &str) -> PathBuf {
        paths::resolve(&paths::absolute(text, &self.cwd, self.ctx.home.as_deref()))
    }

    /// Walk a script (`depth` levels of `sh -c`, `eval` and substitutions deep).
    pub(super) fn script(&mut self, src: &str, depth: usize) -> Result<(), Fault> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "the command nests too deep to judge (more than {MAX_DEPTH} levels)"
            ));
        }
        let mut saved: Vec<PathBuf> = Vec::new();
        for item in shell::parse(src) {
            match item {
                Item::Open => saved.push(self.cwd.clone()),
                Item::Close => {
                    if let Some(c) = saved.pop() {
                        self.cwd = c;
                    }
                }
                Item::For { name, words } => {
                    let mut vals = Vec::new();
                    for w in &words {
                        vals.extend(self.expand(w, depth)?.alts);
                    }
                    vals.truncate(MAX_ALTS);
                    self.vars.insert(name, vals);
                }
                Item::Pipeline(cmds) => self.pipeline(&cmds, depth)?,
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, cmds: &[shell::Command], depth: usize) -> Result<(), Fault> {
        let mut prev: Vec<Vec<Arg>> = Vec::new();
        for cmd in cmds {
            self.commands += 1;
            if self.commands > MAX_COMMANDS {
                return Err(format!(
                    "the command runs too many commands to judge (more than {MAX_COMMANDS})"
                ));
            }
            let args = self.command(cmd, &prev, depth)?;
            prev.push(args);
        }
        Ok(())
    }

    /// One simple command: its assignments, redirections, heredocs and words. Returns its words.
    fn command(
        &mut self,
        cmd: &shell::Command,
        prev: &[Vec<Arg>],
        depth: usize,
    ) -> Result<Vec<Arg>, Fault> {
        let mut args = Vec::with_capacity(cmd.words.len());
        for w in &cmd.words {
            args.push(self.expand(w, depth)?);
        }
        for (name, value) in &cmd.assigns {
            let v = self.expand(value, depth)?;
            self.assignment(name, &v);
            if cmd.words.is_empty() {
                self.vars.insert(name.clone(), v.alts);
            }
        }
        let what = describe(&args);
        let mut stdin: Option<String> = None;
        for r in &cmd.redirs {
            let target = self.expand(&r.target, depth)?;
            match r.op {
                RedirOp::Write => {
                    let shown = format!("{what} > {}", target.text());
                    self.write(&target, &shown, false);
                }
                RedirOp::HereString => stdin = Some(target.text().to_string()),
                RedirOp::Read | RedirOp::Dup => {}
            }
        }
        for h in &cmd.heredocs {
            if !h.quoted {
                for p in shell::heredoc_parts(&h.body) {
                    if let Part::Subst(s) | Part::ProcSubst(s) = p {
                        self.script(&s, depth + 1)?;
                    }
                }
            }
            stdin = Some(h.body.clone());
        }
        if stdin.is_none() {
            stdin = prev.last().and_then(|p| echoed(p));
        }
        self.run(args.clone(), stdin, prev, depth)?;
        Ok(args)
    }

    /// Unwrap wrappers, then judge the command they run.
    fn run(
        &mut self,
        mut args: Vec<Arg>,
        stdin: Option<String>,
        prev: &[Vec<Arg>],
        depth: usize,
    ) -> Result<(), Fault> {
        for _ in 0..32 {
            let Some(first) = args.first() else {
                return Ok(());
            };
            let prog = basename(first.text()).to_string();
            let rest = match super::writes::unwrap(&prog, &args[1..], self, prev) {
                super::writes::Unwrapped::Runs(rest) => rest,
                super::writes::Unwrapped::Script(s) => return self.script(&s, depth + 1),
                super::writes::Unwrapped::Nothing => return Ok(()),
                super::writes::Unwrapped::Itself => break,
            };
            args = rest;
        }
        let Some(first) = args.first() else {
            return Ok(());
        };
        let prog = basename(first.text()).to_string();
        if is_shell(&prog) {
            return self.shell(&args[1..], stdin, depth);
        }
        let is_splice = prog == "splice"
            || (first.text().is_empty()
                && first
                    .alts
                    .first()
                    .and_then(|v| v.unknown.as_deref())
                    .is_some_and(|v| v.contains("SPLICE")));
        if is_splice {
            let words: Vec<String> = args[1..].iter().map(|a| a.text().to_string()).collect();
            if let Some(reason) = super::verbs::judge(&words, self.ctx) {
                self.deny(reason);
            }
            return Ok(());
        }
        match prog.as_str() {
            "git" => super::git::judge(self, &args[1..]),
            "cd" | "pushd" => self.cd(&args[1..]),
            _ => super::writes::judge(self, &prog, &args),
        }
        Ok(())
    }

    /// `cd DIR`: later relative paths start there.
    fn cd(&mut self, args: &[Arg]) {
        let dir = args
            .iter()
            .find(|a| !a.text().starts_with('-') || a.text() == "-");
        match dir {
            None => {
                if let Some(h) = self.ctx.home.clone() {
                    self.cwd = h;
                }
            }
            Some(a) if a.known().is_some_and(|d| d != "-") => {
                self.cwd = self.resolve(a.text());
            }
            Some(_) => {}
        }
    }

    /// `bash [options] -c SCRIPT`, or a shell reading its script from stdin.
    fn shell(&mut self, args: &[Arg], stdin: Option<String>, depth: usize) -> Result<(), Fault> {
        let mut c = false;
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let t = a.text();
            if t == "--" {
                i += 1;
                break;
            }
            if matches!(t, "-o" | "+o" | "--rcfile" | "--init-file") {
                i += 2;
                continue;
            }
            if !(t.starts_with('-') || t.starts_with('+')) || t == "-" {
                break;
            }
            if !t.starts_with("--") && t.contains('c') {
                c = true;
            }
            i += 1;
        }
        match (c, args.get(i)) {
            (true, Some(script)) => {
                // `sh -c SCRIPT NAME ARGS…`: `$0` is NAME, `$1`… the ARGS, `$@` any of them.
                let positional = args.get(i + 1..).unwrap_or_default();
                for (k, a) in positional.iter().enumerate() {
                    self.vars.insert(k.to_string(), a.alts.clone());
                }
                let all: Vec<Val> = positional
                    .iter()
                    .skip(1)
                    .flat_map(|a| a.alts.clone())
                    .collect();
                for name in ["@", "*"] {
                    self.vars.insert(name.into(), all.clone());
                }
                let s = script.text().to_string();
                self.script(&s, depth + 1)
            }
            (false, None) => match stdin {
                Some(s) => self.script(&s, depth + 1),
                None => Ok(()),
            },
            // A script file: what it does is not in the call (docs/security.md).
            _ => Ok(()),
        }
    }
}

/// What `echo`/`printf` in a pipeline writes to the next command (a script for `| sh`).
fn echoed(args: &[Arg]) -> Option<String> {
    let prog = basename(args.first()?.text());
    if !matches!(prog, "echo" | "printf") {
        return None;
    }
    let words: Vec<&str> = args[1..]
        .iter()
        .map(Arg::text)
        .filter(|t| !matches!(*t, "-n" | "-e" | "-E"))
        .collect();
    Some(words.join(" ").replace("\\n", "\n"))
}

/// The program's name without its directory.
pub fn basename(prog: &str) -> &str {
    prog.rsplit('/').next().unwrap_or(prog)
}

/// A shell that runs a script given with `-c` or on stdin.
fn is_shell(prog: &str) -> bool {
    matches!(
        prog,
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "yash" | "busybox"
    )
}

/// A command as a reason quotes it.
pub fn describe(args: &[Arg]) -> String {
    args.iter().map(Arg::text).collect::<Vec<_>>().join(" ")
}

/// `path`'s last name, for `cp x DIR/` and the like.
pub fn file_name(text: &str) -> Option<&str> {
    Path::new(text.trim_end_matches('/'))
        .file_name()
        .and_then(|n| n.to_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::expand::glob_at;

    fn ctx() -> Context {
        Context {
            state: Some(PathBuf::from("/r/.splice")),
            repo: Some(PathBuf::from("/r")),
            cwd: PathBuf::from("/r"),
            ..Context::default()
        }
    }

    fn denied(cmd: &str) -> bool {
        matches!(judge(cmd, &ctx()), Decision::Deny(_))
    }

    #[test]
    fn variables_cd_and_loops_are_followed() {
        assert!(denied("D=.splice; rm -rf $D/beads"));
        assert!(denied("cd .splice && rm lock"));
        assert!(denied("for f in a lock; do rm .splice/$f; done"));
        assert!(
            !denied("(cd .splice); rm lock"),
            "a subshell's cd ends with it"
        );
        assert!(
            !denied("D=.splice rm -rf $D"),
            "a prefix assignment is not expanded"
        );
    }

    #[test]
    fn a_loop_over_nothing_leaves_its_variable_unknown() {
        let d = judge("for f in; do $f x; rm -rf $f; ~ $f; done", &ctx());
        assert_eq!(d, Decision::Allow);
    }

    #[test]
    fn a_brace_expansion_is_a_glob() {
        assert_eq!(glob_at("beads{,.bak}"), Some(5));
        assert_eq!(glob_at("a{b}"), None);
        assert_eq!(glob_at("x*{a,b}"), Some(1));
    }
}
