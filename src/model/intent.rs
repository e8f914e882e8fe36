//! The request's intent, as later stages receive it (`{{intent}}`, `docs/plan.md` "Intent").
//!
//! A campaign's or a lone task's request is kept whole on its bead (`description`); its steps'
//! prompts get a bounded intent instead of a cut-off copy. With `[plan] distiller` configured,
//! the distiller's answer is recorded on the root bead when the request is given to splice
//! (`pipeline.intent`, [`Intent`]). Without one — or where the distiller failed — the intent
//! is [`cut`], seed 000's deterministic rule: whitespace collapsed, at most [`CUT_CHARS`]
//! characters.

use serde::{Deserialize, Serialize};

/// The most characters the deterministic cut keeps (seed 000's rule: 320 code points; a
/// longer request keeps its first 317, trailing space trimmed, and `...`).
pub const CUT_CHARS: usize = 320;

/// The most bytes a distiller's intent may hold on the bead and in a prompt.
pub const DISTILLED_CAP: usize = 1200;

/// What the cut of a request without text reads as.
pub const EMPTY: &str = "(the request has no text)";

/// A distilled intent, recorded on the request's root bead.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Intent {
    /// The intent itself: printable, at most [`DISTILLED_CAP`] bytes.
    pub text: String,
    /// The distiller's program (`[plan] distiller`'s first word).
    pub by: String,
    /// When it was distilled.
    pub at: String,
}

/// Seed 000's deterministic distillation of `request`: runs of whitespace become one space;
/// over [`CUT_CHARS`] characters, the first 317, trailing space trimmed, then `...`.
pub fn cut(request: &str) -> String {
    let collapsed = request.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() {
        return EMPTY.to_string();
    }
    if collapsed.chars().count() <= CUT_CHARS {
        return collapsed;
    }
    let kept: String = collapsed.chars().take(CUT_CHARS - 3).collect();
    format!("{}...", kept.trim_end())
}

/// A distiller's answer as it is recorded: control characters escaped (it is read by agents
/// and shown on terminals), trimmed, held to [`DISTILLED_CAP`] bytes at a character
/// boundary. `None` when nothing is left.
pub fn bounded(answer: &str) -> Option<String> {
    let text = crate::model::printable::printable_message(answer.trim());
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut end = text.len().min(DISTILLED_CAP);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(text[..end].trim_end().to_string())
}

/// Whether a recorded intent can stand (a hand-edited bead may carry anything).
pub fn valid(i: &Intent) -> bool {
    !i.text.trim().is_empty() && i.text.len() <= DISTILLED_CAP
}

/// The intent the steps under `root` receive: its recorded one, else the cut of its request
/// (the description, or the title when it has none).
pub fn of(recorded: Option<&Intent>, title: &str, description: &str) -> String {
    if let Some(i) = recorded.filter(|i| valid(i)) {
        return i.text.clone();
    }
    match description.trim().is_empty() {
        true => cut(title),
        false => cut(description),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cut_collapses_whitespace_and_keeps_320_characters() {
        assert_eq!(cut("  Add\n\n a   greeting\t"), "Add a greeting");
        assert_eq!(cut(" \n "), EMPTY);
        let exact = "é".repeat(CUT_CHARS);
        assert_eq!(cut(&exact), exact, "320 characters stay whole");
        let long = "word ".repeat(100);
        let out = cut(&long);
        assert_eq!(out.chars().count(), CUT_CHARS, "{out}");
        assert!(out.ends_with("wo..."), "{out}");
        // The 317th character is a space: it is trimmed before the marker.
        let spaced = format!("{} {}", "a".repeat(316), "b".repeat(100));
        assert_eq!(cut(&spaced), format!("{}...", "a".repeat(316)));
        let wide = "é".repeat(400);
        assert_eq!(cut(&wide), format!("{}...", "é".repeat(317)));
    }

    #[test]
    fn a_distillers_answer_is_escaped_trimmed_and_bounded() {
        assert_eq!(bounded("  \n "), None);
        assert_eq!(bounded(" Greet users.\n").as_deref(), Some("Greet users."));
        let esc = bounded("a\u{1b}[2Jb").unwrap();
        assert!(!esc.contains('\u{1b}'), "{esc:?}");
        let big = bounded(&"é".repeat(2000)).unwrap();
        assert!(big.len() <= DISTILLED_CAP && big.starts_with('é'));
    }

    #[test]
    fn the_recorded_intent_wins_over_the_cut_unless_it_cannot_stand() {
        let rec = Intent {
            text: "Greet users by name.".into(),
            by: "distill".into(),
            at: "t".into(),
        };
        assert_eq!(of(Some(&rec), "T", "long request"), "Greet users by name.");
        let empty = Intent {
            text: " ".into(),
            ..rec.clone()
        };
        assert_eq!(of(Some(&empty), "T", "the request"), "the request");
        assert_eq!(of(None, "Title only", ""), "Title only");
    }
}
