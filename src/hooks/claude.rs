//! Claude Code's side: the settings fragment that registers `splice guard` as a `PreToolUse`
//! hook, merged into a project's `.claude/settings.json` (`splice hooks install --claude`) or
//! written whole for one dispatch (`--settings FILE`, [`crate::exec::guard`]).
//!
//! Merging keeps every key and every hook the file already has; an entry that already runs a
//! splice's guard is updated in place, never doubled, so installing twice writes nothing the
//! second time. A file that is not a JSON object is refused, naming it, and left as it is.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};

use super::{Action, Binary, Installed, Write, read_existing};
use crate::error::{Error, Result};

/// Where a project's Claude Code settings are, under its working tree.
pub const SETTINGS_FILE: &str = ".claude/settings.json";

/// The tools the guard is asked about: every tool of Claude Code's that writes a file (`Write`,
/// `Edit`, `NotebookEdit`), runs a command (`Bash`) or moves the session into another git
/// worktree (`EnterWorktree`). `MultiEdit`, which Claude Code no longer has, is not asked for;
/// the guard still judges it when an old session sends it.
pub const MATCHER: &str = "Write|Edit|NotebookEdit|Bash|EnterWorktree";

/// The settings fragment ([`super::CLAUDE_SETTINGS`]) with its hook running `command`.
pub fn fragment(command: &str) -> Value {
    let mut v: Value = serde_json::from_str(super::CLAUDE_SETTINGS)
        .unwrap_or_else(|_| json!({"hooks": {"PreToolUse": [entry_value(command)]}}));
    if let Some(hook) = v.pointer_mut("/hooks/PreToolUse/0/hooks/0/command") {
        *hook = command.into();
    }
    v
}

/// The fragment's one `PreToolUse` entry, running `command`.
fn entry_value(command: &str) -> Value {
    json!({"matcher": MATCHER, "hooks": [{"type": "command", "command": command}]})
}

/// The splice program a hook command runs the guard with (`<program> guard`, the program's
/// file name `splice`), unquoted; `None` for any other command.
pub fn guard_program(command: &str) -> Option<String> {
    // The committed form checks for splice first (`…; splice guard`): the last command runs it.
    let last = command.rsplit("; ").next().unwrap_or(command);
    let program = last.trim().strip_suffix(" guard")?.trim();
    let unquoted = if let Some(inner) = program
        .strip_prefix('\'')
        .and_then(|p| p.strip_suffix('\''))
    {
        inner.replace(r"'\''", "'")
    } else if let Some(inner) = program.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
        inner.to_string()
    } else {
        program.to_string()
    };
    let named_splice = Path::new(&unquoted)
        .file_name()
        .is_some_and(|n| n == "splice");
    named_splice.then_some(unquoted)
}

/// The hook's command, when it is an object whose command runs a splice's guard.
fn guard_of(hook: &Value) -> Option<&str> {
    let command = hook.get("command")?.as_str()?;
    guard_program(command).map(|_| command)
}

/// Where, in `settings`, the first hook running a splice's guard is: (entry, hook) indices in
/// `hooks.PreToolUse`.
fn find_guard(settings: &Value) -> Option<(usize, usize)> {
    let entries = settings.pointer("/hooks/PreToolUse")?.as_array()?;
    entries.iter().enumerate().find_map(|(i, entry)| {
        let hooks = entry.get("hooks")?.as_array()?;
        let j = hooks.iter().position(|h| guard_of(h).is_some())?;
        Some((i, j))
    })
}

/// `settings` with the guard registered to run `command`: the existing registration updated
/// (its command; its matcher too when the entry holds nothing else), else a new entry
/// appended. The error says which part of the file is not the shape Claude Code reads.
pub fn merge(mut settings: Value, command: &str) -> Result<Value, &'static str> {
    // Make sure the path to the entries exists and has the shape Claude Code reads.
    settings
        .as_object_mut()
        .ok_or("is not a JSON object")?
        .entry("hooks")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or("`hooks` is not a JSON object")?
        .entry("PreToolUse")
        .or_insert_with(|| json!([]))
        .as_array()
        .ok_or("`hooks.PreToolUse` is not an array")?;
    match find_guard(&settings) {
        Some((i, j)) => {
            let entry = &mut settings["hooks"]["PreToolUse"][i];
            let alone = entry["hooks"].as_array().is_some_and(|h| h.len() == 1);
            entry["hooks"][j]["command"] = command.into();
            entry["hooks"][j]["type"] = "command".into();
            if alone {
                entry["matcher"] = MATCHER.into();
            }
        }
        None => {
            if let Some(pre) = settings["hooks"]["PreToolUse"].as_array_mut() {
                pre.push(entry_value(command));
            }
        }
    }
    Ok(settings)
}

/// Plan `splice hooks install --claude` for the working tree `root`.
pub(super) fn plan_install(root: &Path, splice: &Path) -> Result<(Installed, Option<Write>)> {
    let dir = root.join(".claude");
    if dir.exists() && !dir.is_dir() {
        return Err(Error::bad_file(
            &dir,
            "is not a directory; Claude Code reads its project settings from .claude/settings.json",
        ));
    }
    let path = root.join(SETTINGS_FILE);
    // The settings file is committed: it names splice as every clone finds it, on `PATH`.
    let _ = splice;
    let command = super::PORTABLE_GUARD.to_string();
    let existing = read_existing(&path)?;
    let before: Value = match &existing {
        None => json!({}),
        Some(bytes) => serde_json::from_slice(bytes).map_err(|e| {
            Error::bad_file(
                &path,
                format!(
                    "is not valid JSON ({e}); splice merges its hook into this file and leaves \
                     it untouched until it parses: fix it, then install again"
                ),
            )
        })?,
    };
    let after = merge(before.clone(), &command).map_err(|what| {
        Error::bad_file(
            &path,
            format!("{what}, as Claude Code settings are; it was left untouched"),
        )
    })?;
    let action = match &existing {
        None => Action::Created,
        Some(_) if after == before => Action::Unchanged,
        Some(_) => Action::Updated,
    };
    let write = (action != Action::Unchanged).then(|| Write {
        path: path.clone(),
        bytes: pretty(&after),
        mode: 0o644,
        keep_old_as: None,
    });
    let installed = Installed {
        hook: "claude",
        path,
        action,
        command,
        hooks_path_config: false,
        chained: None,
    };
    Ok((installed, write))
}

/// `value` as the pretty JSON splice writes, with a final newline.
pub fn pretty(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Is the guard registered in a project's Claude Code settings, and with which splice?
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// The settings file read.
    pub path: PathBuf,
    /// A `PreToolUse` hook runs a splice's guard.
    pub installed: bool,
    /// Its command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The tools its entry matches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The splice it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub splice: Option<Binary>,
    /// Why the file could not be read as settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Read `root`'s `.claude/settings.json`; never writes.
pub(super) fn status(root: &Path) -> Status {
    let path = root.join(SETTINGS_FILE);
    let mut status = Status {
        path: path.clone(),
        installed: false,
        command: None,
        matcher: None,
        splice: None,
        problem: None,
    };
    let settings: Value = match read_existing(&path) {
        Ok(None) => return status,
        Ok(Some(bytes)) => match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                status.problem = Some(format!("not valid JSON: {e}"));
                return status;
            }
        },
        Err(e) => {
            status.problem = Some(e.to_string());
            return status;
        }
    };
    if let Err(what) = merge(settings.clone(), "splice guard") {
        status.problem = Some(format!("{what}, as Claude Code settings are"));
        return status;
    }
    if let Some((i, j)) = find_guard(&settings) {
        let entry = &settings["hooks"]["PreToolUse"][i];
        let command = entry["hooks"][j]["command"].as_str().unwrap_or_default();
        status.installed = true;
        status.command = Some(command.to_string());
        status.matcher = entry["matcher"].as_str().map(str::to_string);
        status.splice = guard_program(command).map(|p| Binary::look_up(&p));
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_fragment_registers_the_bare_guard_for_writing_tools() {
        let v: Value = serde_json::from_str(super::super::CLAUDE_SETTINGS).unwrap();
        assert_eq!(v, fragment("splice guard"));
        assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], MATCHER);
        assert_eq!(
            fragment("/x/splice guard")["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            "/x/splice guard"
        );
    }

    #[test]
    fn a_guard_command_is_told_by_its_programs_name() {
        assert_eq!(guard_program("splice guard").as_deref(), Some("splice"));
        assert_eq!(
            guard_program("'/a b/splice' guard").as_deref(),
            Some("/a b/splice")
        );
        assert_eq!(
            guard_program("/usr/bin/splice guard").as_deref(),
            Some("/usr/bin/splice")
        );
        assert_eq!(
            guard_program(crate::hooks::PORTABLE_GUARD).as_deref(),
            Some("splice")
        );
        assert_eq!(guard_program("notsplice guard"), None);
        assert_eq!(guard_program("splice guardian"), None);
        assert_eq!(guard_program("echo hi"), None);
    }

    #[test]
    fn merging_keeps_what_is_there_and_never_doubles_the_guard() {
        let mine = json!({"model": "x", "hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}
        ], "Stop": []}});
        let once = merge(mine.clone(), "/a/splice guard").unwrap();
        assert_eq!(once["model"], "x");
        assert_eq!(once["hooks"]["Stop"], json!([]));
        assert_eq!(once["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        assert_eq!(
            once["hooks"]["PreToolUse"][0],
            mine["hooks"]["PreToolUse"][0]
        );
        let twice = merge(once.clone(), "/a/splice guard").unwrap();
        assert_eq!(twice, once);
        let moved = merge(once, "/b/splice guard").unwrap();
        assert_eq!(moved["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        assert_eq!(
            moved["hooks"]["PreToolUse"][1]["hooks"][0]["command"],
            "/b/splice guard"
        );
        assert!(merge(json!([]), "splice guard").is_err());
        assert!(merge(json!({"hooks": []}), "splice guard").is_err());
        assert!(merge(json!({"hooks": {"PreToolUse": {}}}), "splice guard").is_err());
    }
}
