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
//! nesting), so no input can overflow the stack.

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

/// A token of the lexer.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Word(Word, String),
    Op(&'static str),
    Redir(Option<u32>, &'static str),
    Newline,
}

/// Longest first, so `&>` is not read as `&`.
const OPS: &[&str] = &[
    "&>>", "&>", "&&", "||", ";;", "|&", ";", "&", "|", "(", ")", "<<<", "<<-", "<<", ">>", ">|",
    "<>", "<&", ">&", "<", ">",
];

const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "select",
];

/// Parse `src` into items. Never fails.
pub fn parse(src: &str) -> Vec<Item> {
    let toks = Lexer::new(src).run();
    Parser::default().run(toks)
}

struct Lexer {
    s: Vec<char>,
    i: usize,
    /// Heredocs announced on the current line: (delimiter, strip tabs, quoted).
    pending: Vec<(String, bool, bool)>,
    bodies: Vec<Heredoc>,
    out: Vec<Tok>,
}

impl Lexer {
    fn new(src: &str) -> Lexer {
        Lexer {
            s: src.chars().collect(),
            i: 0,
            pending: Vec::new(),
            bodies: Vec::new(),
            out: Vec::new(),
        }
    }

    fn peek(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    fn starts(&self, text: &str) -> bool {
        text.chars()
            .enumerate()
            .all(|(k, c)| self.peek(k) == Some(c))
    }

    fn run(mut self) -> Vec<Tok> {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' => self.i += 1,
                '\\' if self.peek(1) == Some('\n') => self.i += 2,
                '\n' => {
                    self.i += 1;
                    self.out.push(Tok::Newline);
                    self.read_heredocs();
                }
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                _ => self.token(),
            }
        }
        self.out
    }

    /// One operator, redirection or word.
    fn token(&mut self) {
        if matches!(self.peek(0), Some('<' | '>')) && self.peek(1) == Some('(') {
            return self.word(None);
        }
        if let Some(op) = OPS.iter().find(|op| self.starts(op)) {
            self.i += op.chars().count();
            return self.operator(None, op);
        }
        self.word(None)
    }

    fn operator(&mut self, fd: Option<u32>, op: &'static str) {
        let redir = matches!(
            op,
            "<<<" | "<<-" | "<<" | ">>" | ">|" | "<>" | "<&" | ">&" | "&>>" | "&>" | "<" | ">"
        );
        if !redir {
            self.out.push(Tok::Op(op));
            return;
        }
        self.out.push(Tok::Redir(fd, op));
        if op == "<<" || op == "<<-" {
            while matches!(self.peek(0), Some(' ' | '\t')) {
                self.i += 1;
            }
            let start = self.i;
            self.word(None);
            let raw: String = self.s[start..self.i].iter().collect();
            let quoted = raw.contains(['\'', '"', '\\']);
            let delim: String = raw
                .chars()
                .filter(|c| !matches!(c, '\'' | '"' | '\\'))
                .collect();
            self.pending.push((delim, op == "<<-", quoted));
        }
    }

    /// Read the bodies of the heredocs announced on the line just ended.
    fn read_heredocs(&mut self) {
        for (delim, strip, quoted) in std::mem::take(&mut self.pending) {
            let mut body = String::new();
            loop {
                if self.i >= self.s.len() {
                    break;
                }
                let start = self.i;
                while self.peek(0).is_some_and(|c| c != '\n') {
                    self.i += 1;
                }
                let line: String = self.s[start..self.i].iter().collect();
                self.i = (self.i + 1).min(self.s.len());
                let test = if strip {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if test == delim {
                    break;
                }
                body.push_str(test);
                body.push('\n');
            }
            self.bodies.push(Heredoc { body, quoted });
        }
        // Attach the bodies to the heredoc redirections, in order, as synthetic words.
        for h in std::mem::take(&mut self.bodies) {
            self.out.push(Tok::Word(
                Word {
                    parts: vec![Part::Quoted(h.body)],
                },
                if h.quoted {
                    "\u{0}heredoc-q"
                } else {
                    "\u{0}heredoc"
                }
                .into(),
            ));
        }
    }

    /// A word (or an fd-prefixed redirection, `2>`).
    fn word(&mut self, _: Option<()>) {
        let start = self.i;
        let mut parts: Vec<Part> = Vec::new();
        let mut lit = String::new();
        let flush = |lit: &mut String, parts: &mut Vec<Part>| {
            if !lit.is_empty() {
                parts.push(Part::Lit(std::mem::take(lit)));
            }
        };
        if self.peek(0) == Some('~') {
            self.i += 1;
            let mut user = String::new();
            while let Some(c) = self
                .peek(0)
                .filter(|c| c.is_alphanumeric() || "_-.".contains(*c))
            {
                user.push(c);
                self.i += 1;
            }
            if matches!(
                self.peek(0),
                None | Some('/' | ' ' | '\t' | '\n' | ';' | '&' | '|' | ')')
            ) {
                parts.push(Part::Tilde(user));
            } else {
                lit.push('~');
                lit.push_str(&user);
            }
        }
        while let Some(c) = self.peek(0) {
            if matches!(c, '<' | '>') && self.peek(1) == Some('(') {
                flush(&mut lit, &mut parts);
                self.i += 2;
                parts.push(Part::ProcSubst(self.until_paren()));
                continue;
            }
            if " \t\r\n;&|()<>".contains(c) {
                if matches!(c, '<' | '>') && parts.is_empty() && !lit.is_empty() {
                    if let Ok(fd) = lit.parse::<u32>() {
                        if let Some(op) = OPS.iter().find(|op| self.starts(op)) {
                            self.i += op.chars().count();
                            return self.operator(Some(fd), op);
                        }
                    }
                }
                break;
            }
            match c {
                '\\' => {
                    flush(&mut lit, &mut parts);
                    self.i += 1;
                    match self.peek(0) {
                        Some('\n') => self.i += 1,
                        Some(e) => {
                            self.i += 1;
                            parts.push(Part::Quoted(e.to_string()));
                        }
                        None => {}
                    }
                }
                '\'' => {
                    flush(&mut lit, &mut parts);
                    self.i += 1;
                    let mut q = String::new();
                    while let Some(e) = self.peek(0) {
                        self.i += 1;
                        if e == '\'' {
                            break;
                        }
                        q.push(e);
                    }
                    parts.push(Part::Quoted(q));
                }
                '"' => {
                    flush(&mut lit, &mut parts);
                    self.i += 1;
                    self.double_quoted(&mut parts, true);
                }
                '`' => {
                    flush(&mut lit, &mut parts);
                    self.i += 1;
                    parts.push(Part::Subst(self.backticks()));
                }
                '$' => {
                    flush(&mut lit, &mut parts);
                    self.dollar(&mut parts, false);
                }
                _ => {
                    lit.push(c);
                    self.i += 1;
                }
            }
        }
        flush(&mut lit, &mut parts);
        let raw: String = self.s[start..self.i].iter().collect();
        self.out.push(Tok::Word(Word { parts }, raw));
    }

    /// Inside `"…"` (or an unquoted heredoc body when `closing` is false): text, `$` forms,
    /// backticks; backslash escapes only `$ \` " \n`.
    fn double_quoted(&mut self, parts: &mut Vec<Part>, closing: bool) {
        let mut q = String::new();
        while let Some(c) = self.peek(0) {
            match c {
                '"' if closing => {
                    self.i += 1;
                    break;
                }
                '\\' => {
                    self.i += 1;
                    match self.peek(0) {
                        Some(e @ ('$' | '`' | '"' | '\\')) => {
                            q.push(e);
                            self.i += 1;
                        }
                        Some('\n') => self.i += 1,
                        _ => q.push('\\'),
                    }
                }
                '$' => {
                    parts.push(Part::Quoted(std::mem::take(&mut q)));
                    self.dollar(parts, true);
                }
                '`' => {
                    parts.push(Part::Quoted(std::mem::take(&mut q)));
                    self.i += 1;
                    parts.push(Part::Subst(self.backticks()));
                }
                _ => {
                    q.push(c);
                    self.i += 1;
                }
            }
        }
        parts.push(Part::Quoted(q));
        parts.retain(|p| !matches!(p, Part::Quoted(s) if s.is_empty()));
        if parts.is_empty() {
            parts.push(Part::Quoted(String::new()));
        }
    }

    /// At a `$`: a parameter, a substitution, `$'…'`, or a plain `$`.
    fn dollar(&mut self, parts: &mut Vec<Part>, quoted: bool) {
        self.i += 1;
        match self.peek(0) {
            Some('(') => {
                self.i += 1;
                parts.push(Part::Subst(self.until_paren()));
            }
            Some('{') => {
                self.i += 1;
                let mut inner = String::new();
                let mut depth = 1;
                while let Some(c) = self.peek(0) {
                    self.i += 1;
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    inner.push(c);
                }
                parts.push(braced(&inner));
            }
            Some('\'') if !quoted => {
                self.i += 1;
                parts.push(Part::Quoted(self.ansi_c()));
            }
            Some('"') if !quoted => {}
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let mut name = String::new();
                while let Some(c) = self
                    .peek(0)
                    .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                {
                    name.push(c);
                    self.i += 1;
                }
                parts.push(Part::Param {
                    name,
                    default: None,
                });
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                self.i += 1;
                parts.push(Part::Param {
                    name: c.to_string(),
                    default: None,
                });
            }
            _ => parts.push(Part::Lit("$".into())),
        }
    }

    /// `$'…'`: C-style escapes.
    fn ansi_c(&mut self) -> String {
        let mut q = String::new();
        while let Some(c) = self.peek(0) {
            self.i += 1;
            match c {
                '\'' => break,
                '\\' => {
                    let Some(e) = self.peek(0) else { break };
                    self.i += 1;
                    match e {
                        'n' => q.push('\n'),
                        't' => q.push('\t'),
                        'r' => q.push('\r'),
                        'x' => {
                            let mut hex = String::new();
                            while hex.len() < 2
                                && self.peek(0).is_some_and(|h| h.is_ascii_hexdigit())
                            {
                                hex.extend(self.peek(0));
                                self.i += 1;
                            }
                            q.extend(u8::from_str_radix(&hex, 16).ok().map(char::from));
                        }
                        '0'..='7' => {
                            let mut oct = e.to_string();
                            while oct.len() < 3
                                && self.peek(0).is_some_and(|h| ('0'..='7').contains(&h))
                            {
                                oct.extend(self.peek(0));
                                self.i += 1;
                            }
                            q.extend(u8::from_str_radix(&oct, 8).ok().map(char::from));
                        }
                        other => q.push(other),
                    }
                }
                _ => q.push(c),
            }
        }
        q
    }

    /// After `$(`, `<(` or `>(`: the inner text up to the matching `)`, quotes respected.
    fn until_paren(&mut self) -> String {
        let start = self.i;
        let mut depth = 1usize;
        while let Some(c) = self.peek(0) {
            match c {
                '\\' => self.i += 1,
                '\'' => {
                    self.i += 1;
                    while self.peek(0).is_some_and(|c| c != '\'') {
                        self.i += 1;
                    }
                }
                '"' => {
                    self.i += 1;
                    while let Some(d) = self.peek(0).filter(|c| *c != '"') {
                        self.i += if d == '\\' { 2 } else { 1 };
                    }
                }
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        let inner: String = self.s[start..self.i].iter().collect();
                        self.i += 1;
                        return inner;
                    }
                }
                _ => {}
            }
            self.i = (self.i + 1).min(self.s.len());
        }
        self.s[start.min(self.s.len())..].iter().collect()
    }

    /// After a backtick: the inner text up to the closing one, `\`` unescaped.
    fn backticks(&mut self) -> String {
        let mut inner = String::new();
        while let Some(c) = self.peek(0) {
            self.i += 1;
            match c {
                '`' => break,
                '\\' => {
                    if let Some(e) = self.peek(0) {
                        self.i += 1;
                        if !matches!(e, '`' | '\\' | '$') {
                            inner.push('\\');
                        }
                        inner.push(e);
                    }
                }
                _ => inner.push(c),
            }
        }
        inner
    }
}

/// `${…}`'s inside: a name, maybe with a default.
fn braced(inner: &str) -> Part {
    let name: String = inner
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let rest = &inner[name.len()..];
    let default = rest
        .strip_prefix(":-")
        .or_else(|| rest.strip_prefix('-'))
        .map(str::to_string);
    let name = if rest.is_empty() || default.is_some() {
        name
    } else {
        // `${#X}`, `${X/a/b}` and the like: a value splice cannot know.
        format!("{name}{rest}")
    };
    Part::Param { name, default }
}

/// The words of an unquoted heredoc body: its substitutions run.
pub fn heredoc_parts(body: &str) -> Vec<Part> {
    let mut lx = Lexer::new(body);
    let mut parts = Vec::new();
    lx.double_quoted(&mut parts, false);
    parts
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
            if let Item::Pipeline(cmds) = item {
                if let Some(c) = cmds.last_mut() {
                    return c.heredocs.push(h);
                }
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
