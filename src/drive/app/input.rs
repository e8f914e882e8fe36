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

    /// A pseudo-terminal: (the terminal's side, the side a terminal emulator or sshd holds).
    fn pty() -> (libc::c_int, libc::c_int) {
        let (mut master, mut slave) = (-1, -1);
        // SAFETY: openpty writes the two descriptors; no name, termios or size is asked for.
        let r = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
        (slave, master)
    }

    #[test]
    fn a_terminal_that_hangs_up_between_two_waits_is_gone_not_unknown() {
        let (tty, far) = pty();
        // SAFETY: `tty` is a descriptor openpty just gave us; the File owns and closes it.
        let input = Input::Tty(unsafe { std::os::fd::FromRawFd::from_raw_fd(tty) });
        let wait = Duration::from_millis(20);
        assert_eq!(input.wait(wait), Tty::Quiet);
        // SAFETY: two bytes from a buffer on this frame to a descriptor we opened (a line: the
        // terminal is in cooked mode).
        assert_eq!(unsafe { libc::write(far, b"q\n".as_ptr().cast(), 2) }, 2);
        assert_eq!(input.wait(wait), Tty::Readable);
        // The far side goes away while the app is drawing, not waiting: the next wait must see
        // a terminal that is gone, never hand the terminal to crossterm.
        unsafe { libc::close(far) };
        assert_eq!(input.wait(wait), Tty::Gone);
    }
}
