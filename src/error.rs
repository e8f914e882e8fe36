//! Library errors, categorised once for the exit code (DESIGN §5): a refusal (a precondition or
//! a floor said no, or a floor could not check) is 1, a machinery fault is 2.

use std::path::{Path, PathBuf};

pub use crate::refusal::Refusal;

#[derive(thiserror::Error, Debug)]
pub enum Error {
    /// A precondition or a floor said no, or a floor could not check. Nothing about the
    /// machinery is wrong. Printed as `refused: …` or `escalated: …`.
    #[error("{headline}: {0}", headline = .0.headline())]
    Refused(Refusal),
    /// An I/O error on a named file.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file that exists but cannot be understood.
    #[error("{}: {msg}", path.display())]
    BadFile { path: PathBuf, msg: String },
    /// Bad input on the command line or in a state file that is not one file's fault.
    #[error("{0}")]
    Invalid(String),
    /// A git operation failed.
    #[error("git: {0}")]
    Git(String),
    /// A bug in splice (e.g. a thread panicked); what it was doing is said.
    #[error("internal error (a bug in splice; please report it): {0}")]
    Internal(String),
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
