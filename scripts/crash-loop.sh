#!/usr/bin/env bash
# Crash loop: CYCLES (default 100) kill -9 cycles against one release-build server with
# `--appendfsync always` and a data file of DATA_SIZE (default 8gb) in a temporary directory.
# Each cycle runs 4 writers (SET with values of 3 B to 20 KiB, DEL) on 800 keys, kills the
# server with SIGKILL mid-write, restarts it and checks that every acknowledged operation came
# back (only the one in flight per writer may be newer) and that DBSIZE is exact.
#
#   scripts/crash-loop.sh                    # 100 cycles, 8gb
#   CYCLES=1000 DATA_SIZE=16gb scripts/crash-loop.sh
#
# The driver is the ignored test `crash_loop` in tests/persistence.rs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CYCLES=${CYCLES:-100}
DATA_SIZE=${DATA_SIZE:-8gb}

echo "== building the release binary"
cargo build --release --bin skerry
cargo test --release --test persistence --no-run

tmp=$(mktemp -d "${TMPDIR:-/tmp}/skerry-crash-loop.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log="$tmp/crash-loop.log"

echo "== $CYCLES kill -9 cycles, data file $DATA_SIZE under $tmp"
start=$SECONDS
status=0
# The test harness puts each server's directory (and data file) under TMPDIR.
TMPDIR="$tmp" CRASH_CYCLES="$CYCLES" DATA_SIZE="$DATA_SIZE" \
    cargo test --release --test persistence -- --ignored --exact crash_loop --nocapture \
    2>&1 | tee "$log" || status=$?
elapsed=$((SECONDS - start))
passed=$(grep -c '^crash-loop: cycle .* ok' "$log" || true)
# The test's own clock (cycles only, no build), from its last progress line.
cycles_s=$(grep '^crash-loop: cycle .* ok' "$log" | tail -n 1 | sed -E 's/.*, ([0-9.]+) s\)$/\1/' || true)

echo "== cycles passed: $passed/$CYCLES, elapsed: ${cycles_s:-0}s in the cycles (${elapsed}s wall)"
if ((status != 0)) || ((passed != CYCLES)); then
    echo "== crash loop FAILED"
    exit 1
fi
