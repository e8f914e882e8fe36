//! The Landlock half: the ruleset built in the parent (with the `landlock` crate, for the exact
//! ABI the kernel reports, failing rather than enforcing less), and the raw call the child makes.

use std::os::fd::OwnedFd;
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope,
};

use super::Policy;

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask the kernel for its ABI version.
const CREATE_RULESET_VERSION: libc::c_uint = 1;

/// The kernel's Landlock ABI version, 0 when it has none.
pub(super) fn abi() -> i32 {
    // SAFETY: with a null attribute, size 0 and the version flag the call only returns a number.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(v).unwrap_or(0).max(0)
}

/// The ruleset for `policy` at `abi`, as a file descriptor for [`restrict_self`].
pub(super) fn build(abi: i32, policy: &Policy) -> Result<OwnedFd, String> {
    let version = ABI::from(abi);
    let all = AccessFs::from_all(version);
    let read = AccessFs::from_read(version);
    let devices = read | AccessFs::WriteFile | ioctl(version);
    // Never a device node; never a socket file (a sandboxed process serves nothing on a path).
    let write = all & !(AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::MakeSock);
    let failed = |what: &str, e: &dyn std::fmt::Display| format!("Landlock: {what}: {e}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(|e| failed("the access rights", &e))?;
    if abi >= super::MIN_ABI {
        ruleset = ruleset
            .scope(Scope::from_all(version))
            .map_err(|e| failed("the scopes", &e))?;
    }
    let mut created = ruleset
        .create()
        .map_err(|e| failed("creating the ruleset", &e))?;
    let groups: [(&[std::path::PathBuf], BitFlags<AccessFs>); 3] = [
        (&policy.read, read),
        (&policy.write, write),
        (&policy.devices, devices),
    ];
    for (paths, access) in groups {
        for path in paths {
            let Some(rule) = rule(path, access, version)? else {
                continue;
            };
            created = created
                .add_rule(rule)
                .map_err(|e| failed(&format!("a rule for {}", path.display()), &e))?;
        }
    }
    Option::<OwnedFd>::from(created).ok_or_else(|| "Landlock: no ruleset was created".into())
}

/// `IoctlDev` from ABI 5 (a terminal's `ioctl`s); nothing before.
fn ioctl(version: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_all(version) & AccessFs::IoctlDev
}

/// The rule for `path`: `None` when it does not exist (a toolchain this machine lacks); a file
/// gets only the rights a file can have.
fn rule(
    path: &Path,
    access: BitFlags<AccessFs>,
    version: ABI,
) -> Result<Option<PathBeneath<PathFd>>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("Landlock: {}: {e}", path.display())),
    };
    let access = match meta.is_dir() {
        true => access,
        false => access & AccessFs::from_file(version),
    };
    let fd = PathFd::new(path).map_err(|e| format!("Landlock: {}: {e}", path.display()))?;
    Ok(Some(PathBeneath::new(fd, access)))
}

/// The child's call: enter the ruleset `fd` (no_new_privs must be set).
///
/// # Safety
/// Between `fork` and `exec`: only a system call.
pub(super) unsafe fn restrict_self(fd: i32) -> std::io::Result<()> {
    // SAFETY: a file descriptor and a zero flag.
    let r = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) };
    match r {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}
