#!/usr/bin/env bash
# bench/hll.sh - HyperLogLog throughput and CPU efficiency: Skerry vs Debian's redis-server.
#
# Both servers run one after the other in the same run, each pinned on SERVER_CPU (Skerry
# with --threads 1, redis-server with --save "" --appendonly no); redis-benchmark runs
# pinned on CLIENT_CPU with CLIENTS connections. Each server first gets FILL_N unmeasured
# PFADDs of random elements into three HLLs (dense by then), then the points:
#   pfadd     PFADD hll:a{t} el:<random>          (mostly no register changes, as in real use)
#   pfcount   PFCOUNT hll:a{t}                    (cached cardinality after the first one)
#   pfcount3  PFCOUNT hll:a{t} hll:b{t} hll:c{t}  (the union: merge and estimate every time)
#   pfnew     PFADD hll:new:<random> el:<random>  (new sparse HLLs, every one a write)
# For every point the server's utime+stime is read from /proc/PID/stat before and after,
# giving operations per server CPU-second (pfcount3 runs BENCH_N/50 requests). Each point is repeated REPEATS times, servers
# alternating; the medians are reported.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=bench/hll.sh

HELP=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) QUICK=1; shift ;;
        --servers) SERVERS=${2:?}; shift 2 ;;
        --repeats) REPEATS=${2:?}; shift 2 ;;
        --n) BENCH_N=${2:?}; shift 2 ;;
        --out) OUT=${2:?}; shift 2 ;;
        -h | --help) HELP=1; shift ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

QUICK=${QUICK:-0}
if [[ $QUICK == 1 ]]; then
    BENCH_N=${BENCH_N:-200000}
    REPEATS=${REPEATS:-1}
    FILL_N=${FILL_N:-300000}
fi
BENCH_N=${BENCH_N:-1000000}     # requests per point
REPEATS=${REPEATS:-3}
FILL_N=${FILL_N:-1000000}       # unmeasured PFADDs per HLL before measuring
SERVERS=${SERVERS:-skerry redis}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
CLIENTS=${CLIENTS:-50}
TESTS=${TESTS:-pfadd pfcount pfcount3 pfnew}
PIPELINES=${PIPELINES:-1 16}
RANGE=${RANGE:-100000000}       # redis-benchmark -r: elements (and new keys) are random below it
SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
SKERRY_ARGS=${SKERRY_ARGS:-}
SKERRY_THREADS=${SKERRY_THREADS:-1}   # Skerry's --threads; "default": none (one worker per CPU), all threads then on SERVER_CPU
SKERRY_DATA_SIZE=${SKERRY_DATA_SIZE:-4gb}
REDIS_BIN=${REDIS_BIN:-}
DATA_DIR=${DATA_DIR:-$ROOT/bench/tmp/hll}
OUT=${OUT:-}

usage() {
    cat <<EOF
Usage: $PROG [--quick] [--servers "skerry redis"] [--repeats N] [--n N] [--out DIR]

Environment (defaults): BENCH_N=1000000 requests per point, REPEATS=3, FILL_N=1000000,
QUICK=1 (200000 requests, 1 repeat, 300000 fill), SERVERS="skerry redis", SERVER_CPU=0,
CLIENT_CPU=1, CLIENTS=50, TESTS="pfadd pfcount pfcount3 pfnew", PIPELINES="1 16",
RANGE=100000000, SKERRY_BIN (target/release/skerry, built when missing), SKERRY_THREADS=1 ("default":
no --threads, every thread then moved onto SERVER_CPU), SKERRY_ARGS,
SKERRY_DATA_SIZE=4gb, REDIS_BIN (Debian's redis-server), DATA_DIR=bench/tmp/hll,
OUT=bench/results/<date>-hll.
EOF
}
[[ $HELP == 1 ]] && { usage; exit 0; }

log() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] ERROR: %s\n' "$*" >&2; exit 2; }

for v in BENCH_N REPEATS FILL_N SERVER_CPU CLIENT_CPU CLIENTS RANGE; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer (got '${!v}')"
done
[[ $REPEATS -ge 1 ]] || die "REPEATS must be >= 1"
read -r -a SERVER_LIST <<<"$SERVERS"
read -r -a TEST_LIST <<<"$TESTS"
read -r -a PIPE_LIST <<<"$PIPELINES"
for s in "${SERVER_LIST[@]}"; do [[ $s == skerry || $s == redis ]] || die "unknown server '$s' (skerry|redis)"; done
for t in "${TEST_LIST[@]}"; do
    [[ $t == pfadd || $t == pfcount || $t == pfcount3 || $t == pfnew ]] || die "unknown test '$t'"
done

APT_UPDATED=0
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
need_cmd redis-benchmark redis-tools
need_cmd redis-cli redis-tools
need_cmd taskset util-linux
if [[ " ${SERVER_LIST[*]} " == *" redis "* && -z $REDIS_BIN ]]; then
    need_cmd redis-server redis-server
    REDIS_BIN=$(command -v redis-server)
fi
NCPU=$(nproc --all)
((SERVER_CPU < NCPU && CLIENT_CPU < NCPU)) || die "this machine has $NCPU CPUs"
CLK_TCK=$(getconf CLK_TCK)
if [[ " ${SERVER_LIST[*]} " == *" skerry "* && ! -x $SKERRY_BIN ]]; then
    [[ $SKERRY_BIN == "$ROOT/target/release/skerry" ]] || die "SKERRY_BIN not found: $SKERRY_BIN"
    log "building skerry (cargo build --release)"
    (cd "$ROOT" && cargo build --release --bin skerry >&2) || die "cargo build --release failed"
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

[[ -n $OUT ]] || OUT=$(new_results_dir hll)
mkdir -p "$OUT/raw"
RUNS=$OUT/runs.tsv
printf 'server\ttest\tpipeline\trep\trequests\twall_s\trps\tserver_cpu_s\tops_per_cpu_s\n' >"$RUNS"
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "host: $(uname -srm), $NCPU CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    [[ " ${SERVER_LIST[*]} " == *" skerry "* ]] && echo "skerry: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?') $SKERRY_BIN --threads $SKERRY_THREADS --data-size $SKERRY_DATA_SIZE $SKERRY_ARGS"
    [[ -n $REDIS_BIN ]] && echo "redis: $("$REDIS_BIN" --version) --save \"\" --appendonly no"
    echo "client: $(redis-benchmark --version 2>/dev/null || echo redis-benchmark)"
    echo "params: servers=[$SERVERS] server_cpu=$SERVER_CPU client_cpu=$CLIENT_CPU clients=$CLIENTS tests=[$TESTS] pipelines=[$PIPELINES] n=$BENCH_N repeats=$REPEATS fill_n=$FILL_N range=$RANGE"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); CPU $SERVER_CPU busy $(printf %.0f "$(cpu_busy_pct "$SERVER_CPU" 1)")%, CPU $CLIENT_CPU busy $(printf %.0f "$(cpu_busy_pct "$CLIENT_CPU" 1)")%"
} >"$OUT/env.txt"
log "results: $OUT"
sed 's/^/  /' "$OUT/env.txt" >&2

start_server() { # NAME
    local s=$1 port dir cmd
    port=$(free_port)
    dir=$DATA_DIR/$s
    rm -rf "$dir"
    mkdir -p "$dir"
    case $s in
        # shellcheck disable=SC2206  # SKERRY_ARGS is word-split on purpose
        skerry)
            cmd=("$SKERRY_BIN" --port "$port" --bind 127.0.0.1 --dir "$dir" --data-size "$SKERRY_DATA_SIZE")
            [[ $SKERRY_THREADS == default ]] || cmd+=(--threads "$SKERRY_THREADS")
            # shellcheck disable=SC2206  # SKERRY_ARGS is word-split on purpose
            cmd+=($SKERRY_ARGS) ;;
        redis) cmd=("$REDIS_BIN" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no --dir "$dir") ;;
    esac
    if [[ $s == skerry && $SKERRY_THREADS == default ]]; then
        # The default configuration (one worker per CPU): started unpinned, so that it sizes
        # itself from every CPU, then every thread is moved onto SERVER_CPU.
        echo "# ${cmd[*]} (then taskset -a -p -c $SERVER_CPU)" >"$OUT/$s.server.log"
        "${cmd[@]}" >>"$OUT/$s.server.log" 2>&1 &
    else
        echo "# taskset -c $SERVER_CPU ${cmd[*]}" >"$OUT/$s.server.log"
        taskset -c "$SERVER_CPU" "${cmd[@]}" >>"$OUT/$s.server.log" 2>&1 &
    fi
    PID[$s]=$!
    PORT[$s]=$port
    await_server "$s" "${PID[$s]}" "$port" "$OUT/$s.server.log"
    if [[ $s == skerry && $SKERRY_THREADS == default ]]; then
        # INFO visits every worker: once it answers, every worker thread exists.
        redis-cli -p "$port" INFO >/dev/null
        pin_all_threads "${PID[$s]}" "$SERVER_CPU"
    fi
    log "$s: pid ${PID[$s]}, port $port, CPU $SERVER_CPU"
}

# The command of each test, for redis-benchmark (__rand_int__: random below RANGE).
test_cmd() {
    case $1 in
        pfadd) echo "PFADD hll:a{t} el:__rand_int__" ;;
        pfcount) echo "PFCOUNT hll:a{t}" ;;
        pfcount3) echo "PFCOUNT hll:a{t} hll:b{t} hll:c{t}" ;;
        pfnew) echo "PFADD hll:new:__rand_int__ el:__rand_int__" ;;
    esac
}

# run_point SERVER PIPELINE N RAWFILE CMD...: prints "wall_s rps server_cpu_s".
run_point() {
    local s=$1 p=$2 n=$3 raw=$4 pid c0 c1 t0 t1 rps
    shift 4
    pid=${PID[$s]}
    kill -0 "$pid" 2>/dev/null || die "$s died"
    c0=$(cpu_ticks "$pid")
    t0=$(now)
    taskset -c "$CLIENT_CPU" redis-benchmark -h 127.0.0.1 -p "${PORT[$s]}" -c "$CLIENTS" -n "$n" \
        -r "$RANGE" -P "$p" -q "$@" >"$raw" 2>&1 || { cat "$raw" >&2; die "redis-benchmark failed against $s"; }
    t1=$(now)
    kill -0 "$pid" 2>/dev/null || die "$s died"
    c1=$(cpu_ticks "$pid")
    rps=$(benchmark_rps "$raw")
    [[ -n $rps ]] || die "could not parse redis-benchmark output: $raw"
    echo "$(calc "$t1 - $t0") $rps $(calc "($c1 - $c0) / $CLK_TCK")"
}

for s in "${SERVER_LIST[@]}"; do
    start_server "$s"
    if [[ $FILL_N -gt 0 ]]; then
        log "$s: filling ($FILL_N PFADDs into each of hll:a{t} hll:b{t} hll:c{t}, -P 16)"
        for k in a b c; do
            # shellcheck disable=SC2046
            run_point "$s" 16 "$FILL_N" "$OUT/raw/$s-fill-$k.txt" PFADD "hll:$k{t}" "el:__rand_int__" >/dev/null
        done
        log "$s: PFCOUNT hll:a{t} = $(redis-cli -p "${PORT[$s]}" PFCOUNT 'hll:a{t}')"
    fi
done

for t in "${TEST_LIST[@]}"; do
    read -r -a cmd <<<"$(test_cmd "$t")"
    n=$BENCH_N
    # The union costs ~100 us per call (three 16384-register merges and an estimate).
    [[ $t == pfcount3 ]] && n=$((BENCH_N / 50 > 1000 ? BENCH_N / 50 : 1000))
    for p in "${PIPE_LIST[@]}"; do
        for ((r = 1; r <= REPEATS; r++)); do
            order=("${SERVER_LIST[@]}")
            if ((r % 2 == 0)); then
                order=()
                for ((i = ${#SERVER_LIST[@]} - 1; i >= 0; i--)); do order+=("${SERVER_LIST[i]}"); done
            fi
            for s in "${order[@]}"; do
                read -r wall rps cpu <<<"$(run_point "$s" "$p" "$n" "$OUT/raw/$s-$t-P$p-r$r.txt" "${cmd[@]}")"
                opc=$(calc "($cpu > 0) ? $n / $cpu : 0")
                printf '%s\t%s\t%s\t%s\t%s\t%.3f\t%s\t%.2f\t%.0f\n' "$s" "$t" "$p" "$r" "$n" "$wall" "$rps" "$cpu" "$opc" >>"$RUNS"
                log "$(printf '%-6s %-8s -P %-2s rep %d: %10.0f ops/s  server CPU %6.2f s  %10.0f ops/CPU-s' "$s" "$t" "$p" "$r" "$rps" "$cpu" "$opc")"
            done
        done
    done
done

fmt() { awk -v v="$1" 'BEGIN { if (v == "nan") print "-"; else printf "%.0f", v }'; }
have() { [[ " ${SERVER_LIST[*]} " == *" $1 "* ]]; }
{
    echo "# HyperLogLog benchmark: Skerry vs Redis"
    echo
    echo "\`$PROG\` — servers pinned on CPU $SERVER_CPU, redis-benchmark on CPU $CLIENT_CPU, $CLIENTS connections;"
    echo "median of $REPEATS run(s) of $BENCH_N requests per point (pfcount3: BENCH_N/50). ops/CPU-s = requests / server CPU seconds."
    echo
    echo '```'
    cat "$OUT/env.txt"
    echo '```'
    echo
    echo "| test | P | Skerry ops/s | Redis ops/s | ops/s Skerry/Redis | Skerry ops/CPU-s | Redis ops/CPU-s | ops/CPU-s Skerry/Redis |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    for t in "${TEST_LIST[@]}"; do
        for p in "${PIPE_LIST[@]}"; do
            ks=nan kr=nan cs=nan cr=nan
            have skerry && ks=$(run_median skerry "$t" "$p" 7) && cs=$(run_median skerry "$t" "$p" 9)
            have redis && kr=$(run_median redis "$t" "$p" 7) && cr=$(run_median redis "$t" "$p" 9)
            echo "| $t | $p | $(fmt "$ks") | $(fmt "$kr") | $(ratio "$ks" "$kr") | $(fmt "$cs") | $(fmt "$cr") | $(ratio "$cs" "$cr") |"
        done
    done
    echo
    echo "Raw data: \`runs.tsv\`, \`raw/\` (redis-benchmark output), \`*.server.log\`."
} >"$OUT/summary.md"
echo
sed -n '/^| test | P/,/^$/p' "$OUT/summary.md"
log "summary: $OUT/summary.md"
