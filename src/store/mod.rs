//! The state directory `.splice/`: bead files, the lock, the journal and recovery.
//!
//! Readers never lock: every bead file is replaced by rename, so a read sees a whole file. Writers
//! go through [`Store::transact`], which takes the lock, recovers, runs the verb against fresh
//! reads, and commits its after-images journal-first (DESIGN §3).

pub mod atomic;
pub mod ids;
pub mod journal;
pub mod lock;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::model::bead::BEAD_SCHEMA;
use crate::model::{Bead, Config, Manifest};

use atomic::Failpoint;
use journal::{Change, Record, Tail};

/// The name of the state directory.
pub const STATE_DIR: &str = ".splice";

/// What `.splice/.gitignore` holds: beads and journal are meant to be committed.
const GITIGNORE: &str = "worktrees/\nruns/\nlock\n";

/// An opened state directory.
#[derive(Clone, Debug)]
pub struct Store {
    /// `.splice/` itself.
    dir: PathBuf,
    /// The directory holding `.splice/` (the repository root floors read by default).
    repo: PathBuf,
}

/// Where `--dir` / `SPLICE_DIR` point: a `.splice` directory, or a directory that holds one.
fn state_dir_for(path: &Path) -> PathBuf {
    if path.file_name().is_some_and(|n| n == STATE_DIR) {
        path.to_path_buf()
    } else {
        path.join(STATE_DIR)
    }
}

/// Where the state directory is, or would be created: `--dir`, else `SPLICE_DIR`, else the
/// nearest ancestor of the working directory that holds `.splice/`.
fn locate(dir: Option<&Path>) -> Result<Option<PathBuf>> {
    if let Some(d) = dir {
        return Ok(Some(state_dir_for(d)));
    }
    if let Some(d) = std::env::var_os("SPLICE_DIR").filter(|d| !d.is_empty()) {
        return Ok(Some(state_dir_for(Path::new(&d))));
    }
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    Ok(cwd
        .ancestors()
        .map(|a| a.join(STATE_DIR))
        .find(|candidate| candidate.is_dir()))
}

impl Store {
    /// Open an existing state directory, or fail (exit 2) saying how to make one.
    pub fn discover(dir: Option<&Path>) -> Result<Store> {
        match locate(dir)? {
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
        let beads = state.join("beads");
        if !beads.is_dir() {
            fs::create_dir_all(&beads).map_err(|e| Error::io(&beads, e))?;
        }
        let ignore = state.join(".gitignore");
        if !ignore.exists() {
            atomic::replace_file(&ignore, GITIGNORE.as_bytes())?;
        }
        Ok(Store::at(state))
    }

    fn at(state: PathBuf) -> Store {
        let state = state.canonicalize().unwrap_or(state);
        let repo = state
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        Store { dir: state, repo }
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

    /// Read one bead. A missing or unparsable file is a fault naming the file.
    pub fn read_bead(&self, id: &str) -> Result<Bead> {
        if !ids::is_valid(id) {
            return Err(Error::Invalid(format!("{id:?} is not a bead id")));
        }
        let path = self.bead_path(id);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::bad_file(
                    &path,
                    format!("no bead {id}: the file does not exist"),
                ));
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        parse_bead(&path, &bytes)
    }

    /// Every bead, read in parallel (one directory read, no subprocess), sorted by id.
    pub fn read_all(&self) -> Result<Vec<Bead>> {
        let dir = self.beads_dir();
        let mut named = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))? {
            let entry = entry.map_err(|e| Error::io(&dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(id) = name
                .strip_suffix(".json")
                .filter(|_| !name.starts_with('.'))
            {
                named.push((id.to_string(), entry.path()));
            }
        }
        // Sort the names, not the parsed beads: a bead is large, and moving thousands of them
        // around a sort costs more than reading them.
        named.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let paths: Vec<PathBuf> = named.into_iter().map(|(_, p)| p).collect();
        let mut beads = read_parallel(&paths)?;
        if !beads.is_sorted_by(|a, b| a.id <= b.id) {
            // Only a hand-edited file whose id differs from its name gets here.
            beads.sort_by(|a, b| a.id.cmp(&b.id));
        }
        Ok(beads)
    }

    /// The manifest: `.splice/manifest.json` when present, else the embedded default.
    pub fn manifest(&self) -> Result<Manifest> {
        let path = self.dir.join("manifest.json");
        match fs::read_to_string(&path) {
            Ok(text) => Manifest::parse(&text).map_err(|p| Error::bad_file(&path, p.to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Manifest::default_manifest()),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// The config: `.splice/config.toml` when present, else defaults.
    pub fn config(&self) -> Result<Config> {
        let path = self.dir.join("config.toml");
        match fs::read_to_string(&path) {
            Ok(text) => Config::parse(&text).map_err(|e| Error::bad_file(&path, e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// Run one transition: lock, recover, let `f` read and stage beads, commit. If `f` fails,
    /// nothing is written. Returns `f`'s value.
    pub fn transact<T>(
        &self,
        verb: &str,
        actor: &str,
        f: impl FnOnce(&mut Tx) -> Result<T>,
    ) -> Result<T> {
        let _lock = lock::LockGuard::acquire(&self.dir.join("lock"))?;
        self.recover()?;
        let now = crate::clock::now_string()?;
        let mut tx = Tx {
            store: self,
            now,
            staged: BTreeMap::new(),
            order: Vec::new(),
            before: BTreeMap::new(),
            reason: None,
        };
        let value = f(&mut tx)?;
        tx.commit(verb, actor)?;
        Ok(value)
    }

    /// Bring the store to a clean state after a crash (caller holds the lock). Messages about
    /// what was repaired go to stderr.
    fn recover(&self) -> Result<()> {
        let journal = self.journal_path();
        loop {
            match journal::read_tail(&journal)? {
                Tail::Clean => return Ok(()),
                Tail::Torn { keep, dropped } => {
                    eprintln!(
                        "splice: recovered: truncated a torn last journal record ({dropped} bytes) in {}",
                        journal.display()
                    );
                    journal::truncate(&journal, keep)?;
                }
                Tail::Uncommitted(record) => {
                    // Only the beads of the last record can have temp files: the writer creates
                    // them after the record is durable and renames them before its marker.
                    for bead in &record.beads {
                        let tmp = atomic::tmp_path(&self.bead_path(&bead.id));
                        let _ = fs::remove_file(tmp);
                    }
                    self.publish(&record.beads)?;
                    journal::append_marker(&journal, record.tx)?;
                    let ids: Vec<&str> = record.beads.iter().map(|b| b.id.as_str()).collect();
                    eprintln!(
                        "splice: recovered: rolled forward the interrupted `{}` transition on {}",
                        record.verb,
                        ids.join(", ")
                    );
                    return Ok(());
                }
            }
        }
    }

    /// Write after-images into place: temp files, then renames, then the directory sync.
    fn publish(&self, beads: &[Bead]) -> Result<()> {
        for bead in beads {
            atomic::write_tmp(&self.bead_path(&bead.id), &bead.to_file_bytes())?;
        }
        Failpoint::AfterTmp.hit();
        for bead in beads {
            atomic::publish(&self.bead_path(&bead.id))?;
        }
        atomic::sync_dir(&self.beads_dir())?;
        Failpoint::AfterRename.hit();
        Ok(())
    }
}

fn parse_bead(path: &Path, bytes: &[u8]) -> Result<Bead> {
    // The fast parse first; only a failure pays for tracking the field path for the message.
    if let Ok(bead) = serde_json::from_slice::<Bead>(bytes) {
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
        Ok(bead) => Ok(bead),
        Err(e) => {
            let field = e.path().to_string();
            let at = if field == "." {
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

/// Read and parse files in parallel. Reading many small files is syscall-bound, so a few more
/// threads than cores keep both cores busy.
fn read_parallel(paths: &[PathBuf]) -> Result<Vec<Bead>> {
    use std::io::Read;
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let threads = (cores * 2).min(paths.len() / 256 + 1).max(1);
    let chunk = paths.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let mut buf = Vec::with_capacity(4096);
                    let mut out = Vec::with_capacity(part.len());
                    for p in part {
                        buf.clear();
                        fs::File::open(p)
                            .and_then(|mut f| f.read_to_end(&mut buf))
                            .map_err(|e| Error::io(p, e))?;
                        out.push(parse_bead(p, &buf)?);
                    }
                    Ok::<_, Error>(out)
                })
            })
            .collect();
        let mut out = Vec::with_capacity(paths.len());
        for h in handles {
            out.extend(h.join().expect("reader thread does not panic")?);
        }
        Ok(out)
    })
}

/// A transition in progress: fresh reads under the lock, staged after-images.
pub struct Tx<'s> {
    store: &'s Store,
    /// The transition's time, RFC 3339.
    pub now: String,
    staged: BTreeMap<String, Bead>,
    order: Vec<String>,
    before: BTreeMap<String, Option<String>>,
    reason: Option<String>,
}

impl Tx<'_> {
    pub fn store(&self) -> &Store {
        self.store
    }

    /// Read a bead: the staged after-image if this transaction changed it, else the file.
    pub fn read(&mut self, id: &str) -> Result<Bead> {
        if let Some(b) = self.staged.get(id) {
            return Ok(b.clone());
        }
        let bead = self.store.read_bead(id)?;
        self.before
            .entry(id.to_string())
            .or_insert_with(|| Some(bead.pipeline.step.clone()));
        Ok(bead)
    }

    pub fn exists(&self, id: &str) -> bool {
        self.staged.contains_key(id) || self.store.exists(id)
    }

    /// A fresh id for a new bead derived from `seed`, free on disk and in this transaction.
    pub fn new_id(&self, seed: &str) -> Result<String> {
        ids::candidates(seed)
            .find(|id| !self.exists(id))
            .ok_or_else(|| Error::Invalid(format!("every id derived from {seed:?} is taken")))
    }

    /// Stage `bead`'s after-image. The caller has already bumped its `seq`.
    pub fn put(&mut self, bead: Bead) {
        let id = bead.id.clone();
        self.before.entry(id.clone()).or_insert(None);
        if !self.staged.contains_key(&id) {
            self.order.push(id.clone());
        }
        self.staged.insert(id, bead);
    }

    /// The reason recorded in the journal for this transition.
    pub fn set_reason(&mut self, reason: impl Into<String>) {
        self.reason = Some(reason.into());
    }

    fn commit(self, verb: &str, actor: &str) -> Result<()> {
        if self.order.is_empty() {
            return Ok(());
        }
        let mut beads = Vec::with_capacity(self.order.len());
        let mut changes = Vec::with_capacity(self.order.len());
        let mut staged = self.staged;
        for id in &self.order {
            let bead = staged.remove(id).expect("staged bead");
            changes.push(Change {
                bead: id.clone(),
                from: self.before.get(id).cloned().flatten(),
                to: bead.pipeline.step.clone(),
                seq: bead.pipeline.seq,
            });
            beads.push(bead);
        }
        let mut record = Record {
            tx: 0,
            verb: verb.to_string(),
            actor: actor.to_string(),
            reason: self.reason,
            at: self.now,
            changes,
            beads,
        };
        let journal = self.store.journal_path();
        let tx = journal::append_record(&journal, &mut record)?;
        Failpoint::AfterJournal.hit();
        self.store.publish(&record.beads)?;
        journal::append_marker(&journal, tx)
    }
}
