#!/usr/bin/env bash
# bench/lifecycle-defrag.sh - continuous overwrites on a small device: defrag keeps the
# writes going, and what it costs.
#
# Two Skerry configurations, alternated REPEATS times, each run on a fresh data file:
#   defrag:    --data-size = DEVICE_X times the live data, defrag on (the defaults);
#   no-defrag: a data file large enough that defrag never has work, `storage-defrag no`.
# Each run: fill keys 1..N with exactly N SETs of DATA_SIZE bytes (sequential), then exactly
# WRITES_X * N uniform random SETs over the same keys (every one must succeed:
# --require-no-errors), then checks DBSIZE == N, storage_live_bytes equal to its value after
# the fill (same-size overwrites: live data is exact), STRLEN of sample keys, and, for the
# defrag run, that defrag rewrote blocks. Reported per run: overwrite ops/s, server CPU s,
# ops per CPU-s, blocks rewritten, records moved, bytes read, device bytes written per
# client byte (write amplification), p99. The figure: median defrag ops/s / median
# no-defrag ops/s (issue 4's target: >= 0.80).
#
# Skerry runs with --threads 1 on SERVER_CPU, skerry-bench on CLIENT_CPU.
#
# Environment (defaults): N=100000, DATA_SIZE=1024, DEVICE_X=4, WRITES_X=40, REPEATS=3,
# CONNS=50, PIPELINE=1, SERVER_CPU=0, CLIENT_CPU=1, SKERRY_BIN, BENCH_BIN, SKERRY_ARGS,
# DATA_DIR=bench/tmp/lifecycle-defrag (removed at exit unless KEEP_DATA=1),
# OUT=bench/results/<date>-defrag (summary.md, runs.tsv).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${N:-100000}
DATA_SIZE=${DATA_SIZE:-1024}
DEVICE_X=${DEVICE_X:-4}
WRITES_X=${WRITES_X:-40}
REPEATS=${REPEATS:-3}
CONNS=${CONNS:-50}
PIPELINE=${PIPELINE:-1}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
BENCH_BIN=${BENCH_BIN:-$ROOT/target/release/skerry-bench}
SKERRY_ARGS=${SKERRY_ARGS:-}
DATA_DIR=${DATA_DIR:-$ROOT/bench/tmp/lifecycle-defrag}
OUT=${OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%d)-defrag}

log() { printf '[lifecycle-defrag] %s\n' "$*" >&2; }
die() { printf '[lifecycle-defrag] ERROR: %s\n' "$*" >&2; exit 2; }
for v in N DATA_SIZE DEVICE_X WRITES_X REPEATS CONNS PIPELINE SERVER_CPU CLIENT_CPU; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer (got '${!v}')"
done
((N >= 1 && REPEATS >= 1 && DEVICE_X >= 2)) || die "N and REPEATS must be >= 1, DEVICE_X >= 2"

APT_UPDATED=0
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
need_cmd redis-cli redis-tools
for b in "$SKERRY_BIN:--bin skerry" "$BENCH_BIN:-p skerry-bench"; do
    bin=${b%%:*}
    if [[ ! -x $bin ]]; then
        log "building $bin"
        # shellcheck disable=SC2086  # the cargo arguments are word-split on purpose
        (cd "$ROOT" && cargo build --release --locked ${b#*:}) >&2 || die "build failed"
    fi
done

# Live data: one record per key (header 40 bytes + key + value, 8-byte aligned), as
# storage_live_bytes counts it; the fill checks the estimate.
KEY_BYTES=$((${#N} + 2))
LIVE_EST=$((N * ((40 + KEY_BYTES + DATA_SIZE + 7) / 8 * 8)))
SMALL_DEVICE=$((LIVE_EST * DEVICE_X))
BIG_DEVICE=$((LIVE_EST * (WRITES_X + 4) + (256 << 20)))
WRITES=$((N * WRITES_X))

PORT=$(free_port)
rm -rf "$DATA_DIR"
mkdir -p "$DATA_DIR" "$OUT"
cleanup() {
    if [[ -n ${PID:-} ]]; then
        kill -KILL "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    [[ ${KEEP_DATA:-0} == 1 ]] || rm -rf "$DATA_DIR"
}
trap cleanup EXIT
rcli() { redis-cli -h 127.0.0.1 -p "$PORT" "$@" 2>&1; }
field() { rcli info storage | tr -d '\r' | awk -F: -v k="storage_$1" '$1 == k { print $2 }'; }

RUNS=$OUT/runs.tsv
printf 'config\trepeat\tdevice_bytes\tops_per_sec\tserver_cpu_s\tops_per_cpu_s\tp99_us\terrors\tblocks_rewritten\trecords_moved\tdefrag_read_bytes\twrite_amplification\tdbsize\tlive_bytes_fill\tlive_bytes_end\n' >"$RUNS"

run() { # CONFIG REPEAT
    local config=$1 rep=$2 size args dir t0 c0 c1 json ops p99 errors wr0 wr1 live_fill live_end \
        dbsize blocks moved read amp cpu k
    if [[ $config == defrag ]]; then
        size=$SMALL_DEVICE args=""
    else
        size=$BIG_DEVICE args="--storage-defrag no"
    fi
    dir=$DATA_DIR/$config-$rep
    mkdir -p "$dir"
    # shellcheck disable=SC2086  # the argument lists are word-split on purpose
    taskset -c "$SERVER_CPU" "$SKERRY_BIN" --port "$PORT" --bind 127.0.0.1 --dir "$dir" --threads 1 \
        --data-size "$size" --checkpoint-interval-seconds 0 $args $SKERRY_ARGS >"$dir.log" 2>&1 &
    PID=$!
    t0=$SECONDS
    until resp_ping "$PORT"; do
        kill -0 "$PID" 2>/dev/null || { tail -n 5 "$dir.log" >&2; die "skerry exited"; }
        ((SECONDS - t0 < 60)) || die "no PING"
        sleep 0.05
    done
    "$BENCH_BIN" --host 127.0.0.1 -p "$PORT" -q -n "$N" -d "$DATA_SIZE" -c "$CONNS" -P 16 \
        --cpus "$CLIENT_CPU" --key-pattern sequential --ratio 1:0 --requests "$N" \
        --require-no-errors >"$dir.fill.txt" 2>&1 || { cat "$dir.fill.txt" >&2; die "$config: fill failed"; }
    [[ $(rcli dbsize) == "$N" ]] || die "$config: DBSIZE $(rcli dbsize) after the fill, expected $N"
    live_fill=$(field live_bytes)
    wr0=$(field device_written_bytes)
    c0=$(cpu_ticks "$PID")
    json=$dir.json
    "$BENCH_BIN" --host 127.0.0.1 -p "$PORT" -q -n "$N" -d "$DATA_SIZE" -c "$CONNS" -P "$PIPELINE" \
        --cpus "$CLIENT_CPU" --key-pattern uniform --seed "$((rep * 7 + 1))" --ratio 1:0 \
        --requests "$WRITES" --json "$json" >"$dir.run.txt" 2>&1 || true
    c1=$(cpu_ticks "$PID")
    wr1=$(field device_written_bytes)
    ops=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("ops_per_sec") or d["totals"]["ops_per_sec"])' "$json" 2>/dev/null ||
        awk '/^ops/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "ops/s") { print $i; exit } }' "$dir.run.txt")
    p99=$(awk '/p99 / { for (i = 1; i <= NF; i++) if ($i == "p99") { print $(i + 1); exit } }' "$dir.run.txt")
    errors=$(awk '/^errors/ { print $2; exit }' "$dir.run.txt")
    dbsize=$(rcli dbsize)
    # Releases of overwritten records apply once the new records are durable (everysec):
    # give the live bytes up to 5 s to settle.
    for ((k = 0; k < 50; k++)); do
        live_end=$(field live_bytes)
        [[ $live_end == "$live_fill" ]] && break
        sleep 0.1
    done
    blocks=$(field defrag_blocks_rewritten)
    moved=$(field defrag_records_moved)
    read=$(field defrag_bytes_read)
    cpu=$(calc "($c1 - $c0) / $(getconf CLK_TCK)")
    amp=$(calc "($wr1 - $wr0) / ($WRITES * ($live_fill / $N))")
    for k in 1 $((N / 2)) "$N"; do
        [[ $(rcli strlen "$k") == "$DATA_SIZE" ]] || die "$config: STRLEN $k is $(rcli strlen "$k"), expected $DATA_SIZE"
    done
    kill -TERM "$PID"
    wait "$PID" 2>/dev/null || true
    PID=""
    rm -rf "$dir"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$config" "$rep" "$size" "$ops" "$cpu" \
        "$(calc "$WRITES / $cpu")" "$p99" "$errors" "$blocks" "$moved" "$read" "$amp" "$dbsize" "$live_fill" \
        "$live_end" >>"$RUNS"
    log "$config rep $rep: $(printf %.0f "$ops") ops/s, $(printf %.0f "$(calc "$WRITES / $cpu")") ops/CPU-s, errors $errors, blocks rewritten $blocks, records moved $moved, write amplification $(printf %.3f "$amp")"
    [[ $errors == 0 ]] || FAIL+=("$config rep $rep: $errors error replies")
    [[ $dbsize == "$N" ]] || FAIL+=("$config rep $rep: DBSIZE $dbsize, expected $N")
    [[ $live_end == "$live_fill" ]] || FAIL+=("$config rep $rep: live bytes $live_end, $live_fill after the fill")
    [[ $config == no-defrag || $blocks -gt 0 ]] || FAIL+=("$config rep $rep: defrag rewrote no block")
}

FAIL=()
log "N=$N x $DATA_SIZE B (live ~$((LIVE_EST >> 20)) MiB); defrag device $((SMALL_DEVICE >> 20)) MiB (${DEVICE_X}x), no-defrag device $((BIG_DEVICE >> 20)) MiB; $WRITES overwrites (${WRITES_X}x) per run"
for ((r = 1; r <= REPEATS; r++)); do
    run defrag "$r"
    run no-defrag "$r"
done

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
col() { awk -F'\t' -v c="$1" -v k="$2" 'NR > 1 && $1 == c { print $k }' "$RUNS" | median; }
D_OPS=$(col defrag 4) N_OPS=$(col no-defrag 4)
D_CPU=$(col defrag 6) N_CPU=$(col no-defrag 6)
RATIO=$(calc "$D_OPS / $N_OPS")
VERDICT=$(awk -v r="$RATIO" 'BEGIN { print (r >= 0.8) ? "PASS" : "FAIL" }')
{
    echo "# Defrag under continuous overwrites"
    echo
    echo "\`bench/lifecycle-defrag.sh\` — $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')."
    echo "N=$N keys x $DATA_SIZE B, live ~$((LIVE_EST >> 20)) MiB; defrag device ${DEVICE_X}x live ($((SMALL_DEVICE >> 20)) MiB),"
    echo "no-defrag device $((BIG_DEVICE >> 20)) MiB with \`storage-defrag no\`; ${WRITES} uniform random SETs (${WRITES_X}x the live data)"
    echo "per run after an exact fill; Skerry \`--threads 1\` on CPU $SERVER_CPU, skerry-bench on CPU $CLIENT_CPU, $CONNS connections, pipeline $PIPELINE;"
    echo "$REPEATS repeats, alternated; medians. Host: $(nproc) CPUs, load before the last run $(cut -d' ' -f1-3 /proc/loadavg)."
    echo
    echo "| | defrag | no defrag | ratio |"
    echo "|---|---:|---:|---:|"
    echo "| overwrite ops/s (median) | $(printf %.0f "$D_OPS") | $(printf %.0f "$N_OPS") | $(printf %.2f "$RATIO") |"
    echo "| ops per server CPU-s (median) | $(printf %.0f "$D_CPU") | $(printf %.0f "$N_CPU") | $(printf %.2f "$(calc "$D_CPU / $N_CPU")") |"
    echo "| write amplification (device bytes / client record bytes, median) | $(printf %.3f "$(col defrag 12)") | $(printf %.3f "$(col no-defrag 12)") | |"
    echo
    echo "Target (issue 4): defrag throughput >= 0.80 x no-defrag: **$VERDICT** ($(printf %.2f "$RATIO"))."
    if ((${#FAIL[@]})); then
        echo
        echo "Failed checks:"
        printf -- '- %s\n' "${FAIL[@]}"
    else
        echo "Every run: 0 error replies, DBSIZE == N, live bytes exactly as after the fill, STRLEN checks passed."
    fi
    echo
    echo "Runs (\`runs.tsv\`):"
    echo
    echo '```'
    column -t -s $'\t' "$RUNS"
    echo '```'
} >"$OUT/summary.md"
cat "$OUT/summary.md"
((${#FAIL[@]} == 0)) || die "checks failed"
