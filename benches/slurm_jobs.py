#!/usr/bin/env python3
"""Issue 17's figures on a real Slurm cluster: submit-to-start latency and the runner's CPU per
job over N trivial jobs, and the poller's cost with M jobs in flight in a small store and in one
padded with P plain beads (it must not grow with the store's size).

usage: python3 benches/slurm_jobs.py [N=100] [M=50] [P=10000] [path/to/splice]
Needs a cluster: `scripts/slurm-up.sh && source /tmp/splice-slurm/env`. Everything it writes
is in a temp directory, removed afterwards (its jobs stay in Slurm's listing until MinJobAge).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 100
M = int(sys.argv[2]) if len(sys.argv) > 2 else 50
P = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
SPLICE = os.path.abspath(sys.argv[4] if len(sys.argv) > 4 else "target/release/splice")
TICK = os.sysconf("SC_CLK_TCK")
SLOTS = int(os.environ.get("SLOTS", "8"))


def sh(args, cwd, **kw):
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True, **kw)


def repo(tmp, script, jobs):
    """A git repository whose leaf route is one argv step running `script` as a Slurm job."""
    os.makedirs(tmp)
    sh(["git", "init", "-q", "-b", "main"], tmp)
    open(os.path.join(tmp, "README.md"), "w").write("bench\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@x")
    sh(["git", "add", "-A"], tmp, env=env)
    sh(["git", "commit", "-q", "-m", "init"], tmp, env=env)
    os.makedirs(os.path.join(tmp, ".splice"))
    manifest = {
        "routes": {"root": ["plan", "delegate"], "compound": ["plan", "delegate"],
                   "leaf": ["work"]},
        "steps": [
            {"name": "plan", "role": "split", "floors": []},
            {"name": "delegate", "floors": [{"kind": "children_finished"}]},
            {"name": "work", "run": {"argv": ["sh", "-c", script]}, "floors": [],
             "timeout_s": 600, "max_attempts": 1},
        ],
    }
    json.dump(manifest, open(os.path.join(tmp, ".splice", "manifest.json"), "w"))
    root = os.path.realpath(tmp)
    open(os.path.join(tmp, ".splice", "config.toml"), "w").write(
        f'[limits]\njobs = {jobs}\n\n[executor]\nkind = "slurm"\nshared_root = "{root}"\n'
        'cpus = 1\n')
    return tmp


def tasks(tmp, n):
    for i in range(n):
        sh([SPLICE, "init-task", "--title", f"job {i}"], tmp)


def pad(tmp, n):
    """`n` plain beads, imported as a bd export (one journaled batch)."""
    path = os.path.join(tmp, "pad.jsonl")
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"pad-{i}", "title": f"plain {i}", "status": "open",
                                "priority": 2, "issue_type": "task",
                                "created_at": "2026-01-01T00:00:00Z",
                                "updated_at": "2026-01-01T00:00:00Z"}) + "\n")
    sh([SPLICE, "import", "bd", path], tmp)


def cpu_s(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    # utime + stime, and the children it has reaped (squeue, scontrol, sbatch): cutime + cstime.
    return sum(int(f) for f in fields[11:15]) / TICK


def latency_and_cpu(base):
    starts = os.path.join(base, "starts")
    script = (f'date +%s%N >> {starts}; '
              'splice transition propose --bead "$SPLICE_BEAD" --step work --artifact done')
    # At most as many at once as the one-node cluster has slots (8 CPUs): the latency measured
    # is Slurm's scheduling and the runner's, not a queue behind its own jobs.
    tmp = repo(os.path.join(base, "latency"), script, SLOTS)
    tasks(tmp, N)
    t0 = time.perf_counter()
    run = subprocess.run(["/usr/bin/time", "-f", "%U %S", SPLICE, "run", "--output", "json"],
                         cwd=tmp, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    user, system = map(float, run.stderr.strip().splitlines()[-1].split())
    status = json.loads(run.stdout)["status"]
    submitted = sorted(os.stat(os.path.join(d, f)).st_mtime_ns
                       for d, _, fs in os.walk(os.path.join(tmp, ".splice", "runs"))
                       for f in fs if f.endswith(".sbatch"))
    started = sorted(int(x) for x in open(starts).read().split())
    lat = sorted((s - b) / 1e9 for s, b in zip(started, submitted))
    print(f"{N} trivial jobs: status {status}, wall {wall:.1f} s; runner CPU {user + system:.2f} s "
          f"({(user + system) / N * 1000:.1f} ms a job: user {user:.2f} s, sys {system:.2f} s)")
    print(f"  submit-to-start: median {lat[len(lat) // 2]:.2f} s, p90 "
          f"{lat[int(len(lat) * 0.9)]:.2f} s, min {lat[0]:.2f} s, max {lat[-1]:.2f} s "
          "(start order paired with submit order)")


def poller_cost(base, name, padding):
    tmp = repo(os.path.join(base, name), "sleep 40; exit 0", M)
    tasks(tmp, M)
    if padding:
        pad(tmp, padding)
    run = subprocess.Popen([SPLICE, "run", "--output", "json"], cwd=tmp,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Wait until all M are submitted (a .sbatch each), then measure 20 s of waiting.
    deadline = time.time() + 120
    while time.time() < deadline:
        n = sum(f.endswith(".sbatch") for _, _, fs in os.walk(os.path.join(tmp, ".splice", "runs"))
                for f in fs)
        if n >= M:
            break
        time.sleep(0.5)
    time.sleep(2)
    c0, t0 = cpu_s(run.pid), time.perf_counter()
    time.sleep(20)
    c1, t1 = cpu_s(run.pid), time.perf_counter()
    # SIGTERM: the runner scancels its jobs, records them cancelled and releases the claims.
    run.terminate()
    run.wait()
    beads = len(os.listdir(os.path.join(tmp, ".splice", "beads")))
    print(f"  {M} jobs in flight, {beads} beads in the store: the runner used "
          f"{(c1 - c0) * 1000 / (t1 - t0):.1f} ms CPU a second while waiting "
          f"({(c1 - c0):.2f} s over {t1 - t0:.0f} s)")


def main():
    base = tempfile.mkdtemp(prefix="splice-slurmbench-")
    try:
        latency_and_cpu(base)
        print(f"poller, {M} jobs of 40 s in flight:")
        poller_cost(base, "small", 0)
        poller_cost(base, "padded", P)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
