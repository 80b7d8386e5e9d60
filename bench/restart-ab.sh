#!/usr/bin/env bash
# bench/restart-ab.sh - cold restart (kill -9, full scan) of two skerry builds over the same data.
#
# Fills keys 1..N with exactly N SETs of DATA_SIZE bytes using build A, checks DBSIZE == N,
# then REPEATS times, alternating A and B: kill -9, remove the index checkpoint files (so the
# restart scans every block), start the build again and time it until DBSIZE == N. Servers
# run as in issue 3's method: --threads 1, pinned on SERVER_CPU, inside memcap MEMCAP_MIB
# (when set), --checkpoint-interval-seconds 0. Prints one line per restart and the medians,
# with RSS after each restart; writes OUT/restart-ab.tsv when OUT is set.
#
# Both builds must read the same on-device format.
#
# Usage: A=path/to/old/skerry B=target/release/skerry bench/restart-ab.sh
# Environment (defaults): N=10000000 DATA_SIZE=1024 REPEATS=3 MEMCAP_MIB=2048 (empty: none)
# SERVER_CPU=0 CLIENT_CPU=1 SKERRY_DATA_SIZE (N * (DATA_SIZE + 64) * 1.3 + 256 MiB)
# BENCH_BIN=target/release/skerry-bench DATA_DIR=bench/tmp/restart-ab (removed at exit
# unless KEEP_DATA=1; with KEEP_DATA=1 and a data file already there, the fill is skipped)
# PORT (default: a free one) OUT.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
A=${A:?set A to the first skerry binary}
B=${B:?set B to the second skerry binary}
N=${N:-10000000}
DATA_SIZE=${DATA_SIZE:-1024}
REPEATS=${REPEATS:-3}
MEMCAP_MIB=${MEMCAP_MIB-2048}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BENCH_BIN=${BENCH_BIN:-$ROOT/target/release/skerry-bench}
DATA_DIR=${DATA_DIR:-$ROOT/bench/tmp/restart-ab}
PORT=${PORT:-}
OUT=${OUT:-}
KEEP_DATA=${KEEP_DATA:-0}
START_TIMEOUT=${START_TIMEOUT:-300}
SKERRY_DATA_SIZE=${SKERRY_DATA_SIZE:-$(((N * (DATA_SIZE + 64) * 13 / 10 + (256 << 20)) >> 20))mb}

log() { printf '[restart-ab] %s\n' "$*" >&2; }
die() { printf '[restart-ab] ERROR: %s\n' "$*" >&2; exit 2; }

APT_UPDATED=0
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
for b in "$A" "$B" "$BENCH_BIN"; do [[ -x $b ]] || die "not executable: $b"; done
need_cmd redis-cli redis-tools
need_cmd flock util-linux
need_cmd bc bc
PORT=${PORT:-$(free_port)}
MEMCAP=()
if [[ -n $MEMCAP_MIB ]]; then
    m=$ROOT/../shared/tools/memcap
    [[ -f $m ]] || die "memcap not found at $m (set MEMCAP_MIB= to run without a cap)"
    MEMCAP=(bash "$m" "$MEMCAP_MIB")
fi

SERVER_PID=
stop_server() {
    local pattern="--port $PORT --threads 1 --dir $DATA_DIR" i
    pkill -9 -f -- "$pattern" 2>/dev/null || true
    if [[ -n $SERVER_PID ]]; then wait "$SERVER_PID" 2>/dev/null || true; fi
    # A killed server holds the data file's lock until the kernel has torn it down (its
    # io_uring and memory), after it has left the process list: wait for the lock itself.
    for ((i = 0; i < 300; i++)); do
        [[ -f $DATA_DIR/skerry.data ]] || break
        flock -n "$DATA_DIR/skerry.data" true 2>/dev/null && break
        sleep 0.1
    done
    SERVER_PID=
}
cleanup() {
    stop_server
    [[ $KEEP_DATA == 1 ]] || rm -rf "$DATA_DIR"
}
trap cleanup EXIT

dbsize() { redis-cli -p "$PORT" dbsize 2>/dev/null || true; }

# Starts build $1; sets ELAPSED to the seconds until DBSIZE == N (not in a subshell: the
# server's PID must reach stop_server).
ELAPSED=
start_timed() {
    local t0 deadline
    t0=$(now)
    "${MEMCAP[@]}" taskset -c "$SERVER_CPU" "$1" --port "$PORT" --threads 1 --dir "$DATA_DIR" \
        --data-size "$SKERRY_DATA_SIZE" --checkpoint-interval-seconds 0 \
        >>"$DATA_DIR/server.log" 2>&1 &
    SERVER_PID=$!
    deadline=$((SECONDS + START_TIMEOUT))
    until [[ $(dbsize) == "$N" ]]; do
        ((SECONDS < deadline)) || die "DBSIZE $(dbsize), not $N, after ${START_TIMEOUT}s (see $DATA_DIR/server.log)"
        kill -0 "$SERVER_PID" 2>/dev/null || die "server exited (see $DATA_DIR/server.log)"
        sleep 0.1
    done
    ELAPSED=$(echo "$(now) - $t0" | bc)
}

rss_bytes() {
    redis-cli -p "$PORT" info memory | tr -d '\r' | awk -F: '$1 == "used_memory_rss" { print $2 }'
}

mkdir -p "$DATA_DIR"
if [[ $KEEP_DATA == 1 && -f $DATA_DIR/skerry.data ]]; then
    log "reusing the data in $DATA_DIR"
    start_timed "$A"
else
    rm -rf "$DATA_DIR" && mkdir -p "$DATA_DIR"
    "${MEMCAP[@]}" taskset -c "$SERVER_CPU" "$A" --port "$PORT" --threads 1 --dir "$DATA_DIR" \
        --data-size "$SKERRY_DATA_SIZE" --checkpoint-interval-seconds 0 \
        >>"$DATA_DIR/server.log" 2>&1 &
    SERVER_PID=$!
    log "filling keys 1..$N with $N SETs of $DATA_SIZE bytes"
    "$BENCH_BIN" -p "$PORT" -c 50 -P 16 -n "$N" --key-pattern sequential --ratio 1:0 \
        --requests "$N" -d "$DATA_SIZE" --cpus "$CLIENT_CPU" -q --require-no-errors \
        --connect-timeout 30 >/dev/null
    [[ $(dbsize) == "$N" ]] || die "DBSIZE after the fill is $(dbsize), not $N"
    # The default appendfsync everysec: let the last second of the fill reach the device
    # before the first kill -9.
    sleep 3
fi

rows=()
for ((rep = 1; rep <= REPEATS; rep++)); do
    for name in A B; do
        bin=${!name}
        stop_server
        rm -f "$DATA_DIR"/skerry-index-*.ckpt
        start_timed "$bin"
        s=$ELAPSED
        rss=$(rss_bytes)
        log "rep $rep $name: $s s to DBSIZE $N (full scan), RSS $rss bytes"
        rows+=("$rep	$name	$s	$rss")
    done
done
stop_server

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ma=$(printf '%s\n' "${rows[@]}" | awk -F'\t' '$2 == "A" { print $3 }' | median)
mb=$(printf '%s\n' "${rows[@]}" | awk -F'\t' '$2 == "B" { print $3 }' | median)
echo "A: $A"
echo "B: $B"
echo "median cold restart (kill -9, full scan, N=$N): A $ma s, B $mb s, B/A $(echo "scale=3; $mb / $ma" | bc)"
if [[ -n $OUT ]]; then
    mkdir -p "$OUT"
    { printf 'rep\tbuild\trestart_s\trss_bytes\n'; printf '%s\n' "${rows[@]}"; } >"$OUT/restart-ab.tsv"
    log "wrote $OUT/restart-ab.tsv"
fi
