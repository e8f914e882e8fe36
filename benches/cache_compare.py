#!/usr/bin/env python3
"""Whole `splice` processes through the snapshot cache and around it (`--no-cache`), alternated.

usage: python3 benches/cache_compare.py N [RUNS] [path/to/splice]

Writes a store of N beads as `benches/snapshot_files.py` writes it (about 1.2 KB a bead) in a temp
directory, waits until every file is older than the cache's racy window (two seconds since its
last change, ctime included), warms the cache with one read, then runs each command RUNS times
(default 9) with and without the cache, one after the other, stdout to /dev/null, and prints
each one's median, minimum and maximum wall time and its median and minimum CPU time (user +
system: less noisy than wall time on a shared machine). Nothing is written outside the temp directory,
which is removed afterwards.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from snapshot_files import AT, bead  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 9
SPLICE = sys.argv[3] if len(sys.argv) > 3 else "target/release/splice"
COMMANDS = [["snapshot"], ["status", "--json"]]


def timed(args, env):
    """Wall and CPU (user + system) seconds of one process."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run([SPLICE, *args], env=env, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system
                                                          - before.children_system)
    return wall, cpu


def main():
    tmp = tempfile.mkdtemp(prefix="splice-cachebench-")
    try:
        beads = os.path.join(tmp, ".splice", "beads")
        os.makedirs(beads)
        for i in range(N):
            b = bead(i)
            with open(os.path.join(beads, b["id"] + ".json"), "w") as f:
                f.write(json.dumps(b, indent=2) + "\n")
        # The cache trusts a file only once its last change is two seconds old.
        time.sleep(2.5)
        env = dict(os.environ, SPLICE_NOW=AT)
        dir_args = ["--dir", tmp]
        timed(["cache", "rebuild", *dir_args], env)
        for command in COMMANDS:
            times = {"cache": [], "no-cache": []}
            for _ in range(RUNS):
                times["cache"].append(timed([*command, *dir_args], env))
                times["no-cache"].append(timed([*command, "--no-cache", *dir_args], env))
            for mode, runs in times.items():
                wall = [w * 1000 for w, _ in runs]
                cpu = [c * 1000 for _, c in runs]
                print(f"{N} beads, `{' '.join(command)}` {mode:>8}: wall median "
                      f"{statistics.median(wall):.0f} ms (min {min(wall):.0f}, max "
                      f"{max(wall):.0f}), CPU median {statistics.median(cpu):.0f} ms (min "
                      f"{min(cpu):.0f}), {RUNS} runs")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
