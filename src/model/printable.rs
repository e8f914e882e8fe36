//! Text read from files, made safe to put on a terminal. A bead file (one imported from a bd
//! export, one committed by someone else), its name and the journal may hold anything: an escape
//! sequence in them would drive the terminal, a newline would pass for a line of splice's own.
//! Text from them goes through one of these where it is formatted for a person (`docs/cli.md`);
//! splice's own words do not need to.

/// `text` safe to put on a terminal, on one line: control characters (an escape sequence, a
/// newline, a carriage return, a tab) written as Rust escapes (`\u{1b}`, `\n`), everything else
/// as is. For what is one line: a title, a status, an id, a path, a log's line.
pub fn printable(text: &str) -> String {
    escaped(text, |_| false)
}

/// A message made of lines (an error, a doctor's finding) safe to put on a terminal: as
/// [`printable`], but its line breaks and tabs are kept. A newline in what it embeds from a file
/// would still start a line: a path or an id goes through [`printable`] where the message is
/// formatted.
pub fn printable_message(text: &str) -> String {
    escaped(text, |c| c == '\n' || c == '\t')
}

/// `text` with its control characters but those `kept` escaped.
fn escaped(text: &str, kept: impl Fn(char) -> bool) -> String {
    let escape = |c: char| c.is_control() && !kept(c);
    if !text.chars().any(escape) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match escape(c) {
            true => out.extend(c.escape_default()),
            false => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{printable, printable_message};

    #[test]
    fn control_characters_are_escaped_and_a_message_keeps_its_lines() {
        let hostile = "t \u{1b}]0;x\u{7}\r\n\tz é";
        assert_eq!(printable(hostile), "t \\u{1b}]0;x\\u{7}\\r\\n\\tz é");
        assert_eq!(printable_message(hostile), "t \\u{1b}]0;x\\u{7}\\r\n\tz é");
        assert_eq!(printable("plain — text"), "plain — text");
        // Escaping escaped text changes nothing: a message escaped twice reads the same.
        assert_eq!(printable(&printable(hostile)), printable(hostile));
    }
}
