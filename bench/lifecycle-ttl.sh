#!/usr/bin/env bash
# bench/lifecycle-ttl.sh - active expiry and space reclaim: N keys with a TTL under load.
#
# One Skerry server (--threads 1, pinned on SERVER_CPU; the load generators and the sampler
# on CLIENT_CPU). Steps:
#   1. fill the non-TTL keys 1..BASE_N (exactly BASE_N SETs of DATA_SIZE bytes);
#   2. start the foreground load: SET:GET FG_RATIO over keys 1..BASE_N (uniform), FG_CONNS
#      connections at most FG_RATE requests/s each, in FG_SEGMENT-second runs until the end
#      (ops/s per run in fg.tsv); WARMUP seconds of it alone give the baseline: the most
#      used blocks and live bytes over the second half of the warm-up, i.e. what the non-TTL
#      data needs under this load (overwrites leave partly live blocks: with the defaults a
#      block stays in use ~20 s, ~12 blocks);
#   3. fill keys ttl:1..ttl:N with exactly N `SET ttl:K <DATA_SIZE bytes> EX TTL`
#      (skerry-bench --command, sequential, FILL_CONNS x FILL_PIPELINE), then one more TTL'd
#      key; its PEXPIRETIME is the expiry moment (no TTL'd key expires later);
#   4. every SAMPLE_MS: DBSIZE, INFO storage (used/free/reclaimed/tombstone blocks, live
#      bytes), expired_keys, server CPU ticks (samples.tsv), from before step 2 to the end;
#   5. report the seconds from the expiry moment until DBSIZE == BASE_N (target: at most
#      DBSIZE_TARGET_S) and until the space is reclaimed: used blocks at most the baseline's
#      most + RECLAIM_SLACK_BLOCKS and live bytes at most the baseline's + 10%.
# The foreground keeps running until both are reached (or the timeouts); it never touches
# a TTL'd key, so only active expiry removes them. Exit status 1 when DBSIZE missed its
# target or the space was not reclaimed within RECLAIM_TIMEOUT seconds after the expiry
# moment (and 2 for a setup failure: server, fill, foreground errors).
#
# Environment (defaults): N=1000000 TTL=10 DATA_SIZE=1024 BASE_N=10000 FG_CONNS=4
# FG_RATE=2000 FG_RATIO=1:1 FG_SEGMENT=5 WARMUP=40 FILL_CONNS=32 FILL_PIPELINE=16
# SAMPLE_MS=100 DBSIZE_TARGET_S=15 DBSIZE_TIMEOUT=120 RECLAIM_TIMEOUT=120
# RECLAIM_SLACK_BLOCKS=4 SERVER_CPU=0 CLIENT_CPU=1 SKERRY_DATA_SIZE (default: room for the
# TTL'd data + 50% + 1 GiB) SKERRY_BIN SKERRY_ARGS BENCH_BIN
# DATA_DIR=bench/tmp/lifecycle-ttl (removed at exit unless KEEP_DATA=1)
# OUT=bench/results/<date>-ttl (summary.md, samples.tsv, events.tsv, fg.tsv, fill.json, env.txt).
# The issue's target: N=1000000 TTL=10: DBSIZE back to the non-TTL keys within 15 s after
# the expiry, and the space reclaimed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=bench/lifecycle-ttl.sh

N=${N:-1000000}
TTL=${TTL:-10}
DATA_SIZE=${DATA_SIZE:-1024}
BASE_N=${BASE_N:-10000}
FG_CONNS=${FG_CONNS:-4}
FG_RATE=${FG_RATE:-2000}
FG_RATIO=${FG_RATIO:-1:1}
FG_SEGMENT=${FG_SEGMENT:-5}
WARMUP=${WARMUP:-40}
FILL_CONNS=${FILL_CONNS:-32}
FILL_PIPELINE=${FILL_PIPELINE:-16}
SAMPLE_MS=${SAMPLE_MS:-100}
DBSIZE_TARGET_S=${DBSIZE_TARGET_S:-15}
DBSIZE_TIMEOUT=${DBSIZE_TIMEOUT:-120}
RECLAIM_TIMEOUT=${RECLAIM_TIMEOUT:-120}
RECLAIM_SLACK_BLOCKS=${RECLAIM_SLACK_BLOCKS:-4}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SKERRY_DATA_SIZE=${SKERRY_DATA_SIZE:-}
SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
SKERRY_ARGS=${SKERRY_ARGS:-}
BENCH_BIN=${BENCH_BIN:-$ROOT/target/release/skerry-bench}
DATA_DIR=${DATA_DIR:-$ROOT/bench/tmp/lifecycle-ttl}
OUT=${OUT:-}
START_TIMEOUT=${START_TIMEOUT:-120}

log() { printf '[ttl] %s\n' "$*" >&2; }
die() { printf '[ttl] ERROR: %s\n' "$*" >&2; exit 2; }
[[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }

for v in N TTL DATA_SIZE BASE_N FG_CONNS FG_RATE FG_SEGMENT WARMUP FILL_CONNS FILL_PIPELINE SAMPLE_MS \
    DBSIZE_TARGET_S DBSIZE_TIMEOUT RECLAIM_TIMEOUT RECLAIM_SLACK_BLOCKS SERVER_CPU CLIENT_CPU START_TIMEOUT; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer (got '${!v}')"
done
((N >= 1 && TTL >= 1 && BASE_N >= 1 && FG_CONNS >= 1 && FG_SEGMENT >= 1 && SAMPLE_MS >= 10)) ||
    die "N, TTL, BASE_N, FG_CONNS, FG_SEGMENT must be >= 1 and SAMPLE_MS >= 10"
[[ $FG_RATIO =~ ^[0-9]+:[0-9]+$ ]] || die "FG_RATIO must look like 1:1 (SET:GET)"
[[ $DATA_DIR == "$ROOT"/bench/results* ]] && die "DATA_DIR must not be under bench/results"

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

if [[ -z $SKERRY_DATA_SIZE ]]; then
    need=$(((N + BASE_N) * (DATA_SIZE + 128) * 3 / 2 + (1 << 30)))
    SKERRY_DATA_SIZE=$(((need + (1 << 20) - 1) >> 20))mb
fi
[[ -n $OUT ]] || OUT=$(new_results_dir ttl)
mkdir -p "$OUT" "$DATA_DIR"
SDIR=$DATA_DIR/skerry
SLOG=$DATA_DIR/skerry.log
STOP_FILE=$DATA_DIR/stop
SAMPLES=$OUT/samples.tsv
EVENTS=$OUT/events.tsv
FG=$OUT/fg.tsv
rm -rf "$SDIR" "$STOP_FILE"
printf 'event\tt_unix_s\n' >"$EVENTS"
event() { printf '%s\t%s\n' "$1" "${2:-$EPOCHREALTIME}" >>"$EVENTS"; }

PORT=$(free_port)
PID="" SAMPLER="" FGLOOP=""
stop_bg() {
    touch "$STOP_FILE"
    for p in "$FGLOOP" "$SAMPLER"; do
        if [[ -n $p ]]; then wait "$p" 2>/dev/null || true; fi
    done
    FGLOOP="" SAMPLER=""
}
stop_server() {
    [[ -n $PID ]] || return 0
    if kill -0 "$PID" 2>/dev/null; then
        kill -TERM "$PID" 2>/dev/null || true
        for _ in {1..300}; do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$PID" 2>/dev/null || true
    fi
    wait "$PID" 2>/dev/null || true
    PID=""
}
cleanup() {
    stop_bg
    stop_server
    [[ -f $SLOG ]] && tail -n 40 "$SLOG" >"$OUT/skerry.log.tail" 2>/dev/null
    if [[ ${KEEP_DATA:-0} != 1 ]]; then
        rm -rf "${SDIR:?}" "$SLOG" "$STOP_FILE" "$DATA_DIR"/fg-*.json* "$DATA_DIR"/base-fill.txt "$DATA_DIR"/fill.txt
        rmdir "$DATA_DIR" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

rcli() { redis-cli -h 127.0.0.1 -p "$PORT" "$@" 2>&1; }
# fcalc EXPR: like calc, with 6 decimals (calc's %s would print Unix times as 1.76e+09).
fcalc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
is_true() { awk "BEGIN { exit !($1) }"; }
human_bytes() { awk -v b="$1" 'BEGIN { split("B KiB MiB GiB TiB", u); i = 1; while (b >= 1024 && i < 5) { b /= 1024; i++ } printf "%.1f %s", b, u[i] }'; }

start_server() {
    local cmd
    mkdir -p "$SDIR"
    # shellcheck disable=SC2206  # SKERRY_ARGS is word-split on purpose
    cmd=(taskset -c "$SERVER_CPU" "$SKERRY_BIN" --port "$PORT" --bind 127.0.0.1 --dir "$SDIR" --threads 1
        --appendonly yes --data-size "$SKERRY_DATA_SIZE" $SKERRY_ARGS)
    echo "# ${cmd[*]}" >>"$SLOG"
    "${cmd[@]}" >>"$SLOG" 2>&1 &
    PID=$!
    await_server skerry "$PID" "$PORT" "$SLOG" "$START_TIMEOUT"
    log "skerry: pid $PID, port $PORT: ${cmd[*]}"
}

# One sample: DBSIZE and the INFO fields in one redis-cli call; a samples.tsv row.
COLS=(storage_used_blocks storage_free_blocks storage_reclaimed_blocks storage_tombstone_blocks
    storage_reclaimable_blocks storage_live_bytes expired_keys)
sample_row() {
    local t ticks out
    t=$EPOCHREALTIME
    ticks=$(cpu_ticks "$PID" 2>/dev/null || echo 0)
    out=$(printf 'DBSIZE\nINFO storage\nINFO stats\n' | redis-cli -h 127.0.0.1 -p "$PORT" 2>/dev/null | tr -d '\r') || return 0
    awk -v t="$t" -v ticks="$ticks" -v cols="${COLS[*]}" -F: '
        NR == 1 { dbsize = $0; next }
        NF == 2 { v[$1] = $2 }
        END {
            if (dbsize !~ /^[0-9]+$/) exit
            n = split(cols, c, " ")
            printf "%s\t%s", t, dbsize
            for (i = 1; i <= n; i++) printf "\t%s", (c[i] in v) ? v[c[i]] : ""
            printf "\t%s\n", ticks
        }' <<<"$out"
}
# Samples every SAMPLE_MS (a sample itself takes a few ms: the next one is due SAMPLE_MS after
# the previous one started, not after it ended).
sampler() {
    local next now left
    taskset -cp "$CLIENT_CPU" "$BASHPID" >/dev/null
    next=${EPOCHREALTIME/./}
    while [[ ! -e $STOP_FILE ]]; do
        sample_row >>"$SAMPLES"
        next=$((next + SAMPLE_MS * 1000))
        now=${EPOCHREALTIME/./}
        left=$((next - now))
        if ((left > 0)); then
            sleep "$(printf '%d.%06d' $((left / 1000000)) $((left % 1000000)))"
        else
            next=$now
        fi
    done
}
# Foreground load: FG_SEGMENT-second skerry-bench runs until the stop file appears.
fg_loop() {
    local i=0 raw t0
    while [[ ! -e $STOP_FILE ]]; do
        i=$((i + 1))
        raw=$DATA_DIR/fg-$i.json
        t0=$EPOCHREALTIME
        if ! taskset -c "$CLIENT_CPU" "$BENCH_BIN" --host 127.0.0.1 -p "$PORT" -q -n "$BASE_N" -d "$DATA_SIZE" \
            -c "$FG_CONNS" --rate-limit "$FG_RATE" --ratio "$FG_RATIO" --test-time "$FG_SEGMENT" --seed "$i" \
            --json "$raw" >"$raw.txt" 2>&1; then
            cat "$raw.txt" >&2
            printf '%s\t%s\t%s\tfailed\t\t\t\t\n' "$i" "$t0" "$EPOCHREALTIME" >>"$FG"
            continue
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "$t0" "$EPOCHREALTIME" "$(json_num "$raw" ops_per_sec)" \
            "$(json_num "$raw" misses)" "$(json_num "$raw" errors)" "$(json_num "$raw" p50)" "$(json_num "$raw" p99)" >>"$FG"
        rm -f "$raw" "$raw.txt"
    done
}
# col NAME: the samples.tsv column number of NAME.
col() { head -n 1 "$SAMPLES" | tr '\t' '\n' | grep -n -x "$1" | cut -d: -f1; }
last_sample() { tail -n 1 "$SAMPLES" | cut -f "$(col "$1")"; }

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "command: N=$N TTL=$TTL DATA_SIZE=$DATA_SIZE BASE_N=$BASE_N FG_CONNS=$FG_CONNS FG_RATE=$FG_RATE FG_RATIO=$FG_RATIO WARMUP=$WARMUP FILL_CONNS=$FILL_CONNS FILL_PIPELINE=$FILL_PIPELINE SKERRY_ARGS='$SKERRY_ARGS' $PROG"
    echo "host: $(uname -srm), $NCPU CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo); memory $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    echo "skerry: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?') --threads 1 --data-size $SKERRY_DATA_SIZE, pinned on CPU $SERVER_CPU"
    echo "client: $("$BENCH_BIN" --version), pinned on CPU $CLIENT_CPU (fill, foreground load and sampler)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); CPU $SERVER_CPU busy $(printf %.0f "$(cpu_busy_pct "$SERVER_CPU" 1)")%, CPU $CLIENT_CPU busy $(printf %.0f "$(cpu_busy_pct "$CLIENT_CPU" 1)")%"
} >"$OUT/env.txt"
log "results: $OUT"
sed 's/^/  /' "$OUT/env.txt" >&2

start_server
BLOCK_BYTES=$(rcli info storage | tr -d '\r' | awk -F: '$1 == "storage_block_size_bytes" { print $2 }')
[[ $BLOCK_BYTES =~ ^[0-9]+$ ]] || die "no storage_block_size_bytes in INFO storage"

log "filling the non-TTL keys 1..$BASE_N"
taskset -c "$CLIENT_CPU" "$BENCH_BIN" --host 127.0.0.1 -p "$PORT" -q -n "$BASE_N" -d "$DATA_SIZE" -c 8 \
    --key-pattern sequential --ratio 1:0 --requests "$BASE_N" -P 16 --require-no-errors \
    --json "$OUT/base-fill.json" >"$DATA_DIR/base-fill.txt" 2>&1 || { cat "$DATA_DIR/base-fill.txt" >&2; die "base fill failed"; }
[[ $(rcli dbsize) == "$BASE_N" ]] || die "DBSIZE $(rcli dbsize) after the base fill, expected $BASE_N"

printf 't_unix_s\tdbsize\t%s\tserver_cpu_ticks\n' "$(
    IFS=$'\t'
    echo "${COLS[*]}"
)" >"$SAMPLES"
printf 'run\tstart_unix_s\tend_unix_s\tops_per_sec\tmisses\terrors\tp50_us\tp99_us\n' >"$FG"
sampler &
SAMPLER=$!
event fg_start
fg_loop &
FGLOOP=$!
log "foreground load: SET:GET $FG_RATIO over keys 1..$BASE_N, $FG_CONNS connections x $FG_RATE req/s; $WARMUP s alone for the baseline"
sleep "$WARMUP"
event baseline_end
# Baseline: the most blocks and live bytes in use over the second half of the warm-up (the
# foreground's overwrites have reached their steady state of partly live blocks by then).
read -r BASE_USED BASE_LIVE < <(awk -F'\t' -v from="$(fcalc "${EPOCHREALTIME} - $WARMUP / 2")" \
    -v cu="$(col storage_used_blocks)" -v cl="$(col storage_live_bytes)" '
    NR > 1 && $1 >= from { if ($cu > u) u = $cu; if ($cl > l) l = $cl }
    END { print u + 0, l + 0 }' "$SAMPLES")
((BASE_USED > 0)) || die "no samples during the warm-up"
RECLAIM_BLOCKS=$((BASE_USED + RECLAIM_SLACK_BLOCKS))
RECLAIM_LIVE=$((BASE_LIVE + BASE_LIVE / 10))
log "baseline: at most $BASE_USED used blocks ($(human_bytes $((BASE_USED * BLOCK_BYTES)))), live $(human_bytes "$BASE_LIVE"); reclaimed means <= $RECLAIM_BLOCKS blocks and <= $(human_bytes "$RECLAIM_LIVE") live"

log "filling ttl:1..ttl:$N with SET ... EX $TTL ($FILL_CONNS connections x pipeline $FILL_PIPELINE)"
event fill_start
taskset -c "$CLIENT_CPU" "$BENCH_BIN" --host 127.0.0.1 -p "$PORT" -q -n "$N" -d "$DATA_SIZE" -c "$FILL_CONNS" \
    --key-pattern sequential --command "SET ttl:__key__ __data__ EX $TTL" --requests "$N" -P "$FILL_PIPELINE" \
    --require-no-errors --json "$OUT/fill.json" >"$DATA_DIR/fill.txt" 2>&1 || { cat "$DATA_DIR/fill.txt" >&2; die "TTL fill failed"; }
event fill_end
[[ $(rcli set ttl:last x EX "$TTL") == OK ]] || die "SET ttl:last failed"
EXPIRE_MS=$(rcli pexpiretime ttl:last)
[[ $EXPIRE_MS =~ ^[0-9]+$ ]] || die "PEXPIRETIME ttl:last: $EXPIRE_MS"
EXPIRE_S=${EXPIRE_MS:0:-3}.${EXPIRE_MS: -3}
event expiry "$EXPIRE_S"
FILL_S=$(fcalc "$(json_num "$OUT/fill.json" duration_s)")
log "fill: $N SETs in $(printf %.1f "$FILL_S") s ($(printf %.0f "$(json_num "$OUT/fill.json" ops_per_sec)") SET/s); DBSIZE now $(rcli dbsize), used blocks $(last_sample storage_used_blocks); the last TTL'd key expires in $(printf %.1f "$(fcalc "$EXPIRE_S - ${EPOCHREALTIME}")") s"

# Waits for DBSIZE == BASE_N and for the space, sample by sample (the sampler's rows).
DB_AT="" RECLAIM_AT=""
CU=$(col storage_used_blocks) CL=$(col storage_live_bytes)
deadline=$(fcalc "$EXPIRE_S + $((DBSIZE_TIMEOUT > RECLAIM_TIMEOUT ? DBSIZE_TIMEOUT : RECLAIM_TIMEOUT))")
while :; do
    sleep 0.5
    kill -0 "$PID" 2>/dev/null || die "skerry exited (log: $SLOG)"
    if [[ -z $DB_AT ]]; then
        DB_AT=$(awk -F'\t' -v e="$EXPIRE_S" -v n="$BASE_N" 'NR > 1 && $1 >= e && $2 == n { print $1; exit }' "$SAMPLES")
        [[ -n $DB_AT ]] && { event dbsize_reached "$DB_AT"; log "DBSIZE == $BASE_N $(printf %.1f "$(fcalc "$DB_AT - $EXPIRE_S")") s after the expiry"; }
    fi
    if [[ -z $RECLAIM_AT ]]; then
        RECLAIM_AT=$(awk -F'\t' -v e="$EXPIRE_S" -v n="$BASE_N" -v cu="$CU" -v cl="$CL" -v b="$RECLAIM_BLOCKS" -v l="$RECLAIM_LIVE" \
            'NR > 1 && $1 >= e && $2 == n && $cu <= b && $cl <= l { print $1; exit }' "$SAMPLES")
        [[ -n $RECLAIM_AT ]] && { event space_reclaimed "$RECLAIM_AT"; log "space reclaimed $(printf %.1f "$(fcalc "$RECLAIM_AT - $EXPIRE_S")") s after the expiry"; }
    fi
    [[ -n $DB_AT && -n $RECLAIM_AT ]] && break
    now_s=$EPOCHREALTIME
    [[ -z $DB_AT ]] && is_true "$now_s > $EXPIRE_S + $DBSIZE_TIMEOUT" && break
    [[ -z $RECLAIM_AT ]] && is_true "$now_s > $EXPIRE_S + $RECLAIM_TIMEOUT" && break
    is_true "$now_s > $deadline" && break
done
# Two more seconds of samples after the last event, then stop everything.
sleep 2
event end
stop_bg
FINAL_INFO=$(rcli info storage | tr -d '\r')
FINAL_DBSIZE=$(rcli dbsize)
FINAL_EXPIRED=$(rcli info stats | tr -d '\r' | awk -F: '$1 == "expired_keys" { print $2 }')
stop_server
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"

# Figures from the samples.
col_max() { # AWK_EXPR FROM TO: the largest value of a column expression over [FROM, TO]
    awk -F'\t' -v from="$2" -v to="$3" "NR > 1 && \$1 >= from && \$1 <= to { x = $1; if (!seen || x > m) { m = x; seen = 1 } } END { print m + 0 }" "$SAMPLES"
}
FILL_START=$(awk -F'\t' '$1 == "fill_start" { print $2 }' "$EVENTS")
END_S=$(awk -F'\t' '$1 == "end" { print $2 }' "$EVENTS")
PEAK_DB=$(col_max "\$2" "$FILL_START" "$END_S")
PEAK_USED=$(col_max "\$$CU" "$FILL_START" "$END_S")
PEAK_LIVE=$(col_max "\$$CL" "$FILL_START" "$END_S")
FINAL_USED=$(awk -F: '$1 == "storage_used_blocks" { print $2 }' <<<"$FINAL_INFO")
FINAL_LIVE=$(awk -F: '$1 == "storage_live_bytes" { print $2 }' <<<"$FINAL_INFO")
FINAL_RECLAIMED=$(awk -F: '$1 == "storage_reclaimed_blocks" { print $2 }' <<<"$FINAL_INFO")
FINAL_TOMB=$(awk -F: '$1 == "storage_tombstone_blocks" { print $2 }' <<<"$FINAL_INFO")
AT_EXPIRY=$(awk -F'\t' -v e="$EXPIRE_S" 'NR > 1 && $1 >= e { print $2; exit }' "$SAMPLES")
# Server CPU use (of one core) between two times, from the sampled ticks.
cpu_pct() {
    awk -F'\t' -v from="$1" -v to="$2" -v hz="$CLK_TCK" -v ct="$(col server_cpu_ticks)" '
        NR > 1 && $1 >= from && $1 <= to { if (!t0) { t0 = $1; c0 = $ct } t1 = $1; c1 = $ct }
        END { printf "%.0f", (t1 > t0) ? 100 * (c1 - c0) / hz / (t1 - t0) : 0 }' "$SAMPLES"
}
fg_ops() { # mean foreground ops/s of the runs that ended in [FROM, TO]
    awk -F'\t' -v from="$1" -v to="$2" 'NR > 1 && $4 != "failed" && $3 >= from && $3 <= to { s += $4; n++ } END { printf "%.0f", n ? s / n : 0 }' "$FG"
}
FG_ERRORS=$(awk -F'\t' 'NR > 1 { if ($4 == "failed") f++; e += $6 } END { print f + e + 0 }' "$FG")
DB_S=${DB_AT:+$(fcalc "$DB_AT - $EXPIRE_S")}
RECLAIM_S=${RECLAIM_AT:+$(fcalc "$RECLAIM_AT - $EXPIRE_S")}
FILL_END=$(awk -F'\t' '$1 == "fill_end" { print $2 }' "$EVENTS")
BASE_END=$(awk -F'\t' '$1 == "baseline_end" { print $2 }' "$EVENTS")
FG_START=$(awk -F'\t' '$1 == "fg_start" { print $2 }' "$EVENTS")
AFTER=${RECLAIM_AT:-$END_S}

FAIL=()
if [[ -z $DB_S ]]; then
    FAIL+=("DBSIZE did not reach $BASE_N within $DBSIZE_TIMEOUT s after the expiry")
elif is_true "$DB_S > $DBSIZE_TARGET_S"; then
    FAIL+=("DBSIZE reached $BASE_N $(printf %.1f "$DB_S") s after the expiry (target $DBSIZE_TARGET_S s)")
fi
[[ -n $RECLAIM_S ]] || FAIL+=("space not reclaimed within $RECLAIM_TIMEOUT s after the expiry (used blocks $FINAL_USED > $RECLAIM_BLOCKS or live bytes $FINAL_LIVE > $RECLAIM_LIVE)")
[[ $FINAL_DBSIZE == "$BASE_N" ]] || FAIL+=("final DBSIZE $FINAL_DBSIZE, expected $BASE_N")
((FG_ERRORS == 0)) || FAIL+=("foreground load: $FG_ERRORS errors or failed runs (fg.tsv)")
fmt_s() { [[ -n $1 ]] && printf '%.1f s' "$1" || printf 'not reached'; }

{
    echo "# Active expiry: $N keys with a ${TTL} s TTL under load"
    echo
    echo '```'
    cat "$OUT/env.txt"
    echo '```'
    echo
    echo "Non-TTL keys 1..$BASE_N ($DATA_SIZE-byte values) under a foreground load of SET:GET $FG_RATIO"
    echo "($FG_CONNS connections, at most $FG_RATE req/s each) for the whole run; then exactly $N"
    echo "\`SET ttl:K <$DATA_SIZE bytes> EX $TTL\` ($FILL_CONNS connections x pipeline $FILL_PIPELINE). Expiry moment ="
    echo "PEXPIRETIME of one more TTL'd key set right after the fill (no TTL'd key expires later)."
    echo "Block size $(human_bytes "$BLOCK_BYTES"); samples every $SAMPLE_MS ms (samples.tsv)."
    echo
    echo "| figure | value |"
    echo "|---|---:|"
    echo "| TTL fill | $(printf %.1f "$FILL_S") s, $(printf %.0f "$(json_num "$OUT/fill.json" ops_per_sec)") SET/s |"
    echo "| DBSIZE: peak / at the expiry moment / end | $PEAK_DB / ${AT_EXPIRY:-?} / $FINAL_DBSIZE |"
    echo "| **seconds from the expiry until DBSIZE == $BASE_N** | **$(fmt_s "$DB_S")** (target <= $DBSIZE_TARGET_S s) |"
    echo "| **seconds from the expiry until the space is reclaimed** | **$(fmt_s "$RECLAIM_S")** (<= $RECLAIM_BLOCKS used blocks and <= $(human_bytes "$RECLAIM_LIVE") live; timeout $RECLAIM_TIMEOUT s) |"
    echo "| used blocks: baseline (max) / peak / end | $BASE_USED / $PEAK_USED / $FINAL_USED |"
    echo "| live bytes: baseline (max) / peak / end | $(human_bytes "$BASE_LIVE") / $(human_bytes "$PEAK_LIVE") / $(human_bytes "$FINAL_LIVE") |"
    echo "| tombstone blocks at the end | $FINAL_TOMB |"
    echo "| blocks reclaimed since start | $FINAL_RECLAIMED |"
    echo "| expired_keys at the end | $FINAL_EXPIRED |"
    echo "| foreground ops/s: alone / during the fill / fill end to reclaimed | $(fg_ops "$FG_START" "$BASE_END") / $(fg_ops "$FILL_START" "$FILL_END") / $(fg_ops "$FILL_END" "$AFTER") |"
    echo "| server CPU: baseline / fill / fill end to expiry / expiry to reclaimed | $(cpu_pct "$FG_START" "$BASE_END")% / $(cpu_pct "$FILL_START" "$FILL_END")% / $(cpu_pct "$FILL_END" "$EXPIRE_S")% / $(cpu_pct "$EXPIRE_S" "$AFTER")% |"
    echo
    if ((${#FAIL[@]})); then
        echo "Result: **FAIL**"
        printf -- '- %s\n' "${FAIL[@]}"
    else
        echo "Result: **PASS** (DBSIZE within $DBSIZE_TARGET_S s, space reclaimed within $RECLAIM_TIMEOUT s)"
    fi
    echo
    echo "Raw: samples.tsv (t_unix_s, DBSIZE, INFO storage fields, expired_keys, server CPU ticks), events.tsv,"
    echo "fg.tsv (one row per ${FG_SEGMENT}-second foreground run), fill.json, base-fill.json, skerry.log.tail."
} >"$OUT/summary.md"
cat "$OUT/summary.md"
if ((${#FAIL[@]})); then
    exit 1
fi
