//! The state directory `.splice/`: bead files, the lock, the journal and recovery.
//!
//! Readers never lock: every bead file is replaced by rename, so a read sees a whole file. Every
//! writer goes through one shell, [`Store::apply`] (or [`Store::create`] for a verb with no
//! subject), which takes the lock, recovers, reads what the verb declared fresh, runs the verb's
//! pure plan, and commits the after-images journal-first (DESIGN §3; [`shell`] says how).
//!
//! Bead files and the journal are committed to git, so anyone may have written them: a bead's
//! `id` must be its file's name before it is used, no link is followed and nothing but a regular
//! file is opened ([`atomic`]), recovery applies only a record that passes its checks
//! (`recover.rs`), and secrets are redacted before anything is journaled ([`redact`]). A reader
//! of every bead ([`Store::scan`]) goes on past a file it cannot read and says which and why.

pub mod atomic;
pub mod cache;
pub mod delta;
pub mod ids;
pub mod journal;
pub mod lock;
mod par;
mod recover;
pub mod redact;
pub mod reviews;
mod segments;
pub mod shell;

#[cfg(test)]
mod tests;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::model::bead::BEAD_SCHEMA;
use crate::model::{Bead, Config, Manifest};
use crate::safe_read;

pub(crate) use par::{Bound, par_blocks, par_each, par_map};
pub use recover::Pending;
pub use segments::JournalSize;
pub use shell::{Change, Fresh, Reads, Repair, Transition};

/// The name of the state directory.
pub const STATE_DIR: &str = ".splice";

/// What `.splice/.gitignore` holds: beads and journal are meant to be committed.
const GITIGNORE: &str = "worktrees/\nruns/\nlock\nlock.holder\ncache/\n";

/// A bead file that could not be read, and why.
#[derive(Debug)]
pub struct Unread {
    /// The file's name without `.json`.
    pub id: String,
    pub path: PathBuf,
    pub error: Error,
}

/// A file of `beads/`: the id its name gives (the name less `.json`). Its path is made when it
/// is needed, not kept: at 100,000 files a path each was 11 MB of a read (issue 16).
pub(crate) struct Named {
    pub id: crate::model::Text,
    /// The file's path when its name is not UTF-8 (the id, made from it, lost bytes). Boxed
    /// twice so that it costs one word: one `Named` is held per file while every bead is read.
    #[allow(clippy::box_collection)]
    odd: Option<Box<PathBuf>>,
}

impl Named {
    /// Is the file's name its id and `.json` (not a name that is not UTF-8)?
    pub(crate) fn is_plain(&self) -> bool {
        self.odd.is_none()
    }

    /// The file's path in `dir`, the beads directory it was read from.
    pub(crate) fn path(&self, dir: &Path) -> PathBuf {
        match &self.odd {
            Some(path) => path.to_path_buf(),
            None => dir.join(format!("{}.json", self.id)),
        }
    }
}

/// What one read of `beads/` found.
#[derive(Debug, Default)]
pub struct Scan {
    /// In id order.
    pub beads: Vec<Bead>,
    /// In id order.
    pub unreadable: Vec<Unread>,
}

/// An opened state directory.
#[derive(Clone, Debug)]
pub struct Store {
    /// `.splice/` itself.
    dir: PathBuf,
    /// The directory holding `.splice/` (the repository root floors read by default).
    repo: PathBuf,
    /// What recovery repaired, kept for the caller to report (shared by clones).
    repairs: Arc<Mutex<Vec<Repair>>>,
}

/// Where `--dir` / `SPLICE_DIR` point: a `.splice` directory, or a directory that holds one.
fn state_dir_for(path: &Path) -> PathBuf {
    if path.file_name().is_some_and(|n| n == STATE_DIR) {
        path.to_path_buf()
    } else {
        path.join(STATE_DIR)
    }
}

/// Where the state directory is, or would be created: `--dir`, else `SPLICE_DIR`, else, inside
/// one of splice's checkouts, the state directory that holds it ([`holding_state`]), else the
/// nearest ancestor of the working directory that holds `.splice/`.
fn locate(dir: Option<&Path>) -> Result<Option<PathBuf>> {
    if let Some(d) = dir {
        return Ok(Some(state_dir_for(d)));
    }
    let cwd = match std::env::var_os("SPLICE_DIR").filter(|d| !d.is_empty()) {
        Some(_) => PathBuf::new(),
        None => std::env::current_dir().map_err(|e| Error::io(".", e))?,
    };
    Ok(locate_from(&cwd))
}

/// Where the state directory is for a caller working in `start` (the guard reads it from its
/// hook's input, without opening a store): `SPLICE_DIR`, else, inside one of splice's
/// checkouts, the state directory that holds it ([`holding_state`]), else the nearest ancestor
/// of `start` that holds `.splice/`.
pub fn locate_from(start: &Path) -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("SPLICE_DIR").filter(|d| !d.is_empty()) {
        return Some(state_dir_for(Path::new(&d)));
    }
    if let Some(live) = holding_state(start) {
        return Some(live);
    }
    start
        .ancestors()
        .map(|a| a.join(STATE_DIR))
        .find(|candidate| candidate.is_dir())
}

/// The live state directory when `path` is inside one of splice's checkouts
/// (`<repo>/.splice/worktrees/<name>/…`): `<repo>/.splice`. A checkout of a branch holds its own
/// `.splice/` when users commit the state, an old copy that the nearest-ancestor rule would find
/// first (and an agent might edit); the state is always the repository's live one. The
/// outermost match wins.
fn holding_state(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == "worktrees"))
        .filter_map(Path::parent)
        .filter(|s| s.file_name().is_some_and(|n| n == STATE_DIR) && s.join("beads").is_dir())
        .last()
        .map(Path::to_path_buf)
}

/// The directories of the state, under `.splice/`, that splice writes into: bead files, closed
/// journal segments, kept reviews, run logs and checkouts. (A link in place of `cache/` is read past and never
/// written through: the cache is only a derivation, `store::cache`.)
const STATE_DIRS: [&str; 5] = ["beads", "journal", "reviews", "runs", "worktrees"];

/// Refuse a state directory (`.splice/` itself or one of [`STATE_DIRS`]) that is a symbolic
/// link: every write into it would land wherever it points, and bead files and the journal are
/// committed, so anyone may have made it. Files are opened without following links
/// ([`atomic`]); this covers the directories they are opened in.
fn no_linked_dirs(state: &Path) -> Result<()> {
    let dirs = std::iter::once(state.to_path_buf()).chain(STATE_DIRS.map(|d| state.join(d)));
    for dir in dirs {
        if fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::bad_file(
                &dir,
                "is a symbolic link, and splice follows no link in its state (a committed link \
                 would send its writes wherever it points); make it a directory of its own",
            ));
        }
    }
    Ok(())
}

impl Store {
    /// Open an existing state directory, or fail (exit 2) saying how to make one.
    pub fn discover(dir: Option<&Path>) -> Result<Store> {
        let state = locate(dir)?;
        if let Some(state) = &state {
            no_linked_dirs(state)?;
        }
        match state {
            Some(state) if state.join("beads").is_dir() => Ok(Store::at(state)),
            Some(state) => Err(Error::bad_file(
                &state,
                "no splice state here (missing .splice/beads); run `splice init` or `splice init-task` first",
            )),
            None => Err(Error::Invalid(
                "no .splice/ directory in this directory or any parent; run `splice init` or \
                 `splice init-task` first, or pass --dir"
                    .into(),
            )),
        }
    }

    /// Open the state directory, creating it if missing (for `init` and `init-task`). Without
    /// `--dir`/`SPLICE_DIR` and no `.splice/` above, it goes at the enclosing git repository's
    /// root, else in the working directory.
    pub fn open_or_create(dir: Option<&Path>) -> Result<Store> {
        let store = Store::open_or_plan(dir)?;
        let state = store.dir.clone();
        no_linked_dirs(&state)?;
        let beads = state.join("beads");
        if !beads.is_dir() {
            fs::create_dir_all(&beads).map_err(|e| Error::io(&beads, e))?;
        }
        let ignore = state.join(".gitignore");
        if !ignore.exists() {
            // Two first commands at once write the same bytes.
            atomic::replace_file_shared(&ignore, GITIGNORE.as_bytes())?;
        }
        Ok(Store::at(state))
    }

    /// The state directory [`Store::open_or_create`] would open or create, without creating
    /// anything: for checks that must refuse before `.splice/` exists. Its config and manifest
    /// read as defaults while their files are missing.
    pub fn open_or_plan(dir: Option<&Path>) -> Result<Store> {
        let state = match locate(dir)? {
            Some(s) => s,
            None => {
                let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
                let base = git2::Repository::discover(&cwd)
                    .ok()
                    .and_then(|r| r.workdir().map(Path::to_path_buf))
                    .unwrap_or(cwd);
                base.join(STATE_DIR)
            }
        };
        Ok(Store::at(state))
    }

    fn at(state: PathBuf) -> Store {
        let state = state.canonicalize().unwrap_or(state);
        let repo = state
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        Store {
            dir: state,
            repo,
            repairs: Arc::default(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The repository root: the directory that holds `.splice/`.
    pub fn repo(&self) -> &Path {
        &self.repo
    }

    pub fn beads_dir(&self) -> PathBuf {
        self.dir.join("beads")
    }

    pub fn journal_path(&self) -> PathBuf {
        self.dir.join("journal.jsonl")
    }

    pub fn bead_path(&self, id: &str) -> PathBuf {
        self.beads_dir().join(format!("{id}.json"))
    }

    pub fn worktrees_dir(&self) -> PathBuf {
        self.dir.join("worktrees")
    }

    pub fn runs_dir(&self) -> PathBuf {
        self.dir.join("runs")
    }

    /// Does a bead file exist for `id`?
    pub fn exists(&self, id: &str) -> bool {
        ids::is_valid(id) && self.bead_path(id).is_file()
    }

    /// The file of bead `id`, or a fault if `id` could not be a file name under `beads/`.
    pub fn bead_file(&self, id: &str) -> Result<PathBuf> {
        if ids::is_valid(id) {
            Ok(self.bead_path(id))
        } else {
            Err(Error::Invalid(format!(
                "{} is not a bead id",
                ids::shown(id)
            )))
        }
    }

    /// Read one bead. A missing or unparsable file is a fault naming the file.
    pub fn read_bead(&self, id: &str) -> Result<Bead> {
        match self.read_bead_file(id)? {
            Some(bead) => Ok(bead),
            None => Err(Error::bad_file(
                self.bead_path(id),
                format!("no bead {id}: the file does not exist"),
            )),
        }
    }

    /// Read one bead, `None` when it has no file. A file that is a link, not a regular file,
    /// not a bead, or a bead with another id than its name is a fault naming the file.
    pub fn read_bead_file(&self, id: &str) -> Result<Option<Bead>> {
        let path = self.bead_file(id)?;
        let bytes = match atomic::open_read(&path) {
            Ok(file) => bead_bytes(&path, file)?,
            Err(e) if atomic::is_not_found(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        parse_bead(&path, id, &bytes).map(Some)
    }

    /// Every bead, read in parallel (one directory read, no subprocess), sorted by id. The first
    /// file that cannot be read is a fault naming it (see [`Store::scan`] to go on past it).
    pub fn read_all(&self) -> Result<Vec<Bead>> {
        let scan = self.scan()?;
        match scan.unreadable.into_iter().next() {
            Some(bad) => Err(bad.error),
            None => Ok(scan.beads),
        }
    }

    /// The bead files of `beads/`, sorted by name. Names are sorted, not parsed beads: a bead is
    /// large, and moving thousands of them around a sort costs more than reading them. Each
    /// bead's id is its file's name (checked as it is parsed), so beads read in this order come
    /// out sorted.
    pub(crate) fn bead_names(&self) -> Result<Vec<Named>> {
        let dir = self.beads_dir();
        let mut named = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))? {
            let entry = entry.map_err(|e| Error::io(&dir, e))?;
            let os_name = entry.file_name();
            let name = os_name.to_string_lossy();
            if let Some(id) = name
                .strip_suffix(".json")
                .filter(|_| !name.starts_with('.'))
            {
                // A name that is not UTF-8 keeps its own path: its id lost bytes.
                let odd = os_name.to_str().is_none().then(|| Box::new(entry.path()));
                named.push(Named { id: id.into(), odd });
            }
        }
        named.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        // Grown by doubling: up to half of it spare, held while every bead is read.
        named.shrink_to_fit();
        Ok(named)
    }

    /// Every bead file, read in parallel, sorted by id: the beads, and apart, each file that
    /// could not be read and why. Only the directory read itself can fail.
    pub fn scan(&self) -> Result<Scan> {
        let named = self.bead_names()?;
        let dir = self.beads_dir();
        let mut scan = Scan {
            beads: Vec::with_capacity(named.len()),
            unreadable: Vec::new(),
        };
        // Streamed: each bead goes into the scan as it is parsed, never through a second list.
        par_each(
            &named,
            Bound::Io,
            |n| read_file(&n.id, &n.path(&dir)),
            |n, read| match read {
                Ok(bead) => scan.beads.push(bead),
                Err(error) => scan.unreadable.push(Unread {
                    id: n.id.to_string(),
                    path: n.path(&dir),
                    error,
                }),
            },
        );
        Ok(scan)
    }

    /// The effective manifest: `.splice/manifest.json` when present, else the embedded default,
    /// with the config's `[agent.steps.<step>]` overrides merged in (a problem with one is a
    /// fault naming `config.toml` and the key).
    pub fn manifest(&self) -> Result<Manifest> {
        let path = self.dir.join("manifest.json");
        let mut manifest = match read_text(&path)? {
            Some(text) => {
                Manifest::parse(&text).map_err(|p| Error::bad_file(&path, p.to_string()))?
            }
            None => Manifest::default_manifest(),
        };
        self.config()?
            .agent
            .apply_to(&mut manifest)
            .map_err(|e| Error::bad_file(self.dir.join("config.toml"), e))?;
        Ok(manifest)
    }

    /// The config: `.splice/config.toml` when present, else defaults.
    pub fn config(&self) -> Result<Config> {
        let path = self.dir.join("config.toml");
        match read_text(&path)? {
            Some(text) => Config::parse(&text).map_err(|e| Error::bad_file(&path, e)),
            None => Ok(Config::default()),
        }
    }

    /// The node's ancestors, nearest first. A parent cycle (possible only in hand-edited files)
    /// is a fault naming the bead.
    pub fn read_ancestors(&self, bead: &Bead) -> Result<Vec<Bead>> {
        let mut out: Vec<Bead> = Vec::new();
        let mut next = bead.parent.clone();
        while let Some(id) = next {
            if out.len() > 1024 || id == bead.id || out.iter().any(|b| b.id == id) {
                return Err(Error::Invalid(format!(
                    "bead {}: its parent chain loops at {id}",
                    bead.id
                )));
            }
            let parent = self.read_bead(&id)?;
            next = parent.parent.clone();
            out.push(parent);
        }
        Ok(out)
    }
}

/// A settings file's text (`config.toml`, `manifest.json`), `None` when it does not exist: a
/// link, a FIFO or a file over [`safe_read::SETTINGS`] (1 MiB) is refused naming it, not read.
fn read_text(path: &Path) -> Result<Option<String>> {
    safe_read::read_text_optional(path, safe_read::SETTINGS)
}

/// Parse the file of bead `id`. Its `id` field must be its name: the writer builds paths from
/// ids, so an id that is not the file's own (a path, a name too long for the file system) must
/// never reach it.
pub(crate) fn parse_bead(path: &Path, id: &str, bytes: &[u8]) -> Result<Bead> {
    // The fast parse first; only a failure pays for tracking the field path for the message.
    // The text is checked as UTF-8 once, not string by string.
    let fast = std::str::from_utf8(bytes).map(serde_json::from_str::<Bead>);
    if let Ok(Ok(bead)) = fast {
        if bead.id != id {
            return Err(Error::bad_file(
                path,
                format!(
                    "its \"id\" field is {}, not {id}, the file's name; a bead's id is its file's \
                     name: restore the field (or rename the file)",
                    ids::shown(&bead.id)
                ),
            ));
        }
        if bead.schema_version > BEAD_SCHEMA {
            return Err(Error::bad_file(
                path,
                format!(
                    "schema_version {} is newer than this splice reads ({BEAD_SCHEMA}); upgrade \
                     splice to work on this bead",
                    bead.schema_version
                ),
            ));
        }
        return Ok(bead);
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize::<_, Bead>(de) {
        // Parses only on the slow path: the fast one said no, so this is unreachable in
        // practice; check it the same way rather than trust it.
        Ok(_) => Err(Error::bad_file(path, "not a valid bead")),
        Err(e) => {
            let field = e.path().to_string();
            let at = if field == "." || field == "?" {
                String::new()
            } else {
                format!(" (at {field})")
            };
            Err(Error::bad_file(
                path,
                format!("not a valid bead{at}: {}", e.inner()),
            ))
        }
    }
}

/// Read and parse one bead file as [`Store::scan`] reads it.
fn read_file(id: &str, p: &Path) -> Result<Bead> {
    let buf = bead_bytes(p, open_named(id, p)?)?;
    parse_bead(p, id, &buf).map(held)
}

/// The bytes of the bead file at `path`, opened: at most [`safe_read::BEAD`] (16 MiB), a larger
/// one refused naming it (a committed file of a GiB would otherwise be read whole).
pub(crate) fn bead_bytes(path: &Path, file: fs::File) -> Result<Vec<u8>> {
    safe_read::bounded(file, safe_read::BEAD).map_err(|u| u.at(path))
}

/// A bead parsed for a read that holds every bead at once: its lists' spare room given back
/// (a parsed list of one item has room for four; a history entry is ~90 bytes).
pub(crate) fn held(mut bead: Bead) -> Bead {
    bead.labels.shrink_to_fit();
    bead.dependencies.shrink_to_fit();
    let p = &mut bead.pipeline;
    p.scenarios.shrink_to_fit();
    p.files.shrink_to_fit();
    p.exits.shrink_to_fit();
    p.trajectory.shrink_to_fit();
    p.history.shrink_to_fit();
    p.test_paths.shrink_to_fit();
    p.acceptance.shrink_to_fit();
    p.routing.shrink_to_fit();
    bead
}

/// Open the bead file `path` named `id`: refused unless the name is a bead id, and opened as
/// [`atomic::open_read`] opens (no link followed, a regular file only).
pub(crate) fn open_named(id: &str, path: &Path) -> Result<fs::File> {
    if !ids::is_valid(id) {
        return Err(Error::bad_file(
            path,
            "its name is not a bead id (letters, digits, `.`, `-`, `_`; at most 200)",
        ));
    }
    atomic::open_read(path)
}
