#!/usr/bin/env python3
"""The CPU an idle cockpit uses: `splice drive` over N bead files, in a pseudo-terminal, no key
pressed, nothing written to the store (issue 38, item 4).

usage: python3 benches/drive_idle.py [N] [SECONDS] [path/to/splice]

Writes a store of N beads as `benches/snapshot_files.py` writes it, with every eighth open leaf
claimed by a person (`alice`) and every eighth, the next, by a runner of this host whose pid
lives (pid 1), in a temp directory. Starts the cockpit on a 120x40 pseudo-terminal (its screen
read and thrown away), waits until its first frame is drawn and it has settled, then reads its
CPU time (user + system, `/proc/<pid>/stat`) over SECONDS (default 20) three times and prints
each as a share of one core. Quits it with `q`. Nothing is written outside the temp directory,
which is removed afterwards.
"""
import fcntl
import json
import os
import pty
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from snapshot_files import AT, bead  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
SPLICE = sys.argv[3] if len(sys.argv) > 3 else "target/release/splice"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    """User + system seconds of `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def claimed(i, b):
    """`b` with a claim on every eighth open leaf by a person, and the next by a live runner."""
    host = socket.gethostname().replace(":", "_")
    if i and b["status"] == "open" and i % 8 in (1, 2):
        holder = "alice" if i % 8 == 1 else f"run:{host}:1:r-bench"
        b["pipeline"]["lease"] = {"holder": holder, "since": AT}
    return b


def main():
    tmp = tempfile.mkdtemp(prefix="splice-drivebench-")
    proc = None
    try:
        beads = os.path.join(tmp, ".splice", "beads")
        os.makedirs(beads)
        for i in range(N):
            b = claimed(i, bead(i))
            with open(os.path.join(beads, b["id"] + ".json"), "w") as f:
                f.write(json.dumps(b, indent=2) + "\n")
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = dict(os.environ, TERM="xterm-256color")
        env.pop("NO_COLOR", None)
        proc = subprocess.Popen([SPLICE, "drive", "--dir", tmp], stdin=slave, stdout=slave,
                                stderr=slave, env=env, start_new_session=True)
        os.close(slave)
        drawn = threading.Event()

        def drain():
            while True:
                try:
                    if not os.read(master, 65536):
                        return
                except OSError:
                    return
                drawn.set()

        threading.Thread(target=drain, daemon=True).start()
        if not drawn.wait(60):
            sys.exit("no frame within 60 s")
        # The first read and frame done, and whatever they left behind freed.
        time.sleep(5)
        shares = []
        for _ in range(3):
            before, start = cpu_s(proc.pid), time.monotonic()
            time.sleep(SECONDS)
            used, wall = cpu_s(proc.pid) - before, time.monotonic() - start
            shares.append(100 * used / wall)
            print(f"{N} beads idle: {used:.2f} s CPU in {wall:.1f} s = {shares[-1]:.1f}% of a core",
                  flush=True)
        print(f"median {sorted(shares)[1]:.1f}% of a core")
        os.write(master, b"q")
        proc.wait(10)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
