#!/usr/bin/env python3
"""`splice status --json` against beads_rust's `br ready --json` (and `br list --json`) over
the same N issues (issue 16's first goal: at 10,000, splice at most half of `br ready`).

usage: python3 benches/vs_br.py path/to/br [N] [path/to/splice] [RUNS]

The splice store is `snapshot_files.py`'s; br gets the same issues through splice's own bd
export (`splice export bd`, then `br sync --import-only`). The commands are alternated and the
wall-time medians printed. Nothing is written outside a temp directory, removed afterwards.
br is not built here: `cargo install beads_rust` needs a newer rustc than some machines have
(see issue 16's notes for how it was built).
"""
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BR = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
SPLICE = os.path.abspath(sys.argv[3] if len(sys.argv) > 3 else "target/release/splice")
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 21

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("snapshot_files", f"{here}/snapshot_files.py")
files = importlib.util.module_from_spec(spec)
sys.argv = sys.argv[:1]  # snapshot_files reads its own arguments when loaded
spec.loader.exec_module(files)


def timed(argv, cwd, env):
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000


def main():
    tmp = tempfile.mkdtemp(prefix="splice-vs-br-")
    try:
        ours, theirs = os.path.join(tmp, "splice"), os.path.join(tmp, "br")
        beads = os.path.join(ours, ".splice", "beads")
        os.makedirs(beads)
        for i in range(N):
            b = files.bead(i)
            with open(os.path.join(beads, b["id"] + ".json"), "w") as f:
                f.write(json.dumps(b, indent=2) + "\n")
        env = dict(os.environ, SPLICE_NOW=files.AT)
        os.makedirs(theirs)
        subprocess.run(["git", "init", "-q"], cwd=theirs, check=True)
        subprocess.run([BR, "init"], cwd=theirs, check=True, stdout=subprocess.DEVNULL)
        export = os.path.join(theirs, ".beads", "issues.jsonl")
        subprocess.run([SPLICE, "export", "bd", "--dir", ours, "-o", export], env=env,
                       check=True)
        subprocess.run([BR, "sync", "--import-only"], cwd=theirs, check=True,
                       stdout=subprocess.DEVNULL)
        commands = {
            "splice status --json": ([SPLICE, "status", "--json"], ours),
            "br ready --json": ([BR, "ready", "--json"], theirs),
            "br list --json": ([BR, "list", "--json"], theirs),
        }
        times = {name: [] for name in commands}
        for argv, cwd in commands.values():
            timed(argv, cwd, env)  # warm the page cache (and splice's cache)
        names = list(commands)
        for i in range(RUNS):
            for name in names[i % len(names):] + names[:i % len(names)]:
                times[name].append(timed(*commands[name], env))
        median = {name: statistics.median(t) for name, t in times.items()}
        for name, t in times.items():
            print(f"{name}: median {median[name]:.1f} ms, min {min(t):.1f} ms ({len(t)} runs)")
        ours_ms = median["splice status --json"]
        print(f"splice status ÷ br ready: {ours_ms / median['br ready --json']:.2f}; "
              f"÷ br list: {ours_ms / median['br list --json']:.2f}")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
