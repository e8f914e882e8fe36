//! Reading a file that someone else may have put there: an agent in its worktree, or whoever
//! committed the repository (`docs/security.md`, "Files splice reads"). Every file splice reads
//! is read here, so no read can hang the runner or fool it:
//!
//! - only a regular file is read: a FIFO, a device, a socket or a directory is refused;
//! - it is opened without blocking (`O_NONBLOCK`: a FIFO with no writer would otherwise hang in
//!   `open` past every timeout and signal) and no link at it is followed (`O_NOFOLLOW`: a link
//!   to `/dev/zero` or `/etc/shadow`);
//! - at most a bound is read, and a larger file is refused, never cut;
//! - a file inside a worktree ([`read_beneath`]) is opened relative to the worktree's root with
//!   no link followed anywhere on its path and no way out of the root: `openat2(2)` with
//!   `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` on Linux, else a walk of its components, each
//!   opened with `O_NOFOLLOW`.
//!
//! Each refusal names the file and says what is wrong. It imports only [`crate::error`].

use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use crate::error::{Error, Result};

/// The most of `config.toml` or `manifest.json` that is read: each is a few KiB.
pub const SETTINGS: u64 = 1 << 20;

/// The most of a bead file that is read (a bead with a long history is some hundred KiB).
pub const BEAD: u64 = 16 << 20;

/// The most of an input file named on the command line that is read (`split --children`,
/// `import bd`, a plan, `start`'s list, a snapshot for `decide`).
pub const INPUT: u64 = 256 << 20;

/// Why a file was not read. [`Unread::says`] is the words after its name.
#[derive(Debug)]
pub enum Unread {
    /// Nothing is there.
    Missing,
    /// The path is absolute, empty or has `..`: it is not a path inside the root.
    NotInside,
    /// A symbolic link is on the path (at the file or a directory leading to it).
    Link,
    /// A FIFO, a device, a socket or a directory.
    NotRegular,
    /// Larger than the bound.
    TooLarge(u64),
    /// Any other error opening or reading it.
    Io(std::io::Error),
}

impl Unread {
    /// What is wrong, in words, to follow the file's name.
    pub fn says(&self) -> String {
        match self {
            Unread::Missing => "does not exist".into(),
            Unread::NotInside => "is not a path inside the working directory (absolute, \
                                  empty, or with `..`)"
                .into(),
            Unread::Link => "has a symbolic link on its path, and splice follows no link in a \
                             file it reads (a committed link could point anywhere); replace it \
                             with the file itself"
                .into(),
            Unread::NotRegular => "is not a regular file (a FIFO, a device, a socket or a \
                                   directory); splice reads only regular files"
                .into(),
            Unread::TooLarge(cap) => {
                format!(
                    "is larger than {}, more than splice reads of such a file",
                    size(*cap)
                )
            }
            Unread::Io(e) => e.to_string(),
        }
    }

    /// This refusal as an error naming `path`. A missing file stays an I/O error of kind
    /// `NotFound`, so callers that expect one can match on it.
    pub fn at(self, path: &Path) -> Error {
        match self {
            // The system's words, as any other open of a missing file says them.
            Unread::Missing => Error::io(path, std::io::Error::from_raw_os_error(libc::ENOENT)),
            Unread::Io(e) => Error::io(path, e),
            other => Error::bad_file(path, other.says()),
        }
    }

    fn from_errno(e: std::io::Error) -> Unread {
        match e.raw_os_error() {
            // Nothing there, or a file where the path needs a directory.
            Some(libc::ENOENT | libc::ENOTDIR) => Unread::Missing,
            // A link at a name opened with O_NOFOLLOW, or (openat2) anywhere on the path.
            Some(libc::ELOOP) => Unread::Link,
            // openat2's RESOLVE_BENEATH: the path would leave the root.
            Some(libc::EXDEV) => Unread::NotInside,
            // A socket, or a FIFO opened for writing.
            Some(libc::ENXIO) => Unread::NotRegular,
            _ => Unread::Io(e),
        }
    }
}

/// A bound in words: `1 MiB`, `16 MiB`, or bytes when it is not whole MiB.
pub fn size(cap: u64) -> String {
    if cap >= 1 << 20 && cap.is_multiple_of(1 << 20) {
        format!("{} MiB", cap >> 20)
    } else {
        format!("{cap} bytes")
    }
}

/// The bytes of the regular file at `path`, at most `cap` of them. No link at `path` is followed
/// (a directory above it may be one: this is for files whose place splice or the user chose).
/// A missing file is an I/O error of kind `NotFound`; every other refusal names the file.
pub fn read(path: &Path, cap: u64) -> Result<Vec<u8>> {
    let file = open(path).map_err(|u| u.at(path))?;
    bounded(file, cap).map_err(|u| u.at(path))
}

/// As [`read`], `None` when nothing is at `path`.
pub fn read_optional(path: &Path, cap: u64) -> Result<Option<Vec<u8>>> {
    match open(path) {
        Ok(file) => bounded(file, cap).map(Some).map_err(|u| u.at(path)),
        Err(Unread::Missing) => Ok(None),
        Err(u) => Err(u.at(path)),
    }
}

/// As [`read`], as UTF-8 text: bytes that are not are refused naming the file.
pub fn read_text(path: &Path, cap: u64) -> Result<String> {
    text(path, read(path, cap)?)
}

/// As [`read_optional`], as UTF-8 text.
pub fn read_text_optional(path: &Path, cap: u64) -> Result<Option<String>> {
    read_optional(path, cap)?
        .map(|bytes| text(path, bytes))
        .transpose()
}

fn text(path: &Path, bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        Error::bad_file(
            path,
            format!(
                "is not UTF-8 text (an invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Open the regular file at `path` for reading, without blocking and following no link at it.
pub fn open(path: &Path) -> Result<File, Unread> {
    let name = c_path(path.as_os_str().as_bytes())?;
    // SAFETY: a NUL-terminated path; the descriptor returned is owned below.
    let fd = unsafe { libc::open(name.as_ptr(), READ_FLAGS) };
    regular(fd)
}

/// The bytes of the regular file at `rel` inside `root`, at most `cap`: opened relative to
/// `root` with no link followed anywhere on the way and no way out of `root` (the module doc).
/// `root` itself is splice's own directory (a worktree, the repository) and is opened as it is.
pub fn read_beneath(root: &Path, rel: &str, cap: u64) -> Result<Vec<u8>, Unread> {
    bounded(open_beneath(root, rel)?, cap)
}

/// Open the regular file at `rel` inside `root` as [`read_beneath`] does.
pub fn open_beneath(root: &Path, rel: &str) -> Result<File, Unread> {
    regular(open_beneath_fd(
        root,
        rel,
        libc::O_RDONLY | libc::O_NONBLOCK,
    )?)
}

/// Is `rel` a directory inside `root`, reached with no link on the way (as [`read_beneath`])?
pub fn dir_beneath(root: &Path, rel: &str) -> Result<(), Unread> {
    open_beneath_fd(root, rel, libc::O_RDONLY | libc::O_DIRECTORY).map(|fd| {
        // SAFETY: a descriptor just returned to us, closed once here.
        unsafe { libc::close(fd) };
    })
}

const READ_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;

/// The parts of `rel` to walk: refused when absolute, empty or with `..`.
fn parts(rel: &str) -> Result<Vec<&std::ffi::OsStr>, Unread> {
    let mut out = Vec::new();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            _ => return Err(Unread::NotInside),
        }
    }
    if rel.is_empty() {
        return Err(Unread::NotInside);
    }
    Ok(out)
}

fn c_path(bytes: &[u8]) -> Result<CString, Unread> {
    CString::new(bytes).map_err(|_| Unread::Io(std::io::ErrorKind::InvalidInput.into()))
}

fn open_beneath_fd(root: &Path, rel: &str, flags: libc::c_int) -> Result<libc::c_int, Unread> {
    let parts = parts(rel)?;
    let root_name = c_path(root.as_os_str().as_bytes())?;
    // SAFETY: a NUL-terminated path; the descriptor is owned by `dir` at once.
    let root_fd = unsafe {
        libc::open(
            root_name.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if root_fd < 0 {
        return Err(Unread::Io(std::io::Error::last_os_error()));
    }
    // SAFETY: a descriptor just opened, owned here alone.
    let dir = unsafe { OwnedFd::from_raw_fd(root_fd) };
    if parts.is_empty() {
        // `.`: the root itself.
        // SAFETY: duplicating a descriptor we hold.
        let fd = unsafe { libc::fcntl(dir.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
        return if fd < 0 {
            Err(Unread::Io(std::io::Error::last_os_error()))
        } else if flags & libc::O_DIRECTORY == 0 {
            // SAFETY: ours to close.
            unsafe { libc::close(fd) };
            Err(Unread::NotRegular)
        } else {
            Ok(fd)
        };
    }
    let joined: Vec<u8> = parts.iter().fold(Vec::new(), |mut acc, p| {
        if !acc.is_empty() {
            acc.push(b'/');
        }
        acc.extend_from_slice(p.as_bytes());
        acc
    });
    #[cfg(target_os = "linux")]
    if let Some(answer) = openat2(&dir, &c_path(&joined)?, flags) {
        return answer;
    }
    walk(dir, &parts, flags)
}

/// `openat2(2)` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`; `None` when the kernel has no
/// `openat2` (before 5.6) or a sandbox forbids it: the caller walks instead.
#[cfg(target_os = "linux")]
fn openat2(
    dir: &OwnedFd,
    rel: &CString,
    flags: libc::c_int,
) -> Option<Result<libc::c_int, Unread>> {
    /// `struct open_how` of `openat2(2)` (libc's is non-exhaustive: it may grow).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: (flags | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS,
    };
    // SAFETY: a live directory descriptor, a NUL-terminated path, and `how` with its size.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            rel.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd >= 0 {
        return Some(Ok(fd as libc::c_int));
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOSYS | libc::EPERM | libc::E2BIG) => None,
        // O_DIRECTORY | O_NOFOLLOW at a link says ENOTDIR (a link on the way says ELOOP).
        Some(libc::ENOTDIR) if is_link(dir, rel) => Some(Err(Unread::Link)),
        _ => Some(Err(Unread::from_errno(e))),
    }
}

/// Open `parts` one by one from `dir`, each with `O_NOFOLLOW`: a directory on the way with
/// `O_DIRECTORY`, the last with `flags`.
fn walk(
    mut dir: OwnedFd,
    parts: &[&std::ffi::OsStr],
    flags: libc::c_int,
) -> Result<libc::c_int, Unread> {
    let (last, above) = parts.split_last().expect("at least one part");
    for part in above {
        let name = c_path(part.as_bytes())?;
        // SAFETY: a live directory descriptor and a NUL-terminated name.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                // A link in place of a directory is ELOOP on Linux, ENOTDIR on some systems.
                Some(libc::ENOTDIR) if is_link(&dir, &name) => Unread::Link,
                _ => Unread::from_errno(e),
            });
        }
        // SAFETY: a descriptor just opened, owned here alone.
        dir = unsafe { OwnedFd::from_raw_fd(fd) };
    }
    let name = c_path(last.as_bytes())?;
    // SAFETY: a live directory descriptor and a NUL-terminated name.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ENOTDIR) if is_link(&dir, &name) => Unread::Link,
            _ => Unread::from_errno(e),
        });
    }
    Ok(fd)
}

fn is_link(dir: &OwnedFd, name: &CString) -> bool {
    // SAFETY: an out-parameter for fstatat, read only when it succeeds.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a live directory descriptor, a NUL-terminated name and a stat buffer.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    rc == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

/// The descriptor `fd` (or the error that left it negative) as a regular file, else refused.
fn regular(fd: libc::c_int) -> Result<File, Unread> {
    if fd < 0 {
        return Err(Unread::from_errno(std::io::Error::last_os_error()));
    }
    // SAFETY: a descriptor just opened, owned by the file alone.
    let file = unsafe { File::from_raw_fd(fd) };
    let meta = file.metadata().map_err(Unread::Io)?;
    if !meta.is_file() {
        return Err(Unread::NotRegular);
    }
    Ok(file)
}

/// At most `cap` bytes of `file`; more is refused, never cut.
pub fn bounded(file: File, cap: u64) -> Result<Vec<u8>, Unread> {
    // The size it says it has, to allocate once (never more than the bound).
    let hint = file.metadata().map(|m| m.len().min(cap)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(hint as usize);
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(Unread::Io)?;
    if bytes.len() as u64 > cap {
        return Err(Unread::TooLarge(cap));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(path: &Path) {
        let name = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
    }

    #[test]
    fn a_file_is_read_whole_up_to_its_bound_and_refused_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(read(&p, 10).unwrap(), b"0123456789");
        let err = read(&p, 9).unwrap_err().to_string();
        assert!(
            err.contains("larger than 9 bytes") && err.contains("/f"),
            "{err}"
        );
        assert!(
            read_optional(&dir.path().join("none"), 9)
                .unwrap()
                .is_none()
        );
        assert!(matches!(
            read(&dir.path().join("none"), 9),
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound
        ));
        std::fs::write(&p, b"\xff").unwrap();
        let err = read_text(&p, 9).unwrap_err().to_string();
        assert!(err.contains("not UTF-8"), "{err}");
    }

    #[test]
    fn a_link_a_fifo_or_a_directory_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::os::unix::fs::symlink("/dev/zero", p("zero")).unwrap();
        assert!(matches!(open(&p("zero")), Err(Unread::Link)));
        fifo(&p("fifo"));
        assert!(matches!(open(&p("fifo")), Err(Unread::NotRegular)));
        std::fs::create_dir(p("d")).unwrap();
        assert!(matches!(open(&p("d")), Err(Unread::NotRegular)));
        let err = read(&p("fifo"), 9).unwrap_err().to_string();
        assert!(
            err.contains("not a regular file") && err.contains("fifo"),
            "{err}"
        );
    }

    /// Both ways of reading beneath a root answer alike: `openat2` and the walk.
    fn beneath_cases(open_at: impl Fn(&Path, &str) -> Result<File, Unread>) {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::write(outside.path().join("secret"), "x").unwrap();
        std::fs::create_dir_all(r.join("tests/deep")).unwrap();
        std::fs::write(r.join("tests/deep/a.rs"), "ok").unwrap();
        std::os::unix::fs::symlink(outside.path(), r.join("out")).unwrap();
        std::os::unix::fs::symlink(r.join("tests"), r.join("in")).unwrap();
        std::os::unix::fs::symlink("deep/a.rs", r.join("tests/rel.rs")).unwrap();
        fifo(&r.join("tests/fifo"));
        let mut text = String::new();
        open_at(r, "tests/deep/a.rs")
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "ok");
        assert!(open_at(r, "./tests/deep/a.rs").is_ok());
        for (rel, want) in [
            ("out/secret", "Link"),
            ("in/deep/a.rs", "Link"),
            ("tests/rel.rs", "Link"),
            ("tests/fifo", "NotRegular"),
            ("tests/deep", "NotRegular"),
            ("tests/missing", "Missing"),
            ("tests/deep/a.rs/x", "Missing"),
            ("/etc/passwd", "NotInside"),
            ("tests/../../x", "NotInside"),
            ("", "NotInside"),
        ] {
            let got = format!("{:?}", open_at(r, rel).unwrap_err());
            assert!(got.starts_with(want), "{rel}: {got}, want {want}");
        }
    }

    #[test]
    fn beneath_a_root_nothing_but_a_regular_file_with_no_link_on_its_path_is_opened() {
        beneath_cases(open_beneath);
    }

    #[test]
    fn the_walk_without_openat2_answers_as_openat2_does() {
        beneath_cases(|root, rel| {
            let parts = parts(rel)?;
            let name = c_path(root.as_os_str().as_bytes())?;
            // SAFETY: a NUL-terminated path; owned at once.
            let fd = unsafe { libc::open(name.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
            // SAFETY: a descriptor just opened.
            let dir = unsafe { OwnedFd::from_raw_fd(fd) };
            if parts.is_empty() {
                return Err(Unread::NotRegular);
            }
            regular(walk(dir, &parts, libc::O_RDONLY | libc::O_NONBLOCK)?)
        });
    }

    #[test]
    fn a_directory_beneath_is_found_without_links() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("tests")).unwrap();
        std::os::unix::fs::symlink("tests", root.path().join("t")).unwrap();
        assert!(dir_beneath(root.path(), "tests").is_ok());
        assert!(dir_beneath(root.path(), ".").is_ok());
        assert!(matches!(dir_beneath(root.path(), "t"), Err(Unread::Link)));
        assert!(matches!(
            dir_beneath(root.path(), "x"),
            Err(Unread::Missing)
        ));
    }
}
