#!/usr/bin/env bash
# bench/hot-keys.sh - one hot collection written by many clients: Skerry vs Debian's redis-server.
#
# redis-benchmark's own collection tests all use one key (LPUSH/RPUSH/LPOP/RPOP on "mylist",
# HSET on "myhash", SADD/SPOP on "myset", ZADD on "myzset"), and so does a stream fed by many
# producers (XADD bench:xadd{t} * f <16 bytes>). These are the loads write-behind is for
# (decision 0035): every command changes the same collection, which Skerry used to write to
# its log once per command.
#
# Each server runs in turn pinned on SERVER_CPU (Skerry with --threads SKERRY_THREADS,
# redis-server with --save "" --appendonly no), fresh for every point; redis-benchmark runs
# on CLIENT_CPU with CLIENTS connections, N requests per point with 1 KiB values (-d 1024).
# "skerry-off" is Skerry with SKERRY_WRITE_BEHIND=off (the A/B of decision 0035). The
# server's utime+stime (/proc/PID/stat) gives operations per server CPU-second, and INFO's
# storage_device_written_bytes the device bytes per operation. Medians of REPEATS rounds,
# servers alternating.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=bench/hot-keys.sh
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,17p' "$0"
    cat <<EOF

Environment (defaults): SERVERS="skerry redis" (also: skerry-off), TESTS="lpush rpush lpop
rpop hset sadd zadd xadd", PIPELINES="1 16", N=300000, REPEATS=3, QUICK=1 (N=50000,
REPEATS=1), SERVER_CPU=0, CLIENT_CPU=1, CLIENTS=50, SKERRY_BIN (target/release/skerry),
SKERRY_THREADS=1 ("default": no --threads, every thread then moved onto SERVER_CPU),
REDIS_BIN (Debian's redis-server), OUT=bench/results/<date>-hot-keys.
EOF
    exit 0
fi

if [[ ${QUICK:-0} == 1 ]]; then N=${N:-50000}; REPEATS=${REPEATS:-1}; fi
N=${N:-300000}
REPEATS=${REPEATS:-3}
SERVERS=${SERVERS:-skerry redis}
TESTS=${TESTS:-lpush rpush lpop rpop hset sadd zadd xadd}
PIPELINES=${PIPELINES:-1 16}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
CLIENTS=${CLIENTS:-50}
SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
SKERRY_THREADS=${SKERRY_THREADS:-1}
REDIS_BIN=${REDIS_BIN:-}
OUT=${OUT:-}

log() { printf '[hot-keys] %s\n' "$*" >&2; }
die() { printf '[hot-keys] ERROR: %s\n' "$*" >&2; exit 2; }
APT_UPDATED=0
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
need_cmd redis-benchmark redis-tools
need_cmd redis-cli redis-tools
for v in N REPEATS SERVER_CPU CLIENT_CPU CLIENTS; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer (got '${!v}')"
done
read -r -a SERVER_LIST <<<"$SERVERS"
read -r -a TEST_LIST <<<"$TESTS"
read -r -a PIPE_LIST <<<"$PIPELINES"
for s in "${SERVER_LIST[@]}"; do
    [[ $s == skerry || $s == skerry-off || $s == redis ]] || die "unknown server '$s'"
done
if [[ " ${SERVER_LIST[*]} " == *" redis "* && -z $REDIS_BIN ]]; then
    need_cmd redis-server redis-server
    REDIS_BIN=$(command -v redis-server)
fi
if [[ " ${SERVER_LIST[*]} " == *" skerry"* && ! -x $SKERRY_BIN ]]; then
    log "building skerry (cargo build --release)"
    (cd "$ROOT" && cargo build --release --bin skerry >&2) || die "cargo build --release failed"
fi
CLK_TCK=$(getconf CLK_TCK)
[[ -n $OUT ]] || OUT=$(new_results_dir hot-keys)
mkdir -p "$OUT/raw"
RUNS=$OUT/runs.tsv
printf 'server\ttest\tpipeline\trep\trequests\trps\tserver_cpu_s\tops_per_cpu_s\tdevice_bytes_per_op\n' >"$RUNS"
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "host: $(uname -srm), $(nproc --all) CPUs"
    echo "skerry: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?') --threads $SKERRY_THREADS"
    [[ -n $REDIS_BIN ]] && echo "redis: $("$REDIS_BIN" --version) --save \"\" --appendonly no"
    echo "params: servers=[$SERVERS] tests=[$TESTS] pipelines=[$PIPELINES] n=$N repeats=$REPEATS clients=$CLIENTS server_cpu=$SERVER_CPU client_cpu=$CLIENT_CPU"
} >"$OUT/env.txt"
log "results: $OUT"

SPID=""
SDIR=""
stop_server() {
    [[ -n $SPID ]] || return 0
    kill "$SPID" 2>/dev/null || true
    wait "$SPID" 2>/dev/null || true
    rm -rf "$SDIR"
    SPID=""
}
trap stop_server EXIT

# start SERVER: a fresh server on SERVER_CPU; sets SPID and SPORT.
start() {
    local s=$1 cmd env=()
    SDIR=$(mktemp -d "${TMPDIR:-/tmp}/hot-keys.XXXXXX")
    SPORT=$(free_port)
    case $s in
        skerry | skerry-off)
            cmd=("$SKERRY_BIN" --port "$SPORT" --bind 127.0.0.1 --dir "$SDIR" --data-size 8gb)
            [[ $SKERRY_THREADS == default ]] || cmd+=(--threads "$SKERRY_THREADS")
            [[ $s == skerry-off ]] && env=(SKERRY_WRITE_BEHIND=off) ;;
        redis) cmd=("$REDIS_BIN" --port "$SPORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$SDIR") ;;
    esac
    if [[ $s != redis && $SKERRY_THREADS == default ]]; then
        env "${env[@]}" "${cmd[@]}" >"$SDIR/server.log" 2>&1 &
    else
        env "${env[@]}" taskset -c "$SERVER_CPU" "${cmd[@]}" >"$SDIR/server.log" 2>&1 &
    fi
    SPID=$!
    await_server "$s" "$SPID" "$SPORT" "$SDIR/server.log"
    if [[ $s != redis && $SKERRY_THREADS == default ]]; then
        redis-cli -p "$SPORT" INFO >/dev/null
        pin_all_threads "$SPID" "$SERVER_CPU"
    fi
}

written_bytes() {
    redis-cli -p "$SPORT" INFO storage 2>/dev/null | tr -d '\r' |
        awk -F: '$1 == "storage_device_written_bytes" { print $2; f = 1 } END { if (!f) print 0 }'
}

for ((r = 1; r <= REPEATS; r++)); do
    order=("${SERVER_LIST[@]}")
    if ((r % 2 == 0)); then
        order=()
        for ((i = ${#SERVER_LIST[@]} - 1; i >= 0; i--)); do order+=("${SERVER_LIST[i]}"); done
    fi
    for p in "${PIPE_LIST[@]}"; do
        for t in "${TEST_LIST[@]}"; do
            for s in "${order[@]}"; do
                start "$s"
                case $t in
                    xadd) args=(XADD 'bench:xadd{t}' '*' f 0123456789abcdef) ;;
                    # The pops need something to pop: the same number of pushes first.
                    lpop | rpop)
                        taskset -c "$CLIENT_CPU" redis-benchmark -p "$SPORT" -c "$CLIENTS" -n "$N" -P 16 \
                            -d 1024 -t lpush -q >/dev/null 2>&1 || die "fill for $t failed against $s"
                        args=(-t "$t") ;;
                    *) args=(-t "$t") ;;
                esac
                raw=$OUT/raw/$s-$t-P$p-r$r.txt
                w0=$(written_bytes)
                c0=$(cpu_ticks "$SPID")
                taskset -c "$CLIENT_CPU" redis-benchmark -p "$SPORT" -c "$CLIENTS" -n "$N" -P "$p" \
                    -d 1024 -q "${args[@]}" >"$raw" 2>&1 || { cat "$raw" >&2; die "redis-benchmark failed against $s"; }
                c1=$(cpu_ticks "$SPID")
                w1=$(written_bytes)
                rps=$(benchmark_rps "$raw")
                [[ -n $rps ]] || die "no result in $raw"
                cpu=$(calc "($c1 - $c0) / $CLK_TCK")
                opc=$(calc "($cpu > 0) ? $N / $cpu : 0")
                bpo=$(calc "($w1 - $w0) / $N")
                printf '%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.0f\t%.0f\n' "$s" "$t" "$p" "$r" "$N" "$rps" "$cpu" "$opc" "$bpo" >>"$RUNS"
                log "$(printf '%-10s %-6s -P %-2s rep %d: %9.0f ops/s %9.0f ops/CPU-s %6.0f device B/op' "$s" "$t" "$p" "$r" "$rps" "$opc" "$bpo")"
                stop_server
            done
        done
    done
done

{
    echo "# One hot collection: Skerry vs Redis"
    echo
    echo "\`$PROG\`: medians of $REPEATS round(s) of $N requests per point; ops/CPU-s = requests / server CPU seconds."
    echo
    echo '```'
    cat "$OUT/env.txt"
    echo '```'
    echo
    printf '| test | P |'
    for s in "${SERVER_LIST[@]}"; do printf ' %s ops/CPU-s |' "$s"; done
    for s in "${SERVER_LIST[@]}"; do [[ $s == redis ]] || printf ' %s/redis |' "$s"; done
    for s in "${SERVER_LIST[@]}"; do [[ $s == redis ]] || printf ' %s device B/op |' "$s"; done
    echo
    printf '|---|---:|'
    for s in "${SERVER_LIST[@]}"; do printf -- '---:|'; [[ $s == redis ]] || printf -- '---:|---:|'; done
    echo
    for p in "${PIPE_LIST[@]}"; do
        for t in "${TEST_LIST[@]}"; do
            printf '| %s | %s |' "$t" "$p"
            for s in "${SERVER_LIST[@]}"; do printf ' %.0f |' "$(run_median "$s" "$t" "$p" 8)"; done
            rd=$(run_median redis "$t" "$p" 8)
            for s in "${SERVER_LIST[@]}"; do
                [[ $s == redis ]] || printf ' %s |' "$(ratio "$(run_median "$s" "$t" "$p" 8)" "$rd")"
            done
            for s in "${SERVER_LIST[@]}"; do [[ $s == redis ]] || printf ' %.0f |' "$(run_median "$s" "$t" "$p" 9)"; done
            echo
        done
    done
} >"$OUT/summary.md"
cat "$OUT/summary.md"
