#!/usr/bin/env python3
"""Time `splice snapshot` over N bead files of about 1 KB each in a temp directory.

usage: python3 benches/snapshot_files.py [N] [path/to/splice]
Nothing is written outside the temp directory, which is removed afterwards.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
SPLICE = sys.argv[2] if len(sys.argv) > 2 else "target/release/splice"
AT = "2025-01-01T00:00:00Z"


def bead(i):
    parent = None if i == 0 else f"sp-root.{(i - 1) // 50}" if i > 200 else "sp-root"
    return {
        "id": "sp-root" if i == 0 else f"sp-root.{i}",
        "title": f"synthetic task {i}",
        "description": "x" * 420,
        "status": "closed" if i % 8 == 0 and i else "open",
        "priority": i % 3, "issue_type": "task", "labels": ["bench"],
        **({"parent": parent} if parent else {}),
        "dependencies": [], "created_at": AT, "updated_at": AT,
        "closed_at": None, "close_reason": None, "metadata": {},
        "pipeline": {
            "seq": 10, "kind": "root" if i == 0 else "leaf",
            "route": "root" if i == 0 else "leaf",
            "step": "delegate" if i == 0 else "implement", "entered": 5,
            "files": [f"src/m{i % 7}/f{i % 5}.rs"],
            "attempts": {"implement": i % 3},
            "history": [{"step": "implement", "seq": 5, "at": AT}],
        },
    }


def main():
    tmp = tempfile.mkdtemp(prefix="splice-snapbench-")
    try:
        beads = os.path.join(tmp, ".splice", "beads")
        os.makedirs(beads)
        os.makedirs(os.path.join(tmp, ".splice", "worktrees", "sp-root.1"))
        size = 0
        for i in range(N):
            b = bead(i)
            text = json.dumps(b, indent=2) + "\n"
            size += len(text)
            with open(os.path.join(beads, b["id"] + ".json"), "w") as f:
                f.write(text)
        env = dict(os.environ, SPLICE_NOW=AT)
        runs = []
        out_path = os.path.join(tmp, "snapshot.json")
        for _ in range(5):
            with open(out_path, "wb") as out:
                start = time.perf_counter()
                subprocess.run([SPLICE, "snapshot", "--dir", tmp], env=env, stdout=out,
                               check=True)
                runs.append(time.perf_counter() - start)
        snap = json.load(open(out_path))
        print(f"{N} beads, {size / N:.0f} bytes each on average; snapshot "
              f"{os.path.getsize(out_path) / 1e6:.1f} MB with {len(snap['beads'])} beads")
        print("splice snapshot wall time: " + ", ".join(f"{r * 1000:.0f} ms" for r in runs)
              + f" (best {min(runs) * 1000:.0f} ms)")
        start = time.perf_counter()
        subprocess.run([SPLICE, "status", "--dir", tmp], env=env, stdout=subprocess.DEVNULL,
                       check=True)
        print(f"splice status wall time: {(time.perf_counter() - start) * 1000:.0f} ms")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
