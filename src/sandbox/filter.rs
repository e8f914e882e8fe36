//! The seccomp half: a classic BPF program, built in the parent, installed by the child.
//!
//! It refuses with `EPERM`: `socket(AF_UNIX, …)` (`socketpair` stays: pipes between a
//! program's own processes), `clone` with a namespace flag, `unshare`, `setns`, every mount
//! call, `chroot`, `bpf`, module loading, `kexec`, `reboot`, swap, keyrings, `userfaultfd`,
//! `perf_event_open`, file handles, and the `TIOCSTI`/`TIOCLINUX` ioctls that type into a
//! terminal. `clone3` answers `ENOSYS` (its flags are in memory a filter cannot read), so
//! libc falls back to `clone`, whose flags it can. A system call of another ABI (x32) is
//! refused. Everything else is allowed.

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JSET_K: u16 = 0x45;
const JGE_K: u16 = 0x35;
const RET_K: u16 = 0x06;
/// `offsetof(struct seccomp_data, …)`.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low 32 bits of argument `i` (little-endian).
const fn arg(i: u32) -> u32 {
    16 + 8 * i
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;
/// x32 system calls on x86_64 carry this bit.
const X32_BIT: u32 = 0x4000_0000;

const CLONE_NAMESPACES: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | 0x80/* CLONE_NEWTIME */) as u32;

/// The system calls refused outright.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn refused() -> Vec<libc::c_long> {
    let mut calls = vec![
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_bpf,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_userfaultfd,
        libc::SYS_perf_event_open,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_acct,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([libc::SYS_iopl, libc::SYS_ioperm]);
    calls
}

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

fn errno(e: i32) -> libc::sock_filter {
    stmt(RET_K, RET_ERRNO | (e as u32 & 0xffff))
}

/// Refuse `nr` when argument `i` (low 32 bits) has any bit of `mask` (`set`) or equals it.
fn on_arg(nr: libc::c_long, i: u32, test: u16, value: u32, e: i32) -> [libc::sock_filter; 5] {
    [
        jump(JEQ_K, nr as u32, 0, 4),
        stmt(LD_W_ABS, arg(i)),
        jump(test, value, 0, 1),
        errno(e),
        stmt(LD_W_ABS, NR),
    ]
}

/// The program.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn program() -> Result<Vec<libc::sock_filter>, String> {
    let mut p = vec![
        stmt(LD_W_ABS, ARCH),
        jump(JEQ_K, AUDIT_ARCH, 1, 0),
        errno(libc::EPERM),
        stmt(LD_W_ABS, NR),
        jump(JGE_K, X32_BIT, 0, 1),
        errno(libc::EPERM),
    ];
    for nr in refused() {
        p.push(jump(JEQ_K, nr as u32, 0, 1));
        p.push(errno(libc::EPERM));
    }
    p.push(jump(JEQ_K, libc::SYS_clone3 as u32, 0, 1));
    p.push(errno(libc::ENOSYS));
    p.extend(on_arg(
        libc::SYS_socket,
        0,
        JEQ_K,
        libc::AF_UNIX as u32,
        libc::EPERM,
    ));
    p.extend(on_arg(
        libc::SYS_clone,
        0,
        JSET_K,
        CLONE_NAMESPACES,
        libc::EPERM,
    ));
    p.extend(on_arg(
        libc::SYS_ioctl,
        1,
        JEQ_K,
        libc::TIOCSTI as u32,
        libc::EPERM,
    ));
    p.extend(on_arg(
        libc::SYS_ioctl,
        1,
        JEQ_K,
        libc::TIOCLINUX as u32,
        libc::EPERM,
    ));
    p.push(stmt(RET_K, RET_ALLOW));
    if p.len() > u16::MAX as usize {
        return Err("seccomp: the program is too long".into());
    }
    Ok(p)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn program() -> Result<Vec<libc::sock_filter>, String> {
    Err("seccomp: splice's filter is written for x86_64 and aarch64 only".into())
}

/// Can this kernel install filters? (`PR_GET_SECCOMP` answers `EINVAL` when it cannot.)
pub(super) fn available() -> bool {
    // SAFETY: PR_GET_SECCOMP takes no pointer.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

/// Install `program` on the calling thread (no_new_privs must be set).
///
/// # Safety
/// Between `fork` and `exec`: only a system call, on memory the caller keeps alive.
pub(super) unsafe fn install(program: &[libc::sock_filter]) -> std::io::Result<()> {
    let prog = libc::sock_fprog {
        len: program.len() as u16,
        filter: program.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `prog` points at `program`, alive for the call.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &prog as *const libc::sock_fprog,
        )
    };
    match r {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}
