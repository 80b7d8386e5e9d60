#!/usr/bin/env bash
# bench/get-ab.sh - GET (or any mix) per server CPU-second of two skerry builds, side by side.
#
# Starts builds A and B at once, both pinned on SERVER_CPU with --threads 1, each on its own
# data dir, and fills keys 1..N in each with exactly N SETs of DATA_SIZE bytes. Then REPEATS
# times, alternating A and B, runs skerry-bench (pinned on CLIENT_CPU, CONNS connections,
# uniform keys, RATIO, DURATION seconds) against one of them while the other idles. Each run
# is judged by its operations per server CPU-second (utime+stime of the server over the
# run), so a pair taken seconds apart compares the builds' cost on the same machine state.
# Prints one line per run, the per-pair ratios B/A and their median; OUT=DIR writes
# DIR/get-ab.tsv.
#
# Usage: A=path/to/old/skerry B=target/release/skerry bench/get-ab.sh
# Environment (defaults): N=1000000 DATA_SIZE=1024 REPEATS=4 DURATION=15 CONNS=128
# RATIO=0:1 (SET:GET) SERVER_CPU=0 CLIENT_CPU=1 SKERRY_ARGS (extra flags for both servers)
# SKERRY_DATA_SIZE (N * (DATA_SIZE + 64) * 1.5 + 256 MiB) BENCH_BIN=target/release/skerry-bench
# DATA_DIR=bench/tmp/get-ab (removed at exit unless KEEP_DATA=1) OUT.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
A=${A:?set A to the first skerry binary}
B=${B:?set B to the second skerry binary}
N=${N:-1000000}
DATA_SIZE=${DATA_SIZE:-1024}
REPEATS=${REPEATS:-4}
DURATION=${DURATION:-15}
CONNS=${CONNS:-128}
RATIO=${RATIO:-0:1}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SKERRY_ARGS=${SKERRY_ARGS:-}
BENCH_BIN=${BENCH_BIN:-$ROOT/target/release/skerry-bench}
DATA_DIR=${DATA_DIR:-$ROOT/bench/tmp/get-ab}
OUT=${OUT:-}
KEEP_DATA=${KEEP_DATA:-0}
SKERRY_DATA_SIZE=${SKERRY_DATA_SIZE:-$(((N * (DATA_SIZE + 64) * 3 / 2 + (256 << 20)) >> 20))mb}
CLK_TCK=$(getconf CLK_TCK)

log() { printf '[get-ab] %s\n' "$*" >&2; }
die() { printf '[get-ab] ERROR: %s\n' "$*" >&2; exit 2; }

APT_UPDATED=0
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
for b in "$A" "$B" "$BENCH_BIN"; do [[ -x $b ]] || die "not executable: $b"; done

declare -A PID PORT
cleanup() {
    local s
    for s in "${!PID[@]}"; do kill "${PID[$s]}" 2>/dev/null || true; done
    for s in "${!PID[@]}"; do wait "${PID[$s]}" 2>/dev/null || true; done
    [[ $KEEP_DATA == 1 ]] || rm -rf "$DATA_DIR"
}
trap cleanup EXIT

rm -rf "$DATA_DIR" && mkdir -p "$DATA_DIR"
for s in A B; do
    bin=${!s}
    PORT[$s]=$(free_port)
    # shellcheck disable=SC2086 # SKERRY_ARGS is a list of flags
    taskset -c "$SERVER_CPU" "$bin" --port "${PORT[$s]}" --bind 127.0.0.1 --threads 1 \
        --dir "$DATA_DIR/$s" --data-size "$SKERRY_DATA_SIZE" $SKERRY_ARGS \
        >"$DATA_DIR/$s.log" 2>&1 &
    PID[$s]=$!
    for ((i = 0; i < 300; i++)); do resp_ping "${PORT[$s]}" && break; sleep 0.05; done
    resp_ping "${PORT[$s]}" || die "$s did not answer PING (see $DATA_DIR/$s.log)"
    log "$s ($bin): filling keys 1..$N with $N SETs of $DATA_SIZE bytes"
    taskset -c "$CLIENT_CPU" "$BENCH_BIN" --host 127.0.0.1 -p "${PORT[$s]}" -q -n "$N" -d "$DATA_SIZE" \
        -t 1 -c "$CONNS" -P 16 --key-pattern sequential --ratio 1:0 --requests "$N" \
        --require-no-errors --json "$DATA_DIR/fill-$s.json" >/dev/null
done

rows=()
for ((rep = 1; rep <= REPEATS; rep++)); do
    for s in A B; do
        json=$DATA_DIR/run-$s-$rep.json
        c0=$(cpu_ticks "${PID[$s]}")
        taskset -c "$CLIENT_CPU" "$BENCH_BIN" --host 127.0.0.1 -p "${PORT[$s]}" -q -n "$N" -d "$DATA_SIZE" \
            -t 1 -c "$CONNS" --key-pattern uniform --ratio "$RATIO" --test-time "$DURATION" \
            --seed "$rep" --require-no-misses --json "$json" >/dev/null ||
            die "$s rep $rep: skerry-bench failed (misses or errors; see $json)"
        c1=$(cpu_ticks "${PID[$s]}")
        cpu=$(calc "($c1 - $c0) / $CLK_TCK")
        ops=$(json_num "$json" ops)
        ops_s=$(json_num "$json" ops_per_sec)
        per_cpu=$(calc "$ops / $cpu")
        log "$(printf 'rep %d %s: %8.0f ops/s  server CPU %5.2f s  %8.0f ops/CPU-s' "$rep" "$s" "$ops_s" "$cpu" "$per_cpu")"
        rows+=("$rep	$s	$ops_s	$cpu	$per_cpu")
    done
done

tsv=$(printf '%s\n' "${rows[@]}")
ratios=$(awk -F'\t' '$2 == "A" { a[$1] = $5 } $2 == "B" { b[$1] = $5 } END { for (r in a) if (r in b) printf "%s\t%.3f\n", r, b[r] / a[r] }' <<<"$tsv" | sort -n)
echo "A: $A"
echo "B: $B"
echo "ops per server CPU-second, median: A $(awk -F'\t' '$2 == "A" { print $5 }' <<<"$tsv" | median_of), B $(awk -F'\t' '$2 == "B" { print $5 }' <<<"$tsv" | median_of)"
echo "B/A per pair: $(cut -f2 <<<"$ratios" | tr '\n' ' ')"
echo "B/A median: $(cut -f2 <<<"$ratios" | median_of)"
if [[ -n $OUT ]]; then
    mkdir -p "$OUT"
    { printf 'rep\tbuild\tops_per_s\tserver_cpu_s\tops_per_cpu_s\n'; printf '%s\n' "$tsv"; } >"$OUT/get-ab.tsv"
    log "wrote $OUT/get-ab.tsv"
fi
