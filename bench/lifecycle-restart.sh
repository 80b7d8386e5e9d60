#!/usr/bin/env bash
# bench/lifecycle-restart.sh - restart time after a clean shutdown, with and without the
# index checkpoint.
#
# Fills keys 1..N with exactly N SETs of DATA_SIZE bytes (skerry-bench, sequential), checks
# DBSIZE == N, stops Skerry cleanly (SIGTERM: it writes its index checkpoints), then:
#   1. restart with the checkpoint: seconds until PING answers and until DBSIZE == N;
#   2. stop cleanly again, remove the checkpoint files, restart: the same through the full
#      scan of every block (what a restart costs without a checkpoint).
# Prints both figures and INFO's storage_recovery_* fields; writes them to
# OUT/lifecycle-restart.tsv when OUT is set. Data under DATA_DIR (bench/tmp, gitignored),
# removed at exit unless KEEP_DATA=1.
#
# Environment (defaults): N=1000000, DATA_SIZE=1024, THREADS=2 (skerry --threads),
# CONNS=64, FILL_PIPELINE=16, SKERRY_DATA_SIZE (default: N * (DATA_SIZE + 64) * 1.3 + 256 MiB),
# SKERRY_BIN=target/release/skerry, BENCH_BIN=target/release/skerry-bench,
# SKERRY_ARGS (extra server arguments), DATA_DIR=bench/tmp/lifecycle-restart,
# RESTART_TIMEOUT=1800, OUT (directory for the .tsv).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${N:-1000000}
DATA_SIZE=${DATA_SIZE:-1024}
THREADS=${THREADS:-2}
CONNS=${CONNS:-64}
FILL_PIPELINE=${FILL_PIPELINE:-16}
SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
BENCH_BIN=${BENCH_BIN:-$ROOT/target/release/skerry-bench}
SKERRY_ARGS=${SKERRY_ARGS:-}
DATA_DIR=${DATA_DIR:-$ROOT/bench/tmp/lifecycle-restart}
RESTART_TIMEOUT=${RESTART_TIMEOUT:-1800}
OUT=${OUT:-}
SKERRY_DATA_SIZE=${SKERRY_DATA_SIZE:-$(((N * (DATA_SIZE + 64) * 13 / 10) + (256 << 20)))}

log() { printf '[lifecycle-restart] %s\n' "$*" >&2; }
die() { printf '[lifecycle-restart] ERROR: %s\n' "$*" >&2; exit 2; }
for v in N DATA_SIZE THREADS CONNS FILL_PIPELINE RESTART_TIMEOUT SKERRY_DATA_SIZE; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer (got '${!v}')"
done
((N >= 1)) || die "N must be >= 1"

APT_UPDATED=0
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
need_cmd redis-cli redis-tools
for b in "$SKERRY_BIN:--bin skerry" "$BENCH_BIN:-p skerry-bench"; do
    bin=${b%%:*}
    if [[ ! -x $bin ]]; then
        log "building $bin"
        # shellcheck disable=SC2086  # the cargo arguments are word-split on purpose
        (cd "$ROOT" && cargo build --release --locked ${b#*:}) >&2 || die "build failed"
    fi
done

PORT=$(free_port)
DIR=$DATA_DIR/skerry
rm -rf "$DATA_DIR"
mkdir -p "$DIR"
cleanup() {
    if [[ -n ${PID:-} ]]; then
        kill -KILL "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    [[ ${KEEP_DATA:-0} == 1 ]] || rm -rf "$DATA_DIR"
}
trap cleanup EXIT
rcli() { redis-cli -h 127.0.0.1 -p "$PORT" "$@" 2>&1; }

start() {
    # shellcheck disable=SC2086  # SKERRY_ARGS is word-split on purpose
    "$SKERRY_BIN" --port "$PORT" --bind 127.0.0.1 --dir "$DIR" --threads "$THREADS" \
        --data-size "$SKERRY_DATA_SIZE" $SKERRY_ARGS >>"$DATA_DIR/skerry.log" 2>&1 &
    PID=$!
}
stop_clean() {
    local t0=$SECONDS
    kill -TERM "$PID"
    while kill -0 "$PID" 2>/dev/null; do
        ((SECONDS - t0 < 600)) || die "no clean exit within 600 s"
        sleep 0.05
    done
    wait "$PID" 2>/dev/null || true
    PID=""
}
# timed_restart: starts the server; sets PING_S and READY_S (seconds until PING answers and
# until DBSIZE == N). Not in a subshell: PID must stay set.
timed_restart() {
    local t0 t1
    t0=$(now)
    start
    until resp_ping "$PORT"; do
        kill -0 "$PID" 2>/dev/null || { tail -n 5 "$DATA_DIR/skerry.log" >&2; die "skerry exited during restart"; }
        (($(calc "$(now) - $t0 < $RESTART_TIMEOUT") == 1)) || die "no PING within ${RESTART_TIMEOUT}s"
        sleep 0.005
    done
    t1=$(now)
    until [[ $(rcli dbsize) == "$N" ]]; do
        (($(calc "$(now) - $t0 < $RESTART_TIMEOUT") == 1)) || die "DBSIZE $(rcli dbsize), expected $N"
        sleep 0.005
    done
    PING_S=$(calc "$t1 - $t0")
    READY_S=$(calc "$(now) - $t0")
}
recovery_fields() { rcli info storage | tr -d '\r' | grep -E '^storage_recovery_' | tr '\n' ' '; }

log "filling keys 1..$N with $DATA_SIZE-byte values (--threads $THREADS, data file $((SKERRY_DATA_SIZE >> 20)) MiB)"
start
t0=$SECONDS
until resp_ping "$PORT"; do ((SECONDS - t0 < 120)) || die "no PING"; sleep 0.05; done
"$BENCH_BIN" --host 127.0.0.1 -p "$PORT" -q -n "$N" -d "$DATA_SIZE" -c "$CONNS" \
    --key-pattern sequential --ratio 1:0 --requests "$N" -P "$FILL_PIPELINE" >"$DATA_DIR/fill.txt" 2>&1 ||
    { cat "$DATA_DIR/fill.txt" >&2; die "fill failed"; }
[[ $(rcli dbsize) == "$N" ]] || die "DBSIZE $(rcli dbsize) after the fill, expected $N"
log "filled; clean shutdown (writes the index checkpoints)"
t0=$(now)
stop_clean
SHUTDOWN_S=$(calc "$(now) - $t0")
CKPT_BYTES=$(cat "$DIR"/skerry-index-*.ckpt | wc -c)
log "shutdown took $(printf %.2f "$SHUTDOWN_S") s; checkpoint files: $((CKPT_BYTES >> 20)) MiB ($(calc "$CKPT_BYTES / $N") bytes per key)"

timed_restart
CK_PING=$PING_S CK_READY=$READY_S
CK_FIELDS=$(recovery_fields)
[[ $CK_FIELDS == *storage_recovery_source:checkpoint* ]] || die "the restart did not use the checkpoint: $CK_FIELDS"
log "with the checkpoint: PING after $(printf %.2f "$CK_PING") s, DBSIZE == $N after $(printf %.2f "$CK_READY") s"
log "  $CK_FIELDS"

stop_clean
rm -f "$DIR"/skerry-index-*.ckpt
timed_restart
SCAN_PING=$PING_S SCAN_READY=$READY_S
SCAN_FIELDS=$(recovery_fields)
[[ $SCAN_FIELDS == *storage_recovery_source:scan* ]] || die "expected a full scan: $SCAN_FIELDS"
log "full scan:           PING after $(printf %.2f "$SCAN_PING") s, DBSIZE == $N after $(printf %.2f "$SCAN_READY") s"
log "  $SCAN_FIELDS"
kill -KILL "$PID"; wait "$PID" 2>/dev/null || true; PID=""

echo "N=$N DATA_SIZE=$DATA_SIZE THREADS=$THREADS: restart after a clean shutdown: with checkpoint ${CK_READY} s (PING ${CK_PING} s), full scan ${SCAN_READY} s (PING ${SCAN_PING} s); shutdown ${SHUTDOWN_S} s; checkpoint ${CKPT_BYTES} bytes"
if [[ -n $OUT ]]; then
    mkdir -p "$OUT"
    {
        printf 'n\tdata_size\tthreads\tcheckpoint_ready_s\tcheckpoint_ping_s\tscan_ready_s\tscan_ping_s\tshutdown_s\tcheckpoint_bytes\n'
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$N" "$DATA_SIZE" "$THREADS" "$CK_READY" "$CK_PING" \
            "$SCAN_READY" "$SCAN_PING" "$SHUTDOWN_S" "$CKPT_BYTES"
    } >"$OUT/lifecycle-restart.tsv"
fi
