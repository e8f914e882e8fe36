#!/usr/bin/env bash
# The crash soak (tests/store_soak.rs): concurrent writers of the built binary, random kill -9s
# and SPLICE_FAILPOINTs, then the store's invariants. Prints the kill events survived and the
# transitions checked.
#
#   scripts/soak.sh          until 60 kill events (what CI runs; a few seconds)
#   scripts/soak.sh 500      until 500 kill events
#   scripts/soak.sh 600s     for ten minutes
#   SPLICE_SOAK_SEED=N scripts/soak.sh …   replay a seed printed by an earlier run
set -euo pipefail
cd "$(dirname "$0")/.."
SPLICE_SOAK="${1:-60}" cargo test --locked --test store_soak -- --nocapture --test-threads 1
