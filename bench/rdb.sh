#!/usr/bin/env bash
# bench/rdb.sh - RDB files, Skerry against Debian's redis-server in one run (issue 28):
#
#   redis-save     Redis filled with N keys of DATA_SIZE bytes (skerry-bench, sequential
#                  SETs) runs SAVE: seconds, server CPU seconds, file bytes.
#   redis-load     Redis restarted on that file: seconds until it answers PING (loaded).
#   skerry-import  Skerry started with --rdb-import on Redis's file, --threads 1 and the
#                  default (one worker per CPU): seconds until DBSIZE answers N.
#   skerry-save    That Skerry (default threads) runs SAVE: seconds, CPU, file bytes.
#   redis-load-sk  Redis restarted on Skerry's file: seconds until loaded (DBSIZE checked).
#
# Every server runs pinned on SERVER_CPU (all of Skerry's threads), the loader on
# CLIENT_CPU. Each point REPEATS times; medians reported. Keys per second = N / seconds;
# keys per server CPU-second = N / CPU seconds (utime+stime of the server process).
#
# Usage: bench/rdb.sh
# Environment (defaults): N=1000000 DATA_SIZE=1024 REPEATS=3 SERVER_CPU=0 CLIENT_CPU=1
# SKERRY_BIN=target/release/skerry BENCH_BIN=target/release/skerry-bench
# REDIS_BIN=/usr/bin/redis-server DATA_DIR=bench/tmp/rdb OUT=bench/results/<date>-rdb
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[rdb] %s\n' "$*" >&2; }
die() { printf '[rdb] ERROR: %s\n' "$*" >&2; exit 2; }
APT_UPDATED=0
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

N=${N:-1000000}
DATA_SIZE=${DATA_SIZE:-1024}
REPEATS=${REPEATS:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
BENCH_BIN=${BENCH_BIN:-$ROOT/target/release/skerry-bench}
REDIS_BIN=${REDIS_BIN:-/usr/bin/redis-server}
DATA_DIR=${DATA_DIR:-$ROOT/bench/tmp/rdb}
OUT=${OUT:-$(new_results_dir rdb)}
for v in N DATA_SIZE REPEATS SERVER_CPU CLIENT_CPU; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer (got '${!v}')"
done
need_cmd redis-cli redis-tools
[[ -x $REDIS_BIN ]] || need_cmd redis-server redis-server
[[ -x $SKERRY_BIN && -x $BENCH_BIN ]] ||
    (cd "$ROOT" && cargo build --release -p skerry -p skerry-bench >&2) || die "cargo build failed"

mkdir -p "$OUT"
rm -rf "$DATA_DIR"
mkdir -p "$DATA_DIR"
RUNS=$OUT/runs.tsv
printf 'server\ttest\trepeat\tseconds\tcpu_seconds\tbytes\n' >"$RUNS"
TCK=$(getconf CLK_TCK)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$DATA_DIR"; }
trap cleanup EXIT

# start NAME DIR CMD...: starts the server pinned on SERVER_CPU (output in DIR/NAME.log) on a
# free port; sets PORT, PID and T0 (the start time). Does not wait.
start() {
    local name=$1 dir=$2
    shift 2
    PORT=$(free_port)
    T0=$(now)
    taskset -c "$SERVER_CPU" "$@" --port "$PORT" --dir "$dir" >"$dir/$name.log" 2>&1 &
    PID=$!
    PIDS+=("$PID")
}
# wait_dbsize PORT PID EXPECTED LOG: polls DBSIZE until it answers EXPECTED (a server
# still loading answers an error or nothing).
wait_dbsize() {
    local got
    while :; do
        kill -0 "$2" 2>/dev/null || { tail -n 5 "$4" >&2; die "server exited (log: $4)"; }
        got=$(timeout 5 redis-cli -p "$1" DBSIZE 2>/dev/null || true)
        [[ $got == "$3" ]] && return 0
        sleep 0.01
    done
}
secs_since() { calc "$(now) - $1"; }

redis_dir=$DATA_DIR/redis
mkdir -p "$redis_dir"
log "filling Redis with $N keys of $DATA_SIZE bytes"
start redis "$redis_dir" "$REDIS_BIN" --save "" --appendonly no
await_server redis "$PID" "$PORT" "$redis_dir/redis.log"
taskset -c "$CLIENT_CPU" "$BENCH_BIN" -p "$PORT" -q -c 50 -P 16 -n "$N" --key-pattern sequential \
    --requests "$N" -d "$DATA_SIZE" --ratio 1:0 --require-no-errors >/dev/null
got=$(redis-cli -p "$PORT" DBSIZE)
[[ $got == "$N" ]] || die "Redis holds $got keys after the fill, not $N"
redis_port=$PORT redis_pid=$PID
for r in $(seq "$REPEATS"); do
    c0=$(cpu_ticks "$redis_pid")
    t0=$(now)
    [[ $(redis-cli -p "$redis_port" SAVE) == OK ]] || die "Redis SAVE failed"
    s=$(secs_since "$t0")
    c1=$(cpu_ticks "$redis_pid")
    bytes=$(stat -c %s "$redis_dir/dump.rdb")
    record_run redis save "$r" "$s" "$(calc "($c1 - $c0) / $TCK")" "$bytes"
    log "redis SAVE: $s s, $bytes bytes"
done
kill_server "$redis_pid"
cp "$redis_dir/dump.rdb" "$DATA_DIR/redis.rdb"

# redis_loads TEST FILE: REPEATS times, Redis started on FILE (as its dump.rdb): seconds
# until it answers PING (loaded), CPU, and DBSIZE checked.
redis_loads() {
    local r s c got
    for r in $(seq "$REPEATS"); do
        rm -f "$redis_dir/dump.rdb"
        cp "$2" "$redis_dir/dump.rdb"
        start redis "$redis_dir" "$REDIS_BIN" --save "" --appendonly no --dbfilename dump.rdb
        until resp_ping "$PORT"; do sleep 0.005; done
        s=$(secs_since "$T0")
        c=$(calc "$(cpu_ticks "$PID") / $TCK")
        got=$(redis-cli -p "$PORT" DBSIZE)
        [[ $got == "$N" ]] || die "Redis loaded $got keys from $2, not $N"
        record_run redis "$1" "$r" "$s" "$c" "$(stat -c %s "$2")"
        log "redis $1: $s s"
        kill_server "$PID"
    done
}
redis_loads load "$DATA_DIR/redis.rdb"

for threads in 1 default; do
    for r in $(seq "$REPEATS"); do
        sk_dir=$DATA_DIR/skerry-$threads
        rm -rf "$sk_dir"
        mkdir -p "$sk_dir"
        args=(--rdb-import "$DATA_DIR/redis.rdb")
        [[ $threads == default ]] || args+=(--threads "$threads")
        start skerry "$sk_dir" "$SKERRY_BIN" "${args[@]}"
        t0=$T0
        sk_pid=$PID sk_port=$PORT
        [[ $threads == default ]] && pin_all_threads "$sk_pid" "$SERVER_CPU" &
        wait_dbsize "$sk_port" "$sk_pid" "$N" "$sk_dir/skerry.log"
        s=$(secs_since "$t0")
        c=$(calc "$(cpu_ticks "$sk_pid") / $TCK")
        record_run "skerry-t$threads" import "$r" "$s" "$c" "$(stat -c %s "$DATA_DIR/redis.rdb")"
        log "skerry --threads $threads import: $s s ($(grep -o 'Imported.*' "$sk_dir/skerry.log" | head -n 1))"
        if [[ $threads == default ]]; then
            c0=$(cpu_ticks "$sk_pid")
            t0=$(now)
            [[ $(redis-cli -p "$sk_port" SAVE) == OK ]] || die "Skerry SAVE failed"
            s=$(secs_since "$t0")
            c1=$(cpu_ticks "$sk_pid")
            bytes=$(stat -c %s "$sk_dir/dump.rdb")
            record_run skerry-tdefault save "$r" "$s" "$(calc "($c1 - $c0) / $TCK")" "$bytes"
            log "skerry SAVE: $s s, $bytes bytes"
            cp "$sk_dir/dump.rdb" "$DATA_DIR/skerry.rdb"
        fi
        kill_server "$sk_pid"
    done
done

redis_loads load-skerry-file "$DATA_DIR/skerry.rdb"

{
    echo "# RDB files: Skerry vs Redis"
    echo
    echo "\`bench/rdb.sh\`: $N keys of $DATA_SIZE bytes, medians of $REPEATS; servers pinned on CPU $SERVER_CPU."
    echo
    echo '```'
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "host: $(uname -sr) $(uname -m), $(nproc) CPUs"
    echo "skerry: $(cd "$ROOT" && git rev-parse --short HEAD) $SKERRY_BIN"
    echo "redis: $("$REDIS_BIN" --version)"
    echo '```'
    echo
    echo "| server | step | seconds | keys/s | server CPU s | keys/CPU-s | file bytes |"
    echo "|---|---|---:|---:|---:|---:|---:|"
    for point in "redis save" "redis load" "skerry-t1 import" "skerry-tdefault import" \
        "skerry-tdefault save" "redis load-skerry-file"; do
        read -r s t <<<"$point"
        sec=$(point_median "$s" "$t" 4)
        cpu=$(point_median "$s" "$t" 5)
        bytes=$(point_median "$s" "$t" 6)
        printf '| %s | %s | %.2f | %.0f | %.2f | %.0f | %.0f |\n' "$s" "$t" "$sec" \
            "$(calc "$N / $sec")" "$cpu" "$(calc "($cpu > 0) ? $N / $cpu : 0")" "$bytes"
    done
    echo
    echo "Raw data: \`runs.tsv\`."
} >"$OUT/summary.md"
cat "$OUT/summary.md"
