#!/usr/bin/env bash
# bench/lifecycle-cache.sh - the value cache: Zipf-skewed GET with the cache off vs on.
#
# One Skerry server (--threads 1, pinned on SERVER_CPU; inside memcap MEMCAP_MIB when set)
# is filled with exactly N SETs of DATA_SIZE-byte values (decimal keys 1..N), then restarted
# so that no value is left in the writer's staging images. Then, REPEATS times:
#   - CONFIG SET value-cache-mb 0 (cache off, emptied), DURATION s of zipf(ZIPF) GET;
#   - CONFIG SET value-cache-mb CACHE_MB (cache on, empty), WARMUP s of the same GET
#     (unmeasured: fills the cache), then DURATION s measured.
# The warm-up draws its keys with another seed than the point it warms (seed 1000 + REP
# against REP): with the same seed the point replayed the warm-up's key sequence, so every
# key it asked for in its first WARMUP s had just been cached, and the hit ratio came out
# above what any cache of that size can reach on zipf (0.92 with 682k values, where the
# top 682k keys draw 0.83 of the GETs). WARMUP defaults to 60 s, long enough for a
# 1024 MB cache to fill at N = 10,000,000 on this machine.
# Zero GET misses are required (every key exists). For every point: ops/s, server CPU
# seconds, ops per server CPU-second, device reads per GET and the cache hit ratio (from
# INFO storage deltas). Reports the medians, the on/off ratio, RSS and the cache's bytes.
# The load generator is target/release/skerry-bench pinned on CLIENT_CPU.
#
# Environment (defaults): N=1000000 CACHE_MB=100 MEMCAP_MIB (unset: no cap) DATA_SIZE=1024
# ZIPF=0.99 DURATION=20 WARMUP=60 REPEATS=3 CONNS=128 PIPELINE=1 FILL_PIPELINE=16
# SERVER_CPU=0 CLIENT_CPU=1 SKERRY_DATA_SIZE (default: room for N values + 25%)
# SKERRY_BIN SKERRY_ARGS BENCH_BIN MEMCAP_BIN DATA_DIR=bench/tmp/lifecycle-cache (removed at
# exit unless KEEP_DATA=1) OUT=bench/results/<date>-cache.
# The issue's target: N=10000000 MEMCAP_MIB=2048 CACHE_MB=1024: on/off >= 2.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=bench/lifecycle-cache.sh

N=${N:-1000000}
CACHE_MB=${CACHE_MB:-100}
MEMCAP_MIB=${MEMCAP_MIB:-}
MEMCAP_BIN=${MEMCAP_BIN:-}
DATA_SIZE=${DATA_SIZE:-1024}
ZIPF=${ZIPF:-0.99}
DURATION=${DURATION:-20}
WARMUP=${WARMUP:-60}
REPEATS=${REPEATS:-3}
CONNS=${CONNS:-128}
PIPELINE=${PIPELINE:-1}
FILL_PIPELINE=${FILL_PIPELINE:-16}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SKERRY_DATA_SIZE=${SKERRY_DATA_SIZE:-}
SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
SKERRY_ARGS=${SKERRY_ARGS:-}
BENCH_BIN=${BENCH_BIN:-$ROOT/target/release/skerry-bench}
DATA_DIR=${DATA_DIR:-$ROOT/bench/tmp/lifecycle-cache}
OUT=${OUT:-}
START_TIMEOUT=${START_TIMEOUT:-1800}

log() { printf '[cache] %s\n' "$*" >&2; }
die() { printf '[cache] ERROR: %s\n' "$*" >&2; exit 2; }
[[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }

for v in N CACHE_MB DATA_SIZE DURATION WARMUP REPEATS CONNS PIPELINE FILL_PIPELINE SERVER_CPU CLIENT_CPU START_TIMEOUT; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer (got '${!v}')"
done
((N >= 1 && REPEATS >= 1 && DURATION >= 1 && CONNS >= 1 && CACHE_MB >= 1)) || die "N, REPEATS, DURATION, CONNS, CACHE_MB must be >= 1"
[[ -z $MEMCAP_MIB || $MEMCAP_MIB =~ ^[0-9]+$ ]] || die "MEMCAP_MIB must be an integer"

APT_UPDATED=0
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
need_cmd taskset util-linux
need_cmd redis-cli redis-tools
NCPU=$(nproc --all)
((SERVER_CPU < NCPU && CLIENT_CPU < NCPU)) || die "SERVER_CPU=$SERVER_CPU / CLIENT_CPU=$CLIENT_CPU: this machine has $NCPU CPUs"
CLK_TCK=$(getconf CLK_TCK)

for b in "$SKERRY_BIN" "$BENCH_BIN"; do
    [[ -x $b ]] && continue
    log "building (cargo build --release -p skerry -p skerry-bench)"
    (cd "$ROOT" && cargo build --release -p skerry -p skerry-bench >&2) || die "cargo build failed"
    break
done
[[ -x $SKERRY_BIN && -x $BENCH_BIN ]] || die "missing $SKERRY_BIN or $BENCH_BIN"

if [[ -n $MEMCAP_MIB ]]; then
    if [[ -z $MEMCAP_BIN ]]; then
        for c in "$ROOT/../shared/tools/memcap" /work/shared/tools/memcap; do
            [[ -f $c ]] && { MEMCAP_BIN=$(cd "$(dirname "$c")" && pwd)/memcap; break; }
        done
    fi
    [[ -n $MEMCAP_BIN && -f $MEMCAP_BIN ]] || die "MEMCAP_MIB set but memcap not found (../shared/tools/memcap; set MEMCAP_BIN)"
    [[ $EUID -eq 0 ]] || die "memcap needs root"
fi

if [[ -z $SKERRY_DATA_SIZE ]]; then
    need=$((N * (DATA_SIZE + 128) * 5 / 4))
    SKERRY_DATA_SIZE=$(((need + (1 << 30) - 1) >> 30))gb
fi
[[ -n $OUT ]] || OUT=$(new_results_dir cache)
mkdir -p "$OUT/raw" "$DATA_DIR"
SDIR=$DATA_DIR/skerry
SLOG=$DATA_DIR/skerry.log
RUNS=$OUT/runs.tsv
printf 'test\trep\tops\tduration_s\tops_per_sec\tserver_cpu_s\tops_per_cpu_s\tdevice_reads_per_get\tcache_hit_ratio\tcache_used_bytes\tcache_entries\trss_bytes\tp50_us\tp99_us\tmisses\terrors\n' >"$RUNS"

PORT=$(free_port)
PID="" WRAP=""
stop_server() {
    [[ -n $WRAP ]] || return 0
    if [[ -n $PID ]] && kill -0 "$PID" 2>/dev/null; then
        kill -TERM "$PID" 2>/dev/null || true
        for _ in {1..300}; do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$PID" 2>/dev/null || true
    fi
    wait "$WRAP" 2>/dev/null || true
    PID="" WRAP=""
}
cleanup() {
    stop_server
    [[ -f $SLOG ]] && tail -n 40 "$SLOG" >"$OUT/skerry.log.tail" 2>/dev/null
    if [[ ${KEEP_DATA:-0} != 1 ]]; then
        rm -rf "${SDIR:?}" "$SLOG"
        rmdir "$DATA_DIR" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

start_server() {
    local cmd c
    mkdir -p "$SDIR"
    # shellcheck disable=SC2206  # SKERRY_ARGS is word-split on purpose
    cmd=(taskset -c "$SERVER_CPU" "$SKERRY_BIN" --port "$PORT" --bind 127.0.0.1 --dir "$SDIR" --threads 1
        --appendonly yes --data-size "$SKERRY_DATA_SIZE" --value-cache-mb 0 $SKERRY_ARGS)
    [[ -n $MEMCAP_MIB ]] && cmd=(bash "$MEMCAP_BIN" "$MEMCAP_MIB" "${cmd[@]}")
    echo "# ${cmd[*]}" >>"$SLOG"
    "${cmd[@]}" >>"$SLOG" 2>&1 &
    WRAP=$!
    PID=$WRAP
    if [[ -n $MEMCAP_MIB ]]; then
        PID=""
        for _ in {1..200}; do
            for c in $(cat "/proc/$WRAP/task/$WRAP/children" 2>/dev/null) $(pgrep -P "$WRAP" 2>/dev/null); do
                [[ $(cat "/proc/$c/comm" 2>/dev/null) == skerry ]] && { PID=$c; break 2; }
            done
            kill -0 "$WRAP" 2>/dev/null || break
            sleep 0.05
        done
        [[ -n $PID ]] || { tail -n 5 "$SLOG" >&2; die "could not find the server process under memcap"; }
    fi
    await_server skerry "$PID" "$PORT" "$SLOG" "$START_TIMEOUT"
    log "skerry: pid $PID, port $PORT: ${cmd[*]}"
}
rcli() { redis-cli -h 127.0.0.1 -p "$PORT" "$@" 2>&1; }
info_num() { rcli info storage | tr -d '\r' | awk -F: -v k="$1" '$1 == k { print $2; exit }'; }
human_bytes() { awk -v b="$1" 'BEGIN { split("B KiB MiB GiB TiB", u); i = 1; while (b >= 1024 && i < 5) { b /= 1024; i++ } printf "%.1f %s", b, u[i] }'; }

# bench NAME REP ARGS...: one skerry-bench run, JSON in raw/NAME-rREP.json.
bench() {
    local name=$1 rep=$2 raw
    shift 2
    raw=$OUT/raw/$name-r$rep.json
    taskset -c "$CLIENT_CPU" "$BENCH_BIN" --host 127.0.0.1 -p "$PORT" -q -n "$N" -d "$DATA_SIZE" -t 1 -c "$CONNS" \
        --seed "$rep" --json "$raw" "$@" >"$raw.txt" 2>&1 || { cat "$raw.txt" >&2; die "skerry-bench $name failed"; }
    rm -f "$raw.txt"
    echo "$raw"
}

# point TEST REP: one measured zipf GET run with INFO storage deltas; a row of runs.tsv.
point() {
    local test=$1 rep=$2 c0 c1 h0 m0 d0 h1 m1 d1 raw ops dur cpu hr dpg
    c0=$(cpu_ticks "$PID")
    h0=$(info_num storage_cache_hits) m0=$(info_num storage_cache_misses) d0=$(info_num storage_value_reads)
    raw=$(bench "$test" "$rep" --key-pattern zipf --zipf-exponent "$ZIPF" --ratio 0:1 --test-time "$DURATION" \
        -P "$PIPELINE" --require-no-misses)
    c1=$(cpu_ticks "$PID")
    h1=$(info_num storage_cache_hits) m1=$(info_num storage_cache_misses) d1=$(info_num storage_value_reads)
    ops=$(json_num "$raw" ops)
    dur=$(json_num "$raw" duration_s)
    cpu=$(calc "($c1 - $c0) / $CLK_TCK")
    hr=$(calc "($h1 - $h0 + $m1 - $m0 > 0) ? ($h1 - $h0) / ($h1 - $h0 + $m1 - $m0) : 0")
    dpg=$(calc "($ops > 0) ? ($d1 - $d0) / $ops : 0")
    printf '%s\t%s\t%s\t%s\t%.0f\t%.2f\t%.0f\t%.4f\t%.4f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$test" "$rep" "$ops" "$dur" \
        "$(json_num "$raw" ops_per_sec)" "$cpu" "$(calc "($cpu > 0) ? $ops / $cpu : 0")" "$dpg" "$hr" \
        "$(info_num storage_cache_used_bytes)" "$(info_num storage_cache_entries)" "$(rss_bytes "$PID")" \
        "$(json_num "$raw" p50)" "$(json_num "$raw" p99)" "$(json_num "$raw" misses)" "$(json_num "$raw" errors)" >>"$RUNS"
    log "$(printf '%-9s rep %d: %9.0f GET/s  %8.0f ops/CPU-s  %.3f device reads/GET  cache hit ratio %.3f  p99 %s us' \
        "$test" "$rep" "$(json_num "$raw" ops_per_sec)" "$(calc "($cpu > 0) ? $ops / $cpu : 0")" "$dpg" "$hr" "$(json_num "$raw" p99)")"
    (($(json_num "$raw" misses) == 0 && $(json_num "$raw" errors) == 0)) || die "$test rep $rep: GET misses or errors ($raw)"
}

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "command: N=$N CACHE_MB=$CACHE_MB MEMCAP_MIB=${MEMCAP_MIB:-none} DATA_SIZE=$DATA_SIZE ZIPF=$ZIPF DURATION=$DURATION WARMUP=$WARMUP REPEATS=$REPEATS CONNS=$CONNS PIPELINE=$PIPELINE SKERRY_ARGS='$SKERRY_ARGS' $PROG"
    echo "host: $(uname -srm), $NCPU CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo); memory $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    echo "skerry: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?') --threads 1 --data-size $SKERRY_DATA_SIZE, pinned on CPU $SERVER_CPU$([[ -n $MEMCAP_MIB ]] && echo ", inside memcap $MEMCAP_MIB MiB")"
    echo "client: $("$BENCH_BIN" --version), pinned on CPU $CLIENT_CPU, $CONNS connections, pipeline $PIPELINE"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); CPU $SERVER_CPU busy $(printf %.0f "$(cpu_busy_pct "$SERVER_CPU" 1)")%, CPU $CLIENT_CPU busy $(printf %.0f "$(cpu_busy_pct "$CLIENT_CPU" 1)")%"
} >"$OUT/env.txt"
log "results: $OUT"
sed 's/^/  /' "$OUT/env.txt" >&2

start_server
log "filling keys 1..$N with exactly $N SETs of $DATA_SIZE bytes"
t0=$(now)
bench fill 1 --key-pattern sequential --ratio 1:0 --requests "$N" -P "$FILL_PIPELINE" --require-no-errors >/dev/null
log "fill: $(calc "$(now) - $t0" | xargs printf %.1f) s"
dbsize=$(rcli dbsize)
[[ $dbsize == "$N" ]] || die "DBSIZE $dbsize after the fill, expected $N"
# A clean restart: every value is then read from the device, none from staging.
stop_server
start_server
dbsize=$(rcli dbsize)
[[ $dbsize == "$N" ]] || die "DBSIZE $dbsize after the restart, expected $N"
RSS_START=$(rss_bytes "$PID")
log "restarted: DBSIZE $dbsize, RSS $(human_bytes "$RSS_START")"

for ((r = 1; r <= REPEATS; r++)); do
    [[ $(rcli config set value-cache-mb 0) == OK ]] || die "CONFIG SET value-cache-mb 0 failed"
    point off "$r"
    [[ $(rcli config set value-cache-mb "$CACHE_MB") == OK ]] || die "CONFIG SET value-cache-mb $CACHE_MB failed"
    if ((WARMUP > 0)); then
        bench warmup "$((1000 + r))" --key-pattern zipf --zipf-exponent "$ZIPF" --ratio 0:1 --test-time "$WARMUP" -P "$PIPELINE" >/dev/null
    fi
    point on "$r"
done
RSS_END=$(rss_bytes "$PID")
CAP=$(info_num storage_cache_capacity_bytes)
[[ $(rcli dbsize) == "$N" ]] || die "DBSIZE changed during the run"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"

median() { # TEST COLUMN
    awk -F'\t' -v t="$1" -v c="$2" '
        NR > 1 && $1 == t { print $c }' "$RUNS" | median_of
}
OFF=$(median off 5) ON=$(median on 5)
OFFC=$(median off 7) ONC=$(median on 7)
RATIO=$(calc "$ON / $OFF" | xargs printf %.2f)
RATIOC=$(calc "$ONC / $OFFC" | xargs printf %.2f)
{
    echo "# Value cache: zipf($ZIPF) GET, cache off vs $CACHE_MB MB"
    echo
    echo '```'
    cat "$OUT/env.txt"
    echo '```'
    echo
    echo "Keys 1..$N, $DATA_SIZE-byte values, read after a clean restart; $DURATION s per point, median of $REPEATS;"
    echo "the cache is emptied (value-cache-mb 0) before each off point and warmed for $WARMUP s before each on point."
    echo
    echo "| | cache off | cache $CACHE_MB MB | on / off |"
    echo "|---|---:|---:|---:|"
    echo "| GET ops/s | $(printf %.0f "$OFF") | $(printf %.0f "$ON") | **$RATIO** |"
    echo "| GET ops/server CPU-s | $(printf %.0f "$OFFC") | $(printf %.0f "$ONC") | $RATIOC |"
    echo "| device reads per GET | $(median off 8) | $(median on 8) | |"
    echo "| cache hit ratio | - | $(median on 9) | |"
    echo "| p50 / p99 latency us | $(median off 13) / $(median off 14) | $(median on 13) / $(median on 14) | |"
    echo
    echo "Cache: capacity $(human_bytes "$CAP"), $(human_bytes "$(median on 10)") used by $(median on 11) values (median over the on points)."
    echo "RSS: $(human_bytes "$RSS_START") after the restart, $(human_bytes "$RSS_END") at the end (cache on)."
    echo
    echo "Target (issue 4, at N = 10,000,000 inside memcap 2048 with a 1024 MB cache): on/off >= 2.00: $(awk -v r="$RATIO" 'BEGIN { print (r >= 2) ? "PASS" : "FAIL" }') here ($RATIO)."
    echo
    echo "Raw: runs.tsv (every point), raw/ (skerry-bench JSON), skerry.log.tail."
} >"$OUT/summary.md"
cat "$OUT/summary.md"
