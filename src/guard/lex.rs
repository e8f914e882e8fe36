//! The shell parser's lexer ([`super::shell`]): characters to words, operators,
//! redirections and heredoc bodies. Iterative, so no nesting can overflow the stack.

use super::shell::{Heredoc, Part, Word};

/// A token of the lexer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Tok {
    Word(Word, String),
    Op(&'static str),
    Redir(Option<u32>, &'static str),
    Newline,
}

/// Longest first, so `&>` is not read as `&`.
pub(super) const OPS: &[&str] = &[
    "&>>", "&>", "&&", "||", ";;", "|&", ";", "&", "|", "(", ")", "<<<", "<<-", "<<", ">>", ">|",
    "<>", "<&", ">&", "<", ">",
];

/// The lexer's state: the input, where it is, heredocs waiting for their bodies, the tokens.
pub(super) struct Lexer {
    s: Vec<char>,
    i: usize,
    /// Heredocs announced on the current line: (delimiter, strip tabs, quoted).
    pending: Vec<(String, bool, bool)>,
    bodies: Vec<Heredoc>,
    out: Vec<Tok>,
}

impl Lexer {
    pub(super) fn new(src: &str) -> Lexer {
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

    pub(super) fn run(mut self) -> Vec<Tok> {
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
            return self.word();
        }
        if let Some(op) = OPS.iter().find(|op| self.starts(op)) {
            self.i += op.chars().count();
            return self.operator(None, op);
        }
        self.word()
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
            self.word();
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
    fn word(&mut self) {
        let start = self.i;
        let mut parts: Vec<Part> = Vec::new();
        let mut lit = String::new();
        if self.peek(0) == Some('~') {
            self.tilde(&mut parts, &mut lit);
        }
        while let Some(c) = self.peek(0) {
            if matches!(c, '<' | '>') && self.peek(1) == Some('(') {
                flush(&mut lit, &mut parts);
                self.i += 2;
                parts.push(Part::ProcSubst(self.until_paren()));
                continue;
            }
            if " \t\r\n;&|()<>".contains(c) {
                if matches!(c, '<' | '>')
                    && parts.is_empty()
                    && let Ok(fd) = lit.parse::<u32>()
                    && let Some(op) = OPS.iter().find(|op| self.starts(op))
                {
                    self.i += op.chars().count();
                    return self.operator(Some(fd), op);
                }
                break;
            }
            self.word_char(c, &mut parts, &mut lit);
        }
        flush(&mut lit, &mut parts);
        let raw: String = self.s[start..self.i].iter().collect();
        self.out.push(Tok::Word(Word { parts }, raw));
    }

    /// A leading `~` or `~user`: a tilde when a `/` or the word's end follows.
    fn tilde(&mut self, parts: &mut Vec<Part>, lit: &mut String) {
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

    /// One character of a word outside quotes (a quote or `$` reads what it opens).
    fn word_char(&mut self, c: char, parts: &mut Vec<Part>, lit: &mut String) {
        if matches!(c, '\\' | '\'' | '"' | '`' | '$') {
            flush(lit, parts);
        }
        match c {
            '\\' => {
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
                self.i += 1;
                self.double_quoted(parts, true);
            }
            '`' => {
                self.i += 1;
                parts.push(Part::Subst(self.backticks()));
            }
            '$' => self.dollar(parts, false),
            _ => {
                lit.push(c);
                self.i += 1;
            }
        }
    }

    /// Inside `"…"` (or an unquoted heredoc body when `closing` is false): text, `$` forms,
    /// backticks; backslash escapes only `$ \` " \n`.
    pub(super) fn double_quoted(&mut self, parts: &mut Vec<Part>, closing: bool) {
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

/// Close the literal text read so far into a part.
fn flush(lit: &mut String, parts: &mut Vec<Part>) {
    if !lit.is_empty() {
        parts.push(Part::Lit(std::mem::take(lit)));
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
