#!/usr/bin/env bash
# shellcheck disable=SC2016  # literal $ and backticks in single quotes are intended
# bench/suite.sh - the benchmark suite: Skerry and Debian's redis-server side by side in one
# run, by the published method, and the report (bench/report.py -> docs/benchmarks.md).
#
#   bench/suite.sh --quick      # smoke variant: N=100000, 3 s points, a few connection counts (~4 min)
#   bench/suite.sh              # full variant: N=1M and N=10M (Skerry inside memcap 2048), 30 s points
#   bench/suite.sh --publish    # also regenerate docs/benchmarks.md from this run
#
# Per dataset (decimal keys 1..N, DATA_SIZE-byte values), both servers run at the same time,
# pinned on SERVER_CPU (Skerry --threads 1; redis-server --save "" --appendonly no), idle
# while the other one is measured; skerry-bench runs pinned on CLIENT_CPU. Points alternate
# between the servers, so slow drift of this shared machine hits both alike. Steps:
#   1. fio ceiling (4 KiB random read, O_DIRECT, iodepth 32) on a file of the dataset's size.
#   2. Fill each server with exactly N SETs (sequential, disjoint streams); DBSIZE == N and
#      STRLEN == DATA_SIZE of sample keys; RSS before and after -> bytes per key.
#   3. Skerry cold restart (kill -9 right after the fill): seconds to PING and to DBSIZE == N.
#   4. GET warm-up (WARMUP s per server), then GET and SET sweeps over CONNS_LIST (pipeline 1),
#      each point DURATION s, REPEATS times; GETs must all hit (--require-no-misses).
#   5. Pipeline sweep (PIPELINES, PIPELINE_CONNS connections) for GET and SET, on the first
#      dataset only.
#   6. DBSIZE/STRLEN check again.
# Default configuration (DEFAULT_CONFIG=1, the default; 0 skips it): on the first dataset a
# third server, skerry-default ("Skerry (defaults)"): Skerry with no --threads (one worker
# per CPU it sees), its other flags as for skerry. It is started unpinned, so that it sizes
# its workers to every CPU (2 here; under taskset it would see one), then every thread of it
# is moved onto SERVER_CPU like the other servers: ops per server CPU-second on the same
# CPU, so with both workers on one CPU it measures the CPU cost of the cross-worker hops
# (the check "pinned" verifies the threads stayed there). It is started, filled and checked
# like the others after the connection sweep, warmed up, and measured only at the pipeline
# sweep's points at DEFAULT_PIPELINES (1 16; each must be in PIPELINES) for GET and SET,
# right after skerry at each point. SKIP_PIPELINE=1 skips it too.
# Then, once: durability (fresh servers, uniform SET, FSYNC_CONNS connections): Skerry
# --appendfsync always|everysec|no vs redis-server --appendonly yes --appendfsync the same;
# and HSET/HDEL by the published method (HASH_KEYS hash keys of one field, 4 client threads x
# 50 connections, sequential, 32-byte values, exactly one HSET then one HDEL per key).
# Every run's server CPU seconds (utime+stime, /proc/PID/stat) -> ops per server CPU-second.
#
# Output (OUT, default bench/results/<date>-suite): points.tsv (one row per run), facts.tsv,
# env.txt, raw/ (skerry-bench JSON per run, fio JSON), logs/ (server log tails), report.md and
# charts/ (bench/report.py). See bench/README.md for every knob.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CMDLINE="bench/suite.sh $*"
for a in QUICK DATASETS DURATION REPEATS CONNS_LIST PIPELINES PIPELINE_CONNS FSYNC_CONNS FSYNC_POLICIES \
    HASH_KEYS WARMUP MEMCAP_FROM_N MEMCAP_MIB SKIP_REDIS SKIP_FIO SKIP_DURABILITY SKIP_HASH SKIP_PIPELINE \
    DEFAULT_CONFIG DEFAULT_PIPELINES; do
    [[ -n ${!a:-} ]] && CMDLINE="$a='${!a}' $CMDLINE"
done

QUICK=${QUICK:-0}
PUBLISH=0
while (($#)); do
    case $1 in
        --quick) QUICK=1 ;;
        --publish) PUBLISH=1 ;;
        --out) OUT=$2; shift ;;
        -h | --help) sed -n '3,41p' "$0"; exit 0 ;;
        *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [[ $QUICK == 1 ]]; then
    : "${DATASETS:=100000}" "${DURATION:=3}" "${REPEATS:=1}" "${CONNS_LIST:=16 80 640}" "${PIPELINES:=1 16}"
    : "${WARMUP:=2}" "${HASH_KEYS:=100000}" "${FIO_RUNTIME:=5}"
fi
DATASETS=${DATASETS:-1000000 10000000}
DURATION=${DURATION:-30}
REPEATS=${REPEATS:-1}
CONNS_LIST=${CONNS_LIST:-16 32 80 160 320 640}
PIPELINES=${PIPELINES:-1 4 16 64}
PIPELINE_CONNS=${PIPELINE_CONNS:-50}
FSYNC_CONNS=${FSYNC_CONNS:-50}
FSYNC_POLICIES=${FSYNC_POLICIES:-always everysec no}
FSYNC_N=${FSYNC_N:-1000000}
HASH_KEYS=${HASH_KEYS:-1000000}
WARMUP=${WARMUP:-10}
DATA_SIZE=${DATA_SIZE:-1024}
FILL_CONNS=${FILL_CONNS:-50}
FILL_PIPELINE=${FILL_PIPELINE:-16}
FIO_RUNTIME=${FIO_RUNTIME:-15}
MEMCAP_FROM_N=${MEMCAP_FROM_N:-10000000} # datasets this large run Skerry inside memcap
MEMCAP_MIB=${MEMCAP_MIB:-2048}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SKIP_REDIS=${SKIP_REDIS:-0}
SKIP_FIO=${SKIP_FIO:-0}
SKIP_DURABILITY=${SKIP_DURABILITY:-0}
SKIP_HASH=${SKIP_HASH:-0}
SKIP_PIPELINE=${SKIP_PIPELINE:-0}
DEFAULT_CONFIG=${DEFAULT_CONFIG:-1}     # 1: skerry-default (Skerry with no --threads) on the first dataset
DEFAULT_PIPELINES=${DEFAULT_PIPELINES:-1 16} # its points: pipeline sweep, these depths
SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
BENCH_BIN=${BENCH_BIN:-$ROOT/target/release/skerry-bench}
REDIS_BIN=${REDIS_BIN:-}
SKERRY_ARGS=${SKERRY_ARGS:-}
REDIS_ARGS=${REDIS_ARGS:-}
DATA_DIR=${DATA_DIR:-$ROOT/bench/tmp/suite}
OUT=${OUT:-}
START_TIMEOUT=${START_TIMEOUT:-600}
PYTHON=${PYTHON:-/usr/bin/python3}

log() { printf '[suite] %s\n' "$*" >&2; }
die() { printf '[suite] ERROR: %s\n' "$*" >&2; exit 2; }

for v in DURATION REPEATS PIPELINE_CONNS FSYNC_CONNS FSYNC_N HASH_KEYS WARMUP DATA_SIZE FILL_CONNS FILL_PIPELINE \
    FIO_RUNTIME MEMCAP_FROM_N MEMCAP_MIB SERVER_CPU CLIENT_CPU; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer (got '${!v}')"
done
[[ $DEFAULT_CONFIG == [01] ]] || die "DEFAULT_CONFIG must be 0 or 1 (got '$DEFAULT_CONFIG')"
for n in $DATASETS $CONNS_LIST $PIPELINES $DEFAULT_PIPELINES; do [[ $n =~ ^[1-9][0-9]*$ ]] || die "not a positive integer: '$n'"; done
((DURATION >= 1 && REPEATS >= 1)) || die "DURATION and REPEATS must be >= 1"
for p in $DEFAULT_PIPELINES; do
    [[ " $PIPELINES " == *" $p "* ]] || log "note: DEFAULT_PIPELINES has $p, not in PIPELINES ($PIPELINES): no skerry-default point there"
done

# ---------------------------------------------------------------- dependencies
APT_UPDATED=0
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
need_cmd taskset util-linux
need_cmd redis-cli redis-tools
[[ $SKIP_FIO == 1 ]] || need_cmd fio fio
if [[ $SKIP_REDIS != 1 && -z $REDIS_BIN ]]; then
    need_cmd redis-server redis-server
    REDIS_BIN=$(command -v redis-server)
fi
[[ -x $PYTHON ]] || need_cmd python3 python3
"$PYTHON" -c 'import matplotlib' 2>/dev/null || need_cmd_pkg=python3-matplotlib
if [[ -n ${need_cmd_pkg:-} ]]; then
    [[ $EUID -eq 0 ]] || die "$PYTHON lacks matplotlib; install Debian package python3-matplotlib"
    log "installing python3-matplotlib (the report's charts)"
    apt-get update -qq >&2 || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-matplotlib >&2 || die "apt-get install python3-matplotlib failed"
fi
NCPU=$(nproc --all)
((SERVER_CPU < NCPU && CLIENT_CPU < NCPU)) || die "SERVER_CPU/CLIENT_CPU: this machine has $NCPU CPUs"
CLK_TCK=$(getconf CLK_TCK)
if [[ ! -x $SKERRY_BIN || ! -x $BENCH_BIN ]]; then
    command -v cargo >/dev/null 2>&1 || die "cargo not found and $SKERRY_BIN or $BENCH_BIN missing"
    log "building skerry and skerry-bench (cargo build --release)"
    (cd "$ROOT" && cargo build --release -p skerry -p skerry-bench >&2) || die "cargo build failed"
    [[ -x $SKERRY_BIN && -x $BENCH_BIN ]] || die "still missing after the build: $SKERRY_BIN or $BENCH_BIN"
fi
MEMCAP_BIN=${MEMCAP_BIN:-}
for n in $DATASETS; do
    ((n >= MEMCAP_FROM_N)) || continue
    if [[ -z $MEMCAP_BIN ]]; then
        for c in "$ROOT/../shared/tools/memcap" /work/shared/tools/memcap; do
            [[ -f $c ]] && { MEMCAP_BIN=$(cd "$(dirname "$c")" && pwd)/memcap; break; }
        done
    fi
    [[ -n $MEMCAP_BIN && -f $MEMCAP_BIN && $EUID -eq 0 ]] ||
        die "dataset $n needs memcap (../shared/tools/memcap, as root; set MEMCAP_BIN or MEMCAP_FROM_N)"
done

label_of() { # N -> 100k, 1M, 10M
    local n=$1
    if ((n % 1000000 == 0)); then echo "$((n / 1000000))M"
    elif ((n % 1000 == 0)); then echo "$((n / 1000))k"
    else echo "$n"; fi
}

# ---------------------------------------------------------------- output
[[ -n $OUT ]] || OUT=$(new_results_dir suite)
mkdir -p "$OUT/raw" "$OUT/logs" "$DATA_DIR"
OUT=$(cd "$OUT" && pwd)
case $(cd "$DATA_DIR" && pwd)/ in
    "$ROOT"/bench/results/*) die "DATA_DIR must not be under bench/results" ;;
esac
POINTS=$OUT/points.tsv
FACTS=$OUT/facts.tsv
printf 'dataset\tn\tserver\tstep\ttest\tconns\tpipeline\tpolicy\trepeat\tduration_s\trequests\tops_per_sec\tp50_us\tp99_us\tp999_us\tp9999_us\tmax_us\tserver_cpu_s\tops_per_cpu_s\tclient_cpu_s\tmisses\terrors\traw\n' >"$POINTS"
: >"$FACTS"
fact() { printf '%s\t%s\n' "$1" "$2" >>"$FACTS"; }
FAILURES=0
fail() { FAILURES=$((FAILURES + 1)); fact failure "$*"; log "CHECK FAILED: $*"; }

SERVERS=(skerry)
[[ $SKIP_REDIS == 1 ]] || SERVERS+=(redis)

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "command: $CMDLINE"
    echo "parameters: DATASETS='$DATASETS' DURATION=$DURATION REPEATS=$REPEATS CONNS_LIST='$CONNS_LIST' PIPELINES='$PIPELINES' PIPELINE_CONNS=$PIPELINE_CONNS FSYNC_CONNS=$FSYNC_CONNS FSYNC_POLICIES='$FSYNC_POLICIES' FSYNC_N=$FSYNC_N HASH_KEYS=$HASH_KEYS WARMUP=$WARMUP DATA_SIZE=$DATA_SIZE FILL_CONNS=$FILL_CONNS FILL_PIPELINE=$FILL_PIPELINE MEMCAP_FROM_N=$MEMCAP_FROM_N MEMCAP_MIB=$MEMCAP_MIB SERVER_CPU=$SERVER_CPU CLIENT_CPU=$CLIENT_CPU SKERRY_ARGS='$SKERRY_ARGS' REDIS_ARGS='$REDIS_ARGS' DEFAULT_CONFIG=$DEFAULT_CONFIG DEFAULT_PIPELINES='$DEFAULT_PIPELINES'"
    echo "host: $(uname -srm), $NCPU CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    echo "memory: $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    src=$(df -P "$DATA_DIR" | awk 'NR == 2 { print $1 }')
    echo "data dir: $DATA_DIR on $src ($(df -PT "$DATA_DIR" | awk 'NR == 2 { print $2 }'), $(df -Ph "$DATA_DIR" | awk 'NR == 2 { print $4 }') free)"
    echo "skerry: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$ROOT" && git diff --quiet HEAD -- crates src Cargo.toml Cargo.lock 2>/dev/null || echo ' (+local changes)') $SKERRY_BIN --threads 1 --appendonly yes $SKERRY_ARGS, pinned on CPU $SERVER_CPU"
    [[ $DEFAULT_CONFIG == 1 && $SKIP_PIPELINE != 1 ]] &&
        echo "skerry-default: $SKERRY_BIN --appendonly yes $SKERRY_ARGS (no --threads: one worker per CPU, $NCPU here), started unpinned, then every thread moved onto CPU $SERVER_CPU (taskset -p); first dataset, pipeline sweep at pipeline $DEFAULT_PIPELINES only"
    [[ $SKIP_REDIS == 1 ]] || echo "redis: $("$REDIS_BIN" --version) --save \"\" --appendonly no $REDIS_ARGS, pinned on CPU $SERVER_CPU"
    echo "client: $("$BENCH_BIN" --version), pinned on CPU $CLIENT_CPU"
    [[ $SKIP_FIO == 1 ]] || echo "fio: $(fio --version)"
    echo "memcap: datasets of $MEMCAP_FROM_N keys or more run Skerry inside ${MEMCAP_BIN:-memcap} $MEMCAP_MIB (RSS + page cache)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); CPU $SERVER_CPU busy $(printf %.0f "$(cpu_busy_pct "$SERVER_CPU" 1)")%, CPU $CLIENT_CPU busy $(printf %.0f "$(cpu_busy_pct "$CLIENT_CPU" 1)")% (1 s sample)"
} >"$OUT/env.txt"
log "results: $OUT"
sed 's/^/  /' "$OUT/env.txt" >&2

# ---------------------------------------------------------------- servers
declare -A PID PORT WRAP SDIR CMD
stop_server() { # NAME [SIGNAL]
    local s=$1 sig=${2:-TERM} p w
    p=${PID[$s]:-}
    w=${WRAP[$s]:-}
    [[ -n $p ]] || return 0
    if kill -0 "$p" 2>/dev/null; then
        kill "-$sig" "$p" 2>/dev/null || true
        for _ in {1..300}; do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
    fi
    wait "${w:-$p}" 2>/dev/null || true
    [[ -f ${SDIR[$s]}.log ]] && tail -n 40 "${SDIR[$s]}.log" >"$OUT/logs/$s.log.tail" 2>/dev/null
    unset "PID[$s]" "WRAP[$s]"
}
wipe_server() { # NAME: stop and delete its data
    stop_server "$1"
    [[ -n ${SDIR[$1]:-} ]] && rm -rf "${SDIR[$1]:?}" "${SDIR[$1]}.log"
    unset "SDIR[$1]" "PORT[$1]"
}
cleanup() {
    local s
    for s in "${!PID[@]}"; do stop_server "$s"; done
    if [[ ${KEEP_DATA:-0} != 1 ]]; then
        for s in "${!SDIR[@]}"; do rm -rf "${SDIR[$s]:?}" "${SDIR[$s]}.log"; done
        rm -f "$DATA_DIR/fio.dat"
        rmdir "$DATA_DIR" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

# start_server NAME KIND MEMCAP(0/1) [ARGS...]: data dir DATA_DIR/NAME (kept across restarts).
start_server() {
    local s=$1 kind=$2 capped=$3 port dir c
    local -a cmd
    shift 3
    port=${PORT[$s]:-$(free_port)}
    dir=$DATA_DIR/$s
    mkdir -p "$dir"
    SDIR[$s]=$dir
    case $kind in
        skerry)
            # shellcheck disable=SC2206  # SKERRY_ARGS is word-split on purpose
            cmd=(taskset -c "$SERVER_CPU" "$SKERRY_BIN" --port "$port" --bind 127.0.0.1 --dir "$dir" --threads 1
                --appendonly yes "$@" $SKERRY_ARGS)
            [[ $capped == 1 ]] && cmd=(bash "$MEMCAP_BIN" "$MEMCAP_MIB" "${cmd[@]}") ;;
        skerry-default)
            # Skerry as it starts by default: no --threads. Not under taskset: it sizes its
            # workers to the CPUs it may run on (available_parallelism, which follows the
            # affinity mask), so it is pinned after startup, by pin_threads.
            # shellcheck disable=SC2206
            cmd=("$SKERRY_BIN" --port "$port" --bind 127.0.0.1 --dir "$dir" --appendonly yes "$@" $SKERRY_ARGS)
            [[ $capped == 1 ]] && cmd=(bash "$MEMCAP_BIN" "$MEMCAP_MIB" "${cmd[@]}") ;;
        redis)
            # shellcheck disable=SC2206
            cmd=(taskset -c "$SERVER_CPU" "$REDIS_BIN" --port "$port" --bind 127.0.0.1 --save "" --daemonize no
                --dir "$dir" "$@" $REDIS_ARGS) ;;
    esac
    echo "# ${cmd[*]}" >>"$dir.log"
    "${cmd[@]}" >>"$dir.log" 2>&1 &
    WRAP[$s]=$!
    PID[$s]=$!
    PORT[$s]=$port
    CMD[$s]="${cmd[*]}"
    if [[ $capped == 1 ]]; then # memcap runs the server as a descendant
        PID[$s]=""
        for _ in {1..200}; do
            for c in $(pgrep -f -- "--dir $dir " 2>/dev/null); do
                [[ $(cat "/proc/$c/comm" 2>/dev/null) == skerry ]] && { PID[$s]=$c; break 2; }
            done
            kill -0 "${WRAP[$s]}" 2>/dev/null || break
            sleep 0.05
        done
        [[ -n ${PID[$s]} ]] || { tail -n 5 "$dir.log" >&2; die "$s: no server process found under memcap"; }
    fi

    await_server "$s" "${PID[$s]}" "$port" "$dir.log" "$START_TIMEOUT"
    if [[ $kind == skerry-default ]]; then
        # INFO visits every worker, so once it answers every worker runs (and has pinned
        # itself, one CPU each); then every thread goes onto SERVER_CPU, twice to catch a
        # thread that set its own affinity in between.
        for _ in {1..100}; do
            [[ $(worker_threads "$s") =~ ^[0-9]+$ ]] && break
            sleep 0.05
        done
        pin_threads "$s"
        sleep 0.2
        pin_threads "$s"
        [[ -z $(stray_threads "$s") ]] || die "$s: threads not pinned on CPU $SERVER_CPU: $(stray_threads "$s")"
    fi
    log "$s: pid ${PID[$s]}, port $port: ${CMD[$s]}$([[ $kind == skerry-default ]] && echo ", then every thread on CPU $SERVER_CPU")"
}
# pin_threads NAME: every thread of server NAME onto SERVER_CPU. io_uring's own workers
# (iou-wrk-*) may refuse (the kernel places them), as for the servers started under taskset.
pin_threads() {
    local t
    for t in "/proc/${PID[$1]}/task/"*; do
        taskset -p -c "$SERVER_CPU" "${t##*/}" >/dev/null 2>&1 || true
    done
}
# stray_threads NAME: "TID(COMM):CPUS" of the threads of NAME (iou-* aside) that may run on
# some CPU other than SERVER_CPU; nothing when all are pinned.
stray_threads() {
    local t comm cpus
    for t in "/proc/${PID[$1]}/task/"*; do
        comm=$(cat "$t/comm" 2>/dev/null) || continue
        [[ $comm == iou-* ]] && continue
        cpus=$(awk '/^Cpus_allowed_list:/ { print $2 }' "$t/status" 2>/dev/null) || continue
        [[ -z $cpus || $cpus == "$SERVER_CPU" ]] || printf '%s(%s):%s ' "${t##*/}" "$comm" "$cpus"
    done
}
# worker_threads NAME: Skerry's worker count (INFO server).
worker_threads() { rcli "$1" info server | tr -d '\r' | awk -F: '$1 == "worker_threads" { print $2 }'; }
rcli() { local s=$1; shift; redis-cli -h 127.0.0.1 -p "${PORT[$s]}" "$@" 2>&1; }

# check_keys NAME N LABEL: DBSIZE == N and STRLEN == DATA_SIZE for sample keys.
check_keys() {
    local s=$1 n=$2 label=$3 dbsize k len bad="" keys
    dbsize=$(rcli "$s" dbsize)
    [[ $dbsize == "$n" ]] || bad="DBSIZE $dbsize, expected $n"
    keys="1 $(((n + 1) / 2)) $n $(awk -v n="$n" -v s="$RANDOM" 'BEGIN { srand(s); for (i = 0; i < 5; i++) printf "%d ", 1 + int(rand() * n) }')"
    for k in $keys; do
        len=$(rcli "$s" strlen "$k")
        [[ $len == "$DATA_SIZE" ]] || bad="${bad:+$bad; }STRLEN $k = $len"
    done
    if [[ -z $bad ]]; then
        fact "$LABEL.$s.check_$label" "PASS"
    else
        fact "$LABEL.$s.check_$label" "FAIL: $bad" # the report lists failed checks
        FAILURES=$((FAILURES + 1))
        log "CHECK FAILED: $LABEL $s $label: $bad"
    fi
    log "$LABEL $s $label: DBSIZE $dbsize, sample STRLENs ${bad:-all $DATA_SIZE}"
}

# run_point SERVER STEP TEST CONNS PIPELINE POLICY REPEAT N [BENCH ARGS...]: one skerry-bench
# run; one row of points.tsv.
run_point() {
    local s=$1 step=$2 test=$3 conns=$4 pipe=$5 policy=$6 rep=$7 n=$8 pid c0 c1 raw rel rc=0 cpu ops opc
    shift 8
    pid=${PID[$s]}
    rel=raw/$LABEL-$s-$step-$test-c$conns-p$pipe${policy:+-$policy}-r$rep.json
    raw=$OUT/$rel
    kill -0 "$pid" 2>/dev/null || { tail -n 20 "${SDIR[$s]}.log" >&2; die "$s (pid $pid) died"; }
    c0=$(cpu_ticks "$pid")
    taskset -c "$CLIENT_CPU" "$BENCH_BIN" --host 127.0.0.1 -p "${PORT[$s]}" -q -n "$n" -d "$DATA_SIZE" \
        -t "${BENCH_THREADS:-1}" -c "$((conns / ${BENCH_THREADS:-1}))" -P "$pipe" --seed "$rep" --json "$raw" "$@" \
        >"$raw.txt" 2>&1 || rc=$?
    c1=$(cpu_ticks "$pid" || echo "$c0")
    if [[ ! -s $raw ]]; then
        cat "$raw.txt" >&2
        fail "$LABEL $s $step $test c$conns p$pipe $policy r$rep: skerry-bench failed (exit $rc)"
        return 0
    fi
    if ((rc == 0)); then rm -f "$raw.txt"; else mv "$raw.txt" "$raw.stderr"; fi
    ((rc == 0)) || fail "$LABEL $s $step $test c$conns p$pipe r$rep: skerry-bench exit $rc (3: misses, 4: errors)"
    cpu=$(calc "($c1 - $c0) / $CLK_TCK")
    ops=$(json_num "$raw" ops)
    opc=$(calc "($cpu > 0) ? $ops / $cpu : \"nan\"")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$LABEL" "$n" "$s" "$step" "$test" "$conns" "$pipe" "${policy:--}" "$rep" "$(json_num "$raw" duration_s)" "$ops" \
        "$(json_num "$raw" ops_per_sec)" "$(json_num "$raw" p50)" "$(json_num "$raw" p99)" "$(json_num "$raw" p99_9)" \
        "$(json_num "$raw" p99_99)" "$(json_num "$raw" max)" "$cpu" "$opc" "$(json_num "$raw" client_cpu_s)" \
        "$(json_num "$raw" misses)" "$(json_num "$raw" errors)" "$rel" >>"$POINTS"
    log "$(printf '%-4s %-6s %-10s %-4s c%-4s p%-3s %-8s r%d: %9.0f ops/s  server CPU %6.2f s  %9.0f ops/CPU-s  p99.9 %s us  misses %s errors %s' \
        "$LABEL" "$s" "$step" "$test" "$conns" "$pipe" "${policy:--}" "$rep" "$(json_num "$raw" ops_per_sec)" "$cpu" \
        "${opc/nan/0}" "$(json_num "$raw" p99_9)" "$(json_num "$raw" misses)" "$(json_num "$raw" errors)")"
}

# point_servers STEP PIPELINE: the servers measured at a point, in order: SERVERS, and
# skerry-default right after skerry when it is up and the point is one of its own.
point_servers() {
    local s
    for s in "${SERVERS[@]}"; do
        echo "$s"
        [[ $s == skerry && -n ${PID[skerry-default]:-} && $1 == pipeline && " $DEFAULT_PIPELINES " == *" $2 "* ]] &&
            echo skerry-default
    done
}

# sweep STEP TEST CONNS_LIST PIPELINES: every (connections, pipeline) point of TEST (get or
# set) over keys 1..N, REPEATS times, the servers alternating point by point; every GET
# must hit.
sweep() {
    local step=$1 test=$2 conns_list=$3 pipes=$4 c p r s ratio=1:0
    local -a extra=()
    [[ $test == get ]] && { ratio=0:1; extra=(--require-no-misses); }
    for c in $conns_list; do
        for p in $pipes; do
            for ((r = 1; r <= REPEATS; r++)); do
                for s in $(point_servers "$step" "$p"); do
                    run_point "$s" "$step" "$test" "$c" "$p" "" "$r" "$N" --ratio "$ratio" \
                        --test-time "$DURATION" "${extra[@]}"
                done
            done
        done
    done
}

# prepare_server NAME: start server NAME for dataset LABEL (keys 1..N), fill it with exactly N
# SETs, facts (RSS, fill rate, workers), key checks; Skerry's cold restart.
prepare_server() {
    local s=$1 rss0 rss1 c0 c1 t0 t1 t2 before
    case $s in
        skerry) start_server skerry skerry "$capped" --data-size "${gib}gb" ;;
        skerry-default) start_server skerry-default skerry-default "$capped" --data-size "${gib}gb" ;;
        redis) start_server redis redis 0 ;;
    esac
    [[ $s == skerry* ]] && fact "$LABEL.$s.worker_threads" "$(worker_threads "$s")"
    rss0=$(rss_bytes "${PID[$s]}")
    fact "$LABEL.$s.rss_empty_bytes" "$rss0"
    c0=$(cpu_ticks "${PID[$s]}")
    t0=$(now)
    taskset -c "$CLIENT_CPU" "$BENCH_BIN" --host 127.0.0.1 -p "${PORT[$s]}" -q -n "$N" -d "$DATA_SIZE" \
        -c "$FILL_CONNS" -P "$FILL_PIPELINE" --key-pattern sequential --ratio 1:0 --requests "$N" \
        --require-no-errors --json "$OUT/raw/$LABEL-$s-fill.json" >/dev/null 2>&1 || fail "$LABEL $s: fill failed"
    t1=$(now)
    c1=$(cpu_ticks "${PID[$s]}")
    fact "$LABEL.$s.fill_ops_per_sec" "$(calc "$N / ($t1 - $t0)")"
    fact "$LABEL.$s.fill_cpu_s" "$(calc "($c1 - $c0) / $CLK_TCK")"
    sleep 2
    rss1=$(rss_bytes "${PID[$s]}")
    fact "$LABEL.$s.rss_filled_bytes" "$rss1"
    fact "$LABEL.$s.bytes_per_key" "$(calc "($rss1 - $rss0) / $N")"
    check_keys "$s" "$N" after_fill
    if [[ $s == skerry ]]; then
        # Cold restart: kill -9 right after the fill, same command, same data. It is
        # ready when DBSIZE is back to what it was before the kill (N after a good fill).
        before=$(rcli skerry dbsize)
        stop_server skerry KILL
        t0=$(now)
        start_server skerry skerry "$capped" --data-size "${gib}gb"
        t1=$(now)
        until [[ $(rcli skerry dbsize) == "$before" ]]; do
            sleep 0.01
            (($(calc "($(now) - $t0 > $START_TIMEOUT) ? 1 : 0"))) && { fail "$LABEL skerry: DBSIZE not back to $before after the restart"; break; }
        done
        t2=$(now)
        fact "$LABEL.skerry.restart_ping_s" "$(calc "$t1 - $t0")"
        fact "$LABEL.skerry.restart_dbsize_s" "$(calc "$t2 - $t0")"
        fact "$LABEL.skerry.rss_after_restart_bytes" "$(rss_bytes "${PID[skerry]}")"
        log "$LABEL skerry cold restart: PING after $(calc "$t1 - $t0") s, DBSIZE == $before after $(calc "$t2 - $t0") s"
        check_keys skerry "$N" after_restart
    fi
}

# ---------------------------------------------------------------- per dataset
FIRST=1
for N in $DATASETS; do
    LABEL=$(label_of "$N")
    capped=0
    ((N >= MEMCAP_FROM_N)) && capped=1
    log "==== dataset $LABEL: keys 1..$N, $DATA_SIZE-byte values$( ((capped)) && echo ", Skerry inside memcap $MEMCAP_MIB MiB")"
    if [[ $SKIP_FIO != 1 ]]; then
        mib=$((N * DATA_SIZE / 1048576 > 1024 ? N * DATA_SIZE / 1048576 : 1024))
        taskset -c "$SERVER_CPU" fio --name=randread --filename="$DATA_DIR/fio.dat" --size="${mib}m" --rw=randread \
            --bs=4k --direct=1 --ioengine=io_uring --iodepth=32 --numjobs=1 --time_based=1 --runtime="$FIO_RUNTIME" \
            --ramp_time=1 --norandommap=1 --randrepeat=0 --output-format=json --output="$OUT/raw/$LABEL-fio.json" \
            >/dev/null 2>&1 || die "fio failed"
        rm -f "$DATA_DIR/fio.dat"
        iops=$(fio_iops "$OUT/raw/$LABEL-fio.json")
        fact "$LABEL.fio_iops" "$iops"
        fact "$LABEL.fio_file_mib" "$mib"
        log "$LABEL fio: $iops IOPS (4 KiB random read, O_DIRECT, iodepth 32, $mib MiB file)"
    fi
    # Skerry's data file: twice the live data plus 4 GiB, room for defrag to keep up with
    # the SET points.
    gib=$(((N * (DATA_SIZE + 64) * 2 >> 30) + 4))
    for s in "${SERVERS[@]}"; do prepare_server "$s"; done
    for s in "${SERVERS[@]}"; do
        run_point "$s" warmup get 128 1 "" 1 "$N" --ratio 0:1 --test-time "$WARMUP"
    done
    for test in get set; do sweep conns "$test" "$CONNS_LIST" 1; done
    if [[ $FIRST == 1 && $SKIP_PIPELINE != 1 ]]; then
        # The default configuration joins for the pipeline sweep only (its points: those at
        # DEFAULT_PIPELINES), so the connection sweep runs exactly as without it.
        if [[ $DEFAULT_CONFIG == 1 ]]; then
            prepare_server skerry-default
            run_point skerry-default warmup get 128 1 "" 1 "$N" --ratio 0:1 --test-time "$WARMUP"
        fi
        for test in get set; do sweep pipeline "$test" "$PIPELINE_CONNS" "$PIPELINES"; done
    fi
    for s in "${SERVERS[@]}" ${PID[skerry-default]:+skerry-default}; do
        check_keys "$s" "$N" after_points
        if [[ $s == skerry-default ]]; then
            stray=$(stray_threads "$s")
            if [[ -z $stray ]]; then
                fact "$LABEL.$s.check_pinned" "PASS"
            else
                fact "$LABEL.$s.check_pinned" "FAIL: not only on CPU $SERVER_CPU: $stray"
                FAILURES=$((FAILURES + 1))
                log "CHECK FAILED: $LABEL $s: threads not only on CPU $SERVER_CPU: $stray"
            fi
        fi
        wipe_server "$s"
    done
    FIRST=0
done

# ---------------------------------------------------------------- durability
if [[ $SKIP_DURABILITY != 1 ]]; then
    LABEL=fsync
    log "==== durability: uniform SET over keys 1..$FSYNC_N, $FSYNC_CONNS connections, fresh servers"
    for policy in $FSYNC_POLICIES; do
        for ((r = 1; r <= REPEATS; r++)); do
            for s in "${SERVERS[@]}"; do
                case $s in
                    skerry) start_server skerry skerry 0 --data-size "$((((FSYNC_N * (DATA_SIZE + 64)) >> 30) + 8))gb" \
                        --appendfsync "$policy" ;;
                    redis) start_server redis redis 0 --appendonly yes --appendfsync "$policy" ;;
                esac
                run_point "$s" durability set "$FSYNC_CONNS" 1 "$policy" "$r" "$FSYNC_N" --ratio 1:0 \
                    --test-time "$DURATION" --require-no-errors
                wipe_server "$s"
            done
        done
    done
fi

# ---------------------------------------------------------------- HSET/HDEL
if [[ $SKIP_HASH != 1 ]]; then
    LABEL="hash"
    log "==== HSET/HDEL: $HASH_KEYS hash keys of one field, 4 threads x 50 connections, sequential, 32-byte values"
    for ((r = 1; r <= REPEATS; r++)); do
        for s in "${SERVERS[@]}"; do
            case $s in
                skerry) start_server skerry skerry 0 --data-size 8gb ;;
                redis) start_server redis redis 0 ;;
            esac
            for cmd in HSET HDEL; do
                tmpl="HSET __key__ f __data__"
                [[ $cmd == HDEL ]] && tmpl="HDEL __key__ f"
                DATA_SIZE=32 BENCH_THREADS=4 run_point "$s" hash "${cmd,,}" 200 1 "" "$r" "$HASH_KEYS" \
                    --key-pattern sequential --command "$tmpl" --requests "$HASH_KEYS" --require-no-errors
                want=$([[ $cmd == HSET ]] && echo "$HASH_KEYS" || echo 0)
                got=$(rcli "$s" dbsize)
                [[ $got == "$want" ]] || fail "hash $s r$r: DBSIZE after $cmd is $got, expected $want"
            done
            wipe_server "$s"
        done
    done
fi

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"
log "points: $POINTS ($(($(wc -l <"$POINTS") - 1)) runs), $FAILURES failed check(s)"
"$PYTHON" "$ROOT/bench/report.py" "$OUT" || fail "bench/report.py failed"
if [[ $PUBLISH == 1 ]]; then
    "$PYTHON" "$ROOT/bench/report.py" "$OUT" --out "$ROOT/docs/benchmarks.md" --charts "$ROOT/docs/benchmarks" ||
        fail "bench/report.py --out docs/benchmarks.md failed"
    log "published: docs/benchmarks.md"
fi
log "report: $OUT/report.md"
((FAILURES == 0))
