//! Gherkin scenarios and scenario ids, shared by the PRP, spec and coverage floors.
//!
//! A scenario's id is the first token after `Scenario:` / `Scenario Outline:` when that token
//! looks like an id (`S1`, `S12`, `AUTH-3`), else an id-like tag on the tag line just before it
//! (`@S1`). Ids match case-insensitively and only whole (DESIGN §6).

/// One `Scenario:` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// 1-based line number of the `Scenario:` line.
    pub line: usize,
    pub id: Option<String>,
    pub title: String,
}

const KEYWORDS: &[&str] = &["Scenario Outline:", "Scenario Template:", "Scenario:"];

/// Does `token` look like a scenario id: letters, optional `-`-joined letter groups, an optional
/// `-`, then digits (`S1`, `s12`, `AUTH-3`, `UI-LOGIN-12`)?
pub fn looks_like_id(token: &str) -> bool {
    let digits = token.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits == token.len() {
        return false;
    }
    let head = &token[..token.len() - digits];
    let head = head.strip_suffix('-').unwrap_or(head);
    !head.is_empty()
        && !head.starts_with('-')
        && !head.ends_with('-')
        && !head.contains("--")
        && head.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-')
}

/// Strip punctuation a writer may put around an id: `[S1]`, `S1:`, `(S1)`, `S1,`, `**S1**`.
fn clean_token(token: &str) -> &str {
    token
        .trim_start_matches(['[', '(', '*', '`', '"', '\''])
        .trim_end_matches([']', ')', ':', ',', '.', ';', '*', '`', '"', '\''])
}

/// The scenario keyword's remainder on `line` (markdown list, quote and heading markers allowed
/// before it), or `None` when the line declares no scenario.
fn after_keyword(line: &str) -> Option<&str> {
    let trimmed = line
        .trim_start()
        .trim_start_matches(['#', '>', '-', '*'])
        .trim_start();
    KEYWORDS
        .iter()
        .find_map(|k| trimmed.strip_prefix(k))
        .map(str::trim)
}

/// The id-like tag on a tag line (`@smoke @S1`), if any.
fn tag_id(line: &str) -> Option<String> {
    let trimmed = line.trim();
    if !trimmed.starts_with('@') {
        return None;
    }
    trimmed
        .split_whitespace()
        .filter_map(|t| t.strip_prefix('@'))
        .map(clean_token)
        .find(|t| looks_like_id(t))
        .map(str::to_string)
}

/// Every scenario in `text`, fenced code blocks included (PRPs keep Gherkin in fences).
pub fn scenarios(text: &str) -> Vec<Scenario> {
    let mut out = Vec::new();
    let mut previous: Option<&str> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(rest) = after_keyword(line) {
            let first = rest.split_whitespace().next().map(clean_token);
            let id = first
                .filter(|t| looks_like_id(t))
                .map(str::to_string)
                .or_else(|| previous.and_then(tag_id));
            out.push(Scenario {
                line: i + 1,
                id,
                title: rest.to_string(),
            });
        }
        if !line.trim().is_empty() {
            previous = Some(line);
        }
    }
    out
}

/// Does `text` carry `id` whole: case-insensitively, with no letter or digit on either side?
/// `fn s1_adds` carries S1 (`_` delimits); `fn s10_edge` does not.
pub fn carries_id(text: &str, id: &str) -> bool {
    if id.is_empty() {
        return false;
    }
    let hay = text.to_ascii_lowercase();
    let needle = id.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = hay[from..].find(&needle) {
        let start = from + found;
        let end = start + needle.len();
        let before_ok = !hay[..start]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric);
        let after_ok = !hay[end..].chars().next().is_some_and(char::is_alphanumeric);
        if before_ok && after_ok {
            return true;
        }
        // Step past this match's first char (ids are ASCII, so one byte).
        from = start + 1;
        while from < hay.len() && !hay.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_from_titles_and_tags() {
        let text = "# PRP\n```gherkin\nScenario: S1 adds\n  Given x\n\n@smoke @AUTH-3\nScenario: logs in\nScenario Outline: [S12] table\n### Scenario: plain title\n```\n";
        let got = scenarios(text);
        let ids: Vec<Option<&str>> = got.iter().map(|s| s.id.as_deref()).collect();
        assert_eq!(ids, vec![Some("S1"), Some("AUTH-3"), Some("S12"), None]);
        assert_eq!(got[0].line, 3);
    }

    #[test]
    fn id_shapes() {
        for ok in ["S1", "s12", "AUTH-3", "UI-LOGIN-12", "AUTH3"] {
            assert!(looks_like_id(ok), "{ok}");
        }
        for bad in ["1", "S", "Adds", "-S1", "S1a", "A--1", "", "S_1"] {
            assert!(!looks_like_id(bad), "{bad}");
        }
    }

    #[test]
    fn whole_id_matching() {
        assert!(carries_id("fn s1_adds_two_numbers()", "S1"));
        assert!(!carries_id("fn s10_edge()", "S1"));
        assert!(!carries_id("fn xs1()", "S1"));
        assert!(carries_id("it('AUTH-3: logs in')", "auth-3"));
        assert!(!carries_id("AUTH-30", "AUTH-3"));
        assert!(carries_id("s10 and then S1", "S1"));
        assert!(!carries_id("é S1é", "S1"));
        assert!(!carries_id("anything", ""));
    }
}
