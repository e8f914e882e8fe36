//! Capabilities: a child of a privileged splice (root) gives up all of them before it runs
//! anything, and locks the securebits so that `exec` as uid 0 grants none back. An unprivileged
//! splice holds none, and no_new_privs keeps set-uid programs from adding any.

/// `_LINUX_CAPABILITY_VERSION_3`.
const VERSION_3: u32 = 0x2008_0522;
/// `CAP_SETPCAP`: needed to shrink the bounding set and to set the securebits.
const CAP_SETPCAP: u32 = 8;
/// `SECBIT_NOROOT | _LOCKED | SECBIT_NO_SETUID_FIXUP | _LOCKED | SECBIT_KEEP_CAPS_LOCKED |
/// SECBIT_NO_CAP_AMBIENT_RAISE | _LOCKED`.
const SECUREBITS: libc::c_ulong = 0xef;

/// What the child drops, decided in the parent (reading `/proc` there, not in the child).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Drop {
    /// The process holds capabilities: clear the sets.
    any: bool,
    /// It holds `CAP_SETPCAP`: also empty the bounding set and lock the securebits.
    setpcap: bool,
    /// The highest capability number (`/proc/sys/kernel/cap_last_cap`).
    last: u32,
}

impl Drop {
    pub(super) fn for_this_process() -> Drop {
        let effective = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("CapEff:"))?.to_string();
                u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
            })
            // Unreadable: assume the worst and drop what can be dropped.
            .unwrap_or(u64::MAX);
        let last = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(63);
        Drop {
            any: effective != 0,
            setpcap: effective & (1 << CAP_SETPCAP) != 0,
            last,
        }
    }
}

#[repr(C)]
struct Header {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Drop every capability `what` says this process holds.
///
/// # Safety
/// Between `fork` and `exec`: only system calls on stack memory.
pub(super) unsafe fn drop_all(what: Drop) -> std::io::Result<()> {
    if !what.any {
        return Ok(());
    }
    let fail = || Err(std::io::Error::last_os_error());
    // SAFETY (the block): prctl and capset take integers and pointers to stack values.
    unsafe {
        if what.setpcap {
            for cap in 0..=what.last {
                if libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) != 0
                    && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
                {
                    return fail();
                }
            }
            if libc::prctl(libc::PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0) != 0 {
                return fail();
            }
        }
        if libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
            && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
        {
            return fail();
        }
        let header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let none = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capset, &header as *const Header, none.as_ptr()) != 0 {
            return fail();
        }
    }
    Ok(())
}
