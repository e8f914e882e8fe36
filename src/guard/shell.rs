//! A small POSIX-ish shell parser: enough of `sh`'s grammar for the guard to see which commands a
//! Bash tool call runs and what their words and redirections are — never a substring search.
//!
//! It knows quoting (`'…'`, `"…"`, `$'…'`, backslashes), the operators `; & && || | |& ( ) { }`
//! and newlines, redirections (with an fd prefix), heredocs (`<<`, `<<-`, quoted or not),
//! parameters (`$X`, `${X}`, `${X:-d}`), `~`, and command and process substitution (`$(…)`,
//! backticks, `<(…)`, `>(…)`), whose inner text is kept for the caller to parse recursively.
//! Reserved words are dropped where a command starts, so the commands inside `if`, `for`,
//! `while`, `case` are seen like any other; a `for` loop's words are kept as a [`Item::For`].
//!
//! It never fails: on input `sh` would call a syntax error (an unclosed quote, say) it returns
//! what it read, so the guard still judges what parsed. It is iterative (no recursion on
//! nesting), so no input can overflow the stack. The lexer is [`super::lex`].

pub use super::lex::heredoc_parts;
use super::lex::{Lexer, Tok};

/// One piece of a word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Unquoted text: `*`, `?` and `[` in it are glob characters.
    Lit(String),
    /// Quoted or escaped text: taken as is.
    Quoted(String),
    /// `$NAME` or `${NAME…}`; `default` is the word of `${NAME:-word}` / `${NAME-word}`.
    Param {
        name: String,
        default: Option<String>,
    },
    /// `$(…)`, backticks or `$((…))`: the inner script.
    Subst(String),
    /// `<(…)` or `>(…)`: the inner script.
    ProcSubst(String),
    /// A leading `~` (`user` is empty for the caller's own home).
    Tilde(String),
}

/// A word, as its parts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Word {
    pub parts: Vec<Part>,
}

impl Word {
    /// The word's text when it holds only literal or quoted parts.
    pub fn literal(&self) -> Option<String> {
        let mut s = String::new();
        for p in &self.parts {
            match p {
                Part::Lit(t) | Part::Quoted(t) => s.push_str(t),
                _ => return None,
            }
        }
        Some(s)
    }
}

/// What a redirection does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedirOp {
    /// `<`
    Read,
    /// `>`, `>|`, `>>`, `&>`, `&>>`, `<>`, and `>&WORD` when WORD is not an fd number.
    Write,
    /// `>&N`, `<&N`, `>&-`: duplicates a descriptor.
    Dup,
    /// `<<<`: the word is the input.
    HereString,
}

/// A redirection and its target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redir {
    pub op: RedirOp,
    pub target: Word,
}

/// A heredoc's body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Heredoc {
    pub body: String,
    /// The delimiter was quoted: the body is taken literally (no substitution runs).
    pub quoted: bool,
}

/// A simple command: prefix assignments, words, redirections and heredocs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Command {
    pub assigns: Vec<(String, Word)>,
    pub words: Vec<Word>,
    pub redirs: Vec<Redir>,
    pub heredocs: Vec<Heredoc>,
}

/// What a script is, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// Commands joined by `|` or `|&` (one command is a pipeline of one).
    Pipeline(Vec<Command>),
    /// `(`: a subshell starts (a `cd` inside it ends with it).
    Open,
    /// `)`
    Close,
    /// `for NAME in WORDS`: the body's commands follow as usual.
    For { name: String, words: Vec<Word> },
}

const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "select",
];

/// Parse `src` into items. Never fails.
pub fn parse(src: &str) -> Vec<Item> {
    let toks = Lexer::new(src).run();
    Parser::default().run(toks)
}

#[derive(Default)]
struct Parser {
    items: Vec<Item>,
    cmd: Command,
    pipeline: Vec<Command>,
    /// Inside `case … in`: the next words up to `)` are a pattern.
    case_depth: usize,
    in_pattern: bool,
    /// After `function`: the next word is the function's name.
    after_function: bool,
}

impl Parser {
    fn run(mut self, toks: Vec<Tok>) -> Vec<Item> {
        let mut it = toks.into_iter().peekable();
        while let Some(tok) = it.next() {
            match tok {
                Tok::Newline | Tok::Op(";" | "&" | "&&" | "||") => self.end_pipeline(),
                Tok::Op(";;") => {
                    self.end_pipeline();
                    self.in_pattern = self.case_depth > 0;
                }
                Tok::Op("|" | "|&") => self.end_command(),
                Tok::Op("(") if self.in_pattern => {}
                Tok::Op(")") if self.in_pattern => self.in_pattern = false,
                Tok::Op("(") => {
                    if self.is_empty() {
                        self.items.push(Item::Open);
                    } else if matches!(it.peek(), Some(Tok::Op(")"))) {
                        // `name() { …; }`: a function definition; its body is analyzed.
                        it.next();
                        self.cmd = Command::default();
                    } else {
                        self.end_pipeline();
                        self.items.push(Item::Open);
                    }
                }
                Tok::Op(")") => {
                    self.end_pipeline();
                    self.items.push(Item::Close);
                }
                Tok::Op(_) => self.end_pipeline(),
                Tok::Redir(_, op) => {
                    let target = match it.next() {
                        Some(Tok::Word(w, _)) => w,
                        _ => Word::default(),
                    };
                    self.redir(op, target);
                }
                Tok::Word(w, raw) if raw.starts_with('\u{0}') => {
                    let body = w.literal().unwrap_or_default();
                    self.heredoc_body(body, raw == "\u{0}heredoc-q");
                }
                Tok::Word(w, raw) => self.word(w, raw, &mut it),
            }
        }
        self.end_pipeline();
        self.items
    }

    fn is_empty(&self) -> bool {
        self.cmd.words.is_empty() && self.cmd.assigns.is_empty() && self.cmd.redirs.is_empty()
    }

    /// A heredoc body goes to the last command that announced one (maybe already ended).
    fn heredoc_body(&mut self, body: String, quoted: bool) {
        let h = Heredoc { body, quoted };
        if !self.is_empty() {
            return self.cmd.heredocs.push(h);
        }
        if let Some(c) = self.pipeline.last_mut() {
            return c.heredocs.push(h);
        }
        for item in self.items.iter_mut().rev() {
            if let Item::Pipeline(cmds) = item
                && let Some(c) = cmds.last_mut()
            {
                return c.heredocs.push(h);
            }
        }
    }

    fn redir(&mut self, op: &str, target: Word) {
        let op = match op {
            "<" => RedirOp::Read,
            "<<<" => RedirOp::HereString,
            "<<" | "<<-" => return,
            ">&" | "<&" => match target.literal() {
                Some(t) if t == "-" || t.chars().all(|c| c.is_ascii_digit()) => RedirOp::Dup,
                _ if op == "<&" => RedirOp::Dup,
                _ => RedirOp::Write,
            },
            _ => RedirOp::Write,
        };
        self.cmd.redirs.push(Redir { op, target });
    }

    fn word(
        &mut self,
        w: Word,
        raw: String,
        it: &mut std::iter::Peekable<std::vec::IntoIter<Tok>>,
    ) {
        let at_start = self.cmd.words.is_empty();
        if raw == "esac" && (at_start || self.in_pattern) {
            self.case_depth = self.case_depth.saturating_sub(1);
            self.in_pattern = false;
            return;
        }
        if self.in_pattern {
            return;
        }
        if std::mem::take(&mut self.after_function) {
            return;
        }
        if at_start && raw == "function" {
            self.after_function = true;
            return;
        }
        if at_start && RESERVED.contains(&raw.as_str()) {
            return;
        }
        if at_start && raw == "case" {
            it.next(); // the word
            if matches!(it.peek(), Some(Tok::Word(_, r)) if r == "in") {
                it.next();
            }
            self.case_depth += 1;
            self.in_pattern = true;
            return;
        }
        if at_start && raw == "for" {
            return self.for_loop(it);
        }
        if at_start && let Some((name, value)) = assignment(&w, &raw) {
            self.cmd.assigns.push((name, value));
            return;
        }
        self.cmd.words.push(w);
    }

    /// `for NAME [in WORDS]`: the words up to `;`, a newline or `do`.
    fn for_loop(&mut self, it: &mut std::iter::Peekable<std::vec::IntoIter<Tok>>) {
        let name = match it.next() {
            Some(Tok::Word(_, n)) => n,
            _ => return,
        };
        let mut words = Vec::new();
        if matches!(it.peek(), Some(Tok::Word(_, r)) if r == "in") {
            it.next();
            while let Some(Tok::Word(_, r)) = it.peek() {
                if r == "do" {
                    break;
                }
                if let Some(Tok::Word(w, _)) = it.next() {
                    words.push(w);
                }
            }
        }
        self.end_pipeline();
        self.items.push(Item::For { name, words });
    }

    fn end_command(&mut self) {
        let cmd = std::mem::take(&mut self.cmd);
        if !(cmd.words.is_empty() && cmd.assigns.is_empty() && cmd.redirs.is_empty()) {
            self.pipeline.push(cmd);
        }
    }

    fn end_pipeline(&mut self) {
        self.end_command();
        let p = std::mem::take(&mut self.pipeline);
        if !p.is_empty() {
            self.items.push(Item::Pipeline(p));
        }
    }
}

/// `NAME=value` (the name unquoted and valid): the name and the value's word.
fn assignment(w: &Word, raw: &str) -> Option<(String, Word)> {
    let eq = raw.find('=')?;
    let name = &raw[..eq];
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !valid {
        return None;
    }
    let Some(Part::Lit(first)) = w.parts.first() else {
        return None;
    };
    let rest = first.get(eq + 1..)?;
    let mut parts = Vec::new();
    if !rest.is_empty() {
        parts.push(Part::Lit(rest.to_string()));
    }
    parts.extend(w.parts[1..].iter().cloned());
    Some((name.to_string(), Word { parts }))
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
