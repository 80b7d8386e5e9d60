#!/usr/bin/env bash
# bench/collections.sh - collections: HSET/HDEL by the published method against Debian's
# redis-server, and writes to one big collection against one small collection.
#
# Part 1 (published method, ../shared/reference/002): KEYS hash keys (decimal 1..KEYS), one
# field each: KEYS HSET then KEYS HDEL, 4 client threads x 50 connections, sequential keys
# (each connection a disjoint contiguous stream), 32-byte values. Skerry (--threads 1, on
# SERVER_CPU) and redis-server (appendonly no, save "", on SERVER_CPU) in the same run, one
# after the other, REPEATS times alternated. Reports ops/s, server CPU seconds and ops per
# server CPU-second per command, medians, and the Skerry/Redis ratios.
#
# Part 2 (one collection of SMALL vs BIG members): for each of HSET, ZADD, LPUSH, SADD, a
# fresh Skerry holds one collection filled to SIZE members (variadic commands of FILL_BATCH
# members), then REPEATS runs of DURATION s of single-member writes to it (HSET/ZADD
# overwrite random existing members, ZADD with INCR so that the score changes; SADD adds
# random new members; LPUSH pushes, so those two grow). Reports the median ops/s, ops per
# server CPU-second and device bytes written per operation (INFO storage deltas) for
# SIZE=SMALL and SIZE=BIG, and the BIG/SMALL ratio of the median rates. Targets (issue 5):
# ratio >= 0.80 and <= 16 KiB device bytes per operation at BIG=1000000. A fill that the
# server refuses is reported as such. VALUE_BYTES sets the size of the values written in
# part 2 (HSET values, LPUSH elements); TYPES picks the commands of part 2. For example,
# `PARTS=2 TYPES=LPUSH VALUE_BYTES=1024` pushes 1 KiB elements, which give a list many
# pages (a push's cost must not grow with them).
#
# Environment (defaults): KEYS=1000000 REPEATS=3 DURATION=15 SMALL=1000 BIG=1000000
# FILL_BATCH=20000 CONNS=50 (part 2 connections) VALUE_BYTES=32 TYPES="HSET ZADD LPUSH SADD"
# SERVER_CPU=0 CLIENT_CPU=1 PARTS="1 2"
# SKERRY_BIN BENCH_BIN REDIS_BIN=redis-server SKIP_REDIS=0 DATA_DIR=bench/tmp/collections
# (removed at exit unless KEEP_DATA=1) OUT=bench/results/<date>-collections.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=bench/collections.sh

KEYS=${KEYS:-1000000}
REPEATS=${REPEATS:-3}
DURATION=${DURATION:-15}
SMALL=${SMALL:-1000}
BIG=${BIG:-1000000}
FILL_BATCH=${FILL_BATCH:-20000}
CONNS=${CONNS:-50}
VALUE_BYTES=${VALUE_BYTES:-32}
TYPES=${TYPES:-HSET ZADD LPUSH SADD}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PARTS=${PARTS:-1 2}
SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
BENCH_BIN=${BENCH_BIN:-$ROOT/target/release/skerry-bench}
REDIS_BIN=${REDIS_BIN:-redis-server}
SKIP_REDIS=${SKIP_REDIS:-0}
DATA_DIR=${DATA_DIR:-$ROOT/bench/tmp/collections}
OUT=${OUT:-}
FILL_TIMEOUT=${FILL_TIMEOUT:-600}

log() { printf '[collections] %s\n' "$*" >&2; }
die() { printf '[collections] ERROR: %s\n' "$*" >&2; exit 2; }
[[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }

for v in KEYS REPEATS DURATION SMALL BIG FILL_BATCH CONNS VALUE_BYTES SERVER_CPU CLIENT_CPU FILL_TIMEOUT; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer (got '${!v}')"
done
((KEYS >= 200 && REPEATS >= 1 && DURATION >= 1 && SMALL >= 1 && BIG >= SMALL && FILL_BATCH >= 1)) ||
    die "need KEYS >= 200, REPEATS, DURATION, SMALL, FILL_BATCH >= 1 and BIG >= SMALL"

APT_UPDATED=0
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
need_cmd taskset util-linux
need_cmd redis-cli redis-tools
[[ $SKIP_REDIS == 1 ]] || need_cmd "$REDIS_BIN" redis-server
NCPU=$(nproc --all)
((SERVER_CPU < NCPU && CLIENT_CPU < NCPU)) || die "SERVER_CPU/CLIENT_CPU: this machine has $NCPU CPUs"
CLK_TCK=$(getconf CLK_TCK)

for b in "$SKERRY_BIN" "$BENCH_BIN"; do
    [[ -x $b ]] && continue
    log "building (cargo build --release -p skerry -p skerry-bench)"
    (cd "$ROOT" && cargo build --release -p skerry -p skerry-bench >&2) || die "cargo build failed"
    break
done
[[ -x $SKERRY_BIN && -x $BENCH_BIN ]] || die "missing $SKERRY_BIN or $BENCH_BIN"

OUT=${OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%d)-collections}
mkdir -p "$OUT" "$DATA_DIR"
SERVER_PID=""
cleanup() {
    [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    [[ ${KEEP_DATA:-0} == 1 ]] || rm -rf "$DATA_DIR"
}
trap cleanup EXIT

# start_server skerry|redis: a fresh server on a free port; sets SERVER_PID and PORT.
start_server() {
    PORT=$(free_port)
    local dir=$DATA_DIR/$1-$PORT
    rm -rf "$dir"
    mkdir -p "$dir"
    if [[ $1 == skerry ]]; then
        taskset -c "$SERVER_CPU" "$SKERRY_BIN" --port "$PORT" --dir "$dir" --threads 1 \
            --data-size "${SKERRY_DATA_SIZE:-4gb}" >"$dir/server.log" 2>&1 &
    else
        taskset -c "$SERVER_CPU" "$REDIS_BIN" --port "$PORT" --dir "$dir" --save "" \
            --appendonly no >"$dir/server.log" 2>&1 &
    fi
    SERVER_PID=$!
    SERVER_DIR=$dir
    await_server "$1" "$SERVER_PID" "$PORT" "$dir/server.log" 60
}
stop_server() {
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
    # Each server's data file takes SKERRY_DATA_SIZE of disk: give it back at once.
    [[ ${KEEP_DATA:-0} == 1 ]] || rm -rf "$SERVER_DIR"
}
info_field() { redis-cli -p "$PORT" info "$1" | tr -d '\r' | awk -F: -v k="$2" '$1 == k { print $2 }'; }

# bench_run NAME ARGS...: runs skerry-bench on CLIENT_CPU with a JSON summary; prints
# "ops_per_s server_cpu_s errors total_ops".
bench_run() {
    local name=$1
    shift
    local json=$OUT/$name.json t0 t1
    t0=$(cpu_ticks "$SERVER_PID")
    taskset -c "$CLIENT_CPU" "$BENCH_BIN" -p "$PORT" -q --json "$json" "$@" >"$OUT/$name.txt" 2>&1 ||
        log "$name: skerry-bench exited with $? (see $OUT/$name.txt)"
    t1=$(cpu_ticks "$SERVER_PID")
    local ops errors total
    ops=$(grep -o '"ops_per_sec":[ ]*[0-9.]*' "$json" | head -n 1 | grep -o '[0-9.]*$' || echo 0)
    errors=$(grep -o '"errors":[ ]*[0-9]*' "$json" | head -n 1 | grep -o '[0-9]*$' || echo 0)
    total=$(grep -o '"ops":[ ]*[0-9]*' "$json" | head -n 1 | grep -o '[0-9]*$' || echo 0)
    echo "${ops:-0} $(calc "($t1 - $t0) / $CLK_TCK") ${errors:-0} ${total:-0}"
}
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

SUMMARY=$OUT/summary.md
{
    echo "# bench/collections.sh, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "- Machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -r)"
    echo "- Skerry $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?') --threads 1 on CPU $SERVER_CPU; skerry-bench on CPU $CLIENT_CPU"
    echo "- Command: \`KEYS=$KEYS REPEATS=$REPEATS DURATION=$DURATION SMALL=$SMALL BIG=$BIG FILL_BATCH=$FILL_BATCH VALUE_BYTES=$VALUE_BYTES TYPES=\"$TYPES\" PARTS=\"$PARTS\" $PROG\`"
    echo
} >"$SUMMARY"

# ---------------------------------------------------------------- part 1
part1() {
    local servers=(skerry)
    [[ $SKIP_REDIS == 1 ]] || servers+=(redis)
    local r s cmd res
    declare -A OPS CPU
    for ((r = 1; r <= REPEATS; r++)); do
        for s in "${servers[@]}"; do
            start_server "$s"
            for cmd in HSET HDEL; do
                local tmpl="HSET __key__ f __data__"
                [[ $cmd == HDEL ]] && tmpl="HDEL __key__ f"
                res=$(bench_run "p1-$s-$cmd-$r" -t 4 -c 50 --key-pattern sequential -n "$KEYS" \
                    --requests "$KEYS" -d 32 --command "$tmpl" --require-no-errors)
                read -r ops cpu errors _ <<<"$res"
                log "part 1 round $r $s $cmd: $ops ops/s, server CPU $cpu s, errors $errors"
                OPS[$s-$cmd]+="$ops "
                CPU[$s-$cmd]+="$(calc "($cpu > 0) ? $KEYS / $cpu : 0") "
                if [[ $cmd == HSET ]]; then
                    local n
                    n=$(redis-cli -p "$PORT" dbsize)
                    [[ $n == "$KEYS" ]] || log "part 1 $s: DBSIZE $n after the HSETs, expected $KEYS"
                fi
            done
            local left
            left=$(redis-cli -p "$PORT" dbsize)
            [[ $left == 0 ]] || log "part 1 $s: DBSIZE $left after the HDELs, expected 0"
            stop_server
        done
    done
    {
        echo "## Part 1: HSET/HDEL, $KEYS keys, 4 threads x 50 connections, sequential keys, 32-byte values"
        echo
        echo "| server | command | ops/s (median of $REPEATS) | ops per server CPU-s | runs (ops/s) |"
        echo "|---|---|---:|---:|---|"
        for s in "${servers[@]}"; do
            for cmd in HSET HDEL; do
                printf '| %s | %s | %.0f | %.0f | %s |\n' "$s" "$cmd" \
                    "$(tr ' ' '\n' <<<"${OPS[$s-$cmd]}" | grep . | median)" \
                    "$(tr ' ' '\n' <<<"${CPU[$s-$cmd]}" | grep . | median)" "${OPS[$s-$cmd]}"
            done
        done
        if [[ $SKIP_REDIS != 1 ]]; then
            echo
            for cmd in HSET HDEL; do
                local a b c d
                a=$(tr ' ' '\n' <<<"${OPS[skerry-$cmd]}" | grep . | median)
                b=$(tr ' ' '\n' <<<"${OPS[redis-$cmd]}" | grep . | median)
                c=$(tr ' ' '\n' <<<"${CPU[skerry-$cmd]}" | grep . | median)
                d=$(tr ' ' '\n' <<<"${CPU[redis-$cmd]}" | grep . | median)
                echo "- $cmd Skerry/Redis: ops/s $(calc "($b > 0) ? $a / $b : 0"), ops per CPU-s $(calc "($d > 0) ? $c / $d : 0")"
            done
        fi
        echo
    } >>"$SUMMARY"
}

# ---------------------------------------------------------------- part 2
# fill TYPE SIZE: one collection "big" of SIZE members; returns non-zero when refused.
fill() {
    local type=$1 size=$2 i j line
    local deadline=$((SECONDS + FILL_TIMEOUT))
    for ((i = 1; i <= size; i += FILL_BATCH)); do
        line=""
        for ((j = i; j < i + FILL_BATCH && j <= size; j++)); do
            case $type in
                HSET) line+=" $j v$j" ;;
                ZADD) line+=" $j m$j" ;;
                LPUSH | SADD) line+=" m$j" ;;
            esac
        done
        local reply
        # shellcheck disable=SC2086
        reply=$(redis-cli -p "$PORT" "$type" big $line 2>&1)
        if [[ $reply == *ERR* ]]; then
            log "part 2 $type fill refused at $i members: $reply"
            FILL_ERROR="refused at $((i - 1)) members: $reply"
            return 1
        fi
        if ((SECONDS > deadline)); then
            FILL_ERROR="fill slower than FILL_TIMEOUT=$FILL_TIMEOUT s (at $j members)"
            log "part 2 $type: $FILL_ERROR"
            return 1
        fi
    done
}
part2() {
    {
        echo "## Part 2: writes to one collection, $SMALL vs $BIG members, $CONNS connections, $DURATION s, $VALUE_BYTES-byte values"
        echo
        echo "| command | members | median ops/s | ops per server CPU-s | device bytes per op | note |"
        echo "|---|---:|---:|---:|---:|---|"
    } >>"$SUMMARY"
    local type size tmpl res ops cpu errors w0 w1 bpo
    declare -A RATE
    for type in $TYPES; do
        for size in "$SMALL" "$BIG"; do
            start_server skerry
            FILL_ERROR=""
            if ! fill "$type" "$size"; then
                echo "| $type | $size | - | - | - | FAIL: $FILL_ERROR |" >>"$SUMMARY"
                RATE[$type-$size]=0
                stop_server
                continue
            fi
            case $type in
                HSET) tmpl="HSET big __key__ __data__" ;;
                ZADD) tmpl="ZADD big INCR 1 m__key__" ;;
                LPUSH) tmpl="LPUSH big __data__" ;;
                SADD) tmpl="SADD big n__key__" ;;
            esac
            # HSET/ZADD overwrite random existing members (the size stays); SADD adds random
            # new members out of a billion and LPUSH pushes (both grow by the ops made).
            local range=$size rep opsl="" cpsl="" bpol="" errs=0
            [[ $type == SADD ]] && range=1000000000
            for ((rep = 1; rep <= REPEATS; rep++)); do
                w0=$(info_field storage storage_device_written_bytes)
                res=$(bench_run "p2-$type-$size-$rep" -t 1 -c "$CONNS" --key-pattern uniform \
                    -n "$range" -d "$VALUE_BYTES" --seed "$rep" --command "$tmpl" --test-time "$DURATION")
                w1=$(info_field storage storage_device_written_bytes)
                local total
                read -r ops cpu errors total <<<"$res"
                bpo=$(calc "($total > 0) ? ($w1 - $w0) / $total : 0")
                log "part 2 $type $size run $rep: $ops ops/s, $bpo device bytes/op, errors $errors"
                opsl+="$ops"$'\n'
                cpsl+="$(calc "($cpu > 0) ? $total / $cpu : 0")"$'\n'
                bpol+="$bpo"$'\n'
                errs=$((errs + errors))
            done
            ops=$(printf '%s' "$opsl" | median)
            RATE[$type-$size]=$ops
            printf '| %s | %s | %.0f | %.0f | %.0f | %s |\n' "$type" "$size" "$ops" \
                "$(printf '%s' "$cpsl" | median)" "$(printf '%s' "$bpol" | median)" \
                "$([[ $errs == 0 ]] && echo "ok ($REPEATS runs: $(printf '%s' "$opsl" | awk '{ printf "%s%.0f", (NR > 1 ? " " : ""), $1 }'))" || echo "$errs error replies")" >>"$SUMMARY"
            stop_server
        done
    done
    {
        echo
        for type in $TYPES; do
            local a=${RATE[$type-$BIG]} b=${RATE[$type-$SMALL]}
            echo "- $type: rate at $BIG members / rate at $SMALL members = $(calc "($b > 0) ? $a / $b : 0") (target >= 0.80)"
        done
        echo
    } >>"$SUMMARY"
}

for p in $PARTS; do
    case $p in
        1) part1 ;;
        2) part2 ;;
        *) die "unknown part '$p'" ;;
    esac
done
log "summary: $SUMMARY"
cat "$SUMMARY"
