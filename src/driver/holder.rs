//! Who a runner is: its holder identity (`run:<host>:<pid>:<run-id>`, unique per run) and
//! whether the process behind such a holder still lives on this host.

use std::sync::atomic::{AtomicU32, Ordering};

use super::snapshot::Identity;
use crate::error::Result;

/// This process's host name, for holder identities.
pub fn host() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).replace(':', "_")
}

/// A fresh run id and the holder identity that names this process: `run:<host>:<pid>:<run-id>`.
pub fn identity() -> Result<Identity> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let stamp = crate::clock::now()?.format("%Y%m%dT%H%M%SZ");
    let pid = std::process::id();
    let run = format!("{stamp}-{pid}-{n}");
    Ok(Identity {
        holder: format!("run:{}:{pid}:{run}", host()),
        run,
    })
}

/// Is the process behind a `run:<host>:<pid>:…` holder alive? `None` when it names another host
/// or is not a runner's holder.
pub fn holder_alive(holder: &str) -> Option<bool> {
    let mut parts = holder.splitn(4, ':');
    if parts.next() != Some("run") {
        return None;
    }
    let (h, pid) = (parts.next()?, parts.next()?.parse::<i32>().ok()?);
    if h != host() || pid <= 0 {
        return None;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    Some(rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}
