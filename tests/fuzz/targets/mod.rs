//! The fuzz targets: one function of bytes per parser of outside input (and the store's reading,
//! writing and recovery), each checking a property beyond "no panic" where one exists. A target
//! panics on a crash or a broken property and returns whether the input got past the parser.
//!
//! Shared by the stable driver (`tests/fuzz.rs`) and the libFuzzer crate (`fuzz/`), so this
//! module uses nothing of either.
//!
//! Inputs with several parts (a template and its values, say) separate the parts with a NUL
//! byte, so corpus files stay readable text.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

pub mod exec;
pub mod floors;
pub mod guard;
pub mod interop;
pub mod journal;
pub mod model;
pub mod progress;
pub mod proposals;
pub mod store;
pub mod verification;

/// One fuzz target.
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]) -> bool,
    /// The corpus directory under `tests/fuzz/corpus/` (targets reading one format share one).
    pub corpus: &'static str,
    /// Cases in the default (CI) budget: one to three seconds in a debug build.
    pub cases: u64,
    /// What to mutate structurally, beside the bytes.
    pub format: Format,
    /// Tokens worth inserting, beyond the generic ones.
    pub dict: &'static [&'static str],
    /// Seeds read from the repository at run time (e.g. `snapshots/*.json`), beside the
    /// checked-in corpus.
    pub seeds: fn() -> Vec<(String, Vec<u8>)>,
}

/// The shape of a target's input, for structure-aware mutation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    /// One JSON document.
    Json,
    /// One JSON value per line (the journal, an agent's stream-json log).
    JsonLines,
}

/// Every target, in the order `tests/fuzz.rs` runs them.
pub const ALL: &[&Target] = &[
    &store::BEAD,
    &store::BEAD_WRITE,
    &journal::JOURNAL_TAIL,
    &journal::JOURNAL_COMMITTED,
    &journal::RECOVERY,
    &model::MANIFEST,
    &model::CONFIG,
    &model::DECIDE,
    &floors::SPEC,
    &floors::REVIEW,
    &floors::HEADINGS,
    &floors::JUNIT,
    &floors::LIBTEST,
    &verification::TEST_OUTPUT,
    &floors::SARIF,
    &verification::ANALYZER_OUTPUT,
    &floors::GHERKIN,
    &floors::COVERAGE,
    &floors::FORGE,
    &exec::TEMPLATE,
    &exec::PROMPT,
    &exec::CHILDREN,
    &exec::USAGE,
    &progress::PROGRESS,
    &guard::GUARD,
    &interop::BD_IMPORT,
    &interop::BD_SYNC,
    &proposals::PROPOSALS,
];

/// The target called `name`.
pub fn by_name(name: &str) -> &'static Target {
    ALL.iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no fuzz target {name:?}"))
}

/// No seeds beyond the checked-in corpus.
pub fn no_seeds() -> Vec<(String, Vec<u8>)> {
    Vec::new()
}

/// The repository root (from the libFuzzer crate too, which lives in `fuzz/`).
pub fn repo_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if here.join("snapshots").is_dir() {
        here
    } else {
        here.parent().map(Path::to_path_buf).unwrap_or(here)
    }
}

/// A target's checked-in corpus directory.
pub fn corpus_dir(name: &str) -> PathBuf {
    repo_root().join("tests/fuzz/corpus").join(name)
}

/// Every file of `dir` whose name `keep` accepts, sorted, as (path, bytes).
pub fn files_in(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().is_file())
                .filter(|e| keep(&e.file_name().to_string_lossy()))
                .map(|e| {
                    let bytes = std::fs::read(e.path()).expect("a corpus file reads");
                    (e.path().display().to_string(), bytes)
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The input as text, as splice reads a file it expects to be UTF-8 (`read_to_string` refuses
/// anything else, so those inputs never reach the parser).
pub fn utf8(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// The NUL-separated parts of an input, lossily decoded; missing parts are `None`.
pub fn parts(data: &[u8]) -> Vec<String> {
    data.split(|b| *b == 0)
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

/// A scratch directory, on a memory file system where there is one (the store syncs a lot).
pub fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::Builder::new()
            .prefix("splice-fuzz")
            .tempdir_in(shm)
    {
        return dir;
    }
    tempfile::Builder::new()
        .prefix("splice-fuzz")
        .tempdir()
        .expect("a temp dir")
}

/// Every file and directory under `root` with its bytes (`None` for a directory).
pub fn tree(root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    for entry in walkdir::WalkDir::new(root).min_depth(1) {
        let entry = entry.expect("the sandbox walks");
        let rel = entry.path().strip_prefix(root).unwrap().to_path_buf();
        let bytes = entry
            .file_type()
            .is_file()
            .then(|| std::fs::read(entry.path()).expect("a sandbox file reads"));
        out.insert(rel, bytes);
    }
    out
}

/// The paths that differ between two trees (added, removed or changed).
pub fn changed(
    before: &BTreeMap<PathBuf, Option<Vec<u8>>>,
    after: &BTreeMap<PathBuf, Option<Vec<u8>>>,
) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = before
        .iter()
        .filter(|(p, b)| after.get(*p) != Some(b))
        .map(|(p, _)| p.clone())
        .collect();
    out.extend(after.keys().filter(|p| !before.contains_key(*p)).cloned());
    out.sort();
    out
}

/// `path` with `.` and `..` resolved lexically (no file system access).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}
