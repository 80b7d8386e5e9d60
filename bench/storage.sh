#!/usr/bin/env bash
# shellcheck disable=SC2016  # literal $ and backticks in single quotes are intended
# bench/storage.sh - storage benchmark: Skerry (values on the SSD) vs Debian's redis-server
# (values in RAM) and the device itself (fio), in one run.
#
# Decimal keys 1..N, DATA_SIZE-byte values. Servers run one after the other, pinned on
# SERVER_CPU (Skerry with --threads 1); the load generator (skerry-bench) runs pinned on
# CLIENT_CPU. Steps:
#   1. fio ceiling: 4 KiB random reads, O_DIRECT, iodepth 32, on a file in the data
#      directory's file system. With FIO_PAIRED=1 (default) fio runs again right before
#      each Skerry GET repeat, and the GET target is the median of those paired ratios
#      (the device's rate drifts by 1.5x within minutes on a shared VM).
#   2. For Skerry, then redis-server (--save "" --appendonly no): fill with exactly N SETs
#      (sequential pattern), check DBSIZE == N and some STRLENs, RSS per key, GET warm-up,
#      then REPEATS x (uniform GET for DURATION, zero misses required; uniform SET for
#      DURATION), then check DBSIZE and STRLENs again. Server CPU seconds (utime+stime from
#      /proc/PID/stat) for every point: ops per server CPU-second.
#   3. appendfsync always with FSYNC_CONNS connections: Skerry --appendfsync always vs
#      redis-server --appendonly yes --appendfsync always, uniform SET, REPEATS x DURATION.
#   4. Cold restart (Skerry, right after the fill): kill -9, start again, seconds until PING
#      answers and until DBSIZE == N.
#   5. summary.md (medians, ratios), runs.tsv, facts.tsv, env.txt, raw/ (JSON per run).
# See bench/README.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=bench/storage.sh
CMDLINE="$PROG $*"

# ---------------------------------------------------------------- parameters
HELP=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) QUICK=1; shift ;;
        --n) N=${2:?}; shift 2 ;;
        --duration) DURATION=${2:?}; shift 2 ;;
        --repeats) REPEATS=${2:?}; shift 2 ;;
        --out) OUT=${2:?}; shift 2 ;;
        -h | --help) HELP=1; shift ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

QUICK=${QUICK:-0}
if [[ $QUICK == 1 ]]; then
    N=${N:-20000}
    DURATION=${DURATION:-2}
    REPEATS=${REPEATS:-1}
    FIO_RUNTIME=${FIO_RUNTIME:-3}
fi
N=${N:-1000000}                    # keys 1..N
DURATION=${DURATION:-30}           # seconds per measured point
REPEATS=${REPEATS:-3}              # repeats per point (median reported)
CONNS=${CONNS:-128}                # connections for GET/SET points (keeps >= 32 reads in flight)
FSYNC_CONNS=${FSYNC_CONNS:-50}     # connections for the appendfsync always step
DATA_SIZE=${DATA_SIZE:-1024}       # value size
FILL_PIPELINE=${FILL_PIPELINE:-16} # pipeline depth of the (unmeasured) fill
PIPELINE=${PIPELINE:-1}            # pipeline depth of the measured points
WARMUP=${WARMUP:-$((DURATION < 10 ? DURATION : 10))} # seconds of GET warm-up before the points
BENCH_THREADS=${BENCH_THREADS:-1}  # skerry-bench threads (all on CLIENT_CPU)
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
FIO_RUNTIME=${FIO_RUNTIME:-15}
FIO_SIZE_MIB=${FIO_SIZE_MIB:-}     # default: max(1024, N * DATA_SIZE / 1 MiB)
SET_RATE_GUESS=${SET_RATE_GUESS:-150000} # SET/s assumed when sizing Skerry's data file
SKERRY_DATA_SIZE=${SKERRY_DATA_SIZE:-}   # --data-size; default: room for the fill and all SET points
MEMCAP_MIB=${MEMCAP_MIB:-}         # run Skerry inside memcap MIB (../shared/tools/memcap)
MEMCAP_BIN=${MEMCAP_BIN:-}
SKIP_FIO=${SKIP_FIO:-0}
FIO_PAIRED=${FIO_PAIRED:-1}        # 1: fio again right before each Skerry GET repeat (paired ratios)
SKIP_SKERRY=${SKIP_SKERRY:-0}
SKIP_REDIS=${SKIP_REDIS:-0}
SKIP_FSYNC=${SKIP_FSYNC:-0}
SKIP_RESTART=${SKIP_RESTART:-0}
SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
SKERRY_ARGS=${SKERRY_ARGS:-}
BENCH_BIN=${BENCH_BIN:-$ROOT/target/release/skerry-bench}
REDIS_BIN=${REDIS_BIN:-}
REDIS_ARGS=${REDIS_ARGS:-}
DATA_DIR=${DATA_DIR:-$ROOT/bench/tmp/storage} # server data dirs and the fio file (removed at exit)
OUT=${OUT:-}
START_TIMEOUT=${START_TIMEOUT:-120}
RESTART_TIMEOUT=${RESTART_TIMEOUT:-1800}
RESTART_SETTLE=${RESTART_SETTLE:-2} # seconds between the end of the fill and kill -9

usage() {
    cat <<EOF
Usage: $PROG [--quick] [--n N] [--duration S] [--repeats R] [--out DIR]

Environment (defaults): N=1000000 keys, DURATION=30 s per point, REPEATS=3, CONNS=128,
FSYNC_CONNS=50, DATA_SIZE=1024, FILL_PIPELINE=16, PIPELINE=1, WARMUP=min(DURATION,10),
BENCH_THREADS=1, SERVER_CPU=0, CLIENT_CPU=1, FIO_RUNTIME=15, FIO_SIZE_MIB=max(1024, N*DATA_SIZE),
SKERRY_DATA_SIZE (Skerry --data-size; default sized for the fill and all SET points with
SET_RATE_GUESS=150000 SET/s), MEMCAP_MIB (run Skerry inside ../shared/tools/memcap MIB),
SKIP_FIO, SKIP_SKERRY, SKIP_REDIS, SKIP_FSYNC, SKIP_RESTART (=1 to skip a step), FIO_PAIRED=1
(0: fio only once, at the start),
SKERRY_BIN, SKERRY_ARGS, BENCH_BIN, REDIS_BIN, REDIS_ARGS, DATA_DIR=bench/tmp/storage
(data dirs and fio file, removed at exit unless KEEP_DATA=1), OUT=bench/results/<date>-storage.
--quick: N=20000 DURATION=2 REPEATS=1 FIO_RUNTIME=3 (smoke test).
EOF
}
[[ $HELP == 1 ]] && { usage; exit 0; }

log() { printf '[storage] %s\n' "$*" >&2; }
die() { printf '[storage] ERROR: %s\n' "$*" >&2; exit 2; }

for v in N DURATION REPEATS CONNS FSYNC_CONNS DATA_SIZE FILL_PIPELINE PIPELINE WARMUP BENCH_THREADS \
    SERVER_CPU CLIENT_CPU FIO_RUNTIME FIO_PAIRED SET_RATE_GUESS START_TIMEOUT RESTART_TIMEOUT RESTART_SETTLE; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer (got '${!v}')"
done
((N >= 1 && REPEATS >= 1 && DURATION >= 1 && CONNS >= 1 && FSYNC_CONNS >= 1)) || die "N, REPEATS, DURATION, CONNS, FSYNC_CONNS must be >= 1"
[[ -z $FIO_SIZE_MIB || $FIO_SIZE_MIB =~ ^[0-9]+$ ]] || die "FIO_SIZE_MIB must be an integer"
[[ -z $MEMCAP_MIB || $MEMCAP_MIB =~ ^[0-9]+$ ]] || die "MEMCAP_MIB must be an integer"

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
NCPU=$(nproc --all)
((SERVER_CPU < NCPU && CLIENT_CPU < NCPU)) || die "SERVER_CPU=$SERVER_CPU / CLIENT_CPU=$CLIENT_CPU: this machine has $NCPU CPUs"
[[ $SERVER_CPU != "$CLIENT_CPU" ]] || log "WARNING: server and client share CPU $SERVER_CPU"
CLK_TCK=$(getconf CLK_TCK)

build_if_missing() { # BIN DEFAULT CARGO_ARGS...
    local bin=$1 default=$2
    shift 2
    [[ -x $bin ]] && return 0
    [[ $bin == "$default" ]] || die "not found: $bin"
    command -v cargo >/dev/null 2>&1 || die "cargo not found and $bin missing"
    log "building $(basename "$bin") (cargo build --release $*)"
    (cd "$ROOT" && cargo build --release "$@" >&2) || die "cargo build --release $* failed"
}
build_if_missing "$BENCH_BIN" "$ROOT/target/release/skerry-bench" -p skerry-bench
[[ $SKIP_SKERRY == 1 ]] || build_if_missing "$SKERRY_BIN" "$ROOT/target/release/skerry" --bin skerry

if [[ -n $MEMCAP_MIB ]]; then
    if [[ -z $MEMCAP_BIN ]]; then
        for c in "$ROOT/../shared/tools/memcap" /work/shared/tools/memcap; do
            [[ -f $c ]] && { MEMCAP_BIN=$(cd "$(dirname "$c")" && pwd)/memcap; break; }
        done
    fi
    [[ -n $MEMCAP_BIN && -f $MEMCAP_BIN ]] || die "MEMCAP_MIB set but memcap not found (../shared/tools/memcap; set MEMCAP_BIN)"
    [[ $EUID -eq 0 ]] || die "memcap needs root"
fi

human_bytes() { awk -v b="$1" 'BEGIN { split("B KiB MiB GiB TiB", u); i = 1; while (b >= 1024 && i < 5) { b /= 1024; i++ } printf "%.1f %s", b, u[i] }'; }

declare -A PID PORT WRAP DIR
FAILURES=()
fail() { FAILURES+=("$*"); log "CHECK FAILED: $*"; }

stop_server() { # NAME [SIGNAL]
    local s=$1 sig=${2:-TERM} p w
    p=${PID[$s]:-}
    w=${WRAP[$s]:-}
    [[ -n $p ]] || return 0
    if kill -0 "$p" 2>/dev/null; then
        kill "-$sig" "$p" 2>/dev/null || true
        for _ in {1..100}; do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
    fi
    wait "${w:-$p}" 2>/dev/null || true
    unset "PID[$s]" "WRAP[$s]"
}
cleanup() {
    local s
    for s in "${!PID[@]}"; do stop_server "$s"; done
    if [[ -n ${OUT:-} && -d ${OUT:-/nonexistent} ]]; then
        # Keep only the tail of each server log in the results.
        for s in "${!DIR[@]}"; do
            [[ -f ${DIR[$s]}.log ]] && tail -n 40 "${DIR[$s]}.log" >"$OUT/logs/$s.log.tail" 2>/dev/null
        done
    fi
    if [[ ${KEEP_DATA:-0} != 1 && -n ${DATA_DIR:-} ]]; then
        for s in "${!DIR[@]}"; do rm -rf "${DIR[$s]:?}" "${DIR[$s]}.log"; done
        rm -f "$DATA_DIR/fio.dat"
        rmdir "$DATA_DIR" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

# ---------------------------------------------------------------- output and data dirs
[[ -n $OUT ]] || OUT=$(new_results_dir storage)
mkdir -p "$OUT/raw" "$OUT/logs" "$DATA_DIR"
case $(cd "$DATA_DIR" && pwd)/ in
    "$ROOT"/bench/results/*) die "DATA_DIR must not be under bench/results" ;;
esac
RUNS=$OUT/runs.tsv
FACTS=$OUT/facts.tsv
printf 'step\tserver\ttest\trep\tconns\tops\tduration_s\tops_per_sec\tserver_cpu_s\tops_per_cpu_s\tserver_util\tclient_cpu_s\tclient_util\tp50_us\tp99_us\tp99_9_us\tmax_us\tmisses\terrors\trc\n' >"$RUNS"
printf 'key\tvalue\n' >"$FACTS"
fact() { printf '%s\t%s\n' "$1" "$2" >>"$FACTS"; }

# Skerry's data file: room for the fill and every SET point (nothing is reclaimed yet).
avail_kib=$(df -Pk "$DATA_DIR" | awk 'NR == 2 { print $4 }')
if [[ -z $SKERRY_DATA_SIZE ]]; then
    need=$(((N + REPEATS * DURATION * SET_RATE_GUESS + WARMUP) * (DATA_SIZE + 128)))
    gib=$(((need + (1 << 30) - 1) >> 30))
    cap=$((avail_kib * 6 / 10 / 1024 / 1024)) # at most 60% of the free space
    if ((gib > cap)); then
        log "WARNING: Skerry's data file would need ${gib} GiB; only ${cap} GiB (60% of free space) used: SETs may fail when it is full"
        gib=$cap
    fi
    ((gib >= 1)) || gib=1
    SKERRY_DATA_SIZE=${gib}gb
fi
FSYNC_DATA_SIZE=${FSYNC_DATA_SIZE:-$SKERRY_DATA_SIZE}
[[ -n $FIO_SIZE_MIB ]] || FIO_SIZE_MIB=$((N * DATA_SIZE / 1048576 > 1024 ? N * DATA_SIZE / 1048576 : 1024))

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "command: $CMDLINE"
    echo "environment: N=$N DURATION=$DURATION REPEATS=$REPEATS CONNS=$CONNS FSYNC_CONNS=$FSYNC_CONNS DATA_SIZE=$DATA_SIZE FILL_PIPELINE=$FILL_PIPELINE PIPELINE=$PIPELINE WARMUP=$WARMUP BENCH_THREADS=$BENCH_THREADS SERVER_CPU=$SERVER_CPU CLIENT_CPU=$CLIENT_CPU FIO_RUNTIME=$FIO_RUNTIME FIO_SIZE_MIB=$FIO_SIZE_MIB SKERRY_DATA_SIZE=$SKERRY_DATA_SIZE MEMCAP_MIB=${MEMCAP_MIB:-none} SKIP_FIO=$SKIP_FIO FIO_PAIRED=$FIO_PAIRED SKIP_SKERRY=$SKIP_SKERRY SKIP_REDIS=$SKIP_REDIS SKIP_FSYNC=$SKIP_FSYNC SKIP_RESTART=$SKIP_RESTART SKERRY_ARGS='$SKERRY_ARGS' REDIS_ARGS='$REDIS_ARGS'"
    echo "host: $(uname -srm), $NCPU CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    echo "memory: $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    src=$(df -P "$DATA_DIR" | awk 'NR == 2 { print $1 }')
    echo "data dir: $DATA_DIR on $src ($(df -PT "$DATA_DIR" | awk 'NR == 2 { print $2 }'), $(human_bytes $((avail_kib * 1024))) free)"
    dev=$(lsblk -no PKNAME "$src" 2>/dev/null | head -n 1)
    [[ -n $dev ]] || dev=$(basename "$src")
    [[ -e /sys/block/$dev ]] && echo "device: /dev/$dev $(lsblk -dno MODEL,SIZE "/dev/$dev" 2>/dev/null | xargs), rotational=$(cat "/sys/block/$dev/queue/rotational" 2>/dev/null), scheduler=$(cat "/sys/block/$dev/queue/scheduler" 2>/dev/null)"
    echo "skerry: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$ROOT" && git diff --quiet HEAD -- crates src Cargo.toml Cargo.lock 2>/dev/null || echo ' (+local changes)') $SKERRY_BIN --threads 1 --data-size $SKERRY_DATA_SIZE --appendonly yes $SKERRY_ARGS"
    [[ -n $REDIS_BIN ]] && echo "redis: $("$REDIS_BIN" --version)"
    echo "client: $("$BENCH_BIN" --version) ($BENCH_BIN), pinned on CPU $CLIENT_CPU"
    [[ $SKIP_FIO == 1 ]] || echo "fio: $(fio --version)"
    [[ -n $MEMCAP_MIB ]] && echo "memcap: Skerry runs inside $MEMCAP_BIN $MEMCAP_MIB"
    echo "governor: $(cat /sys/devices/system/cpu/cpu"$SERVER_CPU"/cpufreq/scaling_governor 2>/dev/null || echo n/a)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); CPU $SERVER_CPU busy $(printf %.0f "$(cpu_busy_pct "$SERVER_CPU" 1)")%, CPU $CLIENT_CPU busy $(printf %.0f "$(cpu_busy_pct "$CLIENT_CPU" 1)")% (1 s sample before starting)"
} >"$OUT/env.txt"
log "results: $OUT"
sed 's/^/  /' "$OUT/env.txt" >&2
busy=$(sed -n 's/^load before: .*busy \([0-9]*\)%, CPU [0-9]* busy \([0-9]*\)%.*/\1 \2/p' "$OUT/env.txt")
read -r b0 b1 <<<"$busy"
BUSY_WARNING=""
if ((${b0:-0} > 10 || ${b1:-0} > 10)); then
    BUSY_WARNING="WARNING: CPUs $SERVER_CPU/$CLIENT_CPU were already ${b0}%/${b1}% busy with other work before the run: ops/s are noisy (ops/CPU-s less so)."
    log "$BUSY_WARNING"
fi

# ---------------------------------------------------------------- servers
# start_server NAME KIND [EXTRA ARGS...]: KIND is skerry or redis; NAME names the instance
# (its data dir is DATA_DIR/NAME, kept across restarts of the same NAME).
start_server() {
    local s=$1 kind=$2 port dir cmd t0 p c
    shift 2
    port=${PORT[$s]:-$(free_port)}
    dir=$DATA_DIR/$s
    mkdir -p "$dir"
    DIR[$s]=$dir
    case $kind in
        skerry)
            # shellcheck disable=SC2206  # SKERRY_ARGS is word-split on purpose
            cmd=(taskset -c "$SERVER_CPU" "$SKERRY_BIN" --port "$port" --bind 127.0.0.1 --dir "$dir" --threads 1
                --appendonly yes "$@" $SKERRY_ARGS)
            [[ -n $MEMCAP_MIB ]] && cmd=(bash "$MEMCAP_BIN" "$MEMCAP_MIB" "${cmd[@]}") ;;
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
    if [[ -n $MEMCAP_MIB && $kind == skerry ]]; then
        # memcap runs the server as its child (after exec through bash and taskset).
        PID[$s]=""
        for _ in {1..200}; do
            for c in $(cat "/proc/${WRAP[$s]}/task/${WRAP[$s]}/children" 2>/dev/null) $(pgrep -P "${WRAP[$s]}" 2>/dev/null); do
                [[ $(cat "/proc/$c/comm" 2>/dev/null) == skerry ]] && { PID[$s]=$c; break 2; }
            done
            kill -0 "${WRAP[$s]}" 2>/dev/null || break
            sleep 0.05
        done
        [[ -n ${PID[$s]} ]] || { tail -n 5 "$dir.log" >&2; die "$s: could not find the server process under memcap"; }
    fi
}
# wait_ping NAME TIMEOUT: waits until the server answers PING.
wait_ping() {
    local s=$1 timeout=$2
    await_server "$s" "${PID[$s]}" "${PORT[$s]}" "${DIR[$s]}.log" "$timeout"
}
declare -A CMD
launch() { # NAME KIND [ARGS...]
    start_server "$@"
    wait_ping "$1" "$START_TIMEOUT"
    log "$1: pid ${PID[$1]}, port ${PORT[$1]}, CPU $SERVER_CPU: ${CMD[$1]}"
}
check_alive() {
    kill -0 "${PID[$1]}" 2>/dev/null || { tail -n 20 "${DIR[$1]}.log" >&2; die "$1 (pid ${PID[$1]}) died; log: ${DIR[$1]}.log"; }
}
rcli() { local s=$1; shift; redis-cli -h 127.0.0.1 -p "${PORT[$s]}" "$@" 2>&1; }

# check_keys NAME LABEL: DBSIZE == N and STRLEN == DATA_SIZE for a few keys.
check_keys() {
    local s=$1 label=$2 dbsize k len bad=0 keys
    dbsize=$(rcli "$s" dbsize)
    fact "$s.dbsize_$label" "$dbsize"
    [[ $dbsize == "$N" ]] || { fail "$s $label: DBSIZE $dbsize, expected $N"; bad=1; }
    keys="1 $(((N + 1) / 2)) $N $(awk -v n="$N" -v s="$RANDOM" 'BEGIN { srand(s); for (i = 0; i < 5; i++) printf "%d ", 1 + int(rand() * n) }')"
    for k in $keys; do
        len=$(rcli "$s" strlen "$k")
        [[ $len == "$DATA_SIZE" ]] || { fail "$s $label: STRLEN $k = $len, expected $DATA_SIZE"; bad=1; }
    done
    fact "$s.strlen_$label" "$([[ $bad == 0 ]] && echo ok || echo FAILED) (keys $keys)"
    log "$s $label: DBSIZE $dbsize, STRLEN of keys $keys: $([[ $bad == 0 ]] && echo "all $DATA_SIZE" || echo MISMATCH)"
}

# run_point NAME STEP TEST REP CONNS BENCH_ARGS...: one skerry-bench run on CLIENT_CPU;
# appends a row to runs.tsv. Returns skerry-bench's exit status.
run_point() {
    local s=$1 step=$2 test=$3 rep=$4 conns=$5 pid c0 c1 raw rc=0 cpu ops dur opc sutil ccpu cutil
    shift 5
    pid=${PID[$s]}
    # A warm-up draws other keys than the points after it (the same seed would replay them).
    local seed=$rep
    [[ $test == warmup ]] && seed=$((1000 + rep))
    raw=$OUT/raw/$s-$test-r$rep.json
    check_alive "$s"
    c0=$(cpu_ticks "$pid")
    taskset -c "$CLIENT_CPU" "$BENCH_BIN" --host 127.0.0.1 -p "${PORT[$s]}" -q -n "$N" -d "$DATA_SIZE" \
        -t "$BENCH_THREADS" -c "$((conns / BENCH_THREADS > 0 ? conns / BENCH_THREADS : 1))" --seed "$seed" \
        --json "$raw" "$@" >"$raw.txt" 2>&1 || rc=$?
    c1=$(cpu_ticks "$pid" || echo "$c0")
    if [[ ! -s $raw ]]; then
        cat "$raw.txt" >&2
        fail "$s $test rep $rep: skerry-bench failed (exit $rc)"
        printf '%s\t%s\t%s\t%s\t%s\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t%s\n' "$step" "$s" "$test" "$rep" "$conns" "$rc" >>"$RUNS"
        return "$rc"
    fi
    if [[ $rc == 0 ]]; then rm -f "$raw.txt"; else mv "$raw.txt" "$raw.stderr"; fi
    cpu=$(calc "($c1 - $c0) / $CLK_TCK")
    ops=$(json_num "$raw" ops)
    dur=$(json_num "$raw" duration_s)
    ccpu=$(json_num "$raw" client_cpu_s)
    opc=$(calc "($cpu > 0) ? $ops / $cpu : 0")
    sutil=$(calc "($dur > 0) ? $cpu / $dur : 0")
    cutil=$(calc "($dur > 0) ? $ccpu / $dur : 0")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%.2f\t%.0f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$step" "$s" "$test" "$rep" "$conns" "$ops" "$dur" "$(json_num "$raw" ops_per_sec)" "$cpu" "$opc" "$sutil" \
        "$ccpu" "$cutil" "$(json_num "$raw" p50)" "$(json_num "$raw" p99)" "$(json_num "$raw" p99_9)" \
        "$(json_num "$raw" max)" "$(json_num "$raw" misses)" "$(json_num "$raw" errors)" "$rc" >>"$RUNS"
    log "$(printf '%-13s %-8s rep %d: %9.0f ops/s  server CPU %6.2f s (%3.0f%%)  %9.0f ops/CPU-s  client CPU %3.0f%%  p99 %s us  misses %s errors %s' \
        "$s" "$test" "$rep" "$(json_num "$raw" ops_per_sec)" "$cpu" "$(calc "$sutil * 100")" "$opc" "$(calc "$cutil * 100")" \
        "$(json_num "$raw" p99)" "$(json_num "$raw" misses)" "$(json_num "$raw" errors)")"
    (($(json_num "$raw" errors) == 0)) || fail "$s $test rep $rep: $(json_num "$raw" errors) error replies"
    return "$rc"
}

# ---------------------------------------------------------------- 1. fio ceiling
FIO_IOPS=nan
FIO_TSV=$OUT/fio.tsv
# fio_point TAG: one fio run (fio_cmd) writing raw/fio-TAG.json; appends TAG and IOPS to
# fio.tsv and sets FIO_LAST. The first run lays the file out; it stays until the exit.
fio_point() {
    local tag=$1 json=$OUT/raw/fio-$1.json iops
    local cmd=("${fio_cmd[@]}" --output="$json")
    if ! "${cmd[@]}" >"$OUT/raw/fio-$tag.stderr" 2>&1 && [[ $engine == io_uring ]]; then
        log "fio with io_uring failed; retrying with libaio"
        engine=libaio
        fio_cmd=("${fio_cmd[@]/--ioengine=io_uring/--ioengine=libaio}")
        cmd=("${fio_cmd[@]}" --output="$json")
        "${cmd[@]}" >"$OUT/raw/fio-$tag.stderr" 2>&1 || { cat "$OUT/raw/fio-$tag.stderr" >&2; die "fio failed"; }
    fi
    [[ -s $OUT/raw/fio-$tag.stderr ]] || rm -f "$OUT/raw/fio-$tag.stderr"
    iops=$(fio_iops "$json")
    [[ -n $iops ]] || die "could not read IOPS from $json"
    printf '%s\t%s\n' "$tag" "$iops" >>"$FIO_TSV"
    FIO_LAST=$iops
}
if [[ $SKIP_FIO != 1 ]]; then
    fio_file=$DATA_DIR/fio.dat
    engine=io_uring
    fio --enghelp 2>/dev/null | grep -qw io_uring || engine=libaio
    fio_cmd=(taskset -c "$SERVER_CPU" fio --name=randread --filename="$fio_file" --size="${FIO_SIZE_MIB}m"
        --rw=randread --bs=4k --direct=1 --ioengine="$engine" --iodepth=32 --numjobs=1 --time_based=1
        --runtime="$FIO_RUNTIME" --ramp_time=1 --norandommap=1 --randrepeat=0 --group_reporting=1
        --output-format=json)
    printf 'tag\tiops\n' >"$FIO_TSV"
    log "fio: laying out ${FIO_SIZE_MIB} MiB and reading for ${FIO_RUNTIME}s: ${fio_cmd[*]}"
    fio_point start
    FIO_IOPS=$FIO_LAST
    fact fio.iops "$FIO_IOPS"
    fact fio.command "${fio_cmd[*]}"
    log "fio: $FIO_IOPS IOPS (4 KiB random read, O_DIRECT, iodepth 32)"
    [[ $FIO_PAIRED == 1 ]] || rm -f "$fio_file"
fi

# ---------------------------------------------------------------- 2. (and 4.) each server
declare -A RSS_EMPTY RSS_FILL
RESTART_PING=nan RESTART_READY=nan RSS_RESTART=nan RSS_SETTLED=nan
measure_server() { # NAME KIND [SERVER ARGS...]
    local s=$1 kind=$2 r t0 t1 p
    shift 2
    launch "$s" "$kind" "$@"
    RSS_EMPTY[$s]=$(rss_bytes "${PID[$s]}")
    fact "$s.rss_empty" "${RSS_EMPTY[$s]}"
    log "$s: filling keys 1..$N with exactly $N SETs of $DATA_SIZE bytes (sequential, $CONNS connections, pipeline $FILL_PIPELINE)"
    run_point "$s" storage fill 1 "$CONNS" --key-pattern sequential --ratio 1:0 --requests "$N" -P "$FILL_PIPELINE" \
        --require-no-errors || true
    check_keys "$s" after_fill
    RSS_FILL[$s]=$(rss_bytes "${PID[$s]}")
    fact "$s.rss_after_fill" "${RSS_FILL[$s]}"
    log "$s: RSS $(human_bytes "${RSS_EMPTY[$s]}") empty, $(human_bytes "${RSS_FILL[$s]}") after the fill: $(calc "${RSS_FILL[$s]} / $N") bytes per key"

    if [[ $kind == skerry && $SKIP_RESTART != 1 ]]; then
        # 4. Cold restart: kill -9 after the fill, start again on the same data dir.
        sleep "$RESTART_SETTLE"
        # The fill's transient buffers (staging images, connection buffers) are gone once
        # the server has idled a moment: what stays is the index.
        RSS_SETTLED=$(rss_bytes "${PID[$s]}")
        fact "$s.rss_settled" "$RSS_SETTLED"
        log "$s: RSS ${RESTART_SETTLE}s after the fill: $(human_bytes "$RSS_SETTLED"): $(calc "$RSS_SETTLED / $N") bytes per key"
        log "$s: kill -9 (pid ${PID[$s]}) and restart"
        kill -KILL "${PID[$s]}"
        wait "${WRAP[$s]}" 2>/dev/null || true
        unset "PID[$s]" "WRAP[$s]"
        t0=$(now)
        start_server "$s" "$kind" "$@"
        until resp_ping "${PORT[$s]}"; do
            kill -0 "${PID[$s]}" 2>/dev/null || { tail -n 5 "${DIR[$s]}.log" >&2; die "$s exited during restart"; }
            (($(calc "$(now) - $t0 < $RESTART_TIMEOUT") == 1)) || die "$s did not answer PING within ${RESTART_TIMEOUT}s of the restart"
            sleep 0.01
        done
        t1=$(now)
        RESTART_PING=$(calc "$t1 - $t0")
        # DBSIZE == N, or a wrong DBSIZE that stays the same for 5 s (keys lost: no point
        # waiting for RESTART_TIMEOUT).
        local last="" since=$SECONDS dbsize
        while true; do
            dbsize=$(rcli "$s" dbsize)
            [[ $dbsize == "$N" ]] && break
            kill -0 "${PID[$s]}" 2>/dev/null || die "$s exited during restart"
            [[ $dbsize == "$last" ]] || { last=$dbsize; since=$SECONDS; }
            if [[ $dbsize =~ ^[0-9]+$ ]] && ((SECONDS - since >= 5)) ||
                (($(calc "$(now) - $t0 > $RESTART_TIMEOUT") == 1)); then
                fail "$s restart: DBSIZE $dbsize, expected $N"
                break
            fi
            sleep 0.01
        done
        RESTART_READY=$(calc "$(now) - $t0")
        fact "$s.restart_ping_s" "$RESTART_PING"
        fact "$s.restart_dbsize_s" "$RESTART_READY"
        log "$s: restarted: PING after $(printf %.2f "$RESTART_PING") s, DBSIZE == $N after $(printf %.2f "$RESTART_READY") s"
        check_keys "$s" after_restart
        RSS_RESTART=$(rss_bytes "${PID[$s]}")
        fact "$s.rss_after_restart" "$RSS_RESTART"
    fi

    log "$s: GET warm-up (${WARMUP}s)"
    run_point "$s" storage warmup 1 "$CONNS" --key-pattern uniform --ratio 0:1 --test-time "$WARMUP" -P "$PIPELINE" \
        --require-no-misses || fail "$s warm-up: GET misses or errors"
    for ((r = 1; r <= REPEATS; r++)); do
        if [[ $s == skerry && $SKIP_FIO != 1 && $FIO_PAIRED == 1 ]]; then
            fio_point "get-r$r"
            log "fio before skerry get rep $r: $FIO_LAST IOPS"
        fi
        run_point "$s" storage get "$r" "$CONNS" --key-pattern uniform --ratio 0:1 --test-time "$DURATION" -P "$PIPELINE" \
            --require-no-misses || fail "$s get rep $r: misses (or errors): see $OUT/raw/$s-get-r$r.json"
        run_point "$s" storage set "$r" "$CONNS" --key-pattern uniform --ratio 1:0 --test-time "$DURATION" -P "$PIPELINE" \
            --require-no-errors || true
    done
    check_keys "$s" after_points
    fact "$s.rss_after_points" "$(rss_bytes "${PID[$s]}")"
    stop_server "$s"
    [[ ${KEEP_DATA:-0} == 1 ]] || rm -rf "${DIR[$s]:?}"
}
[[ $SKIP_SKERRY == 1 ]] || measure_server skerry skerry --data-size "$SKERRY_DATA_SIZE"
[[ $SKIP_REDIS == 1 ]] || measure_server redis redis --appendonly no

# ---------------------------------------------------------------- 3. appendfsync always
if [[ $SKIP_FSYNC != 1 ]]; then
    FSYNC_LIST=()
    if [[ $SKIP_SKERRY != 1 ]]; then
        launch skerry-fsync skerry --data-size "$FSYNC_DATA_SIZE" --appendfsync always
        FSYNC_LIST+=(skerry-fsync)
    fi
    if [[ $SKIP_REDIS != 1 ]]; then
        launch redis-fsync redis --appendonly yes --appendfsync always
        FSYNC_LIST+=(redis-fsync)
    fi
    for ((r = 1; r <= REPEATS; r++)); do
        order=("${FSYNC_LIST[@]}")
        if ((r % 2 == 0 && ${#order[@]} == 2)); then order=("${order[1]}" "${order[0]}"); fi # alternate who goes first
        for s in "${order[@]}"; do
            run_point "$s" fsync set "$r" "$FSYNC_CONNS" --key-pattern uniform --ratio 1:0 --test-time "$DURATION" \
                -P "$PIPELINE" --require-no-errors || true
        done
    done
    for s in "${FSYNC_LIST[@]}"; do
        stop_server "$s"
        [[ ${KEEP_DATA:-0} == 1 ]] || rm -rf "${DIR[$s]:?}"
    done
fi

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"

# ---------------------------------------------------------------- 5. summary
# median STEP SERVER TEST COLUMN: median over the repeats of one column of runs.tsv.
median() {
    awk -F'\t' -v st="$1" -v s="$2" -v t="$3" -v c="$4" '
        NR > 1 && $1 == st && $2 == s && $3 == t && $c != "" { print $c }' "$RUNS" | median_of
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "nan" || b == "nan" || a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a / b }'; }
fmt() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "nan" || v == "") print "-"; else printf f, v }'; }
verdict() { # VALUE TARGET: PASS/FAIL (or -)
    awk -v v="$1" -v t="$2" 'BEGIN { if (v == "-" || v == "nan" || v == "") print "-"; else print (v + 0 >= t) ? "PASS" : "FAIL" }'
}
col() { # name -> runs.tsv column number
    case $1 in
        ops_per_sec) echo 8 ;; server_cpu_s) echo 9 ;; ops_per_cpu_s) echo 10 ;; server_util) echo 11 ;;
        client_util) echo 13 ;; p50) echo 14 ;; p99) echo 15 ;; p99_9) echo 16 ;; max) echo 17 ;; misses) echo 18 ;;
    esac
}
m() { median "$1" "$2" "$3" "$(col "$4")"; }

SG=$(m storage skerry get ops_per_sec) RG=$(m storage redis get ops_per_sec)
SS=$(m storage skerry set ops_per_sec) RS=$(m storage redis set ops_per_sec)
SGC=$(m storage skerry get ops_per_cpu_s) RGC=$(m storage redis get ops_per_cpu_s)
SSC=$(m storage skerry set ops_per_cpu_s) RSC=$(m storage redis set ops_per_cpu_s)
FS=$(m fsync skerry-fsync set ops_per_sec) FR=$(m fsync redis-fsync set ops_per_sec)
FSC=$(m fsync skerry-fsync set ops_per_cpu_s) FRC=$(m fsync redis-fsync set ops_per_cpu_s)
# GET target: 85% of the lower of the fio ceiling and Redis's GET rate.
GET_REF=$(awk -v f="$FIO_IOPS" -v r="$RG" 'BEGIN { if (f == "nan" && r == "nan") print "nan"; else if (f == "nan") print r; else if (r == "nan") print f; else print (f < r) ? f : r }')
total_misses=$(awk -F'\t' 'NR > 1 && $18 != "" { m += $18 } END { print m + 0 }' "$RUNS")
total_errors=$(awk -F'\t' 'NR > 1 && $19 != "" { e += $19 } END { print e + 0 }' "$RUNS")
fact summary.get_ref "$GET_REF"
# Paired GET ratios: each Skerry GET repeat against min(the fio run just before it, Redis
# GET); the device's rate drifts within minutes on a shared VM, so a pair taken a few
# seconds apart compares like with like. PAIRS holds "rep skerry fio ref ratio" lines.
PAIRS=""
if [[ -s $FIO_TSV ]]; then
    PAIRS=$(awk -F'\t' -v rg="$RG" '
        FNR == NR { if ($1 ~ /^get-r/) { sub(/^get-r/, "", $1); f[$1] = $2 }; next }
        FNR > 1 && $1 == "storage" && $2 == "skerry" && $3 == "get" && ($4 in f) && $8 != "" {
            ref = f[$4]; if (rg != "nan" && rg + 0 < ref + 0) ref = rg
            printf "%s %s %s %s %.4f\n", $4, $8, f[$4], ref, $8 / ref
        }' "$FIO_TSV" "$RUNS")
fi
GET_PAIRED=$(printf '%s\n' "$PAIRS" | awk 'NF == 5 { print $5 }' | median_of)
[[ $GET_PAIRED == nan ]] || GET_PAIRED=$(printf '%.2f' "$GET_PAIRED")
fact summary.get_paired_ratio "$GET_PAIRED"

{
    echo "# Storage benchmark: Skerry vs Redis vs the device"
    echo
    echo "\`$CMDLINE\` — $(date -u '+%Y-%m-%d'); keys 1..$N, $DATA_SIZE-byte values; servers pinned on CPU $SERVER_CPU"
    echo "(Skerry \`--threads 1\`), skerry-bench on CPU $CLIENT_CPU; $CONNS connections (appendfsync always: $FSYNC_CONNS), pipeline $PIPELINE;"
    echo "$DURATION s per point, median of $REPEATS repeat(s). ops/CPU-s = requests / server CPU seconds (utime+stime, /proc/PID/stat)."
    [[ -n $MEMCAP_MIB ]] && echo "Skerry ran inside \`memcap $MEMCAP_MIB\` (RSS + page cache capped at $MEMCAP_MIB MiB)."
    echo
    [[ -n $BUSY_WARNING ]] && echo "**$BUSY_WARNING**" && echo
    if ((${#FAILURES[@]} > 0)); then
        echo "**Checks failed:**"
        echo
        for f in "${FAILURES[@]}"; do echo "- $f"; done
        echo
    else
        echo "All checks passed: DBSIZE == $N and STRLEN == $DATA_SIZE after the fill$([[ $SKIP_RESTART != 1 && $SKIP_SKERRY != 1 ]] && echo ", after the restart") and after the points; no GET missed ($total_misses misses), no error replies ($total_errors)."
        echo
    fi
    echo '```'
    cat "$OUT/env.txt"
    echo '```'
    echo
    echo "## Targets (issue)"
    echo
    echo "| target | measured | verdict |"
    echo "|---|---:|---|"
    v=$(ratio "$SSC" "$RSC")
    echo "| SET ops/CPU-s >= 1.0x Redis | $v | $(verdict "$v" 1.0) |"
    v=$(ratio "$SG" "$GET_REF")
    if [[ $GET_PAIRED != nan ]]; then
        echo "| GET ops/s >= 0.85x min(fio IOPS just before the repeat, Redis GET), median of the paired repeats | $GET_PAIRED | $(verdict "$GET_PAIRED" 0.85) |"
        echo "| (unpaired, for reference) GET ops/s / min(fio IOPS at the start, Redis GET) = $(fmt "$GET_REF" %.0f) | $v | |"
    else
        echo "| GET ops/s >= 0.85x min(fio IOPS, Redis GET) = $(fmt "$GET_REF" %.0f) | $v | $(verdict "$v" 0.85) |"
    fi
    v=$(ratio "$FS" "$FR")
    echo "| appendfsync always SET ops/s >= 1.0x Redis (appendonly yes, appendfsync always) | $v | $(verdict "$v" 1.0) |"
    echo "| zero GET misses | $total_misses | $( ((total_misses == 0)) && echo PASS || echo FAIL) |"
    echo
    if [[ -n $PAIRS ]]; then
        echo "Paired GET repeats (fio run right before each Skerry GET repeat; \`fio.tsv\`):"
        echo
        echo "| repeat | Skerry GET ops/s | fio IOPS just before | reference min(fio, Redis GET) | ratio |"
        echo "|---:|---:|---:|---:|---:|"
        printf '%s\n' "$PAIRS" | awk 'NF == 5 { printf "| %s | %.0f | %.0f | %.0f | %.2f |\n", $1, $2, $3, $4, $5 }'
        echo
    fi
    echo "(Targets that compare two runs — SET at N = 10,000,000 vs N = 1,000,000 — need both summaries: Skerry SET here: $(fmt "$SS" %.0f) ops/s.)"
    echo
    echo "## Throughput (medians)"
    echo
    echo "| test | Skerry ops/s | Redis ops/s | Skerry/Redis | Skerry ops/CPU-s | Redis ops/CPU-s | Skerry/Redis | Skerry/fio |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    echo "| GET uniform | $(fmt "$SG" %.0f) | $(fmt "$RG" %.0f) | $(ratio "$SG" "$RG") | $(fmt "$SGC" %.0f) | $(fmt "$RGC" %.0f) | $(ratio "$SGC" "$RGC") | $(ratio "$SG" "$FIO_IOPS") |"
    echo "| SET uniform | $(fmt "$SS" %.0f) | $(fmt "$RS" %.0f) | $(ratio "$SS" "$RS") | $(fmt "$SSC" %.0f) | $(fmt "$RSC" %.0f) | $(ratio "$SSC" "$RSC") | |"
    echo "| SET appendfsync always ($FSYNC_CONNS conns) | $(fmt "$FS" %.0f) | $(fmt "$FR" %.0f) | $(ratio "$FS" "$FR") | $(fmt "$FSC" %.0f) | $(fmt "$FRC" %.0f) | $(ratio "$FSC" "$FRC") | |"
    echo
    echo "fio ceiling: $(fmt "$FIO_IOPS" %.0f) IOPS (4 KiB random read, O_DIRECT, iodepth 32, ${FIO_RUNTIME}s, ${FIO_SIZE_MIB} MiB file in the data directory's file system; \`raw/fio-start.json\`; the paired runs: \`fio.tsv\`, \`raw/fio-get-rN.json\`)."
    echo
    echo "Details (medians): server CPU utilisation (CPU s / wall s), client (skerry-bench) CPU utilisation —"
    echo "near 100% would mean the point is client-bound — and latency percentiles (microseconds)."
    echo
    echo "| step | server | test | server util | client util | p50 us | p99 us | p99.9 us | max us |"
    echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
    for row in "storage skerry get" "storage redis get" "storage skerry set" "storage redis set" "fsync skerry-fsync set" "fsync redis-fsync set"; do
        read -r st s t <<<"$row"
        [[ $(m "$st" "$s" "$t" ops_per_sec) == nan ]] && continue
        echo "| $st | $s | $t | $(fmt "$(m "$st" "$s" "$t" server_util)" %.2f) | $(fmt "$(m "$st" "$s" "$t" client_util)" %.2f) | $(fmt "$(m "$st" "$s" "$t" p50)" %.0f) | $(fmt "$(m "$st" "$s" "$t" p99)" %.0f) | $(fmt "$(m "$st" "$s" "$t" p99_9)" %.0f) | $(fmt "$(m "$st" "$s" "$t" max)" %.0f) |"
    done
    echo
    echo "## Fill, memory, restart"
    echo
    echo "| server | fill ops/s | fill ops/CPU-s | RSS empty | RSS after fill | RSS / key | (RSS - empty) / key |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    for s in skerry redis; do
        [[ -n ${RSS_FILL[$s]:-} ]] || continue
        echo "| $s | $(fmt "$(m storage "$s" fill ops_per_sec)" %.0f) | $(fmt "$(m storage "$s" fill ops_per_cpu_s)" %.0f) | $(human_bytes "${RSS_EMPTY[$s]}") | $(human_bytes "${RSS_FILL[$s]}") | $(calc "${RSS_FILL[$s]} / $N" | xargs printf %.1f) | $(calc "(${RSS_FILL[$s]} - ${RSS_EMPTY[$s]}) / $N" | xargs printf %.1f) |"
    done
    echo
    if [[ $RESTART_READY != nan ]]; then
        echo "Cold restart of Skerry (kill -9 ${RESTART_SETTLE}s after the fill, same data dir): PING answered after $(printf %.2f "$RESTART_PING") s,"
        echo "DBSIZE == $N after $(printf %.2f "$RESTART_READY") s; RSS after the restart $(human_bytes "$RSS_RESTART") ($(calc "$RSS_RESTART / $N" | xargs printf %.1f) bytes per key)."
        echo "RSS ${RESTART_SETTLE} s after the fill (idle, before the kill): $(human_bytes "$RSS_SETTLED") ($(calc "$RSS_SETTLED / $N" | xargs printf %.1f) bytes per key)."
        echo
    fi
    echo "Raw data: \`runs.tsv\` (every run, incl. fill and warm-up), \`facts.tsv\` (checks, RSS, restart),"
    echo "\`raw/\` (skerry-bench JSON per run, fio JSON), \`logs/\` (tails of the server logs)."
} >"$OUT/summary.md"

echo
sed -n '/^## Targets/,/^## Fill/p' "$OUT/summary.md" | sed '$d'
log "summary: $OUT/summary.md ($(du -sh "$OUT" | cut -f1))"
if ((${#FAILURES[@]} > 0)); then
    log "${#FAILURES[@]} check(s) failed"
    exit 1
fi
