#!/usr/bin/env bash
# bench/load-read.sh - a dataset loaded, then read back at once: Skerry vs Debian's
# redis-server (decision 0033).
#
# For each server, REPEATS times, alternating: a fresh server pinned on SERVER_CPU (Skerry
# with --threads THREADS and otherwise its defaults; redis-server with --save "" and
# --appendonly no), LOAD_N SETs of VALUE_BYTES-byte values over KEYSPACE random keys at
# pipeline 16 (redis-benchmark on CLIENT_CPU, 50 connections), then GET_N GETs at pipeline
# 1 and GET_N_P16 at pipeline 16 over the same keys. Reports ops per server CPU-second of
# the GET points (medians), the Skerry/Redis ratios, and the values Skerry read from its
# device during the GETs (INFO storage_value_reads): a value written a moment ago should
# come from RAM.
#
# Environment (defaults): REPEATS=3 THREADS=1 KEYSPACE=200000 LOAD_N=200000 GET_N=200000
# GET_N_P16=1000000 VALUE_BYTES=1024 SERVER_CPU=0 CLIENT_CPU=1
# SKERRY_BIN=target/release/skerry OUT=bench/results/<date>-load-read.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=bench/load-read.sh
[[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }

REPEATS=${REPEATS:-3}
THREADS=${THREADS:-1}
KEYSPACE=${KEYSPACE:-200000}
LOAD_N=${LOAD_N:-200000}
GET_N=${GET_N:-200000}
GET_N_P16=${GET_N_P16:-1000000}
VALUE_BYTES=${VALUE_BYTES:-1024}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
OUT=${OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%d)-load-read}

log() { printf '[load-read] %s\n' "$*" >&2; }
die() { printf '[load-read] ERROR: %s\n' "$*" >&2; exit 2; }
APT_UPDATED=0
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

for v in REPEATS THREADS KEYSPACE LOAD_N GET_N GET_N_P16 VALUE_BYTES SERVER_CPU CLIENT_CPU; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer (got '${!v}')"
done
need_cmd redis-server redis-server
need_cmd redis-benchmark redis-tools
need_cmd redis-cli redis-tools
[[ -x $SKERRY_BIN ]] || die "no $SKERRY_BIN (cargo build --release)"

mkdir -p "$OUT"
DATA=$(mktemp -d "$ROOT/bench/tmp/load-read.XXXXXX")
PID=""
cleanup() {
    [[ -n $PID ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$DATA"
}
trap cleanup EXIT
RUNS=$OUT/runs.tsv
printf 'server\trepeat\tpoint\tops_per_cpu_s\tops_per_s\tdevice_reads\n' >"$RUNS"

storage_reads() {
    redis-cli -p "$PORT" INFO storage | tr -d '\r' | awk -F: '$1 == "storage_value_reads" { print $2 }'
}

# one SERVER REPEAT: a fresh server, the load, the two GET points.
one() {
    local server=$1 rep=$2 dir=$DATA/$1-$2 p n c0 c1 t0 t1 r0 r1
    mkdir -p "$dir"
    if [[ $server == redis ]]; then
        start_on_free_port "$dir" taskset -c "$SERVER_CPU" redis-server --save "" --appendonly no
    else
        start_on_free_port "$dir" taskset -c "$SERVER_CPU" "$SKERRY_BIN" --threads "$THREADS"
    fi
    taskset -c "$CLIENT_CPU" redis-benchmark -p "$PORT" -c 50 -n "$LOAD_N" -r "$KEYSPACE" \
        -d "$VALUE_BYTES" -P 16 -t set -q >/dev/null
    for p in 1 16; do
        n=$GET_N
        ((p == 16)) && n=$GET_N_P16
        r0=$([[ $server == skerry ]] && storage_reads || echo 0)
        c0=$(cpu_ticks "$PID")
        t0=$(now)
        taskset -c "$CLIENT_CPU" redis-benchmark -p "$PORT" -c 50 -n "$n" -r "$KEYSPACE" \
            -d "$VALUE_BYTES" -P "$p" -t get -q >/dev/null
        t1=$(now)
        c1=$(cpu_ticks "$PID")
        r1=$([[ $server == skerry ]] && storage_reads || echo 0)
        printf '%s\t%s\tGET P%s\t%s\t%s\t%s\n' "$server" "$rep" "$p" \
            "$(calc "$n / (($c1 - $c0 > 0 ? $c1 - $c0 : 1) / $(getconf CLK_TCK))")" "$(calc "$n / ($t1 - $t0)")" \
            "$((r1 - r0))" >>"$RUNS"
    done
    kill "$PID"
    wait "$PID" 2>/dev/null || true
    PID=""
    rm -rf "$dir"
}

for ((rep = 1; rep <= REPEATS; rep++)); do
    for server in skerry redis; do
        log "repeat $rep: $server"
        one "$server" "$rep"
    done
done

col() { # SERVER POINT COLUMN -> median
    awk -F'\t' -v s="$1" -v p="$2" -v c="$3" '$1 == s && $3 == p { print $c }' "$RUNS" | median_of
}
{
    echo "# Load, then read back: Skerry vs Redis"
    echo
    echo "\`$PROG\` — $(date -u '+%Y-%m-%d %H:%M UTC'); Skerry $(git -C "$ROOT" rev-parse --short HEAD) \`--threads $THREADS\`, redis-server $(redis-server --version | awk '{print $3}'); servers on CPU $SERVER_CPU, redis-benchmark on CPU $CLIENT_CPU."
    echo "Load: $LOAD_N SETs of $VALUE_BYTES bytes over $KEYSPACE random keys at pipeline 16; then GETs over the same keys. Medians of $REPEATS."
    echo
    echo "| point | Skerry ops/CPU-s | Redis ops/CPU-s | Skerry/Redis | Skerry device reads |"
    echo "|---|---:|---:|---:|---:|"
    for point in "GET P1" "GET P16"; do
        a=$(col skerry "$point" 4)
        b=$(col redis "$point" 4)
        printf '| %s | %.0f | %.0f | %.2f | %.0f |\n' "$point" "$a" "$b" "$(calc "$a / $b")" "$(col skerry "$point" 6)"
    done
} >"$OUT/summary.md"
cat "$OUT/summary.md"
log "runs: $RUNS"
