#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the Slurm tests (tests/slurm/) and for a developer
# trying `[executor] kind = "slurm"`: munged, slurmctld and slurmd, all pointed at files in one
# directory, no slurmdbd (splice does not depend on accounting).
#
#   scripts/slurm-up.sh                   bring it up (installs slurm-wlm and munge when root)
#   source /tmp/splice-slurm/env          point sbatch/squeue/scontrol at it
#   SPLICE_SLURM_TESTS=1 cargo test --test slurm -- --include-ignored
#   scripts/slurm-down.sh                 stop it and remove the directory
#
# Idempotent: when a cluster from an earlier run in the same directory answers, it exits 0 at once.
# Everything it writes lives in ${SPLICE_SLURM_DIR:-/tmp/splice-slurm}. slurmctld listens on
# ${SPLICE_SLURM_PORT:-6817} and slurmd on the port after it: a second cluster on the same machine
# (another directory) needs other ports.
set -euo pipefail

DIR="${SPLICE_SLURM_DIR:-/tmp/splice-slurm}"
PORT="${SPLICE_SLURM_PORT:-6817}"
CONF="$DIR/slurm.conf"
SOCKET="$DIR/munge.socket"
HOST="$(hostname -s)"
START=$SECONDS

say() { printf 'slurm-up: %s\n' "$*" >&2; }

# Whether the cluster in $DIR answers with a node ready for jobs.
answers() {
    [[ -f "$CONF" ]] || return 1
    local states
    states="$(SLURM_CONF="$CONF" timeout 5 sinfo -h -o %T 2>/dev/null)" || return 1
    grep -qE '^(idle|mixed|allocated)' <<<"$states"
}

install_if_missing() {
    local missing=()
    for tool in slurmctld slurmd sbatch munged; do
        command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    if [[ "$(id -u)" -ne 0 ]]; then
        say "missing: ${missing[*]}; install the packages slurm-wlm and munge" \
            "(e.g. sudo apt-get install slurm-wlm munge) or run this script as root"
        exit 1
    fi
    say "installing slurm-wlm and munge (missing: ${missing[*]})"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
}

start_munged() {
    if [[ -f "$DIR/munged.pid" ]] && kill -0 "$(cat "$DIR/munged.pid")" 2>/dev/null; then
        return 0
    fi
    if [[ ! -f "$DIR/munge.key" ]]; then
        if command -v mungekey >/dev/null 2>&1; then
            mungekey --create --keyfile="$DIR/munge.key" --bits=1024
        else
            dd if=/dev/urandom of="$DIR/munge.key" bs=1 count=1024 status=none
        fi
        chmod 0400 "$DIR/munge.key"
    fi
    rm -f "$SOCKET" "$SOCKET.lock"
    munged --socket="$SOCKET" --key-file="$DIR/munge.key" --pid-file="$DIR/munged.pid" \
        --log-file="$DIR/munged.log" --seed-file="$DIR/munge.seed" --num-threads=2
}

write_conf() {
    cat >"$CONF" <<EOF
# Written by splice's scripts/slurm-up.sh: one node, this host, everything under $DIR.
ClusterName=splice
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups in a container: track processes through /proc, bind no tasks.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# More CPUs than the machine has, so several small jobs run at once.
SlurmdParameters=config_overrides
# No slurmdbd: splice must not depend on accounting.
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
# Ended jobs stay visible to squeue --states=all and scontrol show job for 10 minutes.
MinJobAge=600
KillWait=5
OverTimeLimit=0
InactiveLimit=0
SlurmctldTimeout=10
SlurmdTimeout=10
ReturnToService=2
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=8 RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
    cat >"$DIR/env" <<EOF
# Source this to point Slurm's clients at the cluster scripts/slurm-up.sh started.
export SLURM_CONF=$CONF
EOF
}

# Start a daemon unless its pid file names a live process.
start_daemon() {
    local name="$1"
    if [[ -f "$DIR/$name.pid" ]] && kill -0 "$(cat "$DIR/$name.pid")" 2>/dev/null; then
        return 0
    fi
    SLURM_CONF="$CONF" "$name" -f "$CONF"
}

logs() {
    for log in munged slurmctld slurmd; do
        if [[ -f "$DIR/$log.log" ]]; then
            say "--- $DIR/$log.log (last 40 lines)"
            tail -n 40 "$DIR/$log.log" >&2
        fi
    done
}

wait_idle() {
    local deadline=$((SECONDS + 90)) resumed=""
    while ((SECONDS < deadline)); do
        answers && return 0
        # A node a restarted slurmd left down comes back by hand once.
        if [[ -z "$resumed" ]] && SLURM_CONF="$CONF" timeout 5 sinfo -h -o %T 2>/dev/null \
            | grep -qE '^(down|drain)'; then
            SLURM_CONF="$CONF" scontrol update NodeName="$HOST" State=RESUME || true
            resumed=1
        fi
        sleep 1
    done
    say "the node did not become idle within 90 s; sinfo says:"
    SLURM_CONF="$CONF" timeout 5 sinfo -N -l >&2 || true
    logs
    exit 1
}

main() {
    PATH="$PATH:/usr/sbin:/sbin"
    if command -v sinfo >/dev/null 2>&1 && answers; then
        say "a cluster already answers in $DIR (source $DIR/env)"
        exit 0
    fi
    install_if_missing
    mkdir -p "$DIR/state" "$DIR/spool"
    chmod 0755 "$DIR"
    start_munged
    write_conf
    start_daemon slurmctld || { logs; exit 1; }
    start_daemon slurmd || { logs; exit 1; }
    wait_idle
    say "up in $((SECONDS - START)) s: source $DIR/env"
}

main "$@"
