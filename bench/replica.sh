#!/usr/bin/env bash
# bench/replica.sh - a replica of Debian's redis-server: Skerry against Redis (issue 28).
#
#   full-sync  Redis (the primary, pinned on PRIMARY_CPU) holds N keys of DATA_SIZE bytes;
#              a fresh replica (pinned on REPLICA_CPU: Redis, then Skerry --threads 1,
#              then Skerry's default) runs REPLICAOF: seconds until its link is up and
#              DBSIZE answers N, MB/s of the primary's RDB file, replica CPU seconds.
#   stream     then STREAM_N SETs of DATA_SIZE bytes from 50 connections on the primary
#              (skerry-bench on CLIENT_CPU): seconds until the replica's offset reaches
#              the primary's, and replica CPU seconds per 1,000 SETs applied.
#
# Each point REPEATS times; medians. Usage: bench/replica.sh
# Environment (defaults): N=1000000 DATA_SIZE=1024 STREAM_N=200000 REPEATS=3 PRIMARY_CPU=0
# REPLICA_CPU=1 CLIENT_CPU=0 SKERRY_BIN BENCH_BIN REDIS_BIN=/usr/bin/redis-server
# DATA_DIR=bench/tmp/replica OUT=bench/results/<date>-replica
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[replica] %s\n' "$*" >&2; }
die() { printf '[replica] ERROR: %s\n' "$*" >&2; exit 2; }
APT_UPDATED=0
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

N=${N:-1000000}
DATA_SIZE=${DATA_SIZE:-1024}
STREAM_N=${STREAM_N:-200000}
REPEATS=${REPEATS:-3}
PRIMARY_CPU=${PRIMARY_CPU:-0}
REPLICA_CPU=${REPLICA_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
SKERRY_BIN=${SKERRY_BIN:-$ROOT/target/release/skerry}
BENCH_BIN=${BENCH_BIN:-$ROOT/target/release/skerry-bench}
REDIS_BIN=${REDIS_BIN:-/usr/bin/redis-server}
DATA_DIR=${DATA_DIR:-$ROOT/bench/tmp/replica}
OUT=${OUT:-$(new_results_dir replica)}
for v in N DATA_SIZE STREAM_N REPEATS PRIMARY_CPU REPLICA_CPU CLIENT_CPU; do
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
printf 'replica\ttest\trepeat\tseconds\treplica_cpu_seconds\tbytes\n' >"$RUNS"
TCK=$(getconf CLK_TCK)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$DATA_DIR"; }
trap cleanup EXIT
info() { redis-cli -p "$1" INFO "$2" | tr -d '\r' | awk -F: -v f="$3" '$1 == f { print $2 }'; }

pdir=$DATA_DIR/primary
mkdir -p "$pdir"
PPORT=$(free_port)
taskset -c "$PRIMARY_CPU" "$REDIS_BIN" --port "$PPORT" --dir "$pdir" --save "" --appendonly no \
    --repl-diskless-sync no >"$pdir/redis.log" 2>&1 &
PPID_=$!
PIDS+=("$PPID_")
await_server primary "$PPID_" "$PPORT" "$pdir/redis.log"
log "filling the primary with $N keys of $DATA_SIZE bytes"
taskset -c "$CLIENT_CPU" "$BENCH_BIN" -p "$PPORT" -q -c 50 -P 16 -n "$N" --key-pattern sequential \
    --requests "$N" -d "$DATA_SIZE" --ratio 1:0 --require-no-errors >/dev/null
[[ $(redis-cli -p "$PPORT" DBSIZE) == "$N" ]] || die "the primary does not hold $N keys"

for replica in redis skerry-t1 skerry-tdefault; do
    for r in $(seq "$REPEATS"); do
        rdir=$DATA_DIR/$replica
        rm -rf "$rdir"
        mkdir -p "$rdir"
        RPORT=$(free_port)
        case $replica in
            redis) cmd=("$REDIS_BIN" --save "" --appendonly no) ;;
            skerry-t1) cmd=("$SKERRY_BIN" --threads 1) ;;
            skerry-tdefault) cmd=("$SKERRY_BIN") ;;
        esac
        taskset -c "$REPLICA_CPU" "${cmd[@]}" --port "$RPORT" --dir "$rdir" >"$rdir/server.log" 2>&1 &
        RPID=$!
        PIDS+=("$RPID")
        await_server "$replica" "$RPID" "$RPORT" "$rdir/server.log"
        [[ $replica == skerry-tdefault ]] && pin_all_threads "$RPID" "$REPLICA_CPU"
        c0=$(cpu_ticks "$RPID")
        t0=$(now)
        redis-cli -p "$RPORT" REPLICAOF 127.0.0.1 "$PPORT" >/dev/null
        until [[ $(info "$RPORT" replication master_link_status) == up &&
            $(redis-cli -p "$RPORT" DBSIZE 2>/dev/null) == "$N" ]]; do
            kill -0 "$RPID" 2>/dev/null || die "$replica exited (log: $rdir/server.log)"
            sleep 0.01
        done
        s=$(calc "$(now) - $t0")
        c1=$(cpu_ticks "$RPID")
        bytes=$(stat -c %s "$pdir/dump.rdb" 2>/dev/null || echo 0)
        record_run "$replica" full-sync "$r" "$s" "$(calc "($c1 - $c0) / $TCK")" "$bytes"
        log "$replica full sync: $s s"
        c0=$(cpu_ticks "$RPID")
        t0=$(now)
        taskset -c "$CLIENT_CPU" "$BENCH_BIN" -p "$PPORT" -q -c 50 -P 1 -n "$N" --requests "$STREAM_N" \
            -d "$DATA_SIZE" --ratio 1:0 --require-no-errors >/dev/null
        target=$(info "$PPORT" replication master_repl_offset)
        until [[ $(info "$RPORT" replication slave_repl_offset) -ge $target ]]; do sleep 0.005; done
        s=$(calc "$(now) - $t0")
        c1=$(cpu_ticks "$RPID")
        record_run "$replica" stream "$r" "$s" "$(calc "($c1 - $c0) / $TCK")" 0
        log "$replica stream of $STREAM_N SETs: $s s"
        kill_server "$RPID"
    done
done

{
    echo "# A replica of Redis: Skerry vs Redis"
    echo
    echo "\`bench/replica.sh\`: primary Redis with $N keys of $DATA_SIZE bytes (disk-based full sync),"
    echo "then $STREAM_N SETs from 50 connections; medians of $REPEATS; replica pinned on CPU $REPLICA_CPU."
    echo
    echo '```'
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "host: $(uname -sr) $(uname -m), $(nproc) CPUs"
    echo "skerry: $(cd "$ROOT" && git rev-parse --short HEAD) $SKERRY_BIN"
    echo "redis: $("$REDIS_BIN" --version)"
    echo '```'
    echo
    echo "| replica | full sync s | RDB MB/s | replica CPU s | stream s | replica CPU µs per SET |"
    echo "|---|---:|---:|---:|---:|---:|"
    for replica in redis skerry-t1 skerry-tdefault; do
        fs=$(point_median "$replica" full-sync 4)
        fc=$(point_median "$replica" full-sync 5)
        fb=$(point_median "$replica" full-sync 6)
        ss=$(point_median "$replica" stream 4)
        sc=$(point_median "$replica" stream 5)
        printf '| %s | %.2f | %.0f | %.2f | %.2f | %.1f |\n' "$replica" "$fs" \
            "$(calc "$fb / 1e6 / $fs")" "$fc" "$ss" "$(calc "$sc * 1e6 / $STREAM_N")"
    done
    echo
    echo "Raw data: \`runs.tsv\`."
} >"$OUT/summary.md"
cat "$OUT/summary.md"
