#!/usr/bin/env bash
# Stops the one-node cluster scripts/slurm-up.sh started: slurmd, slurmctld, then munged, each by
# the pid file it wrote in ${SPLICE_SLURM_DIR:-/tmp/splice-slurm} (never a process it did not
# start), waits for them to go, and removes the directory.
#
#   scripts/slurm-down.sh          stop and remove the directory
#   scripts/slurm-down.sh --keep   stop, keep the directory (logs, state, munge key)
set -euo pipefail

DIR="${SPLICE_SLURM_DIR:-/tmp/splice-slurm}"
KEEP=""
case "${1:-}" in
"") ;;
--keep) KEEP=1 ;;
*)
    printf 'usage: %s [--keep]\n' "$0" >&2
    exit 2
    ;;
esac

say() { printf 'slurm-down: %s\n' "$*" >&2; }

# The pid in $DIR/<name>.pid when that process is alive and is the daemon named.
live_pid() {
    local file="$DIR/$1.pid" pid
    [[ -f "$file" ]] || return 1
    pid="$(cat "$file")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    grep -q "$1" "/proc/$pid/cmdline" 2>/dev/null || return 1
    printf '%s\n' "$pid"
}

stop() {
    local name="$1" pid deadline
    pid="$(live_pid "$name")" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + 20))
    while kill -0 "$pid" 2>/dev/null; do
        if ((SECONDS >= deadline)); then
            say "$name ($pid) still running after 20 s; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 1
            break
        fi
        sleep 0.2
    done
}

if [[ ! -d "$DIR" ]]; then
    say "nothing in $DIR"
    exit 0
fi
# Jobs still running end with their slurmd's step daemons; cancel them first so none lingers.
if [[ -f "$DIR/slurm.conf" ]] && live_pid slurmctld >/dev/null; then
    SLURM_CONF="$DIR/slurm.conf" timeout 5 scancel --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 1 30); do
        [[ -z "$(SLURM_CONF="$DIR/slurm.conf" timeout 5 squeue -h -t running,completing 2>/dev/null)" ]] && break
        sleep 0.5
    done
fi
stop slurmd
stop slurmctld
stop munged
if [[ -z "$KEEP" ]]; then
    rm -rf "$DIR"
    say "stopped; removed $DIR"
else
    say "stopped; kept $DIR"
fi
