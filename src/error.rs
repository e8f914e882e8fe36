//! Library errors, categorised once for the exit code (DESIGN §5): a refusal (a precondition or
//! a floor said no, or a floor could not check) is 1, a machinery fault is 2.
//!
//! An error's text names files and embeds what they hold (a bead's claim, a record's field), and
//! a person reads it on a terminal: its `Display` escapes their control characters
//! ([`crate::model::printable`]), a path whole, the rest but for the line breaks of a message
//! of several lines.

use std::path::{Path, PathBuf};

use crate::model::printable::{printable, printable_message};

pub use crate::refusal::Refusal;

#[derive(thiserror::Error, Debug)]
pub enum Error {
    /// A precondition or a floor said no, or a floor could not check. Nothing about the
    /// machinery is wrong. Printed as `refused: …` or `escalated: …`.
    #[error("{headline}: {}", printable_message(&.0.to_string()), headline = .0.headline())]
    Refused(Refusal),
    /// An I/O error on a named file.
    #[error("{}: {}", shown(path), printable_message(&source.to_string()))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file that exists but cannot be understood.
    #[error("{}: {}", shown(path), printable_message(msg))]
    BadFile { path: PathBuf, msg: String },
    /// Bad input on the command line or in a state file that is not one file's fault.
    #[error("{}", printable_message(.0))]
    Invalid(String),
    /// A git operation failed.
    #[error("git: {}", printable_message(.0))]
    Git(String),
    /// A bug in splice (e.g. a thread panicked); what it was doing is said.
    #[error(
        "internal error (a bug in splice; please report it): {}",
        printable_message(.0)
    )]
    Internal(String),
}

/// A file's path as an error names it: on one line, escaped.
fn shown(path: &Path) -> String {
    printable(&path.display().to_string())
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Refused(_) => 1,
            _ => 2,
        }
    }

    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    pub fn bad_file(path: impl AsRef<Path>, msg: impl Into<String>) -> Error {
        Error::BadFile {
            path: path.as_ref().to_path_buf(),
            msg: msg.into(),
        }
    }

    /// The refusal, when this error is one.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Error::Refused(r) => Some(r),
            _ => None,
        }
    }
}

impl From<Refusal> for Error {
    fn from(r: Refusal) -> Self {
        Error::Refused(r)
    }
}

impl From<git2::Error> for Error {
    fn from(e: git2::Error) -> Self {
        Error::Git(e.message().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::{Error, Refusal};

    #[test]
    fn an_error_escapes_a_files_name_whole_and_a_message_but_its_lines() {
        let path = "beads/a\u{1b}[31m\nfake.json";
        let io = Error::io(path, std::io::Error::other("gone"));
        assert_eq!(io.to_string(), "beads/a\\u{1b}[31m\\nfake.json: gone");
        let bad = Error::bad_file(path, "unknown status `\u{1b}[2J`");
        assert_eq!(
            bad.to_string(),
            "beads/a\\u{1b}[31m\\nfake.json: unknown status `\\u{1b}[2J`"
        );
        let refused = Error::from(Refusal::ImportRefused {
            file: "i.jsonl".into(),
            count: 1,
            listed: "  line 1: \u{7}bell".into(),
        });
        assert_eq!(
            refused.to_string(),
            "refused: 1 record(s) of i.jsonl cannot be imported and --strict was given, so \
             nothing was imported:\n  line 1: \\u{7}bell"
        );
    }
}
