//! A dispatched Claude Code agent is guarded by default: its argv gets `--settings FILE` right
//! after the program, and `FILE` (beside the dispatch's log) registers `<splice> guard` as its
//! `PreToolUse` hook, the same fragment `splice hooks install --claude` merges into a project
//! ([`crate::hooks::claude`]). Claude Code merges hooks from every settings source, so the
//! project's own hooks still run.
//!
//! Only a command whose program's file name is `claude` is changed: other agents have no
//! `--settings` flag, and can call `splice guard` from their own hook systems where they have
//! one (`docs/agents.md`). `[guard] dispatch = false` in `config.toml` switches this off.

use std::path::Path;

use crate::error::{Error, Result};
use crate::hooks;
use crate::store::atomic;

/// Is `program` Claude Code (a path or a bare name whose file name is `claude`)?
pub fn is_claude(program: &str) -> bool {
    Path::new(program)
        .file_name()
        .is_some_and(|n| n == "claude")
}

/// `argv` with the guard registered when its program is Claude Code: the settings file written
/// (atomically) at `settings_file`, naming `splice` as the guard's binary, and
/// `--settings <settings_file>` put right after the program. Any other argv comes back as it is,
/// and nothing is written.
pub fn guard_argv(argv: Vec<String>, settings_file: &Path, splice: &Path) -> Result<Vec<String>> {
    if !argv.first().is_some_and(|p| is_claude(p)) {
        return Ok(argv);
    }
    let settings = hooks::claude::fragment(&hooks::guard_command(splice));
    if let Some(dir) = settings_file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    atomic::replace_file(settings_file, &hooks::claude::pretty(&settings))?;
    let mut out = Vec::with_capacity(argv.len() + 2);
    let mut rest = argv.into_iter();
    out.extend(rest.next());
    out.push("--settings".to_string());
    out.push(settings_file.to_string_lossy().into_owned());
    out.extend(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_claude_gets_the_settings_right_after_the_program() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("run").join("b-s-1.settings.json");
        let splice = Path::new("/opt/splice");
        let other = strings(&["codex", "exec", "p"]);
        assert_eq!(guard_argv(other.clone(), &file, splice).unwrap(), other);
        assert!(!file.exists(), "nothing is written for another agent");

        let argv = guard_argv(strings(&["/usr/bin/claude", "-p", "p"]), &file, splice).unwrap();
        let f = file.to_string_lossy().into_owned();
        assert_eq!(
            argv,
            strings(&["/usr/bin/claude", "--settings", &f, "-p", "p"])
        );
        let written: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(written, hooks::claude::fragment("/opt/splice guard"));
        assert!(!is_claude("claude-wrapper") && is_claude("claude"));
    }
}
