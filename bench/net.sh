#!/usr/bin/env bash
# shellcheck disable=SC2016  # literal $ and backticks in single quotes are intended
# bench/net.sh - network throughput and CPU efficiency: Skerry vs Debian's redis-server.
#
# Both servers run one after the other in the same run, each pinned on SERVER_CPU
# (Skerry with --threads 1, redis-server with --save "" --appendonly no);
# redis-benchmark runs pinned on CLIENT_CPU with 50 connections, SET and GET of
# 1 KiB values over 1,000,000 random keys, pipeline 1 and 16. For every point we
# read the server's utime+stime from /proc/PID/stat before and after the
# redis-benchmark run and report ops/s, server CPU seconds and operations per
# server CPU-second. Each point is repeated REPEATS times, alternating the
# servers, and the median is reported. See bench/README.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=bench/net.sh

# ---------------------------------------------------------------- parameters
# Command-line options set the same variables as the environment; defaults below.
HELP=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) QUICK=1; shift ;;
        --servers) SERVERS=${2:?}; shift 2 ;;
        --repeats) REPEATS=${2:?}; shift 2 ;;
        --seconds) BENCH_SECONDS=${2:?}; shift 2 ;;
        --n) BENCH_N=${2:?}; shift 2 ;;
        --out) OUT=${2:?}; shift 2 ;;
        -h | --help) HELP=1; shift ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

# ---------------------------------------------------------------- parameters (env)
QUICK=${QUICK:-0}
if [[ $QUICK == 1 ]]; then
    BENCH_SECONDS=${BENCH_SECONDS:-2}
    REPEATS=${REPEATS:-1}
fi
BENCH_SECONDS=${BENCH_SECONDS:-10}   # target duration of one point (calibrates -n)
BENCH_N=${BENCH_N:-}                 # fixed -n for every point (skips calibration)
REPEATS=${REPEATS:-5}
SERVERS=${SERVERS:-skerry redis}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
CLIENTS=${CLIENTS:-50}
DATA_SIZE=${DATA_SIZE:-1024}
KEYSPACE=${KEYSPACE:-1000000}
TESTS=${TESTS:-set get}
PIPELINES=${PIPELINES:-1 16}
FILL_N=${FILL_N:-$((KEYSPACE * (QUICK == 1 ? 1 : 3)))}  # unmeasured SETs before measuring (3x keyspace: ~95% of keys)
SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
SKERRY_THREADS=${SKERRY_THREADS:-1}
SKERRY_ARGS=${SKERRY_ARGS:-}
SKERRY_DATA_SIZE=${SKERRY_DATA_SIZE:-}   # --data-size; default: 60% of the free space in DATA_DIR
REDIS_BIN=${REDIS_BIN:-}
REDIS_ARGS=${REDIS_ARGS:-}
DATA_DIR=${DATA_DIR:-$ROOT/bench/tmp/net}   # server --dir (Skerry keeps values there: use an SSD)
OUT=${OUT:-}
START_TIMEOUT=${START_TIMEOUT:-30}

usage() {
    cat <<EOF
Usage: $PROG [--quick] [--servers "skerry redis"] [--repeats N] [--seconds S] [--n N] [--out DIR]

Environment (defaults): BENCH_SECONDS=10 target seconds per point (calibrated on the first
point of each test), BENCH_N (fixed -n, no calibration), REPEATS=5, QUICK=1 (2 s points,
1 repeat, smaller fill), SERVERS="skerry redis", SERVER_CPU=0, CLIENT_CPU=1, CLIENTS=50,
DATA_SIZE=1024, KEYSPACE=1000000, TESTS="set get", PIPELINES="1 16", FILL_N=3*KEYSPACE,
SKERRY_BIN, SKERRY_THREADS=1, SKERRY_ARGS, SKERRY_DATA_SIZE (Skerry --data-size; default 60% of
the free space in DATA_DIR: every SET is written to the data file and nothing is reclaimed
until defrag), REDIS_BIN, REDIS_ARGS, DATA_DIR=bench/tmp/net
(removed at exit unless KEEP_DATA=1), OUT=bench/results/<date>-net.
EOF
}


[[ $HELP == 1 ]] && { usage; exit 0; }

log() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] ERROR: %s\n' "$*" >&2; exit 2; }

for v in REPEATS CLIENTS DATA_SIZE KEYSPACE FILL_N SERVER_CPU CLIENT_CPU SKERRY_THREADS; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer (got '${!v}')"
done
[[ $REPEATS -ge 1 ]] || die "REPEATS must be >= 1"
[[ -z $BENCH_N || $BENCH_N =~ ^[0-9]+$ ]] || die "BENCH_N must be an integer"
[[ $BENCH_SECONDS =~ ^[0-9]+([.][0-9]+)?$ ]] || die "BENCH_SECONDS must be a number"
read -r -a SERVER_LIST <<<"$SERVERS"
read -r -a TEST_LIST <<<"$TESTS"
read -r -a PIPE_LIST <<<"$PIPELINES"
for s in "${SERVER_LIST[@]}"; do [[ $s == skerry || $s == redis ]] || die "unknown server '$s' (skerry|redis)"; done
for t in "${TEST_LIST[@]}"; do [[ $t == set || $t == get ]] || die "unknown test '$t' (set|get)"; done
[[ ${#SERVER_LIST[@]} -ge 1 ]] || die "SERVERS is empty"

# ---------------------------------------------------------------- dependencies
APT_UPDATED=0
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# Skerry keeps every SET in its data file and reclaims only whole dead blocks (no defrag
# yet), so the overwrite points need room: by default 60% of the free space.
if [[ -z $SKERRY_DATA_SIZE ]]; then
    mkdir -p "$DATA_DIR"
    SKERRY_DATA_SIZE=$(($(df -Pk "$DATA_DIR" | awk 'NR == 2 { print $4 }') * 6 / 10 / 1024 / 1024))gb
fi
need_cmd redis-benchmark redis-tools
need_cmd redis-cli redis-tools
need_cmd taskset util-linux
if [[ " ${SERVER_LIST[*]} " == *" redis "* && -z $REDIS_BIN ]]; then
    need_cmd redis-server redis-server
    REDIS_BIN=$(command -v redis-server)
fi
NCPU=$(nproc --all)
((SERVER_CPU < NCPU && CLIENT_CPU < NCPU)) || die "SERVER_CPU=$SERVER_CPU / CLIENT_CPU=$CLIENT_CPU: this machine has $NCPU CPUs"
[[ $SERVER_CPU != "$CLIENT_CPU" ]] || log "WARNING: server and client share CPU $SERVER_CPU"
CLK_TCK=$(getconf CLK_TCK)

if [[ " ${SERVER_LIST[*]} " == *" skerry "* ]]; then
    if [[ ! -x $SKERRY_BIN ]]; then
        [[ $SKERRY_BIN == "$ROOT/target/release/skerry" ]] || die "SKERRY_BIN not found: $SKERRY_BIN"
        command -v cargo >/dev/null 2>&1 || die "cargo not found and $SKERRY_BIN missing"
        log "building skerry (cargo build --release)"
        (cd "$ROOT" && cargo build --release --bin skerry >&2) || die "cargo build --release failed"
    fi
fi


declare -A PID PORT
cleanup() {
    local s
    for s in "${!PID[@]}"; do
        if kill -0 "${PID[$s]}" 2>/dev/null; then
            kill -TERM "${PID[$s]}" 2>/dev/null || true
            for _ in {1..50}; do kill -0 "${PID[$s]}" 2>/dev/null || break; sleep 0.1; done
            kill -KILL "${PID[$s]}" 2>/dev/null || true
        fi
        wait "${PID[$s]}" 2>/dev/null || true
        [[ ${KEEP_DATA:-0} == 1 ]] || rm -rf "${DATA_DIR:?}/$s"
    done
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

# ---------------------------------------------------------------- output dir
[[ -n $OUT ]] || OUT=$(new_results_dir net)
mkdir -p "$OUT/raw"
RUNS=$OUT/runs.tsv
printf 'server\ttest\tpipeline\trep\trequests\twall_s\trps\tserver_cpu_s\tops_per_cpu_s\tserver_util\tclient_util\tp50_ms\tp99_ms\tp999_ms\n' >"$RUNS"

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "host: $(uname -srm), $NCPU CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    echo "memory: $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    [[ " ${SERVER_LIST[*]} " == *" skerry "* ]] && echo "skerry: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$ROOT" && git diff --quiet HEAD -- crates src Cargo.toml Cargo.lock 2>/dev/null || echo ' (+local changes)') $SKERRY_BIN --threads $SKERRY_THREADS --data-size $SKERRY_DATA_SIZE $SKERRY_ARGS"
    [[ -n $REDIS_BIN ]] && echo "redis: $("$REDIS_BIN" --version) --save \"\" --appendonly no $REDIS_ARGS"
    echo "client: $(redis-benchmark --version 2>/dev/null || echo redis-benchmark)"
    echo "params: servers=[$SERVERS] server_cpu=$SERVER_CPU client_cpu=$CLIENT_CPU clients=$CLIENTS data_size=$DATA_SIZE keyspace=$KEYSPACE tests=[$TESTS] pipelines=[$PIPELINES] repeats=$REPEATS target_seconds=$BENCH_SECONDS fixed_n=${BENCH_N:-calibrated} fill_n=$FILL_N"
    echo "data dir: $DATA_DIR ($(df -h --output=source,fstype "$ROOT" 2>/dev/null | tail -n 1 | xargs))"
    echo "governor: $(cat /sys/devices/system/cpu/cpu"$SERVER_CPU"/cpufreq/scaling_governor 2>/dev/null || echo n/a)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); CPU $SERVER_CPU busy $(printf %.0f "$(cpu_busy_pct "$SERVER_CPU" 1)")%, CPU $CLIENT_CPU busy $(printf %.0f "$(cpu_busy_pct "$CLIENT_CPU" 1)")% (1 s sample before starting servers)"
} >"$OUT/env.txt"
log "results: $OUT"
busy=$(sed -n 's/^load before: .*busy \([0-9]*\)%, CPU [0-9]* busy \([0-9]*\)%.*/\1 \2/p' "$OUT/env.txt")
read -r b0 b1 <<<"$busy"
BUSY_WARNING=""
if ((${b0:-0} > 10 || ${b1:-0} > 10)); then
    BUSY_WARNING="WARNING: CPUs $SERVER_CPU/$CLIENT_CPU were already ${b0}%/${b1}% busy with other work before the run: ops/s are noisy (ops/CPU-s less so)."
    log "$BUSY_WARNING"
fi
read -r _ STEAL_T0 STEAL0 <<<"$(cpu_sample "$SERVER_CPU")"
sed 's/^/  /' "$OUT/env.txt" >&2

# ---------------------------------------------------------------- servers
start_server() { # NAME
    local s=$1 port dir cmd
    port=$(free_port)
    dir=$DATA_DIR/$s
    rm -rf "$dir"
    mkdir -p "$dir"
    case $s in
        skerry)
            # shellcheck disable=SC2206  # SKERRY_ARGS is word-split on purpose
            cmd=("$SKERRY_BIN" --port "$port" --bind 127.0.0.1 --threads "$SKERRY_THREADS" --dir "$dir" --data-size "$SKERRY_DATA_SIZE" $SKERRY_ARGS) ;;
        redis)
            # shellcheck disable=SC2206
            cmd=("$REDIS_BIN" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no --dir "$dir" $REDIS_ARGS) ;;
    esac
    echo "# taskset -c $SERVER_CPU ${cmd[*]}" >"$OUT/$s.server.log"
    taskset -c "$SERVER_CPU" "${cmd[@]}" >>"$OUT/$s.server.log" 2>&1 &
    PID[$s]=$!
    PORT[$s]=$port
    await_server "$s" "${PID[$s]}" "$port" "$OUT/$s.server.log" "$START_TIMEOUT"
    log "$s: pid ${PID[$s]}, port $port, CPU $SERVER_CPU"
}

check_alive() {
    kill -0 "${PID[$1]}" 2>/dev/null || { tail -n 20 "$OUT/$1.server.log" >&2; die "$1 (pid ${PID[$1]}) died; log: $OUT/$1.server.log"; }
}

# run_point SERVER TEST PIPELINE N RAWFILE: runs redis-benchmark; prints
# "wall_s rps server_cpu_s client_cpu_s p50 p99 p99.9" (percentiles from redis-benchmark's
# "Latency by percentile distribution": the first row at or above each percentile).
run_point() {
    local s=$1 t=$2 p=$3 n=$4 raw=$5 pid c0 c1 t0 t1 client line rps p50 p99 p999
    pid=${PID[$s]}
    check_alive "$s"
    c0=$(cpu_ticks "$pid")
    t0=$(now)
    # In a subshell so that its cutime+cstime (fields 16, 17) is redis-benchmark's CPU time.
    client=$(
        taskset -c "$CLIENT_CPU" redis-benchmark -h 127.0.0.1 -p "${PORT[$s]}" -c "$CLIENTS" -n "$n" \
            -d "$DATA_SIZE" -r "$KEYSPACE" -P "$p" -t "$t" >"$raw" 2>"$raw.stderr" || exit 1
        read -r line <"/proc/$BASHPID/stat"
        rest=${line##*) }
        read -r -a f <<<"$rest"
        echo $((f[13] + f[14]))
    ) || { cat "$raw.stderr" >&2; die "redis-benchmark failed against $s ($t -P $p)"; }
    t1=$(now)
    [[ -s $raw.stderr ]] || rm -f "$raw.stderr"
    check_alive "$s"
    c1=$(cpu_ticks "$pid")
    line=$(tr '\r' '\n' <"$raw" | awk '
        /Latency by percentile distribution/ { on = 1; next }
        /Cumulative distribution/ { on = 0 }
        on && /%/ { split($1, a, "%"); pct = a[1] + 0; ms = $3 + 0
            if (!d50 && pct >= 50) { p50 = ms; d50 = 1 }
            if (!d99 && pct >= 99) { p99 = ms; d99 = 1 }
            if (!d999 && pct >= 99.9) { p999 = ms; d999 = 1 } }
        /throughput summary:/ { rps = $3 }
        END { if (rps != "" && d999) print rps, p50, p99, p999 }')
    [[ -n $line ]] || die "could not parse redis-benchmark output: $raw"
    read -r rps p50 p99 p999 <<<"$line"
    echo "$(calc "$t1 - $t0") $rps $(calc "($c1 - $c0) / $CLK_TCK") $(calc "$client / $CLK_TCK") $p50 $p99 $p999"
}

for s in "${SERVER_LIST[@]}"; do start_server "$s"; done

# Fill: unmeasured SETs so that GETs hit and SETs overwrite (steady state).
if [[ $FILL_N -gt 0 ]]; then
    for s in "${SERVER_LIST[@]}"; do
        log "$s: filling ($FILL_N SETs of $DATA_SIZE B over $KEYSPACE keys, -P 16)"
        run_point "$s" set 16 "$FILL_N" "$OUT/raw/$s-fill.txt" >/dev/null
        keys=$(redis-cli -h 127.0.0.1 -p "${PORT[$s]}" dbsize 2>/dev/null || echo '?')
        log "$s: dbsize $keys"
        echo "$s dbsize after fill: $keys" >>"$OUT/env.txt"
    done
fi

# ---------------------------------------------------------------- measurements
declare -A NPOINT
for t in "${TEST_LIST[@]}"; do
    for p in "${PIPE_LIST[@]}"; do
        if [[ -n $BENCH_N ]]; then
            n=$BENCH_N
        else
            # Calibrate on the first server: a short run, then scale to BENCH_SECONDS.
            cal_n=$((100000 * p))
            s=${SERVER_LIST[0]}
            read -r _ rps _ <<<"$(run_point "$s" "$t" "$p" "$cal_n" "$OUT/raw/$s-$t-P$p-calibration.txt")"
            n=$(awk -v r="$rps" -v s="$BENCH_SECONDS" 'BEGIN { n = int(r * s / 10000 + 0.5) * 10000; if (n < 10000) n = 10000; print n }')
            log "$t -P $p: calibrated on $s at $rps ops/s -> -n $n"
        fi
        NPOINT[$t-$p]=$n
        for ((r = 1; r <= REPEATS; r++)); do
            order=("${SERVER_LIST[@]}")
            if ((r % 2 == 0)); then # alternate which server goes first
                order=()
                for ((i = ${#SERVER_LIST[@]} - 1; i >= 0; i--)); do order+=("${SERVER_LIST[i]}"); done
            fi
            for s in "${order[@]}"; do
                read -r wall rps cpu ccpu p50 p99 p999 <<<"$(run_point "$s" "$t" "$p" "$n" "$OUT/raw/$s-$t-P$p-r$r.txt")"
                opc=$(calc "($cpu > 0) ? $n / $cpu : 0")
                sutil=$(calc "$cpu / $wall")
                cutil=$(calc "$ccpu / $wall")
                printf '%s\t%s\t%s\t%s\t%s\t%.3f\t%s\t%.2f\t%.0f\t%.2f\t%.2f\t%s\t%s\t%s\n' "$s" "$t" "$p" "$r" "$n" "$wall" "$rps" "$cpu" "$opc" "$sutil" "$cutil" "$p50" "$p99" "$p999" >>"$RUNS"
                log "$(printf '%-6s %-3s -P %-2s rep %d: %10.0f ops/s  server CPU %6.2f s (%3.0f%%)  %10.0f ops/CPU-s  client CPU %3.0f%%' \
                    "$s" "$t" "$p" "$r" "$rps" "$cpu" "$(calc "$sutil * 100")" "$opc" "$(calc "$cutil * 100")")"
            done
        done
    done
done

read -r _ STEAL_T1 STEAL1 <<<"$(cpu_sample "$SERVER_CPU")"
{
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
    printf 'steal time on CPU %s during the run: %.1f%%\n' "$SERVER_CPU" "$(calc "($STEAL_T1 > $STEAL_T0) ? 100 * ($STEAL1 - $STEAL0) / ($STEAL_T1 - $STEAL_T0) : 0")"
} >>"$OUT/env.txt"

# ---------------------------------------------------------------- summary (medians)
fmt() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "nan") print "-"; else printf f, v }'; }

have() { [[ " ${SERVER_LIST[*]} " == *" $1 "* ]]; }
{
    echo "# Network benchmark: Skerry vs Redis"
    echo
    echo "\`$PROG\` — $(date -u '+%Y-%m-%d'); servers pinned on CPU $SERVER_CPU, redis-benchmark on CPU $CLIENT_CPU;"
    echo "$CLIENTS connections, $DATA_SIZE-byte values, $KEYSPACE random keys; median of $REPEATS run(s) per point."
    echo "ops/CPU-s = requests / server CPU seconds (utime+stime from /proc/PID/stat)."
    echo
    [[ -n $BUSY_WARNING ]] && echo "**$BUSY_WARNING**" && echo
    echo '```'
    cat "$OUT/env.txt"
    echo '```'
    echo
    echo "| test | P | requests | Skerry ops/s | Redis ops/s | ops/s Skerry/Redis | Skerry ops/CPU-s | Redis ops/CPU-s | ops/CPU-s Skerry/Redis |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    for t in "${TEST_LIST[@]}"; do
        for p in "${PIPE_LIST[@]}"; do
            ks=nan kr=nan cs=nan cr=nan
            have skerry && ks=$(run_median skerry "$t" "$p" 7) && cs=$(run_median skerry "$t" "$p" 9)
            have redis && kr=$(run_median redis "$t" "$p" 7) && cr=$(run_median redis "$t" "$p" 9)
            echo "| ${t^^} | $p | ${NPOINT[$t-$p]} | $(fmt "$ks" %.0f) | $(fmt "$kr" %.0f) | $(ratio "$ks" "$kr") | $(fmt "$cs" %.0f) | $(fmt "$cr" %.0f) | $(ratio "$cs" "$cr") |"
        done
    done
    echo
    echo "Details (medians): server CPU seconds, server CPU utilisation (CPU s / wall s), client (redis-benchmark)"
    echo "CPU utilisation — a client near 100% means the point is client-bound — and latency percentiles."
    echo
    echo "| server | test | P | server CPU s | server util | client util | p50 ms | p99 ms | p99.9 ms |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
    for t in "${TEST_LIST[@]}"; do
        for p in "${PIPE_LIST[@]}"; do
            for s in "${SERVER_LIST[@]}"; do
                echo "| $s | ${t^^} | $p | $(fmt "$(run_median "$s" "$t" "$p" 8)" %.2f) | $(fmt "$(run_median "$s" "$t" "$p" 10)" %.2f) | $(fmt "$(run_median "$s" "$t" "$p" 11)" %.2f) | $(run_median "$s" "$t" "$p" 12) | $(run_median "$s" "$t" "$p" 13) | $(run_median "$s" "$t" "$p" 14) |"
            done
        done
    done
    echo
    echo "Raw data: \`runs.tsv\` (every run), \`raw/\` (redis-benchmark output), \`*.server.log\`."
} >"$OUT/summary.md"

echo
sed -n '/^| test | P | requests/,/^$/p' "$OUT/summary.md"
sed -n '/^| server | test/,/^$/p' "$OUT/summary.md"
log "summary: $OUT/summary.md"
