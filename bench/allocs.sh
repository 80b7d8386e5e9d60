#!/usr/bin/env bash
# Heap allocations per command on the hot path (decision 0022): counts the calls of the
# allocator's entry points in a running Skerry with perf uprobes (root, `perf` installed).
#
#   bench/allocs.sh LABEL -- SKERRY-COMMAND...
#
# Starts SKERRY-COMMAND (--port/--dir added; a Skerry binary built with symbols, as the
# release profile is), fills 200,000 keys with 1 KiB values, then for SET and GET at
# pipeline 1 and 16 runs `redis-benchmark -c 50 -n $N -r 200000 -d 1024` while perf counts
# the calls of mi_malloc_aligned and mi_realloc_aligned (every Rust allocation and growth
# under mimalloc), and prints one line per point:
#   LABEL TEST P=.. allocs_per_op=.. reallocs_per_op=..
# GET reads cold values from the device the first time (about 60% of the keys in the
# first GET point); set GET_WARM=1 to read every key once before measuring.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { echo "[$(basename "$0")] $*" >&2; }
die() { log "${label:-}: $*"; exit 1; }
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
label=$1; shift 2
n=${N:-200000}
command -v perf >/dev/null || die "perf is needed (apt-get install linux-perf)"
bin=$(readlink -f "$(command -v "$1")")
nm "$bin" 2>/dev/null | grep ' T mi_malloc_aligned$' >/dev/null || die "$bin has no mi_malloc_aligned symbol"
perf probe -q -d 'probe_skerry*:*' >/dev/null 2>&1 || true
for f in mi_malloc_aligned mi_realloc_aligned; do
    perf probe -q -x "$bin" --add "$f" >/dev/null 2>&1 || die "perf probe on $f failed (root?)"
done
group=$(perf probe -l 2>/dev/null | sed -n 's/^ *\(probe_[a-z_0-9]*\):mi_malloc_aligned.*/\1/p' | head -1)
dir=$(mktemp -d /tmp/bench.XXXXXX)
cleanup() {
    redis-cli -p "${PORT:-0}" shutdown nosave >/dev/null 2>&1 || kill "${PID:-0}" 2>/dev/null || true
    wait "${PID:-0}" 2>/dev/null || true
    perf probe -q -d "$group:*" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
start_on_free_port "$dir" "$@"
bench() { redis-benchmark -p "$PORT" -c 50 -d 1024 -r 200000 -q "$@" >/dev/null 2>&1; }
bench -t set -n 400000 -P 16
[[ ${GET_WARM:-0} == 1 ]] && bench -t get -n 600000 -P 16
out=$dir/perf.txt
for t in set get; do
    for p in 1 16; do
        perf stat -x, -e "$group:mi_malloc_aligned,$group:mi_realloc_aligned" -p "$PID" -o "$out" -- \
            redis-benchmark -p "$PORT" -c 50 -d 1024 -r 200000 -q -t "$t" -n "$n" -P "$p" >/dev/null 2>&1
        a=$(awk -F, '/mi_malloc_aligned/ {print $1}' "$out")
        r=$(awk -F, '/mi_realloc_aligned/ {print $1}' "$out")
        printf '%s %s P=%s allocs_per_op=%.2f reallocs_per_op=%.2f\n' "$label" "$t" "$p" \
            "$(echo "$a / $n" | bc -l)" "$(echo "$r / $n" | bc -l)"
    done
done
