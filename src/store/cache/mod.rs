//! The derived snapshot cache, `.splice/cache/beads`: every readable bead of `beads/` in one
//! file, so a one-shot read ([`Store::scan_cached`]: `snapshot`, `status`, `pass --dry-run`,
//! `list`, `ready`, the runner's snapshot) reads one file instead of opening every bead file.
//!
//! It is only ever a derivation of the bead files and the journal, never a source: nothing
//! writes through it, `git` never sees it (`cache/.gitignore` holds `*`, so a repository whose
//! `.splice/.gitignore` predates the cache still ignores it), and deleting it costs one full
//! read. It is stamped with its format ([`FORMAT`]), the journal's (generation, live segment
//! length, last record id) it reflects, and for each bead file its (size, mtime and ctime in
//! nanoseconds, inode). A read lists the directory, stats each file the cache has an entry for
//! (an `fstatat` from the open directory, the link not followed; no open, no parse; a file with
//! no entry is read anyway) and takes a bead from the cache only when its stat equals the
//! stamp, the journal names no change to it since, and the stamp was taken at least
//! [`RACY_NS`] after the file's last change ([`racy`]: git's rule for a "racily clean" index
//! entry, on the change time no tool can set). Every other file is read as [`Store::scan`]
//! reads it (so the result is the same `Scan`, errors included); files gone are dropped. A cache that is missing, torn (its length),
//! corrupt (its index's checksum), of another format, or from another journal generation (the
//! segment was closed) or a journal cut back is not used at all: the read falls back to the
//! files and rebuilds it. A bead whose cached JSON fails its own checksum is read from its file.
//!
//! So a read through the cache equals a read of the files: any change of a file's bytes after
//! its stamp was taken moves its ctime past the stamp's. What that rests on, and so what it
//! cannot see (`docs/decisions/0006-cache.md`): the kernel moving the ctime on every write (a
//! write through a shared writable mapping moves it only at the first write to a clean page, as
//! git knows), and the file system's clock not running two seconds or more behind the one the
//! read is timed by (a network file system whose server's clock lags, a clock set back).
//!
//! The body (the beads' JSON, a line each) is never held whole, nor read twice: a read loads
//! the index that follows it (`load.rs`: each bead's name, stamp, length and checksum; the
//! names and stamps are dropped once the files are statted, and a rewrite that copies old
//! entries reads their stamps again from the index), then
//! takes the cached JSON of a block of files at a time from the open file (on the reading
//! threads, [`super::par_blocks`]), checks each bead's against its checksum as it parses it,
//! and drops it once they are parsed; a rewrite copies the entries it keeps from the old file
//! (each checked again) into the temporary file, then writes the index (the header, whose
//! checksum is 16 hex digits, is written last).
//!
//! The cache is written as a temporary file and renamed over the old one, so a concurrent
//! reader sees the old cache or the new one, never half of one. A temporary file a crash left
//! behind (older than a minute, its writer no longer running) is removed by the next write. It
//! is not synced: after a crash a torn cache fails its length or its checksums. A failure to
//! write it (a read-only file system) is not an error: the read has its answer already.

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

mod load;
mod read;
mod temp;
mod text;

use super::{Named, Scan, Store, journal};
use crate::error::{Error, Result};
use load::Loaded;
use read::{Fresh, Json, Reading, hits};
#[cfg(test)]
use text::checksum;
use text::{lengths, write_body_and_index};

/// The cache's format: a cache written by another format is not read. 3: a file is trusted only
/// once its change time, not only its mtime, is older than [`RACY_NS`] (a cache of format 2 may
/// hold a stamp taken within the window, which a later edit in the same tick could match).
pub const FORMAT: u32 = 3;

/// The first word of the cache's header.
const MAGIC: &str = "splice-cache";

/// A file whose last change (its ctime; its mtime too, which a tool may set) is this close to
/// the start of the read is read from disk, and stamped so that it never matches: its stamp
/// could not tell a later edit in the same timestamp tick. Two seconds is more than the
/// coarsest tick of a file system splice may run on (FAT's mtime: 2 s; the kernel's clock for
/// the others: a few milliseconds).
const RACY_NS: i64 = 2_000_000_000;

/// A journal tail longer than this since the cache's stamp rewrites the cache.
const TAIL_REWRITE_BYTES: u64 = 4 << 20;

static DISABLED: AtomicBool = AtomicBool::new(false);

/// `--no-cache`: every read in this process reads the files (and leaves the cache as it is).
pub fn disable() {
    DISABLED.store(true, Ordering::Relaxed);
}

/// A bead file's stamp: what a stat says, no contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    size: u64,
    mtime_ns: i64,
    /// The inode's change time: no tool can set it, so an edit that restores the mtime still
    /// shows.
    ctime_ns: i64,
    ino: u64,
}

/// A stamp no file has (inode 0): for a file read too close to its last change.
const NEVER: Stamp = Stamp {
    size: 0,
    mtime_ns: 0,
    ctime_ns: 0,
    ino: 0,
};

impl Stamp {
    /// The stamp of bead `id`'s file (`<id>.json`) in the open directory `dir`, its link not
    /// followed: a `fstatat` from the directory, so the kernel walks one name, not the whole
    /// path (the stat of every file was a seventh of `status` at 100,000 beads).
    fn at(dir: &fs::File, id: &str) -> Option<Stamp> {
        use std::os::fd::AsRawFd;
        let mut name = Vec::with_capacity(id.len() + 6);
        name.extend_from_slice(id.as_bytes());
        name.extend_from_slice(b".json");
        let name = std::ffi::CString::new(name).ok()?;
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: `name` is a NUL-terminated string and `st` a buffer of the size `fstatat`
        // writes; `dir` stays open for the call.
        let rc = unsafe {
            libc::fstatat(
                dir.as_raw_fd(),
                name.as_ptr(),
                st.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if rc != 0 {
            return None;
        }
        // SAFETY: `fstatat` succeeded, so it filled `st`.
        let st = unsafe { st.assume_init() };
        Some(Stamp {
            size: u64::try_from(st.st_size).ok()?,
            mtime_ns: nanos(st.st_mtime, st.st_mtime_nsec),
            ctime_ns: nanos(st.st_ctime, st.st_ctime_nsec),
            ino: st.st_ino,
        })
    }

    fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            size: meta.size(),
            mtime_ns: nanos(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: nanos(meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
        }
    }
}

/// Where the journal was when the cache was stamped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mark {
    generation: u64,
    /// The live segment's length.
    offset: u64,
    /// Its last record's id (0: none).
    id: u64,
}

/// What a new cache holds: each readable bead in id order, with the names and bytes read it
/// points into.
struct New<'a> {
    named: &'a [Named],
    fresh: &'a [Fresh],
    read: &'a [(Stamp, Vec<u8>)],
    /// The old cache's stamps, by entry ([`Loaded::stamps_again`]): a bead taken from it keeps
    /// its stamp.
    old_stamps: &'a [Stamp],
}

/// What a rebuild wrote.
#[derive(Clone, Copy, Debug)]
pub struct Rebuilt {
    pub beads: usize,
    pub bytes: u64,
}

/// What one read through the cache did.
struct Through {
    scan: Scan,
    /// How many bead files it read (the rest came from the cache): what the tests check to see
    /// the cache used.
    #[cfg_attr(not(test), allow(dead_code))]
    from_files: usize,
    /// The cache's write, when it wrote one.
    written: Option<Result<Rebuilt>>,
}

impl Store {
    /// `.splice/cache/`.
    pub fn cache_dir(&self) -> PathBuf {
        self.dir().join("cache")
    }

    /// The cache file.
    pub fn cache_path(&self) -> PathBuf {
        self.cache_dir().join("beads")
    }

    /// Every bead, as [`Store::scan`] reads them, through the cache (module docs). For one-shot
    /// reads only: the writer's transitions read the files under the lock.
    pub fn scan_cached(&self) -> Result<Scan> {
        if DISABLED.load(Ordering::Relaxed) {
            return self.scan();
        }
        Ok(self.read_through(true)?.scan)
    }

    /// `splice cache rebuild`: read every file (the cache unused) and write the cache. Unlike a
    /// read's rebuild, a failure to write it is a fault.
    pub fn rebuild_cache(&self) -> Result<Rebuilt> {
        self.rebuild_cache_at(now_ns())
    }

    /// [`Store::rebuild_cache`] for a read that began at `started`.
    fn rebuild_cache_at(&self, started: i64) -> Result<Rebuilt> {
        let through = self.read_through_at(false, started)?;
        through
            .written
            .unwrap_or_else(|| Err(Error::Invalid("the cache was not written".into())))
    }

    /// Read through the cache (`use_cache`) or around it; write a new cache when the old one
    /// was not used, or enough has changed since.
    fn read_through(&self, use_cache: bool) -> Result<Through> {
        self.read_through_at(use_cache, now_ns())
    }

    /// [`Store::read_through`] for a read that began at `started` (nanoseconds since the epoch):
    /// tests pass a time past the racy window instead of waiting for it.
    fn read_through_at(&self, use_cache: bool, started: i64) -> Result<Through> {
        let mark = self.journal_mark()?;
        // The cache's index is loaded on a thread of its own while the directory is listed:
        // neither needs the other.
        let path = self.cache_path();
        let (named, loaded) = std::thread::scope(|s| {
            let loading = use_cache.then(|| s.spawn(|| load::load(&path)));
            let named = self.bead_names();
            // A panic while loading is a bug, and goes on as it did when the load ran here.
            let loaded =
                loading.and_then(|l| l.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            (named, loaded)
        });
        let named = named?;
        let dir = self.beads_dir();
        let (mut loaded, touched, tail) = self.usable(loaded, mark);
        let racy = |s: &Stamp| racy(s, started);
        let hits = match loaded.as_mut() {
            Some(l) => hits(&dir, &named, l, &touched, &racy),
            None => vec![None; named.len()],
        };
        drop(touched);
        let mut reading = Reading {
            scan: Scan {
                beads: Vec::with_capacity(named.len()),
                unreadable: Vec::new(),
            },
            fresh: Vec::with_capacity(named.len()),
            read: Vec::new(),
            from_files: 0,
            changed: 0,
        };
        reading.read(&dir, (&named, &hits), loaded.as_ref(), &racy);
        drop(hits);
        let Reading {
            scan,
            fresh,
            read,
            from_files,
            changed,
        } = reading;
        let count = loaded.as_ref().map_or(0, |l| l.entries.len());
        let stale = loaded.is_none()
            || count != scan.beads.len()
            || changed * 100 >= named.len().max(1)
            || (changed > 0 && named.len() < 1000)
            || tail > TAIL_REWRITE_BYTES;
        // A new cache counts its beads in 32 bits: a store of more files is read without one.
        let fits = u32::try_from(named.len()).is_ok();
        let written = (stale && fits).then(|| {
            // Without them, a bead taken from the old cache cannot be written: the write fails.
            let old_stamps = loaded.as_ref().and_then(Loaded::stamps_again);
            let new = New {
                named: &named,
                fresh: &fresh,
                read: &read,
                old_stamps: old_stamps.as_deref().unwrap_or_default(),
            };
            self.write_cache(mark, &new, loaded.as_ref())
        });
        Ok(Through {
            scan,
            from_files,
            written,
        })
    }

    /// The loaded cache, the beads the journal names since its stamp, and the journal tail's
    /// length; no cache when it cannot be used.
    fn usable(&self, loaded: Option<Loaded>, mark: Mark) -> (Option<Loaded>, HashSet<String>, u64) {
        let Some(loaded) = loaded else {
            return (None, HashSet::new(), 0);
        };
        match self.touched_since(loaded.mark, mark) {
            Some((touched, tail)) => (Some(loaded), touched, tail),
            None => (None, HashSet::new(), 0),
        }
    }

    /// Where the journal is now.
    fn journal_mark(&self) -> Result<Mark> {
        let live = self.journal_path();
        let offset = fs::symlink_metadata(&live).map_or(0, |m| m.len());
        Ok(Mark {
            generation: self.live_generation()?,
            offset,
            id: journal::last_id(&live)?.unwrap_or(0),
        })
    }

    /// The beads the journal's committed records name since `old`, and the tail's length;
    /// `None` when the journal is not the one `old` was taken from (another generation, or cut
    /// back).
    fn touched_since(&self, old: Mark, now: Mark) -> Option<(HashSet<String>, u64)> {
        if old.generation != now.generation || old.offset > now.offset || old.id > now.id {
            return None;
        }
        if old == now {
            return Some((HashSet::new(), 0));
        }
        let (records, _) = journal::read_committed(&self.journal_path(), old.offset).ok()?;
        let touched = records
            .iter()
            .flat_map(|r| r.written().map(|(id, _)| id.to_string()))
            .collect();
        Some((touched, now.offset - old.offset))
    }

    /// Write the cache: a temporary file in `cache/`, renamed over the old one.
    fn write_cache(&self, mark: Mark, new: &New<'_>, old: Option<&Loaded>) -> Result<Rebuilt> {
        let dir = self.cache_dir();
        // `cache/` must be a directory of splice's own: a link there (committed by someone
        // hostile, or planted) is never followed, so the cache is never written elsewhere.
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(Error::bad_file(
                    &dir,
                    "not a directory (a link or a file): the snapshot cache is not written \
                     there; remove it (`splice cache rebuild` recreates the cache)",
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                fs::create_dir(&dir).map_err(|e| Error::io(&dir, e))?;
            }
            Err(e) => return Err(Error::io(&dir, e)),
        }
        let ignore = dir.join(".gitignore");
        if fs::symlink_metadata(&ignore).is_err() {
            create_new(&ignore)
                .and_then(|mut f| f.write_all(b"*\n"))
                .map_err(|e| Error::io(&ignore, e))?;
        }
        let path = self.cache_path();
        let (body_len, index_len) = lengths(new, old).map_err(|e| Error::io(&path, e))?;
        // The checksum is 16 hex digits whatever it is: the header's length is known before the
        // body and the index are written after it, streamed, and the header is written last.
        let header = |sum: &str| {
            format!(
                "{MAGIC} {FORMAT} {} {} {} {body_len} {index_len} {sum}\n",
                mark.generation, mark.offset, mark.id
            )
        };
        let header_len = header(&"0".repeat(16)).len() as u64;
        // Unique to this process and this write: two threads of one process may both write.
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, Ordering::Relaxed);
        let temp = temp::path(&dir, n);
        temp::clean_stale(&dir, std::time::SystemTime::now());
        let write = || -> std::io::Result<()> {
            use std::io::{Seek, SeekFrom};
            use std::os::unix::fs::FileExt;
            let mut file = create_new(&temp)?;
            file.seek(SeekFrom::Start(header_len))?;
            let mut out = std::io::BufWriter::with_capacity(1 << 16, &file);
            let sum = write_body_and_index(new, old, (body_len, index_len), &mut out)?;
            out.flush()?;
            drop(out);
            let header = header(&sum);
            if header.len() as u64 != header_len {
                return Err(std::io::ErrorKind::InvalidData.into());
            }
            file.write_all_at(header.as_bytes(), 0)?;
            fs::rename(&temp, &path)
        };
        if let Err(e) = write() {
            let _ = fs::remove_file(&temp);
            return Err(super::atomic::replace_error(&path, e));
        }
        Ok(Rebuilt {
            beads: new.fresh.len(),
            bytes: header_len + body_len + index_len,
        })
    }
}

/// Create `path`, which must not exist, never through a link.
fn create_new(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// A time in nanoseconds since the epoch: 64 bits hold 1677 to 2262; a time outside (a clock
/// set far off) saturates, and its stamp still holds its size, inode and change time.
fn nanos(secs: i64, nsec: i64) -> i64 {
    secs.saturating_mul(1_000_000_000).saturating_add(nsec)
}

/// Is a file of stamp `s` too recently changed, for a read that began at `started`, to be
/// trusted by its stamp? Its change time is the kernel's: no tool sets it, and every change of
/// the file's bytes moves it to the clock's time. So a stamp taken at least [`RACY_NS`] after
/// the change it reflects is matched by no later change (that one's ctime is later), and a
/// stamp taken sooner is never trusted: an edit within the same tick could keep every number
/// of it, size and mtime included.
fn racy(s: &Stamp, started: i64) -> bool {
    s.mtime_ns.max(s.ctime_ns).saturating_add(RACY_NS) > started
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests;
