//! The terminal's input as `poll(2)` sees it, watched by the app itself before crossterm is
//! asked: crossterm's reader spins without end on a terminal that has hung up (an ssh connection
//! dropped, a tmux server killed).

use std::time::Duration;

/// The terminal's input, as `poll(2)` on it sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tty {
    /// Keys to read.
    Readable,
    /// Nothing within the wait.
    Quiet,
    /// Hung up or closed: nobody is at the terminal any more.
    Gone,
    /// No terminal was found to watch (neither standard input nor `/dev/tty`): ask crossterm.
    Unknown,
}

/// The terminal the keys come from, chosen once when the cockpit starts: standard input when it
/// is a terminal, else `/dev/tty` (which crossterm reads then). Asked each time instead,
/// standard input stops being a terminal the moment it hangs up (`isatty` fails on it), and a
/// hang-up between two waits would send the app into crossterm's spin.
pub(super) enum Input {
    Stdin,
    /// `/dev/tty`, opened here and kept open while it is polled.
    Tty(std::fs::File),
    /// No terminal to find.
    Nothing,
}

impl Input {
    pub(super) fn open() -> Input {
        // SAFETY: isatty only reads the descriptor's state.
        if unsafe { libc::isatty(0) } == 1 {
            return Input::Stdin;
        }
        std::fs::File::open("/dev/tty").map_or(Input::Nothing, Input::Tty)
    }

    /// Wait up to `wait` for the terminal.
    pub(super) fn wait(&self, wait: Duration) -> Tty {
        let fd = match self {
            Input::Stdin => 0,
            Input::Tty(tty) => std::os::fd::AsRawFd::as_raw_fd(tty),
            Input::Nothing => return Tty::Unknown,
        };
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(wait.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: poll on one pollfd that lives on this stack frame.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n < 0 {
            // Interrupted by a signal: the caller looks at its flags and comes back.
            return Tty::Quiet;
        }
        if pfd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            Tty::Gone
        } else if pfd.revents & libc::POLLIN != 0 {
            Tty::Readable
        } else {
            Tty::Quiet
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pseudo-terminal: (the terminal's side, the side a terminal emulator or sshd holds),
    /// both close-on-exec from the start. Other tests fork and exec at the same time, and a
    /// child that inherited the far side would keep the terminal from hanging up when this test
    /// closes it.
    fn pty() -> (std::fs::File, std::fs::File) {
        use std::os::fd::FromRawFd;
        let flags = libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC;
        // SAFETY: posix_openpt takes flags only and returns a new descriptor or -1.
        let far = unsafe { libc::posix_openpt(flags) };
        assert!(
            far >= 0,
            "posix_openpt: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: `far` is the descriptor just opened; the File owns and closes it.
        let far = unsafe { std::fs::File::from_raw_fd(far) };
        let fd = std::os::fd::AsRawFd::as_raw_fd(&far);
        let mut name = [0 as libc::c_char; 128];
        // SAFETY: `fd` is an open pseudo-terminal master; `name` is a buffer of the length
        // given, which ptsname_r NUL-terminates.
        unsafe {
            assert_eq!(libc::grantpt(fd), 0);
            assert_eq!(libc::unlockpt(fd), 0);
            assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0);
        }
        // SAFETY: ptsname_r succeeded, so `name` holds a NUL-terminated path.
        let path = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) };
        // SAFETY: `path` is NUL-terminated; open returns a new descriptor or -1.
        let tty = unsafe { libc::open(path.as_ptr(), flags) };
        assert!(
            tty >= 0,
            "open {path:?}: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: `tty` is the descriptor just opened; the File owns and closes it.
        (unsafe { std::fs::File::from_raw_fd(tty) }, far)
    }

    #[test]
    fn a_terminal_that_hangs_up_between_two_waits_is_gone_not_unknown() {
        use std::io::{Read, Write};
        let (tty, mut far) = pty();
        let mut reader = tty.try_clone().unwrap();
        let input = Input::Tty(tty);
        let wait = Duration::from_millis(20);
        assert_eq!(input.wait(wait), Tty::Quiet);
        // A line: the terminal is in cooked mode.
        far.write_all(b"q\n").unwrap();
        assert_eq!(input.wait(wait), Tty::Readable);
        // The app reads the key, as it does after a readable wait.
        let mut line = [0u8; 2];
        reader.read_exact(&mut line).unwrap();
        assert_eq!(input.wait(wait), Tty::Quiet);
        // The far side goes away while the app is drawing, not waiting: the next wait must see
        // a terminal that is gone, never hand the terminal to crossterm. It waits long enough
        // for the hang-up to arrive, and returns as soon as it does.
        drop(far);
        assert_eq!(input.wait(Duration::from_secs(10)), Tty::Gone);
    }
}
