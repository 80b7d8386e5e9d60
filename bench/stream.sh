#!/usr/bin/env bash
# bench/stream.sh - stream throughput and CPU efficiency: Skerry (--threads 1 and the default
# two workers) vs Debian's redis-server (issue 27).
#
# The servers run one after the other in the same run, each pinned on SERVER_CPU (Skerry's
# workers all on it too; redis-server with --save "" --appendonly no); the clients run
# pinned on CLIENT_CPU. Points:
#   xadd   XADD bench:xadd{t} * f <16 bytes>          (redis-benchmark, CLIENTS connections)
#   pairs  XREADGROUP GROUP g c<i> COUNT 1 STREAMS bench:pairs{t} > then XACK of the entry
#          it got, one pair in flight per connection (bench/stream-pairs.py, PAIR_CONNS
#          connections); the stream is filled first with enough entries for every point
# For every point the server's utime+stime is read from /proc/PID/stat before and after,
# giving operations per server CPU-second (a pair counts as two operations). Each point is
# repeated REPEATS times, servers alternating; the medians are reported.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=bench/stream.sh

HELP=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) QUICK=1; shift ;;
        --servers) SERVERS=${2:?}; shift 2 ;;
        --repeats) REPEATS=${2:?}; shift 2 ;;
        --out) OUT=${2:?}; shift 2 ;;
        -h | --help) HELP=1; shift ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

QUICK=${QUICK:-0}
if [[ $QUICK == 1 ]]; then
    XADD_N=${XADD_N:-100000}
    PAIRS_N=${PAIRS_N:-20000}
    REPEATS=${REPEATS:-1}
fi
XADD_N=${XADD_N:-500000}        # XADDs per point
PAIRS_N=${PAIRS_N:-100000}      # XREADGROUP+XACK pairs per point
REPEATS=${REPEATS:-3}
SERVERS=${SERVERS:-skerry1 skerry2 redis}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
CLIENTS=${CLIENTS:-50}
PAIR_CONNS=${PAIR_CONNS:-50}
TESTS=${TESTS:-xadd pairs}
SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
SKERRY_ARGS=${SKERRY_ARGS:-}
SKERRY_DATA_SIZE=${SKERRY_DATA_SIZE:-4gb}
REDIS_BIN=${REDIS_BIN:-}
DATA_DIR=${DATA_DIR:-$ROOT/bench/tmp/stream}
OUT=${OUT:-}

usage() {
    cat <<EOF2
Usage: $PROG [--quick] [--servers "skerry1 skerry2 redis"] [--repeats N] [--out DIR]

Environment (defaults): XADD_N=500000, PAIRS_N=100000, REPEATS=3, QUICK=1 (100000 XADDs,
20000 pairs, 1 repeat), SERVERS="skerry1 skerry2 redis" (skerry1: --threads 1, skerry2:
--threads 2), SERVER_CPU=0, CLIENT_CPU=1, CLIENTS=50, PAIR_CONNS=50, TESTS="xadd pairs",
SKERRY_BIN (target/release/skerry), SKERRY_ARGS, SKERRY_DATA_SIZE=4gb, REDIS_BIN (Debian's
redis-server), DATA_DIR=bench/tmp/stream, OUT=bench/results/<date>-stream.
EOF2
}
[[ $HELP == 1 ]] && { usage; exit 0; }

log() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] ERROR: %s\n' "$*" >&2; exit 2; }

for v in XADD_N PAIRS_N REPEATS SERVER_CPU CLIENT_CPU CLIENTS PAIR_CONNS; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer (got '${!v}')"
done
[[ $REPEATS -ge 1 ]] || die "REPEATS must be >= 1"
read -r -a SERVER_LIST <<<"$SERVERS"
read -r -a TEST_LIST <<<"$TESTS"
for s in "${SERVER_LIST[@]}"; do
    [[ $s == skerry1 || $s == skerry2 || $s == redis ]] || die "unknown server '$s' (skerry1|skerry2|redis)"
done
for t in "${TEST_LIST[@]}"; do [[ $t == xadd || $t == pairs ]] || die "unknown test '$t'"; done

APT_UPDATED=0
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
need_cmd redis-benchmark redis-tools
need_cmd redis-cli redis-tools
need_cmd taskset util-linux
need_cmd python3 python3
if [[ " ${SERVER_LIST[*]} " == *" redis "* && -z $REDIS_BIN ]]; then
    need_cmd redis-server redis-server
    REDIS_BIN=$(command -v redis-server)
fi
NCPU=$(nproc --all)
((SERVER_CPU < NCPU && CLIENT_CPU < NCPU)) || die "this machine has $NCPU CPUs"
CLK_TCK=$(getconf CLK_TCK)
if [[ " ${SERVER_LIST[*]} " == *" skerry"* && ! -x $SKERRY_BIN ]]; then
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

[[ -n $OUT ]] || OUT=$(new_results_dir stream)
mkdir -p "$OUT/raw"
RUNS=$OUT/runs.tsv
printf 'server\ttest\trep\tops\twall_s\tops_per_s\tserver_cpu_s\tops_per_cpu_s\n' >"$RUNS"
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "host: $(uname -srm), $NCPU CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    [[ " ${SERVER_LIST[*]} " == *" skerry"* ]] && echo "skerry: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?') $SKERRY_BIN --threads 1|2 --data-size $SKERRY_DATA_SIZE $SKERRY_ARGS"
    [[ -n $REDIS_BIN ]] && echo "redis: $("$REDIS_BIN" --version) --save \"\" --appendonly no"
    echo "client: $(redis-benchmark --version 2>/dev/null || echo redis-benchmark), bench/stream-pairs.py ($(python3 --version))"
    echo "params: servers=[$SERVERS] server_cpu=$SERVER_CPU client_cpu=$CLIENT_CPU clients=$CLIENTS pair_conns=$PAIR_CONNS tests=[$TESTS] xadd_n=$XADD_N pairs_n=$PAIRS_N repeats=$REPEATS"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
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
        skerry1) cmd=("$SKERRY_BIN" --port "$port" --bind 127.0.0.1 --threads 1 --dir "$dir" --data-size "$SKERRY_DATA_SIZE" $SKERRY_ARGS) ;;
        # shellcheck disable=SC2206
        skerry2) cmd=("$SKERRY_BIN" --port "$port" --bind 127.0.0.1 --threads 2 --dir "$dir" --data-size "$SKERRY_DATA_SIZE" $SKERRY_ARGS) ;;
        redis) cmd=("$REDIS_BIN" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no --dir "$dir") ;;
    esac
    echo "# taskset -c $SERVER_CPU ${cmd[*]}" >"$OUT/$s.server.log"
    taskset -c "$SERVER_CPU" "${cmd[@]}" >>"$OUT/$s.server.log" 2>&1 &
    PID[$s]=$!
    PORT[$s]=$port
    await_server "$s" "${PID[$s]}" "$port" "$OUT/$s.server.log"
    log "$s: pid ${PID[$s]}, port $port, CPU $SERVER_CPU"
}

# run_point SERVER TEST RAWFILE: prints "ops wall_s server_cpu_s".
run_point() {
    local s=$1 t=$2 raw=$3 pid c0 c1 t0 t1 ops
    pid=${PID[$s]}
    kill -0 "$pid" 2>/dev/null || die "$s died"
    c0=$(cpu_ticks "$pid")
    t0=$(now)
    case $t in
        xadd)
            taskset -c "$CLIENT_CPU" redis-benchmark -h 127.0.0.1 -p "${PORT[$s]}" -c "$CLIENTS" \
                -n "$XADD_N" -q XADD 'bench:xadd{t}' '*' f 0123456789abcdef >"$raw" 2>&1 ||
                { cat "$raw" >&2; die "redis-benchmark failed against $s"; }
            ops=$XADD_N
            ;;
        pairs)
            taskset -c "$CLIENT_CPU" python3 "$ROOT/bench/stream-pairs.py" "${PORT[$s]}" \
                'bench:pairs{t}' g "$PAIRS_N" "$PAIR_CONNS" >"$raw" 2>&1 ||
                { cat "$raw" >&2; die "stream-pairs.py failed against $s"; }
            ops=$((2 * PAIRS_N))
            ;;
    esac
    t1=$(now)
    kill -0 "$pid" 2>/dev/null || die "$s died"
    c1=$(cpu_ticks "$pid")
    echo "$ops $(calc "$t1 - $t0") $(calc "($c1 - $c0) / $CLK_TCK")"
}

for s in "${SERVER_LIST[@]}"; do
    start_server "$s"
    if [[ " ${TEST_LIST[*]} " == *" pairs "* ]]; then
        fill=$((PAIRS_N * REPEATS + 1000))
        log "$s: filling bench:pairs{t} with $fill entries"
        redis-cli -p "${PORT[$s]}" XGROUP CREATE 'bench:pairs{t}' g 0 MKSTREAM >/dev/null
        taskset -c "$CLIENT_CPU" redis-benchmark -h 127.0.0.1 -p "${PORT[$s]}" -c 1 -P 64 -n "$fill" -q \
            XADD 'bench:pairs{t}' '*' f 0123456789abcdef >/dev/null
        log "$s: XLEN bench:pairs{t} = $(redis-cli -p "${PORT[$s]}" XLEN 'bench:pairs{t}')"
    fi
done

for t in "${TEST_LIST[@]}"; do
    for ((r = 1; r <= REPEATS; r++)); do
        order=("${SERVER_LIST[@]}")
        if ((r % 2 == 0)); then
            order=()
            for ((i = ${#SERVER_LIST[@]} - 1; i >= 0; i--)); do order+=("${SERVER_LIST[i]}"); done
        fi
        for s in "${order[@]}"; do
            read -r ops wall cpu <<<"$(run_point "$s" "$t" "$OUT/raw/$s-$t-r$r.txt")"
            rate=$(calc "$ops / $wall")
            opc=$(calc "($cpu > 0) ? $ops / $cpu : 0")
            printf '%s\t%s\t%s\t%s\t%.3f\t%.0f\t%.2f\t%.0f\n' "$s" "$t" "$r" "$ops" "$wall" "$rate" "$cpu" "$opc" >>"$RUNS"
            log "$(printf '%-7s %-5s rep %d: %10.0f ops/s  server CPU %6.2f s  %10.0f ops/CPU-s' "$s" "$t" "$r" "$rate" "$cpu" "$opc")"
        done
    done
done
for s in "${SERVER_LIST[@]}"; do
    [[ $s == redis ]] && continue
    redis-cli -p "${PORT[$s]}" INFO storage | tr -d '\r' | grep -E 'device_written_bytes|records_appended|collection_group_records' >"$OUT/$s.storage.txt" || true
done

median() { # SERVER TEST COLUMN
    awk -F'\t' -v s="$1" -v t="$2" -v c="$3" 'NR > 1 && $1 == s && $2 == t { print $c }' "$RUNS" | median_of
}
fmt() { awk -v v="$1" 'BEGIN { if (v == "nan") print "-"; else printf "%.0f", v }'; }
have() { [[ " ${SERVER_LIST[*]} " == *" $1 "* ]]; }
{
    echo "# Stream benchmark: Skerry vs Redis"
    echo
    echo "\`$PROG\` — servers pinned on CPU $SERVER_CPU, clients on CPU $CLIENT_CPU; median of $REPEATS run(s)"
    echo "per point; xadd: $XADD_N XADDs (redis-benchmark, $CLIENTS connections); pairs: $PAIRS_N"
    echo "XREADGROUP COUNT 1 + XACK pairs ($PAIR_CONNS connections, a pair = 2 operations)."
    echo "ops/CPU-s = operations / server CPU seconds."
    echo
    echo '```'
    cat "$OUT/env.txt"
    echo '```'
    echo
    echo "| test | Skerry workers | Skerry ops/s | Redis ops/s | ops/s Skerry/Redis | Skerry ops/CPU-s | Redis ops/CPU-s | ops/CPU-s Skerry/Redis |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    for t in "${TEST_LIST[@]}"; do
        for sk in skerry1 skerry2; do
            have "$sk" || continue
            ks=$(median "$sk" "$t" 6) cs=$(median "$sk" "$t" 8)
            kr=nan cr=nan
            have redis && kr=$(median redis "$t" 6) && cr=$(median redis "$t" 8)
            echo "| $t | ${sk#skerry} | $(fmt "$ks") | $(fmt "$kr") | $(ratio "$ks" "$kr") | $(fmt "$cs") | $(fmt "$cr") | $(ratio "$cs" "$cr") |"
        done
    done
    echo
    echo "Raw data: \`runs.tsv\`, \`raw/\` (client output), \`*.server.log\`, \`*.storage.txt\`."
} >"$OUT/summary.md"
echo
sed -n '/^| test |/,/^$/p' "$OUT/summary.md"
log "summary: $OUT/summary.md"
