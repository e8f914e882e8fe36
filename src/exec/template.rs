//! `{{variable}}` substitution for argv templates (and, through [`substitute`], for prompt
//! templates).
//!
//! Argv variables: `{{bead}}`, `{{step}}`, `{{attempt}}`, `{{worktree}}`, `{{prompt}}`,
//! `{{prompt_file}}`, `{{holder}}`, `{{run}}`, `{{model}}` (the step's `[agent.steps.<step>]
//! model`, else `[agent] model`; naming it with neither set is an error). Spaces inside the braces are allowed
//! (`{{ bead }}`). An unknown variable, or a `{{` without its `}}`, is an error naming it: a
//! template never silently renders an empty string.
//!
//! For a prompt step ([`command_argv`] with a prompt), the rendered prompt is passed as the last
//! argument unless the template names `{{prompt}}` or `{{prompt_file}}`; `{{prompt_file}}` is a
//! file under the run directory holding the prompt, written before the command starts.

use std::borrow::Cow;
use std::path::Path;

use crate::error::{Error, Result};
use crate::store::atomic;

/// Replace every `{{name}}` in `text` with `lookup(name)`. `None` from `lookup` is an error
/// naming the variable and `what` (where the template came from).
pub fn substitute<'v>(
    text: &str,
    what: &str,
    mut lookup: impl FnMut(&str) -> Option<Cow<'v, str>>,
) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            return Err(Error::Invalid(format!(
                "{what}: `{{{{` without a closing `}}}}`"
            )));
        };
        let name = after[..close].trim();
        match lookup(name) {
            Some(value) => out.push_str(&value),
            None => {
                return Err(Error::Invalid(format!(
                    "{what}: unknown template variable `{{{{{name}}}}}`"
                )));
            }
        }
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The variables named in `text` (in order, with repeats), or the error [`substitute`] gives.
pub fn names(text: &str, what: &str) -> Result<Vec<String>> {
    let mut found = Vec::new();
    substitute(text, what, |n| {
        found.push(n.to_string());
        Some(Cow::Borrowed(""))
    })?;
    Ok(found)
}

/// What an argv template may refer to.
#[derive(Clone, Debug)]
pub struct ArgvVars<'a> {
    pub bead: &'a str,
    pub step: &'a str,
    pub attempt: u32,
    pub worktree: &'a Path,
    pub holder: &'a str,
    pub run: &'a str,
    /// The step's model, for `{{model}}`.
    pub model: Option<&'a str>,
}

/// Render an argv template. `prompt` is the rendered prompt of a prompt step (`None` for an
/// argv step, where naming `{{prompt}}` or `{{prompt_file}}` is an error); `prompt_file` is
/// where the prompt is written when the template names `{{prompt_file}}`.
pub fn command_argv(
    template: &[String],
    vars: &ArgvVars,
    prompt: Option<&str>,
    prompt_file: &Path,
) -> Result<Vec<String>> {
    if template.is_empty() {
        return Err(Error::Invalid(format!(
            "step {}: the command is an empty argv",
            vars.step
        )));
    }
    let mut named = Vec::new();
    for (i, arg) in template.iter().enumerate() {
        named.extend(names(arg, &format!("argv[{i}] {arg:?}"))?);
    }
    let names_prompt = named.iter().any(|n| n == "prompt");
    let names_file = named.iter().any(|n| n == "prompt_file");
    if vars.model.is_none() && named.iter().any(|n| n == "model") {
        return Err(Error::Invalid(format!(
            "step {}: the command names {{{{model}}}} but no model is set: set \
             `[agent.steps.{}] model` or `[agent] model` in config.toml",
            vars.step, vars.step
        )));
    }
    if prompt.is_none() && (names_prompt || names_file) {
        return Err(Error::Invalid(format!(
            "step {}: the argv names {{{{prompt}}}} or {{{{prompt_file}}}} but the step has no \
             prompt (declare `run: {{\"prompt\": …}}` to use the configured agent)",
            vars.step
        )));
    }
    if let (Some(text), true) = (prompt, names_file) {
        if let Some(dir) = prompt_file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        atomic::replace_file(prompt_file, text.as_bytes())?;
    }
    let attempt = vars.attempt.to_string();
    let worktree = vars.worktree.to_string_lossy();
    let file = prompt_file.to_string_lossy();
    let mut argv = Vec::with_capacity(template.len() + 1);
    for (i, arg) in template.iter().enumerate() {
        let what = format!("argv[{i}] {arg:?}");
        argv.push(substitute(arg, &what, |name| {
            Some(Cow::Borrowed(match name {
                "bead" => vars.bead,
                "step" => vars.step,
                "attempt" => &attempt,
                "worktree" => &worktree,
                "holder" => vars.holder,
                "run" => vars.run,
                "prompt" => prompt?,
                "prompt_file" => &file,
                "model" => vars.model?,
                _ => return None,
            }))
        })?);
    }
    if let (Some(text), false, false) = (prompt, names_prompt, names_file) {
        argv.push(text.to_string());
    }
    Ok(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(wt: &Path) -> ArgvVars<'_> {
        ArgvVars {
            bead: "sp-1",
            step: "implement",
            attempt: 2,
            worktree: wt,
            holder: "run-7",
            run: "r1",
            model: None,
        }
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn renders_every_variable() {
        let wt = Path::new("/w/sp-1");
        let t = s(&[
            "x",
            "{{bead}}:{{ step }}:{{attempt}}",
            "{{worktree}}",
            "{{holder}}/{{run}}",
        ]);
        let got = command_argv(&t, &vars(wt), None, Path::new("/p")).unwrap();
        assert_eq!(got, s(&["x", "sp-1:implement:2", "/w/sp-1", "run-7/r1"]));
    }

    #[test]
    fn the_model_is_rendered_and_a_missing_one_named() {
        let wt = Path::new("/w");
        let t = s(&["a", "--model={{model}}"]);
        let with = ArgvVars {
            model: Some("opus"),
            ..vars(wt)
        };
        let got = command_argv(&t, &with, None, Path::new("/p")).unwrap();
        assert_eq!(got, s(&["a", "--model=opus"]));
        let err = command_argv(&t, &vars(wt), None, Path::new("/p")).unwrap_err();
        assert!(
            err.to_string().contains("[agent.steps.implement] model"),
            "{err}"
        );
    }

    #[test]
    fn unknown_variable_is_an_error_naming_it() {
        let wt = Path::new("/w");
        let t = s(&["x", "--model={{modle}}"]);
        let err = command_argv(&t, &vars(wt), None, Path::new("/p")).unwrap_err();
        assert!(err.to_string().contains("{{modle}}"), "{err}");
        let err = command_argv(&s(&["x {{bead"]), &vars(wt), None, Path::new("/p")).unwrap_err();
        assert!(err.to_string().contains("closing"), "{err}");
    }

    #[test]
    fn prompt_is_appended_unless_named() {
        let wt = Path::new("/w");
        let got = command_argv(
            &s(&["claude", "-p"]),
            &vars(wt),
            Some("do it"),
            Path::new("/p"),
        );
        assert_eq!(got.unwrap(), s(&["claude", "-p", "do it"]));
        let t = s(&["agent", "--prompt={{prompt}}", "--x"]);
        let got = command_argv(&t, &vars(wt), Some("do it"), Path::new("/p")).unwrap();
        assert_eq!(got, s(&["agent", "--prompt=do it", "--x"]));
    }

    #[test]
    fn prompt_file_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("runs/r1/sp-1-implement-2.prompt.md");
        let t = s(&["agent", "--file", "{{prompt_file}}"]);
        let got = command_argv(&t, &vars(dir.path()), Some("the prompt"), &file).unwrap();
        assert_eq!(got[2], file.to_string_lossy());
        assert_eq!(got.len(), 3);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "the prompt");
    }

    #[test]
    fn prompt_variables_need_a_prompt_step() {
        let wt = Path::new("/w");
        let err = command_argv(&s(&["a", "{{prompt}}"]), &vars(wt), None, Path::new("/p"));
        assert!(err.is_err());
        assert!(command_argv(&[], &vars(wt), None, Path::new("/p")).is_err());
    }

    #[test]
    fn substitute_passes_plain_text_through() {
        let out = substitute("no vars { } here", "t", |_| None).unwrap();
        assert_eq!(out, "no vars { } here");
    }
}
