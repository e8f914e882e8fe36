//! Expanding a word as far as the guard can know it: assignments earlier in the script, then
//! the environment; `~`; `$(pwd)` and the checkout's top level; a glob or an unknown part ends
//! what is known (the rest is compared as a prefix, `paths::target`). A word may have several
//! values (`for f in a b`), at most [`MAX_ALTS`].

use std::path::Path;

use super::bash::{Arg, Fault, Val, Walk};
use super::shell::{Part, Word};

/// At most this many values of one word are followed.
pub(super) const MAX_ALTS: usize = 16;

impl Walk<'_> {
    /// Expand a word to its values; substitutions in it are walked.
    pub(super) fn expand(&mut self, w: &Word, depth: usize) -> Result<Arg, Fault> {
        let mut alts = vec![Val {
            text: String::new(),
            open: None,
            unknown: None,
        }];
        for part in &w.parts {
            match part {
                Part::Lit(t) => {
                    let glob = glob_at(t);
                    for a in alts.iter_mut().filter(|a| a.open.is_none()) {
                        a.text.push_str(&t[..glob.unwrap_or(t.len())]);
                        if glob.is_some() {
                            a.open = Some(true);
                        }
                    }
                }
                Part::Quoted(t) => {
                    for a in alts.iter_mut().filter(|a| a.open.is_none()) {
                        a.text.push_str(t);
                    }
                }
                Part::Tilde(user) => {
                    let home = self.ctx.home.as_ref().filter(|_| user.is_empty());
                    for a in alts.iter_mut().filter(|a| a.open.is_none()) {
                        match home {
                            Some(h) => a.text.push_str(&h.to_string_lossy()),
                            None => a.open = Some(false),
                        }
                    }
                }
                Part::Param { name, default } => {
                    let values = self.lookup(name).or_else(|| {
                        default.as_ref().map(|d| {
                            vec![Val {
                                text: d.clone(),
                                open: None,
                                unknown: None,
                            }]
                        })
                    });
                    alts = join(alts, values, name);
                }
                Part::Subst(s) => {
                    self.script(s, depth + 1)?;
                    alts = join(alts, self.known_output(s), "$(…)");
                }
                Part::ProcSubst(s) => {
                    self.script(s, depth + 1)?;
                    for a in alts.iter_mut().filter(|a| a.open.is_none()) {
                        a.text.push_str("/dev/fd/63");
                    }
                }
            }
        }
        Ok(Arg { alts })
    }

    /// What a substitution prints, for the two whose answer the guard knows: `pwd` and
    /// `git rev-parse --show-toplevel` (the checkout holding the directory).
    fn known_output(&self, script: &str) -> Option<Vec<Val>> {
        let words: Vec<&str> = script.split_whitespace().collect();
        let start = match words.as_slice() {
            ["pwd"] | ["pwd", "-P" | "-L"] => return Some(vec![known(&self.cwd)]),
            ["git", "rev-parse", "--show-toplevel"] => self.cwd.clone(),
            ["git", "-C", d, "rev-parse", "--show-toplevel"] => self.resolve(d),
            _ => return None,
        };
        let top = start.ancestors().find(|a| a.join(".git").exists())?;
        Some(vec![known(top)])
    }

    /// A dispatched session sets git configuration through the environment
    /// (`GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_KEY_n`) to move `core.hooksPath`.
    pub(super) fn assignment(&mut self, name: &str, value: &Arg) {
        let hooks = value
            .alts
            .iter()
            .any(|v| v.text.to_ascii_lowercase().contains("core.hookspath"));
        if self.ctx.dispatch.is_some() && name.starts_with("GIT_CONFIG") && hooks {
            self.deny(format!(
                "splice guard: setting {name} to change core.hooksPath would skip the \
                 repository's hooks. Leave the hooks as they are and fix what they report."
            ));
        }
    }

    /// `export NAME=value` and the like: a variable set for the rest of the script.
    pub(super) fn set_var(&mut self, name: &str, value: &Arg) {
        self.assignment(name, value);
        self.vars.insert(name.to_string(), value.alts.clone());
    }

    /// A variable's values: set earlier in the script, else in the environment.
    fn lookup(&self, name: &str) -> Option<Vec<Val>> {
        if let Some(v) = self.vars.get(name) {
            return Some(v.clone());
        }
        let value = match name {
            "PWD" => self.cwd.to_string_lossy().into_owned(),
            _ => self.ctx.env.get(name)?.clone(),
        };
        Some(vec![Val {
            text: value,
            open: None,
            unknown: None,
        }])
    }
}

/// A value known in full: a path.
fn known(path: &Path) -> Val {
    Val {
        text: path.to_string_lossy().into_owned(),
        open: None,
        unknown: None,
    }
}

/// Append `values` (or, when `None`, an unknown value named `name`) to every open-ended value.
pub(super) fn join(alts: Vec<Val>, values: Option<Vec<Val>>, name: &str) -> Vec<Val> {
    // No value at all (`for f in; do …`): as unknown, so a word always has one.
    let values = values.filter(|v| !v.is_empty());
    let mut out = Vec::new();
    for a in alts {
        if a.open.is_some() {
            out.push(a);
            continue;
        }
        match &values {
            None => out.push(Val {
                open: Some(false),
                unknown: a.unknown.clone().or_else(|| Some(name.to_string())),
                ..a
            }),
            Some(vs) => {
                for v in vs {
                    let mut text = a.text.clone();
                    text.push_str(&v.text);
                    out.push(Val {
                        text,
                        open: v.open,
                        unknown: a.unknown.clone().or_else(|| v.unknown.clone()),
                    });
                }
            }
        }
    }
    out.truncate(MAX_ALTS);
    out
}

/// Where the first glob character of unquoted text is: `*`, `?`, `[`, or a `{` that opens a
/// brace expansion (`beads{,.bak}`).
pub(super) fn glob_at(t: &str) -> Option<usize> {
    let brace = t
        .find('{')
        .filter(|&at| t[at..].contains('}') && (t[at..].contains(',') || t[at..].contains("..")));
    let glob = t.find(['*', '?', '[']);
    match (glob, brace) {
        (Some(g), Some(b)) => Some(g.min(b)),
        (g, b) => g.or(b),
    }
}
