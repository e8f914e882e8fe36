//! The memory sidecar (seed 000, "Context and local memory"): a small project memory bundle
//! for the code writer's and the test generator's prompts (`{{memory}}`, `docs/manifest.md`
//! "Project memory").
//!
//! The bundle holds the files the project keeps in `.splice/memory/*.md` (by name, at most
//! [`MAX_FILES`], each cut at [`FILE_CAP`] bytes) and the facts splice knows: the node's test
//! command (its plan's suite, else the detected one), the languages present in its worktree's
//! committed tree, and the root causes its step-back analyses found. The whole is held to
//! [`MEMORY_CAP`] bytes. It is read only for a prompt that names `{{memory}}` (the default
//! manifest's `implement` and `generate-tests`).
//!
//! Fail-soft: a memory file that cannot be read (a link, a directory, not UTF-8, too big,
//! unreadable) or facts that cannot be read are left out and named in a warning the run shows
//! in its progress; the dispatch goes on with the rest.

use std::path::Path;

use crate::exec::prompt::truncate;
use crate::model::Bead;
use crate::model::trajectory::Effect;
use crate::policy::verification;

/// The most bytes the whole bundle holds.
pub const MEMORY_CAP: usize = crate::exec::prompt::MEMORY_CAP;
/// The most bytes one memory file gives the bundle.
pub const FILE_CAP: usize = 800;
/// The most memory files read.
pub const MAX_FILES: usize = 8;
/// The most bytes of one memory file read from disk (a bigger one is refused, and warned of).
const READ_CAP: u64 = 64 * 1024;
/// The most root causes given, newest first.
const ROOT_CAUSES: usize = 3;
const CAUSE_CAP: usize = 300;

/// A bundle, and what could not go into it.
#[derive(Debug, Default, PartialEq)]
pub struct Bundle {
    pub text: String,
    pub warnings: Vec<String>,
}

/// The bundle for a dispatch on `bead` in `worktree`, from the store directory `state`.
pub fn bundle(state: &Path, worktree: &Path, bead: &Bead) -> Bundle {
    let mut out = Bundle::default();
    let mut parts = Vec::new();
    let files = memory_files(&state.join("memory"), &mut out.warnings);
    if !files.is_empty() {
        let mut text = String::from("From the project's memory (.splice/memory/):\n");
        for (name, body) in files {
            text.push_str(&format!("## {name}\n{}\n", truncate(body.trim(), FILE_CAP)));
        }
        parts.push(text);
    }
    parts.push(facts(worktree, bead, &mut out.warnings));
    out.text = truncate(parts.join("\n").trim_end(), MEMORY_CAP).into_owned();
    out
}

/// The `*.md` files of `dir`, by name, read without following links; what cannot be read is
/// warned of and left out. No directory, no files.
fn memory_files(dir: &Path, warnings: &mut Vec<String>) -> Vec<(String, String)> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            warnings.push(format!(
                "memory: {} could not be listed: {e}",
                dir.display()
            ));
            return Vec::new();
        }
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.ends_with(".md") && !n.starts_with('.'))
        .collect();
    names.sort();
    if names.len() > MAX_FILES {
        warnings.push(format!(
            "memory: {} holds {} files; the first {MAX_FILES} by name are given",
            dir.display(),
            names.len()
        ));
        names.truncate(MAX_FILES);
    }
    let mut out = Vec::new();
    for name in names {
        let path = dir.join(&name);
        match crate::safe_read::read_text(&path, READ_CAP) {
            Ok(text) => out.push((crate::model::printable::printable(&name), text)),
            Err(e) => warnings.push(format!("memory: left out {e}")),
        }
    }
    out
}

/// What splice knows of the node: its test command, the languages present, past root causes.
fn facts(worktree: &Path, bead: &Bead, warnings: &mut Vec<String>) -> String {
    let mut text = String::from("What splice knows of this project:\n");
    let files = match verification_files(worktree) {
        Ok(f) => Some(f),
        Err(why) => {
            warnings.push(format!(
                "memory: the worktree's files could not be read: {why}"
            ));
            None
        }
    };
    let test = bead
        .pipeline
        .suite_cmd
        .as_deref()
        .map(|s| format!("{s} (the plan's suite)"))
        .or_else(|| {
            let found = verification::test_command(files.as_ref()?)?;
            Some(format!("{} (from {})", found.argv.join(" "), found.because))
        });
    text.push_str(&format!(
        "- test command: {}\n",
        test.as_deref().unwrap_or("none detected")
    ));
    if let Some(files) = &files {
        let langs: Vec<&str> = verification::languages(files)
            .into_iter()
            .map(|l| l.name())
            .collect();
        text.push_str(&format!(
            "- languages: {}\n",
            match langs.is_empty() {
                true => "none detected".to_string(),
                false => langs.join(", "),
            }
        ));
    }
    let causes: Vec<String> = bead
        .pipeline
        .trajectory
        .iter()
        .rev()
        .filter_map(|i| match &i.effect {
            Some(Effect::SteppedBack { root_cause, .. }) => Some(format!(
                "  - {} (step {}, attempt {})",
                truncate(root_cause.trim(), CAUSE_CAP),
                i.step,
                i.attempt
            )),
            _ => None,
        })
        .take(ROOT_CAUSES)
        .collect();
    if !causes.is_empty() {
        text.push_str("- past failures' root causes, newest first:\n");
        text.push_str(&causes.join("\n"));
        text.push('\n');
    }
    text
}

fn verification_files(worktree: &Path) -> Result<verification::RepoFiles, String> {
    crate::driver::looping::verify::repo_files(worktree)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bead() -> Bead {
        Bead::new(
            "sp-1".into(),
            "T".into(),
            String::new(),
            "2026-01-01T00:00:00Z",
        )
    }

    #[test]
    fn memory_files_are_read_by_name_bounded_and_a_bad_one_is_left_out_and_warned_of() {
        let dir = tempfile::tempdir().unwrap();
        let mem = dir.path().join("memory");
        std::fs::create_dir_all(&mem).unwrap();
        std::fs::write(mem.join("b.md"), "second").unwrap();
        std::fs::write(mem.join("a.md"), format!("first {}", "x".repeat(5000))).unwrap();
        std::fs::write(mem.join("notes.txt"), "not memory").unwrap();
        std::fs::write(mem.join("bad.md"), [0xff, 0xfe]).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", mem.join("link.md")).unwrap();
        let b = bundle(dir.path(), &dir.path().join("no-worktree"), &bead());
        let a = b.text.find("## a.md").expect("a.md given");
        let second = b.text.find("## b.md").expect("b.md given");
        assert!(a < second, "by name: {}", b.text);
        assert!(!b.text.contains("not memory"), "only *.md");
        assert!(!b.text.contains("root:"), "no link followed: {}", b.text);
        assert!(b.text.len() <= MEMORY_CAP, "{}", b.text.len());
        assert!(
            b.text.contains("bytes cut"),
            "a big file is cut: {}",
            b.text
        );
        let warned = b.warnings.join("\n");
        assert!(
            warned.contains("bad.md") && warned.contains("link.md"),
            "{warned}"
        );
        assert!(warned.contains("worktree"), "{warned}");
        assert!(
            b.text.contains("- test command: none detected"),
            "{}",
            b.text
        );
    }

    #[test]
    fn no_memory_directory_is_no_warning() {
        let dir = tempfile::tempdir().unwrap();
        let mut warnings = Vec::new();
        assert!(memory_files(&dir.path().join("memory"), &mut warnings).is_empty());
        assert!(warnings.is_empty());
    }
}
