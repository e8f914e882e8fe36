//! `splice` invocations from a dispatched session: which verb a command line names, and whether
//! its class lets a dispatch run it. The class is the writer's table
//! ([`Verb::actor`](crate::transition::authority::Verb::actor)), never a list of the guard's own:
//! a verb added to the table is judged here the day it is added.

use super::Context;
use crate::transition::authority::{Actor, Verb};

/// A dispatched session runs `splice WORDS…`: the denial, if its verb is a person's or the
/// runner's.
pub(super) fn judge(words: &[String], ctx: &Context) -> Option<String> {
    ctx.dispatch.as_ref()?;
    let verb = verb_of(words)?;
    let shown = match is_transition(words) {
        true => format!("splice transition {}", verb.name()),
        false => format!("splice {}", verb.name()),
    };
    let hint = agent_hint(ctx);
    match verb.actor() {
        Actor::Person => Some(format!(
            "splice guard: `{shown}` is a person's verb; a dispatched session cannot run it (splice's \
             writer refuses it too). Finish your step and {hint}; a person decides the rest."
        )),
        Actor::Runner => Some(format!(
            "splice guard: `{shown}` is the runner's verb; a dispatched session cannot run it \
             (splice's writer refuses it too): the runner records it from your proposal and your \
             exit. {hint} (say there if you are stuck), then end."
        )),
        Actor::Agent | Actor::ReadOnly => None,
    }
}

/// What a dispatch does instead of writing state itself.
pub(super) fn agent_hint(ctx: &Context) -> String {
    let bead = ctx
        .dispatch
        .as_ref()
        .and_then(|d| d.bead.clone())
        .unwrap_or_else(|| "$SPLICE_BEAD".into());
    format!("propose with `splice transition propose --bead {bead} …` (or `split`)")
}

/// The command is `splice [--dir X] transition …`?
fn is_transition(words: &[String]) -> bool {
    positionals(words)
        .first()
        .is_some_and(|p| p == "transition")
}

/// The command's positional words up to the verb, global options skipped; `None` for a help
/// or version request (they only print).
fn positionals(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = words.iter();
    while let Some(w) = it.next() {
        if w == "--dir" {
            it.next();
        } else if !w.starts_with('-') {
            out.push(w.clone());
        }
    }
    out
}

/// The verb of the table a command line names, modes included (`release --clear`,
/// `pass --dry-run`).
fn verb_of(words: &[String]) -> Option<Verb> {
    if words
        .iter()
        .any(|w| matches!(w.as_str(), "-h" | "--help" | "-V" | "--version"))
    {
        return None;
    }
    let pos = positionals(words);
    let first = pos.first()?;
    let name = match (first.as_str(), pos.get(1)) {
        ("transition", Some(sub)) => sub.clone(),
        ("transition", None) => return None,
        (cmd, Some(sub)) if Verb::named(&format!("{cmd} {sub}")).is_some() => {
            format!("{cmd} {sub}")
        }
        (cmd, _) => cmd.to_string(),
    };
    let flag = |f: &str| words.iter().any(|w| w == f);
    let name = match name.as_str() {
        "release" if flag("--clear") => "release --clear".to_string(),
        "pass" if flag("--dry-run") => "pass --dry-run".to_string(),
        _ => name,
    };
    Verb::named(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verb(line: &str) -> Option<Verb> {
        let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        verb_of(&words)
    }

    #[test]
    fn the_verb_is_found_past_global_options_and_in_any_flag_order() {
        assert_eq!(verb("transition approve --bead x"), Some(Verb::Approve));
        assert_eq!(
            verb("--dir /r transition --dir=/r approve x"),
            Some(Verb::Approve)
        );
        assert_eq!(
            verb("transition release x --holder h --clear"),
            Some(Verb::ReleaseClear)
        );
        assert_eq!(
            verb("transition release --clear x"),
            Some(Verb::ReleaseClear)
        );
        assert_eq!(verb("transition release x"), Some(Verb::Release));
        assert_eq!(verb("pass --dry-run"), Some(Verb::PassDryRun));
        assert_eq!(verb("pass"), Some(Verb::Pass));
        assert_eq!(verb("init-task --title t"), Some(Verb::InitTask));
        assert_eq!(verb("transition approve --help"), None);
        assert_eq!(verb("status"), None);
        assert_eq!(verb("transition"), None);
        assert_eq!(verb("guard"), Some(Verb::Guard));
    }
}
